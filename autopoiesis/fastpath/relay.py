"""`autopoiesis [-C DIR] mcp` started warm: the client's end (standard library only, like
the rest of the light entry; the MCP SDK is never imported here).

Importing the MCP SDK takes 1-1.5 s of CPU (its protocol types build pydantic models), so
a server started cold answers `initialize` that late. While the memory repo's daemon runs,
its MCP host (fastpath/mcp_host.py) has the SDK and the server loaded, and this process
asks it for a session instead: it connects to the host's socket (the state file
`mcp_socket`, mode 0600, answered only for the same user), sends the request `wire.py`
describes (version and location of the package, arguments, folder, environment, umask)
with its own stdin, stdout and stderr attached (SCM_RIGHTS), and the host forks a process
that serves MCP on those very descriptors, as `autopoiesis mcp` started here would. No
byte of the protocol passes through this process: it waits for the session to end and
exits with its status.

    relay -> host   the request (one JSON line) and the three descriptors
    host -> relay   {"accepted": true}, or {"run_locally": WHY} (another version, ...)
    relay -> host   {"go": true}: from here on the session owns the descriptors
    host -> relay   {"exit": CODE} when the session ends

Until `go` is sent nothing has read the client's input, so anything that goes wrong (no
socket, a refused connection, no acceptance within ACK_TIMEOUT, a refusal) leaves the call
to this process: `relay` returns None and the caller serves MCP itself. After `go` the
session's state (the `initialize` it answered, the calls under way) lives in the forked
process. The session does not depend on the daemon or its host (stopping or killing them
leaves it serving), but one that ends without its exit line (its process was killed, by
hand or by a service manager that ends the daemon's whole process group) cannot be
continued here: this process says so on stderr and exits with SESSION_LOST, which a client
sees as its server exiting, and it starts the server again. A client that ends this process
(SIGTERM, SIGKILL) closes the socket, and the session ends with it, as the server it stands
for would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autopoiesis.fastpath import wire

if TYPE_CHECKING:
    import socket

ACK_TIMEOUT = wire.ACK_TIMEOUT  # seconds for the host to accept; past it the call runs here
SESSION_LOST = 1  # the exit status when the session ended without saying how
STREAMS = (0, 1, 2)


def relay(repo_dir: str | None, argv: list[str], version: str) -> int | None:
    """Serve ARGV (`[-C DIR] mcp`) as a session of the running daemon's MCP host, VERSION
    the caller's autopoiesis.__version__: the session's exit status once it ended, or None
    when no host took it (the caller then serves MCP itself)."""
    path = wire.find_socket(repo_dir, "mcp_socket")
    if path is None:
        return None
    request = wire.describe_process(argv, version)
    if request is None:
        return None
    import socket

    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    with sock:
        if not _handshake(sock, path, request):
            return None
        return _wait(sock)


def _handshake(sock: socket.socket, path: os.PathLike[str], request: dict[str, Any]) -> bool:
    """Send REQUEST with this process's standard streams and wait for the host's answer;
    True once the session owns the streams (`go` sent)."""
    import socket

    line = wire.encode(request)
    try:
        sock.settimeout(wire.CONNECT_TIMEOUT)
        with wire.unix_address(Path(path)) as address:
            sock.connect(address)
        sent = socket.send_fds(sock, [line], list(STREAMS))
        sock.sendall(line[sent:])
        sock.settimeout(ACK_TIMEOUT)
        with sock.makefile("rb") as reader:
            ack = wire.decode(wire.read_line(reader, 1 << 16) or b"")
        if not ack or ack.get("accepted") is not True:
            return False
        sock.sendall(wire.encode({"go": True}))
    except OSError:  # no host, a host that gave up on us, or one too slow: nothing was read
        return False
    return True


def _wait(sock: socket.socket) -> int:
    """Wait for the session's exit line: its status, or SESSION_LOST (said on stderr)."""
    try:
        sock.settimeout(None)  # a session lasts as long as its client wants
        with sock.makefile("rb") as reader:
            end = wire.decode(wire.read_line(reader, 1 << 16) or b"")
    except KeyboardInterrupt:  # Ctrl-C on a server run by hand: as the CLI says it
        sys.stderr.write("interrupted\n")
        return 130
    except OSError:
        end = None
    code = end.get("exit") if end else None
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    sys.stderr.write(
        "autopoiesis mcp: the daemon's session of this MCP server ended without finishing "
        "(its process was killed); start the MCP server again.\n"
    )
    sys.stderr.flush()
    return SESSION_LOST
