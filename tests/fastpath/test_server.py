"""CLI calls answered warm by the running daemon (fastpath/wire.py, fastpath/server.py,
fastpath/forward.py): a real daemon on a temporary memory repo, real `python -m autopoiesis`
calls. What it answers must be what the call prints by itself (AUTOPOIESIS_NO_DAEMON=1),
byte for byte, exit status included; a daemon that is gone, killed mid-call, of another
version or held up by a silent client costs a call nothing."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.daemon.status import read_status
from autopoiesis.fastpath import wire as warm
from tests.conftest import Cli, CliResult
from tests.daemon.helpers import log_rows, wait_for


def _served(repo: MemoryRepo) -> list[dict]:
    return [r for r in log_rows(repo) if r.get("event") == "served"]


class Daemon:
    """`autopoiesis daemon run` on REPO, in a process of its own."""

    def __init__(self, repo: MemoryRepo, env: dict[str, str]):
        self.repo = repo
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "daemon", "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        started = len([r for r in log_rows(repo) if r.get("event") == "mcp_ready"])
        wait_for(  # its MCP host too, so that the rows logged next are the calls'
            lambda: (
                len([r for r in log_rows(repo) if r.get("event") == "mcp_ready"]) > started
                or self.proc.poll() is not None
            ),
            timeout=120.0,
            what="the daemon and its MCP host to start",
        )
        assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if k != warm.NO_DAEMON_ENV}
    return {**base, "HOME": str(home), "CODEX_HOME": str(home / ".codex")}


@pytest.fixture
def repo(memory_repo: MemoryRepo, commit_all) -> MemoryRepo:
    """A memory repo with a built index and something to find."""
    ref = memory_repo.root / "knowledge/reference/billing.md"
    ref.write_text(
        "---\ntype: reference\n---\n\n# Billing\n\n## Facts\n"
        "- The billing database runs Postgres 17 on the host pg-billing-2.\n"
        "- Invoices are generated nightly by the invoice-runner job.\n"
        "- Odd bytes stay as they are: caf\u00e9, \u2603, tab\there.\n"
    )
    commit_all(memory_repo, "memory: billing facts")
    from autopoiesis.index import SearchIndex

    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    return memory_repo


@pytest.fixture
def daemon(repo: MemoryRepo, env: dict[str, str]) -> Iterator[Daemon]:
    d = Daemon(repo, env)
    try:
        yield d
    finally:
        d.stop()


def no_daemon(env: dict[str, str]) -> dict[str, str]:
    """ENV for a call run here, never answered by the daemon."""
    return {**env, warm.NO_DAEMON_ENV: "1"}


def same(a: CliResult, b: CliResult) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


@pytest.mark.slow
def test_search_compile_and_hooks_answered_by_the_daemon_as_by_a_process_of_their_own(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], tmp_path: Path, cli: Cli
) -> None:
    root = str(repo.root)
    state = [
        repo.state_file("inclusions"),
        repo.state_file("gate_log"),
        repo.state_file("harness_sessions"),
        repo.state_file("harness_log"),
    ]

    def snapshot() -> dict[Path, bytes | None]:
        return {p: p.read_bytes() if p.exists() else None for p in state}

    def restore(saved: dict[Path, bytes | None]) -> None:
        for p, data in saved.items():
            if data is None:
                p.unlink(missing_ok=True)
            else:
                p.write_bytes(data)

    calls: list[tuple[list[str], bytes | None, Path | None]] = [
        (["-C", root, "search", "billing database"], None, None),
        ([f"-C{root}", "search", "billing database"], None, None),  # -CDIR, as click reads it
        (["-C", root, "search", "billing database", "--json", "--explain"], None, None),
        (
            ["search", "postgres host", "--mode", "bm25", "-k", "1"],
            None,
            repo.root / "knowledge",
        ),  # the repo found from the cwd
        (["-C", root, "search", "zzzz nothing matches qqqq"], None, None),
        (
            ["-C", root, "compile", "what runs the billing database?"],
            None,
            None,
        ),  # records inclusions: state restored
        (
            ["-C", root, "compile", "what runs the billing database?", "--json", "--dry-run"],
            None,
            None,
        ),
        (["-C", root, "compile", "billing", "--explain", "--budget", "3000"], None, None),
        (
            ["-C", root, "hook", "claude-code", "UserPromptSubmit"],
            json.dumps(
                {
                    "session_id": "s1",
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": "which host runs the billing database?",
                }
            ).encode(),
            None,
        ),
        (
            ["-C", root, "hook", "claude-code", "SessionStart"],
            json.dumps(
                {
                    "session_id": "s2",
                    "hook_event_name": "SessionStart",
                    "source": "startup",
                    "cwd": str(tmp_path),
                }
            ).encode(),
            None,
        ),
        (
            ["-C", root, "hook", "claude-code", "UserPromptSubmit"],
            b"\xff not json \x00",
            None,
        ),  # a bad payload: logged, exit 0
        (
            ["-C", root, "hook", "codex", "notify", json.dumps({"type": "something-else"})],
            None,
            None,
        ),
        (
            [f"-C{root}", "hook", "codex", "notify", json.dumps({"type": "something-else"})],
            None,
            None,
        ),
    ]
    for args, stdin, cwd in calls:
        before = snapshot()
        count = len(_served(repo))
        warm_run = cli(*args, env=env, input=stdin, cwd=cwd, process=True, text=False)
        assert len(_served(repo)) == count + 1, (args, log_rows(repo)[-3:])
        restore(before)
        local = cli(*args, env=no_daemon(env), input=stdin, cwd=cwd, process=True, text=False)
        restore(before)
        same(warm_run, local)
        assert warm_run.returncode == 0, (args, warm_run.stderr)
    assert (
        b"pg-billing-2"
        in cli("-C", root, "search", "billing database", env=env, process=True, text=False).stdout
    )
    hook = cli(*calls[8][0], env=env, input=calls[8][1], process=True, text=False)
    assert (
        b"pg-billing-2" in hook.stdout
        and json.loads(hook.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    )

    # the log names the command, its time and status; never what was asked
    rows = _served(repo)
    assert {r["command"] for r in rows} == {
        "search",
        "compile",
        "hook claude-code UserPromptSubmit",
        "hook claude-code SessionStart",
        "hook codex notify",
    }
    assert all(isinstance(r["ms"], float) and r["code"] == 0 for r in rows)
    log_text = repo.state_file("daemon_log").read_text()
    assert "billing" not in log_text and "postgres" not in log_text

    # what is not forwarded: help, a batch from stdin, other commands, AUTOPOIESIS_NO_DAEMON
    count = len(_served(repo))
    assert b"--mode" in cli("-C", root, "search", "-h", env=env, process=True, text=False).stdout
    batch = cli(
        "-C",
        root,
        "search",
        "--batch",
        "-",
        env=env,
        input=b"billing database\npostgres\n",
        process=True,
        text=False,
    )
    assert batch.returncode == 0 and len(batch.stdout.splitlines()) == 2
    assert cli("-C", root, "index", "status", env=env, process=True, text=False).returncode == 0
    assert (
        cli(
            "-C", root, "search", "billing", env=no_daemon(env), process=True, text=False
        ).returncode
        == 0
    )
    assert len(_served(repo)) == count

    # the count reaches the status file (at the latest when the daemon stops)
    daemon.stop()
    assert read_status(repo)["served"] == count


@pytest.mark.slow
def test_a_users_mistake_gets_the_same_error_and_status_as_without_the_daemon(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], cli: Cli
) -> None:
    root = str(repo.root)
    mistakes = [  # (arguments, exit status): usage errors 2, what the library refuses 1
        (["search", "x", "--mode", "fast"], 2),
        (["search", "x", "--nope"], 2),
        (["search", "x", "--limit", "0"], 2),
        (["search", "x", "--category", "recipes"], 2),
        (["search"], 2),
        (["compile"], 2),
        (["compile", "x", "--session", "no-such-file.json"], 2),
        (["compile", "x", "--budget", "lots"], 2),
        (["compile", "x", "--budget", "100"], 1),  # below what the system prompt needs
    ]
    for args, status in mistakes:
        count = len(_served(repo))
        warm_run = cli("-C", root, *args, env=env, process=True, text=False)
        local = cli("-C", root, *args, env=no_daemon(env), process=True, text=False)
        assert len(_served(repo)) == count + 1, args
        same(warm_run, local)
        assert warm_run.returncode == status and b"Traceback" not in warm_run.stderr, (
            args,
            warm_run.stderr,
        )
    assert (
        b"Invalid value for --mode: use hybrid or bm25"
        in cli(
            "-C", root, "search", "x", "--mode", "fast", env=env, process=True, text=False
        ).stderr
    )
    # a repo that is not one: the client runs it, with the usual message
    nowhere = cli(
        "-C", str(repo.root / "knowledge"), "search", "x", env=env, process=True, text=False
    )
    assert nowhere.returncode == 1 and b"is not a memory repository" in nowhere.stderr


@pytest.mark.slow
def test_the_socket_is_the_users_alone(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str]
) -> None:
    path = warm.socket_path(repo)
    mode = os.stat(path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    if os.getuid() != 0:
        pytest.skip("checking SO_PEERCRED needs a process of another user (root can make one)")
    os.chmod(path, 0o666)  # past the file mode: the daemon itself must refuse another uid
    import autopoiesis

    request = warm.encode(
        warm.make_request(
            ["-C", str(repo.root), "search", "billing"], None, autopoiesis.__version__
        )
        or {}
    )
    folder = os.open(
        path.parent, os.O_RDONLY
    )  # reached through it: the tmp folders above are root's
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a process of user nobody
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            s.connect(f"/proc/self/fd/{folder}/{path.name}")
            s.sendall(request)
            s.settimeout(120)  # a hang guard: the daemon answers at once
            os.write(w, repr(s.recv(100)).encode())
        except BaseException as exc:
            os.write(w, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r) as fh:
        answer = fh.read()
    os.close(folder)
    assert "accepted" not in answer and answer.startswith(
        ("b''", "ConnectionResetError", "BrokenPipeError")
    ), answer
    refused = [r for r in log_rows(repo) if r.get("event") == "serve_refused"]
    assert refused and "uid 65534" in refused[-1]["message"]


@pytest.mark.slow
def test_a_killed_daemon_breaks_nothing_and_the_next_one_serves_again(
    repo: MemoryRepo, env: dict[str, str], cli: Cli
) -> None:
    root = str(repo.root)
    first = Daemon(repo, env)
    try:
        assert (
            cli("-C", root, "search", "billing", env=env, process=True, text=False).returncode == 0
        )
        first.proc.kill()  # SIGKILL: no clean-up, the socket file stays
        first.proc.wait()
    finally:
        first.stop()
    assert warm.socket_path(repo).exists()
    count = len(_served(repo))
    after = cli("-C", root, "search", "billing database", env=env, process=True, text=False)
    same(
        after,
        cli("-C", root, "search", "billing database", env=no_daemon(env), process=True, text=False),
    )
    assert after.returncode == 0 and b"pg-billing-2" in after.stdout and len(_served(repo)) == count
    second = Daemon(repo, env)  # takes the lock over, replaces the socket
    try:
        assert (
            cli("-C", root, "search", "billing", env=env, process=True, text=False).returncode == 0
        )
        assert len(_served(repo)) == count + 1
    finally:
        second.stop()
    assert not warm.socket_path(repo).exists()  # a clean exit removes it


def _slow_git(tmp_path: Path) -> tuple[Path, Path]:
    """(a folder whose `git` sleeps 60 s the first time it runs, the file where that first
    git writes its sleep's pid): put the folder first on PATH to hold a call up in git;
    kill that pid to let the call go on."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "git-waiting"
    real_git = subprocess.run(
        ["sh", "-c", "command -v git"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (bin_dir / "git").write_text(
        f'#!/bin/sh\nif [ ! -e "{marker}" ]; then sleep 60 & echo $! > "{marker}"; wait $!; fi\nexec {real_git} "$@"\n'
    )
    (bin_dir / "git").chmod(0o755)
    return bin_dir, marker


@pytest.mark.slow
def test_a_daemon_killed_in_the_middle_of_a_call_leaves_it_to_the_client(
    repo: MemoryRepo, env: dict[str, str], tmp_path: Path, cli: Cli
) -> None:
    """The call's first `git` (in the daemon: the call runs with the client's PATH) waits;
    the daemon is killed meanwhile; the client, its answer cut short, runs the call itself."""
    bin_dir, marker = _slow_git(tmp_path)
    d = Daemon(repo, env)
    try:
        slow_env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}
        client = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "autopoiesis",
                "-C",
                str(repo.root),
                "search",
                "billing database",
            ],
            env=slow_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        wait_for(
            lambda: marker.exists() and marker.read_text().strip(),
            what="the daemon's call to reach git",
        )
        d.proc.kill()
        out, err = client.communicate(timeout=60)
    finally:
        d.stop()
        if marker.exists() and marker.read_text().strip():
            subprocess.run(["kill", marker.read_text().strip()], capture_output=True)
    local = cli(
        "-C",
        str(repo.root),
        "search",
        "billing database",
        env=no_daemon(env),
        process=True,
        text=False,
    )
    assert (client.returncode, out, err) == (local.returncode, local.stdout, local.stderr)
    assert b"pg-billing-2" in out and not _served(repo)


@pytest.mark.slow
def test_a_daemon_that_hangs_in_the_middle_of_a_call_leaves_it_to_the_client(
    repo: MemoryRepo, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon accepts the call and then never answers (here its `git` sleeps; a daemon
    stopped with SIGSTOP looks the same): the client stops waiting after REPLY_TIMEOUT
    and says no one answered, so its caller runs the call itself."""
    bin_dir, marker = _slow_git(tmp_path)
    d = Daemon(repo, env)
    try:
        monkeypatch.delenv(warm.NO_DAEMON_ENV, raising=False)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{env['PATH']}")
        monkeypatch.setattr(warm, "REPLY_TIMEOUT", 2.0)
        started = time.monotonic()
        reply = warm.forward(
            str(repo.root),
            ["-C", str(repo.root), "search", "billing database"],
            __import__("autopoiesis").__version__,
        )
        waited = time.monotonic() - started
        assert marker.exists(), "the daemon took the call"
        # it gave up at REPLY_TIMEOUT (not before), while the daemon's git still slept: a
        # client that waited for the daemon would have had its answer after that git's 60 s
        assert reply is None and 2.0 <= waited < 60.0
    finally:
        # the held git goes on first: the daemon finishes the call, then stops at once (not after 30 s)
        if marker.exists() and marker.read_text().strip():
            subprocess.run(["kill", marker.read_text().strip()], capture_output=True)
        d.stop()


@pytest.mark.slow
def test_another_version_and_a_silent_client_are_no_trouble(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    root = str(repo.root)
    # another version: the daemon declines before running anything, and says so in its log
    monkeypatch.setenv("HOME", env["HOME"])
    assert warm.forward(root, ["-C", root, "search", "billing"], "0.0.0-another") is None
    declined = [r for r in log_rows(repo) if r.get("event") == "serve_declined"]
    assert declined and "0.0.0-another" in declined[-1]["message"]
    import autopoiesis

    reply = warm.forward(root, ["-C", root, "search", "billing"], autopoiesis.__version__)
    assert reply is not None and reply.code == 0 and b"pg-billing-2" in reply.stdout
    # only what the light entry forwards is run: not a command that runs on, nor one that stops the daemon
    for argv in (
        ["-C", root, "daemon", "stop"],
        ["-C", root, "watch"],
        ["-C", root, "search", "--batch", "-"],
    ):
        assert warm.forward(root, argv, autopoiesis.__version__) is None
        assert "not a call the daemon answers" in log_rows(repo)[-1]["message"]
    assert daemon.proc.poll() is None

    # a client that connects and says nothing: the next call is served at once, the silent one dropped
    count = len(_served(repo))
    silent = socket.socket(socket.AF_UNIX)
    with warm.unix_address(warm.socket_path(repo)) as address:  # a deep tmp path is too long
        silent.connect(address)
    try:
        answered = cli("-C", root, "search", "billing database", env=env, process=True, text=False)
        assert answered.returncode == 0 and b"pg-billing-2" in answered.stdout
        # a daemon blocked on the silent client would never have answered (the cli's own
        # timeout is the hang guard): answered is what shows it was not
        assert len(_served(repo)) == count + 1
        silent.settimeout(120)  # a hang guard: dropped READ_TIMEOUT_SECONDS after it connected
        assert silent.recv(10) == b""  # dropped
        assert any(r.get("event") == "serve_dropped" for r in log_rows(repo))
    finally:
        silent.close()
    # half a request, then gone; a line that is not JSON: neither stops the daemon
    for junk in (b'{"version": "0.1', b"\xff\xfe not json\n"):
        s = socket.socket(socket.AF_UNIX)
        with warm.unix_address(warm.socket_path(repo)) as address:
            s.connect(address)
        s.sendall(junk)
        s.close()
    assert cli("-C", root, "search", "billing", env=env, process=True, text=False).returncode == 0
    assert len(_served(repo)) == count + 2 and daemon.proc.poll() is None


@pytest.mark.slow
def test_a_deep_repo_path_is_served_through_its_folder(
    tmp_path: Path, env: dict[str, str], commit_all, cli: Cli
) -> None:
    from autopoiesis.memory.initialize import init_memory_repo

    deep = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 6))
    repo = MemoryRepo(init_memory_repo(deep / "memory", build_index=False).root)
    assert len(os.fsencode(warm.socket_path(repo))) > 108  # past what an AF_UNIX address holds
    d = Daemon(repo, env)
    try:
        assert warm.socket_path(repo).exists()
        answered = cli(
            "-C", str(repo.root), "search", "identity", env=env, process=True, text=False
        )
        assert answered.returncode == 0 and len(_served(repo)) == 1
        same(
            answered,
            cli(
                "-C",
                str(repo.root),
                "search",
                "identity",
                env=no_daemon(env),
                process=True,
                text=False,
            ),
        )
    finally:
        d.stop()


def test_a_forked_job_does_not_hold_the_socket(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    """Jobs are forked from the daemon: none of them may answer on (or keep open) its socket."""
    from datetime import timedelta

    from autopoiesis.cli import main as cli_main
    from autopoiesis.daemon.jobs import Every, JobRegistry, JobSpec
    from autopoiesis.daemon.scheduler import Scheduler, StateStore
    from autopoiesis.daemon.service import Daemon as InProcessDaemon
    from autopoiesis.fastpath.forward import ForwardedCalls
    from autopoiesis.fastpath.server import WarmServer

    out = tmp_path / "job-sockets.json"
    reg = JobRegistry([JobSpec("sockets", _list_sockets, (Every(1),))])
    store = StateStore(memory_repo.state_file("daemon_state"))
    Scheduler(reg, store)
    store.jobs["sockets"].first_seen -= timedelta(minutes=5)
    store.save()
    daemon = InProcessDaemon(
        memory_repo,
        lambda repo: reg,
        serve=lambda repo, note: WarmServer.start(repo, ForwardedCalls(cli_main), note),
    )
    seen: dict[str, int] = {}

    import threading

    def stop_when_done() -> None:
        while not out.exists():
            time.sleep(0.05)
        assert daemon._server is not None
        seen["listener"] = os.fstat(daemon._server.listener.fileno()).st_ino
        os.kill(os.getpid(), signal.SIGTERM)

    t = threading.Thread(target=stop_when_done)
    t.start()
    assert daemon.run() == 0
    t.join()
    job_sockets = json.loads(out.read_text())
    assert seen["listener"] and f"socket:[{seen['listener']}]" not in job_sockets


def _list_sockets(ctx):  # a job (module level: the runner forks)
    from autopoiesis.daemon.jobs import JobOutcome

    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    (Path(ctx.repo.root).parent / "job-sockets.json").write_text(json.dumps(fds))
    return JobOutcome(False, "listed")


@pytest.mark.parametrize(
    ("argv", "warm", "logged"),
    [
        (["-C/x", "search", "q"], True, "search"),
        (["-C", "/x", "search", "q"], True, "search"),
        (["-C/x", "compile", "m"], True, "compile"),
        (["-C/x", "hook", "claude-code", "Stop"], True, "hook claude-code Stop"),
        (["search", "q"], True, "search"),
        (["-C/x", "search", "--batch", "-"], False, "search"),
        (["-C/x", "index", "status"], False, "?"),
        (["-C"], False, "?"),
        (["-C/x"], False, "?"),
    ],
)
def test_both_forms_of_the_repo_option_are_read_alike(
    argv: list[str], warm: bool, logged: str
) -> None:
    """`-C DIR` and `-CDIR` (as click reads it) are one option everywhere: the light entry
    forwards both, the daemon's log names the command after either."""
    from autopoiesis.fastpath.rules import split_repo_dir, warm_call
    from autopoiesis.fastpath.server import command_name

    assert warm_call(argv) is warm
    assert command_name(argv) == logged
    if argv[0].startswith("-C") and len(argv) > 1:
        assert split_repo_dir(argv)[0] == "/x"


@pytest.mark.slow
def test_warm_calls_keep_nothing_of_each_call(memory_repo: MemoryRepo) -> None:
    """The CLI framework caches a wrapper per output stream, keyed by the stream and never
    let go: a fresh stream per forwarded call kept every call's output alive, and the
    daemon's RSS grew without a plateau over warm compiles (38 -> 48 MB over 1,350)."""
    import gc

    from autopoiesis import __version__
    from autopoiesis.cli import main as cli_main
    from autopoiesis.fastpath.forward import ForwardedCalls, _Captured

    calls = ForwardedCalls(cli_main)

    def request(i: int, errors: str = "strict") -> dict:
        return {
            "argv": ["-C", str(memory_repo.root), "compile", f"what changed in week {i}"],
            "version": __version__,
            "env": dict(os.environ),
            "cwd": str(memory_repo.root),
            "errors": [errors, errors],
            "tty": [False, False],
            "stdin": None,
            "umask": 0o022,
        }

    first = calls(request(0))
    assert first[0] == 0 and b"week 0" not in first[1]
    for i in range(1, 40):
        code, out, err = calls(request(i, "strict" if i % 2 else "replace"))
        assert code == 0 and out == first[1] and err == first[2]  # no output of another call
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, _Captured)]
    assert len(alive) <= 4, f"{len(alive)} captured streams kept after 40 calls"
