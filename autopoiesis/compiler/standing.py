"""The standing part of a context, placed by entry: the identity files (P0), MEMORY.md, the
active projects and the current project's knowledge file (P1) share
``context_compiler.session_share`` of the token budget.

When they fit the share they go in whole, as written. When they do not (a small budget, a
long MEMORY.md), a written identity file keeps its head (never dropped), and the entries
of all the files (a list item, or a paragraph) compete for the rest, ranked against the
message like everything else: first every entry that shares words with the message, best
per token, whatever file or section it is in; then the others, section by section as the
sections rank, the later entries of a section first (a later entry restates or replaces
an earlier one: cutting at the end dropped the newest preferences first). An entry said
in a session of another project than the current one ranks after the rest, and comes only
when it shares words with the message: a DocGen session started with lmstrix's "for test
--all let's ALWAYS sort by size_bytes", a rule of another codebase. (An identity
file as the template ships it is not here: it goes in whole in the room everything else
left, compiler/compile.) A file's sections
and a section's entries stay in file order, and a line at the file's end names what was
left out and where to read it, so nothing a user wrote is cut without the context saying
so; that line's cost is charged against the share when the file is opened.

Why a share and not "whatever is left": at 2K tokens a 1,000-token MEMORY.md and the
identity files took three quarters of the budget before any evidence was placed, and the
section that answered the message (its Preferences) was the one cut off at the end. Why
entries and not sections: a section that shares a word with the message in many entries
(a long Preferences) ranked first and filled the share, and the one entry of the
project's Commands that answered ("Run the tests: `bun test`") was left out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from autopoiesis.core.text import STOPWORDS, count_tokens, cut_to_bytes, words
from autopoiesis.formats.knowledge import HISTORY_SECTIONS
from autopoiesis.index.projects import OTHER_PROJECT_FACTOR

_SECTION_RE = re.compile(r"^## ")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_ENTRY_RE = re.compile(r"^(?:[-*+]|\d+[.)])\s")  # a list item starts an entry
STEM_CHARS = 6  # "preferences" and "prefer" meet at "prefer"
# An entry of what sessions did (a project's Changes, its Errors and Fixes, a day's
# journal) bears on a message when it shares this many of its words: such an entry quotes
# the request it served, which shares one with most messages.
HISTORY_WORDS = 2
_HEADING_RE = re.compile(r"^(#{1,6})\s")


@dataclass(frozen=True)
class StandingFile:
    """A file of the standing part: its repo path, its current text and the bytes it may
    take (its ``*_budget_kb``)."""

    path: str
    text: str
    cap_bytes: int
    head_required: bool  # an identity file: its head is never dropped
    # its entries (their first lines) said in a session of another project than the
    # current one: they rank after the rest, like search ranks that project's chunks
    elsewhere: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Part:
    file: int
    order: int
    heading: str  # "" for the head
    text: str
    tokens: int
    relevance: float
    lead: str  # its heading line ("" for a head without one)
    # (text, tokens with its line break, words shared with the message, another project's)
    entries: list[tuple[str, int, int, bool]]


@dataclass(frozen=True)
class _Cut:
    """A part shown in part: the tokens it shows, and how many of its entries were left out."""

    tokens: int
    left: int
    total: int


def sections(text: str, at: re.Pattern[str] = _SECTION_RE) -> list[tuple[str, str]]:
    """(heading, text) of TEXT's head ("" heading; may be empty) and each `## ` section
    (each section whose heading line AT matches), in order; a heading line inside a fenced
    block starts none."""
    out: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in text.split("\n"):
        if _FENCE_RE.match(line):
            fenced = not fenced
        if not fenced and (m := at.match(line)):
            out.append((line[m.end() :].strip(), [line]))
        else:
            out[-1][1].append(line)
    return [(h, "\n".join(lines).strip("\n")) for h, lines in out]


def stems(text: str) -> set[str]:
    """The content words of TEXT, cut to STEM_CHARS letters."""
    return {w[:STEM_CHARS] for w in words(text) if len(w) > 2 and w not in STOPWORDS}


def fit(files: Sequence[StandingFile], query: str, share: int) -> list[str]:
    """The content of each of FILES within SHARE tokens in all and its own byte cap: the
    whole text when everything fits, else its head and the entries placed best against
    QUERY, with a line naming what was left out. "" for a file of which nothing fits
    (the module's docstring says how they are placed). A section that is a heading alone
    says nothing and is left out unnamed; a file's title comes with its first entry."""
    files = [replace(f, text=without_repeats(f.text)[0]) for f in files]
    if sum(count_tokens(f.text) for f in files) <= share and all(
        len(f.text.encode("utf-8")) <= f.cap_bytes for f in files
    ):
        return [f.text for f in files]
    wanted = stems(query)
    parts: list[_Part] = []
    for n, f in enumerate(files):
        for order, (heading, text) in enumerate(sections(f.text)):
            lead, items = entries(text)
            if not items and (order > 0 or not lead):
                continue  # a heading alone
            scored = [
                (
                    item,
                    count_tokens(item) + 1,
                    len(stems(item) & wanted),
                    item.split("\n", 1)[0] in f.elsewhere,
                )
                for item in items
            ]
            tokens = count_tokens(text)
            shared = len(stems(text) & wanted)
            # more shared words first; among equals, the shorter section (more per token)
            relevance = shared / math.log(2 + tokens) if shared else 0.0
            parts.append(_Part(n, order, heading, text, tokens, relevance, lead, scored))
    placing = _Placing(files, parts, share)
    ranked = sorted(
        (p for p in parts if p.entries and (p.file, p.order) not in placing.taken),
        key=lambda p: (-p.relevance, p.file, p.order),
    )
    # the entries that share words with the message, best per token (an entry said in a
    # session of another project's count OTHER_PROJECT_FACTOR of theirs; one of what a
    # session did, two words: it quotes the request it served, which shares one with
    # most messages) ...
    relevant = sorted(
        (-shared / math.log(2 + tokens) * (OTHER_PROJECT_FACTOR if other else 1.0), rank, -i, p, i)
        for rank, p in enumerate(ranked)
        for i, (_, tokens, shared, other) in enumerate(p.entries)
        if shared >= (HISTORY_WORDS if p.heading in HISTORY_SECTIONS else 1)
    )
    for *_, p, i in relevant:
        placing.place(p, i)
    # ... then the others of this project and the global ones, section by section (of
    # another project's, only those that share words with the message, above: its rules
    # are another codebase's, and in the nine development memories leaving the others out
    # held the evidence for ten questions more and three fewer). A section of what
    # sessions did (a project's Changes, its Errors and Fixes) is no standing rule: for a
    # message its entries come only when they share words with it (at 2K the Claude Code
    # set's project file took 550 tokens of unrelated changes); at a session's start,
    # with no message (or one too short to rank them against: a greeting), what the last
    # sessions did is what there is
    for p in ranked:
        if len(wanted) >= HISTORY_WORDS and p.heading in HISTORY_SECTIONS:
            continue
        for i in reversed(range(len(p.entries))):
            if not p.entries[i][3] and i not in placing.chosen.get((p.file, p.order), ()):
                placing.place(p, i)
    taken, cuts = placing.result()
    return [_render(n, f, parts, taken, cuts) for n, f in enumerate(files)]


# The line that names what a partly shown file left out ("[… left out for room: ...]"),
# about what it costs: charged when a file's first entry is placed, so that a marginal
# entry does not open one more file whose line costs more than it brings.
LEFT_OUT_TOKENS = 20


class _Placing:
    """The entries placed so far within the share and each file's byte cap."""

    def __init__(self, files: Sequence[StandingFile], parts: list[_Part], share: int):
        self.files = files
        self.parts = parts
        self.share = share
        self.taken, self.used, self.used_bytes = _required(files, parts)
        self.chosen: dict[tuple[int, int], set[int]] = {}
        self.opened = {key[0] for key in self.taken}
        self.titles = {p.file: p for p in parts if p.order == 0 and not p.entries}

    def _cost(self, p: _Part, items: list[int]) -> tuple[int, int]:
        tokens = sum(p.entries[i][1] for i in items)
        size = sum(len(p.entries[i][0].encode("utf-8")) + 1 for i in items)
        if (p.file, p.order) not in self.chosen and p.lead:  # its heading, with its first entry
            tokens += count_tokens(p.lead) + 1
            size += len(p.lead.encode("utf-8")) + 1
        if p.file not in self.opened:
            tokens += LEFT_OUT_TOKENS
            title = self.titles.get(p.file)
            if title is not None and title is not p:
                tokens += title.tokens + 1
                size += len(title.text.encode("utf-8")) + 1
        return tokens, size

    def place_all(self, p: _Part, items: list[int]) -> bool:
        """Place ITEMS of P together, when they all fit."""
        if not items:
            return False
        tokens, size = self._cost(p, items)
        if (
            self.used + tokens > self.share
            or self.used_bytes[p.file] + size > self.files[p.file].cap_bytes
        ):
            return len(p.entries) == 1 and self._head_of(p, size)
        self.chosen.setdefault((p.file, p.order), set()).update(items)
        self.opened.add(p.file)
        self.used += tokens
        self.used_bytes[p.file] += size
        return True

    def place(self, p: _Part, i: int) -> bool:
        return self.place_all(p, [i])

    def _head_of(self, p: _Part, size: int) -> bool:
        """One entry longer than its file's cap: its head, cut to the cap."""
        f = self.files[p.file]
        if size <= f.cap_bytes:
            return False
        text = cut_to_bytes(p.text, f.cap_bytes - self.used_bytes[p.file] - 1, f.path)
        tokens = count_tokens(text)
        if self.used + tokens > self.share or not text.split("\n[… truncated", 1)[0].strip():
            return False
        self.taken[(p.file, p.order)] = text
        self.opened.add(p.file)
        self.used += tokens
        self.used_bytes[p.file] += len(text.encode("utf-8")) + 1
        return True

    def result(self) -> tuple[dict[tuple[int, int], str], dict[tuple[int, int], _Cut]]:
        """Each placed part's text (whole as written, or its heading and placed entries in
        file order) and, for those shown in part, how many entries were left out."""
        cuts: dict[tuple[int, int], _Cut] = {}
        for f in self.opened:
            title = self.titles.get(f)
            if title is not None:
                self.taken.setdefault((f, title.order), title.text)
        for p in self.parts:
            kept = self.chosen.get((p.file, p.order))
            if not kept:
                continue
            if len(kept) == len(p.entries):
                self.taken[(p.file, p.order)] = p.text  # whole, as written
                continue
            text = "\n".join(([p.lead] if p.lead else []) + [p.entries[i][0] for i in sorted(kept)])
            self.taken[(p.file, p.order)] = text
            left = len(p.entries) - len(kept)
            cuts[(p.file, p.order)] = _Cut(count_tokens(text), left, len(p.entries))
        return self.taken, cuts


def bearing(text: str, query: str) -> tuple[str, int]:
    """TEXT, a record of what sessions did (a day's journal), as it enters a context for
    QUERY: its entries that share HISTORY_WORDS words with the message, under their
    headings, and how many entries were left out. Whole for a QUERY of fewer content
    words than that (a session's start, a greeting: what the last sessions did is what
    there is to say).

    Why: for a message, a day's journal is history like a project's Changes, and the
    search index holds it. Placed whole before the evidence, the last day's unrelated
    entries took 240 of 2,048 tokens; leaving the entries that share fewer words to
    search held the evidence at 2K for 0.722 of the Claude Code set's questions, not
    0.685 (the other two development sets: as good or better; bench/bench_coding.py)."""
    wanted = stems(query)
    if len(wanted) < HISTORY_WORDS:
        return text, 0
    return kept_entries(text, lambda entry: len(stems(entry) & wanted) >= HISTORY_WORDS)


_ENTRY_ID = re.compile(r"\{id: (\d{8}-\d{4}-[0-9a-f]{6})\}")


def entry_ids(text: str) -> frozenset[str]:
    """The ids of the entries TEXT shows (`{id: ...}`)."""
    return frozenset(_ENTRY_ID.findall(text))


def says_anything(text: str) -> bool:
    """Whether TEXT holds a line that is no heading (an entry, a paragraph)."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.split("\n"))


def without_shown(text: str, shown: frozenset[str]) -> tuple[str, int]:
    """TEXT, a day's journal, without the lines that carry the id of an entry SHOWN above
    it in the same context (a journal's "Preference: ... {id: X}" where MEMORY.md's entry X
    is placed): the same fact twice spends the room of another. Returns (text, lines left
    out)."""
    if not shown or not (entry_ids(text) & shown):
        return text, 0
    return kept_entries(text, lambda entry: not (entry_ids(entry) & shown))


def without_repeats(text: str) -> tuple[str, int]:
    """TEXT without an entry that carries only ids an entry above it carries (a
    copy-pasted entry the pre-commit hook did not see: a file edited and never committed,
    or committed past the hook): one fact is shown once. Returns (text, entries left
    out); TEXT as it is when no id repeats."""
    ids = _ENTRY_ID.findall(text)
    if len(ids) == len(set(ids)):
        return text, 0
    seen: set[str] = set()

    def first_time(entry: str) -> bool:
        carried = entry_ids(entry)
        if carried and carried <= seen:
            return False
        seen.update(carried)
        return True

    return kept_entries(text, first_time)


def kept_entries(text: str, keep: Callable[[str], bool]) -> tuple[str, int]:
    """TEXT's entries that KEEP accepts, under their headings (a heading whose entries
    all went goes too), and how many went."""
    kept: list[str] = []
    heads: list[tuple[int, str]] = []  # the headings above the next entry, not yet shown
    left = 0
    for _, block in sections(text, _HEADING_RE):
        lead, items = entries(block)
        if lead:
            level = len(lead) - len(lead.lstrip("#"))
            while heads and heads[-1][0] >= level:
                heads.pop()
            heads.append((level, lead))
        for entry in items:
            if not keep(entry):
                left += 1
                continue
            for _, head in heads:
                if head:
                    if kept:
                        kept.append("")  # a heading is set apart from what comes above it
                    kept.append(head)
            heads = [(n, "") for n, _ in heads]  # shown: only their levels still matter
            kept.append(entry)
    return "\n".join(kept), left


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
