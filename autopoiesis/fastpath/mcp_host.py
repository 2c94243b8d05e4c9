"""The daemon's MCP host: the process that starts `autopoiesis mcp` sessions warm (the
client's end is relay.py, the daemon's supervision of this process HostProcess below).

`autopoiesis daemon run` starts it (the hidden command `daemon mcp-host`, which imports the
MCP SDK and the server, builds a server once to fill pydantic's caches, and hands the CLI's
`main` here) and starts it again if it dies after a minute of running. It listens on the
state file `mcp_socket` (mode 0600; a connection of another user is closed unread) and
forks one process per connection. That process reads the relay's request and its three
standard streams, refuses what the relay's own process would run differently (another
version or copy of autopoiesis: wire.refusal, forward.client_refusal; anything but `[-C
DIR] mcp`), and otherwise, once the relay says `go`, becomes the client's server: the
client's folder, environment, umask and time zone, its stdin, stdout and stderr on
descriptors 0, 1 and 2, then the CLI's `main` with the client's arguments, exactly what
`autopoiesis mcp` runs in a process of its own.

Why a process a session, forked, and not a thread or task of the daemon: the daemon forks
its jobs, so it stays single-threaded, and the SDK runs tools on threads; a session in a
process of its own is the very server its client would have started, sharing nothing with
another client's session (a crash or a kill ends that session only); and a fork of a
process that has the SDK loaded serves at once. The host itself runs no thread and holds
no database or repository open, so forking it is safe.

A session outlives its host: it holds its client's streams and needs nothing of the host
or the daemon once it serves, so stopping or killing the daemon (the host reads the end of
its channel, stops listening and exits) leaves every session serving, as a server the
client had started itself would go on. (A service manager that kills a stopped service's
whole process group, as systemd does by default, ends them too: their relays then say so
and exit, and the client starts its server again.) A session whose relay goes (its client
ended it) ends at once, as the server the relay stands for would. What happens is reported
to the daemon's log through the channel, one JSON line an event: `mcp_ready`,
`mcp_session` (pid, seconds, exit status or signal), `mcp_declined` (why), `mcp_stopped`.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.fastpath.forward import adopt_client, client_refusal
from autopoiesis.fastpath.rules import mcp_call
from autopoiesis.fastpath.server import listen_private, peer
from autopoiesis.fastpath.wire import MAX_LINE_BYTES, decode, encode, read_line, refusal

HELLO_TIMEOUT = 2.0  # seconds for a relay's request (it sends it as it connects)
GO_TIMEOUT = 10.0  # seconds for its `go` after our acceptance (it waits ACK_TIMEOUT for that)
STREAMS = 3  # stdin, stdout, stderr

RunCall = Callable[[list[str]], int]  # argv -> exit status (forward.run_argv with the CLI)


class _Session:
    """A forked session, as the host sees it."""

    __slots__ = ("pid", "report", "started", "outcome")

    def __init__(self, pid: int, report: int):
        self.pid, self.report, self.started = pid, report, time.monotonic()
        self.outcome: dict[str, Any] = {}


class Host:
    """The listening socket, the forked sessions, the channel to the daemon."""

    def __init__(self, repo: MemoryRepo, channel: socket.socket, run_call: RunCall):
        self.path = repo.state_file("mcp_socket")
        self.channel = channel
        self.run_call = run_call
        self.listener: socket.socket | None = None
        self.sessions: dict[int, _Session] = {}
        self.selector = selectors.DefaultSelector()
        self._inode: int | None = None
        self._stopping = False
        self._wake_r, self._wake_w = os.pipe()

    # ── the host's loop ──
    def run(self) -> int:
        """Listen and serve until the daemon goes or a signal stops the host."""
        try:
            self.listener = listen_private(self.path, backlog=64)
        except OSError as exc:
            self.report("mcp_failed", message=f"could not listen on {self.path} ({exc})")
            return 1
        self._inode = os.stat(self.path).st_ino
        self._install_signals()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(self.channel, selectors.EVENT_READ)
        self.selector.register(self._wake_r, selectors.EVENT_READ)
        self.report("mcp_ready", pid=os.getpid())
        try:
            while not self._stopping:
                for key, _ in self.selector.select(timeout=60.0):
                    self._ready(key.fileobj)
                self._reap()
        finally:
            self._shutdown()
        return 0

    def _ready(self, what: Any) -> None:
        if what is self.listener:
            self._accept()
        elif what is self.channel:
            try:
                data = self.channel.recv(4096)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:  # the daemon is gone
                self._stopping = True
        elif what == self._wake_r:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                while os.read(self._wake_r, 512):
                    pass
        else:
            self._read_report(what)

    def _install_signals(self) -> None:
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)

        def stop(signum: int, frame: object) -> None:
            self._stopping = True

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, stop)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the wait: reap

    def report(self, event: str, **fields: Any) -> None:
        """One event for the daemon's log."""
        with contextlib.suppress(OSError):
            self.channel.sendall(
                json.dumps({"event": event, **fields}, separators=(",", ":")).encode() + b"\n"
            )

    # ── sessions ──
    def _accept(self) -> None:
        assert self.listener is not None
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors: the next wait tries again
                self.report("mcp_failed", message=f"accept: {exc}")
                return
            pid, uid = peer(conn)
            if uid != os.getuid():
                self.report(
                    "mcp_refused", message=f"a process of another user (uid {uid}, pid {pid})"
                )
                conn.close()
                continue
            self._fork(conn)

    def _fork(self, conn: socket.socket) -> None:
        report_r, report_w = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # nothing buffered here may reach a client
            with contextlib.suppress(Exception):
                stream.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            self.report("mcp_failed", message=f"could not start a session's process: {exc}")
            conn.close()
            os.close(report_r)
            os.close(report_w)
            return
        if pid == 0:
            os.close(report_r)
            self._child(conn, report_w)
        os.close(report_w)
        conn.close()
        os.set_blocking(report_r, False)
        self.sessions[pid] = _Session(pid, report_r)
        self.selector.register(report_r, selectors.EVENT_READ)

    def _read_report(self, fd: Any) -> None:
        session = next((s for s in self.sessions.values() if s.report == fd), None)
        try:
            data = os.read(fd, 1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if session is None or not data:
            self.selector.unregister(fd)
            return
        for line in data.splitlines():
            row = decode(line)
            if row:
                session.outcome.update(row)

    def _reap(self) -> None:
        while self.sessions:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            session = self.sessions.pop(pid, None)
            if session is not None:
                self._ended(session, status)

    def _ended(self, session: _Session, status: int) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            for line in os.read(session.report, 1 << 16).splitlines():
                session.outcome.update(decode(line) or {})
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(session.report)
        os.close(session.report)
        outcome = session.outcome
        if outcome.get("declined"):
            self.report("mcp_declined", pid=session.pid, message=outcome["declined"])
            return
        fields: dict[str, Any] = {
            "pid": session.pid,
            "seconds": round(time.monotonic() - session.started, 3),
            "served": bool(outcome.get("serving")),
        }
        if os.WIFSIGNALED(status):
            fields["signal"] = signal.Signals(os.WTERMSIG(status)).name
        else:
            fields["code"] = os.WEXITSTATUS(status)
        if outcome.get("ended"):
            fields["message"] = outcome["ended"]
        self.report("mcp_session", **fields)

    def _shutdown(self) -> None:
        """Stop listening and say so; the sessions serve on (their clients hold them)."""
        if self.listener is not None:
            self.listener.close()
            with contextlib.suppress(OSError):
                if os.stat(self.path).st_ino == self._inode:  # ours, not a later host's
                    self.path.unlink()
        self._reap()
        self.report("mcp_stopped", pid=os.getpid(), sessions=len(self.sessions))

    # ── the forked session ──
    def _child(self, conn: socket.socket, report_w: int) -> NoReturn:
        """The session's process: never returns."""
        code = 1
        try:
            os.setsid()  # a terminal's Ctrl-C reaches the relay, which ends us
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            self.selector.close()
            assert self.listener is not None
            self.listener.close()
            self.channel.close()
            for fd in (self._wake_r, self._wake_w, *self._reports()):
                os.close(fd)
            code = Session(conn, report_w, self.run_call).run()
        except BaseException:  # a bug of ours: said where the client reads errors, if anywhere
            with contextlib.suppress(Exception):
                traceback.print_exc(file=sys.stderr)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)

    def _reports(self) -> list[int]:
        return [s.report for s in self.sessions.values()]


class Session:
    """One client's session, in the process forked for it."""

    def __init__(self, conn: socket.socket, report: int, run_call: RunCall):
        self.conn, self.report_fd, self.run_call = conn, report, run_call
        self.finishing = threading.Event()

    def report(self, **fields: Any) -> None:
        with contextlib.suppress(OSError):
            os.write(self.report_fd, encode(fields))

    def run(self) -> int:
        self.conn.settimeout(HELLO_TIMEOUT)
        try:
            line, fds = self._receive()
        except OSError:
            return 1
        try:
            request = self._handshake(line, fds)
        except OSError:  # it stopped waiting for us (ACK_TIMEOUT), or went
            self.report(ended="the relay gave up before the session started")
            request = None
        if request is None:  # nothing of the client's was touched: it serves MCP itself
            for fd in fds:
                os.close(fd)
            return 0
        self.report(serving=True)
        adopt_client(request)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        threading.Thread(target=self._watch, name="relay-watch", daemon=True).start()
        code = self.run_call(list(request["argv"]))
        self.finishing.set()
        with contextlib.suppress(OSError):
            self.conn.settimeout(5.0)
            self.conn.sendall(encode({"exit": code}))
        return code

    def _handshake(self, line: bytes | None, fds: list[int]) -> dict[str, Any] | None:
        """Accept or refuse the relay's request; the request once the relay said `go`."""
        request = decode(line) if line is not None else None
        why = _refusal(request, fds)
        if why is not None or request is None:
            self.report(declined=why)
            self.conn.sendall(encode({"run_locally": why}))
            return None
        self.conn.settimeout(GO_TIMEOUT)
        self.conn.sendall(encode({"accepted": True}))
        with self.conn.makefile("rb") as reader:
            go = decode(read_line(reader, 1 << 10) or b"")
        if not go or go.get("go") is not True:
            self.report(ended="the relay gave up before the session started")
            return None
        return request

    def _receive(self) -> tuple[bytes | None, list[int]]:
        """The relay's request line and the descriptors that came with it (closed here
        unless they are exactly three above the standard ones)."""
        data, fds = bytearray(), []
        while b"\n" not in data and len(data) <= MAX_LINE_BYTES:
            chunk, got, flags, _ = socket.recv_fds(self.conn, 1 << 16, STREAMS + 1)
            fds.extend(got)
            if flags & getattr(socket, "MSG_CTRUNC", 0) or not chunk:
                break
            data += chunk
        if len(fds) != STREAMS or any(fd <= 2 for fd in fds) or b"\n" not in data:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            return (None, []) if b"\n" not in data else (bytes(data[: data.index(b"\n")]), [])
        return bytes(data[: data.index(b"\n")]), fds

    def _watch(self) -> None:
        """End the session when its relay goes: its client ended it (the relay never
        writes after `go`, so the socket turns readable only at its end)."""
        import select

        with contextlib.suppress(OSError, ValueError):
            select.select([self.conn.fileno()], [], [])
        if self.finishing.is_set():
            return
        self.report(ended="the client ended its relay")
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(1)


def _refusal(request: dict[str, Any] | None, fds: list[int]) -> str | None:
    if request is None:
        return "the request is not a JSON object"
    if len(fds) != STREAMS:
        return "the request came without the client's stdin, stdout and stderr"
    why = refusal(request)
    if why is None and not mcp_call(request["argv"]):
        why = "not `autopoiesis mcp`"
    return why or client_refusal(request)


def run_host(repo: MemoryRepo, channel_fd: int, run_call: RunCall) -> int:
    """The host of REPO's MCP sessions, reporting to the daemon over the socket CHANNEL_FD,
    each session running its client's arguments with RUN_CALL: until the daemon goes."""
    channel = socket.socket(fileno=channel_fd)
    return Host(repo, channel, run_call).run()


class HostProcess:
    """The daemon's side: the host started as COMMAND (the CLI's `daemon mcp-host`, to which
    `--channel FD` is added), its reports written to the daemon's log with NOTE, started
    again when it dies after running RESTART_AFTER seconds (a host that dies sooner would
    die again: MCP servers then start in their own process until the daemon restarts).
    Waited on in the daemon's one loop through the WarmServer."""

    RESTART_AFTER = 60.0

    def __init__(self, command: list[str], note: Callable[..., None]):
        self.command, self.note = command, note
        self.proc: Any = None
        self.channel: socket.socket | None = None
        self.started = 0.0
        self._data = b""
        self._closing = False

    def start(self) -> bool:
        import subprocess

        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [*self.command, "--channel", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C stops the daemon, which stops it
            )
        except OSError as exc:
            ours.close()
            self.note("mcp_failed", None, message=f"could not start the MCP host: {exc}")
            return False
        finally:
            theirs.close()
        ours.setblocking(False)
        self.channel, self.started, self._data = ours, time.monotonic(), b""
        return True

    def waitables(self) -> list[Any]:
        return [self.channel] if self.channel is not None else []

    def fds(self) -> list[int]:
        """The channel: a forked job closes it, so the host reads its end when the daemon goes."""
        return [self.channel.fileno()] if self.channel is not None else []

    def handle(self, ready: list[Any]) -> None:
        if self.channel is None or self.channel not in ready:
            return
        try:
            data = self.channel.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        self._data += data
        *lines, self._data = self._data.split(b"\n")
        for line in lines:
            row = decode(line)
            if row and isinstance(row.get("event"), str) and row["event"].startswith("mcp_"):
                fields = {k: v for k, v in row.items() if k not in ("event", "job", "ts")}
                self.note(row["event"], None, **fields)
        if len(self._data) > MAX_LINE_BYTES:
            self._data = b""
        if not data:
            self._exited()

    def _exited(self) -> None:
        assert self.channel is not None
        self.channel.close()
        self.channel = None
        code = self._wait(5.0)
        ran = time.monotonic() - self.started
        if self._closing:
            return
        if ran >= self.RESTART_AFTER:
            self.note("mcp_host_exited", None, code=code, message="started again")
            self.start()
        else:
            self.note(
                "mcp_host_exited",
                None,
                code=code,
                message=f"after {ran:.1f} s: MCP servers start in their own process until the "
                "daemon restarts",
            )

    def _wait(self, seconds: float) -> int | None:
        import subprocess

        try:
            return int(self.proc.wait(timeout=seconds))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return int(self.proc.wait())

    def close(self) -> None:
        """Stop the host: it reads the end of its channel, stops listening and exits; its
        last reports are logged (within 5 s, past which it is killed)."""
        if self.channel is None:
            return
        self._closing = True
        with contextlib.suppress(OSError):
            self.channel.shutdown(socket.SHUT_WR)
        self.channel.settimeout(5.0)
        while self.channel is not None:  # handle() reads until the end, then waits for it
            self.handle([self.channel])
