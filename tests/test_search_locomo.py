"""Retrieval smoke test on LoCoMo (../shared/data/locomo): the five conversations
through the real import path and SearchIndex (~10 s), against the plain FTS5 BM25
baseline computed in the same run. Same code as bench/bench_locomo.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))


def test_locomo_retrieval_beats_baseline(shared_data: Path) -> None:
    import bench_locomo

    res = bench_locomo.evaluate(merge="rrf")
    ours, base = res["ours"], res["baseline"]
    assert res["questions"] == 760
    # measured: r5 0.929, MRR 0.799, turn hit 0.838 (baseline 0.897 / 0.748 / 0.671).
    # Targets: r5 >= 0.95 and MRR >= 0.85 are NOT met (no corpus-only method tried reached
    # them: LSA +0.02 MRR at best, RM3 and BM25F lost); turn hit >= 0.80 is.
    assert ours["turn_hit@10"] >= 0.80
    assert ours["session_recall@5"] >= base["session_recall@5"] + 0.02
    assert ours["mrr"] >= base["mrr"] + 0.03
    assert ours["turn_hit@10"] >= base["turn_hit@10"] + 0.10
