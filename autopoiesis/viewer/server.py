"""Run the viewer: bind the socket (loopback unless told), make the token, print the URL
and serve with uvicorn in this one process until Ctrl-C."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autopoiesis.errors import InvalidArgumentError

if TYPE_CHECKING:
    from autopoiesis.memory import Memory

DEFAULT_PORT = 8765


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on HOST:PORT (PORT 0: a free one), or a clear error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InvalidArgumentError(
            f"--host {host}: not an address of this machine ({exc})."
        ) from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InvalidArgumentError(
            f"cannot listen on {host}:{port} ({exc.strerror}); another program may use that "
            "port: give another with --port N (--port 0 picks a free one)."
        ) from None
    sock.listen(64)
    return sock


def url_of(host: str, port: int, token: str) -> str:
    """The URL to open: on a server bound to every address (0.0.0.0, ::), the one this
    machine reaches the network from (a browser cannot open 0.0.0.0 elsewhere), else
    loopback; otherwise HOST itself."""
    from autopoiesis.viewer.guard import EVERY_ADDRESS, outward_address

    if host in EVERY_ADDRESS:
        host = outward_address(ipv6=host != "0.0.0.0") or (
            "127.0.0.1" if host == "0.0.0.0" else "::1"
        )
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(
    memory: Memory,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    write: bool = False,
    allow_remote: bool = False,
    questions: Sequence[Path] = (),
    echo: Callable[[str], None] = print,
) -> None:
    """Serve the viewer of MEMORY until interrupted. A HOST that is not this machine's
    loopback is refused unless ALLOW_REMOTE (the token is then all that guards it)."""
    import uvicorn

    from autopoiesis.viewer.app import create_app, missing_dependencies
    from autopoiesis.viewer.guard import is_loopback, new_token

    problem = missing_dependencies()
    if problem:
        raise InvalidArgumentError(problem)
    if not is_loopback(host) and not allow_remote:
        raise InvalidArgumentError(
            f"--host {host} is not this machine's loopback: the viewer would be open to the "
            "network. Keep the default (127.0.0.1), or add --allow-remote if you mean it."
        )
    named = _question_sets(questions)
    sock = bind(host, port)
    port = sock.getsockname()[1]
    token = new_token()
    app = create_app(memory, token=token, port=port, write=write, host=host, questions=named)
    viewer = app.state.viewer
    threading.Thread(target=viewer.catalog.rows, name="catalog-warm", daemon=True).start()
    viewer.health.current()  # the doctor's checks start in the background too
    echo(f"autopoiesis viewer of {memory.root}")
    echo(f"  open {url_of(host, port, token)}")
    echo("  " + ("writes allowed (--write)" if write else "read-only") + "; Ctrl-C stops it")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        viewer.close()


def _question_sets(paths: Sequence[Path]) -> dict[str, Path]:
    named: dict[str, Path] = {}
    for p in paths:
        if not p.is_file():
            raise InvalidArgumentError(f"--questions {p}: no such file.")
        name = p.name
        n = 2
        while name in named:
            name, n = f"{p.name} ({n})", n + 1
        named[name] = p.resolve()
    return named
