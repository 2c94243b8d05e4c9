"""The daemon's part of `autopoiesis status` and its check in `doctor` (core.health):
whether it runs, since when, and how its jobs last ended. The daemon is optional, so
one that does not run is a note, not a problem; a job whose last run failed is a
problem, with its message."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from autopoiesis.core.health import Check, Finding, StatusPart, note, ok, problem
from autopoiesis.core.text import counted
from autopoiesis.plugins import hookimpl

FAILED = ("failed", "timeout")


def read_daemon(memory: Any) -> dict[str, Any]:
    """Running or not, its pid and start, each job's last result and next run."""
    from autopoiesis.daemon.status import read_status, running_pid

    repo = memory.repo
    data = read_status(repo)
    pid = running_pid(repo)
    running = pid is not None and data.get("pid") == pid and data.get("state") == "running"
    jobs: dict[str, Any] = data["jobs"] if isinstance(data.get("jobs"), dict) else {}
    return {
        "running": running,
        "pid": pid if running else None,
        "started": data.get("started") if running else None,
        "last_seen": None if running else data.get("updated"),
        "served": data.get("served") if running else None,
        "jobs": {
            name: {k: j.get(k) for k in ("state", "last_run", "last_result", "next_run")}
            for name, j in jobs.items()
            if isinstance(j, dict)
        },
        "failed_jobs": {
            name: str(j.get("last_message") or j.get("last_result"))
            for name, j in jobs.items()
            if isinstance(j, dict) and j.get("last_result") in FAILED
        },
    }


def daemon_lines(f: Mapping[str, Any]) -> Iterable[str]:
    if f["running"]:
        since = str(f.get("started") or "?")[:16].replace("T", " ")
        failed = f" ({len(f['failed_jobs'])} failed last time)" if f["failed_jobs"] else ""
        jobs = counted(len(f["jobs"]), "job")
        yield f"daemon     running, pid {f['pid']}, since {since}; {jobs}{failed}"
    else:
        seen = f"; last seen {str(f['last_seen'])[:16].replace('T', ' ')}" if f["last_seen"] else ""
        yield f"daemon     not running{seen} (`autopoiesis daemon start` keeps the memory)"


def check_daemon(memory: Any) -> Iterator[Finding]:
    facts = read_daemon(memory)
    if not facts["running"]:
        yield note(
            "daemon",
            "not running: extraction, condensing and imports wait for a command",
            "`autopoiesis daemon start` (or `autopoiesis daemon install` to start it at login)",
            daemon=facts,
        )
        return
    for name, message in facts["failed_jobs"].items():
        yield problem(
            "daemon",
            f"the job {name} failed on its last run: {message[:200]}",
            "`autopoiesis daemon log` shows it",
            daemon=facts,
        )
    if not facts["failed_jobs"]:
        yield ok("daemon", f"running, pid {facts['pid']}", daemon=facts)


@hookimpl
def register_status_parts(register: Any) -> None:
    register(StatusPart("daemon", read_daemon, daemon_lines))


@hookimpl
def register_checks(register: Any) -> None:
    register(Check("daemon", check_daemon))
