"""The `webhook` trigger: fired from outside the message flow, by `autopoiesis topics fire
--webhook SOURCE/EVENT`; `event` left out matches any event of the source."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autopoiesis.formats.topic_trigger import TriggerType

EXAMPLE = "source: email  (and event: new_message)"


def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("source", "event"):
        if raw.get(key) is not None:
            if not isinstance(raw[key], str) or "/" in raw[key]:
                errors.append(f"{at}.{key}: must be a word without '/', like {EXAMPLE}.")
            else:
                out[key] = raw[key]
    return out


WEBHOOK = TriggerType(
    "webhook",
    False,
    parse,
    lambda t: f"{t.source}/{t.event or '*'}",
    EXAMPLE,
    ("source",),
    ("event",),
)
