"""The context compiler on LoCoMo (../shared/data/locomo/locomo-dev.json) through
`autopoiesis eval` (autopoiesis.eval.evaluate.evaluate), one memory repo per conversation:
evidence in the compiled context at 2K, 4K and 8K tokens, beside plain BM25 turns packed
into the same budget in the same run (category 1-4 questions); target: >= 0.95 at 8K.
Beside it, the answer in context (each answer's content words in any order: the pattern
autopoiesis.eval.questions derives), and both per kind (LoCoMo's category: multi-hop,
temporal, open-domain, single-hop). (Answer recall in knowledge/ after offline extraction
is bench_knowledge.py's.)

Each conversation is imported as in bench_locomo.py (the real import path, one
transcript a session, the session's date, speakers by name).

    python bench/bench_eval.py [--quick] [--json]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = (
    Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
)
BUDGETS = (2048, 4096, 8192)
TARGET_8K = 0.95


def _weighted(total: dict[Any, list[float]], key: Any, value: float | None, n: int) -> None:
    """Add a share VALUE over N questions to TOTAL[KEY] = [held, questions]."""
    held = total.setdefault(key, [0.0, 0.0])
    held[0] += (value or 0.0) * n
    held[1] += n


def _shares(total: dict[Any, list[float]]) -> dict[Any, float | None]:
    return {k: (h / n if n else None) for k, (h, n) in total.items()}


def measure(quick: bool = False) -> dict[str, Any]:
    """Figures over every conversation of DATA, weighted by questions."""
    from autopoiesis.eval.evaluate import evaluate, load_questions
    from autopoiesis.eval.locomo import import_conversation

    qs = load_questions(DATA)
    data = json.loads(DATA.read_text(encoding="utf-8"))
    n_conv = 2 if quick else len(data)
    figures: dict[str, dict[Any, list[float]]] = {
        k: {} for k in ("compiled", "bm25_packed", "answer_compiled", "answer_bm25_packed")
    }
    by_kind: dict[str, dict[Any, list[float]]] = {
        k: {}
        for k in (
            "evidence_compiled",
            "evidence_bm25_packed",
            "answer_compiled",
            "answer_bm25_packed",
        )
    }
    fill = {b: 0.0 for b in BUDGETS}
    n = n_answer = 0
    eval_s = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        for conv_no in range(n_conv):
            corpus = import_conversation(Path(tmp), conv_no, data[conv_no]["conversation"])
            t0 = time.perf_counter()
            r = evaluate(
                corpus.repo, qs, sample=conv_no, budgets=BUDGETS, limit=40 if quick else None
            )
            eval_s += time.perf_counter() - t0
            for s in r.budgets:
                _weighted(figures["compiled"], s.budget, s.compiled, r.with_evidence)
                _weighted(figures["bm25_packed"], s.budget, s.bm25_packed, r.with_evidence)
                _weighted(figures["answer_compiled"], s.budget, s.answer_compiled, r.with_pattern)
                _weighted(
                    figures["answer_bm25_packed"], s.budget, s.answer_bm25_packed, r.with_pattern
                )
                fill[s.budget] += s.compiled_tokens * r.with_evidence
            for g in r.breakdown:
                key = (g.value, g.budget)
                _weighted(by_kind["evidence_compiled"], key, g.evidence_compiled, g.with_evidence)
                _weighted(
                    by_kind["evidence_bm25_packed"], key, g.evidence_bm25_packed, g.with_evidence
                )
                _weighted(by_kind["answer_compiled"], key, g.answer_compiled, g.with_pattern)
                _weighted(by_kind["answer_bm25_packed"], key, g.answer_bm25_packed, g.with_pattern)
            n += r.with_evidence
            n_answer += r.with_pattern
    kinds = sorted({kind for kind, _ in by_kind["evidence_compiled"]})
    return {
        "conversations": n_conv,
        "questions_with_evidence": n,
        "questions_with_answer_pattern": n_answer,
        **{k: _shares(v) for k, v in figures.items()},
        "by_kind": {
            kind: {
                figure: {b: _shares(v).get((kind, b)) for b in BUDGETS}
                for figure, v in by_kind.items()
            }
            for kind in kinds
        },
        "compiled_tokens_mean": {b: fill[b] / n for b in BUDGETS},
        "eval_s": eval_s,
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def run(quick: bool = False) -> list[dict]:
    """Rows {bench, metric, value, unit, target} for bench/run.py."""
    if not DATA.exists():
        return [
            {
                "bench": "eval",
                "metric": "skipped (no ../shared/data/locomo)",
                "value": None,
                "unit": "",
                "target": None,
            }
        ]
    m = measure(quick)
    rows = []
    for b in BUDGETS:
        k = f"{b // 1024}K"
        rows.append(
            {
                "bench": "eval locomo",
                "metric": f"evidence in compiled context, {k}",
                "value": _round(m["compiled"][b]),
                "unit": "",
                "target": TARGET_8K if b == 8192 else None,
            }
        )
        rows.append(
            {
                "bench": "eval locomo",
                "metric": f"evidence in BM25 turns packed, {k}",
                "value": _round(m["bm25_packed"][b]),
                "unit": "",
                "target": None,
            }
        )
    for b in BUDGETS:
        k = f"{b // 1024}K"
        for side, label in (
            ("answer_compiled", "compiled context"),
            ("answer_bm25_packed", "BM25 turns packed"),
        ):
            rows.append(
                {
                    "bench": "eval locomo",
                    "metric": f"answer in {label}, {k}",
                    "value": _round(m[side][b]),
                    "unit": "",
                    "target": None,
                }
            )
    for kind, figures in m["by_kind"].items():
        for figure, values in figures.items():
            rows.append(
                {
                    "bench": "eval locomo",
                    "metric": f"{kind}: {figure.replace('_', ' ')}, 8K",
                    "value": _round(values[8192]),
                    "unit": "",
                    "target": None,
                }
            )
    rows += [
        {
            "bench": "eval locomo",
            "metric": "questions with an answer pattern",
            "value": m["questions_with_answer_pattern"],
            "unit": "",
            "target": None,
        },
        {
            "bench": "eval locomo",
            "metric": "questions with evidence (categories 1-4)",
            "value": m["questions_with_evidence"],
            "unit": "",
            "target": None,
        },
        {
            "bench": "eval locomo",
            "metric": "compiled tokens at 8K (mean)",
            "value": round(m["compiled_tokens_mean"][8192]),
            "unit": "tokens",
            "target": None,
        },
        {
            "bench": "eval locomo",
            "metric": "eval time, all conversations",
            "value": round(m["eval_s"], 1),
            "unit": "s",
            "target": None,
        },
    ]
    return rows


if __name__ == "__main__":
    if "--json" in sys.argv:
        print(json.dumps(measure(quick="--quick" in sys.argv), indent=2))
    else:
        for r in run(quick="--quick" in sys.argv):
            target = "" if r["target"] is None else f"(target {r['target']})"
            print(f"{r['bench']:<12} {r['metric']:<52} {r['value']!s:>10} {r['unit']:<6} {target}")
