"""`autopoiesis daemon run|start|stop|reload|status|log|install`, `autopoiesis run-due` and
`autopoiesis watch-sessions`: the process that keeps the memory (autopoiesis.daemon), its
jobs (daemon.memory_jobs)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo


def register(app: typer.Typer) -> None:
    daemon = typer.Typer(
        help="The daemon that keeps the memory: schedules, the session watcher, status and log.",
        no_args_is_help=True,
    )
    daemon.command("run")(daemon_run)
    daemon.command("start")(daemon_start)
    daemon.command("stop")(daemon_stop)
    daemon.command("reload")(daemon_reload)
    daemon.command("status")(daemon_status)
    daemon.command("log")(daemon_log)
    daemon.command("install")(daemon_install)
    daemon.command("mcp-host", hidden=True)(daemon_mcp_host)
    app.add_typer(daemon, name="daemon")
    app.command("run-due")(run_due)
    app.command("watch-sessions")(watch_sessions)


def daemon_run(
    ctx: typer.Context,
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Also print the log on stderr."),
) -> None:
    """Run the daemon in the foreground (what `daemon start` and a systemd unit run). While
    it runs it also answers `search`, `compile` and the harness hooks warm, and starts
    `autopoiesis mcp` servers warm (unless AUTOPOIESIS_NO_DAEMON is set where they run)."""
    import sys

    from autopoiesis.cli import main
    from autopoiesis.cli._common import get_repo
    from autopoiesis.daemon.memory_jobs import memory_jobs
    from autopoiesis.daemon.service import Daemon
    from autopoiesis.fastpath.forward import ForwardedCalls
    from autopoiesis.fastpath.server import WarmServer

    repo = get_repo(ctx)
    calls = ForwardedCalls(main)
    Daemon(
        repo,
        memory_jobs,
        echo=(lambda line: typer.echo(line, err=True)) if verbose else None,
        serve=lambda repo, note: WarmServer.start(
            repo,
            calls,
            note,
            mcp_host=[sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "daemon"]
            + ["mcp-host"],
        ),
    ).run()


def daemon_mcp_host(
    ctx: typer.Context,
    channel: int = typer.Option(..., "--channel", help="The daemon's end of the channel."),
) -> None:
    """The daemon's MCP host (fastpath/mcp_host.py), started by `daemon run`: the MCP SDK
    and the server loaded once, then `autopoiesis mcp` sessions forked for the relays of
    the light entry, until the daemon goes."""
    import autopoiesis.cli.mcp_cmd  # noqa: F401  the session's command, and the SDK under it
    from autopoiesis.cli import main
    from autopoiesis.cli._common import get_memory
    from autopoiesis.fastpath.forward import run_argv
    from autopoiesis.fastpath.mcp_host import run_host
    from autopoiesis.mcp.server import build_server

    memory = get_memory(ctx)
    # built once and dropped: pydantic's caches of the tools' argument types are then
    # filled, and a session builds its own server in well under half the time
    build_server(memory)
    raise typer.Exit(run_host(memory.repo, channel, lambda argv: run_argv(argv, main)))


def daemon_start(
    ctx: typer.Context,
    wait: float = typer.Option(15.0, "--wait", help="Seconds to wait for it to be up."),
) -> None:
    """Start the daemon in the background (its output goes to .autopoiesis/logs/daemon.out)."""
    import subprocess
    import sys

    from autopoiesis.cli._common import fail, get_repo
    from autopoiesis.daemon.status import read_status, running_pid

    repo = get_repo(ctx)
    pid = running_pid(repo)
    if pid is not None:
        typer.echo(f"the daemon already runs (pid {pid})")
        return
    out = repo.state_file("daemon_out")
    with repo.open_state_log("daemon_out") as fh:
        start_of_this_run = fh.tell()  # the file keeps every earlier daemon's output too
        proc = subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "daemon", "run"],
            cwd=repo.root,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=fh,
            start_new_session=True,
        )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(out, "rb") as fh:
                fh.seek(start_of_this_run)
                said = fh.read().decode("utf-8", errors="replace")
            tail = said.strip().splitlines()[-3:]
            raise fail(f"the daemon exited at once (status {proc.returncode}): {' / '.join(tail)}")
        if running_pid(repo) == proc.pid and read_status(repo).get("pid") == proc.pid:
            typer.echo(
                f"started the daemon, pid {proc.pid} (`autopoiesis daemon status` shows its jobs)"
            )
            return
        time.sleep(0.1)
    raise fail(f"the daemon (pid {proc.pid}) did not report within {wait:g} s; see {out}")


def daemon_stop(
    ctx: typer.Context,
    wait: float = typer.Option(60.0, "--wait", help="Seconds to wait for it to stop."),
) -> None:
    """Stop the daemon: SIGTERM, which checkpoints the running jobs and exits."""
    import os
    import signal

    from autopoiesis.cli._common import fail, get_repo
    from autopoiesis.daemon.status import running_pid

    repo = get_repo(ctx)
    pid = running_pid(repo)
    if pid is None:
        typer.echo("no daemon runs for this memory repo")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if running_pid(repo) != pid:
            typer.echo(f"stopped the daemon (pid {pid})")
            return
        time.sleep(0.1)
    raise fail(
        f"the daemon (pid {pid}) is still running after {wait:g} s; `kill -9 {pid}` ends it (its "
        "jobs run again at the next start)."
    )


def daemon_reload(ctx: typer.Context) -> None:
    """Make the daemon re-read memory-config.yaml (SIGHUP); `daemon log` says how it went."""
    import os
    import signal

    from autopoiesis.cli._common import fail, get_repo
    from autopoiesis.daemon.status import running_pid

    repo = get_repo(ctx)
    pid = running_pid(repo)
    if pid is None:
        raise fail("no daemon runs for this memory repo; `autopoiesis daemon start` starts one.")
    os.kill(pid, signal.SIGHUP)
    typer.echo(f"asked the daemon (pid {pid}) to reload its configuration")


def daemon_status(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """Pid, uptime, whether sync works, each job's state, last run and result, next run; LLM
    calls and tokens today. Exits 1 when the clone's sync has stopped (a conflict that needs
    a person, a remote that refuses): a monitor can watch the exit status."""
    from autopoiesis.cli._common import echo_json, get_repo
    from autopoiesis.daemon.memory_jobs import memory_jobs
    from autopoiesis.daemon.scheduler import Scheduler, StateStore
    from autopoiesis.daemon.status import format_status, running_pid, status_report

    repo = get_repo(ctx)
    jobs = None
    if running_pid(repo) is None:  # no daemon: what the state says, and when each job is due
        store = StateStore(repo.state_file("daemon_state"))
        store.path = None  # a status look must not write the state
        jobs = Scheduler(memory_jobs(repo), store).snapshot()
    report = status_report(repo, jobs)
    if as_json:
        echo_json(report)
    else:
        typer.echo(format_status(report))
    if report["sync"]["problem"]:
        raise typer.Exit(1)


def daemon_log(
    ctx: typer.Context,
    job: str | None = typer.Option(
        None, "--job", help="Only this job's lines (daemon: the daemon's own)."
    ),
    follow: bool = typer.Option(
        False, "-f", "--follow", help="Keep printing new lines as they come (Ctrl-C stops)."
    ),
    lines: int = typer.Option(
        40, "-n", "--lines", min=0, help="How many of the last lines to print first."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON lines as they are."),
) -> None:
    """The daemon's log (JSON lines in .autopoiesis/logs/daemon.jsonl), human-friendly."""
    import json

    from autopoiesis.cli._common import get_repo
    from autopoiesis.daemon import status

    repo = get_repo(ctx)
    if job is not None and job != status.DAEMON_ROWS:
        _known_job(repo, job)
    log = status.daemon_log(repo)
    keep = status.LogFilter(job)
    show = (lambda row: json.dumps(row, ensure_ascii=False)) if as_json else status.format_log_row
    rows = [r for r in log if keep(r)]
    for row in rows[-lines:] if lines > 0 else []:
        typer.echo(show(row))
    if not rows and not follow:
        hint = (
            "`autopoiesis daemon start` starts the daemon"
            if status.running_pid(repo) is None
            else "`autopoiesis daemon status` says when each job runs next"
        )
        typer.echo("no log lines yet" + (f" for job {job}" if job else "") + f" ({hint})", err=True)
    if follow:
        try:
            for row in status.follow(log.path, keep):
                typer.echo(show(row))
        except KeyboardInterrupt:
            return


def _known_job(repo: MemoryRepo, job: str) -> None:
    """Refuse a --job no daemon job of REPO is named (a typo would show no line, as if the
    job had never run)."""
    from autopoiesis.daemon.memory_jobs import memory_jobs
    from autopoiesis.daemon.status import DAEMON_ROWS
    from autopoiesis.errors import AutopoiesisError

    try:
        names = [j.name for j in memory_jobs(repo)]
    except AutopoiesisError:  # a broken config: the log is where to look, so show it
        return
    if job not in names:
        raise typer.BadParameter(
            f"no daemon job named {job!r}; the jobs are: {', '.join(names)}, and "
            f"{DAEMON_ROWS} for the daemon's own lines",
            param_hint="--job",
        )


def daemon_install(
    ctx: typer.Context,
    uninstall: bool = typer.Option(
        False, "--uninstall", help="Stop, disable and remove the unit instead."
    ),
    kind: str | None = typer.Option(
        None, "--kind", metavar="systemd|launchd", help="Default: launchd on macOS, else systemd."
    ),
) -> None:
    """Write a systemd user unit (or a launchd agent) that runs the daemon for this repo."""
    from autopoiesis.cli._common import fail, get_repo
    from autopoiesis.daemon import install as inst

    if kind is not None and kind not in inst.KINDS:
        raise fail(f"--kind {kind!r}: write one of {', '.join(inst.KINDS)}.", 2)
    repo = get_repo(ctx)
    if uninstall:
        gone = inst.uninstall(repo, kind)
        if gone is None:
            typer.echo(
                f"no {kind or inst.default_kind()} unit of this memory repo "
                f"({inst.unit_path(repo, kind or inst.default_kind())})"
            )
            return
        typer.echo(f"removed {gone.path}")
        for step in gone.next_steps:
            typer.echo(f"  then run: {step}")
        return
    done = inst.install(repo, kind)
    typer.echo(f"wrote {done.path}")
    typer.echo("enable it with:")
    for step in done.next_steps:
        typer.echo(f"  {step}")


def run_due(
    ctx: typer.Context,
    job: list[str] | None = typer.Option(
        None, "--job", help="Run this job now, due or not (repeatable)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the runs as JSON."),
    verbose: bool = typer.Option(
        False, "-v", "--verbose", help="Print the log lines as they come."
    ),
) -> None:
    """Run whatever is due once (and what it triggers), then exit: the daemon's jobs for cron
    (`*/5 * * * * autopoiesis -C ~/memory run-due`)."""
    from autopoiesis.cli._common import echo_json, fail, get_repo
    from autopoiesis.daemon.memory_jobs import memory_jobs
    from autopoiesis.daemon.scheduler import Scheduler, StateStore
    from autopoiesis.daemon.service import run_due as run_due_once
    from autopoiesis.daemon.status import running_pid

    repo = get_repo(ctx)
    pid = running_pid(repo)
    if pid is not None:
        raise fail(
            f"the daemon (pid {pid}) runs this memory repo's jobs itself; `autopoiesis daemon "
            "status` shows them."
        )
    if job:
        registry = memory_jobs(repo)
        for name in job:
            registry.get(name)  # an unknown name is refused before anything runs
        scheduler = Scheduler(registry, StateStore(repo.state_file("daemon_state")))
        for name in job:
            scheduler.request(name, "asked by hand (run-due --job)")
    runs = run_due_once(
        repo, memory_jobs, echo=(lambda line: typer.echo(line, err=True)) if verbose else None
    )
    if as_json:
        echo_json([{"job": n, "result": r, "message": m} for n, r, m in runs])
    else:
        for name, result, message in runs:
            typer.echo(f"{name:<16} {result:<8} {message}")
        if not runs:
            typer.echo("nothing is due")
    if any(r in ("failed", "timeout") for _, r, _ in runs):
        raise typer.Exit(1)


def watch_sessions(
    ctx: typer.Context,
    once: bool = typer.Option(
        False, "--once", help="Scan once and exit (else scan every minute until Ctrl-C)."
    ),
    idle: int | None = typer.Option(
        None,
        "--idle-minutes",
        min=1,
        max=10_080,
        help="Override daemon.session_idle_minutes (1 to 10,080).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Import the agent sessions (daemon.session_globs) that have ended and are not imported yet."""
    from autopoiesis.cli._common import echo_json, get_repo
    from autopoiesis.daemon.sessions import SessionWatcher

    repo = get_repo(ctx)
    while True:
        report = SessionWatcher(repo, idle_minutes=idle).scan()
        if as_json:
            echo_json(
                {
                    **report.__dict__,
                    "next_check": str(report.next_check) if report.next_check else None,
                }
            )
        else:
            for source, transcripts in report.imported:
                typer.echo(f"imported {source} -> {', '.join(transcripts)}")
            for source, why in report.refused:
                typer.echo(f"refused {source}: {why}", err=True)
            typer.echo(report.summary())
        if once and not report.more:
            return
        if not report.more:
            try:
                time.sleep(60)
            except KeyboardInterrupt:
                return
