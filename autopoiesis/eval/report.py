"""The report of `autopoiesis eval`: each question's score, the figures made from them
(overall, per kind, per project, at each budget), and the text forms: `format_report` (a
compact table) and `format_side_by_side` (two reports, what `replay --compare` prints).
`EvalReport.as_dict` (the `--json` output) holds everything, each question included."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

SIDES = ("compiled", "bm25_packed")  # the compiled context, the BM25-packed turns


@dataclass
class QuestionScore:
    """One question's figures: for each budget and each side (compiled, bm25_packed),
    whether the context held its evidence and its answer (None: not scored there — no
    evidence, no pattern, or the budget could not be compiled)."""

    question: str
    id: str | None = None
    kind: str | None = None
    project: str | None = None
    answer_pattern: str | None = None
    evidence_items: int = 0
    evidence: dict[int, dict[str, bool | None]] = field(default_factory=dict)
    answer: dict[int, dict[str, bool | None]] = field(default_factory=dict)


@dataclass
class BudgetScore:
    budget: int
    compiled: float | None  # share of questions with evidence whose compiled context holds some
    bm25_packed: float | None
    compiled_tokens: float = 0.0  # mean prompt size over the questions compiled
    note: str = ""
    answer_compiled: float | None = None  # share of questions with a pattern it matches
    answer_bm25_packed: float | None = None


@dataclass
class GroupScore:
    """The figures of the questions of one kind or one project, at one budget."""

    by: str  # "kind" | "project"
    value: str
    budget: int
    with_evidence: int
    evidence_compiled: float | None
    evidence_bm25_packed: float | None
    with_pattern: int
    answer_compiled: float | None
    answer_bm25_packed: float | None


@dataclass
class EvalReport:
    target: str
    questions: str
    asked: int = 0
    with_evidence: int = 0
    with_pattern: int = 0  # questions with an answer pattern (given, or from the answer)
    budgets: list[BudgetScore] = field(default_factory=list)
    breakdown: list[GroupScore] = field(default_factory=list)
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
    warnings: list[str] = field(default_factory=list)
    scores: list[QuestionScore] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def knowledge_ratio(self) -> float | None:
        return self.knowledge_bytes / self.raw_bytes if self.raw_bytes else None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["knowledge_ratio"] = self.knowledge_ratio
        return data


def share(
    scores: Iterable[QuestionScore], figure: str, budget: int, side: str
) -> tuple[float | None, int]:
    """(the share of SCORES whose FIGURE ("evidence" | "answer") held at BUDGET on SIDE,
    how many were scored there); None when none was."""
    held = [h for s in scores if (h := getattr(s, figure).get(budget, {}).get(side)) is not None]
    return (sum(held) / len(held) if held else None), len(held)


def _counted(scores: Sequence[QuestionScore], figure: str) -> int:
    """How many of SCORES have FIGURE to score (evidence items, an answer pattern)."""
    if figure == "evidence":
        return sum(1 for s in scores if s.evidence_items)
    return sum(1 for s in scores if s.answer_pattern is not None)


def summarise(report: EvalReport, budgets: Sequence[int], failed: dict[int, str]) -> None:
    """Fill REPORT's budget figures and breakdown from its question scores."""
    scores = report.scores
    report.with_evidence = _counted(scores, "evidence")
    report.with_pattern = _counted(scores, "answer")
    for b in budgets:
        row = BudgetScore(
            b,
            share(scores, "evidence", b, "compiled")[0],
            share(scores, "evidence", b, "bm25_packed")[0],
            note=failed.get(b, ""),
            answer_compiled=share(scores, "answer", b, "compiled")[0],
            answer_bm25_packed=share(scores, "answer", b, "bm25_packed")[0],
        )
        report.budgets.append(row)
    for by in ("kind", "project"):
        values = sorted({v for s in scores if (v := getattr(s, by)) is not None})
        for value in values:
            group = [s for s in scores if getattr(s, by) == value]
            for b in budgets:
                report.breakdown.append(
                    GroupScore(
                        by,
                        value,
                        b,
                        _counted(group, "evidence"),
                        share(group, "evidence", b, "compiled")[0],
                        share(group, "evidence", b, "bm25_packed")[0],
                        _counted(group, "answer"),
                        share(group, "answer", b, "compiled")[0],
                        share(group, "answer", b, "bm25_packed")[0],
                    )
                )


# ── text ──
def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _pair(a: float | None, b: float | None) -> str:
    """Two shares as whole percents, `compiled|bm25`."""
    return "|".join("-" if x is None else f"{100 * x:.0f}" for x in (a, b))


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
    for b in r.budgets if r.with_pattern else ():
        rows.append(
            (
                f"answer in context, {b.budget} tokens",
                f"{_fmt(b.answer_compiled)} compiled / {_fmt(b.answer_bm25_packed)} BM25 turns",
            )
        )
    if r.budgets:
        rows.append(("questions with evidence", f"{r.with_evidence} of {r.asked}"))
        rows.append(("questions with an answer pattern", f"{r.with_pattern} of {r.asked}"))
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


def _breakdown_table(r: EvalReport) -> list[str]:
    """One line per kind and per project: how many questions have evidence and an answer
    pattern, then evidence and answer in context at each budget, in whole percents,
    compiled|BM25 turns."""
    if not r.breakdown:
        return []
    budgets = [b.budget for b in r.budgets]
    width = 8 * len(budgets)
    lines = [
        f"  {'by kind / project, % compiled|BM25':<37}{'evidence':>{width}}  {'answer':>{width}}",
        f"    {'':<26}{'ev':>4}{'ans':>5}"
        + "".join(f"{b:>8}" for b in budgets)
        + "  "
        + "".join(f"{b:>8}" for b in budgets),
    ]
    groups: dict[tuple[str, str], dict[int, GroupScore]] = {}
    for row in r.breakdown:
        groups.setdefault((row.by, row.value), {})[row.budget] = row
    for (by, value), at in groups.items():
        first = next(iter(at.values()))
        evidence = "".join(
            f"{_pair(at[b].evidence_compiled, at[b].evidence_bm25_packed):>8}" for b in budgets
        )
        answer = "".join(
            f"{_pair(at[b].answer_compiled, at[b].answer_bm25_packed):>8}" for b in budgets
        )
        lines.append(
            f"    {f'{by} {value}'[:25]:<26}{first.with_evidence:>4}{first.with_pattern:>5}"
            f"{evidence}  {answer}"
        )
    return lines


def format_report(r: EvalReport) -> str:
    lines = [f"eval of {r.target} on {r.questions}"]
    lines += [f"  {k:<36} {v}" for k, v in _rows(r)]
    lines += _breakdown_table(r)
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
