"""decisions: "we decided ...", "switched from X to Y" -> projects/SLUG/context.md (Key
Decisions) and a line in projects/_active.md, or MEMORY.md when no project is named.
A decision that replaces an earlier one ("from X to Y", "instead of X") supersedes it."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from autopoiesis.core.paths import ACTIVE_PROJECTS_FILE, MEMORY_FILE
from autopoiesis.core.text import slugify
from autopoiesis.lifecycle.extractors.base import (
    DECISION_CUE,
    DECISION_PREFIX,
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

_SUPERSEDE_CUE = re.compile(
    r"\b(?:switch(?:ed|ing)?|migrat\w*|mov(?:e|ed|ing)|chang\w*) from (?:the\s+)?(?P<old>[\w.+#-]+(?: [\w.+#-]+)?)\s+to\b"
    r"|\binstead of (?:the\s+)?(?P<old2>[\w.+#-]+)|\bno longer (?:use|using|uses) (?:the\s+)?(?P<old3>[\w.+#-]+)",
    re.IGNORECASE,
)


def _supersede_target(sentence: str) -> str | None:
    m = _SUPERSEDE_CUE.search(sentence)
    if not m:
        return None
    return m.group("old") or m.group("old2") or m.group("old3")


def _decision_change(src: SourceTranscript, key: str, text: str, context: str, project: str, at: datetime,
                     target: str | None) -> list[KnowledgeChange]:
    content = text + (f" — {context}" if context and context.lower() not in text.lower() else "")
    prov = src.provenance(at, key)
    action = "supersede" if target else "append"
    if project and project != "general":
        changes = [KnowledgeChange(f"knowledge/projects/{project}/context.md", action, "Key Decisions", content, prov, target=target)]
        changes.append(KnowledgeChange(ACTIVE_PROJECTS_FILE, "append", "Active Projects", f"**{project}** — {text}",
                                       prov, key=f"**{project}**", dated=False, section_level=1))
        return changes
    return [KnowledgeChange(MEMORY_FILE, action, "Key Decisions", content, prov, target=target)]


def decisions_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    project = detect_project(src)
    out: list[KnowledgeChange] = []
    for s in src.sentences:
        if s.text.endswith("?") or not DECISION_CUE.search(s.text):
            continue
        text = clean(s.text, DECISION_PREFIX)
        if len(long_words(text)) < 3:
            continue
        out += _decision_change(src, key, text, "", project, s.at, _supersede_target(s.text))
    return out


def decisions_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for i, d in enumerate(reply_items(data, "decision")):
        project = slugify(checked_name(d.get("project") or "general", "project", i), NAME_SLUG_LEN) or "general"
        decision = clean(str(d["decision"]))
        context = " ".join(str(d.get("context") or "").split()).strip(" .")[:200]
        out += _decision_change(src, key, decision, context, project, src.locate(decision), _supersede_target(decision))
    return out


DECISIONS = Extractor(
    "decisions", 1, "decisions -> projects/SLUG/context.md (Key Decisions), or MEMORY.md for general ones",
    ("knowledge/projects/*/context.md", ACTIVE_PROJECTS_FILE, MEMORY_FILE), frozenset({"append", "supersede"}),
    decisions_offline, decisions_llm, reply_validator("decision", ("project",)), "decisions.v1.md",
)

__all__ = ["DECISIONS", "decisions_llm", "decisions_offline"]
