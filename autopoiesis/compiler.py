"""ContextCompiler (design §6): the densest prompt that fits a token budget.

Slots, in priority order (§6.2; the KB budgets come from ``context_compiler:`` in
memory-config.yaml, §9.3):

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
P3    scored knowledge: the search index's   at most half of what is left after P0-P2,
      hybrid (BM25 + vector) results x       so history is not starved; stops under
      recency decay x frequency boost        100 tokens
P4    session history, newest first          a sliding window: stops at the first turn
      (tool results cut to one line)         that does not fit; shown oldest first
====  =====================================  ==========================================

Every section carries a label (``<!-- identity:SOUL.md -->``), and the result lists each
candidate with its tokens, whether it was included and why. The prompt never exceeds the
budget, and the same inputs (files, message, topics, history, inclusion counts) give the
same prompt.

**Token counting** works offline: `count_tokens` counts the matches of one regex — runs
of up to 8 ASCII letters, groups of up to 3 digits, each other non-space character, each
run of newlines and each run of 2+ spaces. On English prose this lands within about 10%
above a BPE tokenizer's (cl100k) count: words of 8 letters or fewer are usually one
token, punctuation one each. It overcounts non-Latin scripts (one per character), which
errs on the side of staying under the budget.

**Pre-compaction flush** (§6.4): when history no longer fits, `CompiledContext.flush_due`
is true and `dropped_history` says how many turns fell out. The runtime then sends
`flush_prompt()` to the agent and hands its reply to `apply_flush`, which appends what it
returns to the journal, MEMORY.md and project context files — append only, never
rewriting a file.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from autopoiesis.errors import AutopoiesisError, BudgetTooSmallError
from autopoiesis.core.paths import ACTIVE_PROJECTS_FILE, IDENTITY_FILES, MEMORY_FILE, MemoryRepo

if TYPE_CHECKING:
    from autopoiesis.core.config import CompilerConfig
    from autopoiesis.watch.pipeline import PendingActivation
    from autopoiesis.watch.topics import Topic

DEFAULT_SYSTEM_PROMPT = (
    "You are an AI agent with a long-term memory kept as Markdown files in a git repository. "
    "The sections below are your identity, your core memory, recent journal entries, the topics "
    "active for this message and the knowledge most relevant to it, followed by the recent "
    "conversation. Treat them as what you remember: cite the file when you rely on one, say when "
    "you are unsure, and write durable notes back to the knowledge files when something is worth keeping."
)
SYSTEM_BUDGET_KB = 1.0
ACTIVE_PROJECTS_KB = 1.0
KNOWLEDGE_SNIPPET_CHARS = 1200
KNOWLEDGE_CANDIDATES = 20
KNOWLEDGE_MIN_TOKENS = 100
RECENCY_RATE = 0.1  # exp(-0.1 * days): half-life of about 7 days (design §6.3)
RECENCY_FLOOR = 0.2  # an old file that is the best match still competes
FREQUENCY_BOOST = 0.1  # x (1 + 0.1 * times included before)
INCLUSIONS_FILE = ("compiler", "inclusions.json")
QUERY_CHARS = 2000

_TOKEN_RE = re.compile(r"[A-Za-z]{1,8}|[0-9]{1,3}|\n+| {2,}|\t+|[^\sA-Za-z0-9]")
_FRONTMATTER = re.compile(r"\A---\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


@lru_cache(maxsize=8192)
def _count_cached(text: str) -> int:
    return sum(1 for _ in _TOKEN_RE.finditer(text))


def count_tokens(text: str) -> int:
    """Estimated BPE tokens of TEXT, offline (see the module docstring). Cached by content."""
    if not text:
        return 0
    if len(text) > 65536:  # don't pin megabytes in the cache
        return sum(1 for _ in _TOKEN_RE.finditer(text))
    return _count_cached(text)


def cut_to_tokens(text: str, limit: int, source: str) -> str:
    """TEXT cut (at a line when possible) to at most LIMIT estimated tokens, marker included."""
    if count_tokens(text) <= limit:
        return text
    marker = f"\n[… truncated to fit the budget; the rest is in {source}]"
    room = limit - count_tokens(marker)
    if room <= 0:
        return ""
    out_end = 0
    for n, m in enumerate(_TOKEN_RE.finditer(text), 1):
        if n > room:
            break
        out_end = m.end()
    head = text[:out_end]
    nl = head.rfind("\n")
    if nl > len(head) // 2:
        head = head[:nl]
    return head + marker


def strip_frontmatter(text: str) -> str:
    return _FRONTMATTER.sub("", text, count=1).strip()


def _cut_bytes(text: str, kb: float, source: str) -> str:
    from autopoiesis.watch.topics import cut_to_bytes

    return cut_to_bytes(text, int(kb * 1024), source)


# ── inputs and outputs ──────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class HistoryMessage:
    """One turn of session history. A tool message is rendered on one line."""

    role: str
    content: str
    id: str = ""
    tool: str | None = None  # tool name for a tool call/result
    time: str | None = None
    result: str | None = None  # a tool's result, summarised to one line when rendered

    def render(self) -> str:
        from autopoiesis.formats.transcript import one_line

        if self.tool is not None:
            res = f" \u2192 {one_line(self.result, 150)}" if self.result else ""
            return f"> [tool:{self.tool}] {one_line(self.content, 150)}{res}"
        stamp = f" ({self.time})" if self.time else ""
        return f"{self.role}{stamp}: {self.content.strip()}"


@dataclass(frozen=True)
class Section:
    label: str
    priority: int
    tokens: int
    included: bool
    reason: str
    path: str | None = None
    content: str = field(default="", repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "priority": self.priority, "tokens": self.tokens,
                "included": self.included, "reason": self.reason, "path": self.path}


@dataclass(frozen=True)
class CompiledContext:
    prompt: str
    total_tokens: int
    budget: int
    sections: tuple[Section, ...]
    dropped_history: int = 0
    flush_due: bool = False

    def __str__(self) -> str:
        return self.prompt

    @property
    def included_paths(self) -> list[str]:
        return [s.path for s in self.sections if s.included and s.path]

    def as_dict(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "total_tokens": self.total_tokens, "budget": self.budget,
                "sections": [s.as_dict() for s in self.sections], "dropped_history": self.dropped_history,
                "flush_due": self.flush_due}


@dataclass(frozen=True)
class ScoredItem:
    path: str
    score: float
    snippet: str
    start_line: int = 0
    end_line: int = 0
    base_score: float = 0.0
    recency: float = 1.0
    boost: float = 1.0


SearchFn = Callable[[str, int], Sequence[Any]]  # (query, limit) -> SearchResult-like rows


class ContextCompiler:
    """Assembles the densest possible prompt from a memory repo (design §6.3).

    ``search`` replaces the index search (query, limit) -> results with .path, .snippet,
    .score, .start_line, .end_line; by default the repo's search index is used (kept open
    between compiles), or git grep when there is no index yet."""

    def __init__(
        self,
        repo: MemoryRepo,
        config: "CompilerConfig | None" = None,
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

    # ── the knowledge search (P3) ──
    def _search_results(self, query: str, limit: int) -> tuple[list[Any], str]:
        if self._search is not None:
            return list(self._search(query, limit)), "search"
        try:
            from autopoiesis.index import searchindex
        except ImportError:
            return [], "search index not installed"
        if self._index is None and self.repo.index_path.exists():
            try:
                self._index = searchindex.SearchIndex(self.repo)
            except Exception as exc:  # unreadable index: fall back like `search` does
                self.notices.append(f"search index could not be opened ({exc}); used git grep")
        if self._index is not None:
            import time

            now = time.monotonic()
            fresh = self.fresh_index and now - self._last_catch_up >= self.index_refresh_seconds
            results = list(self._index.search(query, limit, fresh=fresh))
            if fresh:
                self._last_catch_up = time.monotonic()
            return results, "index"
        outcome = searchindex.search_outcome(query, limit, repo=self.repo)
        return list(outcome.results), outcome.source

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> "ContextCompiler":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── state: how often each file was included ──
    def inclusion_counts(self) -> dict[str, int]:
        return inclusion_counts(self.repo)

    def record(self, result: CompiledContext) -> None:
        """Count the knowledge files RESULT included (the P3 frequency boost reads these).
        Kept out of `compile` so that compiling stays free of side effects."""
        from autopoiesis.core.paths import atomic_write

        paths = [s.path for s in result.sections if s.included and s.path and s.label.startswith(("knowledge:", "sub:"))]
        if not paths:
            return
        with self.repo.lock("compiler-inclusions"):
            counts = self.inclusion_counts()
            for p in paths:
                counts[p] = counts.get(p, 0) + 1
            atomic_write(self.repo.state_path(*INCLUSIONS_FILE), json.dumps(counts, sort_keys=True, indent=0))

    # ── compile ──
    def _read(self, relpath: str) -> str | None:
        full = self.repo.root / relpath
        try:
            return strip_frontmatter(full.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None

    def compile(
        self,
        message: str,
        active_topics: Sequence["Topic"] = (),
        session_history: Sequence[HistoryMessage] = (),
        available_knowledge: Sequence[ScoredItem] | None = None,
        *,
        shared: bool = False,
        budget: int | None = None,
        corrections: Sequence["PendingActivation"] = (),
        today: date | None = None,
        now: datetime | None = None,
    ) -> CompiledContext:
        """The prompt for MESSAGE (design §9.2). AVAILABLE_KNOWLEDGE, when given, replaces
        the index search for P3. SHARED leaves MEMORY.md out (group or shared contexts)."""
        cfg = self.config
        budget = int(cfg.token_budget if budget is None else budget)
        if budget <= 0:
            raise BudgetTooSmallError(f"The token budget must be positive, not {budget}; pass e.g. --budget 8192.")
        now = now or datetime.now(timezone.utc)
        today = today or now.date()
        plan = _Plan(budget)

        # P0: never dropped.
        if self.system_prompt:
            plan.fixed("system", 0, _cut_bytes(self.system_prompt, SYSTEM_BUDGET_KB, "the system prompt"), None)
        id_left = int(cfg.identity_budget_kb * 1024)
        for name in IDENTITY_FILES:
            rel = f"knowledge/identity/{name}"
            text = self._read(rel)
            if text is None:
                plan.skip(f"identity:{name}", 0, "missing", rel)
                continue
            cut = _cut_bytes(text, id_left / 1024, rel) if id_left > 0 else ""
            id_left -= len(cut.encode("utf-8"))
            if cut:
                plan.fixed(f"identity:{name}", 0, cut, rel)
            else:
                plan.skip(f"identity:{name}", 0, f"identity_budget_kb ({cfg.identity_budget_kb:g}) used up", rel)
        if plan.used > budget:
            raise BudgetTooSmallError(
                f"The budget of {budget} tokens cannot hold the system prompt and identity files "
                f"({plan.used} tokens), which are never dropped. Raise --budget (or "
                "context_compiler.token_budget), lower context_compiler.identity_budget_kb, or shorten "
                "knowledge/identity/*.md."
            )

        # P1: session-level context.
        if shared:
            plan.skip("memory", 1, "shared context: MEMORY.md is loaded in the main session only", MEMORY_FILE)
        else:
            text = self._read(MEMORY_FILE)
            if text:
                plan.offer("memory", 1, _cut_bytes(text, cfg.memory_budget_kb, MEMORY_FILE), MEMORY_FILE)
        journal_left = cfg.journal_budget_kb
        for day, what in ((today, "today"), (today - timedelta(days=1), "yesterday")):
            rel = f"knowledge/journal/{day.isoformat()}.md"
            text = self._read(rel)
            if text is None:
                continue
            cut = _cut_bytes(text, journal_left, rel) if journal_left > 0 else ""
            if not cut:
                plan.skip(f"journal:{day.isoformat()}", 1, f"journal_budget_kb ({cfg.journal_budget_kb:g}) used up", rel)
                continue
            if plan.offer(f"journal:{day.isoformat()}", 1, cut, rel):
                journal_left -= len(cut.encode("utf-8")) / 1024
        text = self._read(ACTIVE_PROJECTS_FILE)
        if text:
            plan.offer("projects", 1, _cut_bytes(text, ACTIVE_PROJECTS_KB, ACTIVE_PROJECTS_FILE), ACTIVE_PROJECTS_FILE)

        # P2: steering corrections, active topics and their subscriptions.
        for c in corrections:
            if c.hint:
                plan.offer(f"correction:{c.topic}", 2, f"Correction ({c.topic}): {c.hint}", None)
        topic_left = cfg.topic_budget_kb * 1024
        for topic in sorted({t.name: t for t in active_topics}.values(), key=lambda t: (-t.priority_rank, t.name)):
            body = topic.render_instructions()
            body = f"# Topic: {topic.name}\n{body}" if not body.startswith("#") else body
            if topic_left <= 0:
                plan.skip(f"topic:{topic.name}", 2, f"topic_budget_kb ({cfg.topic_budget_kb:g}) used up", topic.path)
            else:
                body = _cut_bytes(body, topic_left / 1024, topic.path)
                if plan.offer(f"topic:{topic.name}", 2, body, topic.path):
                    topic_left -= len(body.encode("utf-8"))
            for sub in topic.subscriptions:
                label = f"sub:{sub}"
                if sub in plan.paths:
                    plan.skip(label, 2, f"already included ({plan.paths[sub]})", sub, note_only=True)
                    continue
                try:
                    self.repo.resolve_inside(sub)
                except AutopoiesisError:
                    plan.skip(label, 2, "outside the memory repo", sub)
                    continue
                text = self._read(sub)
                if text is None:
                    plan.skip(label, 2, "missing file", sub)
                    continue
                if topic_left <= 0:
                    plan.skip(label, 2, f"topic_budget_kb ({cfg.topic_budget_kb:g}) used up", sub)
                    continue
                cut = _cut_bytes(text, topic_left / 1024, sub)
                if plan.offer(label, 2, cut, sub):
                    topic_left -= len(cut.encode("utf-8"))

        # P3: scored knowledge, at most half of what is left.
        p3_cap = plan.left // 2
        if p3_cap >= KNOWLEDGE_MIN_TOKENS:
            query = " ".join([message[:QUERY_CHARS]] + [t.description for t in active_topics if t.description])
            items, why = self._scored(query, available_knowledge, shared, plan, now)
            spent = 0
            for item in items:
                if p3_cap - spent < KNOWLEDGE_MIN_TOKENS:
                    break
                label = f"knowledge:{item.path}:{item.start_line}-{item.end_line}" if item.end_line else f"knowledge:{item.path}"
                content = item.snippet
                cost = plan.cost(label, content)
                if cost > p3_cap - spent:
                    plan.skip(label, 3, f"over the knowledge share ({cost} tokens)", item.path, tokens=cost)
                    continue
                reason = (f"score {item.score:.4f} = search {item.base_score:.4f} x recency {item.recency:.2f} "
                          f"x frequency {item.boost:.2f}")
                if plan.offer(label, 3, content, item.path, reason=reason):
                    spent += cost
            if not items:
                plan.skip("knowledge", 3, f"no search results ({why})" if why else "no search results", None, note_only=True)
        else:
            plan.skip("knowledge", 3, f"no room left for scored knowledge ({plan.left} tokens)", None, note_only=True)

        # P4: session history, newest first, until one does not fit.
        dropped = 0
        history = list(session_history)
        for pos in range(len(history) - 1, -1, -1):
            msg = history[pos]
            label = f"history:{msg.id or pos}"
            if not plan.offer(label, 4, msg.render(), None, history_pos=pos):
                dropped = pos + 1
                for older in range(pos - 1, -1, -1):
                    plan.skip(f"history:{history[older].id or older}", 4, "older than the sliding window", None)
                break
        flush_due = dropped > 0 or (bool(history) and plan.left < budget * 0.1)
        prompt = plan.assemble()
        total = count_tokens(prompt)
        assert total <= budget, "the compiler overran its budget"  # by construction; a bug otherwise
        return CompiledContext(prompt, total, budget, tuple(plan.sections), dropped, flush_due)

    def _scored(self, query: str, given: Sequence[ScoredItem] | None, shared: bool, plan: "_Plan",
                now: datetime) -> tuple[list[ScoredItem], str]:
        counts = self.inclusion_counts()
        items: list[ScoredItem] = []
        if given is not None:
            raw = [(g.path, g.score, g.snippet, g.start_line, g.end_line) for g in given]
            why = ""
        else:
            try:
                results, why = self._search_results(query, KNOWLEDGE_CANDIDATES)
            except AutopoiesisError as exc:
                return [], f"search failed: {exc}"
            raw = [(r.path, float(r.score), r.snippet, r.start_line, r.end_line) for r in results]
        seen: set[str] = set()
        for path, score, snippet, start, end in raw:
            if path in plan.paths or path in seen:
                continue
            if shared and path == MEMORY_FILE:
                continue  # MEMORY.md must not leak into a shared context through search
            seen.add(path)
            try:
                mtime = (self.repo.root / path).stat().st_mtime
                days = max(0.0, (now.timestamp() - mtime) / 86400)
            except OSError:
                days = 0.0
            recency = max(RECENCY_FLOOR, math.exp(-RECENCY_RATE * days))
            boost = 1.0 + FREQUENCY_BOOST * counts.get(path, 0)
            snippet = (snippet or "").strip()[:KNOWLEDGE_SNIPPET_CHARS]
            if not snippet:
                continue
            items.append(ScoredItem(path, score * recency * boost, f"[{path}]\n{snippet}", start, end,
                                    score, recency, boost))
        items.sort(key=lambda i: (-i.score, i.path, i.start_line))
        return items, why


class _Plan:
    """Sections being placed against a budget; counts each as rendered in the prompt."""

    def __init__(self, budget: int):
        self.budget = budget
        self.used = 0
        self.sections: list[Section] = []
        self.paths: dict[str, str] = {}
        self._history_pos: dict[int, int] = {}

    @property
    def left(self) -> int:
        return self.budget - self.used

    @staticmethod
    def render(label: str, content: str) -> str:
        return f"<!-- {label} -->\n{content}"

    def cost(self, label: str, content: str) -> int:
        # +1 for the blank line that joins sections.
        return count_tokens(self.render(label, content)) + 1

    def fixed(self, label: str, priority: int, content: str, path: str | None) -> None:
        cost = self.cost(label, content)
        self.used += cost
        self.sections.append(Section(label, priority, cost, True, "always included (P0)", path, content))
        if path:
            self.paths[path] = label

    def offer(self, label: str, priority: int, content: str, path: str | None, *, reason: str = "",
              history_pos: int | None = None) -> bool:
        cost = self.cost(label, content)
        if cost > self.left:
            self.sections.append(Section(label, priority, cost, False,
                                         f"over budget ({cost} tokens, {self.left} left)", path))
            return False
        self.used += cost
        self.sections.append(Section(label, priority, cost, True, reason or "fits", path, content))
        if path:
            self.paths[path] = label
        if history_pos is not None:
            self._history_pos[len(self.sections) - 1] = history_pos
        return True

    def skip(self, label: str, priority: int, reason: str, path: str | None, *, tokens: int = 0,
             note_only: bool = False) -> None:
        self.sections.append(Section(label, priority, tokens, False, reason, path))

    def assemble(self) -> str:
        chosen = [(i, s) for i, s in enumerate(self.sections) if s.included]
        # Priority order; history back in chronological order.
        chosen.sort(key=lambda p: (p[1].priority, self._history_pos.get(p[0], 0) if p[1].priority == 4 else p[0]))
        return "\n\n".join(self.render(s.label, s.content) for _, s in chosen)


# ── session files ───────────────────────────────────────────────────────────────────
def load_session(path: Path) -> list[HistoryMessage]:
    """Session history from a transcript (design §2.1), a JSON list or JSONL of
    {role, content[, tool, id]} objects."""
    text = Path(path).read_text(encoding="utf-8")
    if text.startswith("---"):
        from autopoiesis.formats.transcript import KnowledgeOp, Text, ToolCall, parse

        transcript = parse(text, str(path))
        out: list[HistoryMessage] = []
        for n, turn in enumerate(transcript.turns):
            stamp = turn.time.strftime("%H:%M")
            for k, item in enumerate(turn.items):
                mid = f"t{n}.{k}"
                if isinstance(item, Text):
                    out.append(HistoryMessage(turn.role, item.content, mid, None, stamp))
                elif isinstance(item, ToolCall):
                    out.append(HistoryMessage(turn.role, item.args, mid, item.tool, stamp, item.result))
                elif isinstance(item, KnowledgeOp):
                    out.append(HistoryMessage(turn.role, f"{item.action} {item.path}", mid, "knowledge", stamp))
        return out
    rows: list[Any]
    stripped = text.strip()
    if stripped.startswith("["):
        rows = json.loads(stripped)
    else:
        rows = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    out = []
    for n, r in enumerate(rows):
        if not isinstance(r, dict) or "content" not in r:
            raise AutopoiesisError(f"{path}: entry {n} is not an object with 'role' and 'content'; "
                                   "give a transcript, a JSON list or JSONL of {role, content}.")
        out.append(HistoryMessage(str(r.get("role", "user")), str(r["content"]), str(r.get("id", n)),
                                  r.get("tool") or (r.get("name") if r.get("role") == "tool" else None),
                                  None, None if r.get("result") is None else str(r["result"])))
    return out


# ── pre-compaction flush (§6.4) ─────────────────────────────────────────────────────
FLUSH_PROMPT = """The context window is filling up. Before older messages are dropped, write down what is
worth keeping. Reply in this form, leaving out empty parts:

## journal
- what happened today ({today})
## memory
- lessons and decisions worth remembering for months
## project: SLUG
- decisions and state of project SLUG (one section per project; active: {projects})

Only write what's worth preserving. If nothing important, reply FLUSH_OK."""

_FLUSH_HEADING = re.compile(r"^#{1,3}\s*(journal|memory|project\s*:\s*(.+?))\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class FlushReport:
    written: tuple[tuple[str, int], ...]  # (repo-relative path, lines appended)
    nothing_to_do: bool = False


def flush_prompt(repo: MemoryRepo, today: date | None = None) -> str:
    """The silent turn that asks the agent for durable notes before history is dropped."""
    today = today or datetime.now(timezone.utc).date()
    projects = sorted(p.name for p in (repo.knowledge_dir / "projects").iterdir() if p.is_dir()) \
        if (repo.knowledge_dir / "projects").is_dir() else []
    return FLUSH_PROMPT.format(today=today.isoformat(), projects=", ".join(projects) or "none yet")


def parse_flush(reply: str) -> dict[str, list[str]]:
    """{"journal": [...], "memory": [...], "project:SLUG": [...]} from the agent's reply
    (the Markdown form of FLUSH_PROMPT, or a JSON object with journal/memory/projects)."""
    text = reply.strip()
    if not text or text.upper().startswith("FLUSH_OK"):
        return {}
    out: dict[str, list[str]] = {}
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            for key in ("journal", "memory"):
                vals = data.get(key) or []
                out[key] = [str(v) for v in (vals if isinstance(vals, list) else [vals]) if str(v).strip()]
            for slug, vals in (data.get("projects") or {}).items():
                out[f"project:{slug}"] = [str(v) for v in (vals if isinstance(vals, list) else [vals]) if str(v).strip()]
            return {k: v for k, v in out.items() if v}
    current: str | None = None
    for line in text.splitlines():
        m = _FLUSH_HEADING.match(line.strip())
        if m:
            current = f"project:{m.group(2).strip()}" if m.group(2) else m.group(1).lower()
            continue
        item = line.strip()
        if current and item and item.upper() != "FLUSH_OK":
            item = re.sub(r"^[-*]\s+", "", item)
            out.setdefault(current, []).append(item)
    return {k: v for k, v in out.items() if v}


def inclusion_counts(repo: MemoryRepo) -> dict[str, int]:
    """How often each knowledge file was included in a compiled context (the compiler's
    frequency boost, and the pruner's evidence that a file is still in use)."""
    path = repo.state_dir.joinpath(*INCLUSIONS_FILE)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return {k: int(v) for k, v in data.items() if isinstance(v, int)}


def apply_flush(
    repo: MemoryRepo, reply: str, *, today: date | None = None, source: str | None = None, at: datetime | None = None
) -> FlushReport:
    """Append the notes of the agent's flush REPLY to the right knowledge files: journal
    -> knowledge/journal/TODAY.md, memory -> MEMORY.md (Active Context), project:SLUG ->
    knowledge/projects/SLUG/context.md (Key Decisions).

    Goes through the one knowledge writer, so it is append-only (existing entries are
    never rewritten), skips notes already present, and cites SOURCE — the transcript of
    the session being compacted — and the time of the flush in every entry."""
    from autopoiesis.formats.transcript import slugify
    from autopoiesis.lifecycle.writer import KnowledgeChange, KnowledgeWriter, Provenance

    today = today or datetime.now(timezone.utc).date()
    parts = parse_flush(reply)
    if not parts:
        return FlushReport((), True)
    day = today.isoformat()
    when = at or datetime.combine(today, datetime.now(timezone.utc).time(), tzinfo=timezone.utc).replace(microsecond=0)
    prov = Provenance(source=source or "pre-compaction flush", at=when, producer="flush@1")
    changes: list[KnowledgeChange] = []
    for key, lines in parts.items():
        lines = [re.sub(r"^\d{4}-\d\d-\d\d:\s*", "", l).strip() for l in lines]
        lines = [l for l in lines if l]
        if key == "journal":
            changes += [KnowledgeChange(f"knowledge/journal/{day}.md", "append", "session notes", l, prov,
                                        dated=False, section_level=3) for l in lines]
        elif key == "memory":
            changes += [KnowledgeChange(MEMORY_FILE, "append", "Active Context", l, prov) for l in lines]
        elif key.startswith("project:"):
            slug = slugify(key.split(":", 1)[1])
            if slug:
                changes += [KnowledgeChange(f"knowledge/projects/{slug}/context.md", "append", "Key Decisions", l, prov)
                            for l in lines]
    if not changes:
        return FlushReport((), True)
    report = KnowledgeWriter(repo).apply(changes)
    counts: dict[str, int] = {}
    for path, _ in report.added:
        counts[path] = counts.get(path, 0) + 1
    return FlushReport(tuple(sorted(counts.items())), not counts)


def compile_for_message(
    repo: MemoryRepo,
    message: str,
    *,
    session: Sequence[HistoryMessage] = (),
    budget: int | None = None,
    shared: bool = False,
    take_steering: bool = True,
    record: bool = True,
    compiler: ContextCompiler | None = None,
) -> tuple[CompiledContext, list[Any]]:
    """What `autopoiesis compile` does: run the watchers on MESSAGE, pick up the pending
    steering (correction hints, webhook/cron topics), compile, and count the included
    knowledge files. Returns (result, activations). Pending steering is cleared only
    when TAKE_STEERING, and put back if the compile fails."""
    from autopoiesis.watch.pipeline import WatcherPipeline, add_pending, peek_pending, take_pending

    pipe = WatcherPipeline(repo)
    activations = pipe.process(message, "input")
    pending = take_pending(repo) if take_steering else peek_pending(repo)
    by_name = pipe.topic_set.by_name()
    active = [by_name[a.topic] for a in activations if a.topic in by_name]
    active += [by_name[p.topic] for p in pending if p.topic in by_name]
    own = compiler is None
    comp = compiler or ContextCompiler(repo)
    try:
        result = comp.compile(message, active, session, shared=shared, budget=budget,
                              corrections=[p for p in pending if p.hint])
    except BaseException:
        if take_steering and pending:
            add_pending(repo, pending)
        raise
    finally:
        if own:
            comp.close()
    if record:
        comp.record(result)
    return result, activations
