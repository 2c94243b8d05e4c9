"""The one door every LLM stage goes through: gate, extractors, condensation, commit
messages, compaction.

Why one door: retries, timeouts, the concurrency limit, the response cache, the cost
ledger and the daily token budget must hold for every stage alike, and every stage must
keep working with no network (ARCHITECTURE principle 3). So:

* ``provider: offline`` (the default) answers deterministically, without a network, with
  simple extractive rules (see :class:`OfflineProvider`) or with a heuristic a stage
  registered through :func:`register_offline_handler`.
* ``provider: openai`` talks to any OpenAI-compatible endpoint with the ``openai``
  package. The package is imported inside the functions that use it, never at module
  import time: git hooks and ``autopoiesis --help`` must not pay ~1 s for it.

State lives under the gitignored ``.autopoiesis/llm/`` folder: ``cache.sqlite`` (answers
keyed on stage, model and a hash of the request) and ``ledger.jsonl`` (one line per call).
Both may be deleted at any time; the cost is only re-asking the model.

Example::

    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.llm import LLMClient

    llm = LLMClient(MemoryRepo("/path/to/memory"))
    llm.yes_no("gate", GATE_PROMPT)                         # True / False / None
    llm.complete_json("extract", prompt, schema={"type": "object"}).data
    for row in llm.usage():
        print(row.day, row.stage, row.calls, row.cost)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import math
import os
import random
import re
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar, Union

from autopoiesis.core.config import LLMConfig
from autopoiesis.errors import LLMResponseError, LLMUnavailableError

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo

log = logging.getLogger(__name__)

STAGES = ("gate", "extract", "condense", "commit_message", "compact")

T = TypeVar("T")
R = TypeVar("R")

#: A validator for complete_json: returns False or raises to reject the data.
Validator = Callable[[Any], Any]
#: An offline heuristic for one stage: (prompt, system) -> text (str) or JSON-able data.
OfflineHandler = Callable[[str, Union[str, None]], Any]

# ── prices ──────────────────────────────────────────────────────────────────────────
# USD per million tokens (input, output), OpenAI list prices. An estimate for the ledger,
# not a bill: unknown and local models (Ollama, vLLM, ...) cost 0. The longest key that
# prefixes the model name wins, so dated snapshots ("gpt-4o-mini-2024-07-18") match.
PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1": (15.00, 60.00),
    "o1-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.10, 0.0),
}


def estimate_cost(model: str, tokens_in: int, tokens_out: int) -> float:
    """Estimated USD cost of a call; 0 for models not in PRICES_PER_MILLION."""
    name = model.rsplit("/", 1)[-1].lower()  # "openai/gpt-4o" (routers) -> "gpt-4o"
    best = ""
    for key in PRICES_PER_MILLION:
        if name.startswith(key) and len(key) > len(best):
            best = key
    if not best:
        return 0.0
    pin, pout = PRICES_PER_MILLION[best]
    return round((tokens_in * pin + tokens_out * pout) / 1_000_000, 8)


def estimate_tokens(text: str) -> int:
    """Tokens of TEXT when the server does not say: ~4 characters a token, rounded up.
    Works offline, no tokenizer download (ARCHITECTURE: token counts work offline)."""
    return math.ceil(len(text) / 4)


# ── results ─────────────────────────────────────────────────────────────────────────
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


# ── offline provider ────────────────────────────────────────────────────────────────
# Stages register their heuristics here when their module is imported (a registry like
# codecs'), so the LLM client never needs to know the extractors. A client can override
# a stage for itself with LLMClient.register_offline_handler.
_OFFLINE_HANDLERS: dict[str, OfflineHandler] = {}


def register_offline_handler(stage: str, fn: OfflineHandler) -> None:
    """Make FN the offline answer of STAGE for every client: `fn(prompt, system)` returns
    the text (for complete) or JSON-able data (for complete_json)."""
    _OFFLINE_HANDLERS[stage] = fn


def unregister_offline_handler(stage: str) -> None:
    _OFFLINE_HANDLERS.pop(stage, None)


_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her his how i if in
    into is it its just me my no not of on or our out over she should so than that the their them then there
    these they this those to too up us was we were what when where which who why will with would you your yes
    about also any all some such only very more most other own same each few both after before again further
    once here topic topics message description answer activate word exactly one""".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_'-]{2,}")
# The gate prompt's parts, found with three linear searches (one regex spanning them
# backtracks quadratically on hostile input).
_GATE_MESSAGE = re.compile(r"\bMessage:", re.IGNORECASE)
_GATE_TOPIC = re.compile(r"\n\s*Topic:", re.IGNORECASE)
_GATE_ANSWER = re.compile(r"\n\s*Answer\b", re.IGNORECASE)
_YES_NO_QUESTION = re.compile(r"\bYES\s+or\s+NO\b", re.IGNORECASE)
_LABEL_LINE = re.compile(r"^[^\n]{1,60}:[ \t]*$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*#>])")


def content_words(text: str) -> set[str]:
    """Lower-cased content words of TEXT (stopwords out, plurals folded): what the
    offline yes/no rules compare."""
    words = set()
    for w in _WORD.findall(text.lower()):
        w = w.strip("'-_")
        if len(w) < 3 or w in _STOPWORDS:
            continue
        # a crude plural fold so "topics"/"topic", "deploys"/"deploy" meet
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        words.add(w)
    return words


class OfflineProvider:
    """Deterministic answers with no network: same request, same answer, every time.

    * A stage with a registered handler gets the handler's answer.
    * A YES/NO question (the tier-3 gate, design §5.3: "Message: ... Topic: ...
      Answer ... YES or NO", or any call with max_tokens <= 3): **YES when the message
      shares at least min(2, n) content words with the topic's name and description**
      (n = the topic's content words; stopwords dropped, plurals folded), else NO. A
      question that is not in that shape is answered NO: the offline gate errs towards
      not activating a gated topic.
    * Anything else: an honest extractive answer, the first sentence(s) of the prompt's
      payload (the text after its last "Label:" line, e.g. "Diff:"), up to about
      4 × max_tokens characters. It does not pretend to understand the instruction.
    """

    name = "offline"

    def __init__(self, handlers: dict[str, OfflineHandler] | None = None):
        self._handlers = handlers if handlers is not None else {}

    def handler(self, stage: str) -> OfflineHandler | None:
        return self._handlers.get(stage) or _OFFLINE_HANDLERS.get(stage)

    def complete(self, stage: str, prompt: str, system: str | None = None, max_tokens: int = 256) -> str:
        fn = self.handler(stage)
        if fn is not None:
            out = fn(prompt, system)
            return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, sort_keys=True)
        if max_tokens <= 3 or _YES_NO_QUESTION.search(prompt):
            return "YES" if self.gate_decision(prompt) else "NO"
        return self.extract_sentences(prompt, max_chars=max(16, 4 * max_tokens))

    def complete_json(self, stage: str, prompt: str, system: str | None = None) -> Any:
        fn = self.handler(stage)
        if fn is None:
            raise LLMUnavailableError(
                f"The offline provider has no JSON handler for stage '{stage}'. Set llm.provider: openai in "
                f"memory-config.yaml, or register one with autopoiesis.llm.register_offline_handler('{stage}', fn)."
            )
        out = fn(prompt, system)
        if isinstance(out, str):
            try:
                return json.loads(out)
            except json.JSONDecodeError as exc:
                raise LLMResponseError(f"The offline handler of stage '{stage}' returned text that is not JSON: {exc}.") from exc
        return out

    @staticmethod
    def gate_decision(prompt: str) -> bool:
        m = _GATE_MESSAGE.search(prompt)
        t = _GATE_TOPIC.search(prompt, m.end()) if m else None
        if not m or not t:
            return False
        a = _GATE_ANSWER.search(prompt, t.end())
        message = prompt[m.end() : t.start()]
        topic = content_words(prompt[t.end() : a.start() if a else len(prompt)])
        if not topic:
            return False
        shared = topic & content_words(message)
        return len(shared) >= min(2, len(topic))

    @staticmethod
    def payload(prompt: str) -> str:
        """The text after the prompt's last "Label:" line, or the whole prompt."""
        last = None
        for last in _LABEL_LINE.finditer(prompt):
            pass
        if last is not None:
            rest = prompt[last.end():].strip()
            if rest:
                return rest
        return prompt.strip()

    @classmethod
    def extract_sentences(cls, prompt: str, max_chars: int) -> str:
        parts = [" ".join(p.split()) for p in _SENTENCE_END.split(cls.payload(prompt))]
        parts = [p for p in parts if p]
        if not parts:
            return ""
        out = parts[0]
        for p in parts[1:]:
            if len(out) + 1 + len(p) > max_chars:
                break
            out += " " + p
        if len(out) > max_chars:  # one long first sentence: cut at a word boundary
            cut = out[:max_chars].rsplit(" ", 1)[0]
            out = cut or out[:max_chars]
        return out


# ── cache ───────────────────────────────────────────────────────────────────────────
class ResponseCache:
    """Answers keyed on (stage, model, sha256 of the request). SQLite so several processes
    (hooks, the daemon, the CLI) share it safely. One connection per cache, used under a
    lock: the calls come from many threads, and opening/closing a WAL database per call
    costs more than the lookup (the last close checkpoints)."""

    def __init__(self, path: Path):
        import sqlite3

        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=10, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # A cache: losing the last answers to a power cut is fine, an fsync per call is not.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (stage TEXT NOT NULL, model TEXT NOT NULL, key TEXT NOT NULL,"
            " text TEXT NOT NULL, tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, created TEXT NOT NULL,"
            " PRIMARY KEY (stage, model, key))"
        )

    def get(self, stage: str, model: str, key: str) -> tuple[str, int, int] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, tokens_in, tokens_out FROM responses WHERE stage=? AND model=? AND key=?", (stage, model, key)
            ).fetchone()
        return (row[0], int(row[1]), int(row[2])) if row else None

    def put(self, stage: str, model: str, key: str, text: str, tokens_in: int, tokens_out: int) -> None:
        with self._lock:  # autocommit (isolation_level=None): one statement, one transaction
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (stage, model, key, text, tokens_in, tokens_out, _now().isoformat(timespec="seconds")),
            )

    def clear(self) -> int:
        with self._lock:
            return self._db.execute("DELETE FROM responses").rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()


def request_key(messages: Sequence[dict[str, str]], params: dict[str, Any]) -> str:
    """sha256 of everything that shapes the answer besides stage and model."""
    blob = json.dumps({"messages": list(messages), "params": params}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# ── ledger ──────────────────────────────────────────────────────────────────────────
def _now() -> _dt.datetime:
    return _dt.datetime.now().astimezone()


class Ledger:
    """One JSON line per call in ledger.jsonl. Appends are single O_APPEND writes, so lines
    from concurrent processes do not interleave. It is also where the daily budget is
    counted, so a budget holds across processes, not just within one client."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._scan_day = ""
        self._scan_offset = 0
        self._spent_today = 0

    def append(self, row: dict[str, Any]) -> None:
        line = (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)

    def rows(self) -> Iterable[dict[str, Any]]:
        try:
            fh = open(self.path, encoding="utf-8")
        except FileNotFoundError:
            return
        with fh:
            for line in fh:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn or hand-edited line must not break usage()
                if isinstance(row, dict):
                    yield row

    def spent_today(self, today: str) -> int:
        """Tokens paid for today (provider answered, not cached). Reads only the lines
        appended since the last look."""
        with self._lock:
            if today != self._scan_day:
                self._scan_day, self._scan_offset, self._spent_today = today, 0, 0
            try:
                with open(self.path, "rb") as fh:
                    fh.seek(0, os.SEEK_END)
                    if fh.tell() < self._scan_offset:  # the ledger was deleted or truncated
                        self._scan_offset, self._spent_today = 0, 0
                    fh.seek(self._scan_offset)
                    data = fh.read()
            except FileNotFoundError:
                self._scan_offset, self._spent_today = 0, 0
                return 0
            end = data.rfind(b"\n") + 1  # leave a half-written last line for next time
            for line in data[:end].splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if row.get("day") == today and row.get("provider") != "offline" and not row.get("cached"):
                    self._spent_today += int(row.get("tokens_in") or 0) + int(row.get("tokens_out") or 0)
            self._scan_offset += end
            return self._spent_today


def summarize_usage(rows: Iterable[dict[str, Any]], since: _dt.date | None = None) -> list[UsageRow]:
    """Ledger rows -> one UsageRow per (day, stage), oldest first."""
    start = since.isoformat() if since else ""
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        day = str(row.get("day", ""))
        if day < start:
            continue
        key = (day, str(row.get("stage", "")))
        a = acc.setdefault(key, {"calls": 0, "cached": 0, "offline": 0, "errors": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0.0})
        a["calls"] += 1
        a["cached"] += bool(row.get("cached"))
        a["offline"] += row.get("provider") == "offline"
        a["errors"] += not row.get("ok", True)
        a["tokens_in"] += int(row.get("tokens_in") or 0)
        a["tokens_out"] += int(row.get("tokens_out") or 0)
        a["cost"] += float(row.get("cost") or 0.0)
    return [UsageRow(day, stage, **{**a, "cost": round(a["cost"], 6)}) for (day, stage), a in sorted(acc.items())]


# ── the client ──────────────────────────────────────────────────────────────────────
@dataclass
class _Answer:
    text: str
    tokens_in: int
    tokens_out: int


@dataclass
class RetryPolicy:
    """Backoff between attempts: base * 2**n, "equal jitter" (half fixed, half random) so
    parallel callers that failed together do not retry together; capped. A server's
    Retry-After wins when present, capped too so a wild value cannot stall a stage."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_cap: float = 60.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.retry_after_cap))
        d = min(self.backoff_max, self.backoff_base * (2**attempt))
        return d / 2 + rng.uniform(0, d / 2)


def _retry_after(response: Any) -> float | None:
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
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


class LLMClient:
    """Every LLM call of every stage. Thread-safe: share one client and call it from
    many threads (or use map_concurrent); at most `concurrency` requests are in flight.

    Build it from a MemoryRepo (`LLMClient(repo)`) or from a config and a state folder
    (`LLMClient(config=LLMConfig(...), state_dir=path)`; with no state folder there is no
    cache and no ledger, and the budget is not enforced).

    `notice` holds a one-line message for the user once something they should know
    happened (the daily budget ran out); the CLI prints it.
    """

    def __init__(
        self,
        repo: "MemoryRepo | None" = None,
        *,
        config: LLMConfig | None = None,
        state_dir: Path | str | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        retry_after_cap: float = 60.0,
        use_cache: bool = True,
    ):
        if config is None:
            config = repo.config.llm if repo is not None else LLMConfig()
        self.config = config
        if repo is not None and state_dir is None:
            llm_dir: Path | None = repo.state_path("llm", "cache.sqlite").parent
        else:
            llm_dir = Path(state_dir) / "llm" if state_dir is not None else None
            if llm_dir is not None:
                llm_dir.mkdir(parents=True, exist_ok=True)
        self.state_dir = llm_dir
        self.retry = RetryPolicy(config.max_retries, backoff_base, backoff_max, retry_after_cap)
        self.cache = ResponseCache(llm_dir / "cache.sqlite") if (llm_dir is not None and use_cache) else None
        self.ledger = Ledger(llm_dir / "ledger.jsonl") if llm_dir is not None else None
        self.concurrency = max(1, int(config.concurrency))
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._handlers: dict[str, OfflineHandler] = {}
        self.offline = OfflineProvider(self._handlers)
        self._openai: Any = None
        self._openai_lock = threading.Lock()
        self._rng = random.Random()
        self._notice_lock = threading.Lock()
        self.notice: str | None = None

    # ── lifecycle ──
    def close(self) -> None:
        """Close the HTTP client and the cache database. The client must not be used after."""
        if self._openai is not None:
            self._openai.close()
            self._openai = None
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def provider(self) -> str:
        """The configured provider ("offline" or "openai")."""
        return self.config.provider

    def model_for(self, stage: str) -> str:
        """The model configured for STAGE (llm.models.<stage>)."""
        if stage not in STAGES:
            raise ValueError(f"Unknown LLM stage {stage!r}; use one of {', '.join(STAGES)} (or pass model=).")
        return getattr(self.config.models, stage)

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
    ) -> LLMResult:
        """Text completion for STAGE. Raises LLMUnavailableError when the endpoint cannot
        answer after the retries."""
        messages = _messages(system, prompt)
        params = {"max_tokens": max_tokens, "temperature": temperature}
        return self._call(stage, model, messages, params, use_cache=cache)

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
    ) -> LLMResult:
        """A JSON answer for STAGE, parsed into `.data` and checked against SCHEMA (a JSON
        schema dict, or a callable that returns False or raises to reject). On a parse or
        schema failure the model gets one repair attempt (its bad output and the error);
        still bad -> LLMResponseError. Only validated answers are cached."""
        check = _make_validator(schema)
        sys_text = _json_system(system, schema if isinstance(schema, dict) else None)
        messages = _messages(sys_text, prompt)
        params = {"max_tokens": max_tokens, "temperature": temperature, "response_format": {"type": "json_object"}}
        model_name = model or self.model_for(stage)
        key = request_key(messages, params)

        hit = self._cached(stage, model_name, key, use_cache=cache)
        if hit is not None:
            data, error = _parse_and_check(hit.text, check)
            if error is None:
                return replace(hit, data=data)

        if self._over_budget_or_offline():
            fell_back = self.provider != "offline"
            data = self.offline.complete_json(stage, prompt, system)
            error = _check(data, check)
            if error:
                raise LLMResponseError(f"The offline handler of stage '{stage}' returned data that was rejected: {error}.")
            text = json.dumps(data, ensure_ascii=False, sort_keys=True)
            res = self._offline_result(stage, model_name, messages, text, fell_back)
            return replace(res, data=data)

        first = self._remote(stage, model_name, messages, params)
        data, error = _parse_and_check(first.text, check)
        result = first
        if error is not None:
            repair = list(messages) + [
                {"role": "assistant", "content": first.text},
                {
                    "role": "user",
                    "content": f"That reply was not valid: {error}\nReply again with only the corrected JSON object.",
                },
            ]
            result = self._remote(stage, model_name, repair, params)
            data, error2 = _parse_and_check(result.text, check)
            if error2 is not None:
                raise LLMResponseError(
                    f"The model {model_name} did not return valid JSON for stage '{stage}', even after a repair "
                    f"attempt: {error2}. Try a stronger model in llm.models.{stage}, or provider: offline."
                )
        if self.cache is not None and cache:
            self.cache.put(stage, model_name, key, result.text, result.tokens_in, result.tokens_out)
        return replace(result, data=data)

    def yes_no(
        self, stage: str, prompt: str, *, system: str | None = None, model: str | None = None, cache: bool = True
    ) -> bool | None:
        """The tier-3 gate (design §5.3): one token, temperature 0. True for a reply that
        starts with YES, False for NO (case-insensitive), None for anything else."""
        res = self.complete(stage, prompt, system=system, max_tokens=1, temperature=0.0, model=model, cache=cache)
        word = res.text.strip().upper()
        if word.startswith("YES"):
            return True
        if word.startswith("NO"):
            return False
        return None

    def map_concurrent(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """fn(item) for every item on a pool sized to the concurrency limit; results in
        input order. The first exception raised by fn is re-raised."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="llm") as pool:
            return list(pool.map(fn, items))

    def usage(self, since: _dt.date | None = None) -> list[UsageRow]:
        """Calls, tokens and estimated cost per (day, stage), from the ledger."""
        if self.ledger is None:
            return []
        return summarize_usage(self.ledger.rows(), since)

    def tokens_spent_today(self) -> int:
        if self.ledger is None:
            return 0
        return self.ledger.spent_today(_now().date().isoformat())

    # ── internals ──
    def _call(
        self, stage: str, model: str | None, messages: list[dict[str, str]], params: dict[str, Any], *, use_cache: bool
    ) -> LLMResult:
        model_name = model or self.model_for(stage)
        key = request_key(messages, params)
        hit = self._cached(stage, model_name, key, use_cache=use_cache)
        if hit is not None:
            return hit
        if self._over_budget_or_offline():
            fell_back = self.provider != "offline"
            text = self.offline.complete(stage, messages[-1]["content"], _system_of(messages), params["max_tokens"])
            return self._offline_result(stage, model_name, messages, text, fell_back)
        result = self._remote(stage, model_name, messages, params)
        if self.cache is not None and use_cache:
            self.cache.put(stage, model_name, key, result.text, result.tokens_in, result.tokens_out)
        return result

    def _cached(self, stage: str, model: str, key: str, *, use_cache: bool) -> LLMResult | None:
        # Offline answers are never cached: they are deterministic and cost nothing.
        if self.provider == "offline" or self.cache is None or not use_cache:
            return None
        hit = self.cache.get(stage, model, key)
        if hit is None:
            return None
        text, tin, tout = hit
        self._record(stage, model, "openai", tin, tout, cached=True, ok=True)
        return LLMResult(text, model, "openai", tin, tout, cached=True, stage=stage)

    def _over_budget_or_offline(self) -> bool:
        if self.provider == "offline":
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
                    f"The daily LLM token budget ({budget:,} tokens) is used up ({spent:,} today); LLM stages use "
                    f"the offline provider until tomorrow. Raise llm.daily_token_budget in memory-config.yaml to change this."
                )
                log.warning(self.notice)
        return True

    def _offline_result(self, stage: str, model: str, messages: list[dict[str, str]], text: str, fell_back: bool) -> LLMResult:
        tin = estimate_tokens("".join(m["content"] for m in messages))
        tout = estimate_tokens(text)
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
        if self.ledger is not None:
            now = _now()
            self.ledger.append(
                {
                    "ts": now.isoformat(timespec="milliseconds"),
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

    def _client(self) -> Any:
        with self._openai_lock:
            if self._openai is None:
                import openai  # here, not at module top: hooks and --help must stay light

                self._openai = openai.OpenAI(
                    base_url=self.config.base_url,
                    api_key=os.environ.get(self.config.api_key_env) or "not-needed",
                    timeout=float(self.config.timeout_seconds),
                    max_retries=0,  # retries are ours: one policy, visible in the ledger
                )
            return self._openai

    def _remote(self, stage: str, model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> LLMResult:
        import openai

        client = self._client()
        started = time.monotonic()
        attempts = 0
        last_error = ""
        while True:
            attempts += 1
            retry_after: float | None = None
            try:
                with self._slots:
                    resp = client.chat.completions.create(model=model, messages=messages, **params)
            except openai.APITimeoutError:
                last_error = f"timed out after {self.config.timeout_seconds} s"
            except openai.APIConnectionError as exc:
                last_error = f"connection failed: {exc}"
            except openai.APIStatusError as exc:
                status = exc.status_code
                last_error = f"HTTP {status}: {_short(exc.message)}"
                if status == 429 or status >= 500:
                    retry_after = _retry_after(exc.response)
                else:
                    self._record(stage, model, "openai", 0, 0, cached=False, ok=False, error=last_error,
                                 attempts=attempts, latency_ms=_ms(started))
                    hint = (
                        f" Set ${self.config.api_key_env} to a valid API key." if status in (401, 403)
                        else f" Check llm.base_url and llm.models.{stage} in memory-config.yaml."
                    )
                    raise LLMUnavailableError(f"The LLM endpoint refused the {stage} call ({last_error}).{hint}") from exc
            else:
                text, tin, tout = _read_completion(resp, messages)
                latency = _ms(started)
                cost = self._record(stage, model, "openai", tin, tout, cached=False, ok=True,
                                    attempts=attempts, latency_ms=latency)
                return LLMResult(text, model, "openai", tin, tout, stage=stage, cost=cost)
            if attempts > self.retry.max_retries:
                self._record(stage, model, "openai", 0, 0, cached=False, ok=False, error=last_error,
                             attempts=attempts, latency_ms=_ms(started))
                where = self.config.base_url or "api.openai.com"
                raise LLMUnavailableError(
                    f"The LLM endpoint ({where}) did not answer the {stage} call after {attempts} attempts "
                    f"(last: {last_error}). Check that it is running, or raise llm.timeout_seconds / llm.max_retries."
                )
            time.sleep(self.retry.delay(attempts - 1, retry_after, self._rng))


# ── helpers ─────────────────────────────────────────────────────────────────────────
def _messages(system: str | None, prompt: str) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": system}] if system else []
    msgs.append({"role": "user", "content": prompt})
    return msgs


def _system_of(messages: list[dict[str, str]]) -> str | None:
    return next((m["content"] for m in messages if m["role"] == "system"), None)


def _json_system(system: str | None, schema: dict[str, Any] | None) -> str:
    # OpenAI's JSON mode refuses a request whose messages never say "JSON"; the schema in
    # the system message is also what makes small local models answer in shape.
    parts = [system] if system else []
    parts.append("Reply with a single JSON object and nothing else.")
    if schema is not None:
        parts.append("It must match this JSON schema: " + json.dumps(schema, sort_keys=True))
    return "\n\n".join(parts)


def _make_validator(schema: dict[str, Any] | Validator | None) -> Validator | None:
    if schema is None or callable(schema):
        return schema
    from jsonschema.validators import validator_for

    cls = validator_for(schema)
    cls.check_schema(schema)
    v = cls(schema)

    def check(data: Any) -> None:
        error = next(iter(sorted(v.iter_errors(data), key=lambda e: list(e.absolute_path))), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            raise ValueError(f"does not match the schema at {where}: {error.message}")

    return check


def _check(data: Any, check: Validator | None) -> str | None:
    if check is None:
        return None
    try:
        ok = check(data)
    except Exception as exc:  # a validator signals rejection by raising anything
        return str(exc) or type(exc).__name__
    return "the validator returned False" if ok is False else None


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def _parse_and_check(text: str, check: Validator | None) -> tuple[Any, str | None]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        m = _FENCE.match(text)  # local models like to wrap JSON in a code fence
        if not m:
            return None, f"the reply is not JSON ({exc})"
        try:
            data = json.loads(m.group(1))
        except json.JSONDecodeError as exc2:
            return None, f"the reply is not JSON ({exc2})"
    error = _check(data, check)
    return data, (None if error is None else f"the JSON was rejected: {error}")


def _read_completion(resp: Any, messages: list[dict[str, str]]) -> tuple[str, int, int]:
    choices = getattr(resp, "choices", None) or []
    text = ""
    if choices and choices[0].message is not None:
        text = choices[0].message.content or ""
    usage = getattr(resp, "usage", None)
    tin = getattr(usage, "prompt_tokens", None) if usage is not None else None
    tout = getattr(usage, "completion_tokens", None) if usage is not None else None
    if tin is None:
        tin = estimate_tokens("".join(m["content"] for m in messages))
    if tout is None:
        tout = estimate_tokens(text)
    return text, int(tin), int(tout)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


__all__ = [
    "LLMClient",
    "LLMResult",
    "UsageRow",
    "OfflineProvider",
    "RetryPolicy",
    "ResponseCache",
    "Ledger",
    "PRICES_PER_MILLION",
    "STAGES",
    "estimate_cost",
    "estimate_tokens",
    "register_offline_handler",
    "unregister_offline_handler",
    "summarize_usage",
    "request_key",
]
