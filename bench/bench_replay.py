"""Replay figures (docs/design.md#replay, docs/design.md#flow-reconstruct):

* offline replay of 1,000 generated transcripts (all six extractors, condense, commit,
  worktree set-up and comparison included): target at most 60 s;
* LLM replay against the loopback OpenAI server: a second replay of unchanged inputs makes
  zero requests (the server counts them);
* LLM replay with 200 ms simulated latency at concurrency 1, 4 and 8: throughput must grow.

    /tmp/v/bin/python bench/bench_replay.py [--quick]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

LATENCY_S = 0.2


def _sessions(n: int) -> list[dict]:
    topics = ["autopoiesis", "excitingfit", "billing", "search", "infra"]
    people = ["Maria Lopez", "David Feldhofer", "Ana Silva", "Tom Becker", "Ivan Petrov"]
    out = []
    for i in range(n):
        day, minute = 1 + (i // 12) % 28, i % 60
        month = 1 + (i // (12 * 28)) % 12
        t = topics[i % len(topics)]
        p = people[i % len(people)]
        started = f"2025-{month:02d}-{day:02d}T{8 + i % 12:02d}:{minute:02d}:00Z"
        msgs = [
            ("user", f"Let's look at knowledge/projects/{t}/context.md and plan step {i}."),
            ("agent", f"Reading it. {p} owns the {t} module; I will ask for a review."),
            (
                "user",
                f"We decided to use approach {i % 37} for {t} because it is simpler. "
                f"Lesson learned: always measure {t} latency {i % 13} before shipping.",
            ),
            (
                "agent",
                f"Procedure for {t} deploys: run the tests, tag build {i % 7}, then push. "
                f"FYI the {t} service runs on port {8000 + i % 50}.",
            ),
        ]
        from datetime import datetime, timedelta

        t0 = datetime.fromisoformat(started.replace("Z", "+00:00"))
        out.append(
            {
                "session_id": f"ses_{i:05d}",
                "started": started,
                "tags": [t],
                "messages": [
                    {
                        "role": r,
                        "content": c,
                        "timestamp": (t0 + timedelta(minutes=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    }
                    for k, (r, c) in enumerate(msgs)
                ],
            }
        )
    return out


def _repo(root: Path, n: int):  # -> MemoryRepo with N committed transcripts
    from autopoiesis.capture.importers import import_files
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo

    repo = MemoryRepo(init_memory_repo(root, build_index=False).root)
    f = root.parent / f"{root.name}-sessions.json"
    f.write_text(json.dumps(_sessions(n)), encoding="utf-8")
    report = import_files(repo, [f], "neutral")
    assert len(report.imported) == n, report.refused[:3]
    return repo


def _llm_reply(body: dict) -> dict:
    """A valid reply for whichever extractor prompt this is."""
    prompt = body["messages"][-1]["content"]
    for key, item in (
        (
            "decisions",
            {"decision": "Use the simpler approach", "context": "simpler", "project": "general"},
        ),
        ("lessons", {"lesson": "Measure latency before shipping"}),
        ("people", {"name": "Maria Lopez", "fact": "Owns a module"}),
        ("procedures", {"name": "deploys", "steps": ["run the tests", "tag", "push"]}),
        ("facts", {"fact": "The service runs on port 8000", "topic": "infra"}),
        ("bullets", {"topic": "general", "bullet": "Planned the next step"}),
    ):
        if f'{{"{key}":' in prompt:
            return {"content": json.dumps({key: [item]})}
    return {"content": "{}"}


def _configure(repo, base_url: str, concurrency: int) -> None:
    from autopoiesis.git.repo import MemoryGit
    from autopoiesis.testing.openai_server import write_llm_config

    # approved on this machine, as `autopoiesis llm approve` does: a model endpoint that
    # came with the shared config is held back until then (the replay would run offline)
    write_llm_config(
        repo.root,
        base_url,
        concurrency=concurrency,
        max_retries=0,
        timeout_seconds=10,
        daily_token_budget=0,
    )
    MemoryGit(repo).commit_paths(["memory-config.yaml"], "maintenance: bench LLM config\n")


def run(quick: bool = False) -> list[dict]:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.knowledge import replay as rp
    from autopoiesis.testing.openai_server import OpenAIServer

    rows: list[dict] = []
    n_offline = 200 if quick else 1000
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        repo = _repo(Path(tmp) / "offline", n_offline)
        t0 = time.perf_counter()
        res = rp.replay_branch(repo, "extract/bench")
        wall = time.perf_counter() - t0
        rows.append(
            {
                "bench": "replay",
                "metric": f"offline replay of {n_offline} transcripts (6 extractors)",
                "value": round(wall, 2),
                "unit": "s",
                "target": "<= 60 (1,000 transcripts)",
            }
        )
        rows.append(
            {
                "bench": "replay",
                "metric": "offline replay throughput",
                "value": round(n_offline / wall, 1),
                "unit": "transcripts/s",
                "target": ">= 16.7",
            }
        )
        rows.append(
            {
                "bench": "replay",
                "metric": "entries written by the offline replay",
                "value": res.report.added,
                "unit": "entries",
                "target": "-",
            }
        )

        with OpenAIServer() as server:
            server.default_chat = _llm_reply
            n_llm = 20 if quick else 100
            repo = _repo(Path(tmp) / "llm", n_llm)
            _configure(repo, server.base_url, 8)
            repo = MemoryRepo(repo.root)
            rp.replay_branch(repo, "extract/first")
            first = len(server.chat_bodies())
            server.reset()
            t0 = time.perf_counter()
            rp.replay_branch(repo, "extract/second")
            wall = time.perf_counter() - t0
            rows.append(
                {
                    "bench": "replay",
                    "metric": f"LLM requests, first replay of {n_llm} transcripts",
                    "value": first,
                    "unit": "requests",
                    "target": f"{6 * n_llm} + 1 (weekly rollup)",
                }
            )
            rows.append(
                {
                    "bench": "replay",
                    "metric": "LLM requests, second replay (unchanged inputs)",
                    "value": len(server.chat_bodies()),
                    "unit": "requests",
                    "target": "0",
                }
            )
            rows.append(
                {
                    "bench": "replay",
                    "metric": "second (cached) LLM replay wall time",
                    "value": round(wall, 2),
                    "unit": "s",
                    "target": "-",
                }
            )

            n_lat = 16 if quick else 40
            for level in (1, 4, 8):
                server.reset()
                server.latency = 0.0
                r = _repo(Path(tmp) / f"lat{level}", n_lat)
                _configure(r, server.base_url, level)
                r = MemoryRepo(r.root)
                server.latency = LATENCY_S
                t0 = time.perf_counter()
                rp.replay_branch(r, "extract/lat", extractors=["decisions"])
                wall = time.perf_counter() - t0
                rows.append(
                    {
                        "bench": "replay",
                        "metric": f"LLM replay, concurrency {level} ({n_lat} transcripts, 200 ms "
                        "latency)",
                        "value": round(n_lat / wall, 2),
                        "unit": "transcripts/s",
                        "target": "grows with concurrency",
                    }
                )
    return rows


if __name__ == "__main__":
    rows = run(quick="--quick" in sys.argv)
    for row in rows:
        print(f"{row['metric']:<70} {row['value']:>10} {row['unit']:<14} target {row['target']}")
