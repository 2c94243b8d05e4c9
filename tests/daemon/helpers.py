"""Helpers shared by the daemon tests (no tests here): waiting on a running daemon, its log."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from autopoiesis.core.paths import MemoryRepo


def wait_for(predicate: Callable[[], object], timeout: float = 120.0, what: str = "") -> None:
    """Poll PREDICATE until it is true; fail the test after TIMEOUT seconds, a hang guard
    (what it waits for runs in another process or thread, on a machine that may be busy)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def log_rows(repo: MemoryRepo) -> list[dict]:
    """The daemon log's rows so far (none before it writes one)."""
    path = repo.state_file("daemon_log")
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if path.exists()
        else []
    )
