"""Tier 1 (docs/design.md#watcher-algorithms): pattern matching, free and under a millisecond.

Every rule is compiled once, when the matcher is built. How each trigger type is
evaluated is the type's own (autopoiesis.topics.triggers, one module per type; the
TriggerType the plugins register):

* a type with an RE2 source (**pattern**, **keyword**) joins one RE2 set per direction,
  so a message is scanned once whatever the number of topics. RE2 runs in linear time: a
  pattern such as ``(a+)+$`` cannot hang the pipeline on a hostile message (patterns RE2
  cannot run are refused when the topic is loaded, see `formats.topic_trigger.check_regex`);
* the others (**glob**, **code**, **language**, **mention**, **url**, **sentiment**)
  extract their feature once per message for all their triggers, and match each trigger
  against it.

Feature extractors look at the first `FEATURE_SCAN_CHARS` characters; the RE2 set scans
the whole message (linear, about 1 ms per MB).

A new trigger type is one TriggerType registered by a plugin (see
autopoiesis.formats.topic_trigger); `register_evaluator` still adds the evaluation to a type
registered without one::

    register_evaluator(TriggerEvaluator(
        "weekday", feature=lambda m: m.text.lower(),
        match=lambda trig, _, text: trig.option("day") if trig.option("day") in text else None))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from autopoiesis.core.text import utf8_safe
from autopoiesis.errors import TopicError
from autopoiesis.formats.topic import Topic
from autopoiesis.formats.topic_trigger import (
    Trigger,
    TriggerType,
    re2_options,
    re2_set,
    register_trigger_type,
    trigger_type,
)
from autopoiesis.topics.triggers.code import CodeInfo, detect_code
from autopoiesis.topics.triggers.common import FEATURE_SCAN_CHARS, Message
from autopoiesis.topics.triggers.glob import find_paths
from autopoiesis.topics.triggers.language import LANGUAGE_SCAN_CHARS, detect_language
from autopoiesis.topics.triggers.mention import names_regex
from autopoiesis.topics.triggers.sentiment import URGENT_WORDS, sentiment_score
from autopoiesis.topics.triggers.url import URL_KINDS, UrlInfo, find_urls

DIRECTIONS = ("input", "output")

__all__ = [
    "DIRECTIONS",
    "FEATURE_SCAN_CHARS",
    "LANGUAGE_SCAN_CHARS",
    "URGENT_WORDS",
    "URL_KINDS",
    "CodeInfo",
    "Message",
    "PatternHit",
    "PatternMatcher",
    "TriggerEvaluator",
    "UrlInfo",
    "detect_code",
    "detect_language",
    "find_paths",
    "find_urls",
    "register_evaluator",
    "sentiment_score",
]


@dataclass(frozen=True)
class PatternHit:
    """One trigger of one topic that fired on a message."""

    topic: str
    trigger_index: int
    trigger_type: str
    scope: str
    detail: str  # what matched: the text, the language, the URL, ...
    correction_hint: str | None = None


def _re2_sets(patterns: list[str], topics: list[str]) -> list[tuple[Any, list[int]]]:
    """PATTERNS (of the topics named, one name each) as RE2 sets: one set, so a message is
    scanned once; or, when together they are more than RE2 compiles (each topic's own
    were checked when it was read: formats.topic_trigger.check_regex_set), one set a
    topic, so no topic, a collaborator's included, takes the others' triggers away."""
    import re2

    everything = list(range(len(patterns)))
    try:
        return [(re2_set(patterns), everything)]
    except re2.error:
        pass
    by_topic: dict[str, list[int]] = {}
    for i, topic in enumerate(topics):
        by_topic.setdefault(topic, []).append(i)
    return [
        (re2_set([patterns[i] for i in positions]), positions) for positions in by_topic.values()
    ]


@dataclass(frozen=True)
class TriggerEvaluator:
    """How tier 1 evaluates one trigger type, given apart from the type: the fields of the
    same names on `TriggerType`, which is where a trigger type keeps them now."""

    type: str
    re2_source: Callable[[Trigger], str | None] | None = None
    feature: Callable[[Message], Any] | None = None
    prepare: Callable[[Trigger], Any] | None = None
    match: Callable[[Trigger, Any, Any], str | None] | None = None


def register_evaluator(evaluator: TriggerEvaluator) -> TriggerType:
    """Give the registered trigger type EVALUATOR.type this evaluation (registering the
    type again, with it). Returns the type."""
    if evaluator.re2_source is None and (evaluator.feature is None or evaluator.match is None):
        raise ValueError(f"evaluator for {evaluator.type!r}: give re2_source, or feature and match")
    spec = trigger_type(evaluator.type)
    if spec is None:
        raise ValueError(
            f"no trigger type {evaluator.type!r} is registered; register its TriggerType first"
        )
    with_evaluation = replace(
        spec,
        re2_source=evaluator.re2_source,
        feature=evaluator.feature,
        prepare=evaluator.prepare,
        match=evaluator.match,
    )
    return register_trigger_type(with_evaluation)


@dataclass
class _Rules:
    """The compiled rules of one direction."""

    set_index: list[tuple[str, int, Trigger]] = field(default_factory=list)
    # (an RE2 set, the set_index position of each of its patterns): one set for every
    # topic, or one a topic when together they are more than RE2 compiles (`_re2_sets`)
    re2_sets: list[tuple[Any, list[int]]] = field(default_factory=list)
    singles: dict[int, Any] = field(default_factory=dict)  # set index -> compiled pattern
    # (topic, trigger index, trigger, its type, what prepare() made of it)
    others: list[tuple[str, int, Trigger, TriggerType, Any]] = field(default_factory=list)


class PatternMatcher:
    """Tier 1: zero-cost pattern matching against topic triggers
    (docs/design.md#watcher-algorithms).

    >>> m = PatternMatcher(load_topics(repo).topics)
    >>> m.match("Can you review the PR?")
    {'github-pr-review'}
    """

    def __init__(self, topics: Sequence[Topic], people: Sequence[str] = ()):
        import re2

        self.topics = tuple(topics)
        self.people = tuple(p.lower() for p in people)
        self._people_rx = names_regex(self.people)
        opts = re2_options()
        self._rules: dict[str, _Rules] = {}
        for direction in DIRECTIONS:
            rules = _Rules()
            patterns: list[str] = []
            for topic in self.topics:
                for idx, trig in topic.text_triggers(direction):
                    ev = trigger_type(trig.type)
                    if ev is None or not ev.evaluates:
                        raise TopicError(
                            f"{topic.path}: trigger type {trig.type!r} has no tier-1 evaluation; "
                            "give its TriggerType re2_source, or feature and match."
                        )
                    if ev.re2_source is not None:
                        src = ev.re2_source(trig)
                        if src is not None:
                            rules.set_index.append((topic.name, idx, trig))
                            patterns.append(src)
                        continue
                    prepared = ev.prepare(trig) if ev.prepare is not None else None
                    rules.others.append((topic.name, idx, trig, ev, prepared))
            if patterns:
                rules.re2_sets = _re2_sets(patterns, [name for name, _, _ in rules.set_index])
                rules.singles = {i: re2.compile(src, opts) for i, src in enumerate(patterns)}
            self._rules[direction] = rules

    def match(self, text: str, direction: str = "input", paths: Sequence[str] = ()) -> set[str]:
        """Names of the topics whose triggers fire on TEXT (docs/design.md#system-api)."""
        return {h.topic for h in self.hits(text, direction, paths, details=False)}

    def hits(
        self,
        text: str,
        direction: str = "input",
        paths: Sequence[str] = (),
        *,
        details: bool = True,
    ) -> list[PatternHit]:
        """Every trigger that fires on TEXT travelling in DIRECTION, in topic order.
        PATHS are file paths seen in tool calls (for glob triggers)."""
        if direction not in self._rules:
            raise ValueError(f"direction must be 'input' or 'output', not {direction!r}")
        rules = self._rules[direction]
        # RE2 reads UTF-8 and refuses a lone surrogate (a JSON `\udcc1` escape, a byte of
        # argv that is not UTF-8): it reads one as U+FFFD, as a transcript would write it
        text = utf8_safe(text)
        out: list[PatternHit] = []
        if rules.re2_sets:
            matched = [
                positions[j]
                for re2_set, positions in rules.re2_sets
                for j in re2_set.Match(text) or []
            ]
            for i in sorted(matched):
                name, idx, trig = rules.set_index[i]
                detail = ""
                if details:
                    m = rules.singles[i].search(text)
                    detail = m.group(0)[:80] if m else ""
                out.append(
                    PatternHit(name, idx, trig.type, trig.scope, detail, trig.correction_hint)
                )
        if rules.others:
            out.extend(self._feature_hits(Message(text, paths, self._people_rx), rules))
        return out

    def _feature_hits(self, message: Message, rules: _Rules) -> list[PatternHit]:
        features: dict[str, Any] = {}
        out: list[PatternHit] = []
        for name, idx, trig, ev, prepared in rules.others:
            if trig.type not in features:
                features[trig.type] = ev.feature(message)  # type: ignore[misc]
            detail = ev.match(trig, prepared, features[trig.type])  # type: ignore[misc]
            if detail is not None:
                out.append(
                    PatternHit(name, idx, trig.type, trig.scope, detail, trig.correction_hint)
                )
        return out
