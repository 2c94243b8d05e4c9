"""The `language` trigger: the natural language of a message, identified with py3langid
(its model ships inside the wheel: no download), loaded on first use and only when a
topic has a language trigger. Texts under four words are not classified (too unreliable)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from autopoiesis.formats.topic_trigger import Trigger, TriggerType
from autopoiesis.topics.triggers.common import URL, WORD, Message, languages_parser

EXAMPLE = "languages: [de]"
LANGUAGE_SCAN_CHARS = 2000


@lru_cache(maxsize=1)
def _langid() -> Any:  # pragma: no cover - trivial
    import py3langid

    return py3langid


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of TEXT's natural language (py3langid, offline), or None for texts
    too short to tell (under four words) or mostly code."""
    sample = text[:LANGUAGE_SCAN_CHARS]
    if "```" in sample:
        sample = re.sub(r"```.*?(?:```|\Z)", " ", sample, flags=re.DOTALL)
    sample = URL.sub(" ", sample)
    if len(WORD.findall(sample)) < 4:
        return None
    lang, _ = _langid().classify(sample)
    return lang


def feature(message: Message) -> str | None:
    return detect_language(message.text)


def match(trig: Trigger, _: Any, lang: str | None) -> str | None:
    return lang if lang is not None and lang in trig.languages else None


LANGUAGE = TriggerType(
    "language",
    True,
    languages_parser(EXAMPLE, iso=True),
    lambda t: ", ".join(t.languages),
    EXAMPLE,
    ("languages",),
    feature=feature,
    match=match,
)
