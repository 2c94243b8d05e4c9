"""lessons: "lesson learned", "next time", "the root cause was" -> MEMORY.md (Lessons Learned)."""

from __future__ import annotations

from typing import Any

from autopoiesis.core.paths import MEMORY_FILE
from autopoiesis.lifecycle.extractors.base import (
    LESSON_CUE,
    LESSON_PREFIX,
    Extractor,
    SourceTranscript,
    clean,
    long_words,
    reply_items,
    reply_validator,
)
from autopoiesis.lifecycle.writer import KnowledgeChange


def lessons_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for s in src.sentences:
        if s.text.endswith("?") or not LESSON_CUE.search(s.text):
            continue
        text = clean(s.text, LESSON_PREFIX if LESSON_PREFIX.match(s.text) else None)
        if len(long_words(text)) < 3:
            continue
        out.append(KnowledgeChange(MEMORY_FILE, "append", "Lessons Learned", text, src.provenance(s.at, key)))
    return out


def lessons_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    return [
        KnowledgeChange(MEMORY_FILE, "append", "Lessons Learned", clean(str(d["lesson"])),
                        src.provenance(src.locate(str(d["lesson"])), key))
        for d in reply_items(data, "lesson")
    ]


LESSONS = Extractor(
    "lessons", 1, "lessons learned -> MEMORY.md (Lessons Learned)", (MEMORY_FILE,), frozenset({"append"}),
    lessons_offline, lessons_llm, reply_validator("lesson"), "lessons.v1.md",
)

__all__ = ["LESSONS", "lessons_llm", "lessons_offline"]
