"""facts: "remember that ...", "X runs on port N", "the endpoint for X is ..." ->
reference/TOPIC.md (Facts), TOPIC being the session's project."""

from __future__ import annotations

import re
from typing import Any

from autopoiesis.core.text import slugify
from autopoiesis.lifecycle.extractors.base import (
    NAME_SLUG_LEN,
    Extractor,
    SourceTranscript,
    checked_name,
    clean,
    detect_project,
    long_words,
    reply_items,
    reply_validator,
)
from autopoiesis.lifecycle.writer import KnowledgeChange

_FACT_CUE = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|fyi|for the record|for reference|good to know)\b(?:\s+that)?\s*[:,]?\s*"
    r"|\b(?:is|are) (?:located|hosted|deployed|running|stored|kept) (?:at|on|in)\b"
    r"|\b(?:url|endpoint|port|host|hostname|address|version|deadline|budget|limit) (?:of|for) [\w .-]{2,40} (?:is|are)\b"
    r"|\bruns on\b|\blives (?:at|in)\b",
    re.IGNORECASE,
)
_FACT_PREFIX = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|fyi|for the record|for reference|good to know)\b(?:\s+that)?\s*[:,]?\s*",
    re.IGNORECASE,
)


def facts_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    topic = detect_project(src)
    out = []
    for s in src.sentences:
        if s.text.endswith("?") or not _FACT_CUE.search(s.text):
            continue
        text = clean(s.text, _FACT_PREFIX)
        if len(long_words(text)) < 3:
            continue
        out.append(KnowledgeChange(f"knowledge/reference/{topic}.md", "append", "Facts", text, src.provenance(s.at, key)))
    return out


def facts_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for i, d in enumerate(reply_items(data, "fact")):
        topic = slugify(checked_name(d.get("topic") or "general", "topic", i), NAME_SLUG_LEN) or "general"
        fact = clean(str(d["fact"]))
        out.append(KnowledgeChange(f"knowledge/reference/{topic}.md", "append", "Facts", fact, src.provenance(src.locate(fact), key)))
    return out


FACTS = Extractor(
    "facts", 1, "reference facts -> reference/TOPIC.md", ("knowledge/reference/*.md",), frozenset({"append"}),
    facts_offline, facts_llm, reply_validator("fact", ("topic",)), "facts.v1.md",
)

__all__ = ["FACTS", "facts_llm", "facts_offline"]
