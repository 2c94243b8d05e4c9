"""The standing part of a context, placed by section: the identity files (P0) and MEMORY.md
(P1) share ``context_compiler.session_share`` of the token budget.

When they fit the share they go in whole, as written. When they do not (a small budget, a
long MEMORY.md), each file keeps its head (its title and the text before its first `## `
section; an identity file's head is never dropped) and its sections compete for the rest,
ranked against the message like everything else: the sections that share the most words
with the message first, the others in file order while room is left. A section too long
for the room left (MEMORY.md's Preferences past its ``memory_budget_kb``) keeps its
entries that share the most words with the message, the later first among equals (a later
entry restates or replaces an earlier one), not its first lines: cutting at the end
dropped the newest preferences first. A file's sections and a section's entries stay in
file order, and a line at the file's end names what was left out and where to read it,
so nothing a user wrote is cut without the context saying so.

Why a share and not "whatever is left": at 2K tokens a 1,000-token MEMORY.md and the
identity files took three quarters of the budget before any evidence was placed, and the
section that answered the message (its Preferences) was the one cut off at the end.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from autopoiesis.core.text import STOPWORDS, count_tokens, cut_to_bytes, words

_SECTION_RE = re.compile(r"^## ")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_ENTRY_RE = re.compile(r"^(?:[-*+]|\d+[.)])\s")  # a list item starts an entry
STEM_CHARS = 6  # "preferences" and "prefer" meet at "prefer"


@dataclass(frozen=True)
class StandingFile:
    """A file of the standing part: its repo path, its current text and the bytes it may
    take (its ``*_budget_kb``)."""

    path: str
    text: str
    cap_bytes: int
    head_required: bool  # an identity file: its head is never dropped


@dataclass(frozen=True)
class _Part:
    file: int
    order: int
    heading: str  # "" for the head
    text: str
    tokens: int
    relevance: float


@dataclass(frozen=True)
class _Cut:
    """The entries of a part that fit: its text, and how many of its entries were left out."""

    text: str
    tokens: int
    size: int  # UTF-8 bytes
    left: int
    total: int


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, text) of TEXT's head ("" heading; may be empty) and each `## ` section,
    in order; a `## ` line inside a fenced block starts none."""
    out: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in text.split("\n"):
        if _FENCE_RE.match(line):
            fenced = not fenced
        if not fenced and _SECTION_RE.match(line):
            out.append((line[3:].strip(), [line]))
        else:
            out[-1][1].append(line)
    return [(h, "\n".join(lines).strip("\n")) for h, lines in out]


def stems(text: str) -> set[str]:
    """The content words of TEXT, cut to STEM_CHARS letters."""
    return {w[:STEM_CHARS] for w in words(text) if len(w) > 2 and w not in STOPWORDS}


def fit(files: Sequence[StandingFile], query: str, share: int) -> list[str]:
    """The content of each of FILES within SHARE tokens in all and its own byte cap: the
    whole text when everything fits, else its head and the sections ranked best against
    QUERY, with a line naming what was left out. "" for a file of which nothing fits."""
    if sum(count_tokens(f.text) for f in files) <= share and all(
        len(f.text.encode("utf-8")) <= f.cap_bytes for f in files
    ):
        return [f.text for f in files]
    wanted = stems(query)
    parts: list[_Part] = []
    for n, f in enumerate(files):
        for order, (heading, text) in enumerate(sections(f.text)):
            if text.strip():
                tokens = count_tokens(text)
                shared = len(stems(text) & wanted)
                # more shared words first; among equals, the shorter section (more per token)
                relevance = shared / math.log(2 + tokens) if shared else 0.0
                parts.append(_Part(n, order, heading, text, tokens, relevance))
    taken, used, used_bytes = _required(files, parts)
    cuts: dict[tuple[int, int], _Cut] = {}
    ranked = sorted(
        (p for p in parts if (p.file, p.order) not in taken),
        key=lambda p: (-p.relevance, p.file, p.order),
    )
    for p in ranked:
        f = files[p.file]
        size = len(p.text.encode("utf-8")) + 1
        if used + p.tokens <= share and used_bytes[p.file] + size <= f.cap_bytes:
            taken[(p.file, p.order)] = p.text
            used += p.tokens
            used_bytes[p.file] += size
            continue
        room = f.cap_bytes - used_bytes[p.file] - 1
        cut = _entries_within(p, wanted, share - used, room)
        if cut is None and size > f.cap_bytes:  # an entry longer than the cap: the head
            text = cut_to_bytes(p.text, room, f.path)
            tokens = count_tokens(text)
            if used + tokens <= share and text.split("\n[… truncated", 1)[0].strip():
                cut = _Cut(text, tokens, len(text.encode("utf-8")), 0, 0)
        if cut is not None:
            taken[(p.file, p.order)] = cut.text
            cuts[(p.file, p.order)] = cut
            used += cut.tokens
            used_bytes[p.file] += cut.size + 1
    return [_render(n, f, parts, taken, cuts) for n, f in enumerate(files)]


def entries(text: str) -> tuple[str, list[str]]:
    """(lead, entries) of a section's TEXT: its heading line, then each list item with the
    lines that continue it, or each paragraph that is no list; a fenced block stays with
    the entry it is in."""
    lines = text.split("\n")
    lead = lines.pop(0) if lines and lines[0].startswith("#") else ""
    out: list[list[str]] = []
    fenced = False
    open_entry = False
    for line in lines:
        if not fenced and not line.strip():
            open_entry = False
            continue
        if not fenced and (_ENTRY_RE.match(line) or not open_entry):
            out.append([line])
            open_entry = True
        else:
            out[-1].append(line)
        if _FENCE_RE.match(line):
            fenced = not fenced
    return lead, ["\n".join(e) for e in out]


def _entries_within(p: _Part, wanted: set[str], tokens: int, size: int) -> _Cut | None:
    """P's heading and as many of its entries as fit TOKENS and SIZE bytes: those sharing
    the most words with the message first, the later first among equals; None when not
    one fits."""
    lead, items = entries(p.text)
    used, used_bytes = count_tokens(lead), len(lead.encode("utf-8"))
    ranked = sorted(range(len(items)), key=lambda i: (-len(stems(items[i]) & wanted), -i))
    kept: list[int] = []
    for i in ranked:
        cost, cost_bytes = count_tokens(items[i]) + 1, len(items[i].encode("utf-8")) + 1
        if used + cost <= tokens and used_bytes + cost_bytes <= size:
            kept.append(i)
            used += cost
            used_bytes += cost_bytes
    while kept:  # the entries' counts are an estimate of the joined text's: check it
        text = "\n".join(([lead] if lead else []) + [items[i] for i in sorted(kept)])
        n_tokens = count_tokens(text)
        if n_tokens <= tokens:
            return _Cut(
                text, n_tokens, len(text.encode("utf-8")), len(items) - len(kept), len(items)
            )
        kept.pop()  # the one that shared least with the message
    return None


def _required(
    files: Sequence[StandingFile], parts: list[_Part]
) -> tuple[dict[tuple[int, int], str], int, list[int]]:
    """The heads that are never dropped (an identity file's), cut to the file's cap when
    they alone exceed it; their tokens and each file's bytes."""
    taken: dict[tuple[int, int], str] = {}
    used = 0
    used_bytes = [0] * len(files)
    for p in parts:
        f = files[p.file]
        if p.order == 0 and f.head_required:
            text = cut_to_bytes(p.text, f.cap_bytes, f.path)
            taken[(p.file, p.order)] = text
            used += count_tokens(text)
            used_bytes[p.file] += len(text.encode("utf-8")) + 1
    return taken, used, used_bytes


def _render(
    n: int,
    f: StandingFile,
    parts: list[_Part],
    taken: dict[tuple[int, int], str],
    cuts: dict[tuple[int, int], _Cut],
) -> str:
    """File N's chosen parts in file order, and a line naming what was left out: whole
    sections, and the entries of a section that did not all fit."""
    mine = [p for p in parts if p.file == n]
    kept = [taken[(n, p.order)] for p in mine if (n, p.order) in taken]
    if not kept:
        return ""
    names: list[str] = []
    tokens = 0
    for p in mine:
        name = f'"{p.heading}"' if p.heading else "its opening"
        cut = cuts.get((n, p.order))
        if (n, p.order) not in taken:
            names.append(name)
            tokens += p.tokens
        elif cut is not None and cut.left:
            names.append(f"{cut.left} of the {cut.total} entries of {name}")
            tokens += max(0, p.tokens - cut.tokens)
    if names:
        kept.append(f"[… left out for room: {', '.join(names)} ({tokens} tokens); read {f.path}]")
    return "\n\n".join(kept)
