"""The daemon's scheduler with a fake clock: cron due times, catch-up once after downtime,
events, after-triggers, retries with backoff, interrupted runs owed again, and the state
surviving a restart (a new Scheduler over the same state file)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autopoiesis.daemon.jobs import After, Cron, Every, JobOutcome, JobRegistry, JobSpec, OnEvent
from autopoiesis.daemon.scheduler import Scheduler, StateStore
from autopoiesis.errors import ConfigError


class FakeClock:
    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


def noop(ctx):  # the scheduler never runs jobs; a function is all a spec needs
    return None


def _run(
    s: Scheduler,
    clock: FakeClock,
    *,
    result: str = "idle",
    outcome: JobOutcome | None = None,
    seconds: float = 5,
) -> list[str]:
    """Start everything due now, let it take SECONDS, finish it; the names that ran."""
    due = s.due()
    for d in due:
        s.started(d.job.name, d.reason)
    clock.advance(seconds=seconds)
    for d in due:
        s.finished(d.job.name, result, outcome)
    return [d.job.name for d in due]


def test_cron_jobs_fire_at_their_times_and_interval_jobs_every_n_minutes(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 2, 22, 50, tzinfo=UTC))  # a Monday
    reg = JobRegistry(
        [JobSpec("condense", noop, (Cron("0 23 * * *"),)), JobSpec("commit", noop, (Every(30),))]
    )
    s = Scheduler(reg, StateStore(tmp_path / "state.json"), clock=clock)
    assert s.next_run(reg.get("condense")).at == datetime(2026, 3, 2, 23, 0, tzinfo=UTC)
    assert s.next_run(reg.get("commit")).at == datetime(2026, 3, 2, 23, 20, tzinfo=UTC)
    assert s.due() == []
    clock.now = datetime(2026, 3, 2, 23, 0, tzinfo=UTC)
    assert _run(s, clock) == ["condense"]
    assert s.next_run(reg.get("condense")).at == datetime(2026, 3, 3, 23, 0, tzinfo=UTC)
    clock.now = datetime(2026, 3, 2, 23, 20, tzinfo=UTC)
    assert _run(s, clock) == ["commit"]
    # the interval counts from the start of the last run
    assert s.next_run(reg.get("commit")).at == datetime(2026, 3, 2, 23, 50, tzinfo=UTC)
    assert s.next_wakeup() == datetime(2026, 3, 2, 23, 50, tzinfo=UTC)


def test_runs_missed_while_down_are_caught_up_once_at_start(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    clock = FakeClock(datetime(2026, 3, 2, 22, 59, tzinfo=UTC))
    reg = JobRegistry(
        [
            JobSpec("condense", noop, (Cron("0 23 * * *"),)),
            JobSpec("commit", noop, (Every(30),)),
            JobSpec("prune", noop, (Cron("0 0 * * 0"),)),
        ]
    )
    s = Scheduler(reg, StateStore(state), clock=clock)
    clock.advance(minutes=1)
    assert _run(s, clock) == ["condense"]
    # the daemon is down for three days and a bit: 3 condensations, ~150 commits and one
    # Sunday prune were missed
    clock.now = datetime(2026, 3, 6, 9, 0, tzinfo=UTC)
    s = Scheduler(reg, StateStore(state), clock=clock)  # a new daemon reads the state
    due = {d.job.name: d.reason for d in s.due()}
    assert set(due) == {"condense", "commit"}  # prune: its Sunday is still to come
    assert due["condense"].startswith("catch-up of the run due 2026-03-03T23:00:00Z")
    assert _run(s, clock) == ["condense", "commit"]
    assert s.due() == []  # once, not once per missed slot
    assert s.next_run(reg.get("condense")).at == datetime(2026, 3, 6, 23, 0, tzinfo=UTC)
    clock.now = datetime(2026, 3, 9, 12, 0, tzinfo=UTC)  # past Sunday midnight
    assert set(_run(s, clock)) == {"commit", "condense", "prune"}
    assert s.due() == []


def test_a_job_never_run_counts_from_when_it_was_first_seen(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))
    reg = JobRegistry([JobSpec("condense", noop, (Cron("0 23 * * *"),))])
    Scheduler(reg, StateStore(tmp_path / "s.json"), clock=clock)
    clock.now = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
    s = Scheduler(reg, StateStore(tmp_path / "s.json"), clock=clock)
    assert [d.job.name for d in s.due()] == ["condense"]  # the 2nd and 3rd were missed: one run
    clock.now = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
    fresh = Scheduler(reg, StateStore(tmp_path / "other.json"), clock=clock)
    assert fresh.due() == []  # nothing is owed by a job nobody ran before


def test_events_and_after_triggers_chain_jobs(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))
    reg = JobRegistry(
        [
            JobSpec("watch", noop, (Every(1),)),
            JobSpec("extract", noop, (OnEvent("session_ended"),)),
            JobSpec("index", noop, (After("extract"),)),
            JobSpec("push", noop, (After("extract", only_if_changed=True),)),
        ]
    )
    s = Scheduler(reg, StateStore(tmp_path / "s.json"), clock=clock)
    clock.advance(minutes=1)
    # the watcher imported a session: its outcome raises the event
    assert _run(
        s, clock, result="ok", outcome=JobOutcome(True, events=("session_ended:raw/x.md",))
    ) == ["watch"]
    due = {d.job.name: d for d in s.due()}
    assert set(due) == {"extract"}
    assert due["extract"].reason == "event session_ended:raw/x.md"
    assert due["extract"].events == ("event session_ended:raw/x.md",)
    # extract succeeds without changing anything: index follows, push (only_if_changed) does not
    s.started("extract", due["extract"].reason)
    assert s.finished("extract", "idle", JobOutcome(False)) == ["index"]
    assert [d.job.name for d in s.due()] == ["index"]
    _run(s, clock)
    s.raise_event("session_ended:raw/y.md")
    s.started("extract", "event")
    # an event that comes while the job runs is kept: one more run after it
    s.raise_event("session_ended:raw/z.md")
    assert s.finished("extract", "ok", JobOutcome(True)) == ["index", "push"]
    assert {d.job.name for d in s.due()} == {"extract", "index", "push"}


def test_failures_are_retried_with_backoff_then_wait_for_the_next_trigger(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))
    reg = JobRegistry([JobSpec("flaky", noop, (Cron("0 13 * * *"),), retries=2, retry_backoff=60)])
    s = Scheduler(reg, StateStore(tmp_path / "s.json"), clock=clock)
    clock.now = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
    _run(s, clock, result="timeout", seconds=0)
    assert s.state("flaky").retry_at == datetime(2026, 3, 2, 13, 1, tzinfo=UTC)
    assert s.next_run(reg.get("flaky")).reason == "retry 1/2"
    clock.advance(seconds=59)
    assert s.due() == []
    clock.advance(seconds=1)
    _run(s, clock, result="failed", seconds=0)
    assert s.state("flaky").retry_at == datetime(
        2026, 3, 2, 13, 3, tzinfo=UTC
    )  # 2 minutes: doubled
    clock.advance(minutes=2)
    _run(s, clock, result="failed", seconds=0)
    st = s.state("flaky")
    assert st.retry_at is None and st.attempts == 0 and st.failures == 3  # given up ...
    assert s.next_run(reg.get("flaky")).at == datetime(
        2026, 3, 3, 13, 0, tzinfo=UTC
    )  # ... until tomorrow


def test_a_run_interrupted_by_a_shutdown_is_owed_at_the_next_start(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 2, 22, 59, tzinfo=UTC))
    reg = JobRegistry(
        [
            JobSpec("condense", noop, (Cron("0 23 * * *"),)),
            JobSpec("extract", noop, (OnEvent("session_ended"),)),
        ]
    )
    s = Scheduler(reg, StateStore(tmp_path / "s.json"), clock=clock)
    clock.advance(minutes=1)
    s.raise_event("session_ended:raw/a.md")
    for d in s.due():
        s.started(d.job.name, d.reason)
    # the daemon is killed here; the next one finds both runs unfinished
    clock.advance(minutes=30)
    s2 = Scheduler(reg, StateStore(tmp_path / "s.json"), clock=clock)
    assert sorted(s2.interrupted_runs()) == ["condense", "extract"]
    due = {d.job.name: d.reason for d in s2.due()}
    assert set(due) == {"condense", "extract"}
    assert "rerun of an interrupted run (event session_ended:raw/a.md)" in due["extract"]


def test_resources_keep_jobs_apart_and_the_registry_refuses_duplicates(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))
    k = frozenset({"knowledge"})
    reg = JobRegistry(
        [
            JobSpec("a", noop, (Every(1),), resources=k),
            JobSpec("b", noop, (Every(1),), resources=k),
            JobSpec("c", noop, (Every(1),)),
        ]
    )
    s = Scheduler(reg, StateStore(tmp_path / "s.json"), clock=clock)
    clock.advance(minutes=1)
    assert [d.job.name for d in s.due()] == ["a", "c"]
    assert [d.job.name for d in s.due(running=["a"])] == ["c"]
    with pytest.raises(ConfigError, match="registered already"):
        reg.register(JobSpec("a", noop))
    with pytest.raises(ConfigError, match="no daemon job named 'nope'"):
        reg.get("nope")


def test_a_damaged_state_file_means_a_fresh_start(tmp_path: Path) -> None:
    state = tmp_path / "s.json"
    state.write_text('{"jobs": {"a": {"last_run": "9999-99-99", "attempts": "x", "requested": 5}}')
    clock = FakeClock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))
    s = Scheduler(JobRegistry([JobSpec("a", noop, (Every(5),))]), StateStore(state), clock=clock)
    assert s.state("a").last_run is None and s.state("a").attempts == 0
    state.write_text("not json")
    s = Scheduler(JobRegistry([JobSpec("a", noop, (Every(5),))]), StateStore(state), clock=clock)
    assert s.next_run(s.registry.get("a")).at == clock.now + timedelta(minutes=5)


def test_a_last_run_recorded_under_a_wrong_clock_does_not_silence_a_job(tmp_path: Path) -> None:
    """The clock once said 2031; corrected, the job must not wait five years."""
    state = tmp_path / "s.json"
    reg = JobRegistry([JobSpec("condense", noop, (Cron("0 23 * * *"),))])
    wrong = FakeClock(datetime(2031, 6, 1, 23, 0, tzinfo=UTC))
    s = Scheduler(reg, StateStore(state), clock=wrong)
    s.started("condense", "schedule")
    s.finished("condense", "idle")
    right = FakeClock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))
    s = Scheduler(reg, StateStore(state), clock=right)
    assert s.next_run(reg.get("condense")).at == datetime(2026, 3, 2, 23, 0, tzinfo=UTC)
