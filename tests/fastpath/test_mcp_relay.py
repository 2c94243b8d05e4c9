"""`autopoiesis mcp` started warm by the running daemon (fastpath/relay.py, fastpath/mcp_host.py):
a real daemon on a temporary memory repo, real `python -m autopoiesis -C REPO mcp` processes
spoken to over stdio in JSON-RPC as an MCP client does (initialize, tools/list, tools/call),
against the same server run in its own process. The hostile cases: the daemon stopped or
killed in the middle of a session, a session's process killed, a client killed, several
sessions at once, a client of another version, no daemon, a stale socket."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.fastpath import wire
from tests.daemon.helpers import log_rows, wait_for

pytestmark = pytest.mark.slow

HANG = 120.0  # seconds before a read that never ends fails the test (a hang, not a speed limit)


def _rows(repo: MemoryRepo, event: str) -> list[dict[str, Any]]:
    return [r for r in log_rows(repo) if r.get("event") == event]


class Daemon:
    """`autopoiesis daemon run` on REPO, in a process of its own, once its MCP host is ready."""

    def __init__(self, repo: MemoryRepo, env: dict[str, str]):
        self.repo = repo
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "daemon", "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started = len(_rows(repo, "mcp_ready"))
        wait_for(
            lambda: len(_rows(repo, "mcp_ready")) > started or self.proc.poll() is not None,
            timeout=HANG,
            what="the daemon's MCP host to be ready",
        )
        assert self.proc.poll() is None
        self.host_pid = _rows(repo, "mcp_ready")[-1]["pid"]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=HANG)


class Client:
    """An MCP client's end of `autopoiesis -C REPO mcp` over stdio (newline-delimited JSON-RPC)."""

    def __init__(self, repo: MemoryRepo, env: dict[str, str], cwd: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "mcp"],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.send(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method}
            | ({"params": params} if params is not None else {})
        )
        assert self.proc.stdout is not None
        while True:  # notifications (a log message) may come first
            ready, _, _ = select.select([self.proc.stdout], [], [], HANG)
            assert ready, f"no answer to {method}"
            line = self.proc.stdout.readline()
            assert line, f"the server closed its output instead of answering {method}"
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                return answer

    def start(self) -> dict[str, Any]:
        """initialize, then the `initialized` notification: the server's answer."""
        answer = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def finish(self) -> tuple[int, str]:
        """Close the server's input, as a client ending the session: (exit status, stderr)."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=HANG)
        err = self.proc.stderr.read().decode()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code, err


def _conversation(client: Client) -> list[dict[str, Any]]:
    """What an agent's first minute asks: the answers, ids included."""
    return [
        client.start(),
        client.request("tools/list"),
        client.call("search", {"query": "which host runs the billing database", "limit": 3}),
        client.call("read", {"path": "knowledge/reference/billing.md", "end_line": 3}),
        client.call("search", {"query": "x", "limit": 0}),  # an argument error: one line
    ]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if k != wire.NO_DAEMON_ENV}
    return {**base, "HOME": str(home), "CODEX_HOME": str(home / ".codex")}


@pytest.fixture
def repo(memory_repo: MemoryRepo, commit_all) -> MemoryRepo:
    (memory_repo.root / "knowledge/reference/billing.md").write_text(
        "---\ntype: reference\n---\n\n# Billing\n\n## Facts\n"
        "- The billing database runs Postgres 17 on the host pg-billing-2.\n"
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


def _gone(pid: int) -> bool:
    """Whether process PID has exited (a zombie not yet reaped counts)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _served(repo: MemoryRepo) -> list[dict[str, Any]]:
    return [r for r in _rows(repo, "mcp_session") if r.get("served")]


def test_a_session_of_the_daemon_answers_as_the_server_in_its_own_process(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], tmp_path: Path
) -> None:
    warm = Client(repo, env, tmp_path)
    warm_answers = _conversation(warm)
    assert warm.finish() == (0, "")
    wait_for(lambda: len(_served(repo)) == 1, timeout=HANG, what="the session's end in the log")
    assert _served(repo)[0]["code"] == 0

    cold = Client(repo, {**env, wire.NO_DAEMON_ENV: "1"}, tmp_path)
    cold_answers = _conversation(cold)
    assert cold.finish() == (0, "")
    assert len(_served(repo)) == 1  # that one ran in its own process

    assert warm_answers == cold_answers
    init, listed, found, read, wrong = warm_answers
    assert init["result"]["serverInfo"]["name"] == "autopoiesis"
    assert len(listed["result"]["tools"]) == 10
    hits = json.loads(found["result"]["content"][0]["text"])
    assert hits["results"][0]["path"] == "knowledge/reference/billing.md"
    assert "Billing" not in read["result"]["content"][0]["text"]  # lines 1-3: the front matter
    assert wrong["result"]["isError"] and "limit" in wrong["result"]["content"][0]["text"]


def test_sessions_at_once_each_get_their_own_answers(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], tmp_path: Path
) -> None:
    clients = [Client(repo, env, tmp_path) for _ in range(3)]
    for c in clients:
        assert c.start()["result"]["serverInfo"]["name"] == "autopoiesis"
    for i, c in enumerate(reversed(clients)):  # interleaved: each its own ids and answers
        c.next_id = 100 * (i + 1)
        answer = c.call("read", {"path": "knowledge/reference/billing.md", "start_line": 6})
        assert answer["id"] == 100 * (i + 1) + 1
        assert "pg-billing-2" in answer["result"]["content"][0]["text"]
    assert [c.finish()[0] for c in clients] == [0, 0, 0]
    wait_for(lambda: len(_served(repo)) == 3, timeout=HANG, what="three sessions in the log")
    assert len({r["pid"] for r in _served(repo)}) == 3


def test_a_session_outlives_the_daemon_stopped_or_killed(
    repo: MemoryRepo, env: dict[str, str], tmp_path: Path
) -> None:
    first = Daemon(repo, env)
    stopped = Client(repo, env, tmp_path)
    stopped.start()
    first.stop()  # SIGTERM: the host stops listening, the session serves on
    assert not repo.state_file("mcp_socket", create=False).exists()

    second = Daemon(repo, env)
    killed = Client(repo, env, tmp_path)
    killed.start()
    second.stop(signal.SIGKILL)  # no goodbye: the host reads its channel end and exits
    wait_for(lambda: _gone(second.host_pid), timeout=HANG, what="the host to exit with its daemon")
    for c in (stopped, killed):
        answer = c.call("read", {"path": "knowledge/reference/billing.md", "start_line": 6})
        assert "pg-billing-2" in answer["result"]["content"][0]["text"]
        assert c.finish() == (0, "")

    # with no daemon, a new server runs in its own process, as before
    alone = Client(repo, env, tmp_path)
    assert alone.start()["result"]["serverInfo"]["name"] == "autopoiesis"
    assert alone.finish() == (0, "")


def test_a_killed_session_or_client_ends_its_other_half(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], tmp_path: Path
) -> None:
    # the client killed: its session ends too, and says why
    client = Client(repo, env, tmp_path)
    client.start()
    client.proc.kill()
    client.proc.wait()
    wait_for(lambda: len(_rows(repo, "mcp_session")) == 1, timeout=HANG, what="the session's end")
    assert _rows(repo, "mcp_session")[0]["message"] == "the client ended its relay"

    # the session's process killed: the client's process says so and exits (the client
    # then starts its server again)
    client = Client(repo, env, tmp_path)
    client.start()
    children = Path(f"/proc/{daemon.host_pid}/task/{daemon.host_pid}/children").read_text().split()
    assert len(children) == 1
    os.kill(int(children[0]), signal.SIGKILL)
    code, err = client.finish()
    assert code == 1 and "ended without finishing" in err
    wait_for(lambda: len(_rows(repo, "mcp_session")) == 2, timeout=HANG, what="the session's end")
    assert _rows(repo, "mcp_session")[1]["signal"] == "SIGKILL"
    assert daemon.proc.poll() is None  # the daemon and its host go on
    again = Client(repo, env, tmp_path)
    assert again.start()["result"]["serverInfo"]["name"] == "autopoiesis"
    assert again.finish() == (0, "")


def _relay(repo: MemoryRepo, env: dict[str, str], version: str) -> subprocess.CompletedProcess:
    """relay() in a process of its own, as a client of autopoiesis VERSION would call it."""
    code = (
        "import sys\nfrom autopoiesis.fastpath.relay import relay\n"
        f"print(relay({str(repo.root)!r}, ['-C', {str(repo.root)!r}, 'mcp'], {version!r}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


def test_a_client_of_another_version_or_setting_serves_itself(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], tmp_path: Path
) -> None:
    other = _relay(repo, env, "0.0.0-other")
    assert other.stdout.strip() == "None"  # nothing taken: the caller serves MCP itself
    wait_for(lambda: _rows(repo, "mcp_declined"), timeout=HANG, what="the refusal in the log")
    assert "the client is autopoiesis 0.0.0-other" in _rows(repo, "mcp_declined")[0]["message"]

    # an import-time setting the host was started without: served in the client's process
    odd = Client(repo, {**env, "TYPER_USE_RICH": "1"}, tmp_path)
    assert odd.start()["result"]["serverInfo"]["name"] == "autopoiesis"
    assert odd.finish() == (0, "")
    # logged when the host reaps the session that declined, which may be after the client's end
    wait_for(lambda: len(_rows(repo, "mcp_declined")) == 2, timeout=HANG, what="the second refusal")
    assert not _served(repo)


def test_a_stale_socket_is_no_trouble(
    repo: MemoryRepo, env: dict[str, str], tmp_path: Path
) -> None:
    d = Daemon(repo, env)
    os.kill(d.host_pid, signal.SIGKILL)  # the host killed outright: its socket stays behind
    d.stop(signal.SIGKILL)
    assert repo.state_file("mcp_socket", create=False).exists()
    client = Client(repo, env, tmp_path)
    assert client.start()["result"]["serverInfo"]["name"] == "autopoiesis"
    assert client.finish() == (0, "")
    assert not _served(repo)


def test_a_session_runs_in_its_clients_folder_and_environment(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], git
) -> None:
    """A relative -C is the client's folder's; a fact remembered is committed under the
    client's git identity, not the daemon's."""
    client_env = {**env, "GIT_AUTHOR_NAME": "Client Person", "GIT_AUTHOR_EMAIL": "client@x"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", repo.root.name, "mcp"],
        env=client_env,
        cwd=repo.root.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    client = Client.__new__(Client)
    client.proc, client.next_id = proc, 0
    client.start()
    added = client.call(
        "remember",
        {"path": "knowledge/reference/billing.md", "content": "Invoices run nightly at 02:00"},
    )
    assert not added["result"]["isError"], added
    assert client.finish() == (0, "")
    # the host logs a session when it reaps it, which may be just after the client's end
    wait_for(lambda: len(_served(repo)) == 1, timeout=HANG, what="the daemon's session in the log")
    author = git(repo, "log", "-1", "--format=%an <%ae>").stdout.strip()
    assert author == "Client Person <client@x>"


def test_the_daemon_starts_its_host_again_and_stops_it(
    repo: MemoryRepo, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's side (HostProcess) on a real host: its reports reach the log, a host
    that died is started again (after RESTART_AFTER of running), close() stops it."""
    from multiprocessing.connection import wait

    from autopoiesis.fastpath.mcp_host import HostProcess

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    notes: list[tuple[str, dict[str, Any]]] = []
    host = HostProcess(
        [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "daemon", "mcp-host"],
        lambda event, job, **fields: notes.append((event, fields)),
    )

    def until(event: str, count: int) -> None:
        while sum(e == event for e, _ in notes) < count:
            ready = wait(host.waitables(), timeout=HANG)
            assert ready, f"no {event} from the host"
            host.handle(ready)

    assert host.start()
    until("mcp_ready", 1)
    first = host.proc.pid
    host.RESTART_AFTER = 0.0  # it ran long enough: started again
    os.kill(first, signal.SIGKILL)
    until("mcp_ready", 2)
    assert ("mcp_host_exited", {"code": -9, "message": "started again"}) in notes
    assert host.proc.pid != first

    host.RESTART_AFTER = 3600.0  # died too soon: left alone, said so
    os.kill(host.proc.pid, signal.SIGKILL)
    until("mcp_host_exited", 2)
    assert "until the daemon restarts" in notes[-1][1]["message"]
    assert host.waitables() == [] and host.fds() == []

    host.start()
    until("mcp_ready", 3)
    host.close()
    assert notes[-1][0] == "mcp_stopped" and host.proc.poll() == 0
    assert not repo.state_file("mcp_socket", create=False).exists()


def test_a_host_that_does_not_answer_leaves_the_client_to_serve_itself(
    repo: MemoryRepo, daemon: Daemon, env: dict[str, str], tmp_path: Path
) -> None:
    """The host stopped (SIGSTOP) when the client connects: past the relay's wait for an
    acceptance it serves MCP itself; the host, resumed, finds the relay gone and touches
    nothing of the client's."""
    os.kill(daemon.host_pid, signal.SIGSTOP)
    try:
        client = Client(repo, env, tmp_path)
        assert client.start()["result"]["serverInfo"]["name"] == "autopoiesis"
    finally:
        os.kill(daemon.host_pid, signal.SIGCONT)
    wait_for(lambda: _rows(repo, "mcp_session"), timeout=HANG, what="the late session's end")
    late = _rows(repo, "mcp_session")[0]
    assert not late["served"] and late["message"] == "the relay gave up before the session started"
    answer = client.call("read", {"path": "knowledge/reference/billing.md", "start_line": 6})
    assert "pg-billing-2" in answer["result"]["content"][0]["text"]
    assert client.finish() == (0, "")
    assert not _served(repo)
