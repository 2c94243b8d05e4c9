"""Retrieval quality on LoCoMo (../shared/data/locomo, defined in its README).

Each conversation goes into its own memory repo through the real import path
(`import_files`, neutral JSON: one session object per LoCoMo session, the session's real
date, speaker_a as user and speaker_b as agent with their names, turns a minute apart).
Every category 1-4 question is asked through `SearchIndex.search`; we report session
recall@5, recall@10, MRR (a hit when a result's transcript is an evidence session) and
turn-level hit@10 (an evidence turn's lines inside a returned chunk), beside a plain FTS5
BM25 baseline computed in the same run (porter tokenizer, OR of the question's
non-stopword terms; one document per session, and one per turn for the turn figure).

    python bench/bench_locomo.py [--quick] [--merge auto|rrf|weighted] [--embedder KIND:MODEL]

--embedder measures another embedder in the same pipeline, e.g.
`sentence-transformers:/path/to/all-MiniLM-L6-v2` or `fastembed:BAAI/bge-small-en-v1.5`
(the model must be on disk; nothing is downloaded).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from autopoiesis.eval.locomo import evaluate

DATA = (
    Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
)
TARGETS = {"session_recall@5": 0.95, "session_recall@10": None, "mrr": 0.85, "turn_hit@10": 0.80}
BASELINE_README = {
    "session_recall@5": 0.897,
    "session_recall@10": 0.959,
    "mrr": 0.746,
    "turn_hit@10": 0.676,
}


def embedder_from_spec(spec: str) -> Any:
    """'sentence-transformers:MODEL' or 'fastembed:MODEL' -> that embedder."""
    from autopoiesis.index.embedders import FastEmbedEmbedder, SentenceTransformerEmbedder

    kind, _, model = spec.partition(":")
    kinds = {"sentence-transformers": SentenceTransformerEmbedder, "fastembed": FastEmbedEmbedder}
    if kind not in kinds or not model:
        raise SystemExit(
            f"--embedder takes sentence-transformers:MODEL or fastembed:MODEL, not {spec!r}"
        )
    return kinds[kind](model)


def run(quick: bool = False) -> list[dict]:
    """Rows {bench, metric, value, unit, target} for bench/run.py."""
    if not DATA.exists():
        return [
            {
                "bench": "locomo",
                "metric": "skipped (no ../shared/data/locomo)",
                "value": None,
                "unit": "",
                "target": None,
            }
        ]
    rows = []
    for merge in ("rrf", "weighted"):
        if quick and merge == "weighted":
            continue
        res = evaluate(DATA, merge=merge, quick=quick)
        for metric, value in res["ours"].items():
            rows.append(
                {
                    "bench": f"locomo search ({merge})",
                    "metric": metric,
                    "value": round(value, 3),
                    "unit": "",
                    "target": TARGETS[metric],
                }
            )
        if merge == "rrf":
            for metric, value in res["baseline"].items():
                rows.append(
                    {
                        "bench": "locomo FTS5 BM25 baseline",
                        "metric": metric,
                        "value": round(value, 3),
                        "unit": "",
                        "target": None,
                    }
                )
            rows.append(
                {
                    "bench": "locomo",
                    "metric": "questions (categories 1-4)",
                    "value": res["questions"],
                    "unit": "",
                    "target": None,
                }
            )
            rows.append(
                {
                    "bench": "locomo",
                    "metric": "search p50 in-process",
                    "value": round(res["search_p50_ms"], 2),
                    "unit": "ms",
                    "target": 20,
                }
            )
    return rows


def print_table(rows: list[dict]) -> None:
    for r in rows:
        target = "" if r["target"] is None else f"(target {r['target']})"
        print(f"{r['bench']:<30} {r['metric']:<28} {r['value']!s:>10} {r['unit']:<4} {target}")


if __name__ == "__main__":
    args = sys.argv[1:]
    emb = embedder_from_spec(args[args.index("--embedder") + 1]) if "--embedder" in args else None
    if "--merge" in args or emb is not None:
        res = evaluate(
            DATA,
            merge=args[args.index("--merge") + 1] if "--merge" in args else None,
            quick="--quick" in args,
            embedder=emb,
        )
        print(json.dumps(res, indent=2))
    else:
        print_table(run(quick="--quick" in args))
