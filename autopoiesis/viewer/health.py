"""The Health page's findings: what `autopoiesis doctor` checks (Memory.doctor: the
search machinery, the index, the history, the git hooks, the harness integrations, the
daemon, the remote, and whatever a plugin registers) and the daemon's status.

One function, `health_report(memory)`, makes the report. The checks read every file and
the whole index (seconds on a large memory), so the
page shows the last report of a `HealthMonitor` and how old it is; a report older than
MAX_AGE seconds is made again in the background, and the page reloads itself until the
new one is in.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autopoiesis.errors import AutopoiesisError

if TYPE_CHECKING:
    from autopoiesis.memory import Memory


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    summary: str
    detail: tuple[str, ...] = ()
    fix: str = ""


@dataclass
class HealthReport:
    findings: list[Finding] = field(default_factory=list)
    daemon: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)


def health_report(memory: Memory) -> HealthReport:
    """Every finding of `autopoiesis doctor` (Memory.doctor: the checks every package
    registers) and the daemon's status."""
    report = HealthReport()
    for f in memory.doctor().findings:
        report.findings.append(
            Finding(f.name, not f.problem, f.summary, _detail(f.data), f.fix or "")
        )
    report.daemon = _daemon(memory)
    return report


def _detail(data: Any) -> tuple[str, ...]:
    """The list behind a finding, when it has one: the history's findings, the index's
    files still to catch up."""
    history = data.get("history") or {}
    if isinstance(history, dict) and history.get("findings"):
        return tuple(
            (f"{x.get('path')}: {x.get('detail')}" if x.get("path") else str(x.get("detail")))
            if isinstance(x, dict)
            else str(x)
            for x in history["findings"][:20]
        )
    index = data.get("index") or {}
    if isinstance(index, dict) and index.get("stale_paths"):
        return tuple(index["stale_paths"][:10])
    return ()


def _daemon(memory: Memory) -> dict[str, Any]:
    from autopoiesis.daemon.status import status_report

    try:
        return status_report(memory.repo)
    except (AutopoiesisError, OSError) as exc:
        return {"running": False, "error": str(exc), "jobs": {}}


MAX_AGE = 60.0


class HealthMonitor:
    """The last HealthReport of a memory and when it was made; a new one in a thread of
    its own when there is none yet or it is older than MAX_AGE."""

    def __init__(self, memory: Memory, max_age: float = MAX_AGE):
        self.memory = memory
        self.max_age = max_age
        self._lock = threading.Lock()
        self._report: HealthReport | None = None
        self._made = 0.0
        self._running: threading.Thread | None = None

    def current(self, *, fresh: bool = False) -> tuple[HealthReport | None, float, bool]:
        """(the last report or None, its age in seconds, whether a new one is being made);
        FRESH: make a new one now, whatever the age of the last."""
        with self._lock:
            age = time.monotonic() - self._made
            stale = self._report is None or fresh or age > self.max_age
            if stale and self._running is None:
                self._running = threading.Thread(target=self._make, name="health", daemon=True)
                self._running.start()
            return self._report, age, self._running is not None

    def wait(self, timeout: float | None = None) -> None:
        thread = self._running
        if thread is not None:
            thread.join(timeout)

    def _make(self) -> None:
        try:
            report = health_report(self.memory)
        finally:
            with self._lock:
                self._running = None
        with self._lock:
            self._report, self._made = report, time.monotonic()
