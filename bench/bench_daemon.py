"""Daemon figures of issue 13 ("the memory runs itself").

- an idle daemon (`autopoiesis daemon run` on a fresh memory repo, every default job
  registered, the session watcher scanning an empty HOME): CPU over 60 s (its own and
  its job processes') and peak RSS
- batch commits at the configured cadence over 8 hours of a fake clock, with facts
  written at random minutes: commits made against intervals that had changes, and the
  messages' quality (subjects that name a fact written in their interval, facts of the
  interval listed in the body)
- missed runs after three days down: slots missed per job, runs at the restart, runs due
  after them; the condensation catch-up covering every missed day in its one run
- a hung job killed at its timeout while three others ran: when it was killed, whether
  its own child died, how many others finished meanwhile
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@x",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@x",
    "GIT_CONFIG_NOSYSTEM": "1",
}
TICK = os.sysconf("SC_CLK_TCK")


def _repo(tmp: Path, name: str):
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo

    return MemoryRepo(init_memory_repo(tmp / name, build_index=False).root)


def _cpu_seconds(pid: int) -> float:
    """utime + stime of PID and of its children it has waited for (the job processes)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def bench_idle(tmp: Path, quick: bool) -> list[dict]:
    repo = _repo(tmp, "idle")
    home = tmp / "idle-home"
    (home / ".claude" / "projects").mkdir(parents=True)
    env = {**ENV, "HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "daemon", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(5)  # started, first status written, imports done
        seconds = 15.0 if quick else 60.0
        cpu0, t0 = _cpu_seconds(proc.pid), time.monotonic()
        peak = 0.0
        while time.monotonic() - t0 < seconds:
            peak = max(peak, _rss_mb(proc.pid))
            time.sleep(0.5)
        cpu = _cpu_seconds(proc.pid) - cpu0
        wall = time.monotonic() - t0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    from autopoiesis.daemon.status import daemon_log

    runs = sum(1 for r in daemon_log(repo) if r.get("event") == "finished")
    return [
        {
            "metric": f"idle daemon CPU over {wall:.0f} s (incl. {runs} job runs)",
            "value": f"{100 * cpu / wall:.2f}",
            "unit": "%",
            "target": "<= 1",
        },
        {
            "metric": "idle daemon peak RSS",
            "value": round(peak, 1),
            "unit": "MB",
            "target": "<= 100",
        },
        {
            "metric": "idle daemon exit after SIGTERM",
            "value": proc.returncode,
            "unit": "status",
            "target": "0",
        },
    ]


def bench_batch_commits(tmp: Path, quick: bool) -> list[dict]:
    """8 hours of a fake clock, minute by minute; the commit job runs (in its own process,
    as the daemon runs it) whenever the scheduler says it is due."""
    from autopoiesis.daemon.jobs import JobContext
    from autopoiesis.daemon.memory_jobs import memory_jobs
    from autopoiesis.daemon.runner import run_child
    from autopoiesis.daemon.scheduler import Scheduler, StateStore
    from autopoiesis.formats.commit_message import entry_title

    repo = _repo(tmp, "cadence")
    rng = random.Random(13)
    clock = [datetime(2026, 3, 2, 8, 0, tzinfo=UTC)]
    registry = memory_jobs(repo)
    interval = repo.config.lifecycle.commit_interval_minutes
    sched = Scheduler(registry, StateStore(repo.state_file("daemon_state")), clock=lambda: clock[0])
    commit = registry.get("commit")
    hours = 3 if quick else 8
    written: list[tuple[datetime, str]] = []
    commits: list[tuple[datetime, list[str]]] = []  # (time, facts written since the last commit)
    pending: list[str] = []
    topics = [
        "deploys",
        "billing",
        "search",
        "backups",
        "onboarding",
        "releases",
        "auth",
        "metrics",
    ]
    quiet = {
        rng.randrange(hours * 60 // interval) for _ in range(2)
    }  # two intervals without any change
    for minute in range(hours * 60 + 1):  # through the last interval's commit
        clock[0] = datetime(2026, 3, 2, 8, 0, tzinfo=UTC) + timedelta(minutes=minute)
        if minute // interval not in quiet and rng.random() < 0.12:
            topic = rng.choice(topics)
            if minute == hours * 60:
                continue
            fact = f"The {topic} runbook step {minute} needs a second reviewer on call"
            note = repo.root / "knowledge" / "reference" / f"{topic}.md"
            note.write_text(
                (note.read_text() if note.exists() else f"# {topic.title()}\n\n") + f"- {fact}\n"
            )
            written.append((clock[0], fact))
            pending.append(fact)
        for due in sched.due():
            if due.job.name != "commit":
                continue
            st = sched.started("commit", due.reason)
            result, outcome, message, _ = run_child(
                commit.run,
                JobContext(repo, "commit", due.reason, clock[0], st.last_run),
                commit.timeout,
            )
            sched.finished("commit", result, outcome, message=message)
            if outcome is not None and outcome.changed:
                commits.append((clock[0], list(pending)))
                pending = []
    log = subprocess.run(
        ["git", "log", "--format=%x1e%s%n%b", f"-{len(commits)}", "--reverse"],
        cwd=repo.root,
        capture_output=True,
        text=True,
    ).stdout.split("\x1e")[1:]
    named = listed = total_facts = 0
    for (_, facts), message in zip(commits, log):
        subject, _, body = message.partition("\n")
        titles = [entry_title(f) for f in facts]
        named += any(t.rstrip("…") in subject or subject.find(t[:30]) >= 0 for t in titles)
        listed += sum(1 for t in titles if t in body)
        total_facts += len(facts)
    slots = hours * 60 // interval
    with_changes = len(
        {
            int((t - datetime(2026, 3, 2, 8, 0, tzinfo=UTC)).total_seconds() // 60) // interval
            for t, _ in written
            if t < datetime(2026, 3, 2, 8, 0, tzinfo=UTC) + timedelta(hours=hours)
        }
    )
    sample = log[len(log) // 2].strip().splitlines()[0] if log else ""
    return [
        {
            "metric": f"batch commits over {hours} h, every {interval} min (slots with changes / "
            "all)",
            "value": f"{len(commits)} ({with_changes} / {slots})",
            "unit": "commits",
            "target": "one per interval with changes",
        },
        {
            "metric": "commit subjects naming a fact learned in their interval",
            "value": f"{named} / {len(commits)}",
            "unit": "",
            "target": "all",
        },
        {
            "metric": "facts learned listed in their commit's body",
            "value": f"{listed} / {total_facts}",
            "unit": "",
            "target": "all",
        },
        {"metric": f"a subject: {sample}", "value": "", "unit": "", "target": ""},
    ]


def bench_catch_up(tmp: Path) -> list[dict]:
    from autopoiesis.daemon.jobs import JobContext
    from autopoiesis.daemon.memory_jobs import memory_jobs, run_condense
    from autopoiesis.daemon.scheduler import Scheduler, StateStore

    repo = _repo(tmp, "catchup")
    registry = memory_jobs(repo)
    store_path = repo.state_file("daemon_state")
    clock = [datetime(2026, 3, 2, 23, 59, tzinfo=UTC)]
    sched = Scheduler(registry, StateStore(store_path), clock=lambda: clock[0])
    for job in registry:  # everything ran just before the daemon went down
        sched.started(job.name, "bench")
        sched.finished(job.name, "idle")
    down_at = clock[0]
    clock[0] = down_at + timedelta(days=3, hours=9)  # back on Thursday morning
    missed: dict[str, int] = {}
    for job in registry:
        n, t = 0, down_at
        for s in job.schedules:
            t = down_at
            while True:
                t = s.next_after(t)
                if t > clock[0]:
                    break
                n += 1
        missed[job.name] = n
    sched = Scheduler(registry, StateStore(store_path), clock=lambda: clock[0])
    ran: list[str] = []
    while True:  # as the daemon does: start what may start, and more as those finish
        batch = sched.due()
        if not batch or len(ran) > 100:
            break
        for d in batch:
            sched.started(d.job.name, d.reason)
            sched.finished(d.job.name, "idle")
            ran.append(d.job.name)
    after = sched.due()
    # the condensation's one catch-up run covers each missed day
    for day in (3, 4, 5):
        rel = f"raw/conversations/2026/03/0{day}/0900-ses_c{day}-note.md"
        from autopoiesis.testing.samples import closed_transcript

        (repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo.root / rel).write_text(
            closed_transcript(
                f"ses_c{day}",
                "Note",
                (
                    (
                        f"2026-03-0{day}T09:00:00Z",
                        "user",
                        None,
                        f"Lesson: day {day} taught us to pin versions.",
                    ),
                ),
                started=f"2026-03-0{day}T09:00:00Z",
                ended=f"2026-03-0{day}T09:05:00Z",
            )
        )
    out = run_condense(JobContext(repo, "condense", "catch-up", clock[0], down_at))
    journals = sum(
        1 for d in out.data["days"] if (repo.root / f"knowledge/journal/{d}.md").exists()
    )
    owed = {k: v for k, v in missed.items() if v}
    return [
        {
            "metric": "slots missed in 3 days 9 h down, per job",
            "value": ", ".join(f"{k} {v}" for k, v in owed.items()),
            "unit": "slots",
            "target": "",
        },
        {
            "metric": "runs at the restart (jobs with missed slots)",
            "value": f"{len(ran)} ({len(owed)})",
            "unit": "runs",
            "target": "one per job owed",
        },
        {"metric": "runs still due after them", "value": len(after), "unit": "runs", "target": "0"},
        {
            "metric": "condensation catch-up: journals written in its one run",
            "value": f"{journals} of 3 missed days",
            "unit": "",
            "target": "3",
        },
    ]


def _hang(ctx):
    child = subprocess.Popen(["sleep", "600"])
    (ctx.repo.root / "hang.pid").write_text(str(child.pid))
    child.wait()


def _work(ctx):
    time.sleep(1.0)
    (ctx.repo.root / f"{ctx.job}.done").write_text(str(time.monotonic()))


def bench_hung(tmp: Path) -> list[dict]:
    from autopoiesis.daemon.jobs import Every, JobRegistry, JobSpec
    from autopoiesis.daemon.scheduler import Scheduler, StateStore
    from autopoiesis.daemon.service import run_due

    repo = _repo(tmp, "hung")
    reg = JobRegistry(
        [JobSpec("hang", _hang, (Every(1),), timeout=3.0, retries=0)]
        + [JobSpec(f"work{i}", _work, (Every(1),)) for i in range(3)]
    )
    store = StateStore(repo.state_file("daemon_state"))
    Scheduler(reg, store)
    for st in store.jobs.values():
        assert st.first_seen is not None
        st.first_seen -= timedelta(minutes=2)
    store.save()
    t0 = time.monotonic()
    runs = run_due(repo, lambda r: reg)
    wall = time.monotonic() - t0
    results = {n: r for n, r, _ in runs}
    done = sum(1 for i in range(3) if (repo.root / f"work{i}.done").exists())
    sleeper = int((repo.root / "hang.pid").read_text())
    time.sleep(0.5)
    try:
        os.kill(sleeper, 0)
        with open(f"/proc/{sleeper}/stat") as fh:
            child_dead = fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        child_dead = True
    return [
        {
            "metric": "hung job (timeout 3 s): result, wall time of the whole run",
            "value": f"{results.get('hang')}, {wall:.1f} s",
            "unit": "",
            "target": "timeout, ~3 s + grace",
        },
        {
            "metric": "other jobs finished while it hung",
            "value": f"{done} / 3",
            "unit": "",
            "target": "3 / 3",
        },
        {
            "metric": "the hung job's own child killed with it",
            "value": "yes" if child_dead else "NO",
            "unit": "",
            "target": "yes",
        },
    ]


def run(quick: bool = False) -> list[dict]:
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as d:
        tmp = Path(d)
        os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
        rows += bench_hung(tmp)
        rows += bench_catch_up(tmp)
        rows += bench_batch_commits(tmp, quick)
        rows += bench_idle(tmp, quick)
    for r in rows:
        r["bench"] = "daemon"
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
