"""The daemon's instance lock, status file and JSON-lines log, and what `daemon status` and
`daemon log` make of them.

* **The lock** (`.autopoiesis/locks/daemon.lock`): one daemon per memory repo. An flock
  the kernel releases when its holder dies, so a stale lock of a dead daemon is simply
  taken over; the file holds the holder's pid (and its start time, which survives pid
  reuse) for `daemon status` and `daemon stop`.
* **The status file** (`daemon/status.json`): pid, start, each job's state, last and
  next run; rewritten whole (atomically) when something changes.
* **The log** (`logs/daemon.jsonl`): one JSON object a line
  (`{"ts", "job", "event", ...}`), through core.events.EventLog.

`daemon status` also says whether the clone's sync works (memory/sync_report.py's health
record): a sync stopped by a conflict or a refusal is shown with since when, and the
command exits 1, so a clone that stopped syncing is never taken for an idle one.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts, parse_ts, today, utc_now
from autopoiesis.core.events import EventLog
from autopoiesis.core.paths import FileLock, MemoryRepo, atomic_write
from autopoiesis.errors import AutopoiesisError, TimestampError
from autopoiesis.git.repo import process_start


class DaemonRunningError(AutopoiesisError):
    """Another daemon holds this memory repo."""


# ── the instance lock ──
def lock_path(repo: MemoryRepo) -> Path:
    return repo.state_path("locks", "daemon.lock")


def read_owner(repo: MemoryRepo) -> dict[str, Any] | None:
    """The pid record of the daemon lock, or None."""
    try:
        data = json.loads(lock_path(repo).read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def running_pid(repo: MemoryRepo) -> int | None:
    """The pid of the daemon that holds REPO, or None when none runs (a record of a dead
    pid, or of a pid reused by another process, is no daemon)."""
    owner = read_owner(repo)
    if not owner or not isinstance(owner.get("pid"), int):
        return None
    started = process_start(owner["pid"])
    if started is None or (owner.get("start") and started and started != owner["start"]):
        return None
    probe = FileLock(lock_path(repo))
    if probe.acquire(timeout=0):  # nobody holds the lock: that process is not our daemon
        probe.release()
        return None
    return int(owner["pid"])


class InstanceLock:
    """Held by the one daemon (or `run-due`) of a repo while it runs."""

    def __init__(self, repo: MemoryRepo, what: str = "daemon"):
        self.repo = repo
        self.what = what
        self._lock = FileLock(lock_path(repo))

    def acquire(self) -> None:
        if not self._lock.acquire(timeout=0):
            pid = running_pid(self.repo)
            owner = read_owner(self.repo) or {}
            raise DaemonRunningError(
                f"a daemon already runs for {self.repo.root} (pid {pid or owner.get('pid', '?')}, "
                f"{owner.get('what', 'daemon')} since {owner.get('started', '?')}); one is enough. "
                "`autopoiesis daemon status` shows it, `autopoiesis daemon stop` stops it."
            )
        self._started = format_ts(utc_now())
        self._write_record()

    def _write_record(self) -> None:
        record = {
            "pid": os.getpid(),
            "start": process_start(os.getpid()),
            "started": self._started,
            "what": self.what,
        }
        fd = self.fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)

    def still_held(self) -> bool:
        """Whether this process holds the lock of the file at the lock's path: a lock file
        deleted or replaced under a running daemon (`git clean -fdX`, `rm -rf
        .autopoiesis`) no longer keeps a second one out, which takes a new file."""
        try:
            here, mine = os.stat(lock_path(self.repo)), os.fstat(self.fd)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def reclaim(self) -> bool:
        """Hold the lock at its path again after its file went (still_held False): True when
        taken, False when another process took the new file first (that one runs now)."""
        fresh = FileLock(lock_path(self.repo))
        if not fresh.acquire(timeout=0):
            return False
        self._lock.release()
        self._lock = fresh
        self._write_record()
        return True

    @property
    def fd(self) -> int:
        fd = self._lock.fd
        assert fd is not None, "the lock is not held"
        return fd

    def release(self) -> None:
        if self._lock.held:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            self._lock.release()


# ── the status file ──
def status_path(repo: MemoryRepo) -> Path:
    return repo.state_file("daemon_status")


def write_status(repo: MemoryRepo, data: dict[str, Any]) -> None:
    atomic_write(status_path(repo), json.dumps(data, indent=1, default=str))


def read_status(repo: MemoryRepo) -> dict[str, Any]:
    try:
        data = json.loads(status_path(repo).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def llm_today(repo: MemoryRepo) -> dict[str, Any]:
    """LLM calls and tokens today (UTC), in all and per job, from the ledger."""
    from autopoiesis.llm.ledger import Ledger

    totals = Ledger.of(repo).day_totals(today().isoformat())
    return {
        "day": totals.day,
        "calls": totals.calls,
        "tokens": totals.tokens,
        "errors": totals.errors,
        "jobs": totals.jobs,
    }


def status_report(
    repo: MemoryRepo, jobs: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """What `daemon status` shows: the running daemon's status file when one runs, else the
    jobs as the state file has them (JOBS, computed by the caller), and today's LLM use."""
    data = read_status(repo)
    pid = running_pid(repo)
    running = pid is not None and data.get("pid") == pid and data.get("state") == "running"
    report: dict[str, Any] = {
        "repo": str(repo.root),
        "running": running,
        "pid": pid if running else None,
    }
    if running:
        started = _parse(data.get("started"))
        report["started"] = data.get("started")
        report["uptime_seconds"] = int((utc_now() - started).total_seconds()) if started else None
        report["jobs"] = data.get("jobs") or {}
        report["updated"] = data.get("updated")
        report["served"] = data.get("served")  # CLI calls answered warm (None: not serving)
    else:
        report["last_seen"] = data.get("updated")
        report["jobs"] = jobs if jobs is not None else (data.get("jobs") or {})
    report["llm_today"] = llm_today(repo)
    report["sync"] = _sync_health(repo)
    return report


def _sync_health(repo: MemoryRepo) -> dict[str, Any]:
    """The clone's sync health (memory/sync_report.py), with the line that says it stopped."""
    from autopoiesis.memory.sync_report import health_problem, sync_health

    health = sync_health(repo)
    return {**health, "problem": health_problem(health)}


def _parse(value: Any) -> datetime | None:
    try:
        return parse_ts(value, "time") if value else None
    except TimestampError:
        return None


def _ago(value: Any, now: datetime) -> str:
    when = _parse(value)
    if when is None:
        return "-"
    secs = (now - when).total_seconds()
    return (
        f"{format_ts(when)[5:16].replace('T', ' ')} ({_duration(abs(secs))} "
        f"{'ago' if secs >= 0 else 'from now'})"
    )


def _duration(secs: float) -> str:
    if secs < 90:
        return f"{secs:.0f} s"
    if secs < 5400:
        return f"{secs / 60:.0f} min"
    if secs < 172800:
        return f"{secs / 3600:.1f} h"
    return f"{secs / 86400:.1f} d"


def format_status(report: dict[str, Any]) -> str:
    """`daemon status` as text."""
    now = utc_now()
    lines = []
    if report.get("running"):
        lines.append(
            f"daemon     running, pid {report['pid']}, up "
            f"{_duration(report.get('uptime_seconds') or 0)} "
            f"(since {report.get('started')})"
        )
    else:
        seen = f"; last seen {report['last_seen']}" if report.get("last_seen") else ""
        lines.append(f"daemon     not running{seen} (start it with `autopoiesis daemon start`)")
    lines.append(f"repo       {report['repo']}")
    sync = report.get("sync") or {}
    if sync.get("problem"):
        lines.append(f"sync       STOPPED: {sync['problem']}")
    elif sync.get("last_ok"):
        lines.append(f"sync       working; last round {_ago(sync['last_ok'], now)}")
    if report.get("served") is not None:
        lines.append(
            f"served     {report['served']} CLI calls answered warm (search, compile, hooks)"
        )
    llm = report.get("llm_today") or {}
    lines.append(
        f"llm today  {llm.get('calls', 0)} calls, {llm.get('tokens', 0):,} tokens paid, "
        f"{llm.get('errors', 0)} failed"
    )
    lines.append("")
    lines.append(
        f"{'job':<16} {'state':<9} {'last run':<26} {'result':<11} {'next run':<26} why next"
    )
    for name, j in (report.get("jobs") or {}).items():
        result = j.get("last_result") or "-"
        if j.get("last_duration") is not None and result != "-":
            result += f" {_duration(float(j['last_duration']))}"
        lines.append(
            f"{name:<16} {j.get('state', '?'):<9} {_ago(j.get('last_run'), now):<26} {result:<11} "
            f"{_ago(j.get('next_run'), now):<26} {j.get('next_reason', '')}"
        )
        if j.get("last_message") and j.get("last_result") in ("failed", "timeout"):
            lines.append(f"{'':<16} └ {j['last_message'][:200]}")
    return "\n".join(lines)


# ── the log ──
def daemon_log(repo: MemoryRepo) -> EventLog:
    """The daemon's log, rotated past its cap (core/paths' STATE_LOG_KEEP_BYTES;
    daemon.jsonl.1 the generation before): a daemon that runs for months keeps its log
    bounded."""
    return repo.state_log("daemon_log")


# the job column of the daemon's own lines (started, stopping, ...), which name no job
DAEMON_ROWS = "daemon"


def format_log_row(row: dict[str, Any]) -> str:
    ts = str(row.get("ts", ""))[:19].replace("T", " ")
    job = str(row.get("job") or DAEMON_ROWS)
    event = str(row.get("event", ""))
    rest = {k: v for k, v in row.items() if k not in ("ts", "job", "event")}
    detail = ""
    if "message" in rest:
        detail = str(rest.pop("message"))
    extras = " ".join(f"{k}={v}" for k, v in rest.items() if v not in (None, "", [], {}))
    return f"{ts}  {job:<16} {event:<12} {detail}{('  ' + extras) if extras else ''}".rstrip()


@dataclass
class LogFilter:
    job: str | None = None

    def __call__(self, row: dict[str, Any]) -> bool:
        return self.job is None or (row.get("job") or DAEMON_ROWS) == self.job


def follow(
    path: Path, keep: LogFilter, *, poll: float = 0.5, stop_after: float | None = None
) -> Iterator[dict[str, Any]]:
    """New rows appended to the log at PATH (from its current end), as they come."""
    started = time.monotonic()
    offset = path.stat().st_size if path.exists() else 0
    buf = b""
    while stop_after is None or time.monotonic() - started < stop_after:
        try:
            with open(path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() < offset:  # rotated or truncated
                    offset = 0
                fh.seek(offset)
                data = fh.read()
        except FileNotFoundError:
            data = b""
        offset += len(data)
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and keep(row):
                yield row
        time.sleep(poll)
