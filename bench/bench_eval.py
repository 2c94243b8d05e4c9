"""The context compiler on LoCoMo (../shared/data/locomo/locomo-dev.json) through
`autopoiesis eval` (autopoiesis.eval.evaluate.evaluate), one memory repo per conversation:
evidence in the compiled context at 2K, 4K and 8K tokens, beside plain BM25 turns packed
into the same budget in the same run (category 1-4 questions); target: >= 0.95 at 8K.
(Answer recall in knowledge/ after offline extraction is bench_knowledge.py's.)

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


def measure(quick: bool = False) -> dict[str, Any]:
    """Figures over every conversation of DATA, weighted by questions."""
    from autopoiesis.eval.evaluate import evaluate, load_questions
    from autopoiesis.eval.locomo import import_conversation

    qs = load_questions(DATA)
    data = json.loads(DATA.read_text(encoding="utf-8"))
    n_conv = 2 if quick else len(data)
    held = {b: 0.0 for b in BUDGETS}
    base = {b: 0.0 for b in BUDGETS}
    fill = {b: 0.0 for b in BUDGETS}
    n = 0
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
                held[s.budget] += (s.compiled or 0.0) * r.with_evidence
                base[s.budget] += (s.bm25_packed or 0.0) * r.with_evidence
                fill[s.budget] += s.compiled_tokens * r.with_evidence
            n += r.with_evidence
    return {
        "conversations": n_conv,
        "questions_with_evidence": n,
        "compiled": {b: held[b] / n for b in BUDGETS},
        "bm25_packed": {b: base[b] / n for b in BUDGETS},
        "compiled_tokens_mean": {b: fill[b] / n for b in BUDGETS},
        "eval_s": eval_s,
    }


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
                "value": round(m["compiled"][b], 3),
                "unit": "",
                "target": TARGET_8K if b == 8192 else None,
            }
        )
        rows.append(
            {
                "bench": "eval locomo",
                "metric": f"evidence in BM25 turns packed, {k}",
                "value": round(m["bm25_packed"][b], 3),
                "unit": "",
                "target": None,
            }
        )
    rows += [
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
            print(f"{r['bench']:<12} {r['metric']:<48} {r['value']!s:>10} {r['unit']:<6} {target}")
