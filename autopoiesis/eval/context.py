"""What a context holds, as `autopoiesis eval` scores it: the transcript turns, the
evidence items resolved to turns or lines, a context (compiled or BM25-packed) read as a
`ContextView`, and the plain baseline that packs turns.

**Evidence in context**: an evidence item is held when the context holds its lines (an
included section of that file spanning them, or a whole file holding its first line), or
its text (text no turn holds), or **a knowledge line that carries it**: a knowledge entry
in the context whose provenance points to the evidence turn (its citation names the
turn's transcript, by path or session, and its turn time is the turn's minute), or whose
words hold every content word of the evidence text (`answer_words`: stopwords out,
plurals folded; all of them, so a line that only shares the topic does not count).

**Answer in context**: the question's answer pattern matches the context's text.

The same scoring reads both contexts: the BM25 baseline's view holds turns only (no
knowledge line, so that credit can only go to the compiled context).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from autopoiesis.compiler.packing import Unit, day_line, transcript_source
from autopoiesis.compiler.plan import Section
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import count_tokens, words
from autopoiesis.errors import AutopoiesisError
from autopoiesis.eval.knowledge_recall import answer_words
from autopoiesis.formats import knowledge as kf
from autopoiesis.formats.transcript import HEADER_RE, parse_meta

_LOCATION_RE = re.compile(r"^(?P<path>[^\s:]+\.md):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_TIME_RE = re.compile(r"(\d\d:\d\d) ")


def norm(text: str) -> str:
    """TEXT as its words between spaces: `norm(a) in norm(b)` is a word-exact find."""
    return " " + " ".join(words(text)) + " "


@dataclass(frozen=True)
class Turn:
    path: str
    unit: Unit
    session: str = ""  # the transcript's session id
    at: str = ""  # the turn's minute, YYYY-MM-DDTHH:MMZ (as a knowledge citation has it)

    @property
    def dated(self) -> str:
        """The turn as the baseline packs it: on its own, so with its date."""
        return (day_line(self.unit.day) + " " if self.unit.day else "") + self.unit.text


def transcript_turns(repo: MemoryRepo) -> list[Turn]:
    """Every turn of the repo's transcripts (raw/conversations), in file order."""
    out: list[Turn] = []
    for p in repo.iter_markdown("raw/conversations"):
        rel = repo.rel(p)
        try:
            text = p.read_text(encoding="utf-8")
            src = transcript_source(rel, text)
            session = parse_meta(text, rel).session_id if src is not None else ""
        except (OSError, UnicodeDecodeError, AutopoiesisError):
            continue
        if src is None:
            continue
        for u in src.units:
            t = _TIME_RE.match(u.text)
            at = f"{u.day.isoformat()}T{t.group(1)}Z" if t and u.day else ""
            out.append(Turn(rel, u, session, at))
    return out


@dataclass(frozen=True)
class Evidence:
    """Where an evidence item is: file line ranges (any of them counts), else its text;
    the turns it is (for a knowledge line's citation) and its content words."""

    locations: tuple[tuple[str, int, int], ...]
    text: str | None = None
    # each evidence turn as a citation names it: ({transcript path, session ref}, minute)
    cited_as: tuple[tuple[frozenset[str], str], ...] = ()
    content: frozenset[str] = frozenset()
    # why a `path:line` item names no lines of the repo (it is read as text then, which
    # no context holds): a mistake the figures alone would hide as a miss
    problem: str | None = None


def _cited_as(turn: Turn) -> tuple[frozenset[str], str]:
    refs = {turn.path}
    if turn.session:
        refs |= {turn.session, kf.citation_ref(turn.session)}
    return frozenset(refs), turn.at


def _turn_words(repo: MemoryRepo, path: str, start: int, end: int, cache: LineCache) -> str:
    lines = (cache.line(repo, path, n) for n in range(start, end + 1))
    return " ".join(line for line in lines if not HEADER_RE.match(line))


def resolve(
    item: str, repo: MemoryRepo, turns: Sequence[Turn], normed: Sequence[str], cache: LineCache
) -> Evidence:
    """ITEM (a `path:line[-end]` of the repo, or text) as the places that hold it."""
    m = _LOCATION_RE.match(item.strip())
    problem = None
    if m:
        try:  # a path outside the repo is no evidence of it
            inside = repo.resolve_inside(m["path"]).is_file()
        except AutopoiesisError:
            inside, problem = False, "names a path outside the memory repo"
        path, start = m["path"], int(m["start"])
        end = max(start, int(m["end"] or start))
        held = cache.lines(repo, path) if inside else []
        lines = len(held) - (held[-1:] == [""])  # the text after a last newline is no line
        if problem is None and not inside:
            problem = f"names no file of the memory repo ({path})"
        elif problem is None and not 0 < start <= lines:
            problem = f"names line {start}, and {path} has lines 1 to {lines}"
        if problem is None:
            hit = [
                t for t in turns if t.path == path and t.unit.start <= end and start <= t.unit.end
            ]
            return Evidence(
                ((path, start, end),),
                cited_as=tuple(_cited_as(t) for t in hit),
                content=answer_words(_turn_words(repo, path, start, end, cache)),
            )
    want = norm(item)
    content = answer_words(item)
    if want.strip():
        hit = [t for t, n in zip(turns, normed) if want in n]
        if hit:
            return Evidence(
                tuple((t.path, *_lines_holding(t.unit, want)) for t in hit),
                cited_as=tuple(_cited_as(t) for t in hit),
                content=content,
            )
    return Evidence((), item, content=content, problem=problem)


def _lines_holding(unit: Unit, want: str) -> tuple[int, int]:
    """The file lines of UNIT that hold the normalised text WANT (its first place, as few
    lines as hold it) for a turn a context may show in part (Unit.numbers: a long one,
    packing.FOCUS_CHARS); else the whole turn."""
    if not unit.numbers:
        return unit.start, unit.end
    lines = [norm(line) for line in unit.text.split("\n")]
    if len(lines) != len(unit.numbers):
        return unit.start, unit.end
    for j, last in enumerate(lines):  # the first line WANT ends on, then where it starts
        joined = last
        for i in range(j, -1, -1):
            if i < j and lines[i].strip():
                joined = lines[i] + joined[1:]  # a normalised line opens and ends with a space
            if want in joined:
                return unit.numbers[i], unit.numbers[j]
            if len(joined) > len(last) + len(want):
                break  # had WANT ended on line J, it would have begun by now
    return unit.start, unit.end


class LineCache:
    """The lines of the repo's files, read once per evaluation."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def lines(self, repo: MemoryRepo, path: str) -> list[str]:
        if path not in self._files:
            try:
                self._files[path] = (repo.root / path).read_text(encoding="utf-8").split("\n")
            except (OSError, UnicodeDecodeError):
                self._files[path] = []
        return self._files[path]

    def line(self, repo: MemoryRepo, path: str, n: int) -> str:
        lines = self.lines(repo, path)
        return lines[n - 1].strip() if 0 < n <= len(lines) else ""


@dataclass
class ContextView:
    """A context as the figures read it: the file lines it holds, its knowledge lines and
    its text."""

    text: str
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    whole: dict[str, str] = field(default_factory=dict)  # a whole or cut file: its content
    knowledge: list[kf.Line] = field(default_factory=list)
    _norm: str | None = None

    @property
    def normed(self) -> str:
        if self._norm is None:
            self._norm = norm(self.text)
        return self._norm


def compiled_view(
    prompt: str, sections: Sequence[Section], repo: MemoryRepo, cache: LineCache
) -> ContextView:
    """The view of a compiled context: its included sections, and the knowledge lines
    among them (every section but a transcript's) parsed as entries where they are."""
    view = ContextView(prompt)
    for s in sections:
        if not s.included or not s.path:
            continue
        lines = cache.lines(repo, s.path) if not s.path.startswith("raw/") else []
        if s.spans:
            view.spans.setdefault(s.path, []).extend(s.spans)
            held = [lines[n - 1] for a, b in s.spans for n in range(a, b + 1) if n <= len(lines)]
        else:
            view.whole[s.path] = s.content
            held = [line for line in lines if line.strip() and line.strip() in s.content]
        view.knowledge += [kf.parse_line(line) for line in held if line.strip()]
    return view


def evidence_held(ev: Evidence, view: ContextView, repo: MemoryRepo, cache: LineCache) -> bool:
    """Does the context of VIEW hold EV (see the module docstring)?"""
    for path, start, end in ev.locations:
        if any(a <= end and start <= b for a, b in view.spans.get(path, ())):
            return True
        if path in view.whole:
            text = cache.line(repo, path, start)
            if text and text in view.whole[path]:
                return True
    if ev.text is not None and norm(ev.text) in view.normed:
        return True
    return any(_carries(line, ev) for line in view.knowledge)


def _carries(line: kf.Line, ev: Evidence) -> bool:
    """Does the knowledge LINE carry EV: its citation points to an evidence turn, or its
    words hold all the evidence's content words?"""
    if isinstance(line, kf.Entry):
        if not line.active:
            return False
        at = line.turn_at
        if line.source and any(line.source in refs and at == t for refs, t in ev.cited_as):
            return True
        text = line.text
    else:
        text = line
    return bool(ev.content) and ev.content <= answer_words(text)


# ── the baseline: BM25 over turns, packed ──
class TurnBaseline:
    """Plain FTS5 BM25 over the transcript turns, packed whole into a budget."""

    def __init__(self, turns: Sequence[Turn]):
        from autopoiesis.index.text import fts_match, query_terms

        self._fts_match, self._terms = fts_match, query_terms
        self.turns = list(turns)
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
        self.db.executemany(
            "INSERT INTO t(rowid, body) VALUES (?, ?)",
            ((i + 1, t.unit.text) for i, t in enumerate(self.turns)),
        )
        # +1: the line break between turns
        self.costs = [count_tokens(t.dated) + 1 for t in self.turns]

    def ranked(self, question: str) -> list[int]:
        match = self._fts_match(self._terms(question))
        if match is None:
            return []
        return [
            r[0] - 1
            for r in self.db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank", (match,))
        ]

    def pack(self, ranked: Sequence[int], budget: int) -> list[int]:
        left, out = budget, []
        for i in ranked:
            if self.costs[i] <= left:
                out.append(i)
                left -= self.costs[i]
        return out

    def view(self, packed: Sequence[int]) -> ContextView:
        """The packed turns as a context: their lines, and their text with their dates."""
        chosen = [self.turns[i] for i in packed]
        view = ContextView("\n".join(t.dated for t in chosen))
        for t in chosen:
            view.spans.setdefault(t.path, []).append((t.unit.start, t.unit.end))
        return view

    def close(self) -> None:
        self.db.close()
