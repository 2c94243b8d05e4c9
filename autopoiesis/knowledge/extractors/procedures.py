"""procedures: how to do something, step by step -> procedures/SLUG.md (Steps).

Three shapes, said or confirmed by the user:

* "procedure for X: a, b, then c" (also process / steps / checklist / runbook / recipe / how to);
* an intro line ("How to X:", "Steps for X:") followed by a numbered list;
* a sequence told in prose, without the word: "To run the integration tests locally,
  first start the stack, then run the migrations, and finally run pytest" (also "In
  order to X you need to ...", "If you want to X: start by ..., next ..."; the steps
  may run over the next sentences of the turn: "First, A. Then B. Finally, C.").

One live version of a procedure: steps told again differently supersede the old ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from autopoiesis.core.clock import utc
from autopoiesis.core.text import slugify, split_sentences
from autopoiesis.formats import transcript as tf
from autopoiesis.knowledge.changes import KnowledgeChange
from autopoiesis.knowledge.extractors import cues, prose
from autopoiesis.knowledge.extractors.base import (
    NAME_SLUG_LEN,
    Extractor,
    SourceTranscript,
    checked_name,
    clean,
    item_action,
    long_words,
    reply_items,
    reply_validator,
)

_PROC_INLINE = re.compile(
    r"\b(?:procedure|process|steps|checklist|runbook|recipe|how)\s+(?:for|to)\s+(?P<what>[^:.]{3,60}?)\s*:\s*(?P<steps>\S.+)",
    re.IGNORECASE,
)
_PROC_INTRO = re.compile(
    r"\b(?:procedure|process|steps|checklist|runbook|how "
    r"to)\b(?:\s+(?:for|to))?\s*(?P<what>[^:]{0,60}):\s*$",
    re.IGNORECASE,
)
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.+)$")
_NAME_STOP = re.compile(r"^(?:the|a|an)\s+|\s+(?:properly|correctly|safely)$", re.IGNORECASE)


def _counts(src: SourceTranscript, turn: tf.Turn) -> bool:
    """Whether TURN's procedures count: the user's (or a named participant's), or the
    agent's when the user's next turn accepts them."""
    if turn.role == "user" or turn.name is not None:
        return True
    at = utc(turn.time)
    return any(s.confirmed and s.at == at and s.role == turn.role for s in src.sentences)


def _told_in_prose(sentences: list[str]) -> list[tuple[str, list[str]]]:
    """(what, steps) of each "To X, first A, then B, finally C" of a turn's sentences."""
    out = []
    for i, s in enumerate(sentences):
        m = cues.PROCEDURE_INTRO.match(s)
        if not m:
            continue
        rest = m["rest"]
        for nxt in sentences[i + 1 :]:  # "First, A. Then B. Finally, C."
            if not cues.SEQUENCE_START.match(nxt):
                break
            rest = f"{rest.rstrip('. ')}, {nxt}"
        steps = cues.procedure_steps(rest)
        if steps:
            out.append((m["what"], steps))
    return out


def procedures_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    return _procedures(src, key, lambda text: text)


def _procedures(
    src: SourceTranscript, key: str, read: Callable[[str], str]
) -> list[KnowledgeChange]:
    """The procedures of SRC's turns that count: told in a sentence ("To X, first A, then
    B"), found in what READ keeps of each text; or listed, numbered, under a title that
    names them ("Steps to release:"), wherever the list stands (a plan's steps in a code
    block too: a list under its title is somebody's, a log's lines are not one)."""
    out: list[KnowledgeChange] = []
    for turn in src.transcript.turns:
        if turn.role == "system" or not _counts(src, turn):
            continue
        at = utc(turn.time)
        for item in turn.items:
            if not isinstance(item, tf.Text):
                continue
            sentences = split_sentences(read(item.content))
            for s in sentences:
                m = _PROC_INLINE.search(s)
                if m:
                    out.append(_procedure_change(src, key, m["what"], m["steps"], at))
            for what, steps in _told_in_prose(sentences):
                out.append(_procedure_change(src, key, what, "; ".join(steps), at))
            lines = item.content.split("\n")
            for i, line in enumerate(lines):
                m = _PROC_INTRO.search(line)
                if not m:
                    continue
                numbered: list[str] = []
                for nxt in lines[i + 1 :]:
                    if not nxt.strip() and not numbered:
                        continue
                    n = _NUMBERED.match(nxt)
                    if not n:
                        break
                    numbered.append(n.group(1).strip())
                if len(numbered) >= 2:
                    what = m["what"].strip() or src.transcript.title
                    out.append(_procedure_change(src, key, what, "; ".join(numbered), at))
    return out


def _procedure_change(
    src: SourceTranscript, key: str, what: str, steps: str, at: datetime
) -> KnowledgeChange:
    name = _NAME_STOP.sub("", what.strip())
    slug = slugify(name, NAME_SLUG_LEN) or "general"
    return KnowledgeChange(
        f"knowledge/procedures/{slug}.md",
        "append",
        "Steps",
        clean(steps.rstrip(".")) + ".",
        src.provenance(at, key),
        subject=f"how to {name}",
    )


def procedures_v3_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """v3: the procedures of v2 told in what somebody wrote (`prose.prose_of`: no fenced
    code, pasted forms or logs: a test run's output said "To write ninety, ..."),
    and only those whose name says what they do ("proceed-now" does not, nor a clause or
    a pointer: `_NOT_A_NAME`) and whose steps are words, not links or code."""
    out = []
    for change in _procedures(src, key, prose.prose_of):
        name = (change.subject or "").removeprefix("how to ").strip()
        steps = [x.strip() for x in change.content.rstrip(".").split(";")]
        if (
            not long_words(name)
            or set(name.lower().split()) <= _VAGUE
            or _NOT_A_NAME.match(name)
            or not prose.is_statement(f"How to {name}.")
            or prose.is_heading(name)
            or any(len(long_words(x)) < 2 or prose.code_share(x) > 0.3 or "```" in x for x in steps)
            or re.search(r"https?://|@\S", change.content)
            or _FIRST_PERSON_PLAN.search(change.content)
            or not _said_in_prose(src, change)
        ):
            continue
        out.append(change)
    return out


# Steps somebody says they will take next ("To understand this better, I'll first read
# thumbfind.py, then I'll read the notes"): what one session did once, not how a thing is
# done. ("we need to ..." and "let's ..." stay: how a user tells a team's procedure.)
_FIRST_PERSON_PLAN = re.compile(r"\b(?:i'?ll|i will|let me|i'?m going to|i am going to)\b", re.I)
# a procedure's name that says nothing of what it does ("proceed-now", "continue")
_VAGUE = {
    "proceed",
    "continue",
    "now",
    "go",
    "start",
    "begin",
    "do",
    "it",
    "this",
    "that",
    "next",
    "then",
    "again",
    "on",
    "ahead",
    "fix",
    "implement",
    "the",
    "plan",
    "run",
    "use",
}


# What follows "steps"/"process" before a colon that names no task: a clause ("... the
# steps are performed in order:", "my planning process. I didn't properly distinguish
# between:", "These failures are in:") or a pointer ("the steps from the workflow for task
# #004:", "Next steps (per workflow and rules):").
_NOT_A_NAME = re.compile(
    r"^(?:[^\w\s]|(?:are|is|was|were|be|been|from|per|these|those|this|that|it|i|we|you|they|"
    r"he|she|my|our|your|their)\b)|\.(?:\s|$)|[()]",
    re.IGNORECASE,
)


def _said_in_prose(src: SourceTranscript, change: KnowledgeChange) -> bool:
    """Whether the turn CHANGE comes from holds prose (not only a pasted document)."""
    at = change.provenance.at
    return any(s.at == at for s in src.prose_sentences)


def procedures_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for i, d in enumerate(reply_items(data, "name")):
        if item_action(d, src) is None:
            continue
        name = checked_name(d["name"], "name", i)
        steps = d.get("steps") or ""
        if isinstance(steps, list):
            steps = "; ".join(str(x) for x in steps)
        if str(steps).strip():
            out.append(_procedure_change(src, key, name, str(steps), src.locate(f"{name} {steps}")))
    return out


PROCEDURES_V2 = Extractor(
    "procedures",
    2,
    "how-to steps -> procedures/SLUG.md",
    ("knowledge/procedures/*.md",),
    frozenset({"append"}),
    procedures_offline,
    procedures_llm,
    reply_validator("name", ("name",)),
    "procedures.v2.md",
)

PROCEDURES = Extractor(
    "procedures",
    3,
    "how-to steps -> procedures/SLUG.md; v3: from what somebody wrote, named by what they do",
    ("knowledge/procedures/*.md",),
    frozenset({"append"}),
    procedures_v3_offline,
    procedures_llm,
    reply_validator("name", ("name",)),
    "procedures.v2.md",
)

__all__ = [
    "PROCEDURES_V2",
    "PROCEDURES",
    "procedures_llm",
    "procedures_offline",
    "procedures_v3_offline",
]
