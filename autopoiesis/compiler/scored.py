"""P3 of the context compiler: scored knowledge. The search index's hits (or the given
items) are filtered (no topics, no archive unless asked, no MEMORY.md in a shared context),
scored by search x recency x frequency, restated turns marked (`restated`), and packed as
whole units into what P0-P2 leave but the history share (`packing`).

`ScoredKnowledge` is the part of `ContextCompiler` that does it; the compiler's other
slots are in `compile`."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from autopoiesis.compiler.context import HistoryMessage, ScoredItem, SearchFn
from autopoiesis.compiler.packing import Hit, Packing, Source, Unit, pack, source_of
from autopoiesis.compiler.plan import Plan
from autopoiesis.compiler.restated import Statement, later_statements
from autopoiesis.compiler.standing import stems
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.core.private import WITHHELD, may_reach_model
from autopoiesis.errors import AutopoiesisError, IndexOutdatedError
from autopoiesis.index.files import read_bounded

if TYPE_CHECKING:
    from autopoiesis.core.config import CompilerConfig

KNOWLEDGE_MIN_TOKENS = 100  # P3 is not tried with less room than this
# Hits asked of the search index: first about one per TOKENS_PER_HIT tokens of room, at
# least KNOWLEDGE_CANDIDATES; when they are packed with room to spare and the index may
# hold more, four times as many, and so on: packing stops when the room is full, not at
# a count. At most MAX_CANDIDATES: sqlite-vec's KNN takes k <= 4096 and the query engine
# asks it for five candidates a result.
KNOWLEDGE_CANDIDATES = 20
TOKENS_PER_HIT = 60
MAX_CANDIDATES = 800
# Recency and frequency adjust the search score, they do not override it: fused search
# scores (reciprocal-rank) differ by ~15% between the 1st and the 10th hit, so the
# design's plain exp(-0.1 * days) would let any file edited today push aside the
# month-old transcript that answers the question. Age costs at most 10%, use earns at
# most 20%.
RECENCY_RATE = 0.1  # exp(-0.1 * days): half-life of about 7 days (docs/design.md#compilation)
RECENCY_FLOOR = 0.9
FREQUENCY_BOOST = 0.1  # x (1 + 0.1 * times included before) ...
FREQUENCY_CAP = 1.2  # ... up to x 1.2
# A note a hit links to (`[[...]]`) is a candidate too, at this share of the linking hit's
# score: what a note points at is often what its reader needs next. Only the links of the
# first LINK_SOURCES hits are followed.
LINKED_FACTOR = 0.5
LINK_SOURCES = 10
SOURCE_CACHE_BYTES = 24 << 20  # file bytes kept parsed between compiles (transcripts never change)
# Parsed files by their full path, oldest first, shared by every compiler of the process:
# a long-lived one (the daemon answering `compile` and the prompt hooks, the MCP server)
# makes a new ContextCompiler a call, and parsing the ~80 files a full budget takes is
# most of a call. Valid while the file's inode, mtime and size stay (every writer here
# replaces a file, which gives it a new inode). Bounded by the files' bytes: the daemon
# keeps it for days.
_SOURCES: dict[str, tuple[tuple[int, int, int], Source]] = {}
_SOURCE_BYTES = [0]


@dataclass(frozen=True)
class KnowledgeQuery:
    """What P3 searches for and how its hits are filtered and scored."""

    text: str  # the message (cut to QUERY_CHARS) and the active topics' descriptions
    given: Sequence[ScoredItem] | None  # replaces the index search when not None
    shared: bool  # MEMORY.md is left out
    now: datetime  # recency is counted from here
    counts: Mapping[str, int]  # times each path was included before (the frequency boost)
    include_archive: bool
    project: str | None = None  # the current project: its items and global ones first


def _remember_source(full: str, key: tuple[int, int, int], src: Source) -> None:
    """Keep SRC in _SOURCES, dropping the oldest entries past SOURCE_CACHE_BYTES."""
    old = _SOURCES.pop(full, None)
    if old is not None:
        _SOURCE_BYTES[0] -= old[0][2]
    _SOURCES[full] = (key, src)
    _SOURCE_BYTES[0] += key[2]
    while _SOURCE_BYTES[0] > SOURCE_CACHE_BYTES and len(_SOURCES) > 1:
        dropped = _SOURCES.pop(next(iter(_SOURCES)))
        _SOURCE_BYTES[0] -= dropped[0][2]


class ScoredKnowledge:
    """P3 of `ContextCompiler` (its attributes are set by the compiler's __init__)."""

    repo: MemoryRepo
    config: CompilerConfig
    notices: list[str]
    fresh_index: bool
    index_refresh_seconds: float
    _search: SearchFn | None
    _index: Any
    _last_catch_up: float
    _root: str
    _shipped: dict[str, str]  # the identity files as the template ships them: placed last

    # ── the knowledge search (P3) ──
    def _search_results(
        self, query: str, limit: int, project: str | None = None
    ) -> tuple[list[Any], str]:
        if self._search is not None:
            return list(self._search(query, limit)), "search"
        limit = max(1, min(limit, MAX_CANDIDATES))
        from autopoiesis.index import (
            searchindex,  # numpy and sqlite-vec: only when P3 searches
        )

        if self._index is None and self.repo.index_path.exists():
            try:
                self._index = searchindex.SearchIndex(self.repo)
            except Exception as exc:  # unreadable index: fall back like `search` does
                self.notices.append(f"search index could not be opened ({exc}); used git grep")
        if self._index is not None:
            now = time.monotonic()
            fresh = self.fresh_index and now - self._last_catch_up >= self.index_refresh_seconds
            try:
                results = list(self._index.locate(query, limit, fresh=fresh, project=project))
            except IndexOutdatedError as exc:  # being rebuilt in the background: grep meanwhile
                found, tool = searchindex.grep_search(self.repo, query, limit)
                self.notices.append(f"{exc}; used {tool}")
                return found, tool
            if fresh:
                self._last_catch_up = time.monotonic()
            return results, "index"
        outcome = searchindex.search_outcome(query, limit, repo=self.repo, project=project)
        return list(outcome.results), outcome.source

    def _source(self, relpath: str) -> Source | None:
        """The units of a file for P3, cached while the file is unchanged (_SOURCES); None
        for a symbolic link (`MemoryRepo.is_link`) and for a file larger than the index
        reads (`read_bounded`: a search without the index, git grep, finds one too)."""
        if self.repo.is_link(relpath):
            return None
        full = os.path.join(self._root, relpath)
        try:
            st = os.stat(full)
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = _SOURCES.get(full)
            if cached is not None and cached[0] == key:
                return cached[1]
            data = read_bounded(full)
            if data is None:
                return None
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        src = source_of(relpath, text)
        if (
            key[2] <= SOURCE_CACHE_BYTES // 8
        ):  # one huge transcript does not push out everything else
            _remember_source(full, key, src)
        return src

    def _place_knowledge(
        self, plan: Plan, history: Sequence[HistoryMessage], query: KnowledgeQuery
    ) -> None:
        """P3: scored knowledge fills what P0-P2 left but the history share, as whole
        chunks merged per file; what did not fit is listed. Not tried with less room than
        KNOWLEDGE_MIN_TOKENS."""
        cap = plan.left - self._history_reserve(
            history, plan, int(plan.budget * self.config.history_share)
        )
        if cap < KNOWLEDGE_MIN_TOKENS:
            plan.skip(
                "knowledge", 3, f"no room left for scored knowledge ({max(0, cap)} tokens)", None
            )
            return
        hits, packing, why = self._pack_knowledge(plan, query, cap)
        for f in packing.files:
            plan.offer(
                f.label(), 3, f.content(), f.path, reason=f.reason(), spans=f.source.spans(f.chosen)
            )
        for hit, tokens, exact in packing.left_out:
            plan.skip(
                f"knowledge:{hit.path}:{hit.start}-{hit.end}",
                3,
                f"over the knowledge share ({'' if exact else 'at least '}{tokens} tokens)",
                hit.path,
                tokens=tokens,
            )
        if not hits:
            plan.skip(
                "knowledge", 3, f"no search results ({why})" if why else "no search results", None
            )

    def _pack_knowledge(
        self, plan: Plan, query: KnowledgeQuery, cap: int
    ) -> tuple[list[Hit], Packing, str]:
        """The hits and their packing into CAP tokens, and why there are none when so.
        No fixed top-N: while the packing leaves room and the search may hold more, it
        asks for four times as many hits (up to MAX_CANDIDATES)."""
        limit = max(KNOWLEDGE_CANDIDATES, cap // TOKENS_PER_HIT)
        while True:
            hits, found, source, why = self._hits(query, limit, plan)
            packing = pack(hits, source, cap, plan.cost_parts, project=query.project)
            if (
                query.given is not None
                or found < limit
                or limit >= MAX_CANDIDATES
                or packing.crowded
                or cap - packing.tokens < KNOWLEDGE_MIN_TOKENS
            ):
                return hits, packing, why
            limit = min(MAX_CANDIDATES, limit * 4)

    @staticmethod
    def _history_reserve(history: Sequence[HistoryMessage], plan: Plan, share: int) -> int:
        """The tokens P3 leaves to P4: the newest turns' cost, up to SHARE."""
        need = 0
        for pos in range(len(history) - 1, -1, -1):
            need += plan.cost(f"history:{history[pos].id or pos}", history[pos].render())
            if need >= share:
                return share
        return need

    def _hits(
        self, query: KnowledgeQuery, limit: int, plan: Plan
    ) -> tuple[list[Hit], int, Callable[[str], Source | None], str]:
        """P3's candidates, best first; how many the search returned; where packing gets
        a file's units (read only for the hits it reaches)."""
        given = query.given
        rows: list[tuple[str, float, str, int, int, str | None, str | None, tuple[int, int] | None]]
        if given is not None:
            rows = [
                (g.path, g.score, g.snippet, g.start_line, g.end_line, None, None, None)
                for g in given
            ]
            why = ""
        else:
            try:
                results, why = self._search_results(query.text, limit, query.project)
            except AutopoiesisError as exc:
                return [], 0, lambda _: None, f"search failed: {exc}"
            rows = [
                (
                    r.path,
                    float(r.score),
                    r.snippet,
                    r.start_line,
                    r.end_line,
                    getattr(r, "turn_time", None),
                    getattr(r, "project", None),
                    _own_lines(r),
                )
                for r in results
            ]
        hits: list[Hit] = []
        as_given: dict[str, Source] = {}
        private = self.repo.private_patterns()
        to_model = self.repo.config.private.model_paths
        for path, score, snippet, start, end, turn_time, project, own in rows:
            if path in plan.paths or path in self._shipped or path.startswith("topics/"):
                # included whole already, or an identity file as the template ships it
                # (whole, in the room left: compile._place_templates); a topic comes in
                # through P2 only
                continue
            if not may_reach_model(path, private, to_model):
                plan.skip(f"knowledge:{path}:{start}-{end}", 3, WITHHELD, path)
                continue
            if path.startswith("archive/") and not query.include_archive:
                continue  # cold storage: never auto-loaded (README, "The memory repo")
            if query.shared and path == MEMORY_FILE:
                continue  # MEMORY.md must not leak into a shared context through search
            if given is not None and (snippet or "").strip():
                # given knowledge that is no file: its text is the whole item
                unit = Unit(start, max(start, end), snippet.strip())
                as_given.setdefault(path, Source(path, (unit,)))
            age = self._age_days(path, turn_time, query.now)
            recency = RECENCY_FLOOR + (1 - RECENCY_FLOOR) * math.exp(-RECENCY_RATE * age)
            boost = min(FREQUENCY_CAP, 1.0 + FREQUENCY_BOOST * query.counts.get(path, 0))
            hits.append(
                Hit(
                    path,
                    start,
                    end,
                    score * recency * boost,
                    score,
                    recency,
                    boost,
                    said=snippet or "",
                    when=_seconds(turn_time),
                    project=project,
                    own=own,
                )
            )
        hits.sort(key=lambda h: (-h.score, h.path, h.start))
        if given is None:
            hits += self._linked_hits(hits, query, plan)
            hits.sort(key=lambda h: (-h.score, h.path, h.start))
        hits = _later_wins(query.text, hits)

        wanted = stems(query.text)

        shown = plan.shown_ids

        def source(path: str) -> Source | None:
            found = self._source(path)  # the cached units; their long turns focused here
            if found is None:
                return as_given.get(path)
            return found.focused(wanted).without_entries(shown)

        return hits, len(rows), source, why

    def _linked_hits(self, hits: list[Hit], query: KnowledgeQuery, plan: Plan) -> list[Hit]:
        """The notes the best hits link to and no hit holds, each once, at LINKED_FACTOR
        of the score of the hit that links it (index/links.py)."""
        if self._index is None or not hits:
            return []
        best: dict[str, Hit] = {}
        for h in hits[:LINK_SOURCES]:
            best.setdefault(h.path, h)
        have = {h.path for h in hits} | set(plan.paths) | set(self._shipped)
        out: list[Hit] = []
        try:
            linked = self._index.linked_notes(list(best))
        except Exception:  # a link lookup never costs the context its hits
            return []
        private = self.repo.private_patterns()
        to_model = self.repo.config.private.model_paths
        for source, target, start, end in linked:
            if target in have or target.startswith(("topics/", "archive/")):
                continue
            if not may_reach_model(target, private, to_model):
                continue
            if query.shared and target == MEMORY_FILE:
                continue
            have.add(target)
            by = best[source]
            out.append(
                Hit(
                    target,
                    start,
                    end,
                    by.score * LINKED_FACTOR,
                    by.base * LINKED_FACTOR,
                    via=source,
                )
            )
        return out

    def _age_days(self, path: str, turn_time: str | None, now: datetime) -> float:
        """How old a hit is: a transcript turn by when it was said, a file by its mtime."""
        if turn_time:
            try:
                return max(0.0, (now - parse_ts(turn_time)).total_seconds() / 86400)
            except AutopoiesisError:
                pass
        try:
            return max(
                0.0, (now.timestamp() - os.stat(os.path.join(self._root, path)).st_mtime) / 86400
            )
        except OSError:
            return 0.0


def _seconds(turn_time: str | None) -> float | None:
    """TURN_TIME (ISO-8601) as seconds since the epoch, or None."""
    if not turn_time:
        return None
    try:
        return parse_ts(turn_time).timestamp()
    except AutopoiesisError:
        return None


def _later_wins(query: str, hits: list[Hit]) -> list[Hit]:
    """HITS (best first) with each turn that a later turn restates marked as earlier, and
    the later one ranked at least as high (`restated`)."""
    statements = [Statement(h.said, h.when, h.project) for h in hits]
    later = later_statements(query, statements)
    if not later:
        return hits
    out = list(hits)
    for i, (j, subject) in later.items():
        when = datetime.fromtimestamp(statements[j].when or 0, UTC).strftime("%Y-%m-%d %H:%M")
        out[i] = replace(out[i], mark=f"[earlier; restated {when}]", subject=subject)
        if out[j].score <= hits[i].score:
            out[j] = replace(out[j], score=hits[i].score * (1 + 1e-9))
    out.sort(key=lambda h: (-h.score, h.path, h.start))
    return out


def _own_lines(result: Any) -> tuple[int, int] | None:
    """A search result's own turn (SearchResult.own_start..own_end), when it names one."""
    start, end = getattr(result, "own_start", None), getattr(result, "own_end", None)
    return (start, end) if start and end else None
