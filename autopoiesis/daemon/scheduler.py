"""The scheduler: which job is due, why, and what follows a run. Pure bookkeeping over
the registry and a persisted state; it starts nothing (the service and `run-due` do),
and it reads time only from the clock it is given, so tests and benchmarks drive it
with a fake one.

**Catch-up.** A job's state keeps `last_run`, the start of its last *completed* run
(a run killed by a shutdown or a crash does not count). A schedule is due when its
next firing after `last_run` has come. A daemon that was down for three days therefore
finds each job's next firing in the past and runs it once, at start: what is owed is
done once, not once per missed slot (the job is told the run is a catch-up and since
when, so a condensation can cover every missed day in that one run). A job never run
counts from when the scheduler first saw it.

**Retries.** A failed or killed run is tried again after retry_backoff x 2^(n-1)
seconds, `retries` times; then the job waits for its next trigger.

**Events and after-triggers** mark the listening jobs as requested; a request raised
while the job runs is kept and served by one more run after it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts, parse_ts, utc_now
from autopoiesis.core.paths import atomic_write
from autopoiesis.daemon.jobs import JobOutcome, JobRegistry, JobSpec
from autopoiesis.errors import TimestampError

Clock = Callable[[], datetime]
LATE = timedelta(minutes=2)  # a schedule served later than this was missed: the run is a catch-up
MAX_REQUEST_DETAILS = 20


def _ts(value: datetime | None) -> str | None:
    return format_ts(value) if value else None


def _dt(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return parse_ts(value, "daemon state time")
    except TimestampError:
        return None


@dataclass
class JobState:
    """What the scheduler remembers of one job (persisted as JSON)."""

    first_seen: datetime | None = None
    last_run: datetime | None = None  # start of the last completed run: schedules count from here
    last_finished: datetime | None = None
    last_result: str = ""  # ok | idle | failed | timeout | interrupted
    last_message: str = ""
    last_duration: float | None = None
    running_since: datetime | None = None
    running_reason: str = ""
    attempts: int = 0  # consecutive failed runs
    retry_at: datetime | None = None
    requested_at: datetime | None = None  # an event or an after-trigger asked for a run
    requested: list[str] = field(default_factory=list)  # why (the events' details)
    wake_at: datetime | None = None  # the job's own next time (its outcome's wake_at)
    runs: int = 0
    failures: int = 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, datetime):
                d[k] = _ts(v)
        return d

    @classmethod
    def from_json(cls, data: Any) -> JobState:
        if not isinstance(data, dict):
            return cls()
        st = cls()
        for name, value in data.items():
            if not hasattr(st, name):
                continue
            default = getattr(st, name)
            if name in (
                "first_seen",
                "last_run",
                "last_finished",
                "running_since",
                "retry_at",
                "requested_at",
                "wake_at",
            ):
                setattr(st, name, _dt(value))
            elif name == "requested":
                setattr(st, name, [str(x) for x in value] if isinstance(value, list) else [])
            elif (
                isinstance(default, int) and isinstance(value, int) and not isinstance(value, bool)
            ):
                setattr(st, name, value)
            elif name == "last_duration" and isinstance(value, (int, float)):
                setattr(st, name, float(value))
            elif isinstance(default, str) and isinstance(value, str):
                setattr(st, name, value)
        return st


class StateStore:
    """The jobs' states in one JSON file (written whole, atomically); a damaged file means
    a fresh start, which only costs catch-up runs."""

    def __init__(self, path: Path | None):
        self.path = path
        self.jobs: dict[str, JobState] = {}
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            jobs = data.get("jobs") if isinstance(data, dict) else None
            for name, st in (jobs or {}).items():
                self.jobs[str(name)] = JobState.from_json(st)

    def get(self, name: str) -> JobState:
        return self.jobs.setdefault(name, JobState())

    def save(self) -> None:
        if self.path is not None:
            atomic_write(
                self.path,
                json.dumps(
                    {"jobs": {k: v.to_json() for k, v in sorted(self.jobs.items())}},
                    indent=1,
                    sort_keys=True,
                ),
            )


@dataclass(frozen=True)
class Due:
    """A job to start now, and why."""

    job: JobSpec
    reason: str
    events: tuple[str, ...] = ()


@dataclass(frozen=True)
class NextRun:
    at: datetime | None
    reason: str


class Scheduler:
    def __init__(self, registry: JobRegistry, store: StateStore, *, clock: Clock = utc_now):
        self.registry = registry
        self.store = store
        self.clock = clock
        now = self.clock()
        for job in registry:
            st = store.get(job.name)
            if st.first_seen is None:
                st.first_seen = now
        store.save()

    def state(self, name: str) -> JobState:
        return self.store.get(name)

    # ── when ──
    def next_run(self, job: JobSpec, now: datetime | None = None) -> NextRun:
        """When JOB is due next and why (at None: only an event or another job can start it)."""
        now = now or self.clock()
        st = self.store.get(job.name)
        if st.retry_at is not None:  # a failing job waits for its backoff, whatever else asks
            return NextRun(st.retry_at, f"retry {st.attempts}/{job.retries}")
        candidates: list[tuple[datetime, str]] = []
        # a last run "in the future" was recorded under a clock that was wrong: count from now
        base = min(st.last_run or st.first_seen or now, now)
        for sched in job.schedules:
            at = sched.next_after(base)
            if at + LATE < now:
                candidates.append((at, f"catch-up of the run due {format_ts(at)} (missed)"))
            else:
                candidates.append((at, f"schedule ({sched.describe()})"))
        if st.requested_at is not None:
            candidates.append(
                (st.requested_at, ", ".join(dict.fromkeys(st.requested)) or "requested")
            )
        if st.wake_at is not None:
            candidates.append((st.wake_at, "its own wake-up time"))
        if not candidates:
            return NextRun(
                None, "manual only" if not job.triggers else "waits for " + job.describe_triggers()
            )
        candidates.sort(key=lambda c: c[0])
        at = candidates[0][0]
        if at <= now:  # due: every reason that holds now
            return NextRun(at, "; ".join(dict.fromkeys(r for t, r in candidates if t <= now)))
        return NextRun(at, candidates[0][1])

    def due(self, running: Iterable[str] = ()) -> list[Due]:
        """Jobs due now that may start: not running, and no running job holds one of their
        resources (nor does an earlier job of this list)."""
        now = self.clock()
        running = set(running)
        held = {
            r
            for name in running
            if name in self.registry
            for r in self.registry.get(name).resources
        }
        out = []
        for job in self.registry:
            if job.name in running:
                continue
            nxt = self.next_run(job, now)
            if nxt.at is None or nxt.at > now:
                continue
            if job.resources & held:
                continue
            held |= job.resources
            out.append(Due(job, nxt.reason, tuple(self.store.get(job.name).requested)))
        return out

    def next_wakeup(self, running: Iterable[str] = ()) -> datetime | None:
        """The earliest time a job not running becomes due (None: nothing scheduled)."""
        running = set(running)
        times = [
            n.at
            for j in self.registry
            if j.name not in running
            for n in [self.next_run(j)]
            if n.at is not None
        ]
        return min(times) if times else None

    # ── what happened ──
    def started(self, name: str, reason: str) -> JobState:
        st = self.store.get(name)
        st.running_since = self.clock()
        st.running_reason = reason
        st.requested_at, st.requested, st.wake_at, st.retry_at = None, [], None, None
        self.store.save()
        return st

    def finished(
        self, name: str, result: str, outcome: JobOutcome | None = None, *, message: str = ""
    ) -> list[str]:
        """Record how the run of NAME ended (ok, idle, failed, timeout, interrupted); returns
        the jobs this asks to run next (after-triggers and the outcome's events)."""
        job = self.registry.get(name)
        st = self.store.get(name)
        now = self.clock()
        started = st.running_since or now
        st.last_finished = now
        st.last_duration = max(0.0, (now - started).total_seconds())
        st.last_result = result
        st.last_message = (outcome.message if outcome and outcome.message else message)[:2000]
        reason = st.running_reason
        st.running_since, st.running_reason = None, ""
        st.runs += 1
        followers: list[str] = []
        if (
            result == "interrupted"
        ):  # a shutdown or a crash: the run is owed again at the next start
            st.runs -= 1
            self._request(
                name, f"rerun of an interrupted run ({reason or 'unknown reason'})"[:200], now
            )
        elif result in ("ok", "idle"):
            st.last_run = started
            st.attempts, st.retry_at = 0, None
            st.wake_at = outcome.wake_at if outcome else None
            changed = result == "ok"
            for follower in self.registry.followers(name, changed):
                self._request(follower.name, f"after {name}", now)
                followers.append(follower.name)
            for event in outcome.events if outcome else ():
                followers += self.raise_event(event, save=False)
        else:  # failed, timeout
            st.failures += 1
            st.attempts += 1
            if st.attempts <= job.retries:
                st.retry_at = now + timedelta(seconds=job.retry_backoff * 2 ** (st.attempts - 1))
            else:  # given up: the next trigger starts afresh
                st.last_run = started
                st.attempts, st.retry_at = 0, None
        self.store.save()
        return list(dict.fromkeys(followers))

    def raise_event(self, event: str, *, save: bool = True) -> list[str]:
        """EVENT is "kind" or "kind:detail"; the jobs listening to kind are requested."""
        kind = event.split(":", 1)[0]
        now = self.clock()
        names = []
        for job in self.registry.listeners(kind):
            self._request(job.name, f"event {event}"[:200], now)
            names.append(job.name)
        if save and names:
            self.store.save()
        return names

    def request(self, name: str, why: str = "asked by hand") -> None:
        self._request(self.registry.get(name).name, why, self.clock())
        self.store.save()

    def _request(self, name: str, why: str, now: datetime) -> None:
        st = self.store.get(name)
        if st.requested_at is None or st.requested_at > now:
            st.requested_at = now
        if why not in st.requested:
            st.requested = (st.requested + [why])[-MAX_REQUEST_DETAILS:]

    def interrupted_runs(self) -> list[str]:
        """Jobs whose state says they were running (the last daemon died or was stopped
        mid-run): recorded as interrupted, so their runs are owed again."""
        names = [n for n in self.registry.names() if self.store.get(n).running_since is not None]
        for name in names:
            self.finished(
                name, "interrupted", message="the daemon stopped while it ran; it runs again"
            )
        return names

    def snapshot(self, running: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
        """Each job's state, last and next run, for the status file."""
        running = set(running)
        now = self.clock()
        out = {}
        for job in self.registry:
            st = self.store.get(job.name)
            nxt = self.next_run(job, now)
            if job.name in running:
                state = "running"
            elif st.retry_at is not None:
                state = "retrying"
            elif nxt.at is not None and nxt.at <= now:
                state = "due"
            else:
                state = "idle"
            out[job.name] = {
                "state": state,
                "triggers": job.describe_triggers(),
                "description": job.description,
                "running_since": _ts(st.running_since),
                "running_reason": st.running_reason,
                "last_run": _ts(st.last_run),
                "last_finished": _ts(st.last_finished),
                "last_result": st.last_result,
                "last_message": st.last_message,
                "last_duration": st.last_duration,
                "next_run": _ts(nxt.at),
                "next_reason": nxt.reason,
                "attempts": st.attempts,
                "runs": st.runs,
                "failures": st.failures,
                "timeout": job.timeout,
            }
        return out
