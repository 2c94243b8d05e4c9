"""`autopoiesis eval`: how good a memory is, as numbers — on a question set, for the
working tree of a memory repo or for any branch, tag or commit of it.

The figures:

* **Evidence in context**: for each question with evidence, does the context that
  `autopoiesis compile QUESTION --budget B` assembles hold an evidence item? At 2K,
  4K and 8K tokens, beside a plain baseline in the same run: the repo's transcript
  turns ranked by BM25 (SQLite FTS5, porter, an OR of the question's words), packed
  whole, each with its date, into the same budget.
* **Answer recall in knowledge/** and **knowledge size** against raw size, as
  `autopoiesis.eval.knowledge_recall` defines them (current-state files only: journals,
  identity files, superseded entries and raw/ never count; the raw turns' recall beside
  it is the ceiling).
* **Stale facts**: facts the question set marks as replaced (`stale`) that are still
  live in a current-state file.

Question sets: LoCoMo's JSON (a list of samples with `conversation` and `qa`; the
evidence ids become the text of those turns; categories 1-4), or JSONL, one object a
line::

    {"question": "Which pooler do we use?", "answer": "HikariCP",
     "evidence": ["raw/conversations/2026/03/02/0900-s1-pool.md:14", "we use HikariCP"],
     "stale": ["PgBouncer in transaction mode"]}

Evidence is a `path:line` (or `path:start-end`) of the memory repo, or text. Text is
found among the transcripts' turns and counts when one of those turns is in the
context; text no turn holds counts when it is in the context's words.

A branch or tag is read from a detached git worktree under the state folder, removed
after: the user's checkout, branch and index are never touched. The compiles are dry
runs (no steering taken, no usage recorded, no gate decisions logged) and score on
content only (no usage counts), so two refs compare on what they hold.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from autopoiesis.compiler.packing import Unit, day_line, transcript_source
from autopoiesis.compiler.plan import Section
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import count_tokens, words
from autopoiesis.errors import AutopoiesisError, BudgetTooSmallError, QuestionSetError
from autopoiesis.eval.knowledge_recall import (
    answer_words,
    current_state_lines,
    knowledge_recall,
    knowledge_size,
)
from autopoiesis.formats.knowledge import normalize_fact

DEFAULT_BUDGETS = (2048, 4096, 8192)
LOCOMO_CATEGORIES = (1, 2, 3, 4)
_LOCATION_RE = re.compile(r"^(?P<path>[^\s:]+\.md):(?P<start>\d+)(?:-(?P<end>\d+))?$")


# ── question sets ──
@dataclass(frozen=True)
class Question:
    question: str | None
    answer: str | None = None
    evidence: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    category: int | None = None


@dataclass(frozen=True)
class QuestionSet:
    """Questions from one file: one group for JSONL, one per conversation for LoCoMo."""

    source: str
    kind: str  # "jsonl" | "locomo"
    groups: tuple[tuple[Question, ...], ...]
    probes: tuple[
        tuple[str, ...], ...
    ] = ()  # LoCoMo: turn texts of each conversation, to find the one a repo holds


def _locomo(data: list[Any], source: str) -> QuestionSet:
    from autopoiesis.eval.locomo import normalise_evidence, sessions_of

    groups, probes = [], []
    for n, sample in enumerate(data):
        conv = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conv, dict) or not isinstance(sample.get("qa"), list):
            raise QuestionSetError(
                f"{source}: sample {n} has no 'conversation' and 'qa'; is this LoCoMo's JSON?"
            )
        turns = {}
        for s in sessions_of(conv):
            for t in conv[f"session_{s}"]:
                found = normalise_evidence([str(t.get("dia_id", ""))])
                if found and isinstance(t.get("text"), str):
                    turns[found[0]] = t["text"]
        qs = []
        for q in sample["qa"]:
            if (
                not isinstance(q, dict)
                or q.get("category") not in LOCOMO_CATEGORIES
                or not isinstance(q.get("question"), str)
            ):
                continue
            ev = tuple(
                turns[e]
                for e in normalise_evidence([str(x) for x in q.get("evidence") or []])
                if e in turns
            )
            answer = q.get("answer")
            qs.append(
                Question(
                    q["question"],
                    None if answer is None else str(answer),
                    ev,
                    (),
                    q.get("category"),
                )
            )
        groups.append(tuple(qs))
        probes.append(tuple(list(turns.values())[:12]))
    return QuestionSet(source, "locomo", tuple(groups), tuple(probes))


def _strings(value: Any, what: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise QuestionSetError(f"{where}: {what} must be a list of strings.")
    return tuple(v for v in value if v.strip())


def load_questions(path: str | os.PathLike[str]) -> QuestionSet:
    """A question set from LoCoMo's JSON or from JSONL (see the module docstring)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionSetError(f"cannot read the question set {p}: {exc}") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except ValueError as exc:
            raise QuestionSetError(
                f"{p}: not valid JSON ({exc}); give LoCoMo's JSON or JSONL."
            ) from None
        if data and all(isinstance(x, dict) and "conversation" in x for x in data):
            return _locomo(data, str(p))
        raise QuestionSetError(
            f"{p}: a JSON list that is not LoCoMo's (samples with 'conversation' and 'qa'); "
            'write other question sets as JSONL, one {"question": ...} a line.'
        )
    qs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{p}:{n}"
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise QuestionSetError(f"{where}: not a JSON object ({exc}).") from None
        if not isinstance(row, dict):
            raise QuestionSetError(
                f'{where}: expected an object like {{"question": ..., "answer": ...}}.'
            )
        question, answer = row.get("question"), row.get("answer")
        if question is not None and (not isinstance(question, str) or not question.strip()):
            raise QuestionSetError(f"{where}: 'question' must be a non-empty string.")
        if answer is not None and not isinstance(answer, (str, int, float)):
            raise QuestionSetError(f"{where}: 'answer' must be a string.")
        q = Question(
            question,
            None if answer is None else str(answer),
            _strings(row.get("evidence"), "evidence", where),
            _strings(row.get("stale"), "stale", where),
            row.get("category") if isinstance(row.get("category"), int) else None,
        )
        if q.question is None and not q.stale:
            raise QuestionSetError(f"{where}: give a 'question' (or only 'stale' facts).")
        qs.append(q)
    if not qs:
        raise QuestionSetError(f"{p}: no questions in it.")
    return QuestionSet(str(p), "jsonl", (tuple(qs),))


# ── what a ref holds ──
@contextmanager
def checkout(repo: MemoryRepo, ref: str | None) -> Iterator[tuple[MemoryRepo, str]]:
    """(the memory repo to read, a description): the working tree itself, or REF in a
    detached worktree under the state folder, removed afterwards."""
    if ref is None:
        yield repo, f"{repo.root} (working tree)"
        return
    from autopoiesis.git.repo import MemoryGit

    git = MemoryGit(repo)
    found = git.run("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
    if found.returncode != 0:
        raise AutopoiesisError(
            f"{ref!r} is not a branch, tag or commit of {repo.root}; "
            "`git branch -a` and `git tag` list them."
        )
    sha = found.stdout.strip()
    base = repo.state_file("worktrees_dir")
    for old in base.glob("eval-*-*"):  # left by an eval that was killed
        pid = old.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            git.run("worktree", "remove", "--force", str(old), check=False)
            shutil.rmtree(old, ignore_errors=True)
    wt = base / f"eval-{sha[:12]}-{os.getpid()}"
    git.run("worktree", "prune", check=False)
    git.run("worktree", "add", "--detach", "-q", str(wt), sha)
    try:
        yield MemoryRepo(wt), f"{ref} ({sha[:10]})"
    finally:
        git.run("worktree", "remove", "--force", str(wt), check=False)
        git.run("worktree", "prune", check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _norm(text: str) -> str:
    return " " + " ".join(words(text)) + " "


@dataclass(frozen=True)
class Turn:
    path: str
    unit: Unit

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
            src = transcript_source(rel, p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        if src is not None:
            out.extend(Turn(rel, u) for u in src.units)
    return out


@dataclass(frozen=True)
class Evidence:
    """Where an evidence item is: file line ranges (any of them counts), else its text."""

    locations: tuple[tuple[str, int, int], ...]
    text: str | None = None


def resolve(item: str, repo: MemoryRepo, turns: Sequence[Turn], normed: Sequence[str]) -> Evidence:
    m = _LOCATION_RE.match(item.strip())
    if m:
        try:
            inside = repo.resolve_inside(
                m["path"]
            ).is_file()  # a path outside the repo is no evidence of it
        except AutopoiesisError:
            inside = False
        if inside:
            start = int(m["start"])
            return Evidence(((m["path"], start, max(start, int(m["end"] or start))),))
    want = _norm(item)
    if want.strip():
        where = tuple(
            (t.path, t.unit.start, t.unit.end) for t, n in zip(turns, normed) if want in n
        )
        if where:
            return Evidence(where)
    return Evidence((), item)


def _line_text(repo: MemoryRepo, path: str, line: int, cache: dict[str, list[str]]) -> str:
    if path not in cache:
        try:
            cache[path] = (repo.root / path).read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            cache[path] = []
    lines = cache[path]
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def held_in_context(
    ev: Evidence,
    sections: Sequence[Section],
    prompt_norm: str,
    repo: MemoryRepo,
    cache: dict[str, list[str]],
) -> bool:
    """Does a compiled context hold EV? A line range counts when an included section of
    that file spans it, or (a whole file) holds the text of its first line."""
    for path, start, end in ev.locations:
        for s in sections:
            if not s.included or s.path != path:
                continue
            if s.spans:
                if any(a <= end and start <= b for a, b in s.spans):
                    return True
            else:
                text = _line_text(repo, path, start, cache)
                if text and text in s.content:
                    return True
    return ev.text is not None and _norm(ev.text) in prompt_norm


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
        self.costs = [
            count_tokens(t.dated) + 1 for t in self.turns
        ]  # +1: the line break between turns

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

    def holds(self, ev: Evidence, packed: Sequence[int]) -> bool:
        chosen = [self.turns[i] for i in packed]
        for path, start, end in ev.locations:
            if any(t.path == path and t.unit.start <= end and start <= t.unit.end for t in chosen):
                return True
        return ev.text is not None and _norm(ev.text) in _norm(
            "\n".join(t.unit.text for t in chosen)
        )

    def close(self) -> None:
        self.db.close()


# ── the report ──
@dataclass
class BudgetScore:
    budget: int
    compiled: float | None  # share of questions with evidence whose compiled context holds some
    bm25_packed: float | None
    compiled_tokens: float = 0.0  # mean prompt size
    note: str = ""


@dataclass
class EvalReport:
    target: str
    questions: str
    asked: int = 0
    with_evidence: int = 0
    budgets: list[BudgetScore] = field(default_factory=list)
    with_answer: int = 0
    answer_line: float | None = None  # share of answers whose words all stand in one live line
    answer_words: float | None = None  # mean share of an answer's words in the current-state files
    raw_answer_line: float | None = None  # the same two over the raw turns: the ceiling
    raw_answer_words: float | None = None
    knowledge_bytes: int = 0  # knowledge/ but identity/
    current_state_bytes: int = 0  # ... and but journal/
    raw_bytes: int = 0
    stale_marked: int = 0
    stale_live: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def knowledge_ratio(self) -> float | None:
        return self.knowledge_bytes / self.raw_bytes if self.raw_bytes else None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["knowledge_ratio"] = self.knowledge_ratio
        return data


def _pick_group(
    qs: QuestionSet, sample: int | None, normed: Sequence[str]
) -> tuple[tuple[Question, ...], str]:
    if sample is not None:
        if not 0 <= sample < len(qs.groups):
            raise QuestionSetError(
                f"--sample {sample}: {qs.source} has samples 0 to {len(qs.groups) - 1}."
            )
        return qs.groups[sample], f" (sample {sample})"
    if len(qs.groups) == 1:
        return qs.groups[0], ""
    blob = "\n".join(normed)
    found = [sum(_norm(t) in blob for t in probe) / max(1, len(probe)) for probe in qs.probes]
    best = max(range(len(found)), key=lambda i: found[i])
    if found[best] < 0.5:
        raise QuestionSetError(
            f"none of the {len(qs.groups)} conversations of {qs.source} is in this memory repo; "
            "import one first, or name it with --sample N."
        )
    return qs.groups[best], f" (sample {best}, found in the transcripts)"


def evaluate(
    repo: MemoryRepo,
    questions: QuestionSet | None,
    *,
    ref: str | None = None,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    sample: int | None = None,
    limit: int | None = None,
    include_archive: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> EvalReport:
    """Score the memory of REPO (or of REF in it) on QUESTIONS (None: the sizes only)."""
    started = time.perf_counter()
    with checkout(repo, ref) as (target, described):
        report = EvalReport(described, questions.source if questions else "-")
        size = knowledge_size(target)
        report.knowledge_bytes, report.current_state_bytes, report.raw_bytes = (
            size.knowledge_bytes,
            size.current_state_bytes,
            size.raw_bytes,
        )
        if questions is None:
            report.seconds = time.perf_counter() - started
            return report
        turns = transcript_turns(target)
        normed = [_norm(t.unit.text) for t in turns]
        group, which = _pick_group(questions, sample, normed)
        report.questions += which
        group = group[:limit] if limit is not None else group
        _score_context(report, target, group, turns, normed, budgets, include_archive, progress)
        _score_knowledge(report, target, group)
    report.seconds = time.perf_counter() - started
    return report


def _score_context(
    report: EvalReport,
    target: MemoryRepo,
    group: Sequence[Question],
    turns: Sequence[Turn],
    normed: Sequence[str],
    budgets: Sequence[int],
    include_archive: bool,
    progress: Callable[[int, int], None] | None,
) -> None:
    from autopoiesis.compiler import ContextCompiler
    from autopoiesis.index import SearchIndex
    from autopoiesis.memory.compile_message import compile_for_message
    from autopoiesis.topics.pipeline import WatcherPipeline

    asked = [q for q in group if q.question]
    report.asked = len(asked)
    with SearchIndex(target) as index:  # built or brought up to date before the first compile
        index.catch_up()
    resolved = [
        (q, [resolve(e, target, turns, normed) for e in q.evidence]) for q in asked if q.evidence
    ]
    report.with_evidence = len(resolved)
    held = {b: 0 for b in budgets}
    base_held = {b: 0 for b in budgets}
    tokens = {b: 0 for b in budgets}
    failed: dict[int, str] = {}
    cache: dict[str, list[str]] = {}
    baseline = TurnBaseline(turns)
    pipe = WatcherPipeline(target, log_decisions=False, persist_steering=False)
    try:
        with ContextCompiler(target, index_refresh_seconds=3600) as comp:
            for n, (q, evs) in enumerate(resolved, 1):
                text = q.question or ""
                ranked = baseline.ranked(text)
                for b in budgets:
                    if b not in failed:
                        try:
                            res, _ = compile_for_message(
                                target,
                                text,
                                budget=b,
                                take_steering=False,
                                record=False,
                                compiler=comp,
                                pipeline=pipe,
                                log_decisions=False,
                                usage={},
                                include_archive=include_archive,
                            )
                        except BudgetTooSmallError as exc:
                            failed[b] = str(exc)
                        else:
                            tokens[b] += res.total_tokens
                            norm = _norm(res.prompt)
                            held[b] += any(
                                held_in_context(e, res.sections, norm, target, cache) for e in evs
                            )
                    packed = baseline.pack(ranked, b)
                    base_held[b] += any(baseline.holds(e, packed) for e in evs)
                if progress:
                    progress(n, len(resolved))
    finally:
        baseline.close()
    n = len(resolved)
    for b in budgets:
        if b in failed:
            report.budgets.append(
                BudgetScore(b, None, base_held[b] / n if n else None, 0.0, failed[b])
            )
        else:
            report.budgets.append(
                BudgetScore(
                    b,
                    held[b] / n if n else None,
                    base_held[b] / n if n else None,
                    tokens[b] / n if n else 0.0,
                )
            )


def _score_knowledge(report: EvalReport, target: MemoryRepo, group: Sequence[Question]) -> None:
    answers = [q.answer for q in group if q.answer and answer_words(q.answer)]
    report.with_answer = len(answers)
    if answers:
        figures = knowledge_recall(target, answers)
        report.answer_line, report.answer_words = (
            figures["knowledge"].line,
            figures["knowledge"].words,
        )
        report.raw_answer_line, report.raw_answer_words = figures["raw"].line, figures["raw"].words
    stale = [fact for q in group for fact in q.stale]
    report.stale_marked = len(stale)
    if stale:
        live = [" " + normalize_fact(line) + " " for line in current_state_lines(target)]
        for fact in stale:
            old = " " + normalize_fact(fact) + " "
            if old.strip() and any(old in have for have in live):
                report.stale_live.append(fact)


# ── text ──
def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _rows(r: EvalReport) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for b in r.budgets:
        rows.append(
            (
                f"evidence in context, {b.budget} tokens",
                f"{_fmt(b.compiled)} compiled / {_fmt(b.bm25_packed)} BM25 turns"
                + (f"  ({b.note})" if b.note else ""),
            )
        )
    if r.budgets:
        rows.append(("questions with evidence", f"{r.with_evidence} of {r.asked}"))
    if r.with_answer:
        rows.append(
            (
                "answer recall in knowledge/",
                f"{_fmt(r.answer_line)} in one line, {_fmt(r.answer_words)} of words "
                f"(raw {_fmt(r.raw_answer_line)} / {_fmt(r.raw_answer_words)}; "
                f"{r.with_answer} answers)",
            )
        )
    rows.append(
        (
            "knowledge size",
            f"{r.knowledge_bytes:,} bytes = {_fmt(r.knowledge_ratio)} of raw ({r.raw_bytes:,}); "
            f"current state {r.current_state_bytes:,}",
        )
    )
    if r.stale_marked:
        rows.append(("stale facts still live", f"{len(r.stale_live)} of {r.stale_marked}"))
    return rows


def format_report(r: EvalReport) -> str:
    lines = [f"eval of {r.target} on {r.questions}"]
    lines += [f"  {k:<36} {v}" for k, v in _rows(r)]
    lines += [f"  stale: {s}" for s in r.stale_live[:10]]
    lines.append(f"  ({r.seconds:.1f} s)")
    return "\n".join(lines)


def format_side_by_side(a: EvalReport, b: EvalReport) -> str:
    """Two reports, one row per figure: what `replay --compare A B` prints."""
    ra, rb = dict(_rows(a)), dict(_rows(b))
    keys = list(ra) + [k for k in rb if k not in ra]
    width = max([len(v) for v in ra.values()] + [len(a.target)]) + 2
    lines = [f"{'':<36} {a.target:<{width}} {b.target}"]
    lines += [f"{k:<36} {ra.get(k, '-'):<{width}} {rb.get(k, '-')}" for k in keys]
    return "\n".join(lines)
