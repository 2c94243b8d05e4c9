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
