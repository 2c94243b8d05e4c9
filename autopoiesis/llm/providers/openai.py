"""The `openai` package as a ChatProvider: any OpenAI-compatible endpoint (OpenAI, Ollama,
vLLM, a router).

The package is imported inside the methods, never at module import time: git hooks and
`autopoiesis --help` must not pay ~1 s for it. Its own retries are off; the client's
retry policy is the one policy, visible in the ledger.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from autopoiesis.core.clock import utc, utc_now
from autopoiesis.core.config import LLMConfig
from autopoiesis.core.text import count_tokens
from autopoiesis.errors import LLMUnavailableError
from autopoiesis.llm.protocol import CallFailure, Completion, Message, call_time_left


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
                    import openai  # here, not at module top: hooks and --help must stay light
                except ImportError:
                    raise LLMUnavailableError(
                        f"llm.provider is {self.name}, but the openai package (the client of "
                        "every OpenAI-compatible server, a dependency of autopoiesis) is "
                        "missing from this environment: reinstall autopoiesis (or `pip install "
                        "openai`), or set llm.provider: offline."
                    ) from None

                self._client = openai.OpenAI(
                    base_url=self.config.base_url,
                    api_key=os.environ.get(self.config.api_key_env) or "not-needed",
                    timeout=float(self.config.timeout_seconds),
                    max_retries=0,  # retries are the client's
                )
            return self._client

    def chat(
        self, model: str, messages: list[Message], params: dict[str, Any]
    ) -> Completion | CallFailure:
        client = self._openai()
        import openai

        timeout = float(self.config.timeout_seconds)
        left = call_time_left()
        if left is not None:  # no single read may outlast the call's deadline
            timeout = max(0.01, min(timeout, left))
        try:
            resp = client.chat.completions.create(
                model=model, messages=messages, timeout=timeout, **params
            )
        except openai.APITimeoutError:
            return CallFailure(f"timed out after {self.config.timeout_seconds} s", retryable=True)
        except openai.APIConnectionError as exc:
            return CallFailure(f"connection failed: {exc}", retryable=True)
        except openai.APIStatusError as exc:
            status = exc.status_code
            retryable = status == 429 or status >= 500
            return CallFailure(
                f"HTTP {status}: {_short(exc.message)}",
                retryable=retryable,
                retry_after=_retry_after(exc.response) if retryable else None,
                status=status,
            )
        return read_completion(resp, messages)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def read_completion(resp: Any, messages: list[Message]) -> Completion:
    """The text and token counts of a chat completion; tokens estimated offline
    (core.text.count_tokens) when the server sends no usage block."""
    choices = getattr(resp, "choices", None) or []
    text = ""
    if choices and choices[0].message is not None:
        text = choices[0].message.content or ""
    usage = getattr(resp, "usage", None)
    tin = getattr(usage, "prompt_tokens", None) if usage is not None else None
    tout = getattr(usage, "completion_tokens", None) if usage is not None else None
    if tin is None:
        tin = count_tokens("".join(m["content"] for m in messages))
    if tout is None:
        tout = count_tokens(text)
    return Completion(text, int(tin), int(tout))


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
