"""A real loopback HTTP server speaking enough of the OpenAI API for the tests of every
LLM-using module (llm client, gate, extractors, search embeddings). Real sockets and the
real `openai` client, so retries, timeouts and JSON handling are tested end to end
instead of against monkeypatched internals.

Endpoints: POST /v1/chat/completions, POST /v1/embeddings, GET /v1/models (the /v1
prefix is optional).

Scripting: `server.enqueue(spec, ...)` queues one response spec per chat request, in
order; when the queue is empty `server.default_chat(body)` makes the spec (settable).
Embeddings have their own queue (`enqueue_embeddings`) and default (`default_embeddings`).
A spec is a dict:

    {"content": "text"}                        200 with that assistant message
    {"content": "...", "usage": None}          ... without a usage block
    {"content": "...", "prompt_tokens": 7, "completion_tokens": 1}
    {"delay": 0.2, "content": "..."}           simulated latency, then answer
    {"status": 429, "headers": {"Retry-After": "0"}}   an error status (any code)
    {"status": 500, "message": "boom"}
    {"hang": 2.0}                              sleep (longer than the client timeout), then drop
    {"trickle": 5.0, "content": "..."}         headers at once, then the body one byte every
                                               5 s (a per-read timeout never fires)
    {"disconnect": True}                       close the connection without an answer
    {"raw": "not json {", "status": 200}       a raw HTTP body
    {"content_bytes": 300_000_000}             a reply that long, streamed (never held)
    {"embeddings": [[...], ...]}               (embeddings queue) these vectors

`server.latency` adds a delay to every request. Every request is recorded in
`server.requests` (path, parsed body, headers); `server.chat_bodies()` lists chat bodies.

Concurrency without a clock: `server.answer_in_groups_of(n)` answers no request until N
are in flight together (a barrier), so `server.max_in_flight == n` proves a client sends N
at once however slowly a busy machine schedules its threads; a client that never has N in
flight is answered anyway after GROUP_HANG_GUARD seconds and shows a smaller maximum. A
request is in flight from its arrival until its answer starts (not until the handler
returns: the client may send its next request as soon as it has read the answer).
`server.hold()` keeps every request unanswered until `server.release()`: a test that must
act while a model is being asked does so for as long as it needs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Spec = dict[str, Any]

# seconds a request waits for its group (answer_in_groups_of) or its release (hold) before
# it is answered anyway: a hang guard, so a client that breaks its limit fails its test's
# assertion instead of hanging it
GROUP_HANG_GUARD = 60.0


@dataclass
class RecordedRequest:
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)


def default_chat(body: dict[str, Any]) -> Spec:
    """'{}' in JSON mode, else 'OK'."""
    if (body.get("response_format") or {}).get("type") == "json_object":
        return {"content": "{}"}
    return {"content": "OK"}


def embed_text(text: str, dimensions: int, model: str = "") -> list[float]:
    """A deterministic unit vector for TEXT: signed feature hashing of its lowercased
    words, so texts that share words have a positive cosine (search tests can rank)."""
    vec = [0.0] * dimensions
    words = re.findall(r"\w+", text.lower()) or [text]
    for w in words:
        h = hashlib.sha256(f"{model}\x00{w}".encode()).digest()
        idx = int.from_bytes(h[:8], "little") % dimensions
        vec[idx] += 1.0 if h[8] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def default_embeddings(body: dict[str, Any]) -> Spec:
    inputs = body.get("input", "")
    if isinstance(inputs, str):
        inputs = [inputs]
    dims = int(body.get("dimensions") or 1536)
    model = str(body.get("model", ""))
    return {"embeddings": [embed_text(str(t), dims, model) for t in inputs]}


class OpenAIServer:
    """Start with `start()` (or use as a context manager); `base_url` is what to give the
    client. Thread-safe: requests are served on one thread per connection."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.host, self.port = host, port
        self.requests: list[RecordedRequest] = []
        self.default_chat: Callable[[dict[str, Any]], Spec] = default_chat
        self.default_embeddings: Callable[[dict[str, Any]], Spec] = default_embeddings
        self.latency = 0.0
        self._chat: deque[Spec] = deque()
        self._emb: deque[Spec] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self._group: threading.Barrier | None = None
        self._released = threading.Event()
        self._released.set()

    # ── lifecycle ──
    def start(self) -> OpenAIServer:
        owner = self
        handler = type("Handler", (_Handler,), {"owner": owner})
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes hanging/delayed handlers
        self._released.set()
        if self._group is not None:
            self._group.abort()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # ── scripting ──
    def enqueue(self, *specs: Spec | str) -> None:
        """Queue chat responses; a bare string is {"content": string}."""
        with self._lock:
            self._chat.extend({"content": s} if isinstance(s, str) else s for s in specs)

    def enqueue_embeddings(self, *specs: Spec) -> None:
        with self._lock:
            self._emb.extend(specs)

    def answer_in_groups_of(self, n: int) -> None:
        """Answer requests only once N are in flight together (see the module's doc)."""
        with self._lock:
            self._group = threading.Barrier(n, timeout=GROUP_HANG_GUARD)

    def hold(self) -> None:
        """Answer no request until release() (or GROUP_HANG_GUARD seconds pass)."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def reset(self) -> None:
        with self._lock:
            self._chat.clear()
            self._emb.clear()
            self.requests.clear()
            self.max_in_flight = 0
            self._group = None

    def pending(self) -> int:
        with self._lock:
            return len(self._chat) + len(self._emb)

    def chat_bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def embedding_bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    # ── used by the handler ──
    def _next(self, kind: str, body: Any) -> Spec:
        with self._lock:
            q = self._chat if kind == "chat" else self._emb
            spec = q.popleft() if q else None
        if spec is None:
            spec = (self.default_chat if kind == "chat" else self.default_embeddings)(body)
        return spec

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _wait_turn(self) -> None:
        """Block a request until it may be answered: until its group is complete (or
        never can be: broken by the hang guard or the server's stop) and it is released."""
        group = self._group
        if group is not None:
            try:
                group.wait()
            except threading.BrokenBarrierError:
                pass  # the hang guard: answered, and max_in_flight tells the test
        self._released.wait(GROUP_HANG_GUARD)


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    _in_flight = False
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client (httpx) expects
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(
                200,
                {
                    "object": "list",
                    "data": [{"id": "gpt-4o-mini", "object": "model", "owned_by": "test"}],
                },
            )
        else:
            self._json(404, _error(f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        path = self.path.split("?", 1)[0].rstrip("/")
        self.owner._record(
            RecordedRequest("POST", path, body, {k.lower(): v for k, v in self.headers.items()})
        )
        self._in_flight = True
        try:
            if body is None:
                self._json(400, _error("request body is not JSON", "invalid_request_error"))
            elif path.endswith("/chat/completions"):
                self._answer(self.owner._next("chat", body), body, self._chat_payload)
            elif path.endswith("/embeddings"):
                self._answer(self.owner._next("emb", body), body, self._embedding_payload)
            else:
                self._json(404, _error(f"no route POST {self.path}", "not_found"))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout); nothing to do
        finally:
            self._landed()

    def _landed(self) -> None:
        """The request is no longer in flight: its answer starts (or it gets none)."""
        if self._in_flight:
            self._in_flight = False
            self.owner._done()

    def _answer(
        self,
        spec: Spec,
        body: dict[str, Any],
        payload: Callable[[Spec, dict[str, Any]], dict[str, Any]],
    ) -> None:
        self.owner._wait_turn()
        delay = float(spec.get("delay", 0)) + self.owner.latency
        if delay and self.owner._stop.wait(delay):
            self.close_connection = True
            return
        if "hang" in spec:
            self.owner._stop.wait(float(spec["hang"]))
            self.close_connection = True
            return
        if spec.get("disconnect"):
            self.close_connection = True
            return
        status = int(spec.get("status", 200))
        headers = dict(spec.get("headers") or {})
        if "trickle" in spec:
            self._trickle(
                status,
                json.dumps(payload(spec, body)).encode("utf-8"),
                headers,
                float(spec["trickle"]),
            )
        elif "content_bytes" in spec:
            self._huge(int(spec["content_bytes"]), headers)
        elif "raw" in spec:
            self._send(status, str(spec["raw"]).encode("utf-8"), headers)
        elif status != 200:
            err_type = (
                "rate_limit_error"
                if status == 429
                else "server_error"
                if status >= 500
                else "invalid_request_error"
            )
            self._json(
                status, _error(spec.get("message", f"scripted HTTP {status}"), err_type), headers
            )
        else:
            self._json(200, payload(spec, body), headers)

    @staticmethod
    def _chat_payload(spec: Spec, body: dict[str, Any]) -> dict[str, Any]:
        content = str(spec.get("content", ""))
        out: dict[str, Any] = {
            "id": "chatcmpl-"
            + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": spec.get("model", body.get("model", "")),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
        }
        if "usage" not in spec or spec["usage"] is not None:
            prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
            pt = int(spec.get("prompt_tokens", math.ceil(prompt_chars / 4)))
            ct = int(spec.get("completion_tokens", math.ceil(len(content) / 4)))
            out["usage"] = {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
        return out

    @staticmethod
    def _embedding_payload(spec: Spec, body: dict[str, Any]) -> dict[str, Any]:
        vectors = spec.get("embeddings")
        if vectors is None:
            vectors = default_embeddings(body)["embeddings"]
        b64 = (
            body.get("encoding_format") == "base64"
        )  # the openai client asks for base64 by default
        data = []
        for i, v in enumerate(vectors):
            emb: Any = (
                base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode("ascii") if b64 else list(v)
            )
            data.append({"object": "embedding", "index": i, "embedding": emb})
        inputs = body.get("input", "")
        n_chars = len(inputs) if isinstance(inputs, str) else sum(len(str(t)) for t in inputs)
        tokens = math.ceil(n_chars / 4)
        return {
            "object": "list",
            "data": data,
            "model": body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode("utf-8"), headers or {})

    def _trickle(self, status: int, data: bytes, headers: dict[str, str], every: float) -> None:
        """The whole response, its body one byte every EVERY seconds (until the server stops)."""
        self._head(status, len(data), headers)
        self.wfile.flush()
        for i in range(len(data)):
            if self.owner._stop.wait(every):
                self.close_connection = True
                return
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()

    def _huge(self, size: int, headers: dict[str, str]) -> None:
        """A chat completion whose content is SIZE bytes of `x`, written 1 MB at a time (the
        server never holds it), until the client stops reading."""
        head = b'{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": '
        head += b'"assistant", "content": "'
        tail = b'"}, "finish_reason": "stop"}]}'
        self._head(200, len(head) + size + len(tail), headers)
        self.wfile.write(head)
        chunk = b"x" * (1 << 20)
        for start in range(0, size, len(chunk)):
            self.wfile.write(chunk[: min(len(chunk), size - start)])
        self.wfile.write(tail)
        self.wfile.flush()

    def _head(self, status: int, length: int, headers: dict[str, str]) -> None:
        self._landed()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.end_headers()

    def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self._head(status, len(data), headers)
        self.wfile.write(data)
        self.wfile.flush()


def _error(message: str, err_type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": err_type, "param": None, "code": None}}


def write_llm_config(root: Any, base_url: str, **llm: Any) -> None:
    """Write ROOT/memory-config.yaml with an `llm:` section using provider openai at
    BASE_URL, plus any other llm settings (e.g. timeout_seconds=0.3, models={"gate": "m"}),
    and approve it on this machine as its user would (`autopoiesis llm approve`).
    Also creates raw/ and knowledge/ so MemoryRepo.is_initialized() holds."""
    from pathlib import Path

    root = Path(root)
    (root / "raw" / "conversations").mkdir(parents=True, exist_ok=True)
    (root / "knowledge").mkdir(parents=True, exist_ok=True)
    settings = {"provider": "openai", "base_url": base_url, **llm}
    lines = ["llm:"] + [
        f"  {k}: {json.dumps(v)}" for k, v in settings.items()
    ]  # JSON values are YAML
    (root / "memory-config.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    from autopoiesis.core.approval import approve
    from autopoiesis.core.config import load_tracked_config

    approve(root, load_tracked_config(root))
