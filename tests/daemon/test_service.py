"""The daemon as a process: a hung job killed at its timeout while the others run, one
daemon per repo (a stale lock taken over), SIGTERM and SIGHUP on a real daemon
subprocess, `daemon status` and `daemon log` output, `run-due`, `daemon install`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.daemon.jobs import Every, JobContext, JobOutcome, JobRegistry, JobSpec
from autopoiesis.daemon.service import Daemon, run_due
from autopoiesis.daemon.status import DaemonRunningError, InstanceLock, read_status, running_pid
from tests.conftest import Cli
from tests.daemon.helpers import log_rows, wait_for

pytestmark = pytest.mark.slow


# ── jobs for these tests (module level: the runner forks, spawn would import them) ──
def hang(ctx: JobContext) -> JobOutcome:
    # a job stuck in a child of its own (as a git hook or a model call would be)
    child = subprocess.Popen(["sleep", "600"])
    (ctx.repo.root / "hang.pid").write_text(str(child.pid))
    child.wait()
    return JobOutcome(True, "never")


def quick(ctx: JobContext) -> JobOutcome:
    time.sleep(0.3)
    (ctx.repo.root / "quick.done").write_text(ctx.reason)
    return JobOutcome(True, "wrote quick.done")


def broken(ctx: JobContext) -> JobOutcome:
    raise RuntimeError("a bug in a job")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


def test_a_hung_job_is_killed_at_its_timeout_while_the_others_run(memory_repo: MemoryRepo) -> None:
    reg = JobRegistry(
        [
            JobSpec("hang", hang, (Every(1),), timeout=2.0, retries=0),
            JobSpec("quick", quick, (Every(1),), timeout=30),
            JobSpec("broken", broken, (Every(1),), retries=0),
        ]
    )
    # due now: all three were last run two minutes ago
    from autopoiesis.daemon.scheduler import Scheduler, StateStore

    store = StateStore(memory_repo.state_file("daemon_state"))
    Scheduler(reg, store)
    from datetime import timedelta

    for st in store.jobs.values():
        assert st.first_seen is not None
        st.first_seen -= timedelta(minutes=2)
    store.save()
    t0 = time.monotonic()
    runs = run_due(memory_repo, lambda repo: reg)
    wall = time.monotonic() - t0
    results = {name: (result, message) for name, result, message in runs}
    assert results["quick"] == ("ok", "wrote quick.done")
    assert results["hang"][0] == "timeout" and "killed after 2 s" in results["hang"][1]
    assert results["broken"] == ("failed", "RuntimeError: a bug in a job")
    assert (memory_repo.root / "quick.done").read_text() == "schedule (every 1 min)"
    # the result and its message say the hang was killed at its timeout; the bound is only
    # a hang guard, far from both the timeout (2 s) and the hang (600 s)
    assert wall < 300, wall
    sleeper = int((memory_repo.root / "hang.pid").read_text())
    wait_for(lambda: not _alive(sleeper), timeout=60, what="the hung job's own child to end")
    log = [json.loads(l) for l in memory_repo.state_file("daemon_log").read_text().splitlines()]
    assert any(r["event"] == "timeout" and r["job"] == "hang" for r in log)
    assert any(r["event"] == "failed" and r["job"] == "broken" and "traceback" in r for r in log)
    assert read_status(memory_repo)["state"] == "stopped"


def test_one_daemon_per_repo_and_a_dead_ones_lock_is_taken_over(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys; from autopoiesis.core.paths import MemoryRepo; "
            "from autopoiesis.daemon.status import InstanceLock; "
            "InstanceLock(MemoryRepo(sys.argv[1])).acquire(); print('held', flush=True); "
            "signal.pause()",  # held until killed below
            str(memory_repo.root),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert running_pid(memory_repo) == holder.pid
        with pytest.raises(DaemonRunningError, match=f"pid {holder.pid}"):
            InstanceLock(memory_repo).acquire()
        refused = cli("-C", str(memory_repo.root), "run-due", process=True)
        assert refused.returncode == 1 and f"the daemon (pid {holder.pid}) runs" in refused.stderr
    finally:
        holder.kill()  # no clean exit: the lock file still names the dead pid
        holder.wait()
    assert (
        json.loads(memory_repo.state_path("locks", "daemon.lock").read_text())["pid"] == holder.pid
    )
    assert running_pid(memory_repo) is None
    lock = InstanceLock(memory_repo)
    lock.acquire()  # taken over
    assert running_pid(memory_repo) == os.getpid()
    lock.release()


@pytest.mark.slow
def test_a_daemon_whose_lock_file_went_takes_it_again_or_gives_way(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`git clean -fdX` (or `rm -rf .autopoiesis/locks`) under a running daemon deleted its
    lock file: a second daemon took a new one and both ran jobs, and `daemon stop` lost the
    first. The first now takes the lock at its path again, or, when the second holds it,
    stops."""
    env = {**os.environ, "HOME": str(tmp_path)}
    root = str(memory_repo.root)
    first = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", root, "daemon", "run"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    second = None
    try:
        wait_for(lambda: read_status(memory_repo).get("pid") == first.pid, what="the status file")
        lock_file = memory_repo.state_path("locks", "daemon.lock")
        lock_file.unlink()
        first.send_signal(signal.SIGHUP)  # one turn of its loop: it takes the lock again
        wait_for(lambda: running_pid(memory_repo) == first.pid, what="the lock taken again")
        with pytest.raises(DaemonRunningError, match=f"pid {first.pid}"):
            InstanceLock(memory_repo).acquire()
        lock_file.unlink()
        second = subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", root, "daemon", "run"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(lambda: running_pid(memory_repo) == second.pid, what="the second daemon")
        first.send_signal(signal.SIGHUP)
        assert first.wait(timeout=60) == 0  # it gave way: one daemon runs
        assert second.poll() is None and running_pid(memory_repo) == second.pid
        assert any(
            r["event"] == "stopped" and "another daemon took it" in r.get("message", "")
            for r in log_rows(memory_repo)
        )
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)


def test_sigterm_and_sighup_on_a_real_daemon(
    memory_repo: MemoryRepo, tmp_path: Path, git, cli: Cli
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    root = str(memory_repo.root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", root, "daemon", "run"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: read_status(memory_repo).get("pid") == proc.pid, what="the status file")
        status = cli("-C", root, "daemon", "status", "--json", env=env, process=True)
        data = json.loads(status.stdout)
        assert data["running"] and data["pid"] == proc.pid and data["uptime_seconds"] >= 0
        assert set(data["jobs"]) == {
            "watch-sessions",
            "extract",
            "commit",
            "condense",
            "prune",
            "tag",
            "explore-prune",
            "index",
        }
        assert data["jobs"]["condense"]["next_run"].endswith("T23:00:00Z")
        assert data["llm_today"]["calls"] == 0
        second = cli("-C", root, "daemon", "run", env=env, process=True)
        assert second.returncode == 1 and "a daemon already runs" in second.stderr

        # SIGHUP with a config that does not load: reported, the old one kept
        config = memory_repo.root / "memory-config.yaml"
        good = config.read_text()
        config.write_text(
            good.replace(
                'condensation_schedule: "0 23 * * *"', 'condensation_schedule: "every day"'
            )
        )
        proc.send_signal(signal.SIGHUP)
        wait_for(
            lambda: any(r["event"] == "reload_failed" for r in log_rows(memory_repo)),
            what="reload_failed",
        )
        failed = next(r for r in log_rows(memory_repo) if r["event"] == "reload_failed")
        assert (
            "condensation_schedule' is 'every day'" in failed["message"]
            and "stays in force" in failed["message"]
        )
        # SIGHUP with a good change: the jobs follow the config
        config.write_text(
            good.replace("auto_tag_daily: true", "auto_tag_daily: false").replace(
                'condensation_schedule: "0 23 * * *"', 'condensation_schedule: "0 21 * * *"'
            )
        )
        proc.send_signal(signal.SIGHUP)
        wait_for(
            lambda: any(r["event"] == "reloaded" for r in log_rows(memory_repo)), what="reloaded"
        )
        reloaded = next(r for r in log_rows(memory_repo) if r["event"] == "reloaded")
        assert reloaded["removed"] == ["tag"]
        wait_for(
            lambda: "tag" not in (read_status(memory_repo).get("jobs") or {"tag": 1}),
            what="the new status",
        )
        assert read_status(memory_repo)["jobs"]["condense"]["next_run"].endswith("T21:00:00Z")

        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)  # a hang guard
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    events = [r["event"] for r in log_rows(memory_repo) if r.get("job") is None]
    # (its MCP host's rows come when that host is ready, which a busy machine may delay)
    assert [e for e in events if not e.startswith("mcp_")][-2:] == ["stopping", "stopped"]
    assert read_status(memory_repo)["state"] == "stopped"
    assert running_pid(memory_repo) is None
    text = cli("-C", root, "daemon", "status", env=env, process=True).stdout
    assert text.startswith("daemon     not running; last seen ")
    assert (
        "condense         idle" in text and 'schedule (cron "0 21 * * *")' in text
    )  # when, and why
    log = cli("-C", root, "daemon", "log", env=env, process=True).stdout
    assert "reload_failed" in log and "stopped" in log
    assert (
        "watch-sessions"
        not in cli("-C", root, "daemon", "log", "--job", "condense", env=env, process=True).stdout
    )


def test_sigterm_interrupts_a_running_job_and_the_next_start_runs_it_again(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A job killed by the shutdown is owed: the next daemon runs it first."""
    script = tmp_path / "d.py"
    script.write_text(
        "import sys, time\n"
        "from autopoiesis.core.paths import MemoryRepo\n"
        "from autopoiesis.daemon.jobs import Every, JobRegistry, JobSpec, JobOutcome\n"
        "from autopoiesis.daemon.service import Daemon\n"
        "def slow(ctx):\n"
        "    open(ctx.repo.root / 'slow.runs', 'a').write(ctx.reason + '\\n')\n"
        "    time.sleep(float(sys.argv[2]))\n"
        "    return JobOutcome(True, 'done')\n"
        "Daemon(MemoryRepo(sys.argv[1]), lambda r: JobRegistry([JobSpec('slow', slow, (Every(10),))]), once=sys.argv[3] == 'once').run()\n"
    )
    from autopoiesis.daemon.scheduler import Scheduler, StateStore

    store = StateStore(memory_repo.state_file("daemon_state"))
    Scheduler(JobRegistry([JobSpec("slow", quick, (Every(10),))]), store)
    from datetime import timedelta

    store.jobs["slow"].first_seen -= timedelta(hours=1)
    store.save()
    # the job would run for 600 s: only the SIGTERM ends it, however late it comes
    proc = subprocess.Popen([sys.executable, str(script), str(memory_repo.root), "600", "daemon"])
    try:
        runs = memory_repo.root / "slow.runs"
        wait_for(runs.exists, what="the slow job to start")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0  # a hang guard
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rows = log_rows(memory_repo)
    assert [r["result"] for r in rows if r.get("job") == "slow" and "result" in r] == [
        "interrupted"
    ]
    subprocess.run(
        [sys.executable, str(script), str(memory_repo.root), "0", "once"], check=True, timeout=60
    )
    lines = runs.read_text().splitlines()
    assert len(lines) == 2 and "; rerun of an interrupted run (catch-up of the run due" in lines[1]


def test_a_job_ends_with_a_daemon_killed_with_sigkill(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """kill -9 of the daemon leaves no orphan job (nor the job's own child) running beside
    the next daemon's rerun of it."""
    script = tmp_path / "d.py"
    script.write_text(
        "import subprocess, sys, os\n"
        "from autopoiesis.core.paths import MemoryRepo\n"
        "from autopoiesis.daemon.jobs import Every, JobRegistry, JobSpec, JobOutcome\n"
        "from autopoiesis.daemon.service import Daemon\n"
        "def slow(ctx):\n"
        "    child = subprocess.Popen(['sleep', '600'])\n"
        "    (ctx.repo.root / 'slow.pids').write_text(f'{os.getpid()} {child.pid}')\n"
        "    child.wait()\n"
        "    return JobOutcome(True, 'done')\n"
        "Daemon(MemoryRepo(sys.argv[1]), lambda r: JobRegistry([JobSpec('slow', slow, (Every(10),))])).run()\n"
    )
    from datetime import timedelta

    from autopoiesis.daemon.scheduler import Scheduler, StateStore

    store = StateStore(memory_repo.state_file("daemon_state"))
    Scheduler(JobRegistry([JobSpec("slow", quick, (Every(10),))]), store)
    store.jobs["slow"].first_seen -= timedelta(hours=1)
    store.save()
    proc = subprocess.Popen([sys.executable, str(script), str(memory_repo.root)])
    pids = memory_repo.root / "slow.pids"
    wait_for(lambda: pids.exists() and " " in pids.read_text(), what="the slow job to start")
    job, sleeper = (int(p) for p in pids.read_text().split())
    assert _alive(job) and _alive(sleeper)
    proc.kill()  # kill -9: no shutdown, no handler
    proc.wait()
    wait_for(lambda: not _alive(job), what="the orphaned job to end", timeout=60)
    wait_for(lambda: not _alive(sleeper), what="the job's own child to end", timeout=60)


def test_run_due_cli_and_daemon_install(memory_repo: MemoryRepo, tmp_path: Path, cli: Cli) -> None:
    root = str(memory_repo.root)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": ""}
    first = cli("-C", root, "run-due", env=env, process=True)
    assert first.returncode == 0 and first.stdout.strip() == "nothing is due"
    forced = cli("-C", root, "run-due", "--job", "explore-prune", "--json", env=env, process=True)
    assert json.loads(forced.stdout) == [
        {"job": "explore-prune", "result": "idle", "message": "no explore/* branch is old enough"}
    ]
    bad = cli("-C", root, "run-due", "--job", "nope", env=env, process=True)
    assert bad.returncode == 1 and "no daemon job named 'nope'" in bad.stderr
    out = cli("-C", root, "daemon", "install", "--kind", "systemd", env=env, process=True)
    assert out.returncode == 0, out.stderr
    unit = next(
        (tmp_path / "home" / ".config" / "systemd" / "user").glob("autopoiesis-memory-*.service")
    )
    text = unit.read_text()
    assert f"ExecStart={sys.executable} -m autopoiesis -C {root} daemon run" in text
    assert "ExecReload=/bin/kill -HUP $MAINPID" in text and "Restart=on-failure" in text
    assert f"systemctl --user enable --now {unit.stem}.service" in out.stdout
    plist = cli("-C", root, "daemon", "install", "--kind", "launchd", env=env, process=True)
    agent = next((tmp_path / "home" / "Library" / "LaunchAgents").glob("dev.autopoiesis.*.plist"))
    import plistlib

    data = plistlib.loads(agent.read_bytes())
    assert (
        data["ProgramArguments"][-4:] == ["-C", root, "daemon", "run"] and data["RunAtLoad"] is True
    )
    assert plist.returncode == 0
    gone = cli(
        "-C", root, "daemon", "install", "--uninstall", "--kind", "systemd", env=env, process=True
    )
    assert gone.returncode == 0 and f"removed {unit}" in gone.stdout and not unit.exists()
    again = cli(
        "-C", root, "daemon", "install", "--uninstall", "--kind", "systemd", env=env, process=True
    )
    assert "no systemd unit of this memory repo" in again.stdout
    assert (
        cli("-C", root, "daemon", "install", "--kind", "upstart", env=env, process=True).returncode
        == 2
    )


def test_daemon_start_status_stop_through_the_cli(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli
) -> None:
    root = str(memory_repo.root)
    env = {"HOME": str(tmp_path)}
    started = cli("-C", root, "daemon", "start", env=env, process=True)
    assert started.returncode == 0, started.stderr
    pid = running_pid(memory_repo)
    assert pid is not None and f"pid {pid}" in started.stdout
    try:
        text = cli("-C", root, "daemon", "status", env=env, process=True).stdout
        assert text.startswith(f"daemon     running, pid {pid}, up ")
        assert "llm today  0 calls, 0 tokens paid, 0 failed" in text
        assert (
            cli("-C", root, "daemon", "start", env=env, process=True).stdout.strip()
            == f"the daemon already runs (pid {pid})"
        )
    finally:
        stopped = cli("-C", root, "daemon", "stop", env=env, process=True)
    assert stopped.stdout.strip() == f"stopped the daemon (pid {pid})"
    assert (
        cli("-C", root, "daemon", "stop", env=env, process=True).stdout.strip()
        == "no daemon runs for this memory repo"
    )
    assert cli("-C", root, "daemon", "reload", env=env, process=True).returncode == 1


def test_daemon_in_process_runs_a_due_job_and_stops_on_a_signal(memory_repo: MemoryRepo) -> None:
    """The loop itself, in this process: a due job runs, SIGTERM (sent to ourselves
    while the loop waits) ends it cleanly."""
    reg = JobRegistry([JobSpec("quick", quick, (Every(1),))])
    daemon = Daemon(memory_repo, lambda repo: reg)

    import threading

    def send() -> None:
        # once the job's result is in (not a guess at how long it takes to return)
        wait_for(lambda: daemon.results, timeout=120, what="the job's result")
        os.kill(os.getpid(), signal.SIGTERM)

    from autopoiesis.daemon.scheduler import Scheduler, StateStore

    store = StateStore(memory_repo.state_file("daemon_state"))
    Scheduler(reg, store)
    from datetime import timedelta

    store.jobs["quick"].first_seen -= timedelta(minutes=5)
    store.save()
    t = threading.Thread(target=send)
    t.start()
    assert daemon.run() == 0
    t.join()
    assert [r[:2] for r in daemon.results] == [("quick", "ok")]
    assert read_status(memory_repo)["state"] == "stopped"


def commit_slowly(ctx: JobContext) -> JobOutcome:
    """A job whose commit is stopped while git holds .git/index.lock (its pre-commit hook
    sleeps): what a timeout, `daemon stop` or `systemctl stop` does to a commit job."""
    from autopoiesis.git.repo import MemoryGit

    note = ctx.repo.root / "knowledge/reference/stopped.md"
    note.write_text(f"# stopped {ctx.reason}\n")
    MemoryGit(ctx.repo).commit_paths([ctx.repo.rel(note)], "memory: a commit that is stopped")
    return JobOutcome(True, "committed")


@pytest.mark.parametrize("why", ["timeout", "shutdown"])
def test_a_job_stopped_while_git_holds_the_index_lock_leaves_nothing_that_blocks(
    memory_repo: MemoryRepo, why: str
) -> None:
    """SIGTERM to a job's process group while its git commit held .git/index.lock used to
    leave the lock in 5 of 6 stops (git was killed with SIGKILL, and the record that proved
    the lock was ours deleted first): every later commit failed until a person removed it."""
    from autopoiesis.daemon.runner import start_child
    from autopoiesis.git.repo import MemoryGit

    hook = memory_repo.root / ".git/hooks/pre-commit.local"
    started = memory_repo.root / "hook.started"
    hook.write_text(f"#!/bin/sh\ntouch {started}\nsleep 30\n")
    hook.chmod(0o755)
    lock = memory_repo.root / ".git/index.lock"
    for attempt in range(3):
        started.unlink(missing_ok=True)
        ctx = JobContext(memory_repo, "commit", f"try {attempt}", None, None)  # type: ignore[arg-type]
        run = start_child(commit_slowly, ctx, timeout=600)
        wait_for(lambda: started.exists() and lock.exists(), what="git to hold the lock")
        run.terminate(why)
        deadline = time.monotonic() + 30
        while not run.done() and time.monotonic() < deadline:
            run.enforce(time.monotonic())
            time.sleep(0.05)
        result, _, _ = run.finish()
        assert result in ("timeout", "interrupted")
        assert not lock.exists()  # git was stopped with SIGTERM: it removed its own lock
        # and the next commit of this repo goes through
        hook.unlink()
        after = memory_repo.root / f"knowledge/reference/after{attempt}.md"
        after.write_text(f"# after {attempt}\n")
        with warnings.catch_warnings(record=True):  # a stale lock removed says so
            warnings.simplefilter("always")
            done = MemoryGit(memory_repo).commit_paths([memory_repo.rel(after)], "memory: after")
        assert done.sha, "the next commit was blocked"
        assert not lock.exists()
        hook.write_text(f"#!/bin/sh\ntouch {started}\nsleep 30\n")
        hook.chmod(0o755)


def test_daemon_log_job_names_a_job_or_the_daemon_itself(memory_repo: MemoryRepo, cli: Cli) -> None:
    """`daemon log --job` takes a job's name, or `daemon` for the daemon's own lines (the
    name its column shows them under); a name that is neither is refused with the names,
    not answered with "no log lines yet" as if that job had never run."""
    from autopoiesis.daemon.status import daemon_log

    log = daemon_log(memory_repo)
    log.append({"job": None, "event": "started", "pid": 1, "mode": "daemon"})
    log.append({"job": "commit", "event": "finished", "result": "ok"})
    own = cli("-C", str(memory_repo.root), "daemon", "log", "--job", "daemon")
    assert own.returncode == 0, own.stderr
    assert "daemon           started" in own.stdout and "commit" not in own.stdout
    typo = cli("-C", str(memory_repo.root), "daemon", "log", "--job", "comit")
    assert typo.returncode == 2
    assert "no daemon job named 'comit'" in typo.stderr and "commit" in typo.stderr
    none_yet = cli("-C", str(memory_repo.root), "daemon", "log", "--job", "prune")
    assert none_yet.returncode == 0
    assert "no log lines yet for job prune" in none_yet.stderr


def test_a_daemon_whose_memory_was_moved_stops_and_leaves_nothing_at_the_old_path(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A memory moved (or deleted) under a running daemon: it took its lock again at the
    old path, making a ghost `.autopoiesis/` there, and ran on, its jobs on no memory. It
    stops, says so on stderr, and writes nothing where the memory was."""
    home = tmp_path / "home"
    home.mkdir()
    root = memory_repo.root
    proc = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", str(root), "daemon", "run"],
        env={**os.environ, "HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: read_status(memory_repo).get("pid") == proc.pid, what="the status file")
        moved = root.with_name("moved")
        root.rename(moved)
        proc.send_signal(signal.SIGHUP)  # a wake-up, as the minute's heartbeat would be
        _, err = proc.communicate(timeout=60)  # guards the test run; it ran on before
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "was moved or deleted; the daemon stops" in err
    assert not root.exists()  # no ghost state folder where the memory was
    assert running_pid(MemoryRepo(moved)) is None


def test_a_daemon_lock_that_is_a_symlink_is_refused_and_its_target_left_alone(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli
) -> None:
    """The daemon wrote its pid record through a symlink at the lock's path, and emptied
    the file it pointed to when it stopped: any file of the user's could be lost so."""
    precious = tmp_path / "precious.txt"
    precious.write_text("a file of the user's\n")
    lock = memory_repo.state_path("locks", "daemon.lock")
    lock.unlink(missing_ok=True)
    lock.symlink_to(precious)
    refused = cli("-C", str(memory_repo.root), "run-due", "--job", "index", process=True)
    assert refused.returncode == 1
    assert "the lock file is a symbolic link" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert precious.read_text() == "a file of the user's\n"


def test_a_daemon_that_exits_at_once_is_explained_by_its_own_output_not_an_earlier_ones(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli
) -> None:
    """`daemon start` quoted the last lines of daemon.out, which keeps every earlier
    daemon's output: a start refused now was explained by a refusal of last week."""
    out = memory_repo.state_path("logs", "daemon.out")
    out.write_text("error: an old failure of an earlier daemon\n" * 3)
    lock = memory_repo.state_path("locks", "daemon.lock")
    lock.unlink(missing_ok=True)
    lock.mkdir()  # this start's own failure
    started = cli(
        "-C", str(memory_repo.root), "daemon", "start", env={"HOME": str(tmp_path)}, process=True
    )
    assert started.returncode == 1
    assert "the daemon exited at once" in started.stderr
    assert "Is a directory" in started.stderr
    assert "an old failure" not in started.stderr


def test_the_daemons_log_is_rotated_past_its_cap_and_read_across_both(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's log is the event log's own rotation (EventLog keep_bytes), as the
    harness log is: past its cap the file becomes daemon.jsonl.1, and reading it gives
    the rows of both generations in order."""
    from autopoiesis.core.paths import STATE_LOG_KEEP_BYTES
    from autopoiesis.daemon import status

    monkeypatch.setitem(STATE_LOG_KEEP_BYTES, "daemon_log", 400)
    for n in range(30):
        status.daemon_log(memory_repo).append({"job": "extract", "n": n})
    path = memory_repo.state_file("daemon_log")
    rotated = path.with_name(path.name + ".1")
    assert rotated.exists() and path.stat().st_size < 2 * 400
    rows = [r["n"] for r in status.daemon_log(memory_repo)]
    assert rows == sorted(rows) and rows[-1] == 29 and len(rows) < 30  # the oldest dropped
