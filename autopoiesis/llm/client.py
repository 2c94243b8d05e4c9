"""LLMClient: the one door every LLM stage goes through (gate, extractors, condensation,
commit messages, compaction).

Why one door: retries, timeouts, the concurrency limit, the response cache, the cost
ledger and the daily token budget must hold for every stage alike, and every stage must
keep working with no network. So the client orchestrates and the pieces are elsewhere:
remote.py makes, retries and gives up a remote call, a provider makes one request
(providers/), ResponseCache remembers answers (cache.py), Ledger records every call and
counts the budget (ledger.py), jsonreply.py parses and repairs JSON, pricing.py estimates
the cost.

Bounds that hold for every call, whatever the provider does:
* **A total deadline** (`llm.deadline_seconds`, by default timeout_seconds x
  (max_retries + 1) plus the longest backoff and ATTEMPT_MARGIN an attempt, remote.call_deadline;
  `LLMClient.deadline`): the attempts, the backoff between them and the wait for a
  concurrency slot all end by it. The provider's request runs on a worker thread the
  client stops waiting for at the deadline, so a server that trickles its answer one
  byte at a time (which no per-read timeout catches) costs the deadline, not hours.
* **Approval**: the endpoint, the provider and the key's variable come from
  memory-config.yaml, which a pull can change; until this machine approved them
  (`autopoiesis llm approve`, core/approval.py) the repo's config holds their defaults, so the
  client answers offline, and says once why (`notice`).
* **Redaction**: every message sent to a remote endpoint goes through the repo's
  redactor first (`repo.redactor()`); the offline provider never leaves the process.
* **Reply caps**: a reply over MAX_REPLY_CHARS is refused, and a JSON reply's arrays are
  cut to MAX_REPLY_ITEMS items (jsonreply.py).
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from autopoiesis.core.clock import format_ts_micro, today, utc_now
from autopoiesis.core.config import LLMConfig
from autopoiesis.core.redact import Redactor
from autopoiesis.core.text import count_tokens
from autopoiesis.errors import ConfigError, LLMResponseError
from autopoiesis.llm.backpressure import GlobalBackoff, SlotPool
from autopoiesis.llm.cache import ResponseCache, request_key
from autopoiesis.llm.jsonreply import (
    MAX_REPLY_CHARS,
    MAX_REPLY_ITEMS,
    json_system,
    make_validator,
    parse_capped,
    rejection,
    repair_messages,
)
from autopoiesis.llm.ledger import Ledger, summarize_usage
from autopoiesis.llm.pricing import estimate_cost
from autopoiesis.llm.protocol import (
    ChatProvider,
    LLMResult,
    Message,
    OfflineHandler,
    UsageRow,
    Validator,
)
from autopoiesis.llm.providers import OfflineProvider
from autopoiesis.llm.remote import RemoteCalls, RetryPolicy, call_deadline

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo

log = logging.getLogger(__name__)

STAGES = ("gate", "extract", "condense", "commit_message", "compact")

T = TypeVar("T")
R = TypeVar("R")


_YES_NO = re.compile(r"\W*(yes|no)\b", re.IGNORECASE)


def parse_yes_no(text: str) -> bool | None:
    """True for a reply whose first word is YES, False for NO (case-insensitive, markup
    around it aside), else None. A whole word: "Not sure", "Nobody" or "Yesterday" began
    with the letters, answered nothing, and was taken (and cached for good) as an answer."""
    m = _YES_NO.match(text)
    return None if m is None else m.group(1).lower() == "yes"


class LLMClient(RemoteCalls):
    """Every LLM call of every stage. Thread-safe: share one client and call it from
    many threads (or use map_concurrent); at most `concurrency` requests are in flight.

    Build it from a MemoryRepo (`LLMClient(repo)`: cache and ledger are its state files
    "llm_cache" and "llm_ledger") or from a config alone (`LLMClient(config=LLMConfig(...))`: no
    cache, no ledger, and so no budget).

    `notice` holds a one-line message for the user once something they should know
    happened (the daily budget ran out); the CLI prints it.

    Example::

        llm = LLMClient(MemoryRepo("/path/to/memory"))
        llm.yes_no("gate", GATE_PROMPT)                         # True / False / None
        llm.complete_json("extract", prompt, schema={"type": "object"}).data
        for row in llm.usage():
            print(row.day, row.stage, row.calls, row.cost)
    """

    def __init__(
        self,
        repo: MemoryRepo | None = None,
        *,
        config: LLMConfig | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        retry_after_cap: float = 60.0,
        use_cache: bool = True,
        job: str | None = None,
        job_token_budget: int = 0,
        clock: Callable[[], datetime] = utc_now,
    ):
        own_config = config is None
        if config is None:
            config = repo.config.llm if repo is not None else LLMConfig()
        self.config = config
        self.retry = RetryPolicy(config.max_retries, backoff_base, backoff_max, retry_after_cap)
        self.cache = (
            ResponseCache(repo.state_file("llm_cache"))
            if (repo is not None and use_cache)
            else None
        )
        self.ledger = Ledger.of(repo) if repo is not None else None
        #: The job this client works for (the daemon's job name): recorded on every ledger
        #: line; its paid tokens are capped at JOB_TOKEN_BUDGET (0: no cap), past which the
        #: stages answer offline like past the daily budget.
        self.job = job
        self.job_token_budget = max(0, int(job_token_budget))
        self._job_spent = 0
        # one executor across processes: the concurrency limit and the backoff after
        # failures hold for every process of the repo (backpressure.py)
        self.backoff = GlobalBackoff(repo.state_file("llm_backoff")) if repo is not None else None
        self.clock = (
            clock  # the backoff's time: a stage's injected clock (tests, replays) moves it too
        )
        self.slots = (
            SlotPool(repo.state_path("llm", "slots", "x").parent, config.concurrency)
            if repo is not None
            else None
        )
        #: Seconds one call may take in all (attempts, backoff, waiting for a slot):
        #: llm.deadline_seconds, else derived from the timeout and retries (call_deadline).
        self.deadline = call_deadline(config.timeout_seconds, self.retry, config.deadline_seconds)
        self.concurrency = max(1, int(config.concurrency))
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._handlers: dict[str, OfflineHandler] = {}
        self.offline = OfflineProvider(self._handlers)
        self._remote_provider: ChatProvider | None = None
        self._provider_lock = threading.Lock()
        self._rng = random.Random()
        self._notice_lock = threading.Lock()
        self.notice: str | None = None
        if own_config:
            self._warn_held_back(repo)
        # what every prompt to a remote endpoint goes through (the repo's settings, or the built-in
        # rules)
        self.redactor: Redactor = repo.redactor() if repo is not None else Redactor()
        self._redact_lock = threading.Lock()

    def _warn_held_back(self, repo: MemoryRepo | None) -> None:
        """The one warning when the repo's config points the LLM (or the embedder) somewhere
        this machine has not approved: load_config has put the defaults in its place, so
        this client answers offline (core/approval.py)."""
        from autopoiesis.core.approval import held_back, held_back_message

        if repo is None:
            return
        try:
            held = held_back(repo.root)
        except (ConfigError, OSError):  # repo.config raised it already, or will say it
            return
        if held:
            self.notice = held_back_message(repo.root, held)
            # the CLI prints the notice; a daemon job's client has only its log to say it in
            (log.warning if self.job else log.info)(self.notice)

    # ── lifecycle ──
    def close(self) -> None:
        """Close the provider's connections and the cache database. The client must not be used
        after."""
        if self._remote_provider is not None:
            self._remote_provider.close()
            self._remote_provider = None
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def provider(self) -> str:
        """The configured provider ("offline", "openai", or a registered name)."""
        return self.config.provider

    def model_for(self, stage: str) -> str:
        """The model configured for STAGE (llm.models.<stage>)."""
        if stage not in STAGES:
            raise ValueError(
                f"Unknown LLM stage {stage!r}; use one of {', '.join(STAGES)} (or pass model=)."
            )
        return str(getattr(self.config.models, stage))

    def register_offline_handler(self, stage: str, fn: OfflineHandler) -> None:
        """Like the module-level register_offline_handler, for this client only."""
        self._handlers[stage] = fn

    # ── public calls ──
    def complete(
        self,
        stage: str,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        model: str | None = None,
        cache: bool = True,
        deadline: float | None = None,
        cache_if: Callable[[str], bool] | None = None,
    ) -> LLMResult:
        """Text completion for STAGE. Raises LLMUnavailableError when the endpoint cannot
        answer after the retries (a reply with no text is a failed attempt), or within
        DEADLINE seconds when given (shorter than the configured one: a stage that answers
        inside a prompt hook). CACHE_IF: only an answer it accepts is cached, or taken from
        the cache (the gate's: YES or NO)."""
        messages = _messages(system, prompt)
        params: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
        model_name = model or self.model_for(stage)
        key = request_key(messages, params)
        hit = self._cached(stage, model_name, key, use_cache=cache, usable=cache_if)
        if hit is not None:
            return hit
        if self._answers_offline():
            text = self.offline.complete(stage, prompt, system, max_tokens)
            return self._offline_result(stage, model_name, messages, text)
        result = self._remote(stage, model_name, messages, params, deadline=deadline)
        if len(result.text) > MAX_REPLY_CHARS:
            log.warning(
                "the %s reply of %s was %d characters long; cut to %d",
                stage,
                model_name,
                len(result.text),
                MAX_REPLY_CHARS,
            )
            return replace(result, text=result.text[:MAX_REPLY_CHARS])
        if self.cache is not None and cache and (cache_if is None or cache_if(result.text)):
            self.cache.put(stage, model_name, key, result.text, result.tokens_in, result.tokens_out)
        return result

    def complete_json(
        self,
        stage: str,
        prompt: str,
        *,
        schema: dict[str, Any] | Validator | None = None,
        system: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        model: str | None = None,
        cache: bool = True,
        max_items: int = MAX_REPLY_ITEMS,
    ) -> LLMResult:
        """A JSON answer for STAGE, parsed into `.data` and checked against SCHEMA (a JSON
        schema dict, or a callable that returns False or raises to reject). On a parse or
        schema failure the model gets one repair attempt (its bad output and the error);
        still bad -> LLMResponseError. Only validated answers are cached.

        Every array in the reply is cut to MAX_ITEMS items before the check (the count cut
        is `.dropped_items`); a reply over MAX_REPLY_CHARS is refused without a repair."""
        check = make_validator(schema)
        messages = _messages(
            json_system(system, schema if isinstance(schema, dict) else None), prompt
        )
        params: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": temperature,
            "response_format": {"type": "json_object"},
        }
        model_name = model or self.model_for(stage)
        key = request_key(messages, params)

        hit = self._cached(stage, model_name, key, use_cache=cache)
        if hit is not None:
            data, error, dropped = parse_capped(hit.text, check, max_items)
            if error is None:
                return replace(hit, data=data, dropped_items=dropped)

        if self._answers_offline():
            data = self.offline.complete_json(stage, prompt, system)
            error = rejection(data, check)
            if error:
                raise LLMResponseError(
                    f"The offline handler of stage '{stage}' returned data that was rejected: "
                    f"{error}."
                )
            text = json.dumps(data, ensure_ascii=False, sort_keys=True)
            return replace(self._offline_result(stage, model_name, messages, text), data=data)

        result = self._remote(stage, model_name, messages, params)
        data, error, dropped = parse_capped(result.text, check, max_items)
        if error is not None and len(result.text) > MAX_REPLY_CHARS:
            raise LLMResponseError(
                f"The model {model_name} sent a {len(result.text):,}-character reply for stage "
                f"'{stage}', over the "
                f"cap of {MAX_REPLY_CHARS:,}; it was refused. Check llm.models.{stage} (a runaway "
                "model?)."
            )
        if error is not None:
            result = self._remote(
                stage, model_name, repair_messages(messages, result.text, error), params
            )
            data, error, dropped = parse_capped(result.text, check, max_items)
            if error is not None:
                raise LLMResponseError(
                    f"The model {model_name} did not return valid JSON for stage '{stage}', even "
                    "after a repair "
                    f"attempt: {error}. Try a stronger model in llm.models.{stage}, or provider: "
                    "offline."
                )
        if self.cache is not None and cache:
            self.cache.put(stage, model_name, key, result.text, result.tokens_in, result.tokens_out)
        return replace(result, data=data, dropped_items=dropped)

    def yes_no_result(
        self,
        stage: str,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int = 1,
        model: str | None = None,
        cache: bool = True,
        deadline: float | None = None,
    ) -> tuple[bool | None, LLMResult]:
        """The tier-3 gate's call (docs/design.md#gate-call): MAX_TOKENS (1 by default), temperature
        0.
        Returns the answer (parse_yes_no) and the result, whose `provider` says whether
        the model or the offline provider answered."""
        res = self.complete(
            stage,
            prompt,
            system=system,
            max_tokens=max_tokens,
            temperature=0.0,
            model=model,
            cache=cache,
            deadline=deadline,
            # "maybe" or a stray word is a model's slip, not an answer to keep for good
            cache_if=lambda text: parse_yes_no(text) is not None,
        )
        return parse_yes_no(res.text), res

    def yes_no(
        self,
        stage: str,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int = 1,
        model: str | None = None,
        cache: bool = True,
    ) -> bool | None:
        """True for a reply whose first word is YES, False for NO (parse_yes_no), None for anything
        else."""
        return self.yes_no_result(
            stage, prompt, system=system, max_tokens=max_tokens, model=model, cache=cache
        )[0]

    def map_concurrent(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """fn(item) for every item on a pool sized to the concurrency limit; results in
        input order. The first exception raised by fn is re-raised."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="llm") as pool:
            return list(pool.map(fn, items))

    def usage(self, since: date | None = None) -> list[UsageRow]:
        """Calls, tokens and estimated cost per (UTC day, stage), from the ledger."""
        if self.ledger is None:
            return []
        return summarize_usage(self.ledger.rows(), since)

    def tokens_spent_today(self) -> int:
        """Tokens paid for today (UTC), by every process sharing the ledger."""
        if self.ledger is None:
            return 0
        return self.ledger.spent_today(today().isoformat())

    # ── internals ──
    def _cached(
        self,
        stage: str,
        model: str,
        key: str,
        *,
        use_cache: bool,
        usable: Callable[[str], bool] | None = None,
    ) -> LLMResult | None:
        """The cached answer, if any and USABLE. Offline answers are never cached: they are
        deterministic and cost nothing. An empty one (a cache of an older version kept what
        a failed reply held) is no answer: the model is asked again."""
        if self.provider == "offline" or self.cache is None or not use_cache:
            return None
        hit = self.cache.get(stage, model, key)
        if hit is None:
            return None
        text, tin, tout = hit
        if not text.strip() or (usable is not None and not usable(text)):
            return None
        self._record(stage, model, self.provider, tin, tout, cached=True, ok=True)
        return LLMResult(text, model, self.provider, tin, tout, cached=True, stage=stage)

    def _answers_offline(self) -> bool:
        """True when the offline provider must answer: configured so, or the job's or the
        daily budget is spent."""
        if self.provider == "offline":
            return True
        if self.job_token_budget and self._job_spent >= self.job_token_budget:
            with self._notice_lock:
                if self.notice is None:
                    self.notice = (
                        f"The job {self.job or '(unnamed)'} spent its LLM token budget "
                        f"({self.job_token_budget:,} tokens, "
                        f"{self._job_spent:,} spent); its stages use the offline provider for the "
                        "rest of this run. "
                        "Raise daemon.job_token_budget in memory-config.yaml to change this."
                    )
                    log.warning(self.notice)
            return True
        budget = int(self.config.daily_token_budget)
        if budget <= 0 or self.ledger is None:  # 0 means no daily limit
            return False
        spent = self.tokens_spent_today()
        if spent < budget:
            return False
        with self._notice_lock:
            if self.notice is None:
                self.notice = (
                    f"The daily LLM token budget ({budget:,} tokens) is used up ({spent:,} "
                    "today); LLM stages use "
                    "the offline provider until tomorrow. Raise llm.daily_token_budget in "
                    "memory-config.yaml to change this."
                )
                log.warning(self.notice)
        return True

    def _offline_result(
        self, stage: str, model: str, messages: list[Message], text: str
    ) -> LLMResult:
        fell_back = self.provider != "offline"  # a configured model's call the budget sent offline
        tin = count_tokens("".join(m["content"] for m in messages))
        tout = count_tokens(text)
        self._record(stage, model, "offline", tin, tout, cached=False, ok=True, fell_back=fell_back)
        return LLMResult(text, model, "offline", tin, tout, fell_back=fell_back, stage=stage)

    def _record(
        self,
        stage: str,
        model: str,
        provider: str,
        tokens_in: int,
        tokens_out: int,
        *,
        cached: bool,
        ok: bool,
        fell_back: bool = False,
        error: str | None = None,
        attempts: int = 0,
        latency_ms: int = 0,
    ) -> float:
        paid = provider != "offline" and not cached
        cost = estimate_cost(model, tokens_in, tokens_out) if paid else 0.0
        if paid:
            with self._notice_lock:
                self._job_spent += tokens_in + tokens_out
        if self.ledger is not None:
            now = utc_now()
            self.ledger.append(
                {
                    "ts": format_ts_micro(now),
                    **({"job": self.job} if self.job else {}),
                    "day": now.date().isoformat(),
                    "stage": stage,
                    "model": model,
                    "provider": provider,
                    "tokens_in": tokens_in,
                    "tokens_out": tokens_out,
                    "cost": cost,
                    "cached": cached,
                    "fell_back": fell_back,
                    "ok": ok,
                    "error": error,
                    "attempts": attempts,
                    "latency_ms": latency_ms,
                }
            )
        return cost


def _messages(system: str | None, prompt: str) -> list[Message]:
    msgs = [{"role": "system", "content": system}] if system else []
    msgs.append({"role": "user", "content": prompt})
    return msgs
