"""The `openai` package as a ChatProvider: any OpenAI-compatible endpoint (OpenAI, Ollama,
vLLM, a router).

The package is imported inside the methods, never at module import time: git hooks and
`autopoiesis --help` must not pay ~1 s for it. Its own retries are off; the client's
retry policy is the one policy, visible in the ledger.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

from autopoiesis.core.clock import utc, utc_now
from autopoiesis.core.config import LLMConfig
from autopoiesis.core.text import count_tokens
from autopoiesis.errors import LLMUnavailableError
from autopoiesis.llm.protocol import (
    MAX_REPLY_BYTES,
    CallFailure,
    Completion,
    Message,
    call_time_left,
)


class OpenAIProvider:
    name = "openai"

    def __init__(self, config: LLMConfig):
        self.config = config
        self._client: Any = None
        self._lock = threading.Lock()

    def _openai(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    # here, not at module top: hooks and --help must stay light; only its
                    # absence is told here, openai_client builds the client
                    import openai  # noqa: F401
                except ImportError:
                    raise LLMUnavailableError(
                        f"llm.provider is {self.name}, but the openai package (the client of "
                        "every OpenAI-compatible server, a dependency of autopoiesis) is "
                        "missing from this environment: reinstall autopoiesis (or `pip install "
                        "openai`), or set llm.provider: offline."
                    ) from None

                self._client = openai_client(
                    self.config.base_url,
                    os.environ.get(self.config.api_key_env) or "not-needed",
                    float(self.config.timeout_seconds),
                )
            return self._client

    def chat(
        self, model: str, messages: list[Message], params: dict[str, Any]
    ) -> Completion | CallFailure:
        client = self._openai()
        body = fetch_capped(
            client.chat.completions.with_streaming_response.create,
            float(self.config.timeout_seconds),
            model=model,
            messages=messages,
            **params,
        )
        if isinstance(body, CallFailure):
            return body
        try:
            data = json.loads(body)
        except ValueError:
            return CallFailure("the reply was not JSON", retryable=True)
        return read_completion(data if isinstance(data, dict) else {}, messages)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def openai_client(base_url: str | None, api_key: str, timeout_seconds: float) -> Any:
    """An `openai.OpenAI` for one approved endpoint, chat and embeddings alike: without the
    package's own retries (the caller's retry policy is the one policy), and without
    following redirects. The endpoint is what this machine approved (`autopoiesis llm
    approve`); the package follows a redirect by default, and a 307 from it resent every
    prompt, so the memory's content, to whatever host it named. A redirect is an HTTP
    error instead, whose message names llm.base_url."""
    import openai

    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key,
        timeout=timeout_seconds,
        max_retries=0,
        http_client=openai.DefaultHttpxClient(follow_redirects=False, timeout=timeout_seconds),
    )


def fetch_capped(
    create: Callable[..., Any],
    timeout_seconds: float,
    *,
    max_bytes: int = MAX_REPLY_BYTES,
    **request: Any,
) -> bytes | CallFailure:
    """The body of one request through an openai-package streaming method (CREATE: e.g.
    `client.chat.completions.with_streaming_response.create`, or the embeddings' one), or
    what went wrong. The bounds of every remote request, chat and embeddings alike:

    * no read waits longer than TIMEOUT_SECONDS nor past the call's deadline (the one the
      caller set on this thread, protocol.set_call_deadline), and the body is read chunk
      by chunk and given up at that deadline: a server that trickles its reply one byte at
      a time (which no per-read timeout catches) costs the deadline, not hours;
    * a body over MAX_BYTES is refused unread."""
    import openai

    timeout = timeout_seconds
    left = call_time_left()
    # no single read may outlast the call's deadline; when that deadline is the nearer
    # limit, a timeout is the deadline's doing, not the endpoint's
    cut = left is not None and left < timeout
    if left is not None:
        timeout = max(0.01, min(timeout, left))
    try:
        with create(timeout=timeout, **request) as response:
            body = _read_capped(response, max_bytes)
    except openai.APITimeoutError:
        if cut:
            return CallFailure("the call's deadline came first", retryable=False, late=True)
        return CallFailure(f"timed out after {timeout_seconds:g} s", retryable=True)
    except openai.APIConnectionError as exc:
        return CallFailure(f"connection failed: {_root_cause(exc)}", retryable=True)
    except openai.APIStatusError as exc:
        status = exc.status_code
        retryable = status == 429 or status >= 500
        if 300 <= status < 400:  # openai_client follows no redirect: say where it pointed
            where = exc.response.headers.get("location") or "another address"
            return CallFailure(
                f"HTTP {status}: the endpoint redirects to {_short(where)}, which was not "
                "followed (nothing is sent to an address this machine did not approve; if "
                "that one is right, set the base_url in memory-config.yaml to it and run "
                "`autopoiesis llm approve`)",
                retryable=False,
                status=status,
            )
        return CallFailure(
            f"HTTP {status}: {_short(exc.message)}",
            retryable=retryable,
            retry_after=_retry_after(exc.response) if retryable else None,
            status=status,
        )
    except _BrokenOff as exc:  # a read of the body, once the answer began
        late = exc.deadline or (cut and exc.timed_out)
        return CallFailure(str(exc), retryable=not late, late=late)
    if body is None:
        return CallFailure(
            f"the reply was over {max_bytes / (1024 * 1024):g} MB, more than any answer "
            "asked for; it was not read",
            retryable=False,
        )
    return body


def _root_cause(exc: BaseException) -> str:
    """What EXC, the client's "Connection error.", was caused by, as its innermost cause
    says it (a TLS certificate the endpoint's name does not match, a refused connection):
    the client's own words name no cause."""
    seen = exc
    while seen.__cause__ is not None and seen.__cause__ is not seen:
        seen = seen.__cause__
    if seen is exc:
        return str(exc)
    return f"{exc} ({type(seen).__name__}: {str(seen)[:300]})".replace("\n", " ")


class _BrokenOff(Exception):
    """The reply's body could not be read to its end (its message says why): the call's
    DEADLINE passed, a read TIMED_OUT, or the connection failed."""

    def __init__(self, message: str, *, deadline: bool = False, timed_out: bool = False):
        super().__init__(message)
        self.deadline, self.timed_out = deadline, timed_out


def _read_capped(response: Any, max_bytes: int) -> bytes | None:
    """The body of RESPONSE, read chunk by chunk: None (and the rest left unread) past
    MAX_BYTES; _BrokenOff past the call's deadline or when the connection fails
    (whatever the HTTP client under the openai package calls it)."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                return None
            chunks.append(chunk)
            left = call_time_left()
            if left is not None and left <= 0:
                raise _BrokenOff(
                    "the call's deadline passed while the reply was read", deadline=True
                )
    except _BrokenOff:
        raise
    except Exception as exc:  # the HTTP client's own errors: a timeout, a dropped connection
        timed_out = "timeout" in type(exc).__name__.lower()
        what = "timed out" if timed_out else "connection failed"
        raise _BrokenOff(
            f"{what} while the reply was read ({type(exc).__name__})", timed_out=timed_out
        ) from None
    return b"".join(chunks)


def read_completion(data: dict[str, Any], messages: list[Message]) -> Completion | CallFailure:
    """The text and token counts of a chat completion (its JSON); tokens estimated offline
    (core.text.count_tokens) when the server sends no usage block, and bounded by what was
    exchanged (protocol.bounded, applied by the client to every provider's answer).

    A reply without an answer (no choices, a null or blank content) is a failure a retry
    may mend, never an empty answer: an empty one was cached for good and counted as the
    endpoint working."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return CallFailure("the reply held no choices", retryable=True)
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str) or not content.strip():
        what = "an empty" if isinstance(content, str) else "no"
        return CallFailure(f"the reply's message had {what} content", retryable=True)
    text = content
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tin, tout = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(tin, int) or isinstance(tin, bool):
        tin = count_tokens("".join(m["content"] for m in messages))
    if not isinstance(tout, int) or isinstance(tout, bool):
        tout = count_tokens(text)
    return Completion(text, tin, tout)


def _retry_after(response: Any) -> float | None:
    """Seconds the server asks to wait (retry-after-ms, or retry-after in seconds or as an HTTP
    date)."""
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    import email.utils  # rare path; email.utils costs ~20 ms to import

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, (utc(when) - utc_now()).total_seconds())


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
