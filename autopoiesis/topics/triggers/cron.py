"""The `cron` trigger: a schedule (a cron expression, in UTC), fired from outside the
message flow by `autopoiesis topics due`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autopoiesis.core.clock import (
    check_cron,
)  # the one cron check (croniter, imported lazily inside it)
from autopoiesis.formats.topic_trigger import TriggerType

EXAMPLE = 'schedule: "0 8 * * *"'


def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if raw.get("schedule") is None:
        return {}
    sched = str(raw["schedule"])
    problem = check_cron(sched)
    if problem:
        errors.append(f"{at}.schedule: {sched!r} {problem}.")
    return {"schedule": sched}


CRON = TriggerType("cron", False, parse, lambda t: str(t.schedule), EXAMPLE, ("schedule",))
