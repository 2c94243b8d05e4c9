"""Frontmatter (autopoiesis.core.frontmatter): BOM and CRLF, scalars that look like numbers, round trips, errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autopoiesis.core import frontmatter
from autopoiesis.errors import FrontmatterError


def test_frontmatter_handles_bom_and_crlf_once() -> None:
    meta, body = frontmatter.load("\ufeff---\r\ntitle: A\r\ntags: [x, y]\r\n---\r\n# A\r\nbody\r\n")
    assert meta == {"title": "A", "tags": ["x", "y"]}
    assert body == "# A\nbody\n"


@pytest.mark.parametrize(
    "value",
    ["1:30", "0x1F", "1_000", "1e3", "0o17", "yes", "off", "2026-02-16", "null", "~", "12:30:45"],
)
def test_number_and_bool_lookalikes_stay_strings(value: str) -> None:
    written = frontmatter.scalar(value)
    assert frontmatter.parse_yaml(f"k: {written}\n")["k"] == value
    # hand-written, unquoted: the loader keeps base-60 and hex forms as text too
    if value in ("1:30", "0x1F", "1_000", "0o17"):
        assert frontmatter.parse_yaml(f"k: {value}\n")["k"] == value


@given(st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s))
def test_scalar_round_trips_any_string(value: str) -> None:
    assert frontmatter.parse_yaml(f"k: {frontmatter.scalar(value)}\n")["k"] == value


@given(
    st.from_regex(r"[A-Za-z][A-Za-z0-9_ .:/@+-]{0,30}", fullmatch=True)
    | st.sampled_from(["Yes", "NO", "On", "off", "Null", "y", "N", "True", "fAlse", "Task 012"])
)
def test_a_text_read_as_a_string_without_yaml_is_one_for_yaml_too(value: str) -> None:
    # the shortcut that spares loading PyYAML agrees with its resolvers wherever it answers
    if frontmatter._letter_first_str(value):
        assert frontmatter._reads_as_str(value)
        assert frontmatter.parse_yaml(f"k: {frontmatter.scalar(value)}\n")["k"] == value


@pytest.mark.parametrize("value", ["A\n", "a b\n", "x:y\n"])
def test_a_final_newline_is_quoted_not_lost(value: str) -> None:
    assert frontmatter.scalar(value).startswith('"')
    assert frontmatter.parse_yaml(f"k: {frontmatter.scalar(value)}\n")["k"] == value


def test_a_yaml_error_names_the_files_line_and_what_is_wrong() -> None:
    """The message showed what PyYAML was doing ('while scanning a plain scalar'), not
    what was wrong nor where: a collaborator's topic with a tab gave nothing to look for."""
    with pytest.raises(FrontmatterError) as info:
        frontmatter.load("---\ntype: topic\n\tdescription: d\n---\nbody\n", "topics/t.md")
    message = str(info.value)  # libyaml and PyYAML's own reader word the problem apart
    assert message.startswith("topics/t.md, line 3: the frontmatter is not valid YAML (found")
    assert "tab" in message or "\\t" in message
    assert "while scanning" not in message


def test_frontmatter_errors_name_the_file() -> None:
    with pytest.raises(FrontmatterError, match="notes.md: the frontmatter is not closed"):
        frontmatter.split("---\ntitle: x\n", "notes.md")
    with pytest.raises(FrontmatterError, match="not valid YAML"):
        frontmatter.load("---\ntags: [a\n---\n", "notes.md")
    with pytest.raises(FrontmatterError, match="must be a YAML mapping"):
        frontmatter.load("---\n- a\n---\n", "notes.md")
    assert frontmatter.split("no frontmatter\n") == (None, "no frontmatter\n")


@pytest.mark.parametrize("value", ["2026-13-01", "2026-02-30", "2026-02-16T25:00:00Z"])
def test_a_date_that_does_not_exist_is_a_frontmatter_error(value: str) -> None:
    with pytest.raises(
        FrontmatterError, match="notes.md: the frontmatter holds a date or time that does not exist"
    ):
        frontmatter.load(f"---\nstarted: {value}\n---\nbody\n", "notes.md")


def test_an_alias_is_refused_before_it_can_expand() -> None:
    """Nine lines of nested aliases ("billion laughs") in a pulled topic's frontmatter
    made `compile` and every prompt hook grow past 24 GB. An alias is refused with what
    to write instead; an `&` or a `*` in a quoted value is no alias."""

    from autopoiesis.core.frontmatter import parse_yaml

    levels = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(FrontmatterError, match=r"uses a YAML alias \(`\*name`\)"):
        parse_yaml("\n".join([*levels, "type: topic"]) + "\n", "topics/laughs.md")
    assert parse_yaml('title: "R&D * notes"\nnote: a & b * c\n') == {
        "title": "R&D * notes",
        "note": "a & b * c",
    }


def test_a_frontmatter_nested_too_deep_is_refused() -> None:
    """990 levels of `[[[...]]]` in a pulled note's or topic's frontmatter parsed, then
    crashed search, compile, the index and `topics list` with RecursionError in whichever
    reader walked the value first. A frontmatter nesting lists or mappings more than
    MAX_DEPTH levels is refused here, naming the file, as any unreadable one is."""
    from autopoiesis.core.frontmatter import MAX_DEPTH, parse_yaml

    for depth in (MAX_DEPTH, 990):
        with pytest.raises(FrontmatterError, match=r"knowledge/deep\.md: .* nests .* 64 levels"):
            parse_yaml("tags: " + "[" * depth + "]" * depth + "\n", "knowledge/deep.md")
    keys = MAX_DEPTH + 1  # a mapping in a mapping, MAX_DEPTH + 1 deep
    block = "".join(" " * i + f"k{i}:\n" for i in range(keys)) + " " * keys + "v\n"
    with pytest.raises(FrontmatterError, match="levels deep"):
        parse_yaml(block, "topics/deep.md")
    shallow = MAX_DEPTH - 1  # the top mapping is one level
    assert parse_yaml("tags: " + "[" * shallow + "]" * shallow + "\n")["tags"]


def test_a_pulled_note_and_topic_nested_too_deep_leave_every_reader_working(
    memory_repo, cli
) -> None:
    """The readers of such a note and topic (the index, search, compile, `topics list`)
    each report that one file and go on with the others."""
    deep = "[" * 990 + "]" * 990
    (memory_repo.root / "knowledge/reference/deep.md").write_text(
        f"---\ntype: reference\ntags: {deep}\n---\n# Deep\n\n- deep note\n"
    )
    (memory_repo.root / "knowledge/reference/tea.md").write_text(
        "---\ntype: reference\n---\n# Tea\n\n- The user prefers oolong tea.\n"
    )
    (memory_repo.root / "topics/deep.md").write_text(
        f"---\ntype: topic\ndescription: deep\nx: {deep}\ntriggers:\n  - type: keyword\n"
        "    words: [deep]\n---\n# Deep\n"
    )
    rebuilt = cli("index", "rebuild", repo=memory_repo)
    assert rebuilt.returncode == 0 and "knowledge/reference/deep.md: the frontmatter nests" in (
        rebuilt.stderr
    )
    found = cli("search", "oolong tea", repo=memory_repo)
    assert found.returncode == 0 and "knowledge/reference/tea.md" in found.stdout
    assert cli("compile", "hello", "--dry-run", repo=memory_repo).returncode == 0
    listed = cli("topics", "list", repo=memory_repo)
    assert listed.returncode == 0 and "github-pr-review" in listed.stdout
    assert "skipped: topics/deep.md: the frontmatter nests" in listed.stderr
