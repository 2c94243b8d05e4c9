"""The LLMClient's remote path: one call to a remote endpoint, its attempts retried by
RetryPolicy and all of them bounded by the call's deadline (see llm/client.py for the
bounds every call keeps).

RemoteCalls is a mixin: LLMClient holds the state it declares (the config, the retry
policy, the deadline, the concurrency slots, the repo's backoff, the redactor) and the
ledger it records to (`_record`); this module owns how a remote call is made, retried
and given up.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from autopoiesis.core.clock import format_ts
from autopoiesis.core.config import LLMConfig
from autopoiesis.core.redact import Redactor
from autopoiesis.core.text import counted
from autopoiesis.errors import LLMUnavailableError
from autopoiesis.llm.backpressure import GlobalBackoff, SlotPool
from autopoiesis.llm.protocol import (
    CallFailure,
    ChatProvider,
    Completion,
    LLMResult,
    Message,
    bounded,
    set_call_deadline,
)
from autopoiesis.llm.providers import make_provider


@dataclass
class RetryPolicy:
    """Backoff between attempts: base * 2**n, "equal jitter" (half fixed, half random) so
    parallel callers that failed together do not retry together; capped. A server's
    Retry-After wins when present, capped too so a wild value cannot stall a stage."""

    max_retries: int = LLMConfig().max_retries
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_cap: float = 60.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.retry_after_cap))
        d = min(self.backoff_max, self.backoff_base * (2**attempt))
        return d / 2 + rng.uniform(0, d / 2)

    def longest_backoff(self) -> float:
        """The most all the backoff sleeps of one call can add up to (no Retry-After)."""
        return sum(
            min(self.backoff_max, self.backoff_base * (2**n)) for n in range(self.max_retries)
        )


# seconds an attempt may take beyond its timeout in the derived deadline (connecting, a
# thread, a slot: without it, on a busy machine the last retry was cut short before its
# own timeout)
ATTEMPT_MARGIN = 0.25


def call_deadline(timeout_seconds: float, retry: RetryPolicy, configured: float | None) -> float:
    """Seconds one call to an endpoint may take in all, its attempts, the backoff between
    them and the wait for a slot: CONFIGURED (llm.deadline_seconds) when set, else every
    attempt's timeout plus ATTEMPT_MARGIN, and the longest backoff. Chat calls and
    embeddings requests keep the same bound (index/embedders/openai.py)."""
    if configured is not None:
        return float(configured)
    attempts = retry.max_retries + 1
    return (float(timeout_seconds) + ATTEMPT_MARGIN) * attempts + retry.longest_backoff()


class _CutShort(LLMUnavailableError):
    """The caller's own deadline, shorter than the call's, ended the call while the endpoint
    was within its limits (no error, no timeout of its own): the caller's choice, not a
    failure of the endpoint, so the repo's shared backoff does not count it."""


class RemoteCalls:
    """Remote calls of an LLMClient (the mixin it inherits): the provider, redaction of what
    leaves the process, the repo's backoff, the attempts and one attempt's thread."""

    config: LLMConfig
    retry: RetryPolicy
    deadline: float
    backoff: GlobalBackoff | None
    clock: Callable[[], datetime]
    slots: SlotPool | None
    _slots: threading.BoundedSemaphore
    _remote_provider: ChatProvider | None
    _provider_lock: threading.Lock
    _rng: random.Random
    redactor: Redactor
    _redact_lock: threading.Lock
    _record: Callable[..., float]  # LLMClient._record: one ledger line

    def _provider(self) -> ChatProvider:
        with self._provider_lock:
            if self._remote_provider is None:
                self._remote_provider = make_provider(self.config)
            return self._remote_provider

    def _redacted(self, messages: list[Message]) -> list[Message]:
        """MESSAGES with every secret replaced: what leaves the process for a remote model."""
        with self._redact_lock:  # the Redactor counts as it goes; calls run on many threads
            return [{**m, "content": self.redactor.redact(m["content"])} for m in messages]

    def _remote(
        self,
        stage: str,
        model: str,
        messages: list[Message],
        params: dict[str, Any],
        *,
        deadline: float | None = None,
    ) -> LLMResult:
        provider = self._provider()
        self._check_backoff(stage, model, provider.name)
        try:
            result = self._remote_attempts(
                stage, model, provider, messages, params, deadline=deadline
            )
        except _CutShort:
            raise
        except LLMUnavailableError as exc:
            if self.backoff is not None:
                self.backoff.failed(str(exc).split(". ")[0], self.clock())
            raise
        if self.backoff is not None:
            self.backoff.succeeded()
        return result

    def _check_backoff(self, stage: str, model: str, provider: str) -> None:
        """Refuse the call at once while the repo's LLM endpoint is backed off (recent calls
        failed): the stage falls back or retries later, without hammering a dead server."""
        blocked = self.backoff.blocked_until(self.clock()) if self.backoff is not None else None
        if blocked is None or blocked.until is None:
            return
        self._record(stage, model, provider, 0, 0, cached=False, ok=False, error="global backoff")
        raise LLMUnavailableError(
            f"The LLM endpoint ({self.config.base_url or 'api.openai.com'}) failed "
            f"{counted(blocked.failures, 'call')} in a row "
            f"(last: {blocked.last_error[:200]}); every LLM stage waits until "
            f"{format_ts(blocked.until)} before calling it "
            "again. Check that it is running; the stages fall back or retry meanwhile."
        )

    def _remote_attempts(
        self,
        stage: str,
        model: str,
        provider: ChatProvider,
        messages: list[Message],
        params: dict[str, Any],
        *,
        deadline: float | None = None,
    ) -> LLMResult:
        messages = self._redacted(messages)
        started = time.monotonic()
        budget = self.deadline if deadline is None else min(self.deadline, deadline)
        deadline = started + budget
        attempts = 0
        last = ""
        while True:
            attempts += 1
            outcome = self._attempt(provider, model, messages, params, deadline, budget)
            if isinstance(outcome, Completion) and not outcome.text.strip():
                # whatever the provider: no answer is a failure to retry, never an answer
                # to cache nor a sign the endpoint works
                outcome = CallFailure("the reply held no text", retryable=True)
            if isinstance(outcome, CallFailure) and not outcome.late:
                last = outcome.reason
            if isinstance(outcome, Completion):
                outcome = bounded(outcome, messages, params)  # a server's counts, checked
                cost = self._record(
                    stage,
                    model,
                    provider.name,
                    outcome.tokens_in,
                    outcome.tokens_out,
                    cached=False,
                    ok=True,
                    attempts=attempts,
                    latency_ms=_ms(started),
                )
                return LLMResult(
                    outcome.text,
                    model,
                    provider.name,
                    outcome.tokens_in,
                    outcome.tokens_out,
                    stage=stage,
                    cost=cost,
                )
            wait = (
                self.retry.delay(attempts - 1, outcome.retry_after, self._rng)
                if outcome.retryable
                else 0.0
            )
            out_of_time = time.monotonic() + wait >= deadline
            final = not outcome.retryable or attempts > self.retry.max_retries or out_of_time
            if final:  # one ledger line per call, not per attempt
                error = (
                    f"{outcome.reason} (before: {last})"
                    if outcome.late and last
                    else outcome.reason
                )
                self._record(
                    stage,
                    model,
                    provider.name,
                    0,
                    0,
                    cached=False,
                    ok=False,
                    error=error,
                    attempts=attempts,
                    latency_ms=_ms(started),
                )
            if outcome.late:
                # a caller's shorter deadline (the gate's, in a prompt hook) that ended a call
                # the endpoint had not failed is no sign the endpoint is down
                cut_short = budget < self.deadline and not last
                raise (_CutShort if cut_short else LLMUnavailableError)(
                    f"The LLM endpoint ({self.config.base_url or 'api.openai.com'}) did not "
                    f"answer the {stage} call "
                    f"after {attempts} attempt{'s' if attempts > 1 else ''}: no complete answer "
                    "within the call's "
                    f"deadline of {budget:g} s{f' (before: {last})' if last else ''}. Check that "
                    "it is running, "
                    "or raise llm.deadline_seconds in memory-config.yaml."
                )
            if not outcome.retryable:
                hint = (
                    f" Set ${self.config.api_key_env} to a valid API key."
                    if outcome.status in (401, 403)
                    else f" Check llm.base_url and llm.models.{stage} in memory-config.yaml."
                )
                raise LLMUnavailableError(
                    f"The LLM endpoint refused the {stage} call ({outcome.reason}).{hint}"
                )
            if final:
                where = self.config.base_url or "api.openai.com"
                within = f" within the deadline of {budget:g} s" if out_of_time else ""
                raise LLMUnavailableError(
                    f"The LLM endpoint ({where}) did not answer the {stage} call after "
                    f"{counted(attempts, 'attempt')}{within} "
                    f"(last: {outcome.reason}). Check that it is running, or raise "
                    "llm.timeout_seconds / "
                    "llm.max_retries / llm.deadline_seconds."
                )
            time.sleep(wait)

    def _attempt(
        self,
        provider: ChatProvider,
        model: str,
        messages: list[Message],
        params: dict[str, Any],
        deadline: float,
        budget: float,
    ) -> Completion | CallFailure:
        """One request, given up at DEADLINE whatever the provider is doing. It runs on a
        daemon thread: a provider blocked in a read cannot hold the caller (or the
        process's exit); it ends by itself when its own timeout or the server lets it."""
        late = CallFailure(f"deadline of {budget:g} s reached", retryable=False, late=True)
        left = deadline - time.monotonic()
        if left <= 0 or not self._slots.acquire(timeout=left):
            return late
        slot = self.slots.acquire(deadline) if self.slots is not None else None
        if self.slots is not None and slot is None:  # every process's slots stayed busy
            self._slots.release()
            return late
        box: list[Completion | CallFailure | BaseException] = []
        done = threading.Event()

        def work() -> None:
            set_call_deadline(deadline)
            try:
                box.append(provider.chat(model, messages, params))
            except BaseException as exc:  # handed to the caller below
                box.append(exc)
            finally:
                set_call_deadline(None)
                if slot is not None:
                    slot.release()
                self._slots.release()
                done.set()

        threading.Thread(target=work, name="llm-call", daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            return late
        got = box[0]
        if isinstance(got, BaseException):
            raise got
        return got


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
