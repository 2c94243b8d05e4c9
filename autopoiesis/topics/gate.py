"""Tier 3 (docs/design.md#gate): the activation decision and the LLM yes/no gate.

How a candidate (a topic whose tier-1 triggers fired) is decided — `route_for`:

1. ``activation: manual`` -> never activated by a message (the user activates it).
2. ``priority: critical`` -> activated, whatever the tier-2 score (docs/design.md#gate-bypass row
1).
3. Below the topic's ``similarity_threshold`` -> dropped (it did not pass tier 2).
4. ``activation: auto`` -> activated, no gate (docs/design.md#activation-modes).
5. ``activation: gated`` -> the bypass table of docs/design.md#gate-bypass (`BYPASS_TABLE`,
`bypass_route`):
   activate, ask the gate, or drop.

The gate (`GatedActivator`) asks the configured model "YES or NO" through
`autopoiesis.llm.LLMClient.yes_no_result` (max_tokens ``watchers.gate_max_tokens``, 1 by
default; temperature 0), with a bounded LRU cache keyed on (hash of the message's first
500 characters, topic, topic content hash).

**Offline rule** (``llm.provider: offline``; or, logged as ``offline-fallback``, when
the endpoint is unavailable, the daily token budget is spent, or the model answers
neither YES nor NO): YES when the tier-2 TF-IDF score is at least twice the topic's
threshold, or when the message shares two or more content words (three letters or
more, not stop words) with the topic's name, description and keyword triggers;
otherwise NO. Deterministic: same message and topic, same answer. This module is the
rule's one owner: it also registers the word part of it as the offline provider's
answer to `GATE_PROMPT` (`answer_gate_prompt`), for callers that ask the LLM client
directly.

Every decision, bypasses and drops included, is appended to the gate log
(``repo.state_log("gate_log")``, an EventLog: a `GateDecision` per line,
docs/design.md#gate-metrics; it keeps its latest months of decisions, older ones dropped);
``was_useful`` feedback is appended as separate lines and merged on reading, so the log
is only ever appended to.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.text import content_words
from autopoiesis.errors import GateDecisionNotFound, LLMError
from autopoiesis.formats.topic import DEFAULT_SIMILARITY_THRESHOLD, Topic
from autopoiesis.plugins import hookimpl

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.llm import LLMClient

Route = Literal["activate", "gate", "drop"]
GATE_MESSAGE_CHARS = 500
GATE_DESCRIPTION_CHARS = 200

GATE_PROMPT = """Given this message and topic, should the topic activate?

Message: {message}

Topic: {topic_name}
Description: {topic_description}

Answer with exactly one word: YES or NO."""


@dataclass(frozen=True)
class BypassRow:
    """One row of docs/design.md#gate-bypass: for PRIORITY with a tier-1 match and a tier-2 score in
    [min_score, below) the route is ROUTE."""

    priority: str
    min_score: float
    below: float
    route: Route
    why: str


INF = float("inf")
# docs/design.md#gate-bypass, row for row. Tier 1 must have matched for any row to apply.
BYPASS_TABLE: tuple[BypassRow, ...] = (
    BypassRow("critical", -INF, INF, "activate", "critical: activate immediately"),
    BypassRow("high", 0.3, INF, "activate", "high, score >= 0.3: high confidence, skip the gate"),
    BypassRow("high", -INF, 0.3, "gate", "high, score < 0.3: ask the gate"),
    BypassRow("medium", 0.2, INF, "gate", "medium, score >= 0.2: ask the gate"),
    BypassRow("medium", -INF, 0.2, "drop", "medium, score < 0.2: not confident enough"),
    BypassRow("low", 0.3, INF, "gate", "low, score >= 0.3: ask the gate"),
    BypassRow("low", -INF, 0.3, "drop", "low, score < 0.3: drop"),
)


def bypass_route(priority: str, tier1_matched: bool, tier2_score: float) -> tuple[Route, str]:
    """(route, why) of docs/design.md#gate-bypass's table. No tier-1 match -> drop."""
    if not tier1_matched:
        return "drop", "no tier-1 match"
    for row in BYPASS_TABLE:
        if row.priority == priority and row.min_score <= tier2_score < row.below:
            return row.route, row.why
    raise ValueError(f"priority must be one of low, medium, high, critical, not {priority!r}")


def route_for(topic: Topic, tier1_matched: bool, tier2_score: float) -> tuple[Route, str]:
    """(route, why) for a candidate, combining activation mode, threshold and
    docs/design.md#gate-bypass."""
    if not tier1_matched:
        return "drop", "no tier-1 match"
    if topic.activation == "manual":
        return "drop", "activation: manual (activated by the user only)"
    if topic.priority == "critical":
        return bypass_route("critical", True, tier2_score)
    if tier2_score < topic.similarity_threshold:
        return "drop", f"tier-2 score {tier2_score:.3f} < threshold {topic.similarity_threshold:g}"
    if topic.activation == "auto":
        return "activate", "activation: auto (no gate)"
    return bypass_route(topic.priority, True, tier2_score)


# ── the offline rule ────────────────────────────────────────────────────────────────
# Words of the gate prompt's own wording, which say nothing about a topic.
GATE_STOPWORDS = frozenset(
    {
        "topic",
        "topics",
        "message",
        "description",
        "answer",
        "activate",
        "word",
        "exactly",
        "one",
        "yes",
    }
)
SHARED_WORDS_TO_ACTIVATE = 2


def shares_topic_words(message: str, topic_text: str) -> bool:
    """The word part of the offline rule: MESSAGE shares at least two content words
    (core.text.content_words, plurals folded) with TOPIC_TEXT."""
    topic_words = content_words(topic_text, GATE_STOPWORDS)
    return len(topic_words & content_words(message, GATE_STOPWORDS)) >= SHARED_WORDS_TO_ACTIVATE


def offline_gate(message: str, topic: Topic, tier2_score: float) -> bool:
    """The documented deterministic gate used without an LLM (see the module docstring)."""
    if tier2_score >= 2 * topic.similarity_threshold and tier2_score > 0:
        return True
    words = " ".join(w for t in topic.triggers if t.type == "keyword" for w in t.words)
    return shares_topic_words(
        message[: GATE_MESSAGE_CHARS * 4],
        f"{topic.name.replace('-', ' ')} {topic.description} {words}",
    )


# The parts of a GATE_PROMPT, found with three linear searches (one regex spanning them
# backtracks quadratically on hostile input).
_PROMPT_MESSAGE = re.compile(r"\bMessage:", re.IGNORECASE)
_PROMPT_TOPIC = re.compile(r"\n\s*Topic:", re.IGNORECASE)
_PROMPT_ANSWER = re.compile(r"\n\s*Answer\b", re.IGNORECASE)


def answer_gate_prompt(prompt: str, system: str | None = None) -> str:
    """The offline provider's answer to a GATE_PROMPT ("YES" or "NO"): `shares_topic_words`
    between its message and its topic's name and description (a prompt carries no tier-2
    score). A prompt not in that shape is answered NO: offline, the gate errs towards
    not activating a gated topic."""
    m = _PROMPT_MESSAGE.search(prompt)
    t = _PROMPT_TOPIC.search(prompt, m.end()) if m else None
    if not m or not t:
        return "NO"
    a = _PROMPT_ANSWER.search(prompt, t.end())
    message = prompt[m.end() : t.start()]
    topic_text = prompt[t.end() : a.start() if a else len(prompt)]
    return "YES" if shares_topic_words(message, topic_text) else "NO"


@hookimpl
def register_offline_handlers(register: Any) -> None:
    """The gate's offline answer (a built-in plugin: autopoiesis.plugins lists this module,
    so the LLM layer finds it without importing the topics, and importing the gate costs
    no LLM layer)."""
    register("gate", answer_gate_prompt)


def message_hash(message: str) -> str:
    return hashlib.sha256(message.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# ── decisions and their log ─────────────────────────────────────────────────────────
@dataclass(frozen=True)
class GateDecision:
    """One decision about one candidate topic (docs/design.md#gate-metrics). `gate_result` is the
    gate's
    answer, None when the gate was not asked (bypassed or dropped); `activated` is the
    outcome; `source` says who decided: bypass, llm, cache, offline, offline-fallback."""

    id: str
    timestamp: str
    message_hash: str
    topic_name: str
    tier1_matched: bool
    tier2_score: float
    route: str
    gate_result: bool | None
    activated: bool
    source: str
    reason: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    was_useful: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class GateLog:
    """The append-only log of gate decisions (an EventLog at repo.state_file("gate_log"),
    bounded: it keeps its latest months, core/paths' STATE_LOG_KEEP_BYTES). Rows carry
    their own `timestamp` (a GateDecision field), so no `ts` is added. A feedback line
    whose decision was dropped with an older generation is merged into nothing."""

    def __init__(self, repo: MemoryRepo):
        self.events = repo.state_log("gate_log")
        self.path = self.events.path

    def append(self, decisions: Iterable[GateDecision]) -> None:
        for d in decisions:
            self.events.append(d.as_dict(), stamp=False)

    def feedback(self, decision_id: str, useful: bool) -> GateDecision:
        """Record whether the activation helped (docs/design.md#gate-metrics `was_useful`), appended
        as a
        feedback line; raises GateDecisionNotFound for an unknown id."""
        matches = [
            d for d in self.decisions() if d.id == decision_id or d.id.startswith(decision_id)
        ]
        if len(matches) != 1:
            older = "" if matches else " (the log keeps its latest months: an older one is gone)"
            raise GateDecisionNotFound(
                f"No single gate decision with id {decision_id!r} ({len(matches)} match); "
                f"list them with `autopoiesis gate report --decisions`{older}."
            )
        self.events.append(
            {
                "feedback_for": matches[0].id,
                "was_useful": useful,
                "timestamp": format_ts(utc_now()),
            },
            stamp=False,
        )
        return replace(matches[0], was_useful=useful)

    def decisions(self) -> list[GateDecision]:
        """Every decision, oldest first, with its latest `was_useful` feedback merged in."""
        rows: list[GateDecision] = []
        feedback: dict[str, bool] = {}
        names = set(GateDecision.__dataclass_fields__)
        for data in self.events:  # a torn last line after a crash is skipped by EventLog
            if "feedback_for" in data:
                feedback[data["feedback_for"]] = bool(data["was_useful"])
            elif {"id", "topic_name"} <= set(data):
                rows.append(GateDecision(**{k: v for k, v in data.items() if k in names}))
        return [replace(d, was_useful=feedback[d.id]) if d.id in feedback else d for d in rows]


# ── the gate ────────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class GateVerdict:
    result: bool
    source: str  # llm | cache | offline | offline-fallback


# The most a gate's call may take, retries included: it answers inside a prompt hook (its
# own deadline 10 s) and the compile waits for it; a model that trickles its answer took
# the client's whole deadline (two minutes), and the hook gave the prompt no context at
# all. Past it the offline rule decides, as when the model cannot be reached. It bounds
# every gate call of one message together (`GatedActivator.message_deadline`): four gated
# topics firing on one prompt, each answered in 2.5 s, took the hook's whole 10 s.
GATE_DEADLINE_SECONDS = 3.0


class GatedActivator:
    """Tier 3: the LLM deliberation gate (docs/design.md#gate-call).

    `llm` is an `autopoiesis.llm.LLMClient`; without one, a client is made from REPO when
    its `llm.provider` is not offline, else the offline rule answers. The yes/no call
    asks for `watchers.gate_max_tokens` tokens of REPO's config (1 without a repo)."""

    def __init__(
        self,
        repo: MemoryRepo | None = None,
        llm: LLMClient | None = None,
        *,
        cache_size: int = 4096,
    ):
        self.repo = repo
        self._llm = llm
        self._llm_checked = llm is not None
        self.cache: OrderedDict[tuple[str, str, str], bool] = OrderedDict()
        self.cache_size = cache_size
        self.max_tokens = (
            max(1, int(repo.config.watchers.gate_max_tokens)) if repo is not None else 1
        )

    @property
    def llm(self) -> LLMClient | None:
        if not self._llm_checked:
            self._llm_checked = True
            if self.repo is not None and self.repo.config.llm.provider != "offline":
                from autopoiesis.llm import LLMClient  # the client only when a model answers

                self._llm = LLMClient(self.repo)
        if self._llm is not None and self._llm.provider == "offline":
            return None
        return self._llm

    def prompt(self, message: str, topic: Topic) -> str:
        return GATE_PROMPT.format(
            message=message[:GATE_MESSAGE_CHARS],
            topic_name=topic.name,
            topic_description=(topic.description or topic.instructions)[:GATE_DESCRIPTION_CHARS],
        )

    @staticmethod
    def message_deadline() -> float:
        """The monotonic time by which every gate call of one message must have answered:
        the calls share GATE_DEADLINE_SECONDS, however many topics ask the gate."""
        return time.monotonic() + GATE_DEADLINE_SECONDS

    def decide(
        self,
        message: str,
        topic: Topic,
        tier2_score: float = 0.0,
        *,
        until: float | None = None,
    ) -> GateVerdict:
        """Whether TOPIC activates on MESSAGE. UNTIL (a `message_deadline`) is when the
        calls of this message must be done; without it this call has the whole
        GATE_DEADLINE_SECONDS. Past it the offline rule decides."""
        key = (message_hash(message[:GATE_MESSAGE_CHARS]), topic.name, topic.content_hash)
        if key in self.cache:
            self.cache.move_to_end(key)
            return GateVerdict(self.cache[key], "cache")
        client = self.llm
        left = GATE_DEADLINE_SECONDS if until is None else until - time.monotonic()
        if client is None:
            verdict = GateVerdict(offline_gate(message, topic, tier2_score), "offline")
        elif left <= 0:  # the message's earlier gate calls took its whole deadline
            verdict = GateVerdict(offline_gate(message, topic, tier2_score), "offline-fallback")
        else:
            try:
                answer, result = client.yes_no_result(
                    "gate",
                    self.prompt(message, topic),
                    max_tokens=self.max_tokens,
                    deadline=min(left, GATE_DEADLINE_SECONDS),
                )
                by_model = (
                    result.provider != "offline"
                )  # not when the daily budget sent the call offline
            except LLMError:
                answer, by_model = None, False
            if answer is None or not by_model:
                # Unreachable endpoint, budget spent, or an answer that is neither YES nor
                # NO: the offline rule decides, and the log says so.
                verdict = GateVerdict(offline_gate(message, topic, tier2_score), "offline-fallback")
            else:
                verdict = GateVerdict(answer, "llm")
        if verdict.source != "offline-fallback":  # a transient failure must not stick
            self.cache[key] = verdict.result
            if len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        return verdict


def new_decision_id() -> str:
    # os.urandom, as secrets.token_hex reads it: `secrets` and the modules it imports
    # (random, hmac, base64) cost every cold `compile` ~1 ms
    return "gd_" + os.urandom(6).hex()


# ── the report ──────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class TopicGateStats:
    topic: str
    decisions: int
    activated: int
    gate_calls: int
    gate_yes: int
    useful: int
    not_useful: int
    score_min: float
    score_p25: float
    score_median: float
    score_p75: float
    score_max: float
    suggestion: str

    @property
    def activation_rate(self) -> float:
        return self.activated / self.decisions if self.decisions else 0.0

    @property
    def gate_yes_rate(self) -> float | None:
        return self.gate_yes / self.gate_calls if self.gate_calls else None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["activation_rate"] = round(self.activation_rate, 4)
        d["gate_yes_rate"] = None if self.gate_yes_rate is None else round(self.gate_yes_rate, 4)
        return d


def _quantiles(values: Sequence[float]) -> tuple[float, float, float, float, float]:
    # statistics is imported where a report needs it: it costs every cold `compile` ~3 ms
    import statistics

    v = sorted(values)
    if not v:
        return (0.0,) * 5
    if len(v) == 1:
        return (v[0],) * 5
    q = statistics.quantiles(v, n=4, method="inclusive")
    return v[0], q[0], q[1], q[2], v[-1]


def suggest(topic: Topic | None, rows: Sequence[GateDecision]) -> str:
    """A threshold suggestion from the decisions of one topic, or '' when the data do not
    call for one (fewer than 5 decisions never do). The first rule that applies, of:
    the gate mostly says NO, activations are mostly not useful (raise the threshold);
    the gate says YES to nearly all while tier-1 matches are dropped below it (lower it)."""
    if len(rows) < 5:
        return ""
    threshold = topic.similarity_threshold if topic else DEFAULT_SIMILARITY_THRESHOLD
    return (
        _raise_for_gate_noes(rows, threshold)
        or _raise_for_useless_activations(rows, threshold)
        or _lower_for_gate_yeses(rows, threshold)
    )


def _raise_for_gate_noes(rows: Sequence[GateDecision], threshold: float) -> str:
    """The gate said NO to 70% or more of at least 5 candidates: raise the threshold just
    above the median score of those NOs, to save gate calls."""
    gated = [r for r in rows if r.gate_result is not None]
    no_scores = [r.tier2_score for r in gated if r.gate_result is False]
    if len(gated) >= 5 and len(no_scores) / len(gated) >= 0.7:
        import statistics  # see _quantiles

        target = round(min(0.95, statistics.median(no_scores) + 0.01), 2)
        if target > threshold:
            return (
                f"the gate said NO to {len(no_scores)}/{len(gated)} candidates: raise "
                "similarity_threshold "
                f"from {threshold:g} to {target:g} to save gate calls"
            )
    return ""


def _raise_for_useless_activations(rows: Sequence[GateDecision], threshold: float) -> str:
    """Half or more of at least 5 judged activations were not useful: raise the threshold
    just above the best useless score, but not past the median useful one."""
    judged = [r for r in rows if r.activated and r.was_useful is not None]
    useless = [r.tier2_score for r in judged if r.was_useful is False]
    useful = [r.tier2_score for r in judged if r.was_useful is True]
    if len(judged) >= 5 and len(useless) / len(judged) >= 0.5:
        target = round(min(0.95, max(useless) + 0.01), 2)
        if useful:
            import statistics  # see _quantiles

            target = round(min(target, statistics.median(useful)), 2)
        if target > threshold:
            return (
                f"{len(useless)}/{len(judged)} activations were not useful: raise "
                "similarity_threshold "
                f"from {threshold:g} to {target:g}"
            )
    return ""


def _lower_for_gate_yeses(rows: Sequence[GateDecision], threshold: float) -> str:
    """The gate said YES to 90% or more of at least 5 candidates and half the decisions
    are tier-1 matches dropped below the threshold: lower it by a quarter."""
    gated = [r for r in rows if r.gate_result is not None]
    yes_scores = [r.tier2_score for r in gated if r.gate_result is True]
    dropped_low = [
        r for r in rows if r.route == "drop" and r.tier1_matched and r.tier2_score < threshold
    ]
    if (
        yes_scores
        and len(gated) >= 5
        and len(yes_scores) / len(gated) >= 0.9
        and len(dropped_low) >= len(rows) / 2
    ):
        target = round(max(0.01, threshold * 0.75), 2)
        return (
            f"the gate said YES to {len(yes_scores)}/{len(gated)} and {len(dropped_low)} tier-1 "
            "matches were "
            "dropped below the threshold: consider lowering similarity_threshold from "
            f"{threshold:g} to {target:g}"
        )
    return ""


def gate_report(
    decisions: Sequence[GateDecision], topics: Sequence[Topic] = ()
) -> list[TopicGateStats]:
    """Per topic: activation rate, gate yes/no rate, score distribution and a suggestion."""
    by_topic: dict[str, list[GateDecision]] = {}
    for d in decisions:
        by_topic.setdefault(d.topic_name, []).append(d)
    known = {t.name: t for t in topics}
    out = []
    for name in sorted(by_topic):
        rows = by_topic[name]
        gated = [r for r in rows if r.gate_result is not None]
        q = _quantiles([r.tier2_score for r in rows])
        out.append(
            TopicGateStats(
                topic=name,
                decisions=len(rows),
                activated=sum(r.activated for r in rows),
                gate_calls=len(gated),
                gate_yes=sum(1 for r in gated if r.gate_result),
                useful=sum(1 for r in rows if r.was_useful is True),
                not_useful=sum(1 for r in rows if r.was_useful is False),
                score_min=round(q[0], 4),
                score_p25=round(q[1], 4),
                score_median=round(q[2], 4),
                score_p75=round(q[3], 4),
                score_max=round(q[4], 4),
                suggestion=suggest(known.get(name), rows),
            )
        )
    return out
