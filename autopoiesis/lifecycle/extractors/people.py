"""people: a capitalised full name next to a cue ("Maria Lopez owns ...", "ask Tom
Becker"), and the named speakers of multi-party sessions -> people/SLUG.md (Context) and
one line per person in people/_index.md."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from autopoiesis.core.clock import utc
from autopoiesis.core.paths import PEOPLE_INDEX_FILE
from autopoiesis.core.text import slugify
from autopoiesis.lifecycle.extractors.base import (
    NAME_SLUG_LEN,
    Extractor,
    SourceTranscript,
    checked_name,
    clean,
    reply_items,
    reply_validator,
)
from autopoiesis.lifecycle.writer import KnowledgeChange

_NAME = re.compile(r"\b([A-Z][a-z]+(?:-[A-Z][a-z]+)?(?: (?:van |de |von )?[A-Z][a-z]+(?:-[A-Z][a-z]+)?){1,2})\b")
_NOT_NAME_WORDS = set(
    """The This That These Those There Here When Where What Which Who Why How And But Or If Then So Also
    Let Lets Good Great Thanks Thank Please Okay Yes No Not All Any Some Each Every Our Your Their His Her
    Its We You They She He I My Me Us It Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
    February March April May June July August September October November December Today Tomorrow Yesterday
    Key Decisions Lessons Learned Active Context Core Memory Pull Request Merge Production Release Error
    Errors Procedure Project Projects Team Python Git GitHub Docker Kubernetes Linux Mac Windows SQLite
    Markdown Google Amazon Microsoft Apple Slack Email Chrome Firefox Agreed Sure Done Next Last First New
    Old Open Close Run Use After Before During Since Until Rolled Roll Back Lesson Note Always Never Two
    One Three Four Five Ask Tell Ping Maybe Hi Hello Dear Best Regards Sincerely Dr Mr Mrs Ms Prof""".split()
)
_PERSON_CUE = re.compile(
    r"\b(?:owns|own|prefers|prefer|is|was|works|worked|leads|manages|maintains|said|says|asked|asks|wants|likes|runs|"
    r"handles|joined|reviewed|reviews|will|wrote|is responsible|reports to|from)\b|\b(?:ask|tell|ping|email|call|with|cc|by|met)\s+$",
    re.IGNORECASE,
)


def _names_in(sentence: str) -> list[tuple[str, int, int]]:
    out = []
    for m in _NAME.finditer(sentence):
        parts = re.split(r"[ -]", m.group(1))
        if any(w in _NOT_NAME_WORDS for w in parts):
            continue
        out.append((m.group(1), m.start(), m.end()))
    return out


def people_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for s in src.sentences:
        for name, start, end in _names_in(s.text):
            after, before = s.text[end:end + 40], s.text[max(0, start - 12):start]
            if not (_PERSON_CUE.match(after.strip() + " ") or _PERSON_CUE.search(before)):
                continue
            out += _person_changes(src, key, name, clean(s.text), s.at)
    for turn in src.transcript.turns:  # named speakers of multi-party sessions
        if turn.name and _names_in(turn.name):
            out += _person_changes(src, key, turn.name, f"Took part in “{src.transcript.title}”", utc(turn.time))
    return out


def _person_changes(src: SourceTranscript, key: str, name: str, fact: str, at: datetime) -> list[KnowledgeChange]:
    s = slugify(name, NAME_SLUG_LEN)
    if not s:
        return []
    prov = src.provenance(at, key)
    return [
        KnowledgeChange(f"knowledge/people/{s}.md", "append", "Context", fact, prov),
        KnowledgeChange(PEOPLE_INDEX_FILE, "append", "People", f"**{name}** — {fact}", prov, key=f"**{name.lower()}**",
                        dated=False, section_level=1),
    ]


def people_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for i, d in enumerate(reply_items(data, "name")):
        name = checked_name(d["name"], "name", i)
        fact = clean(str(d.get("fact") or "")) or f"Mentioned in “{src.transcript.title}”"
        out += _person_changes(src, key, name, fact, src.locate(f"{name} {fact}"))
    return out


PEOPLE = Extractor(
    "people", 1, "people and what was said about them -> people/SLUG.md and people/_index.md",
    ("knowledge/people/*.md",), frozenset({"append"}), people_offline, people_llm,
    reply_validator("name", ("name",)), "people.v1.md",
)

__all__ = ["PEOPLE", "people_llm", "people_offline"]
