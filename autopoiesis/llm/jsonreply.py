"""JSON replies: the system text that asks for JSON, the schema check, and parsing a reply
(a code fence around it tolerated) into data or an error message for the repair turn.

A reply is data from outside, so it is bounded here before anything uses it: at most
MAX_REPLY_CHARS characters (the client refuses a longer one, without a repair turn) and
at most MAX_REPLY_ITEMS items in any array (the rest is cut, counted and logged), so a
runaway model cannot turn one answer into thousands of knowledge entries."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from autopoiesis.llm.protocol import Validator

log = logging.getLogger(__name__)

MAX_REPLY_CHARS = 256 * 1024  # a reply longer than this is refused (max_tokens 1024 is ~4 KB)
MAX_REPLY_ITEMS = 100  # items kept of any one array in a JSON reply


def json_system(system: str | None, schema: dict[str, Any] | None) -> str:
    """SYSTEM plus the demand for one JSON object (and SCHEMA when given)."""
    # OpenAI's JSON mode refuses a request whose messages never say "JSON"; the schema in
    # the system message is also what makes small local models answer in shape.
    parts = [system] if system else []
    parts.append("Reply with a single JSON object and nothing else.")
    if schema is not None:
        parts.append("It must match this JSON schema: " + json.dumps(schema, sort_keys=True))
    return "\n\n".join(parts)


def make_validator(schema: dict[str, Any] | Validator | None) -> Validator | None:
    """A validator for SCHEMA: a callable as is, a JSON-schema dict compiled (jsonschema is
    imported here, on first use, not with the package)."""
    if schema is None or callable(schema):
        return schema
    from jsonschema.validators import validator_for

    cls = validator_for(schema)
    cls.check_schema(schema)
    v = cls(schema)

    def check(data: Any) -> None:
        error = next(iter(sorted(v.iter_errors(data), key=lambda e: list(e.absolute_path))), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            raise ValueError(f"does not match the schema at {where}: {error.message}")

    return check


def rejection(data: Any, check: Validator | None) -> str | None:
    """Why CHECK rejects DATA, or None when it accepts it (or there is no check)."""
    if check is None:
        return None
    try:
        ok = check(data)
    except Exception as exc:  # a validator signals rejection by raising anything
        return str(exc) or type(exc).__name__
    return "the validator returned False" if ok is False else None


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def cap_items(data: Any, limit: int = MAX_REPLY_ITEMS) -> tuple[Any, int]:
    """DATA with every array (at any depth) cut to LIMIT items, and how many were cut."""
    dropped = 0

    def walk(x: Any) -> Any:
        nonlocal dropped
        if isinstance(x, list):
            if len(x) > limit:
                dropped += len(x) - limit
                x = x[:limit]
            return [walk(v) for v in x]
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        return x

    return walk(data), dropped


def parse_capped(
    text: str, check: Validator | None, max_items: int = MAX_REPLY_ITEMS
) -> tuple[Any, str | None, int]:
    """(data, None, items cut) for a reply that parses and passes CHECK, else (data or None,
    why not, items cut). Arrays are cut to MAX_ITEMS first; the third value counts the cut."""
    if len(text) > MAX_REPLY_CHARS:
        return (
            None,
            f"the reply is {len(text)} characters long, over the cap of {MAX_REPLY_CHARS}",
            0,
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        m = _FENCE.match(text)  # local models like to wrap JSON in a code fence
        if not m:
            return None, f"the reply is not JSON ({exc})", 0
        try:
            data = json.loads(m.group(1))
        except json.JSONDecodeError as exc2:
            return None, f"the reply is not JSON ({exc2})", 0
    except RecursionError:
        return None, "the reply is nested too deeply", 0
    try:
        data, dropped = cap_items(data, max_items)
    except RecursionError:
        return None, "the reply is nested too deeply", 0
    if dropped:
        log.warning(
            "an LLM reply held %d array items over the cap of %d per array; they were dropped",
            dropped,
            max_items,
        )
    error = rejection(data, check)
    return data, (None if error is None else f"the JSON was rejected: {error}"), dropped


def repair_messages(
    messages: list[dict[str, str]], bad_reply: str, error: str
) -> list[dict[str, str]]:
    """MESSAGES plus the bad reply and a request to correct it (the one repair turn)."""
    return list(messages) + [
        {"role": "assistant", "content": bad_reply},
        {
            "role": "user",
            "content": f"That reply was not valid: {error}\nReply again with only the corrected "
            "JSON object.",
        },
    ]
