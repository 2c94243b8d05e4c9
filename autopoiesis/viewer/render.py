"""What the pages show of a file, as plain values the templates lay out: a transcript's
turns (tool calls folded), a knowledge file's sections (each entry apart, with its id for
the provenance link), and Markdown turned into HTML.

Everything here is untrusted text: a transcript holds whatever a person or a tool said,
and a memory pulled from someone else is theirs. Markdown goes through markdown-it with
raw HTML off (a `<script>` stays text; links to `javascript:` are not made), and every
other value reaches the page through Jinja2's autoescape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from markupsafe import Markup, escape

from autopoiesis.formats import knowledge as kf
from autopoiesis.formats import transcript as tf


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").enable("strikethrough")
    return md


def markdown(text: str) -> Markup:
    """TEXT rendered as Markdown, raw HTML escaped (safe to put in a page as it is)."""
    return Markup(_markdown().render(text))


# The characters that can start inline Markdown (emphasis, code, links, images, escapes,
# entities, autolinks, strikethrough): a text without any renders as itself, escaped.
_INLINE_MARKUP = frozenset("*_`[]!<>&\\~")


def markdown_inline(text: str) -> Markup:
    """One line of Markdown (an entry's fact) as inline HTML, raw HTML escaped."""
    if _INLINE_MARKUP.isdisjoint(text):
        return escape(text)
    return Markup(_markdown().renderInline(text))


# ── transcripts ──
@dataclass
class TurnView:
    index: int
    time: str  # YYYY-MM-DD HH:MM
    role: str
    name: str | None
    memory: bool
    lines: tuple[int, int]  # the file lines of the turn (search hits point at them)
    blocks: list[tuple[str, Any]] = field(
        default_factory=list
    )  # ("text", Markup) | ("tools", [...])


TURNS_SHOWN = 300  # the turns a session page renders; the others are a link away


@dataclass
class TranscriptPage:
    """A transcript as one page shows it: the turns from FIRST (at most TURNS_SHOWN of
    TOTAL), and HIT, the turn holding a search hit's line (None: none asked, or none)."""

    transcript: tf.Transcript
    turns: list[TurnView]
    first: int
    total: int
    hit: int | None


def transcript_view(
    text: str, path: str, *, line: int = 0, turn: int = 0, shown: int | None = None
) -> TranscriptPage:
    """The transcript of TEXT and the SHOWN turns (default TURNS_SHOWN: a page of them)
    holding the turn at file line LINE, else the turn index TURN; consecutive tool calls
    grouped into one block (the page folds them). Only those turns are rendered: a
    transcript of 50,000 turns (8 MB) took 23 s and made a page of 23 MB.
    TranscriptFormatError when it is not a transcript."""
    shown = shown or TURNS_SHOWN
    transcript = tf.parse(text if text.endswith("\n") else text + "\n", path)
    spans = tf.turn_lines(text, path)
    total = len(transcript.turns)
    hit = next((i for i, (a, b) in enumerate(spans) if a <= line <= b), None) if line else None
    focus = min(hit if hit is not None else turn, max(total - 1, 0))
    first = focus // shown * shown
    views = []
    for i in range(first, min(first + shown, total)):
        turn_ = transcript.turns[i]
        view = TurnView(
            index=i,
            time=turn_.time.strftime("%Y-%m-%d %H:%M"),
            role=turn_.role,
            name=turn_.name,
            memory=turn_.memory,
            lines=spans[i] if i < len(spans) else (0, 0),
        )
        for item in turn_.items:
            if isinstance(item, tf.Text):
                view.blocks.append(("text", markdown(item.content)))
                continue
            if not view.blocks or view.blocks[-1][0] != "tools":
                view.blocks.append(("tools", []))
            view.blocks[-1][1].append(_event(item))
        views.append(view)
    return TranscriptPage(transcript, views, first, total, hit)


def _event(item: Any) -> dict[str, str]:
    if isinstance(item, tf.ToolCall):
        return {"kind": "tool", "name": item.tool, "args": item.args, "result": item.result or ""}
    if isinstance(item, tf.KnowledgeOp):
        return {
            "kind": "knowledge",
            "name": item.action,
            "args": item.path,
            "result": item.summary or "",
        }
    return {"kind": "attachment", "name": "attachment", "args": item.path, "result": ""}


# ── knowledge files ──
@dataclass
class EntryView:
    entry: kf.Entry
    line: int
    text: Markup
    replacement: str | None  # the id of the entry that superseded it


@dataclass
class SectionView:
    level: int
    title: str
    anchor: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)  # ("entries"|"text", ...)


def knowledge_view(text: str) -> tuple[dict[str, Any], list[SectionView]]:
    """The frontmatter (a mapping; {} when none) and the sections of a knowledge file: each
    entry on its own (struck when superseded), the lines between them as Markdown."""
    doc = kf.parse(text)
    line = 1 + (doc.frontmatter.count("\n") + 2 if doc.frontmatter is not None else 0)
    sections = []
    for n, s in enumerate(doc.sections):
        view = SectionView(s.level, s.title, f"s{n}")
        if s.level:
            line += 1
        plain: list[str] = []

        def flush(view: SectionView = view, plain: list[str] = plain) -> None:
            if any(p.strip() for p in plain):
                view.blocks.append(("text", markdown("\n".join(plain))))
            plain.clear()

        for item in s.lines:
            if isinstance(item, kf.Entry):
                flush()
                if not view.blocks or view.blocks[-1][0] != "entries":
                    view.blocks.append(("entries", []))
                body = (f"{item.date}: " if item.date else "") + item.text
                view.blocks[-1][1].append(
                    EntryView(item, line, markdown_inline(body), item.superseded_by)
                )
            else:
                plain.append(item)
            line += 1
        flush()
        sections.append(view)
    return doc.meta(), sections
