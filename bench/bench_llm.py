"""LLM throughput through autopoiesis.llm against the loopback OpenAI server with 200 ms
simulated latency: what the concurrency limit buys when many extractor or gate calls are
queued. Latency-bound, so calls/s should grow close to linearly with concurrency.

    /tmp/v/bin/python bench/bench_llm.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

LATENCY_S = 0.2
CALLS = 20
LEVELS = (1, 4, 8)


def run() -> list[dict]:
    """Rows {name, value, unit}: calls/s and wall time at concurrency 1, 4 and 8."""
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.llm import LLMClient
    from autopoiesis.testing.openai_server import OpenAIServer, write_llm_config

    rows: list[dict] = []
    with OpenAIServer() as server, tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp:
        for n in LEVELS:
            root = Path(tmp) / f"c{n}"
            write_llm_config(
                root, server.base_url, concurrency=n, timeout_seconds=10, max_retries=0
            )
            with LLMClient(MemoryRepo(root), use_cache=False) as llm:
                server.latency = 0.0
                llm.complete("extract", "warm-up")  # client import and connection set-up not timed
                server.latency = LATENCY_S
                t0 = time.perf_counter()
                llm.map_concurrent(lambda i: llm.complete("extract", f"call {i}"), range(CALLS))
                wall = time.perf_counter() - t0
            rows.append(
                {
                    "name": f"llm throughput, concurrency {n} ({CALLS} calls, "
                    f"{int(LATENCY_S * 1000)} ms latency)",
                    "value": round(CALLS / wall, 2),
                    "unit": "calls/s",
                }
            )
            rows.append(
                {"name": f"llm wall time, concurrency {n}", "value": round(wall, 3), "unit": "s"}
            )
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['name']:<60} {row['value']:>10} {row['unit']}")
