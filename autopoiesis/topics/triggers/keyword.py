"""The `keyword` trigger: words or phrases, case-insensitive and whole words, evaluated
in the one RE2 set of its direction (a phrase's spaces match any run of white space)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autopoiesis.formats.topic_trigger import Trigger, TriggerType, str_list

EXAMPLE = "words: [deploy, production, rollback]"


def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if raw.get("words") is None:
        return {}
    words = str_list(raw["words"])
    if not words or not all(w.strip() for w in words):
        errors.append(f"{at}.words: must be a list of words or phrases, like {EXAMPLE}.")
        return {}
    return {"words": tuple(w.strip().lower() for w in words)}


def re2_source(trig: Trigger) -> str | None:
    if not trig.words:
        return None
    import re2

    alt = "|".join(
        re2.escape(w).replace(r"\ ", r"\s+") for w in sorted(trig.words, key=lambda w: (-len(w), w))
    )
    return rf"(?i)\b(?:{alt})\b"


KEYWORD = TriggerType(
    "keyword", True, parse, lambda t: ", ".join(t.words), EXAMPLE, ("words",), re2_source=re2_source
)
