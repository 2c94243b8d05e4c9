"""The MCP server's first answers (issue 23: "the server answers its first call within a
second"): `python -m autopoiesis -C REPO mcp` started as a harness starts it, spoken to over
stdio in JSON-RPC, the wall time from the process's start to the answer of `initialize`,
of `tools/list` and of a first `tools/call` (a search), median of ROUNDS:

- cold: no daemon runs (the server imports the MCP SDK in its own process)
- warm: the daemon runs, and its MCP host starts the session (fastpath/relay.py)

and the MCP host's resident memory (what the daemon's warm MCP costs while it runs).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {
    **{k: v for k, v in os.environ.items() if k != "AUTOPOIESIS_NO_DAEMON"},
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@x",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@x",
    "GIT_CONFIG_NOSYSTEM": "1",
}
ENV.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python keeps its bytecode


def first_answers(root: Path, env: dict[str, str]) -> list[float]:
    """Seconds from the start of `autopoiesis mcp` to the answers of initialize,
    tools/list and a search."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", str(root), "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    }
    calls = [
        ("initialize", init),
        ("tools/list", None),
        ("tools/call", {"name": "search", "arguments": {"query": "billing database"}}),
    ]
    times = []
    for n, (method, params) in enumerate(calls, 1):
        message = {"jsonrpc": "2.0", "id": n, "method": method}
        if params is not None:
            message["params"] = params
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        while json.loads(proc.stdout.readline()).get("id") != n:
            pass
        times.append(time.perf_counter() - started)
        if method == "initialize":
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    proc.stdin.close()
    proc.wait()
    proc.stdout.close()
    return times


def _host_rss_mb(root: Path) -> float:
    log = root / ".autopoiesis/logs/daemon.jsonl"
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    pid = [r for r in rows if r.get("event") == "mcp_ready"][-1]["pid"]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(quick: bool = False) -> list[dict]:
    from autopoiesis.memory.initialize import init_memory_repo

    rounds = 3 if quick else 7
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = {**ENV, "HOME": str(home)}
        root = init_memory_repo(Path(tmp) / "memory").root
        (root / "knowledge/reference/billing.md").write_text(
            "# Billing\n\n## Facts\n- The billing database runs Postgres 17 on pg-billing-2.\n"
        )
        first_answers(root, env)  # bytecode written, the index built: as on a used machine
        cold = [first_answers(root, env) for _ in range(rounds)]
        daemon = subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", str(root), "daemon", "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            socket = root / ".autopoiesis/daemon/mcp.sock"
            deadline = time.monotonic() + 120
            while not socket.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            warm = [first_answers(root, env) for _ in range(rounds)]
            rss = _host_rss_mb(root)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait()
    for label, runs in (("cold", cold), ("warm", warm)):
        for i, what in enumerate(("initialize", "tools/list", "first search")):
            rows.append(
                {
                    "metric": f"{label}: {what} answered",
                    "value": statistics.median(r[i] for r in runs),
                    "unit": "s",
                    "target": "< 1" if (label, i) == ("warm", 0) else "",
                }
            )
    rows.append({"metric": "MCP host resident memory", "value": rss, "unit": "MB", "target": ""})
    return rows
