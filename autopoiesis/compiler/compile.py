"""ContextCompiler (docs/design.md#compiler): the densest prompt that fits a token budget.

Slots, in priority order (docs/design.md#compiler-slots; the KB budgets come from
``context_compiler:`` in
memory-config.yaml, docs/design.md#config-keys):

====  =====================================  ==========================================
P0    system prompt (~1 KB), identity files  always; never dropped. If they alone exceed
      (SOUL, USER, AGENTS, TOOLS; cut to     the token budget, `BudgetTooSmallError`.
      ``identity_budget_kb``)
P1    MEMORY.md (``memory_budget_kb``; main  each included when it fits
      session only — left out with
      ``shared=True``), journal of today and
      yesterday (``journal_budget_kb``),
      knowledge/projects/_active.md (1 KB)
P2    correction hints from output           topics by priority (critical first); all
      steering, active topics' instructions  instructions and subscriptions share
      (each cut to its ``max_context_kb``)   ``topic_budget_kb``; each file once
      and their subscriptions
P3    scored knowledge: the search index's   fills what P0-P2 leave but the history
      hybrid (BM25 + vector) hits x recency  share (``history_share`` of the budget, or
      x frequency, as whole chunks (turns,   less when the session is shorter); no
      sections), merged per file, then the   fixed number of hits (see
      turns around them (`packing`)          `autopoiesis.compiler.packing`)
P4    session history, newest first          a sliding window: stops at the first turn
      (tool results cut to one line)         that does not fit; shown oldest first
====  =====================================  ==========================================

P3 leaves out topics/ (a topic enters through P2, when the watcher activates it: an
inactive playbook is no knowledge) and archive/ (cold storage, never auto-loaded) unless
``include_archive``. Every text the compiler includes from knowledge/ has its superseded
entries removed, so a replaced fact is never offered as current.

A harness that keeps the session-level slots (P0's identity files and P1) from the
start of its session compiles each later message with ``session_context=False``: P2-P4
only, under a short system prompt of its own.

Every section carries a label (``<!-- identity:SOUL.md -->``), and the result lists each
candidate with its tokens, whether it was included and why. The prompt never exceeds the
budget, and the same inputs (files, message, topics, history, usage counts) give the same
prompt.

Tokens are counted by `autopoiesis.core.text.count_tokens` (offline; errs on the side of
staying under the budget).

The P3 frequency boost reads USAGE, the counts of how often each file was included
before: the caller passes them (`autopoiesis.memory.usage.inclusion_counts`) and records the
new inclusions (`CompiledContext.knowledge_paths`) after, so compiling has no side
effects and the compiler knows nothing of where the counts are kept.

Pre-compaction flush (docs/design.md#flush): when history no longer fits,
`CompiledContext.flush_due` is
true and `dropped_history` says how many turns fell out; the runtime then runs the flush
of `autopoiesis.knowledge.flush`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from autopoiesis.compiler.context import (
    CompiledContext,
    Correction,
    HistoryMessage,
    ScoredItem,
    SearchFn,
)
from autopoiesis.compiler.packing import Hit, Packing, Source, Unit, pack, source_of
from autopoiesis.compiler.plan import Plan
from autopoiesis.core.clock import parse_ts, utc_now
from autopoiesis.core.frontmatter import split as split_frontmatter
from autopoiesis.core.paths import (
    ACTIVE_PROJECTS_FILE,
    IDENTITY_DIR,
    IDENTITY_FILES,
    MEMORY_FILE,
    MemoryRepo,
)
from autopoiesis.core.text import count_tokens, cut_to_bytes
from autopoiesis.errors import AutopoiesisError, BudgetTooSmallError, FrontmatterError
from autopoiesis.formats.knowledge import current_text

if TYPE_CHECKING:
    from autopoiesis.core.config import CompilerConfig
    from autopoiesis.formats.topic import Topic

DEFAULT_SYSTEM_PROMPT = (
    "You are an AI agent with a long-term memory kept as Markdown files in a git repository. "
    "The sections below are your identity, your core memory, recent journal entries, the topics "
    "active for this message and the knowledge most relevant to it, followed by the recent "
    "conversation. Treat them as what you remember: cite the file when you rely on one, say when "
    "you are unsure, and write durable notes back to the knowledge files when something is worth "
    "keeping."
)
SYSTEM_BUDGET_KB = 1.0
ACTIVE_PROJECTS_KB = 1.0
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
QUERY_CHARS = 2000
SOURCE_CACHE_BYTES = 24 << 20  # file bytes kept parsed between compiles (transcripts never change)
# Parsed files by their full path, oldest first, shared by every compiler of the process:
# a long-lived one (the daemon answering `compile` and the prompt hooks, the MCP server)
# makes a new ContextCompiler a call, and parsing the ~80 files a full budget takes is
# most of a call. Valid while the file's inode, mtime and size stay (every writer here
# replaces a file, which gives it a new inode). Bounded by the files' bytes: the daemon
# keeps it for days.
_SOURCES: dict[str, tuple[tuple[int, int, int], Source]] = {}
_SOURCE_BYTES = [0]


def strip_frontmatter(text: str) -> str:
    """The body of a Markdown file, stripped (the whole text when its frontmatter is broken)."""
    try:
        _, body = split_frontmatter(text)
    except FrontmatterError:
        return text.strip()
    return body.strip()


def _cut_kb(text: str, kb: float, source: str) -> str:
    return cut_to_bytes(text, int(kb * 1024), source)


@dataclass(frozen=True)
class _KnowledgeQuery:
    """What P3 searches for and how its hits are filtered and scored."""

    text: str  # the message (cut to QUERY_CHARS) and the active topics' descriptions
    given: Sequence[ScoredItem] | None  # replaces the index search when not None
    shared: bool  # MEMORY.md is left out
    now: datetime  # recency is counted from here
    counts: Mapping[str, int]  # times each path was included before (the frequency boost)
    include_archive: bool


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


class ContextCompiler:
    """Assembles the densest possible prompt from a memory repo (docs/design.md#compilation).

    ``search`` replaces the index search (query, limit) -> results with .path, .snippet,
    .score, .start_line, .end_line; by default the repo's search index is used (kept open
    between compiles), or git grep when there is no index yet.

    The search index is the one package the compiler reaches into (a layer below it)."""

    def __init__(
        self,
        repo: MemoryRepo,
        config: CompilerConfig | None = None,
        *,
        system_prompt: str | None = None,
        search: SearchFn | None = None,
        fresh_index: bool = True,
        index_refresh_seconds: float = 0.0,
    ):
        self.repo = repo
        self.config = config or repo.config.context_compiler
        self.system_prompt = DEFAULT_SYSTEM_PROMPT if system_prompt is None else system_prompt
        self._search = search
        self._index: Any = None
        self.fresh_index = fresh_index
        # Before each search the index catches up with the working tree. In a long-lived
        # compiler that is an inotify check (microseconds) unless something changed; where
        # inotify is unavailable it is a full check (~30 ms at 10,000 files), and a
        # positive value here limits how often that runs. 0: before every search.
        self.index_refresh_seconds = index_refresh_seconds
        self._last_catch_up = float("-inf")
        self.notices: list[str] = []
        self._root = str(repo.root)

    # ── the knowledge search (P3) ──
    def _search_results(self, query: str, limit: int) -> tuple[list[Any], str]:
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
            results = list(self._index.locate(query, limit, fresh=fresh))
            if fresh:
                self._last_catch_up = time.monotonic()
            return results, "index"
        outcome = searchindex.search_outcome(query, limit, repo=self.repo)
        return list(outcome.results), outcome.source

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> ContextCompiler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── compile ──
    def _read(self, relpath: str) -> str | None:
        """The body of a file, superseded entries left out."""
        full = self.repo.root / relpath
        try:
            return current_text(strip_frontmatter(full.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            return None

    def _source(self, relpath: str) -> Source | None:
        """The units of a file for P3, cached while the file is unchanged (_SOURCES)."""
        full = os.path.join(self._root, relpath)
        try:
            st = os.stat(full)
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = _SOURCES.get(full)
            if cached is not None and cached[0] == key:
                return cached[1]
            with open(full, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            return None
        src = source_of(relpath, text)
        if (
            key[2] <= SOURCE_CACHE_BYTES // 8
        ):  # one huge transcript does not push out everything else
            _remember_source(full, key, src)
        return src

    def compile(
        self,
        message: str,
        active_topics: Sequence[Topic] = (),
        session_history: Sequence[HistoryMessage] = (),
        available_knowledge: Sequence[ScoredItem] | None = None,
        *,
        shared: bool = False,
        budget: int | None = None,
        corrections: Sequence[Correction] = (),
        usage: Mapping[str, int] | None = None,
        today: date | None = None,
        now: datetime | None = None,
        include_archive: bool = False,
        session_context: bool = True,
    ) -> CompiledContext:
        """The prompt for MESSAGE (docs/design.md#system-api). AVAILABLE_KNOWLEDGE, when given,
        replaces
        the index search for P3. SHARED leaves MEMORY.md out (group or shared contexts).
        USAGE maps a path to how often it was included before (the P3 frequency boost).
        INCLUDE_ARCHIVE lets P3 take from archive/ too.
        Without SESSION_CONTEXT the session-level slots (identity files and P1) are left
        out: a harness that was given them at the start of its session (a Claude Code
        SessionStart hook) asks each later prompt for P2-P4 only."""
        budget = int(self.config.token_budget if budget is None else budget)
        if budget <= 0:
            raise BudgetTooSmallError(
                f"The token budget must be positive, not {budget}; pass e.g. --budget 8192."
            )
        now = now or utc_now()
        today = today or now.date()
        plan = Plan(budget)
        history = list(session_history)
        self._place_identity(plan, session_context)
        self._place_session_context(plan, today, shared=shared, session_context=session_context)
        self._place_topics(plan, active_topics, corrections)
        query = " ".join(
            [message[:QUERY_CHARS]] + [t.description for t in active_topics if t.description]
        )
        self._place_knowledge(
            plan,
            history,
            _KnowledgeQuery(query, available_knowledge, shared, now, usage or {}, include_archive),
        )
        dropped = self._place_history(plan, history)
        return self._assembled(plan, history, dropped)

    # ── the slots, in priority order ──
    def _place_identity(self, plan: Plan, session_context: bool) -> None:
        """P0, never dropped: the system prompt, then the identity files in their order,
        together cut to ``identity_budget_kb`` (a file past it is skipped). Raises
        BudgetTooSmallError when they alone exceed the budget."""
        cfg = self.config
        if self.system_prompt:
            system = _cut_kb(self.system_prompt, SYSTEM_BUDGET_KB, "the system prompt")
            plan.fixed("system", 0, system, None)
        id_left = int(cfg.identity_budget_kb * 1024)
        for name in IDENTITY_FILES if session_context else ():
            rel = f"{IDENTITY_DIR}/{name}"
            text = self._read(rel)
            if text is None:
                plan.skip(f"identity:{name}", 0, "missing", rel)
                continue
            cut = _cut_kb(text, id_left / 1024, rel) if id_left > 0 else ""
            id_left -= len(cut.encode("utf-8"))
            if cut:
                plan.fixed(f"identity:{name}", 0, cut, rel)
            else:
                plan.skip(
                    f"identity:{name}",
                    0,
                    f"identity_budget_kb ({cfg.identity_budget_kb:g}) used up",
                    rel,
                )
        if plan.used > plan.budget:
            raise BudgetTooSmallError(
                f"The budget of {plan.budget} tokens cannot hold the system prompt and identity "
                f"files ({plan.used} tokens), which are never dropped. Raise --budget (or "
                "context_compiler.token_budget), lower context_compiler.identity_budget_kb, or "
                "shorten knowledge/identity/*.md."
            )

    def _place_session_context(
        self, plan: Plan, today: date, *, shared: bool, session_context: bool
    ) -> None:
        """P1, each when it fits: MEMORY.md (not in a SHARED context), the journal of
        today and yesterday, the active projects. Without SESSION_CONTEXT, none of them:
        the harness was given them at its session's start."""
        if not session_context:
            plan.skip(
                "session",
                1,
                "session-level context (identity, memory, journal, projects) "
                "was given at the session's start",
                None,
            )
            return
        if shared:
            plan.skip(
                "memory",
                1,
                "shared context: MEMORY.md is loaded in the main session only",
                MEMORY_FILE,
            )
        else:
            text = self._read(MEMORY_FILE)
            if text:
                memory = _cut_kb(text, self.config.memory_budget_kb, MEMORY_FILE)
                plan.offer("memory", 1, memory, MEMORY_FILE)
        self._place_journal(plan, today)
        text = self._read(ACTIVE_PROJECTS_FILE)
        if text:
            projects = _cut_kb(text, ACTIVE_PROJECTS_KB, ACTIVE_PROJECTS_FILE)
            plan.offer("projects", 1, projects, ACTIVE_PROJECTS_FILE)

    def _place_journal(self, plan: Plan, today: date) -> None:
        """P1's journal: today's, then yesterday's, sharing ``journal_budget_kb``; a day
        that does not fit the plan leaves its share to the next."""
        cfg = self.config
        journal_left = cfg.journal_budget_kb
        for day in (today, today - timedelta(days=1)):
            rel = f"knowledge/journal/{day.isoformat()}.md"
            text = self._read(rel)
            if text is None:
                continue
            cut = _cut_kb(text, journal_left, rel) if journal_left > 0 else ""
            if not cut:
                plan.skip(
                    f"journal:{day.isoformat()}",
                    1,
                    f"journal_budget_kb ({cfg.journal_budget_kb:g}) used up",
                    rel,
                )
                continue
            if plan.offer(f"journal:{day.isoformat()}", 1, cut, rel):
                journal_left -= len(cut.encode("utf-8")) / 1024

    def _place_topics(
        self, plan: Plan, active_topics: Sequence[Topic], corrections: Sequence[Correction]
    ) -> None:
        """P2: the pending correction hints, then each active topic (critical first, then
        by name) with its subscriptions; instructions and subscriptions share
        ``topic_budget_kb``."""
        for c in corrections:
            if c.hint:
                plan.offer(f"correction:{c.topic}", 2, f"Correction ({c.topic}): {c.hint}", None)
        topic_left = self.config.topic_budget_kb * 1024
        by_name = {t.name: t for t in active_topics}
        for topic in sorted(by_name.values(), key=lambda t: (-t.priority_rank, t.name)):
            topic_left = self._place_instructions(plan, topic, topic_left)
            for sub in topic.subscriptions:
                topic_left = self._place_subscription(plan, sub, topic_left)

    def _place_instructions(self, plan: Plan, topic: Topic, topic_left: float) -> float:
        """A topic's instructions, cut to what is left of the topic budget (TOPIC_LEFT
        bytes); what is left after."""
        body = topic.render_instructions()
        body = f"# Topic: {topic.name}\n{body}" if not body.startswith("#") else body
        if topic_left <= 0:
            plan.skip(
                f"topic:{topic.name}",
                2,
                f"topic_budget_kb ({self.config.topic_budget_kb:g}) used up",
                topic.path,
            )
            return topic_left
        body = _cut_kb(body, topic_left / 1024, topic.path)
        if plan.offer(f"topic:{topic.name}", 2, body, topic.path):
            topic_left -= len(body.encode("utf-8"))
        return topic_left

    def _place_subscription(self, plan: Plan, sub: str, topic_left: float) -> float:
        """A file a topic subscribes to, once, when it is inside the repo, exists and fits
        what is left of the topic budget (TOPIC_LEFT bytes); what is left after."""
        label = f"sub:{sub}"
        if sub in plan.paths:
            plan.skip(label, 2, f"already included ({plan.paths[sub]})", sub)
            return topic_left
        try:
            self.repo.resolve_inside(sub)
        except AutopoiesisError:
            plan.skip(label, 2, "outside the memory repo", sub)
            return topic_left
        text = self._read(sub)
        if text is None:
            plan.skip(label, 2, "missing file", sub)
            return topic_left
        if topic_left <= 0:
            plan.skip(label, 2, f"topic_budget_kb ({self.config.topic_budget_kb:g}) used up", sub)
            return topic_left
        cut = _cut_kb(text, topic_left / 1024, sub)
        if plan.offer(label, 2, cut, sub):
            topic_left -= len(cut.encode("utf-8"))
        return topic_left

    def _place_knowledge(
        self, plan: Plan, history: Sequence[HistoryMessage], query: _KnowledgeQuery
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
        for hit, tokens in packing.left_out:
            plan.skip(
                f"knowledge:{hit.path}:{hit.start}-{hit.end}",
                3,
                f"over the knowledge share ({tokens} tokens)",
                hit.path,
                tokens=tokens,
            )
        if not hits:
            plan.skip(
                "knowledge", 3, f"no search results ({why})" if why else "no search results", None
            )

    def _pack_knowledge(
        self, plan: Plan, query: _KnowledgeQuery, cap: int
    ) -> tuple[list[Hit], Packing, str]:
        """The hits and their packing into CAP tokens, and why there are none when so.
        No fixed top-N: while the packing leaves room and the search may hold more, it
        asks for four times as many hits (up to MAX_CANDIDATES)."""
        limit = max(KNOWLEDGE_CANDIDATES, cap // TOKENS_PER_HIT)
        while True:
            hits, found, source, why = self._hits(query, limit, plan)
            packing = pack(hits, source, cap, plan.cost_parts)
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
    def _place_history(plan: Plan, history: Sequence[HistoryMessage]) -> int:
        """P4: a sliding window over the session history, newest first, that stops at the
        first turn that does not fit (it and every older turn are left out); how many
        turns fell out."""
        for pos in range(len(history) - 1, -1, -1):
            msg = history[pos]
            if not plan.offer(f"history:{msg.id or pos}", 4, msg.render(), None, history_pos=pos):
                for older in range(pos - 1, -1, -1):
                    plan.skip(
                        f"history:{history[older].id or older}",
                        4,
                        "older than the sliding window",
                        None,
                    )
                return pos + 1
        return 0

    @staticmethod
    def _assembled(plan: Plan, history: Sequence[HistoryMessage], dropped: int) -> CompiledContext:
        """The prompt of the placed sections; a pre-compaction flush is due when history
        fell out or less than a tenth of the budget is left."""
        budget = plan.budget
        flush_due = dropped > 0 or (bool(history) and plan.left < budget * 0.1)
        prompt = plan.assemble()
        total = count_tokens(prompt)
        # by construction; a bug otherwise
        assert total <= budget, "the compiler overran its budget"
        return CompiledContext(prompt, total, budget, tuple(plan.sections), dropped, flush_due)

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
        self, query: _KnowledgeQuery, limit: int, plan: Plan
    ) -> tuple[list[Hit], int, Callable[[str], Source | None], str]:
        """P3's candidates, best first; how many the search returned; where packing gets
        a file's units (read only for the hits it reaches)."""
        given = query.given
        rows: list[tuple[str, float, str, int, int, str | None]]
        if given is not None:
            rows = [(g.path, g.score, g.snippet, g.start_line, g.end_line, None) for g in given]
            why = ""
        else:
            try:
                results, why = self._search_results(query.text, limit)
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
                )
                for r in results
            ]
        hits: list[Hit] = []
        as_given: dict[str, Source] = {}
        for path, score, snippet, start, end, turn_time in rows:
            if path in plan.paths or path.startswith("topics/"):
                continue  # included whole already; a topic comes in through P2 only
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
            hits.append(Hit(path, start, end, score * recency * boost, score, recency, boost))
        hits.sort(key=lambda h: (-h.score, h.path, h.start))

        def source(path: str) -> Source | None:
            return self._source(path) or as_given.get(path)

        return hits, len(rows), source, why

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
