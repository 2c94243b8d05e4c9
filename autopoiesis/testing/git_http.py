"""A real git remote over HTTP on loopback: git's own smart-HTTP server (`git
http-backend`, a CGI program) behind a small threaded CGI front, for tests and benchmarks
of sync between clones (autopoiesis's own, and a plugin's).

    with GitHTTPServer(folder) as server:       # serves the bare repositories in FOLDER
        url = server.url("memory.git")           # http://127.0.0.1:PORT/memory.git

Pushes are allowed (`http.receivepack`, set on every repository served), anonymous and
over plain HTTP: a test fixture, never a server for people. Each request runs one `git
http-backend`, as a web server would run it; a request body sent in chunks (a push larger
than git's post buffer) is read whole first, as CGI wants it. A request the front
cannot serve is answered `500` with the reason, and the reason is kept in `errors`: a
test that fails over HTTP says why instead of meeting a closed connection.

`drop_next(n)` makes the server close the next N connections without an answer, as a
proxy or a restarting server does: what a client must survive.
"""

from __future__ import annotations

import os
import subprocess
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request a connection: the body ends with it
    server: _Server

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        with self.server.lock:
            drop = self.server.drops > 0
            self.server.drops -= drop
            self.server.dropped += drop
        if drop:
            self.close_connection = True  # nothing written: the client sees an empty reply
            return
        try:
            self._cgi()
        except Exception:  # answered 500, and kept for the test to show
            reason = traceback.format_exc()
            self.server.errors.append(reason)
            self.send_response(500)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(reason.encode("utf-8", "replace"))

    def log_message(self, format: str, *args: object) -> None:  # quiet, as a fixture
        self.server.requests += 1

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _cgi(self) -> None:
        url = urlsplit(self.path)
        body = self._body() if self.command == "POST" else b""
        env = {
            **os.environ,
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        done = subprocess.run(
            ["git", "http-backend"], input=body, capture_output=True, env=env, check=False
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = done.stdout.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # several clones fetching and pushing at once

    def __init__(self, root: Path):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.requests = 0
        self.drops = 0
        self.dropped = 0
        self.errors: list[str] = []
        self.lock = threading.Lock()


class GitHTTPServer:
    """Serves the bare git repositories under ROOT over smart HTTP on a loopback port."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> GitHTTPServer:
        self._server = _Server(self.root)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not started"
        return int(self._server.server_address[1])

    @property
    def requests(self) -> int:
        """How many requests it answered."""
        return self._server.requests if self._server is not None else 0

    @property
    def errors(self) -> list[str]:
        """The tracebacks of requests the front could not serve (each answered 500)."""
        return self._server.errors if self._server is not None else []

    @property
    def dropped(self) -> int:
        """How many connections it closed without answering (`drop_next`)."""
        return self._server.dropped if self._server is not None else 0

    def drop_next(self, n: int = 1) -> None:
        """Close the next N connections without answering them."""
        assert self._server is not None, "the server is not started"
        with self._server.lock:
            self._server.drops = n

    def url(self, name: str) -> str:
        """The URL of the repository ROOT/NAME, which may push (`http.receivepack`)."""
        repo = self.root / name
        subprocess.run(
            ["git", "-C", str(repo), "config", "http.receivepack", "true"],
            check=True,
            capture_output=True,
        )
        return f"http://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> GitHTTPServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = ["GitHTTPServer"]
