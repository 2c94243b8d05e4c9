"""Retrieval smoke test on LoCoMo (../shared/data/locomo): the five conversations
through the real import path and SearchIndex (~10 s), against the plain FTS5 BM25
baseline computed in the same run. The same code (autopoiesis.eval.locomo) as
bench/bench_locomo.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopoiesis.eval.locomo import evaluate

pytestmark = pytest.mark.slow


def test_locomo_retrieval_beats_baseline(shared_data: Path) -> None:
    res = evaluate(
        shared_data / "locomo" / "locomo-dev.json"
    )  # the shipped defaults: offline embedder, merge auto (rrf)
    ours, base = res["ours"], res["baseline"]
    assert res["questions"] == 760
    # measured: r5 0.928, MRR 0.817, turn hit 0.884 (baseline 0.897 / 0.748 / 0.671).
    # Targets r5 >= 0.95 and MRR >= 0.85 are NOT met, by this or by a neural model in the
    # same pipeline (all-MiniLM-L6-v2: 0.937 / 0.834, bench_locomo.py --embedder);
    # turn hit >= 0.80 is.
    assert ours["turn_hit@10"] >= 0.85
    assert ours["session_recall@5"] >= base["session_recall@5"] + 0.02
    assert ours["mrr"] >= base["mrr"] + 0.06
    assert ours["turn_hit@10"] >= base["turn_hit@10"] + 0.18
