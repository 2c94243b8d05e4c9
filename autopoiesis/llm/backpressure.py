"""What makes the LLM client one executor across processes, not just within one: the
daemon runs each job in a process of its own, and a capture's extraction or a user's
`autopoiesis extract` may run beside them.

* `SlotPool`: at most `llm.concurrency` requests in flight from every process of a
  memory repo together: one flock'd file a slot (the kernel releases a dead holder's).
* `GlobalBackoff`: when calls fail (the endpoint is down, refuses, or never answers in
  the time its settings allow; a caller's own shorter deadline is no failure of it),
  every process stops calling it for a while (30 s, doubling to 15 min) instead of
  each one spending its retries against a dead server; the first success clears it.
  The state is a small JSON file, read before each call and written only on a change.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from autopoiesis.core.clock import format_ts, parse_ts, utc_now
from autopoiesis.core.paths import FileLock, atomic_write
from autopoiesis.errors import TimestampError

BACKOFF_BASE_SECONDS = 30.0
BACKOFF_MAX_SECONDS = 15 * 60.0


class SlotPool:
    """SIZE slots shared by every process that uses FOLDER."""

    def __init__(self, folder: Path, size: int):
        self.folder = folder
        self.size = max(1, int(size))

    def acquire(self, deadline: float) -> FileLock | None:
        """A held slot, or None when none came free before DEADLINE (time.monotonic())."""
        self.folder.mkdir(parents=True, exist_ok=True)
        delay = 0.005
        while True:
            for i in range(self.size):
                lock = FileLock(self.folder / f"slot-{i}.lock")
                if lock.acquire(timeout=0):
                    return lock
            if time.monotonic() >= deadline:
                return None
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, 0.05)


@dataclass(frozen=True)
class BackoffState:
    failures: int = 0
    until: datetime | None = None
    last_error: str = ""


class GlobalBackoff:
    """The shared backoff of one memory repo's LLM endpoint (a JSON state file)."""

    def __init__(
        self, path: Path, *, base: float = BACKOFF_BASE_SECONDS, cap: float = BACKOFF_MAX_SECONDS
    ):
        self.path = path
        self.base, self.cap = base, cap

    def state(self) -> BackoffState:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            until = parse_ts(data["until"], "until") if data.get("until") else None
            return BackoffState(
                int(data.get("failures") or 0), until, str(data.get("last_error") or "")
            )
        except (OSError, ValueError, KeyError, TypeError, TimestampError):
            return BackoffState()  # none yet, or a damaged file: no backoff

    def blocked_until(self, now: datetime | None = None) -> BackoffState | None:
        """The state while calls must wait (now before `until`), else None."""
        st = self.state()
        if st.until is not None and (now or utc_now()) < st.until:
            return st
        return None

    def failed(self, error: str, now: datetime | None = None) -> BackoffState:
        """One more call failed: back off for base x 2^(failures-1), capped."""
        now = now or utc_now()
        with FileLock(self.path.with_suffix(".lock")):
            failures = self.state().failures + 1
            delay = min(self.cap, self.base * 2 ** min(failures - 1, 20))
            st = BackoffState(failures, now + timedelta(seconds=delay), error[:500])
            atomic_write(
                self.path,
                json.dumps(
                    {
                        "failures": st.failures,
                        "until": format_ts(st.until or now),
                        "last_error": st.last_error,
                    }
                ),
            )
        return st

    def succeeded(self) -> None:
        """A call got through: clear the backoff (a write only when there was one)."""
        if self.state().failures == 0:
            return
        with FileLock(self.path.with_suffix(".lock")):
            self.path.unlink(missing_ok=True)
