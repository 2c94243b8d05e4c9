"""facts: "remember that ...", "X runs on port N", "the endpoint for X is ..." ->
reference/TOPIC.md (Facts); and the dates of events, with their moves ("the cutover is
planned for June 3", "we moved the cutover to June 17", "the launch date is now March
3") -> reference/TOPIC.md (Dates), one live date per event (`#about:EVENT-date`).
TOPIC is the session's project.

Facts are what the user says, and what the agent observes (a port, a host, a date it
read); never an agent's acknowledgement. Relative dates are made absolute ("tomorrow
[9 May 2023]").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from autopoiesis.core.text import slugify
from autopoiesis.knowledge.changes import KnowledgeChange
from autopoiesis.knowledge.extractors import cues, prose
from autopoiesis.knowledge.extractors.base import (
    NAME_SLUG_LEN,
    Extractor,
    Sentence,
    SourceTranscript,
    checked_name,
    clean,
    item_action,
    long_words,
    reply_items,
    reply_validator,
)

# what somebody observed: where a thing is, what it runs on
_OBSERVED = (
    r"\b(?:is|are) (?:located|hosted|deployed|running|stored|kept) (?:at|on|in)\b"
    r"|\b(?:url|endpoint|port|host|hostname|address|version|deadline|budget|limit) (?:of|for) [\w "
    r".-]{2,40} (?:is|are)\b"
    r"|\bruns on\b|\blives (?:at|in)\b"
)
_FACT_CUE = re.compile(
    r"^(?:please\s+)?(?:remember|note(?! to self)|keep in mind|fyi|for the record|for "
    r"reference|good to know)\b(?:\s+that)?\s*[:,]?\s*|" + _OBSERVED,
    re.IGNORECASE,
)
_OBSERVATION = re.compile(_OBSERVED, re.IGNORECASE)
_FACT_PREFIX = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|fyi|for the record|for reference|good to "
    r"know)\b(?:\s+that)?\s*[:,]?\s*",
    re.IGNORECASE,
)


def facts_offline(
    src: SourceTranscript, key: str, admits: Callable[[Sentence], bool] | None = None
) -> list[KnowledgeChange]:
    """v2's facts; ADMITS, when given, is asked of every sentence first (v3's stricter
    reading of the agent)."""
    topic = src.project
    out = []
    for s in src.sentences:
        if (
            s.ack
            or s.question
            or (s.role == "agent" and not s.owned and cues.PROPOSAL.search(s.text))
            or (admits is not None and not admits(s))
        ):
            continue
        event = cues.event_date(s.text)
        if event is not None and not cues.OPEN_QUESTION.match(s.text):
            text = clean(cues.with_absolute_dates(s.text, s.at), _FACT_PREFIX)
            out.append(
                KnowledgeChange(
                    f"knowledge/reference/{topic}.md",
                    "append",
                    "Dates",
                    text,
                    src.provenance(s.at, key),
                    subject=f"{event[0]} date",
                )
            )
            continue
        if (
            not _FACT_CUE.search(s.text)
            or cues.LESSON_CUE.search(s.text)
            or cues.DECISION_CUE.search(s.text)
        ):
            continue  # a lesson or a decision has its own home
        text = clean(cues.with_absolute_dates(s.text, s.at), _FACT_PREFIX)
        if len(long_words(text)) < 3:
            continue
        out.append(
            KnowledgeChange(
                f"knowledge/reference/{topic}.md",
                "append",
                "Facts",
                text,
                src.provenance(s.at, key),
            )
        )
    return out


# What the agent says of such things in general ("is primarily a project-specific setup,
# typically handled in your nuxt.config.js") is its advice, and what it says works
# ("sessions are stored in the correct directory structure", "is now properly
# configured") is its verdict on a check: neither is something it observed.
_GENERAL_OR_VERDICT = re.compile(
    r"\b(?:typically|usually|generally|commonly|normally|in most cases|in general)\b"
    r"|\b(?:in|at|on|to) the (?:correct|proper|expected)\b"  # not "right": "on the right"
    r"|\b(?:correctly|properly|as expected|successfully)\b"
    # its verdict on its own work: "This fulfills the directive: code lives in ..."
    r"|^(?:this|that|which|it)\s+(?:now\s+)?(?:fulfils|fulfills|completes|satisfies|"
    r"addresses|resolves|meets|achieves)\b",
    re.IGNORECASE,
)
# One of the options an answer lists ("1. **Downgrade Node.js**: Use a version ..."): a
# proposal, whatever its wording.
_OPTION_ITEM = re.compile(r"^\s*(?:\d+[.)]\s*)?\*\*[^*\n]{1,80}\*\*\s*:")


def _v3_admits(s: Sentence) -> bool:
    """Whether sentence S may hold a v3 fact. The user's word always may. The agent's
    sentences give only what it observed, whether or not the user's next turn accepted
    what it proposed ("I suggest we accept the changes." -- "ok" confirms the proposal,
    not the verdicts around it): its "FYI" or "Note" only before an observation ("FYI the
    staging server runs on port 8443"), never before its advice to the user ("Remember to
    test the changes across browsers", "Note: never commit your secret key"); never its
    narration of its next step, nor an option it lists, nor what it says in general or of
    whether a thing works (_GENERAL_OR_VERDICT). Nobody's request is a fact ("here is the
    corrected page, please update the function": cues.REQUEST)."""
    if cues.REQUEST.search(s.text):
        return False
    if s.owned:
        return True
    reminder = _FACT_PREFIX.match(s.text)
    if reminder and not _OBSERVATION.search(s.text, reminder.end()):
        return False
    return not (
        cues.NARRATION.search(s.text)
        or _OPTION_ITEM.match(s.text)
        or _GENERAL_OR_VERDICT.search(s.text)
    )


def facts_v3_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """v3: the facts of v2 read from what somebody wrote (no pasted logs, forms or tool
    output), whole statements only ("The setting is located in" is none), filed under the
    session's project; of the agent's sentences only its observations (`_v3_admits`)."""
    prose_at = {(s.at, s.text) for s in src.prose_sentences}
    out = []
    for change in facts_offline(src, key, _v3_admits):
        whole = prose.without_list_announcement(change.content)
        if whole != change.content:  # the list it announced came after it
            change = replace(change, content=whole)
        said = [t for at, t in prose_at if at == change.provenance.at]
        if not said or not prose.is_statement(change.content):
            continue
        if not any(
            change.content.rstrip(".").lower()[:40] in prose_text.lower() for prose_text in said
        ):
            continue
        out.append(change)
    return out


def facts_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for i, d in enumerate(reply_items(data, "fact")):
        act = item_action(d, src)
        if act is None:
            continue
        topic = (
            slugify(checked_name(d.get("topic") or "general", "topic", i), NAME_SLUG_LEN)
            or "general"
        )
        fact = clean(str(d["fact"]))
        subject = str(d.get("subject") or "").strip() or None
        out.append(
            KnowledgeChange(
                f"knowledge/reference/{topic}.md",
                act[0],
                "Dates" if subject else "Facts",
                fact,
                src.provenance(src.locate(fact), key),
                target=act[1],
                subject=subject,
            )
        )
    return out


FACTS_V2 = Extractor(
    "facts",
    2,
    "reference facts and dates of events -> reference/TOPIC.md",
    ("knowledge/reference/*.md",),
    frozenset({"append", "supersede"}),
    facts_offline,
    facts_llm,
    reply_validator("fact", ("topic",)),
    "facts.v2.md",
)

FACTS = Extractor(
    "facts",
    3,
    "reference facts and dates of events -> reference/TOPIC.md; v3: from what somebody wrote, "
    "whole statements only, of the agent's words only what it observed",
    ("knowledge/reference/*.md",),
    frozenset({"append", "supersede"}),
    facts_v3_offline,
    facts_llm,
    reply_validator("fact", ("topic",)),
    "facts.v2.md",
)

__all__ = ["FACTS_V2", "FACTS", "facts_llm", "facts_offline", "facts_v3_offline"]
