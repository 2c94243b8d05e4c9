"""What the trigger types share: the message a feature extractor sees, how far into it
they look, and the parse of a `languages` list."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autopoiesis.formats.topic_trigger import TriggerParser, str_list

# Feature extractors look at the first FEATURE_SCAN_CHARS characters; the RE2 set scans
# the whole message (linear, about 1 ms per MB).
FEATURE_SCAN_CHARS = 256 * 1024
URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'`)\]]+", re.IGNORECASE)
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_LANG_CODE = re.compile(r"^[a-z]{2,3}\Z")


@dataclass(frozen=True)
class Message:
    """What a feature extractor sees: the text, the file paths of its tool calls, and the
    regex of the people of knowledge/people/ (None when there are none)."""

    text: str
    paths: Sequence[str] = ()
    people: re.Pattern[str] | None = None


def languages_parser(example: str, *, iso: bool) -> TriggerParser:
    """The parse of a `languages` list (ISO: each must be an ISO 639-1 code)."""

    def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
        if raw.get("languages") is None:
            return {}
        langs = str_list(raw["languages"])
        if langs is None:
            errors.append(f"{at}.languages: must be a list, like {example}.")
            return {}
        langs = [lang.strip().lower() for lang in langs]
        bad = [lang for lang in langs if not _LANG_CODE.match(lang)] if iso else []
        if bad:
            errors.append(
                f"{at}.languages: {', '.join(bad)} are not ISO 639-1 codes; "
                "write two-letter codes like de, fr, es."
            )
        return {"languages": tuple(langs)}

    return parse
