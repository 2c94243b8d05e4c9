"""procedures: "procedure for X: a, b, then c" and "how to X:" followed by a numbered
list -> procedures/SLUG.md (Steps)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from autopoiesis.core.clock import utc
from autopoiesis.core.text import slugify, split_sentences
from autopoiesis.formats import transcript as tf
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

_PROC_INLINE = re.compile(
    r"\b(?:procedure|process|steps|checklist|runbook|recipe|how)\s+(?:for|to)\s+(?P<what>[^:.]{3,60}?)\s*:\s*(?P<steps>\S.+)",
    re.IGNORECASE,
)
_PROC_INTRO = re.compile(r"\b(?:procedure|process|steps|checklist|runbook|how to)\b(?:\s+(?:for|to))?\s*(?P<what>[^:]{0,60}):\s*$", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.+)$")


def procedures_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for turn in src.transcript.turns:
        for item in turn.items:
            if not isinstance(item, tf.Text):
                continue
            at = utc(turn.time)
            for s in split_sentences(item.content):
                m = _PROC_INLINE.search(s)
                if m:
                    out.append(_procedure_change(src, key, m["what"], m["steps"], at))
            lines = item.content.split("\n")
            for i, line in enumerate(lines):
                m = _PROC_INTRO.search(line)
                if not m:
                    continue
                steps: list[str] = []
                for nxt in lines[i + 1:]:
                    if not nxt.strip() and not steps:
                        continue
                    n = _NUMBERED.match(nxt)
                    if not n:
                        break
                    steps.append(n.group(1).strip())
                if len(steps) >= 2:
                    what = m["what"].strip() or src.transcript.title
                    out.append(_procedure_change(src, key, what, "; ".join(steps), at))
    return out


def _procedure_change(src: SourceTranscript, key: str, what: str, steps: str, at: datetime) -> KnowledgeChange:
    what = re.sub(r"^(?:the|a|an)\s+", "", what.strip(), flags=re.IGNORECASE)
    return KnowledgeChange(f"knowledge/procedures/{slugify(what, NAME_SLUG_LEN) or 'general'}.md", "append", "Steps",
                           clean(steps.rstrip(".")) + ".", src.provenance(at, key))


def procedures_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for i, d in enumerate(reply_items(data, "name")):
        name = checked_name(d["name"], "name", i)
        steps = d.get("steps") or ""
        if isinstance(steps, list):
            steps = "; ".join(str(x) for x in steps)
        if str(steps).strip():
            out.append(_procedure_change(src, key, name, str(steps), src.locate(f"{name} {steps}")))
    return out


PROCEDURES = Extractor(
    "procedures", 1, "how-to steps -> procedures/SLUG.md", ("knowledge/procedures/*.md",),
    frozenset({"append"}), procedures_offline, procedures_llm, reply_validator("name", ("name",)), "procedures.v1.md",
)

__all__ = ["PROCEDURES", "procedures_llm", "procedures_offline"]
