"""The processes behind `.git/index.lock` (git/commits.py's lock recovery): an identity of
a live process that survives pid reuse, whether a recorded process still runs, and
stopping a git child so that it removes its own lock."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def process_start(pid: int) -> str | None:
    """An identity of the live process PID that survives pid reuse (its start time, from
    /proc), "" where /proc is missing but the process exists, None when it is gone or a
    zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return ""
        return ""
    except OSError:
        return ""
    rest = stat[stat.rfind(")") + 2 :].split()
    if not rest or rest[0] in ("Z", "X"):
        return None
    return rest[19] if len(rest) > 19 else ""


GIT_STOP_GRACE = 3.0  # seconds a stopped git gets to remove its own lock before SIGKILL


def stop_git(child: subprocess.Popen[str]) -> None:
    """End the git CHILD of a process that is being stopped: SIGTERM first, which git
    answers by removing the lock files it holds (its hooks get it too, from the process
    group); SIGKILL only after GIT_STOP_GRACE (less than the daemon's grace before it
    kills the whole job), which would leave its lock behind."""
    if child.poll() is not None:
        return
    try:
        child.terminate()
        child.wait(timeout=GIT_STOP_GRACE)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    except BaseException:  # a second signal while waiting: do not wait again
        child.kill()
        child.wait()
        raise


def alive(pid: object, start: object) -> bool:
    """Whether the process PID recorded with START (its process_start) still runs."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    now = process_start(pid)
    return now is not None and (not start or not now or now == start)
