"""The harness sessions autopoiesis has seen but not imported yet, and their import.

A harness session is imported once, when it ends (Claude Code's SessionEnd). Some never
say so: a terminal closed, a killed process, Codex (whose notify runs after every turn
and has no end). Importing after every turn instead would file one continuation
transcript per turn. So each hook call that shows a session alive records it here
(`.autopoiesis/harness/sessions.json`: harness, id, log file, last seen), and a session
quiet for `integrations.import_idle_minutes` is imported by the next hook call of any
other session (or by `autopoiesis hook import --idle`, from cron).

Imports run in a detached process (`hook import KEY...`): a hook must return at once,
and Claude Code cancels the hooks it runs at exit. The worker imports through
`capture.importers.import_files` (a log that grew since its last import becomes a
continuation), runs the session-end extraction on what it filed, and logs every outcome
to the harness event log.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts, parse_ts, utc_now
from autopoiesis.core.events import EventLog
from autopoiesis.core.paths import MemoryRepo, atomic_write
from autopoiesis.errors import AutopoiesisError


def session_key(harness: str, session: str) -> str:
    return f"{harness}:{session}"


def harness_log(repo: MemoryRepo) -> EventLog:
    """The event log of every hook call and background import (.autopoiesis/logs/harness.jsonl),
    redacted: it records what a harness handed the hooks; bounded as core/paths'
    STATE_LOG_KEEP_BYTES says."""
    return repo.state_log("harness_log", redact=repo.redactor().redact)


@dataclass(frozen=True)
class SeenSession:
    key: str
    harness: str
    session: str
    path: str | None  # the harness's log file (Claude Code transcript_path, Codex rollout)
    seen: str  # UTC time of the last hook call that showed it alive
    data: dict[str, Any]


class SessionRegistry:
    """The sessions.json of one memory repo; every change under a lock, written atomically.
    A damaged file reads as empty: it is a cache of what the next hook call re-records."""

    def __init__(self, repo: MemoryRepo):
        self.repo = repo
        self.path = repo.state_file("harness_sessions")

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}
        )

    def _save(self, data: dict[str, dict[str, Any]]) -> None:
        atomic_write(self.path, json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True))

    def all(self) -> list[SeenSession]:
        return [
            SeenSession(
                k,
                str(v.get("harness", "")),
                str(v.get("session", "")),
                v.get("path"),
                str(v.get("seen", "")),
                v,
            )
            for k, v in sorted(self._load().items())
        ]

    def get(self, key: str) -> SeenSession | None:
        return next((s for s in self.all() if s.key == key), None)

    def touch(self, harness: str, session: str, **fields: Any) -> None:
        """Record SESSION of HARNESS as alive now, with FIELDS (None values are not stored)."""
        key = session_key(harness, session)
        with self.repo.lock("harness-sessions"):
            data = self._load()
            row = data.get(key, {})
            row.update({"harness": harness, "session": session, "seen": format_ts(utc_now())})
            row.update({k: v for k, v in fields.items() if v is not None})
            data[key] = row
            self._save(data)

    def forget(self, key: str, *, seen: str | None = None) -> None:
        """Drop KEY; with SEEN only if it was not seen again since (a resumed session stays)."""
        with self.repo.lock("harness-sessions"):
            data = self._load()
            if key in data and (seen is None or data[key].get("seen") == seen):
                del data[key]
                self._save(data)

    def idle(self, minutes: int, *, exclude: str | None = None) -> list[SeenSession]:
        """The sessions last seen MINUTES or more ago (not EXCLUDE, the caller's own)."""
        cutoff = utc_now() - timedelta(minutes=minutes)
        out = []
        for s in self.all():
            if s.key == exclude:
                continue
            try:
                quiet = parse_ts(s.seen) <= cutoff
            except AutopoiesisError:
                quiet = True  # a damaged time: import it rather than keep it forever
            if quiet:
                out.append(s)
        return out


def spawn_import(repo: MemoryRepo, keys: Iterable[str]) -> int | None:
    """Start the detached import of KEYS (`autopoiesis hook import`); its pid, or None when
    there is nothing to import. Its own output goes to a log file under .autopoiesis/logs."""
    keys = list(keys)
    if not keys:
        return None
    with repo.open_state_log("harness_import_log") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-P",
                "-m",
                "autopoiesis",
                "-C",
                str(repo.root),
                "hook",
                "import",
                *keys,
            ],
            cwd=repo.root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    return proc.pid


def sweep_idle(repo: MemoryRepo, *, exclude: str | None = None) -> int | None:
    """Start the import of every session idle past `integrations.import_idle_minutes`."""
    idle = SessionRegistry(repo).idle(repo.config.integrations.import_idle_minutes, exclude=exclude)
    return spawn_import(repo, [s.key for s in idle])


@dataclass(frozen=True)
class ImportOutcome:
    key: str
    path: str | None
    imported: tuple[str, ...] = ()
    already: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    # a refusal that may pass (a full disk): the session stays registered, to be imported
    # again by the next sweep (`hook import --idle`, another session's hook)
    retry: bool = False


def import_sessions(repo: MemoryRepo, keys: Iterable[str]) -> list[ImportOutcome]:
    """Import the log file of each session KEY, one worker at a time per memory repo; run
    the session-end extraction on what was filed; forget each session unless it was seen
    again meanwhile. Every outcome goes to the harness event log."""
    from autopoiesis.integrations.codex.hooks import find_rollout
    from autopoiesis.memory import Memory

    memory = Memory(repo)
    registry = SessionRegistry(repo)
    log = harness_log(repo)
    outcomes = []
    with repo.lock("harness-import"):
        for key in keys:
            seen = registry.get(key)
            if seen is None:
                continue  # imported by another worker meanwhile
            path = seen.path
            if seen.harness == "codex" and not path:
                found = find_rollout(seen.session)
                path = str(found) if found else None
            if not path or not Path(path).is_file():
                # a folder, a pipe or a device the payload named is there, but no log
                what = "is no regular file" if path and Path(path).exists() else "is not there"
                outcome = ImportOutcome(
                    key, path, refused=(f"the session's log file {path or '(unknown)'} {what}",)
                )
            else:
                outcome = _import_one(memory, seen, key, Path(path))
            if not outcome.retry:
                registry.forget(key, seen=seen.seen)
            log.append(
                {
                    "harness": seen.harness,
                    "event": "import",
                    "session": seen.session,
                    "path": path,
                    "ok": not outcome.refused,
                    "imported": list(outcome.imported),
                    "already": list(outcome.already),
                    "refused": list(outcome.refused),
                    **({"retry": True} if outcome.retry else {}),
                }
            )
            outcomes.append(outcome)
    return outcomes


def _import_one(memory: Any, seen: SeenSession, key: str, path: Path) -> ImportOutcome:
    """Import the session SEEN (its log PATH), then run the session-end extraction on what
    was filed. A write that failed (a full disk: an OSError, or a refusal the report marks
    temporary) is an outcome to retry, not a reason to give the session up."""
    try:
        report = memory.import_files(_session_files(seen, path))
    except OSError as exc:
        return ImportOutcome(key, str(path), refused=(f"{path}: {exc}",), retry=True)
    extract = memory.after_commit() if report.commit else None
    for rel in report.imported:
        if extract is not None:
            extract(rel)
    return ImportOutcome(
        key,
        str(path),
        tuple(report.imported),
        tuple(report.skipped_duplicates),
        tuple(report.refused),
        retry=bool(report.temporary),
    )


def _session_files(seen: SeenSession, path: Path) -> list[Path]:
    """The log files of a session: its own, and for Claude Code its subagents' too."""
    if seen.harness == "claude-code":
        from autopoiesis.integrations.claude_code.locations import session_files

        return session_files(path, seen.session, seen.data.get("subagents") or ())
    return [path]
