"""What a provider implements and what a call returns.

A chat provider (`ChatProvider`) makes ONE request and reports what happened: a
`Completion`, or a `CallFailure` saying whether a retry may help. Retries, backoff, the
concurrency limit, the cache, the ledger and the budget are the client's, so they hold
for every provider alike and a provider stays a thin adapter over one HTTP API.

The offline provider is not a `ChatProvider`: it answers per stage (prompt and system,
no model), deterministically, through the handlers stages register
(`register_offline_handler`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

#: One chat message: {"role": "system" | "user" | "assistant", "content": text}.
Message = dict[str, str]
#: An offline heuristic for one stage: (prompt, system) -> text (str) or JSON-able data.
OfflineHandler = Callable[[str, str | None], Any]
#: A validator for complete_json: returns False or raises to reject the data.
Validator = Callable[[Any], Any]


@dataclass(frozen=True)
class Completion:
    """A provider's answer: the text and the tokens it says it used."""

    text: str
    tokens_in: int
    tokens_out: int


# The most of a reply's body a provider reads: a text reply is capped at 256 KB
# (jsonreply.MAX_REPLY_CHARS), JSON escapes may take six bytes a character, and a body past
# this is refused unread, whatever the server sends (a 300 MB reply held 568 MB).
MAX_REPLY_BYTES = 4 * 1024 * 1024


def bounded(completion: Completion, messages: list[Message], params: dict[str, Any]) -> Completion:
    """COMPLETION with token counts a server cannot inflate past what was exchanged: no
    more tokens in than bytes sent (a token is at least a byte) and a few a message for the
    chat format; no more out than the max_tokens asked for (a reasoning model's hidden
    tokens count there, so the visible reply does not bound them), else than bytes
    received. A count that is no whole number is estimated offline (core.text)."""
    from autopoiesis.core.text import count_tokens

    sent = sum(len(str(m.get("content", "")).encode("utf-8", "replace")) for m in messages)
    most_in = sent + 8 * len(messages) + 16
    limit = params.get("max_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        most_out = limit
    else:
        most_out = len(completion.text.encode("utf-8", "replace")) + 8

    def fit(value: object, most: int, estimate: Callable[[], int]) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return min(estimate(), most)
        return min(value, most)

    tin = fit(
        completion.tokens_in,
        most_in,
        lambda: count_tokens("".join(str(m.get("content", "")) for m in messages)),
    )
    tout = fit(completion.tokens_out, most_out, lambda: count_tokens(completion.text))
    if (tin, tout) == (completion.tokens_in, completion.tokens_out):
        return completion
    return Completion(completion.text, tin, tout)


@dataclass(frozen=True)
class CallFailure:
    """A request that got no usable answer. `retryable` for timeouts, dropped
    connections, 429 and 5xx; `retry_after` is the server's wish in seconds, if any;
    `status` the HTTP status when there was one (401/403 get an API-key hint); `late`
    when the call's deadline ended the request, not the endpoint's own timeout or an
    error (a caller's deadline shorter than the endpoint's limits is no failure of the
    endpoint: see RemoteCalls._remote)."""

    reason: str
    retryable: bool
    retry_after: float | None = None
    status: int | None = None
    late: bool = False


class ChatProvider(Protocol):
    """A remote model behind one API. Built from the LLMConfig by the factory registered
    under its name (`register_provider`); used from many threads at once."""

    name: str

    def chat(
        self, model: str, messages: list[Message], params: dict[str, Any]
    ) -> Completion | CallFailure:
        """Send one chat request (PARAMS: max_tokens, temperature, maybe response_format)."""
        ...

    def close(self) -> None:
        """Release connections; the provider is not used after."""
        ...


_CALL = threading.local()


def set_call_deadline(deadline: float | None) -> None:
    """The client sets the monotonic time by which the current call (on this thread) must end."""
    _CALL.deadline = deadline


def call_time_left() -> float | None:
    """Seconds left before the current call's deadline (None: no deadline). A provider
    uses it to bound its own waits; the client enforces the deadline whatever it does."""
    deadline = getattr(_CALL, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


@dataclass(frozen=True)
class LLMResult:
    """One answer. `data` is set by complete_json only."""

    text: str
    model: str
    provider: str  # "openai" or "offline": who actually answered
    tokens_in: int
    tokens_out: int
    cached: bool = False
    fell_back: bool = False  # True when the daily budget sent a configured model's call offline
    stage: str = ""
    cost: float = 0.0
    data: Any = None
    dropped_items: int = 0  # complete_json: items cut from over-long arrays (MAX_REPLY_ITEMS)


@dataclass(frozen=True)
class UsageRow:
    """Calls of one stage on one day, summed from the ledger."""

    day: str
    stage: str
    calls: int
    cached: int
    offline: int
    errors: int
    tokens_in: int
    tokens_out: int
    cost: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
