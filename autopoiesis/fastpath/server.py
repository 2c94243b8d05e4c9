"""The daemon's end of the warm path (core/warm.py): CLI calls answered in the daemon.

The listening socket and the connections being read sit in the daemon's one wait, read
without blocking, so a client that connects and says nothing holds nothing up: it is
dropped after READ_TIMEOUT_SECONDS while the jobs go on. A complete request is run at
once, one at a time (the call's output is captured process-wide, so there is no second
thread), through the handler the CLI passes in (the daemon layer cannot import the CLI),
then answered and logged: the command, its milliseconds and exit code, never its words.

Only the daemon's own user is answered (SO_PEERCRED; the socket is also mode 0600).
Where a platform has no SO_PEERCRED there is no socket: every call runs in its own process.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import struct
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.fastpath.rules import split_repo_dir
from autopoiesis.fastpath.wire import (
    MAX_LINE_BYTES,
    decode,
    encode,
    refusal,
    socket_path,
    to_text,
    unix_address,
)
from autopoiesis.integrations import HOOK_HARNESSES

READ_TIMEOUT_SECONDS = 2.0  # a connection that has not sent its whole request by then is dropped
REPLY_TIMEOUT_SECONDS = 10.0  # a client that does not read its answer is let go
_EVENT_NAME = re.compile(r"[A-Za-z]{1,40}")


class ServeHandler(Protocol):
    """What runs a forwarded call (autopoiesis.fastpath.forward.ForwardedCalls)."""

    def refusal(self, request: dict[str, Any]) -> str | None:
        """Why this process cannot run REQUEST as the client's own process would, or None."""

    def __call__(self, request: dict[str, Any]) -> tuple[int, bytes, bytes]:
        """Run REQUEST: (exit code, stdout, stderr)."""


Note = Callable[..., None]  # Daemon.note(event, job, **fields)


def command_name(argv: list[str]) -> str:
    """What the log says a call was: `search`, `compile`, `hook claude-code UserPromptSubmit`;
    nothing the user typed beyond the command's name."""
    argv = split_repo_dir(argv)[1]
    if argv[:1] == ["hook"] and len(argv) > 2 and argv[1] in HOOK_HARNESSES:
        return f"hook {argv[1]} {argv[2] if _EVENT_NAME.fullmatch(argv[2]) else '?'}"
    return argv[0] if argv[:1] in (["search"], ["compile"]) else "?"


def served_here() -> bool:
    """Whether this platform has what the daemon's sockets need: Unix sockets whose peer's
    user can be asked (SO_PEERCRED)."""
    return hasattr(socket, "AF_UNIX") and hasattr(socket, "SO_PEERCRED")


def listen_private(path: Path, backlog: int = 16) -> socket.socket:
    """A non-blocking Unix socket listening at PATH (one left there by a killed daemon is
    replaced: whoever holds the instance lock owns it), mode 0600 from its first moment."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old = os.umask(0o177)  # created 0600: no moment where another user could connect
        try:
            with unix_address(path) as address:
                listener.bind(address)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        listener.listen(backlog)
        listener.setblocking(False)
    except OSError:
        listener.close()
        raise
    return listener


def peer(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of SOCK; (-1, -1) when unknown."""
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", creds)
    except OSError:
        return -1, -1
    return pid, uid


class _Incoming:
    """A connection whose request is still being read."""

    __slots__ = ("sock", "data", "deadline")

    def __init__(self, sock: socket.socket, deadline: float):
        self.sock, self.data, self.deadline = sock, bytearray(), deadline

    def fileno(self) -> int:
        return self.sock.fileno()


class WarmServer:
    """The listening socket of one daemon and the calls it answers; with it, the MCP host
    (mcp_host.HostProcess) that starts `autopoiesis mcp` warm, waited on in the same loop."""

    def __init__(self, path: Path, listener: socket.socket, handler: ServeHandler, note: Note):
        self.path = path
        self.listener = listener
        self.handler = handler
        self.note = note
        self.incoming: list[_Incoming] = []
        self.served = 0
        self._inode = os.stat(path).st_ino
        self.mcp_host: Any = None  # mcp_host.HostProcess, once started

    @classmethod
    def start(
        cls,
        repo: MemoryRepo,
        handler: ServeHandler,
        note: Note,
        mcp_host: list[str] | None = None,
    ) -> WarmServer | None:
        """Listen on the repo's daemon socket (replacing one a killed daemon left: whoever
        holds the instance lock owns the socket), and start the MCP host as the command
        MCP_HOST (the CLI's `daemon mcp-host`) when given; None, said in the log, when it
        cannot listen."""
        if not served_here():
            note(
                "serve_off",
                None,
                message="no Unix sockets with peer credentials here: CLI calls run in their own "
                "process",
            )
            return None
        path = socket_path(repo)
        try:
            listener = listen_private(path)
        except OSError as exc:
            note(
                "serve_off",
                None,
                message=f"could not listen on {path} ({exc}): CLI calls run in their own process",
            )
            return None
        server = cls(path, listener, handler, note)
        if mcp_host is not None:
            from autopoiesis.fastpath.mcp_host import HostProcess

            host = HostProcess(mcp_host, note)
            if host.start():
                server.mcp_host = host
        return server

    # ── the loop's side ──
    @property
    def closed(self) -> bool:
        return self.listener.fileno() < 0

    def waitables(self) -> list[Any]:
        host = self.mcp_host.waitables() if self.mcp_host is not None else []
        return host if self.closed else [self.listener, *self.incoming, *host]

    def fds(self) -> list[int]:
        """Every descriptor of the server: a forked job closes them (it must neither answer
        nor keep a client's connection open, nor the MCP host's channel, after the daemon is
        gone)."""
        host = self.mcp_host.fds() if self.mcp_host is not None else []
        if self.closed:
            return host
        return [self.listener.fileno(), *(c.fileno() for c in self.incoming), *host]

    def next_deadline(self) -> float | None:
        return min((c.deadline for c in self.incoming), default=None)

    def handle(self, ready: list[Any]) -> None:
        """Accept, read and answer what READY (from the daemon's wait) says can go on, and
        drop the connections past their deadline; log what the MCP host reports."""
        if self.mcp_host is not None:
            self.mcp_host.handle(ready)
        if self.closed:
            return
        if self.listener in ready:
            self._accept()
        for conn in [c for c in self.incoming if c in ready]:
            self._read(conn)
        now = time.monotonic()
        for conn in [c for c in self.incoming if c.deadline <= now]:
            self.note(
                "serve_dropped",
                None,
                message=f"a client sent no whole request within {READ_TIMEOUT_SECONDS:g} s",
            )
            self._drop(conn)

    def close(self) -> None:
        """Stop listening and remove the socket (the count of calls served stays); stop
        the MCP host (its sessions serve on)."""
        if self.mcp_host is not None:
            self.mcp_host.close()
        if self.closed:
            return
        for conn in list(self.incoming):
            self._drop(conn)
        self.listener.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:  # ours, not a later daemon's
                self.path.unlink()

    # ── connections ──
    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors: the next wait tries again
                self.note("serve_failed", None, message=f"accept: {exc}")
                return
            pid, uid = peer(sock)
            if uid != os.getuid():
                self.note(
                    "serve_refused",
                    None,
                    message=f"a process of another user (uid {uid}, pid {pid}) connected",
                )
                sock.close()
                continue
            sock.setblocking(False)
            self.incoming.append(_Incoming(sock, time.monotonic() + READ_TIMEOUT_SECONDS))

    def _drop(self, conn: _Incoming) -> None:
        self.incoming.remove(conn)
        conn.sock.close()

    def _read(self, conn: _Incoming) -> None:
        try:
            chunk = conn.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)
            return
        end = chunk.find(b"\n")
        if end < 0:
            conn.data += chunk
            if len(conn.data) > MAX_LINE_BYTES:
                self._drop(conn)
            return
        line = bytes(conn.data + chunk[:end])
        self.incoming.remove(conn)
        try:
            self._serve(conn.sock, line)
        finally:
            conn.sock.close()

    def _serve(self, sock: socket.socket, line: bytes) -> None:
        started = time.perf_counter()
        sock.settimeout(REPLY_TIMEOUT_SECONDS)
        request = decode(line)
        why = (
            "the request is not a JSON object"
            if request is None
            else refusal(request) or self.handler.refusal(request)
        )
        try:
            if why is not None or request is None:
                self.note("serve_declined", None, message=why)
                sock.sendall(encode({"run_locally": why}))
                return
            sock.sendall(encode({"accepted": True}))
        except OSError:
            return  # the client gave up waiting: it runs the call itself
        argv = request["argv"]
        try:
            code, out, err = self.handler(request)
        except Exception as exc:  # a bug of ours: the client, told nothing, runs the call itself
            self.note(
                "serve_failed",
                None,
                command=command_name(argv),
                message=f"{type(exc).__name__}: {exc}",
                traceback=traceback.format_exc()[-4000:],
            )
            return
        # logged before the answer goes (an append, no flush to disk): whoever has the
        # answer finds the call in the log
        self.served += 1
        self.note(
            "served",
            None,
            command=command_name(argv),
            ms=round((time.perf_counter() - started) * 1000, 1),
            code=code,
        )
        try:
            sock.sendall(encode({"code": code, "stdout": to_text(out), "stderr": to_text(err)}))
        except OSError:
            pass  # the client is gone (it was killed, or gave up)
