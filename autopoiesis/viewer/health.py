"""The Health page's findings: what `autopoiesis doctor` checks (the SQLite module and
sqlite-vec, the embedder, the index's freshness and integrity, links in the memory
folders, the transcript history through `Memory.verify`) and the daemon's status.

One function, `health_report(memory)`, makes the report: when the Memory façade has one
status of its own (the doctor's checks as a registry), this is the one place to point at
it. The checks read every file and the whole index (seconds on a large memory), so the
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
    """Every check's finding and the daemon's status."""
    report = HealthReport()
    for check in (_sqlite, _embedder, _index, _links, _history):
        try:
            report.findings.append(check(memory))
        except Exception as exc:  # a check that breaks is a finding, not a broken page
            report.findings.append(
                Finding(check.__name__.strip("_"), False, f"check failed: {exc}")
            )
    report.daemon = _daemon(memory)
    return report


def _sqlite(memory: Memory) -> Finding:
    from autopoiesis.core.sqlite import probe_info

    info = probe_info()
    summary = f"{info.module} {info.sqlite_version}; sqlite-vec " + (
        f"{info.sqlite_vec_version} loaded" if info.sqlite_vec_loaded else "NOT loaded"
    )
    if info.sqlite_vec_loaded:
        return Finding("sqlite", True, summary)
    return Finding(
        "sqlite",
        False,
        summary,
        (str(info.error),),
        "vector search falls back to a bounded in-memory scan; reinstall sqlite-vec",
    )


def _embedder(memory: Memory) -> Finding:
    from autopoiesis.index.embedders import embedder_from_config

    try:
        e = embedder_from_config(memory.config)
    except AutopoiesisError as exc:
        return Finding("embedder", False, str(exc), fix="see search.embedder in the configuration")
    return Finding("embedder", True, f"{e.fingerprint} ({e.dimensions} dimensions)")


def _index(memory: Memory) -> Finding:
    index = memory.open_index()
    if index is None:
        return Finding("index", False, "no search index yet", fix="run `autopoiesis index rebuild`")
    with index:
        st = index.status()
        damage = index.integrity()
    summary = (
        f"{st.files_indexed} files indexed / {st.files_in_repo} in the repo, {st.chunks} chunks"
    )
    if damage:
        return Finding(
            "index", False, f"{summary}; CORRUPT ({damage})", fix="run `autopoiesis index rebuild`"
        )
    fresh = "fresh" if st.fresh else f"{len(st.stale_paths)} files to catch up on the next search"
    return Finding("index", True, f"{summary}; {fresh}", tuple(st.stale_paths[:10]))


def _links(memory: Memory) -> Finding:
    links = memory.repo.links()
    if not links:
        return Finding("links", True, "no symbolic link in the memory folders")
    return Finding(
        "links",
        False,
        f"{len(links)} symbolic links in the memory folders, never read",
        tuple(links[:20]),
        "remove them with `git rm`",
    )


def _history(memory: Memory) -> Finding:
    try:
        result = memory.verify()
    except AutopoiesisError as exc:
        return Finding("history", False, f"not verified ({exc})")
    detail = tuple(str(f) for f in result.findings[:20])
    fix = "" if result.ok else "`autopoiesis verify` lists them"
    return Finding("history", result.ok, result.summary(), detail, fix)


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
