"""The standing part of a context, placed by section: the identity files (P0) and MEMORY.md
(P1) share ``context_compiler.session_share`` of the token budget.

When they fit the share they go in whole, as written. When they do not (a small budget, a
long MEMORY.md), each file keeps its head (its title and the text before its first `## `
section; an identity file's head is never dropped) and its sections compete for the rest,
ranked against the message like everything else: the sections that share the most words
with the message first, the others in file order while room is left. A file's sections
stay in file order, and a line at its end names the sections left out and where to read
them, so nothing a user wrote is cut without the context saying so.

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
                if len(text.encode("utf-8")) > f.cap_bytes:  # can never fit whole
                    text = cut_to_bytes(text, f.cap_bytes, f.path)
                tokens = count_tokens(text)
                shared = len(stems(text) & wanted)
                # more shared words first; among equals, the shorter section (more per token)
                relevance = shared / math.log(2 + tokens) if shared else 0.0
                parts.append(_Part(n, order, heading, text, tokens, relevance))
    taken, used, used_bytes = _required(files, parts)
    ranked = sorted(
        (p for p in parts if (p.file, p.order) not in taken),
        key=lambda p: (-p.relevance, p.file, p.order),
    )
    for p in ranked:
        size = len(p.text.encode("utf-8")) + 1
        if used + p.tokens <= share and used_bytes[p.file] + size <= files[p.file].cap_bytes:
            taken[(p.file, p.order)] = p.text
            used += p.tokens
            used_bytes[p.file] += size
    return [_render(n, f, parts, taken) for n, f in enumerate(files)]


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


def _render(n: int, f: StandingFile, parts: list[_Part], taken: dict[tuple[int, int], str]) -> str:
    """File N's chosen parts in file order, and a line naming the sections left out."""
    mine = [p for p in parts if p.file == n]
    kept = [taken[(n, p.order)] for p in mine if (n, p.order) in taken]
    left = [p for p in mine if (n, p.order) not in taken]
    if not kept:
        return ""
    if left:
        names = ", ".join(f'"{p.heading}"' if p.heading else "its opening" for p in left)
        tokens = sum(p.tokens for p in left)
        kept.append(f"[… left out for room: {names} ({tokens} tokens); read {f.path}]")
    return "\n\n".join(kept)
