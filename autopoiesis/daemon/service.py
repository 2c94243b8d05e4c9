"""The daemon: one process per memory repo that runs the jobs of a registry
(docs/design.md#daemon-design).

    Daemon(repo, make_registry).run()          # `autopoiesis daemon run` (what systemd starts)
    Daemon(repo, make_registry, once=True).run()   # `autopoiesis run-due` (for cron)

One main process, single-threaded, around one wait: the signal pipe, the children's
pipes and exit sentinels, and (on Linux) inotify on the folders whose events a job
listens to. It wakes when something happens or when the next job is due, and at least
once a minute to refresh the status file, so an idle daemon costs next to nothing.

* Each run is a child process (runner.py), killed at its job's timeout; the others go on.
* SIGTERM (and SIGINT) checkpoint and exit: the running jobs are asked to stop (SIGTERM,
  then SIGKILL after a grace), their runs are recorded as interrupted and owed at the
  next start, the state and the status are written, the lock is released.
* SIGHUP reloads memory-config.yaml and the registry; a config that does not load is
  reported in the log and the old one kept.
* Given a SERVE handler (`autopoiesis daemon run` passes the CLI's), it answers CLI calls
  warm on a Unix socket in the same wait (serve.py): `search`, `compile` and the harness
  hooks then skip Python's start-up and imports.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import wait as wait_for
from pathlib import Path
from typing import Any, Protocol

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import counted
from autopoiesis.daemon.jobs import KNOWLEDGE_CHANGED, TRANSCRIPTS_CHANGED, JobContext, JobRegistry
from autopoiesis.daemon.runner import ChildRun, start_child
from autopoiesis.daemon.scheduler import Scheduler, StateStore
from autopoiesis.daemon.status import InstanceLock, daemon_log, write_status
from autopoiesis.errors import AutopoiesisError

RegistryFactory = Callable[[MemoryRepo], JobRegistry]
MAX_WAIT_SECONDS = 60.0  # the longest sleep: the status heartbeat, and a bound on clock jumps
EVENT_SETTLE_SECONDS = 20.0  # a folder's events are raised once it was quiet this long ...
EVENT_MAX_DELAY_SECONDS = 300.0  # ... or at the latest this long after the first
SHUTDOWN_GRACE_SECONDS = 15.0

# the folders whose changes raise an event, by event
WATCHED_FOLDERS = {
    TRANSCRIPTS_CHANGED: ("raw/conversations",),
    KNOWLEDGE_CHANGED: ("knowledge", "topics"),
}


class FolderEvents:
    """inotify on the folders of the events some job listens to; None where unavailable
    (not Linux, no inotify_simple, no watches left: the schedules still run)."""

    def __init__(self, root: Path, kinds: set[str]):
        from inotify_simple import INotify, flags

        self.flags = flags
        self.inotify = INotify()
        self.mask = (
            flags.CLOSE_WRITE | flags.MOVED_TO | flags.CREATE | flags.DELETE | flags.MOVED_FROM
        )
        self.kind_of: dict[int, str] = {}
        self.roots = {root / rel: kind for kind in kinds for rel in WATCHED_FOLDERS.get(kind, ())}
        for folder, kind in self.roots.items():
            self._add_tree(folder, kind)

    @classmethod
    def start(cls, root: Path, kinds: set[str]) -> FolderEvents | None:
        kinds = kinds & set(WATCHED_FOLDERS)
        if not kinds:
            return None
        try:
            return cls(root, kinds)
        except (ImportError, OSError, AttributeError):
            return None

    def _add_tree(self, folder: Path, kind: str) -> None:
        if not folder.is_dir():
            return
        for dirpath, dirnames, _ in os.walk(folder):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            try:
                wd = self.inotify.add_watch(dirpath, self.mask)
            except OSError:
                continue
            self.kind_of[wd] = kind

    def fileno(self) -> int:
        return int(self.inotify.fileno())

    def read(self) -> set[str]:
        """The kinds of event that happened since the last read (new folders get watched)."""
        kinds: set[str] = set()
        try:
            events = self.inotify.read(timeout=0)
        except OSError:
            return kinds
        for ev in events:
            kind = self.kind_of.get(ev.wd)
            if kind is None:
                continue
            if ev.mask & self.flags.ISDIR and ev.mask & (self.flags.CREATE | self.flags.MOVED_TO):
                for folder, k in self.roots.items():
                    if k == kind:
                        self._add_tree(
                            folder, kind
                        )  # the new date folder, and what it holds (watching twice is harmless)
            if ev.name.startswith(".") and not ev.mask & self.flags.MOVED_TO:
                continue  # atomic_write's temporary file; its rename (MOVED_TO) counts
            kinds.add(kind)
        return kinds

    def close(self) -> None:
        try:
            self.inotify.close()
        except OSError:
            pass


class CallServer(Protocol):
    """The socket that answers CLI calls warm (fastpath.server.WarmServer), waited on in
    the daemon's one loop. The daemon is given a way to start one (`serve`), so this
    package never imports the entry points that run a call."""

    path: Path
    served: int

    def waitables(self) -> list[Any]: ...
    def fds(self) -> list[int]: ...
    def next_deadline(self) -> float | None: ...
    def handle(self, ready: list[Any]) -> None: ...
    def close(self) -> None: ...


Note = Callable[..., None]  # Daemon.note(event, job, **fields)
StartServer = Callable[[MemoryRepo, Note], "CallServer | None"]


@dataclass
class _Pending:
    first: float
    last: float


class Daemon:
    def __init__(
        self,
        repo: MemoryRepo,
        make_registry: RegistryFactory,
        *,
        clock: Callable[[], datetime] = utc_now,
        once: bool = False,
        max_parallel: int = 4,
        echo: Callable[[str], None] | None = None,
        serve: StartServer | None = None,
    ):
        self.repo = repo
        self.make_registry = make_registry
        self.clock = clock
        self.once = once
        self.max_parallel = max(1, max_parallel)
        self.echo = echo
        self.serve = serve
        self._server: CallServer | None = None
        self.log = daemon_log(repo)
        self.children: dict[str, ChildRun] = {}
        self.scheduler: Scheduler | None = None
        self.started_at = utc_now()
        self._signals: list[int] = []
        self._stopping = False
        self._events: dict[str, _Pending] = {}
        self._folders: FolderEvents | None = None
        self._wake_r = self._wake_w = -1
        self._dirty = True
        self._last_status = 0.0
        self._root_id: tuple[int, int] | None = None  # the repo folder's (st_dev, st_ino)
        self._repo_gone = False
        self.results: list[
            tuple[str, str, str]
        ] = []  # (job, result, message) of every run, for run-due

    # ── logging ──
    def note(self, event: str, job: str | None = None, **fields: Any) -> None:
        row = {"job": job, "event": event, **{k: v for k, v in fields.items() if v is not None}}
        try:
            if not self._repo_gone:  # its log went with it; appending would make a ghost
                self.log.append(row)
        except OSError:
            pass  # a full disk must not stop the jobs
        if self.echo is not None:
            from autopoiesis.daemon.status import format_log_row

            self.echo(format_log_row({"ts": format_ts(utc_now()), **row}))

    # ── the loop ──
    def run(self) -> int:
        lock = InstanceLock(self.repo, "run-due" if self.once else "daemon")
        lock.acquire()
        self._root_id = self._folder_id()
        try:
            registry = self.make_registry(self.repo)
            self.scheduler = Scheduler(
                registry, StateStore(self.repo.state_file("daemon_state")), clock=self.clock
            )
            self._install_signals()
            if not self.once:
                self._folders = FolderEvents.start(self.repo.root, registry.event_kinds())
                if self.serve is not None:
                    self._server = self.serve(self.repo, self.note)
            self.note(
                "started",
                pid=os.getpid(),
                mode="run-due" if self.once else "daemon",
                jobs=registry.names(),
                file_events="inotify" if self._folders else "none",
                serving=str(self._server.path) if self._server else None,
            )
            for name in self.scheduler.interrupted_runs():
                self.note(
                    "interrupted",
                    name,
                    message="the last daemon stopped while this job ran; it runs again",
                )
            self._loop(lock)
            return 0
        finally:
            self._shutdown()
            lock.release()

    def _loop(self, lock: InstanceLock) -> None:
        assert self.scheduler is not None
        while True:
            if self._folder_id() != self._root_id:
                # moved or deleted: taking the lock again (or reloading) would make a ghost
                # .autopoiesis/ at the old path, and the jobs would run on no memory
                self._repo_gone = True
                return
            self._handle_signals()
            if self._stopping:
                return
            if not lock.still_held() and not lock.reclaim():
                # its file was deleted and another daemon took a new one: one is enough
                self.note(
                    "stopped",
                    message="the daemon lock's file was deleted and another daemon took it; "
                    "this one stops (`autopoiesis daemon status` shows the one that runs)",
                )
                return
            close_fds = [fd for fd in (lock.fd, self._wake_r, self._wake_w) if fd >= 0]
            self._reap()
            self._flush_events()
            started = self._start_due(
                [
                    *close_fds,
                    *([self._folders.fileno()] if self._folders else []),
                    *(self._server.fds() if self._server else []),
                ]
            )
            if self.once and not self.children and not started:
                return
            self._publish_status()
            ready = self._wait(self._wait_seconds())
            if self._server is not None:
                self._server.handle(
                    ready
                )  # the served count reaches the status with the next heartbeat
            if self._folders is not None:
                now = time.monotonic()
                for kind in self._folders.read():
                    pend = self._events.setdefault(kind, _Pending(now, now))
                    pend.last = now

    def _folder_id(self) -> tuple[int, int] | None:
        """(st_dev, st_ino) of the folder at the repo's path now; None when there is none."""
        try:
            st = os.stat(self.repo.root)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _wait_seconds(self) -> float:
        assert self.scheduler is not None
        limit = MAX_WAIT_SECONDS
        nxt = self.scheduler.next_wakeup(self.children)
        if nxt is not None:
            limit = min(limit, (nxt - self.clock()).total_seconds())
        now = time.monotonic()
        for run in self.children.values():
            limit = min(limit, (run.term_sent_at + 5.5 if run.term_sent_at else run.deadline) - now)
        for pend in self._events.values():
            limit = min(
                limit,
                pend.last + EVENT_SETTLE_SECONDS - now,
                pend.first + EVENT_MAX_DELAY_SECONDS - now,
            )
        if self._server is not None and (deadline := self._server.next_deadline()) is not None:
            limit = min(limit, deadline - now)
        return max(0.05, limit)

    def _wait(self, seconds: float) -> list[Any]:
        """Wait until something is ready or SECONDS pass; what is ready."""
        objects: list[Any] = [self._wake_r] if self._wake_r >= 0 else []
        if self._folders is not None:
            objects.append(self._folders.fileno())
        if self._server is not None and not self._stopping:
            objects.extend(self._server.waitables())
        for run in self.children.values():
            objects.append(run.sentinel)
            if run.result is None:
                objects.append(run.conn)
        try:
            ready = wait_for(objects, timeout=seconds)
        except InterruptedError:
            ready = []
        if self._wake_r in ready:
            try:
                while os.read(self._wake_r, 512):
                    pass
            except (BlockingIOError, InterruptedError):
                pass
        return ready

    # ── jobs ──
    def _start_due(self, close_fds: list[int]) -> int:
        assert self.scheduler is not None
        count = 0
        for due in self.scheduler.due(self.children):
            if len(self.children) >= self.max_parallel:
                break
            job = due.job
            st = self.scheduler.started(job.name, due.reason)
            ctx = JobContext(
                self.repo,
                job.name,
                due.reason,
                st.running_since or self.clock(),
                st.last_run,
                job.token_budget,
                due.events,
                st.first_seen,
            )
            try:
                run = start_child(job.run, ctx, job.timeout, close_fds=close_fds)
            except OSError as exc:  # no process could be started (out of memory, pids)
                self.scheduler.finished(
                    job.name, "failed", message=f"could not start its process: {exc}"
                )
                self.note("failed", job.name, message=f"could not start its process: {exc}")
                continue
            self.children[job.name] = run
            if not job.quiet:
                self.note("started", job.name, reason=due.reason, pid=run.pid)
            self._dirty = True
            count += 1
        return count

    def _reap(self) -> None:
        assert self.scheduler is not None
        now = time.monotonic()
        for name, run in list(self.children.items()):
            run.poll_result()
            if not run.done():
                before = run.killed
                run.enforce(now)
                if run.killed == "timeout" and before is None:
                    self.note(
                        "timeout",
                        name,
                        message="still running after its timeout of "
                        f"{run.deadline - run.started:.0f} s: killed",
                        pid=run.pid,
                    )
                continue
            result, outcome, message = run.finish()
            del self.children[name]
            follow = (
                self.scheduler.finished(name, result, outcome, message=message)
                if name in self.scheduler.registry
                else []
            )
            st = self.scheduler.state(name)
            fields: dict[str, Any] = {
                "result": result,
                "message": message,
                "seconds": round(time.monotonic() - run.started, 3),
            }
            if outcome is not None and outcome.data:
                fields["data"] = outcome.data
            if st.retry_at is not None:
                fields["retry_at"] = format_ts(st.retry_at)
            if follow:
                fields["next"] = follow
            if run.result and run.result.get("traceback"):
                fields["traceback"] = run.result["traceback"]
            quiet = name in self.scheduler.registry and self.scheduler.registry.get(name).quiet
            if quiet:
                fields["reason"] = run.reason
            if not (quiet and result == "idle"):
                self.note("finished" if result in ("ok", "idle") else result, name, **fields)
            self.results.append((name, result, message))
            self._dirty = True

    def _flush_events(self) -> None:
        assert self.scheduler is not None
        now = time.monotonic()
        for kind, pend in list(self._events.items()):
            if (
                now - pend.last >= EVENT_SETTLE_SECONDS
                or now - pend.first >= EVENT_MAX_DELAY_SECONDS
            ):
                del self._events[kind]
                names = self.scheduler.raise_event(kind)
                self.note("event", None, kind=kind, next=names)
                self._dirty = True

    def raise_event(self, event: str) -> list[str]:
        """Raise EVENT now (what a file change does after it settles)."""
        assert self.scheduler is not None
        return self.scheduler.raise_event(event)

    # ── status ──
    def _publish_status(self, state: str = "running") -> None:
        if self.scheduler is None:
            return
        now = time.monotonic()
        if (
            not self._dirty
            and now - self._last_status < MAX_WAIT_SECONDS - 1
            and state == "running"
        ):
            return
        self._dirty = False
        self._last_status = now
        try:
            write_status(
                self.repo,
                {
                    "pid": os.getpid(),
                    "state": state,
                    "mode": "run-due" if self.once else "daemon",
                    "started": format_ts(self.started_at),
                    "updated": format_ts(utc_now()),
                    "repo": str(self.repo.root),
                    "jobs": self.scheduler.snapshot(self.children),
                    "served": self._server.served if self._server is not None else None,
                },
            )
        except OSError:
            pass

    # ── signals ──
    def _install_signals(self) -> None:
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)

        def record(signum: int, frame: object) -> None:
            self._signals.append(signum)

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, record)

    def _handle_signals(self) -> None:
        while self._signals:
            sig = self._signals.pop(0)
            if sig == signal.SIGHUP:
                self.reload()
            else:
                self.note(
                    "stopping",
                    None,
                    signal=signal.Signals(sig).name,
                    message=f"checkpointing {counted(len(self.children), 'running job')}"
                    if self.children
                    else "",
                )
                self._stopping = True

    def reload(self) -> bool:
        """Re-read memory-config.yaml and rebuild the registry; keep the old on an error."""
        assert self.scheduler is not None
        from autopoiesis.core.config import check_tracked_config
        from autopoiesis.errors import ConfigError

        try:
            unusable = check_tracked_config(self.repo.root)  # strict: loading falls back
            if unusable:
                raise ConfigError(unusable)
            repo = MemoryRepo(self.repo.root)
            registry = self.make_registry(repo)
        except AutopoiesisError as exc:
            self.note(
                "reload_failed", None, message=f"{exc} (the previous configuration stays in force)"
            )
            return False
        old = set(self.scheduler.registry.names())
        self.repo = repo
        self.scheduler.registry = registry
        now = self.clock()
        for job in registry:
            st = self.scheduler.state(job.name)
            if st.first_seen is None:
                st.first_seen = now
        self.scheduler.store.save()
        if self._folders is not None:
            self._folders.close()
        self._folders = None if self.once else FolderEvents.start(repo.root, registry.event_kinds())
        self.note(
            "reloaded",
            None,
            jobs=registry.names(),
            added=sorted(set(registry.names()) - old),
            removed=sorted(old - set(registry.names())),
        )
        self._dirty = True
        return True

    # ── the end ──
    def _shutdown(self) -> None:
        if self._repo_gone and self.scheduler is not None:
            self.scheduler.store.path = None  # the runs cut short are not recorded anywhere
        if self._server is not None:
            # first: a call now runs in its own process, not in a daemon that is leaving
            self._server.close()
        if self.children:
            for run in self.children.values():
                run.terminate("shutdown")
            deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
            while self.children and time.monotonic() < deadline:
                self._reap()
                if self.children:
                    self._wait(0.2)
            for run in self.children.values():  # past every grace: gone for good
                run.enforce(time.monotonic() + SHUTDOWN_GRACE_SECONDS)
            self._reap()
        if self._repo_gone:  # said on stderr (the journal, daemon.out): its log went with it
            print(
                f"the memory repo {self.repo.root} was moved or deleted; the daemon stops "
                "(`autopoiesis daemon start` in its new place starts one there)",
                file=sys.stderr,
                flush=True,
            )
        else:
            self._publish_status("stopped")
            if self.scheduler is not None:
                self.note("stopped", None, mode="run-due" if self.once else "daemon")
        if self._folders is not None:
            self._folders.close()
        if self._wake_w >= 0:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1


def run_due(
    repo: MemoryRepo,
    make_registry: RegistryFactory,
    *,
    echo: Callable[[str], None] | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> list[tuple[str, str, str]]:
    """Run every job that is due, and what they start in turn, then return (job, result,
    message) of each run: `autopoiesis run-due`, for people who prefer cron."""
    daemon = Daemon(repo, make_registry, once=True, echo=echo, clock=clock)
    daemon.run()
    return daemon.results
