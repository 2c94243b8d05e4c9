"""`autopoiesis eval`: how good a memory is, as numbers — on a question set, for the
working tree of a memory repo or for any branch, tag or commit of it.

The figures, at 2K, 4K and 8K tokens, for the context that `autopoiesis compile QUESTION
--budget B` assembles and beside it a plain baseline in the same run (the repo's
transcript turns ranked by BM25 — SQLite FTS5, porter, an OR of the question's words —
packed whole, each with its date, into the same budget), both scored the same way
(`autopoiesis.eval.context`):

* **Evidence in context**: for each question with evidence, does the context hold an
  evidence item — its turn or line, its text, or a knowledge line that carries it (cites
  the evidence turn, or holds all its content words)?
* **Answer in context**: for each question with an answer pattern (given, or derived from
  its answer: `autopoiesis.eval.questions`), does the pattern match the context's text?
  The answer in any form counts, not only the turn the annotator pointed to.
* Both **per kind** and **per project** of the questions that name one.

And beside them:

* **Answer recall in knowledge/** and **knowledge size** against raw size, as
  `autopoiesis.eval.knowledge_recall` defines them (current-state files only: journals,
  identity files, superseded entries and raw/ never count; the raw turns' recall beside
  it is the ceiling).
* **Stale facts**: facts the question set marks as replaced (`stale`) that are still
  live in a current-state file.

Question sets (`autopoiesis.eval.questions`): LoCoMo's JSON, or JSONL, one object a line::

    {"id": "q001", "question": "Which pooler do we use?", "answer": "HikariCP",
     "answer_pattern": "hikari ?cp", "kind": "lexical", "project": "billing",
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

import os
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import AutopoiesisError, BudgetTooSmallError, QuestionSetError
from autopoiesis.eval.context import (
    ContextView,
    Evidence,
    LineCache,
    Turn,
    TurnBaseline,
    compiled_view,
    evidence_held,
    norm,
    resolve,
    transcript_turns,
)
from autopoiesis.eval.knowledge_recall import (
    answer_words,
    current_state_lines,
    knowledge_recall,
    knowledge_size,
)
from autopoiesis.eval.questions import Question, QuestionSet, load_questions
from autopoiesis.eval.report import (
    EvalReport,
    QuestionScore,
    format_report,
    format_side_by_side,
    summarise,
)
from autopoiesis.formats.knowledge import normalize_fact

if TYPE_CHECKING:
    from autopoiesis.compiler import ContextCompiler
    from autopoiesis.topics.pipeline import WatcherPipeline

# the names the commands import from here
__all__ = [
    "DEFAULT_BUDGETS",
    "EvalReport",
    "Question",
    "QuestionSet",
    "checkout",
    "evaluate",
    "format_report",
    "format_side_by_side",
    "load_questions",
]

DEFAULT_BUDGETS = (2048, 4096, 8192)


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


def _pick_group(
    qs: QuestionSet, sample: int | None, normed: Sequence[str]
) -> tuple[tuple[Question, ...], str]:
    if sample is not None:
        if qs.kind != "locomo":  # "has samples 0 to 0" read as a count, not a wrong option
            raise QuestionSetError(
                f"--sample {sample}: --sample picks one of the conversations of LoCoMo's "
                f"JSON, and {qs.source} is a JSONL question set (one set of questions); "
                "leave --sample out."
            )
        if not 0 <= sample < len(qs.groups):
            raise QuestionSetError(
                f"--sample {sample}: {qs.source} has samples 0 to {len(qs.groups) - 1}."
            )
        return qs.groups[sample], f" (sample {sample})"
    if len(qs.groups) == 1:
        return qs.groups[0], ""
    blob = "\n".join(normed)
    found = [sum(norm(t) in blob for t in probe) / max(1, len(probe)) for probe in qs.probes]
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
        report.warnings = list(questions.warnings)
        turns = transcript_turns(target)
        normed = [norm(t.unit.text) for t in turns]
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
    """Compile each question with evidence or an answer pattern at each budget, pack the
    baseline beside it, and score both the same way."""
    from autopoiesis.compiler import ContextCompiler
    from autopoiesis.index import SearchIndex
    from autopoiesis.topics.pipeline import WatcherPipeline

    asked = [q for q in group if q.question]
    report.asked = len(asked)
    with SearchIndex(target) as index:  # built or brought up to date before the first compile
        index.catch_up()
    cache = LineCache()
    scored = [
        (q, [resolve(e, target, turns, normed, cache) for e in q.evidence])
        for q in asked
        if q.evidence or q.answer_pattern is not None
    ]
    report.warnings += _mistakes(target, scored)
    baseline = TurnBaseline(turns)
    pipe = WatcherPipeline(target, log_decisions=False, persist_steering=False)
    try:
        with ContextCompiler(target, index_refresh_seconds=3600) as comp:
            scorer = _ContextScorer(target, comp, pipe, baseline, cache, include_archive)
            for n, (q, evs) in enumerate(scored, 1):
                report.scores.append(scorer.score(q, evs, budgets))
                if progress:
                    progress(n, len(scored))
    finally:
        baseline.close()
    summarise(report, budgets, scorer.failed)
    for row in report.budgets:
        done = scorer.compiled[row.budget]
        row.compiled_tokens = scorer.tokens[row.budget] / done if done else 0.0


def _mistakes(
    target: MemoryRepo, scored: Sequence[tuple[Question, Sequence[Evidence]]]
) -> list[str]:
    """What in the question set names nothing of TARGET, which the figures would only
    show as misses: an evidence `path:line` of no file or line of it, a `project` it does
    not have (the question is then compiled with no current project's files)."""
    from autopoiesis.core.project import project_slug
    from autopoiesis.index.projects import memory_has_project

    out, projects = [], set()
    for q, evs in scored:
        where = q.where or (f"question {q.id}" if q.id else q.question or "")
        out += [
            f"{where}: evidence {e!r} {ev.problem}; it is looked for as text. Give a "
            "`path:line` of the repo (`git ls-files raw/`), or the turn's words."
            for e, ev in zip(q.evidence, evs)
            if ev.problem
        ]
        if q.project and q.project not in projects:
            projects.add(q.project)
            slug = project_slug(q.project)
            if not slug or not memory_has_project(target, slug):
                out.append(
                    f"{where}: project {q.project!r} is none of this memory's (no "
                    f"knowledge/projects/{slug or q.project}/, no file of it indexed), so its "
                    "questions are compiled with no current project; `ls "
                    "knowledge/projects/` lists the projects."
                )
    return out


class _ContextScorer:
    """Scores one question at each budget: its compiled context (a dry run) and the
    BM25-packed turns, read the same way."""

    def __init__(
        self,
        target: MemoryRepo,
        comp: ContextCompiler,
        pipe: WatcherPipeline,
        baseline: TurnBaseline,
        cache: LineCache,
        include_archive: bool,
    ):
        self.target, self.comp, self.pipe = target, comp, pipe
        self.baseline, self.cache, self.include_archive = baseline, cache, include_archive
        self.failed: dict[int, str] = {}  # budget -> why it cannot be compiled
        self.tokens: dict[int, int] = defaultdict(int)  # summed prompt sizes
        self.compiled: dict[int, int] = defaultdict(int)  # compiles made

    def score(self, q: Question, evs: Sequence[Evidence], budgets: Sequence[int]) -> QuestionScore:
        text = q.question or ""
        score = QuestionScore(text, q.id, q.kind, q.project, q.answer_pattern, len(evs))
        ranked = self.baseline.ranked(text)
        for b in budgets:
            views = {
                "compiled": self._compiled(q, b),
                "bm25_packed": self.baseline.view(self.baseline.pack(ranked, b)),
            }
            score.evidence[b] = {
                side: None
                if view is None or not evs
                else any(evidence_held(e, view, self.target, self.cache) for e in evs)
                for side, view in views.items()
            }
            score.answer[b] = {
                side: None if view is None else q.answer_in(view.text)
                for side, view in views.items()
            }
        return score

    def _compiled(self, q: Question, budget: int) -> ContextView | None:
        """The compiled context of Q at BUDGET, or None when the budget cannot hold one."""
        from autopoiesis.memory.compile_message import compile_for_message

        if budget in self.failed:
            return None
        try:
            res, _ = compile_for_message(
                self.target,
                q.question or "",
                budget=budget,
                take_steering=False,
                record=False,
                compiler=self.comp,
                pipeline=self.pipe,
                log_decisions=False,
                usage={},
                include_archive=self.include_archive,
                project=q.project or None,  # the question's project is the current one
            )
        except BudgetTooSmallError as exc:
            self.failed[budget] = str(exc)
            return None
        self.tokens[budget] += res.total_tokens
        self.compiled[budget] += 1
        return compiled_view(res.prompt, res.sections, self.target, self.cache)


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
