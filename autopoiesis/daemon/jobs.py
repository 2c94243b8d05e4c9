"""What a daemon job is: its triggers, its limits, what it is given and what it returns,
and the registry that holds them (docs/design.md#daemon-design's three trigger kinds).

A job is a function `run(ctx: JobContext) -> JobOutcome` with a name, triggers, a
timeout, retries and the resources it must hold alone. The daemon's registry is made of
what the plugins register (autopoiesis.plugins, the hook `register_jobs(register, repo)`;
the memory's own jobs are daemon/memory_jobs.py). Registering one is one call:

    registry.register(JobSpec("sync", run_sync, (After("commit", only_if_changed=True),),
                              timeout=300, description="pull and push the memory repo"))

The function runs in a process of its own (runner.py), so it can be killed at its
timeout; it should be a module-level function, and return a JobOutcome (or None).

Triggers:
* `Cron("0 23 * * *")`, `Every(minutes=30)`: a schedule (cron in UTC, via croniter);
  missed runs are caught up once when the daemon starts (scheduler.py);
* `OnEvent(SESSION_ENDED)`: an event, raised by a job's outcome (the session watcher) or
  by a watched folder changing (TRANSCRIPTS_CHANGED, KNOWLEDGE_CHANGED);
* `After("extract")`: another job succeeded (`only_if_changed`: and changed something).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from autopoiesis.core.clock import cron_next, format_ts
from autopoiesis.core.config import DaemonConfig
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import ConfigError

if TYPE_CHECKING:
    from autopoiesis.llm import LLMClient

# Events the daemon knows. Jobs may raise others (any word); a job listens with OnEvent.
SESSION_ENDED = "session_ended"  # the session watcher imported a finished session
TRANSCRIPTS_CHANGED = (
    "transcripts_changed"  # a file under raw/conversations/ was written (capture, import, recovery)
)
KNOWLEDGE_CHANGED = "knowledge_changed"  # a file under knowledge/ or topics/ was written


@dataclass(frozen=True)
class Cron:
    """A cron expression, read in UTC (checked by core.clock.check_cron at config load)."""

    expr: str

    def next_after(self, t: datetime) -> datetime:
        return cron_next(self.expr, t)

    def describe(self) -> str:
        return f'cron "{self.expr}"'


@dataclass(frozen=True)
class Every:
    """A fixed interval since the last run."""

    minutes: float

    def next_after(self, t: datetime) -> datetime:
        return t + timedelta(minutes=self.minutes)

    def describe(self) -> str:
        return f"every {self.minutes:g} min"


@dataclass(frozen=True)
class OnEvent:
    kind: str

    def describe(self) -> str:
        return f"on {self.kind}"


@dataclass(frozen=True)
class After:
    job: str
    only_if_changed: bool = False

    def describe(self) -> str:
        return f"after {self.job}" + (" changed something" if self.only_if_changed else "")


Schedule = Cron | Every
Trigger = Cron | Every | OnEvent | After


@dataclass(frozen=True)
class JobContext:
    """What a job run is given. `llm()` is the one LLM executor, labelled with the job
    and capped at its token budget; pass it to every stage the job runs."""

    repo: MemoryRepo
    job: str
    # why it runs: "schedule", "catch-up of ...", "event session_ended", "after extract", "retry
    # 1/2"
    reason: str
    now: datetime  # the scheduler's clock when it started
    last_run: datetime | None  # the start of the last completed run, None for the first
    token_budget: int = 0
    events: tuple[str, ...] = ()  # details of the events that asked for this run
    first_seen: datetime | None = None  # when the scheduler first saw the job: a first run
    # owes what came since (a daemon asleep past midnight on its first day owes that day)

    def llm(self, **kwargs: Any) -> LLMClient:
        from autopoiesis.llm import LLMClient

        return LLMClient(self.repo, job=self.job, job_token_budget=self.token_budget, **kwargs)


@dataclass(frozen=True)
class JobOutcome:
    """What a run did. CHANGED: it changed something (After(..., only_if_changed) fires);
    EVENTS: events to raise (kind or "kind:detail"); WAKE_AT: run again then (a retry
    queue's next due time); DATA: figures for the status and the log."""

    changed: bool = False
    message: str = ""
    events: tuple[str, ...] = ()
    wake_at: datetime | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "message": self.message,
            "events": list(self.events),
            "wake_at": format_ts(self.wake_at) if self.wake_at else None,
            "data": self.data,
        }


JobFunction = Callable[[JobContext], "JobOutcome | None"]


@dataclass(frozen=True)
class JobSpec:
    name: str
    run: JobFunction
    triggers: tuple[Trigger, ...] = ()
    # seconds; the run is killed past it (the config's daemon.job_timeout_minutes by default)
    timeout: float = DaemonConfig().job_timeout_minutes * 60.0
    retries: int = DaemonConfig().job_retries  # a failed or killed run is tried again this often
    retry_backoff: float = 60.0  # seconds before the first retry, doubling
    resources: frozenset[str] = frozenset()  # jobs that share one never run at the same time
    token_budget: int = 0  # LLM tokens a run may spend (0: no limit)
    description: str = ""
    quiet: bool = (
        False  # a run that found nothing to do is not logged (a job that polls every minute)
    )

    @property
    def schedules(self) -> tuple[Schedule, ...]:
        return tuple(t for t in self.triggers if isinstance(t, (Cron, Every)))

    def describe_triggers(self) -> str:
        return ", ".join(t.describe() for t in self.triggers) or "manual only"


class JobRegistry:
    """The daemon's jobs, by name, in registration order."""

    def __init__(self, jobs: Iterable[JobSpec] = ()):
        self._jobs: dict[str, JobSpec] = {}
        for job in jobs:
            self.register(job)

    def register(self, job: JobSpec) -> JobSpec:
        if job.name in self._jobs:
            raise ConfigError(
                f"a daemon job named {job.name!r} is registered already; give the new one another "
                "name."
            )
        if not job.name or not job.name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"{job.name!r} is no job name; use letters, digits, '-' and '_'.")
        self._jobs[job.name] = job
        return job

    def get(self, name: str) -> JobSpec:
        try:
            return self._jobs[name]
        except KeyError:
            raise ConfigError(
                f"no daemon job named {name!r}; the jobs are: {', '.join(self._jobs)}."
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._jobs

    def __iter__(self) -> Iterator[JobSpec]:
        return iter(self._jobs.values())

    def __len__(self) -> int:
        return len(self._jobs)

    def names(self) -> list[str]:
        return list(self._jobs)

    def listeners(self, kind: str) -> list[JobSpec]:
        """The jobs an event of KIND asks to run."""
        return [
            j for j in self if any(isinstance(t, OnEvent) and t.kind == kind for t in j.triggers)
        ]

    def followers(self, name: str, changed: bool) -> list[JobSpec]:
        """The jobs to run after NAME succeeded (CHANGED: it changed something)."""
        return [
            j
            for j in self
            if any(
                isinstance(t, After) and t.job == name and (changed or not t.only_if_changed)
                for t in j.triggers
            )
        ]

    def event_kinds(self) -> set[str]:
        return {t.kind for j in self for t in j.triggers if isinstance(t, OnEvent)}
