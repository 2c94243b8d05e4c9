"""The `mention` trigger: `@handle`s and plain names, the trigger's `names`, else any
@mention or person of knowledge/people/."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from autopoiesis.formats.topic_trigger import Trigger, TriggerType, str_list
from autopoiesis.topics.triggers.common import FEATURE_SCAN_CHARS, Message

EXAMPLE = "names: [david, silas]"
_MENTION = re.compile(r"(?<![\w@.])@([A-Za-z][\w.-]{0,38}[\w])")


def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if raw.get("names") is None:
        return {}
    names = str_list(raw["names"])
    if names is None:
        errors.append(f"{at}.names: must be a list of names, like {EXAMPLE}.")
        return {}
    return {"names": tuple(n.strip().lstrip("@").lower() for n in names if n.strip())}


def names_regex(names: Iterable[str]) -> re.Pattern[str] | None:
    """One regex of NAMES ('@'-handle or plain name, whole words), None for no names."""
    names = sorted({n.strip().lower() for n in names if n.strip()}, key=lambda n: (-len(n), n))
    if not names:
        return None
    alt = "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in names)
    # '@'-handle or a plain name, as whole words: an alternation of literals, linear time.
    return re.compile(rf"(?<![\w@])@?(?:{alt})(?![\w])", re.IGNORECASE)


def feature(msg: Message) -> tuple[set[str], set[str], str]:
    head = msg.text[:FEATURE_SCAN_CHARS]
    handles = {m.group(1).lower() for m in _MENTION.finditer(head)}
    people = {m.group(0).lower() for m in msg.people.finditer(head)} if msg.people else set()
    return handles, people, head


def match(
    trig: Trigger, rx: re.Pattern[str] | None, found: tuple[set[str], set[str], str]
) -> str | None:
    handles, people, head = found
    if rx is not None:
        m = rx.search(head)
        return m.group(0) if m else None
    if handles:
        return "@" + sorted(handles)[0]
    if people:
        return sorted(people)[0]
    return None


MENTION = TriggerType(
    "mention",
    True,
    parse,
    lambda t: ", ".join(t.names) or "any mention",
    EXAMPLE,
    (),
    ("names",),
    feature=feature,
    prepare=lambda t: names_regex(t.names),
    match=match,
)
