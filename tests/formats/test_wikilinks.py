"""`[[wikilinks]]`: parsed as Obsidian writes them, rewritten, read as plain text."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from autopoiesis.formats.knowledge import normalize_fact
from autopoiesis.formats.wikilinks import (
    link_key,
    parse_links,
    plain_text,
    render_link,
    resolve,
    rewrite_targets,
)


def test_every_form_is_parsed_and_code_is_not() -> None:
    text = (
        "See [[maria-lopez|Maria]] and [[knowledge/projects/billing/context#Retries]].\n"
        "`[[not-a-link]]` in code\n"
        "```\n[[fenced]]\n```\n"
        "![[diagram.png]] and [[releases#Steps|the steps]]"
    )
    links = parse_links(text)
    assert [(x.target, x.heading, x.alias, x.line, x.embed) for x in links] == [
        ("maria-lopez", None, "Maria", 1, False),
        ("knowledge/projects/billing/context", "Retries", None, 1, False),
        ("diagram.png", None, None, 6, True),
        ("releases", "Steps", "the steps", 6, False),
    ]
    assert links[1].key == "knowledge/projects/billing/context"


def test_a_link_reads_as_its_text_so_a_fact_is_the_same_with_or_without_it() -> None:
    assert plain_text("Asked [[maria-lopez|Maria Lopez]] about [[releases]]") == (
        "Asked Maria Lopez about releases"
    )
    assert normalize_fact("Asked [[maria-lopez|Maria Lopez]] today") == normalize_fact(
        "Asked Maria Lopez today"
    )


def test_resolution_follows_obsidian_shortest_path_first() -> None:
    by_name = {
        "context": ["knowledge/projects/b/context.md", "knowledge/projects/a/context.md"],
        "ann": ["knowledge/people/ann.md"],
    }
    assert resolve("ann", by_name) == "knowledge/people/ann.md"
    assert resolve("people/ann", by_name) == "knowledge/people/ann.md"
    assert resolve("knowledge/projects/b/context", by_name) == "knowledge/projects/b/context.md"
    assert resolve("context", by_name) == "knowledge/projects/a/context.md"
    assert resolve("bob", by_name) is None
    assert link_key("./Knowledge/People/Ann.md") == "knowledge/people/ann"


def test_rewrite_keeps_heading_and_alias_and_leaves_code_alone() -> None:
    text = "[[ann#Role|Ann]] and [[ann]] and `[[ann]]`\n```\n[[ann]]\n```"
    out, n = rewrite_targets(text, {"ann": "ann-smith"})
    assert n == 2
    assert out == "[[ann-smith#Role|Ann]] and [[ann-smith|ann]] and `[[ann]]`\n```\n[[ann]]\n```"


@given(
    st.text(alphabet=st.characters(blacklist_characters="[]|#\n"), min_size=1, max_size=20),
    st.one_of(st.none(), st.text(alphabet="abc def", min_size=1, max_size=8)),
    st.one_of(st.none(), st.text(alphabet="XYZ xyz", min_size=1, max_size=8)),
)
@example("``", None, None)  # read as an empty code span, the link was lost
@example("`a`", None, "A")
def test_render_then_parse_round_trips(target: str, heading: str | None, alias: str | None) -> None:
    target = target.strip() or "x"
    heading = heading.strip() if heading and heading.strip() else None
    alias = alias.strip() if alias and alias.strip() else None
    (link,) = parse_links(render_link(target, alias, heading))
    assert (link.target, link.heading, link.alias) == (target, heading, alias)
