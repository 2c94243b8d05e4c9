"""The `pattern` trigger: a regex (RE2 syntax, case-insensitive unless
`case_sensitive: true`), evaluated in the one RE2 set of its direction. Patterns are
multi-line: `^`/`$` match at line boundaries, so `^\\s*print ` finds a line of Python 2
in a longer reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autopoiesis.formats.topic_trigger import Trigger, TriggerType, check_regex

EXAMPLE = 'match: "\\\\b(deploy|rollback)\\\\b"'


def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(raw.get("match"), (str, int)):
        pattern = str(raw["match"])
        problem = check_regex(pattern)
        if problem:
            errors.append(f"{at}.match: {pattern!r} {problem}.")
        out["match"] = pattern
        cs = raw.get("case_sensitive", False)
        if not isinstance(cs, bool):
            errors.append(f"{at}.case_sensitive: write true or false.")
            cs = False
        out["case_sensitive"] = cs
    elif raw.get("match") is not None:
        errors.append(f"{at}.match: must be one regex string, like {EXAMPLE}.")
    return out


def re2_source(trig: Trigger) -> str | None:
    if trig.match is None:
        return None
    return ("(?m)" if trig.case_sensitive else "(?im)") + trig.match


PATTERN = TriggerType(
    "pattern",
    True,
    parse,
    lambda t: str(t.match),
    EXAMPLE,
    ("match",),
    ("case_sensitive",),
    re2_source=re2_source,
)
