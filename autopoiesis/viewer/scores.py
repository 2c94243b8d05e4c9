"""The Compare page's data: two refs side by side (`replay --compare`: knowledge/.'s facts
added and removed per category, the facts only on each side, through `Memory.compare`)
and their `eval` scores on a question set the user named at start (`serve --questions`),
with the figures per question kind.

An eval compiles every question at each budget in a worktree of the ref: seconds to
minutes. It runs in a thread of its own, once per (ref's commit, question set, its
mtime); the page says it is scoring and reloads itself until the figures are there, and
every later visit takes them from memory.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autopoiesis.errors import AutopoiesisError

if TYPE_CHECKING:
    from autopoiesis.eval.report import EvalReport
    from autopoiesis.git.repo import MemoryGit
    from autopoiesis.memory import Memory

REF_PATTERNS = ("refs/heads/", "refs/tags/memory/")
MAX_REFS = 300


def refs(git: MemoryGit) -> list[str]:
    """The branches and the memory's tags (memory/extract/*, memory/milestone/*, ...), for
    the two pickers: extract/* branches first."""
    out = git.run(
        "for-each-ref",
        f"--count={MAX_REFS}",
        "--sort=-creatordate",
        "--format=%(refname:short)",
        *REF_PATTERNS,
        check=False,
    ).stdout.split()
    return sorted(out, key=lambda r: (not r.startswith("extract/"), r.startswith("memory/"), r))


@dataclass
class Job:
    state: str = "running"  # running | done | failed
    report: EvalReport | None = None
    error: str = ""
    finished: threading.Event = field(default_factory=threading.Event)


@dataclass
class EvalJobs:
    """The eval runs of this server, by (commit, question file, its mtime)."""

    memory: Memory
    questions: dict[str, Path]  # the name shown -> the file
    jobs: dict[tuple[str, str, int], Job] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, sha: str, name: str) -> Job:
        """The job scoring commit SHA on the question set NAME, started when new."""
        path = self.questions[name]
        try:
            mtime = path.stat().st_mtime_ns
        except OSError as exc:
            failed = Job("failed", error=f"cannot read the question set {path}: {exc.strerror}")
            failed.finished.set()
            return failed
        key = (sha, name, mtime)
        with self.lock:
            found = self.jobs.get(key)
            if found is None:
                found = self.jobs[key] = Job()
                threading.Thread(
                    target=self._run, args=(found, sha, path), name=f"eval-{sha[:8]}", daemon=True
                ).start()
        return found

    def _run(self, job: Job, sha: str, path: Path) -> None:
        from autopoiesis.eval.evaluate import evaluate, load_questions

        try:
            job.report = evaluate(self.memory.repo, load_questions(path), ref=sha)
            job.state = "done"
        except AutopoiesisError as exc:
            job.error, job.state = str(exc), "failed"
        except Exception as exc:  # shown on the page; the server goes on
            job.error, job.state = f"{type(exc).__name__}: {exc}", "failed"
        finally:
            job.finished.set()


def by_kind(report: EvalReport, budget: int, figure: str) -> dict[str, float | None]:
    """FIGURE ("evidence_compiled", "answer_compiled", ...) of each question kind at BUDGET."""
    return {
        g.value: getattr(g, figure)
        for g in report.breakdown
        if g.by == "kind" and g.budget == budget
    }


def kind_groups(
    a: EvalReport, b: EvalReport, budget: int, figure: str
) -> list[tuple[str, list[float | None]]]:
    """The chart's rows: each kind either side has, with A's and B's FIGURE."""
    fa, fb = by_kind(a, budget, figure), by_kind(b, budget, figure)
    overall = [_overall(r, budget, figure) for r in (a, b)]
    rows: list[tuple[str, list[float | None]]] = [("all questions", overall)]
    rows += [(k, [fa.get(k), fb.get(k)]) for k in sorted(fa.keys() | fb.keys())]
    return rows


def _overall(report: EvalReport, budget: int, figure: str) -> float | None:
    for s in report.budgets:
        if s.budget == budget:
            names = {"evidence_compiled": "compiled", "evidence_bm25_packed": "bm25_packed"}
            value: Any = getattr(s, names.get(figure, figure), None)
            return value if isinstance(value, float) else None
    return None
