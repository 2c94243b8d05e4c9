"""Knowledge entry files: lossless round trip (property-tested), entries, supersede markup."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autopoiesis.formats import knowledge as kf

LINES = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=40
    ),
    st.sampled_from(
        [
            "---",
            "## Key Decisions",
            "# Title",
            "```",
            "- plain bullet",
            "",
            "- 2026-02-16: x (source: raw/a.md @ 2026-02-16T18:50Z) {id: 20260216-1850-a1b2c3}",
            "- ~~old~~ {id: 20260216-1850-a1b2c3} #superseded-by:20260217-0900-00ff00",
            "- ~~old~~ {id: 20260216-1850-a1b2c3}",
            "- new {id: 20260216-1850-a1b2c3} #tag",
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINES, max_size=12), st.booleans())
def test_any_text_round_trips(lines: list[str], final_newline: bool) -> None:
    text = "\n".join(lines) + ("\n" if final_newline else "")
    assert kf.render(kf.parse(text)) == text
    assert kf.render(kf.parse("\ufeff" + text)) == "\ufeff" + text  # an editor's BOM too


ENTRY_TEXT = st.text(
    alphabet=st.characters(whitelist_categories=("L", "N", "Zs", "Po")), min_size=1, max_size=40
).map(lambda s: " ".join(s.split()) or "x")


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(ENTRY_TEXT, st.booleans(), st.booleans()), min_size=1, max_size=6))
def test_generated_entries_parse_back_as_entries(items: list[tuple[str, bool, bool]]) -> None:
    doc, si = kf.new_doc({"type": "memory"}, "Core Memory", ("Key Decisions",)).with_section(
        "Key Decisions"
    )
    when = datetime(2026, 2, 16, 18, 50, tzinfo=UTC)
    made = []
    for i, (text, dated, sup) in enumerate(items):
        e = kf.Entry(
            kf.make_entry_id(when, str(i), text),
            text,
            "2026-02-16" if dated else None,
            "raw/conversations/2026/02/16/a.md",
            kf.format_at(when),
        )
        if sup:
            e = e.superseded(kf.make_entry_id(when, "new", str(i)))
        made.append(e)
        doc = doc.append_line(si, e)
    out = kf.render(doc)
    back = kf.parse(out)
    assert kf.render(back) == out
    assert [e for _, e in back.entries()] == made


def test_supersede_markup_follows_seed_002() -> None:
    e = kf.Entry(
        "20260216-1850-a1b2c3",
        "Keep SQLite as the store",
        "2026-02-16",
        "raw/a.md",
        "2026-02-16T18:50Z",
    )
    s = e.superseded("20260217-0900-00ff00")
    assert s.render() == (
        "- ~~2026-02-16: Keep SQLite as the store (source: raw/a.md @ 2026-02-16T18:50Z)~~ "
        "{id: 20260216-1850-a1b2c3} #superseded-by:20260217-0900-00ff00"
    )
    assert kf.parse_line(s.render()) == s
    assert not s.active
    # strike markup without the tag (or the tag without strike) is not a well-formed entry: kept as text
    assert isinstance(kf.parse_line("- ~~x~~ {id: 20260216-1850-a1b2c3}"), str)


def test_with_meta_keeps_other_frontmatter_lines() -> None:
    text = "---\ntype: person\n# a comment\ntags:\n  - a\n  - b\nname: Maria\n---\n\n# Maria\n"
    doc = kf.parse(text).with_meta(tags=["c"], updated="2026-02-16T18:50:00Z")
    out = kf.render(doc)
    assert "# a comment\n" in out
    assert "tags: [c]\n" in out
    assert "  - a" not in out
    assert doc.meta()["tags"] == ["c"]
    assert doc.meta()["name"] == "Maria"
    assert doc.meta()["updated"].year == 2026
    assert out.endswith("---\n\n# Maria\n")


def test_facts_ignore_citation_and_markup() -> None:
    doc = kf.parse(
        "## S\n- 2026-02-16: Files are truth. (source: raw/a.md @ 2026-02-16T18:50Z) {id: 20260216-1850-a1b2c3}\n- Hand **written** one\n"
    )
    assert doc.facts() == {"files are truth", "hand written one"}
