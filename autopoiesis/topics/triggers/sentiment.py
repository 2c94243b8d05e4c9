"""The `sentiment` trigger: a shift to urgency (shouted words, `!!!`, urgent vocabulary)
scored 0..n against the trigger's `min_score`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from autopoiesis.formats.topic_trigger import Trigger, TriggerType
from autopoiesis.topics.triggers.common import FEATURE_SCAN_CHARS, WORD, Message

EXAMPLE = "min_score: 2"
_EXCLAIM = re.compile(r"!{2,}")
URGENT_WORDS = frozenset(
    """urgent urgently asap immediately emergency critical outage down broken blocker blocking
    now!! hurry deadline escalate escalation sev1 p0 incident
    dringend sofort eilig notfall""".split()
)
# Shouted words that are usually acronyms, not shouting.
_ACRONYMS = frozenset(
    (
        "HTTP HTTPS JSON HTML YAML TODO FIXME NOTE README UUID UTF8 ASCII CSV SQL API URL REST GRPC"
    ).split()
)


def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if "min_score" not in raw:
        return {}
    ms = raw["min_score"]
    if not isinstance(ms, int) or isinstance(ms, bool) or ms < 1:
        errors.append(f"{at}.min_score: must be a whole number >= 1, like {EXAMPLE}.")
        return {}
    return {"min_score": ms}


def sentiment_score(text: str) -> tuple[int, list[str]]:
    """(score, signals) of urgency: +1 per urgent word (at most 2), +1 for '!!', +2 for
    '!!!' or more, +1 for two or more shouted words (four letters or more, all caps,
    not a known acronym)."""
    text = text[:FEATURE_SCAN_CHARS]
    signals: list[str] = []
    score = 0
    words = WORD.findall(text)
    urgent = sorted({w.lower() for w in words if w.lower() in URGENT_WORDS})
    if urgent:
        score += min(2, len(urgent))
        signals.append("urgent words: " + ", ".join(urgent[:5]))
    bangs = max((len(m) for m in _EXCLAIM.findall(text)), default=0)
    if bangs >= 3:
        score += 2
        signals.append("'!!!'")
    elif bangs == 2:
        score += 1
        signals.append("'!!'")
    shouted = [w for w in words if len(w) >= 4 and w.isupper() and w not in _ACRONYMS]
    if len(shouted) >= 2 or (shouted and len(words) <= 3):
        score += 1
        signals.append("caps: " + " ".join(shouted[:5]))
    return score, signals


def feature(message: Message) -> tuple[int, list[str]]:
    return sentiment_score(message.text)


def match(trig: Trigger, _: Any, scored: tuple[int, list[str]]) -> str | None:
    score, signals = scored
    return f"score {score}: " + "; ".join(signals) if score >= trig.min_score else None


SENTIMENT = TriggerType(
    "sentiment",
    True,
    parse,
    lambda t: f"score >= {t.min_score}",
    EXAMPLE,
    (),
    ("min_score",),
    feature=feature,
    match=match,
)
