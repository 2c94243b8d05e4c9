"""The `glob` trigger: globs over the file paths of a message, those passed in (tool-call
arguments) and the path-like tokens of the text (`src/app.py`, `> [tool:edit] README.md`)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

from autopoiesis.formats.topic_trigger import Trigger, TriggerType, str_list
from autopoiesis.topics.triggers.common import FEATURE_SCAN_CHARS, Message

EXAMPLE = 'match: "*.py"'
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_TOKEN_STRIP = "\"'`()[]{}<>,;:!?"


def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if raw.get("match") is None:
        return {}
    globs = str_list(raw["match"])
    if not globs:
        errors.append(f"{at}.match: must be a glob or a list of globs, like {EXAMPLE}.")
        return {}
    return {"globs": tuple(globs)}


def find_paths(text: str, extra: Iterable[str] = ()) -> list[str]:
    """File paths seen in the message plus EXTRA (tool-call arguments). A token is a path
    when it has a '/' or ends in an extension; tokens are split on whitespace first so
    the scan stays linear whatever the text (no regex over unbounded tokens)."""
    found = list(extra)
    for tok in text[:FEATURE_SCAN_CHARS].split():
        if len(tok) > 300 or "://" in tok:
            continue
        tok = tok.strip(_TOKEN_STRIP).rstrip(".")
        if tok and ("/" in tok or _EXTENSION.search(tok)) and any(c.isalnum() for c in tok):
            found.append(tok)
    return list(dict.fromkeys(p for p in found if p))


def feature(message: Message) -> list[str]:
    return find_paths(message.text, message.paths)


def prepare(trig: Trigger) -> list[re.Pattern[str]]:
    return [re.compile(fnmatch.translate(g), re.IGNORECASE) for g in trig.globs]


def match(trig: Trigger, rxs: list[re.Pattern[str]], found: list[str]) -> str | None:
    for p in found:
        base = p.rsplit("/", 1)[-1]
        if any(rx.match(p) or rx.match(base) for rx in rxs):
            return p
    return None


GLOB = TriggerType(
    "glob",
    True,
    parse,
    lambda t: ", ".join(t.globs),
    EXAMPLE,
    ("match",),
    feature=feature,
    prepare=prepare,
    match=match,
)
