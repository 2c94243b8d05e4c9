"""The session watcher: imports the session logs of agent harnesses once they have ended
(docs/design.md#daemon-design's session watcher; a daemon job, and `autopoiesis watch-sessions
--once`).

It watches globs (daemon.session_globs; by default every harness's own locations, which
each harness's package declares: integrations.locations). A session has ended when its
file has been idle for daemon.session_idle_minutes and no process has it open
(/proc/*/fd on Linux; psutil where it is installed; `lsof` elsewhere). Ended files are
imported through the importers (capture.importers.import_files), one file at a time,
each committed.

A record of every file (`daemon/sessions.json`: path, size, mtime, sha-256 of what was
imported, what it became) makes the watcher restart-safe: a file whose size and mtime
are what the record says is not even read; one whose content hash is the recorded one
is not imported again; one that changed (a resumed session) is imported again once it
is idle (the importers make that continuation-safe). A file no importer could read is
retried only when it changes, or when the set of importers does; one whose import could
not be written (a full disk: status `failed`) is tried again at every scan.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.paths import MemoryRepo, atomic_write
from autopoiesis.core.text import counted

MAX_IMPORTS_PER_SCAN = 25  # a first scan of a long history is spread over several runs
# An import that never came back (its process killed: out of memory on a file of
# gigabytes, the job's timeout, a crash) is tried this many times, then the file is
# refused until it changes: the file first in the scan's order would otherwise kill
# every scan before the files after it were reached.
MAX_CUT_SHORT_IMPORTS = 2


@dataclass
class WatchReport:
    seen: int = 0
    waiting: list[str] = field(default_factory=list)  # not ended yet (written recently, or open)
    imported: list[tuple[str, list[str]]] = field(
        default_factory=list
    )  # (session file, transcripts)
    unchanged: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)  # (session file, why)
    more: bool = False  # ended files were left for the next scan (MAX_IMPORTS_PER_SCAN)
    next_check: datetime | None = None  # when a waiting file may have ended

    def summary(self) -> str:
        parts = [
            f"{counted(self.seen, 'session file')} seen",
            f"{len(self.imported)} imported",
            f"{len(self.waiting)} still active",
            f"{self.unchanged} unchanged",
        ]
        if self.refused:
            parts.append(f"{len(self.refused)} refused")
        if self.more:
            parts.append("more to import in the next scan")
        return ", ".join(parts)


def _expand(pattern: str) -> str:
    return os.path.expandvars(os.path.expanduser(pattern))


def matching_files(globs: Iterable[str]) -> list[Path]:
    """The regular files the globs match (`**` spans folders), each once, sorted."""
    out: set[str] = set()
    for pattern in globs:
        for hit in _glob(_expand(pattern)):
            if os.path.isfile(hit):
                out.add(os.path.realpath(hit))
    return [Path(p) for p in sorted(out)]


def _glob(pattern: str) -> Iterable[str]:
    """glob.iglob(PATTERN, recursive=True), except that `**` enters each folder once: it
    follows a symlinked folder (a harness folder linked elsewhere is still watched) but not
    back into one already walked. glob's own `**` follows every link, so two links to
    their parent under a watched folder (`a/l1 -> ..`, `a/l2 -> ..`) made it walk 2^40
    paths, and the watcher never finished a scan."""
    parts = pattern.split(os.sep)
    if "**" not in parts:
        yield from glob.iglob(pattern)
        return
    at = parts.index("**")
    head, rest = os.sep.join(parts[:at]), os.sep.join(parts[at + 1 :])
    bases = glob.iglob(head) if glob.has_magic(head) else [head or os.curdir]
    for base in bases:
        walked: set[tuple[int, int]] = set()
        for folder, subfolders, files in os.walk(base, followlinks=True):
            try:
                st = os.stat(folder)
            except OSError:
                subfolders[:] = []
                continue
            if (st.st_dev, st.st_ino) in walked:
                subfolders[:] = []
                continue
            walked.add((st.st_dev, st.st_ino))
            subfolders[:] = [d for d in subfolders if not d.startswith(".")]  # as glob's `**`
            if rest:
                yield from _glob(os.path.join(glob.escape(folder), rest))
            else:
                yield folder
                yield from (os.path.join(folder, f) for f in files if not f.startswith("."))


def open_files(candidates: set[str]) -> set[str]:
    """Which of CANDIDATES (real paths) some process has open."""
    if not candidates:
        return set()
    proc = Path("/proc")
    if (proc / "self" / "fd").is_dir():
        found: set[str] = set()
        for pid_dir in proc.iterdir():
            if not pid_dir.name.isdigit():
                continue
            try:
                fds = os.listdir(pid_dir / "fd")
            except OSError:  # gone, or not ours to look at
                continue
            for fd in fds:
                try:
                    target = os.readlink(pid_dir / "fd" / fd)
                except OSError:
                    continue
                if target in candidates:
                    found.add(target)
        return found
    try:
        import psutil  # optional: where there is no /proc
    except ImportError:
        psutil = None
    if psutil is not None:
        found = set()
        for p in psutil.process_iter():
            try:
                found |= {f.path for f in p.open_files()} & candidates
            except (psutil.Error, OSError):
                continue
        return found
    lsof = shutil.which("lsof")
    if lsof:
        out = subprocess.run(
            [lsof, "-Fn", "--", *sorted(candidates)], capture_output=True, text=True, timeout=60
        ).stdout
        return {
            line[1:] for line in out.splitlines() if line.startswith("n") and line[1:] in candidates
        }
    return set()


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class SessionRecord:
    """What the watcher knows of each session file (a JSON state file)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        files = data.get("files") if isinstance(data, dict) else None
        self.files: dict[str, dict[str, Any]] = {
            k: v for k, v in (files or {}).items() if isinstance(v, dict)
        }

    def save(self) -> None:
        atomic_write(self.path, json.dumps({"files": self.files}, indent=0, sort_keys=True))


class SessionWatcher:
    def __init__(
        self,
        repo: MemoryRepo,
        *,
        globs: Iterable[str] | None = None,
        idle_minutes: float | None = None,
        clock: Callable[[], datetime] = utc_now,
        importer: Callable[..., Any] | None = None,
        max_imports: int = MAX_IMPORTS_PER_SCAN,
    ):
        cfg = repo.config.daemon
        self.repo = repo
        self.globs = tuple(cfg.session_globs if globs is None else globs)
        self.idle = timedelta(
            minutes=cfg.session_idle_minutes if idle_minutes is None else idle_minutes
        )
        self.clock = clock
        self._import = importer
        self.max_imports = max_imports
        self.record = SessionRecord(repo.state_file("session_watch"))

    def _importer(self) -> Callable[..., Any]:
        if self._import is None:
            from autopoiesis.capture.importers import import_files

            self._import = import_files
        return self._import

    def _redact(self, text: str) -> str:
        """An error as the record keeps it: redacted like everything written, and short."""
        return self.repo.redactor().redact(text[:1000])

    @staticmethod
    def _formats() -> str:
        from autopoiesis.capture.importers import format_names

        return ",".join(sorted(format_names()))

    def scan(self) -> WatchReport:
        """Import every session file that has ended and is not imported as it is now."""
        report = WatchReport()
        now = self.clock()
        files = matching_files(self.globs)
        report.seen = len(files)
        ended: list[tuple[Path, os.stat_result]] = []
        for path in files:
            try:
                st = path.stat()
            except OSError:
                continue
            known = self.record.files.get(str(path))
            if (
                known
                and known.get("size") == st.st_size
                and known.get("mtime_ns") == st.st_mtime_ns
            ):
                # a refusal stands until autopoiesis reads more formats; a write that
                # failed (a full disk) is tried again at every scan
                status = known.get("status")
                if status == "imported" or (
                    status == "refused" and known.get("formats") == self._formats()
                ):
                    report.unchanged += 1
                    continue
                if status == "importing" and known.get("attempts", 0) >= MAX_CUT_SHORT_IMPORTS:
                    why = (
                        f"{path}: its import was cut short {known['attempts']} times (the "
                        "process was killed: out of memory, `daemon.job_timeout_minutes`, a "
                        "crash); the watcher takes it again when it changes. `autopoiesis "
                        "import` reads it by hand."
                    )
                    self.record.files[str(path)] = {
                        **known,
                        "status": "refused",
                        "error": why,
                        "formats": self._formats(),
                    }
                    report.refused.append((str(path), why))
                    continue
            idle_since = datetime.fromtimestamp(st.st_mtime, tz=now.tzinfo)
            if now - idle_since < self.idle:
                report.waiting.append(str(path))
                wake = idle_since + self.idle
                report.next_check = (
                    wake if report.next_check is None else min(report.next_check, wake)
                )
                continue
            ended.append((path, st))
        busy = open_files({str(p) for p, _ in ended})
        for path, st in ended:
            if str(path) in busy:
                report.waiting.append(str(path))
                wake = now + self.idle
                report.next_check = (
                    wake if report.next_check is None else min(report.next_check, wake)
                )
                continue
            if len(report.imported) + len(report.refused) >= self.max_imports:
                report.more = True
                break
            try:
                self._take(path, st, report)
            except (
                Exception
            ) as exc:  # one unreadable file must not stop the others (nor every later scan)
                why = self._redact(f"{type(exc).__name__}: {exc}")
                self.record.files[str(path)] = {
                    "size": st.st_size,
                    "mtime_ns": st.st_mtime_ns,
                    "status": "failed" if isinstance(exc, OSError) else "refused",
                    "error": why,
                    "formats": self._formats(),
                }
                report.refused.append((str(path), why))
        for key in [k for k in self.record.files if not os.path.exists(k)]:
            del self.record.files[key]  # deleted session files: nothing left to import
        self.record.save()
        return report

    def _take(self, path: Path, st: os.stat_result, report: WatchReport) -> None:
        key = str(path)
        known = self.record.files.get(key) or {}
        digest = file_hash(path)
        entry = {
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "sha256": digest,
            "checked": format_ts(self.clock()),
        }
        if known.get("sha256") == digest and known.get("status") == "imported":
            self.record.files[key] = {**known, **entry}  # touched, same content: nothing new
            report.unchanged += 1
            return
        # recorded before the import starts: a scan after one that died in it knows
        # (MAX_CUT_SHORT_IMPORTS)
        cut_short = known.get("status") == "importing" and (
            (known.get("size"), known.get("mtime_ns")) == (st.st_size, st.st_mtime_ns)
        )
        self.record.files[key] = {
            **known,
            **entry,
            "status": "importing",
            "attempts": known.get("attempts", 0) + 1 if cut_short else 1,
        }
        self.record.save()
        result = self._importer()(self.repo, [path])
        transcripts = list(result.imported) + list(result.skipped_duplicates)
        if result.temporary or (result.refused and not transcripts):
            why = self._redact("; ".join(result.refused))
            self.record.files[key] = {
                **entry,
                "status": "failed" if result.temporary else "refused",
                "error": why,
                "formats": self._formats(),
            }
            report.refused.append((key, why))
            return
        self.record.files[key] = {
            **entry,
            "status": "imported",
            "transcripts": transcripts[:50],
            "commit": result.commit,
            "imported_at": format_ts(self.clock()),
            **({"error": self._redact("; ".join(result.refused))} if result.refused else {}),
        }
        if result.imported:
            report.imported.append((key, list(result.imported)))
        else:
            report.unchanged += 1
        self.record.save()  # one file at a time: a kill loses at most the file in hand
