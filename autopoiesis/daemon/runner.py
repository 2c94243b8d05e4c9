"""Run one job in a process of its own, so that it can be killed.

A thread cannot be killed, and a job can hang anywhere: in a model's answer, in git
waiting on a hook, on a dead network file system. So every run is a child process
(forked: it starts in milliseconds and inherits the registry, so a job is any function)
in a session of its own: at its timeout the whole process group (the job and the git or
hook processes it started) gets SIGTERM, and SIGKILL after a grace period. The other
runs go on. The child hands its JobOutcome back over a pipe. A child ends with the daemon
(`_die_with`): after a `kill -9` of the daemon, the next one reruns the job alone.

The daemon's main process stays single-threaded, which is what makes fork safe here.
Where fork is missing, the spawn method is used (the job must then be a module-level
function).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from autopoiesis.daemon.jobs import JobContext, JobFunction, JobOutcome
from autopoiesis.errors import AutopoiesisError

KILL_GRACE_SECONDS = 5.0


def _context() -> Any:
    methods = mp.get_all_start_methods()
    return mp.get_context("fork" if "fork" in methods else "spawn")


def _die_with(parent: int) -> None:
    """SIGTERM this process when PARENT (the daemon) dies, however it dies: a job left
    running by a daemon killed with -9 would run beside the next daemon's rerun of it.
    Linux's parent-death signal where there is one, else a thread that watches."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGTERM, 0, 0, 0) == 0:  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # it died before the signal was asked for
                os.kill(os.getpid(), signal.SIGTERM)
            return
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _child(
    fn: JobFunction, ctx: JobContext, conn: Connection, close_fds: Sequence[int], parent: int
) -> None:
    """The child's body: a session of its own, the parent's signal set-up undone and its
    descriptors (the instance lock, the event loop's) closed, ended with its parent, then
    the job."""
    try:
        os.setsid()
    except OSError:
        pass
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)

    def terminated(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:  # the job's own children (git, hooks) end with it, whoever asked
            os.killpg(0, signal.SIGTERM)
        except OSError:
            pass
        raise SystemExit(128 + signum)  # unwinds: locks released, temporary files removed

    signal.signal(signal.SIGTERM, terminated)
    _die_with(parent)
    for fd in close_fds:
        try:
            os.close(fd)  # closing (not unlocking) keeps the parent's flock held
        except OSError:
            pass
    result: dict[str, Any]
    try:
        outcome = fn(ctx)
        if outcome is None:
            outcome = JobOutcome()
        if not isinstance(outcome, JobOutcome):
            raise TypeError(f"job {ctx.job} returned {type(outcome).__name__}, not a JobOutcome")
        result = {"result": "ok" if outcome.changed else "idle", "outcome": outcome}
    except AutopoiesisError as exc:
        result = {"result": "failed", "error": str(exc)}
    except SystemExit as exc:
        result = {"result": "failed", "error": f"terminated (exit {exc.code})"}
    except BaseException as exc:  # a bug in a job must not take the daemon down: reported
        result = {
            "result": "failed",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-4000:],
        }
    try:
        try:
            conn.send(result)
        except (BrokenPipeError, OSError):
            # the daemon is gone (killed): the next one reruns this run, as it was never recorded
            pass
        except Exception:  # an outcome that cannot be pickled: say so rather than nothing
            conn.send(
                {
                    "result": "failed",
                    "error": "the job's outcome could not be sent back (not picklable)",
                }
            )
    except OSError:
        pass
    finally:
        conn.close()


@dataclass
class ChildRun:
    """A job running in a child process."""

    name: str
    process: Any  # multiprocessing.Process
    conn: Connection
    started: float  # time.monotonic()
    deadline: float  # time.monotonic() at which it is killed
    reason: str
    result: dict[str, Any] | None = None
    killed: str | None = None  # why it was killed: "timeout" | "shutdown"
    term_sent_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    @property
    def sentinel(self) -> int:
        return int(self.process.sentinel)

    def poll_result(self) -> None:
        """Read the child's result if it has sent it (never blocks)."""
        if self.result is None:
            try:
                if self.conn.poll():
                    self.result = self.conn.recv()
            except (EOFError, OSError):
                pass

    def done(self) -> bool:
        return not self.process.is_alive()

    def terminate(self, why: str) -> None:
        """SIGTERM to the job's process group (SIGKILL follows from `enforce` after the grace)."""
        if self.killed is None:
            self.killed = why
        if self.term_sent_at is None:
            self.term_sent_at = time.monotonic()
            _signal_group(self.pid, signal.SIGTERM)

    def enforce(self, now: float) -> None:
        """Kill what outlived its deadline or its grace."""
        if not self.process.is_alive():
            return
        if self.term_sent_at is None and now >= self.deadline:
            self.terminate("timeout")
        elif self.term_sent_at is not None and now >= self.term_sent_at + KILL_GRACE_SECONDS:
            _signal_group(self.pid, signal.SIGKILL)

    def finish(self) -> tuple[str, JobOutcome | None, str]:
        """(result, outcome, message) once the child has ended; reaps it."""
        self.poll_result()
        self.process.join(timeout=1)
        try:
            self.conn.close()
        except OSError:
            pass
        # the job's own children (git, hooks) die with it
        _signal_group(self.pid, signal.SIGKILL)
        if self.killed == "timeout":
            return (
                "timeout",
                None,
                f"killed after {self.deadline - self.started:.0f} s (its timeout)",
            )
        if self.killed == "shutdown":
            return "interrupted", None, "stopped by the daemon's shutdown"
        if self.result is None:
            code = self.process.exitcode
            return "failed", None, f"the job's process died (exit {code}) without a result"
        outcome = self.result.get("outcome")
        if self.result.get("result") in ("ok", "idle"):
            return str(self.result["result"]), outcome, outcome.message if outcome else ""
        return "failed", None, str(self.result.get("error") or "failed")


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)  # it had no group of its own yet
        except (ProcessLookupError, PermissionError):
            pass


def start_child(
    fn: JobFunction, ctx: JobContext, timeout: float, *, close_fds: Sequence[int] = ()
) -> ChildRun:
    """Start FN(CTX) in a child process, to be killed after TIMEOUT seconds."""
    mpctx = _context()
    parent_conn, child_conn = mpctx.Pipe(duplex=False)
    proc = mpctx.Process(
        target=_child,
        args=(fn, ctx, child_conn, tuple(close_fds), os.getpid()),
        name=f"autopoiesis-job-{ctx.job}",
    )
    proc.daemon = False  # a job's own children (git) must be allowed
    proc.start()
    child_conn.close()
    now = time.monotonic()
    return ChildRun(ctx.job, proc, parent_conn, now, now + timeout, ctx.reason)


def run_child(
    fn: JobFunction, ctx: JobContext, timeout: float
) -> tuple[str, JobOutcome | None, str, float]:
    """Run FN(CTX) in a child and wait for it (killed at TIMEOUT): (result, outcome,
    message, seconds). What a caller without an event loop uses."""
    run = start_child(fn, ctx, timeout)
    while True:
        run.poll_result()
        if run.done():
            break
        run.enforce(time.monotonic())
        mp.connection.wait([run.sentinel, run.conn], timeout=0.2)
    result, outcome, message = run.finish()
    return result, outcome, message, time.monotonic() - run.started
