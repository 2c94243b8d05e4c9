"""The watcher pipeline (docs/design.md#watcher-tiers, docs/design.md#flow-topic): tier 1 -> tier 2
-> tier 3 for each message,
output-triggered steering (docs/design.md#output-steering), webhook and cron triggers.

    pipe = WatcherPipeline(repo)
    for act in pipe.process("Can you review the PR that just came in?", "input"):
        print(act.topic, act.tier, act.scores)

Which tier decided (`TopicActivation.tier`):

* 1 — no trigger fired; a manual topic; a critical topic (activated on the match); an
  output-scope trigger with a ``correction_hint`` (activated on the match: steering must
  be cheap and reliable); a webhook or cron trigger.
* 2 — the tier-2 score decided: below the threshold or a "drop" row of docs/design.md#gate-bypass,
or an
  ``auto`` topic / a "high, score >= 0.3" bypass activated without the gate.
* 3 — the gate decided.

Steering: correction hints from output-scope triggers, and topics fired by webhooks or
cron, are kept in the state file ``watch_pending`` so that the next compile (maybe in
another process) injects them; `take_pending` reads and clears them under a lock.

Topic files are re-read when one changes (checked at most every `reload_interval`
seconds), so editing a topic while `autopoiesis watch` runs takes effect on the next
message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from autopoiesis.core.clock import format_ts_micro, utc
from autopoiesis.core.paths import atomic_write
from autopoiesis.formats.topic import Topic
from autopoiesis.topics.gate import (
    GatedActivator,
    GateDecision,
    GateLog,
    message_hash,
    new_decision_id,
    route_for,
)
from autopoiesis.topics.loader import (
    TopicSet,
    load_topics,
    people_names,
    people_signature,
    topics_signature,
)
from autopoiesis.topics.pattern import PatternHit, PatternMatcher

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.llm import LLMClient
    from autopoiesis.topics.similarity import SimilarityScorer, TopicScores

Direction = Literal["input", "output"]


@dataclass(frozen=True)
class TopicActivation:
    """The verdict on one topic for one message."""

    topic: str
    activated: bool
    tier: int
    reason: str
    direction: str = "input"
    route: str = ""
    scores: dict[str, Any] = field(default_factory=dict)
    hits: tuple[PatternHit, ...] = ()
    correction_hints: tuple[str, ...] = ()
    decision_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "activated": self.activated,
            "tier": self.tier,
            "reason": self.reason,
            "direction": self.direction,
            "route": self.route,
            "scores": self.scores,
            "triggers": [
                {"type": h.trigger_type, "index": h.trigger_index, "detail": h.detail}
                for h in self.hits
            ],
            "correction_hints": list(self.correction_hints),
            "decision_id": self.decision_id,
        }


@dataclass(frozen=True)
class PendingActivation:
    """A topic (and maybe a correction hint) waiting for the next compile."""

    topic: str
    hint: str | None
    source: str  # output | webhook:SRC/EVENT | cron:SCHEDULE
    at: str


@dataclass(frozen=True)
class CronDue:
    topic: str
    schedule: str
    fire_time: datetime


class WatcherPipeline:
    """Tiers 1-3 over a memory repo's topics (docs/design.md#system-api
    `WatcherPipeline.process`)."""

    def __init__(
        self,
        repo: MemoryRepo,
        *,
        llm: LLMClient | None = None,
        gate: GatedActivator | None = None,
        reload_interval: float = 1.0,
        log_decisions: bool = True,
        persist_steering: bool = True,
    ):
        self.repo = repo
        self.gate = gate or GatedActivator(repo, llm)
        self.reload_interval = reload_interval
        self.log_decisions = log_decisions
        self.persist_steering = persist_steering
        self.log = GateLog(repo)
        self._signature: tuple = ()
        self._checked = 0.0
        self._scorer: SimilarityScorer | None = None
        self.reloads = 0
        self._load()

    # ── topics and their reload ──
    def _load(self) -> None:
        self._signature = self._files_signature()
        self.topic_set: TopicSet = load_topics(self.repo)
        self._topics = self.topic_set.by_name()
        self.matcher = PatternMatcher(self.topic_set.topics, people_names(self.repo))
        self._scorer = None  # built on first need: loads from the disk cache or fits
        self._checked = time.monotonic()
        self.reloads += 1

    def _files_signature(self) -> tuple:
        """What the topics and the people's names were read from, by stat."""
        return topics_signature(self.repo), people_signature(self.repo)

    def refresh(self, force: bool = False) -> bool:
        """Reload the topics if a file under topics/ or knowledge/people/ changed; True when
        it reloaded."""
        now = time.monotonic()
        if not force and now - self._checked < self.reload_interval:
            return False
        self._checked = now
        if force or self._files_signature() != self._signature:
            self._load()
            return True
        return False

    @property
    def topics(self) -> tuple[Topic, ...]:
        return self.topic_set.topics

    @property
    def scorer(self) -> SimilarityScorer:
        if self._scorer is None:
            from autopoiesis.topics.similarity import SimilarityScorer

            self._scorer = SimilarityScorer(
                self.topic_set.topics, cache_dir=self.repo.state_file("similarity_cache")
            )
        return self._scorer

    # ── messages ──
    def process(
        self, message: str, direction: Direction = "input", paths: Sequence[str] = ()
    ) -> list[TopicActivation]:
        """The topics MESSAGE activates (docs/design.md#system-api), with the tier that decided and
        the
        scores. Decisions are logged; output correction hints are kept for the next compile."""
        return [a for a in self.evaluate(message, direction, paths) if a.activated]

    def evaluate(
        self,
        message: str,
        direction: Direction = "input",
        paths: Sequence[str] = (),
        *,
        all_topics: bool = False,
        dry_run: bool = False,
    ) -> list[TopicActivation]:
        """A verdict per candidate topic (per topic with ALL_TOPICS). DRY_RUN logs nothing
        and keeps no hints (what `autopoiesis topics test` uses)."""
        if direction not in ("input", "output"):
            raise ValueError(f"direction must be 'input' or 'output', not {direction!r}")
        self.refresh()
        by_topic: dict[str, list[PatternHit]] = {}
        for h in self.matcher.hits(message, direction, paths):
            by_topic.setdefault(h.topic, []).append(h)
        names = [t.name for t in self.topics if all_topics or t.name in by_topic]
        scored: dict[str, TopicScores] = {}
        if names:
            scored = {s.topic: s for s in self.scorer.scores(message, set(names))}
        mhash = message_hash(message)
        results: list[TopicActivation] = []
        decisions: list[GateDecision] = []
        pending: list[PendingActivation] = []
        gate_until = self.gate.message_deadline()  # the gate calls of this message share it
        for name in names:
            topic_hits = tuple(by_topic.get(name, ()))
            scores, tier2 = _scores(topic_hits, scored.get(name))
            hints = _output_hints(topic_hits, direction)
            act, gate_result, source = self._verdict(
                message, self._topics[name], direction, topic_hits, hints, scores, tier2, gate_until
            )
            if topic_hits and not dry_run:
                act, decision = _logged(act, mhash, tier2, gate_result, source, scores)
                decisions.append(decision)
                if act.activated and hints:
                    pending.extend(
                        PendingActivation(name, h, "output", format_ts_micro()) for h in hints
                    )
            results.append(act)
        if decisions and self.log_decisions:
            self.log.append(decisions)
        if pending and self.persist_steering:
            add_pending(self.repo, pending)
        return results

    def _verdict(
        self,
        message: str,
        topic: Topic,
        direction: Direction,
        topic_hits: tuple[PatternHit, ...],
        hints: tuple[str, ...],
        scores: dict[str, Any],
        tier2: float,
        gate_until: float,
    ) -> tuple[TopicActivation, bool | None, str]:
        """TOPIC's activation, the gate's answer (None when it was not asked) and what
        decided. No trigger fired: dropped. An output trigger with a correction hint:
        activated. Else the route for the tier-2 score: the gate decides (tier 3), or the
        rule does (tier 1 for a manual or critical topic, else tier 2)."""
        name = topic.name
        if not topic_hits:
            act = TopicActivation(name, False, 1, "no trigger fired", direction, "drop", scores)
            return act, None, "rule"
        if hints:
            act = TopicActivation(
                name,
                True,
                1,
                "output trigger with a correction hint",
                direction,
                "activate",
                scores,
                topic_hits,
                hints,
            )
            return act, None, "rule"
        route, why = route_for(topic, True, tier2)
        if route == "gate":
            verdict = self.gate.decide(message, topic, tier2, until=gate_until)
            act = TopicActivation(
                name,
                verdict.result,
                3,
                f"gate ({verdict.source}) said {'YES' if verdict.result else 'NO'}; {why}",
                direction,
                route,
                scores,
                topic_hits,
            )
            return act, verdict.result, verdict.source
        tier = 1 if (topic.activation == "manual" or topic.priority == "critical") else 2
        source = "bypass" if route == "activate" else "rule"
        act = TopicActivation(
            name, route == "activate", tier, why, direction, route, scores, topic_hits
        )
        return act, None, source

    def corrections(self, agent_output: str) -> list[tuple[str, str]]:
        """[(topic, correction_hint)] of output-scope triggers firing on AGENT_OUTPUT
        (docs/design.md#output-steering OutputWatcher.check), without logging or persisting."""
        self.refresh()
        return [
            (h.topic, h.correction_hint)
            for h in self.matcher.hits(agent_output, "output")
            if h.correction_hint
        ]

    # ── webhook and cron ──
    def fire_webhook(
        self, source: str, event: str | None = None, *, persist: bool = True
    ) -> list[TopicActivation]:
        """Activate every topic with a webhook trigger for SOURCE (and EVENT, when the
        trigger names one). Declaring the trigger is the user's explicit wiring, so the
        activation mode is not consulted. Fired topics wait for the next compile."""
        self.refresh()
        out = []
        for topic in self.topics:
            for i, t in enumerate(topic.triggers):
                if t.type != "webhook" or (t.source or "").lower() != source.lower():
                    continue
                if t.event and (event or "").lower() != t.event.lower():
                    continue
                hit = PatternHit(topic.name, i, "webhook", "input", f"{source}/{event or '*'}")
                out.append(
                    TopicActivation(
                        topic.name,
                        True,
                        1,
                        f"webhook {source}/{event or '*'}",
                        "input",
                        "activate",
                        {"tier1": True},
                        (hit,),
                    )
                )
                break
        if out and persist:
            add_pending(
                self.repo,
                [
                    PendingActivation(
                        a.topic, None, f"webhook:{source}/{event or '*'}", format_ts_micro()
                    )
                    for a in out
                ],
            )
        return out

    def due(self, at: datetime, since: datetime | None = None) -> list[CronDue]:
        """Cron triggers with a fire time in (SINCE, AT] (SINCE defaults to a minute before
        AT, so a scheduler that asks every minute sees each firing once)."""
        from croniter import croniter

        self.refresh()
        # A naive time is UTC; an aware one keeps its offset, so a schedule is read in the
        # time zone the caller asked in (`--at 08:00+02:00`).
        at = utc(at) if at.tzinfo is None else at
        since = (
            (utc(since) if since.tzinfo is None else since)
            if since is not None
            else at - timedelta(minutes=1)
        )
        out = []
        for topic in self.topics:
            for t in topic.triggers:
                if t.type == "cron" and t.schedule:
                    nxt = croniter(t.schedule, since).get_next(datetime)
                    if nxt <= at:
                        out.append(CronDue(topic.name, t.schedule, nxt))
        return out


def _logged(
    act: TopicActivation,
    mhash: str,
    tier2: float,
    gate_result: bool | None,
    source: str,
    scores: dict[str, Any],
) -> tuple[TopicActivation, GateDecision]:
    """ACT with a new decision id, and the decision to log under that id."""
    did = new_decision_id()
    act = replace(act, decision_id=did)
    return act, GateDecision(
        id=did,
        timestamp=format_ts_micro(),
        message_hash=mhash,
        topic_name=act.topic,
        tier1_matched=True,
        tier2_score=round(tier2, 6),
        route=act.route,
        gate_result=gate_result,
        activated=act.activated,
        source=source,
        reason=act.reason,
        scores={k: v for k, v in scores.items() if isinstance(v, float)},
    )


def _output_hints(topic_hits: tuple[PatternHit, ...], direction: Direction) -> tuple[str, ...]:
    """The correction hints of the triggers that fired on an agent's output, each once."""
    return tuple(
        dict.fromkeys(
            h.correction_hint for h in topic_hits if h.correction_hint and direction == "output"
        )
    )


def _scores(
    topic_hits: tuple[PatternHit, ...], s: TopicScores | None
) -> tuple[dict[str, Any], float]:
    """The scores shown for a topic (whether tier 1 fired, then tier 2's parts), and its
    tier-2 score (0 when it was not scored)."""
    scores: dict[str, Any] = {"tier1": bool(topic_hits)}
    if s is not None:
        scores.update(s.as_dict())
    return scores, s.score if s is not None else 0.0


# ── pending steering, shared between processes ──────────────────────────────────────
def _pending_path(repo: MemoryRepo) -> Path:
    return repo.state_file("watch_pending")


def _read_pending(repo: MemoryRepo) -> list[PendingActivation]:
    path = _pending_path(repo)
    if not path.exists():
        return []
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, OSError):
        return []
    return [
        PendingActivation(r["topic"], r.get("hint"), r.get("source", ""), r.get("at", ""))
        for r in rows
        if isinstance(r, dict) and "topic" in r
    ]


def add_pending(repo: MemoryRepo, entries: Sequence[PendingActivation]) -> None:
    """Queue ENTRIES for the next compile (duplicates of a topic+hint are kept once)."""
    with repo.lock("watch-pending"):
        rows = _read_pending(repo)
        have = {(r.topic, r.hint) for r in rows}
        for e in entries:
            if (e.topic, e.hint) not in have:
                rows.append(e)
                have.add((e.topic, e.hint))
        atomic_write(
            _pending_path(repo),
            json.dumps([r.__dict__ for r in rows], ensure_ascii=False, indent=1),
        )


def peek_pending(repo: MemoryRepo) -> list[PendingActivation]:
    """The queued activations and hints, left queued."""
    return _read_pending(repo)


def take_pending(repo: MemoryRepo) -> list[PendingActivation]:
    """The queued activations and hints, cleared in the same locked step."""
    with repo.lock("watch-pending"):
        rows = _read_pending(repo)
        if rows:
            _pending_path(repo).unlink(missing_ok=True)
    return rows
