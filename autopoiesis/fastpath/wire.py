"""The warm path: CLI calls answered by the running daemon (issue 14).

A cold `autopoiesis search` or `compile` spends most of its time starting Python and
importing the CLI, the index and the compiler. The daemon has all of that loaded already,
so while it runs, the light entry (autopoiesis/__main__.py) hands such a call to it over
a Unix socket (the state file `daemon_socket`, `.autopoiesis/daemon/serve.sock`, mode
0600, answered only for the same user) and prints what comes back. This module is both
ends of the wire, standard library only: the client imports it on every call.

    request  one JSON line: {version, package, argv, cwd, env, stdin, umask, tty, errors}
    ack      one JSON line once the daemon has read the request: {"accepted": true}, or
             {"run_locally": WHY} (another version of autopoiesis, say) and the client
             runs the call itself
    reply    one JSON line: {code, stdout, stderr}

Bytes travel as text decoded with surrogateescape and JSON's ASCII escapes, so the output
comes back byte for byte. Nothing is lost when the daemon is missing or dies: no socket,
a refused connection, no ack in time, a reply cut short, and `forward` returns None: the
caller runs the call itself (the calls forwarded are safe to run twice: __main__.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from autopoiesis.core.paths import MemoryRepo

NO_DAEMON_ENV = "AUTOPOIESIS_NO_DAEMON"  # set (not "0"): never forward, always run in this process
CONNECT_TIMEOUT = 1.0  # seconds to connect and send the request
# Seconds to wait for the ack: the daemon serves one call at a time, so this covers the
# call before ours; past it (a daemon stopped with SIGSTOP, a very long call) we run ours.
ACK_TIMEOUT = 3.0
# Seconds to wait for the answer once the call runs: longer than any forwarded call takes
# (a catch-up gives up after 60 s, a hook after 10 s); past it (a daemon stopped with
# SIGSTOP mid-call) the client stops waiting and runs the call itself.
REPLY_TIMEOUT = 120.0
MAX_LINE_BYTES = 64 << 20  # a request carries a hook payload of at most 8 MB, escaped
# A sockaddr_un path holds 107 bytes; a socket deeper than this is bound and reached by a
# short name through a descriptor of its folder (/proc/self/fd/N/serve.sock).
MAX_SOCKET_PATH = 100
TEXT = ("utf-8", "surrogateescape")


def disabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether AUTOPOIESIS_NO_DAEMON asks for every call to run in its own process."""
    value = (os.environ if env is None else env).get(NO_DAEMON_ENV, "")
    return value not in ("", "0")


def package_dir() -> str:
    """Where this autopoiesis is loaded from: a daemon running another copy (another
    checkout or virtualenv) of the same version must not answer for this one."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def socket_path(repo: MemoryRepo) -> Path:
    return repo.state_file("daemon_socket", create=False)


def find_socket(repo_dir: str | None, name: str) -> Path | None:
    """The socket NAME (a state file: daemon_socket, mcp_socket) of the memory repo
    (-C REPO_DIR, else $AUTOPOIESIS_REPO, else the git top level here: MemoryRepo.locate)
    when it is there; None when calls run in this process (AUTOPOIESIS_NO_DAEMON, no repo,
    no socket)."""
    if disabled():
        return None
    from autopoiesis.git.locate import locate_repo

    try:
        repo = locate_repo(repo_dir)
    except Exception:  # no repo here: the local run says so, in its own words
        return None
    path = repo.state_file(name, create=False)
    return path if os.path.exists(path) else None


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """An address to bind or connect PATH by: PATH itself, or, when it is too long for an
    AF_UNIX address, its name under /proc/self/fd/N, N a descriptor of its folder (open
    while the context lasts). Raises OSError(ENAMETOOLONG) where there is no /proc."""
    text = os.fspath(path)
    if len(os.fsencode(text)) <= MAX_SOCKET_PATH:
        yield text
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        through = f"/proc/self/fd/{fd}"
        if not os.path.isdir(through):
            raise OSError(
                errno.ENAMETOOLONG,
                f"the socket path is over {MAX_SOCKET_PATH} bytes and there is no /proc",
                text,
            )
        yield f"{through}/{path.name}"
    finally:
        os.close(fd)


# ── the wire ──
def to_text(data: bytes) -> str:
    return data.decode(*TEXT)


def to_bytes(text: str) -> bytes:
    return text.encode(*TEXT)


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line (ASCII: escapes carry the odd bytes that surrogateescape keeps)."""
    return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"


def decode(line: bytes) -> dict[str, Any] | None:
    """The message of LINE, or None when it is not a JSON object."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def read_line(reader: BinaryIO, limit: int = MAX_LINE_BYTES) -> bytes | None:
    """One whole line from READER (a socket's makefile("rb"), under the socket's timeout),
    or None when the peer closed first or the line is over LIMIT bytes."""
    line = reader.readline(limit + 1)
    return line[:-1] if line.endswith(b"\n") else None


def refusal(request: dict[str, Any]) -> str | None:
    """Why the daemon must not run REQUEST (the client then runs it), or None: a request
    malformed, or from a copy of autopoiesis loaded from elsewhere. (Its `version` the
    daemon's handler checks, in the layer that may know it.)"""
    if not isinstance(request.get("version"), str):
        return "the request names no version"
    if request.get("package") != package_dir():
        return (
            f"the client runs autopoiesis from {request.get('package')!r}, the daemon from "
            f"{package_dir()}"
        )
    argv, env, stdin = request.get("argv"), request.get("env"), request.get("stdin")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "argv is not a list of strings"
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        return "env is not a mapping of strings"
    if not isinstance(request.get("cwd"), str) or not (stdin is None or isinstance(stdin, str)):
        return "cwd or stdin is not text"
    if (
        not isinstance(request.get("umask"), int)
        or not isinstance(request.get("tty"), list)
        or not isinstance(request.get("errors"), list)
    ):
        return "umask, tty or errors is missing"
    return None


# ── the client ──
class Reply:
    """What the daemon answered: the exit code and the bytes of stdout and stderr."""

    __slots__ = ("code", "stdout", "stderr")

    def __init__(self, code: int, stdout: bytes, stderr: bytes):
        self.code, self.stdout, self.stderr = code, stdout, stderr


def _is_utf8(stream: Any) -> bool:
    import codecs

    try:
        return codecs.lookup(stream.encoding).name == "utf-8"
    except (AttributeError, LookupError, TypeError):
        return False


def make_request(argv: list[str], stdin: bytes | None, version: str) -> dict[str, Any] | None:
    """The request for ARGV run as this process would run it (its folder, environment,
    umask and terminal), by autopoiesis VERSION, or None when the output could not come
    back identical (a stream that is not UTF-8, a working folder that is gone)."""
    out, err = sys.stdout, sys.stderr
    if not (_is_utf8(out) and _is_utf8(err)):
        return None
    request = describe_process(argv, version)
    if request is None:
        return None
    env = request["env"]
    if "COLUMNS" not in env or "LINES" not in env:
        # the daemon's own stdout is a log file: give it this terminal's size, which is
        # what shutil.get_terminal_size (the help and usage layout) would read here
        with contextlib.suppress(AttributeError, ValueError, OSError):
            size = os.get_terminal_size(out.fileno())
            env.setdefault("COLUMNS", str(size.columns))
            env.setdefault("LINES", str(size.lines))
    request["stdin"] = None if stdin is None else to_text(stdin)
    return request


def describe_process(argv: list[str], version: str) -> dict[str, Any] | None:
    """ARGV as this process runs it, by autopoiesis VERSION: the request `refusal` reads
    (its folder, environment, umask and streams; no stdin), or None when its working
    folder is gone."""
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    out, err = sys.stdout, sys.stderr
    return {
        "version": version,
        "package": package_dir(),
        "argv": list(argv),
        "cwd": cwd,
        "env": dict(os.environ),
        "stdin": None,
        "umask": umask,
        "tty": [_isatty(out), _isatty(err)],
        "errors": [
            getattr(out, "errors", None) or "strict",
            getattr(err, "errors", None) or "strict",
        ],
    }


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def forward(
    repo_dir: str | None, argv: list[str], version: str, *, stdin: bytes | None = None
) -> Reply | None:
    """Run ARGV in the daemon of the memory repo (-C REPO_DIR, else $AUTOPOIESIS_REPO, else
    the git top level here: MemoryRepo.locate), STDIN its standard input, VERSION the
    caller's autopoiesis.__version__. None when no daemon answered it: the caller runs it."""
    path = find_socket(repo_dir, "daemon_socket")
    if path is None:
        return None
    request = make_request(argv, stdin, version)
    if request is None:
        return None
    import socket  # only with a daemon's socket there: a call without one runs sooner

    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    with sock:
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            with unix_address(path) as address:
                sock.connect(address)
            sock.sendall(encode(request))
            sock.settimeout(ACK_TIMEOUT)
            with sock.makefile("rb") as reader:
                ack = decode(read_line(reader, 1 << 16) or b"")
                if not ack or ack.get("accepted") is not True:
                    return None
                sock.settimeout(
                    REPLY_TIMEOUT
                )  # a daemon that dies closes the socket; one that hangs is waited for this long
                reply = decode(read_line(reader) or b"")
        except OSError:
            return None
    if reply is None:
        return None
    code, out, err = reply.get("code"), reply.get("stdout"), reply.get("stderr")
    if not isinstance(code, int) or not isinstance(out, str) or not isinstance(err, str):
        return None
    return Reply(code, to_bytes(out), to_bytes(err))
