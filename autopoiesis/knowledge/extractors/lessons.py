"""lessons: what the user learned or wants remembered next time ("lesson learned", "note
to self: never ... again", "next time ...", "we should have ...") -> MEMORY.md (Lessons
Learned); and the user's own preferences ("I prefer short answers", "please keep
replies brief", "from now on, use bullet points") -> MEMORY.md (Preferences), one live
preference per subject (length, format, language, name, tone): a new one supersedes it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from autopoiesis.core.clock import utc
from autopoiesis.core.paths import MEMORY_FILE, project_context_file
from autopoiesis.formats import transcript as tf
from autopoiesis.formats.knowledge import normalize_fact
from autopoiesis.knowledge.changes import KnowledgeChange
from autopoiesis.knowledge.extractors import cues, prose
from autopoiesis.knowledge.extractors.base import (
    Extractor,
    Sentence,
    SourceTranscript,
    clean,
    item_action,
    long_words,
    reply_items,
    reply_validator,
)

SECTION_PREFERENCES = "Preferences"
SECTION_LESSONS = "Lessons Learned"
SECTION_CONVENTIONS = "Conventions"  # a project's own rules, in projects/SLUG/context.md


def preference_in(s: Sentence) -> tuple[str, str | None] | None:
    """(text, subject) of a preference the agent's user states; None otherwise. Named
    participants of a group chat are people, not the agent's user: their likes are
    people facts."""
    if not (s.counts and s.by_user) or s.question or not cues.PREFERENCE_CUE.search(s.text):
        return None
    text = clean(s.text)
    if len(long_words(text)) < 2:
        return None
    subject = cues.preference_subject(s.text)
    return text, (f"preference {subject}" if subject else None)


def lesson_in(s: Sentence) -> str | None:
    """The lesson sentence S states, if it counts as one: the agent's user said it or
    confirmed it. (What a named participant of a group chat learned is a fact about
    them: the people extractor's.)"""
    if (
        not s.counts
        or not (s.by_user or s.confirmed)
        or s.question
        or not cues.LESSON_CUE.search(s.text)
    ):
        return None
    if preference_in(s) is not None:
        return None
    text = clean(s.text, cues.LESSON_PREFIX if cues.LESSON_PREFIX.match(s.text) else None)
    return text if len(long_words(text)) >= 3 else None


def lesson_changes(src: SourceTranscript, key: str, s: Sentence) -> list[KnowledgeChange]:
    """The canonical entry of what S teaches or prefers (none when it states neither)."""
    pref = preference_in(s)
    if pref is not None:
        return [
            KnowledgeChange(
                MEMORY_FILE,
                "append",
                SECTION_PREFERENCES,
                pref[0],
                src.provenance(s.at, key),
                subject=pref[1],
            )
        ]
    lesson = lesson_in(s)
    if lesson is not None:
        return [
            KnowledgeChange(
                MEMORY_FILE, "append", SECTION_LESSONS, lesson, src.provenance(s.at, key)
            )
        ]
    return []


def lessons_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    return [c for s in src.sentences for c in lesson_changes(src, key, s)]


def lessons_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for d in reply_items(data, "lesson"):
        act = item_action(d, src)
        if act is None:
            continue
        text = clean(str(d["lesson"]))
        kind = str(d.get("kind") or "lesson").strip().lower()
        section = SECTION_PREFERENCES if kind.startswith("pref") else SECTION_LESSONS
        subject = cues.preference_subject(text) if section == SECTION_PREFERENCES else None
        out.append(
            KnowledgeChange(
                MEMORY_FILE,
                act[0],
                section,
                text,
                src.provenance(src.locate(text), key),
                target=act[1],
                subject=f"preference {subject}" if subject else None,
            )
        )
    return out


def preference_v3_in(s: Sentence) -> tuple[str, str | None] | None:
    """preference_in for v3: also the rules a developer gives about how to work ("use bun,
    not node", "never mock in production", "don't touch the migrations") and their
    corrections of the agent ("you're editing the main workspace, not the session":
    `cues.is_correction`), and a rule said with weight ("no test scripts ever", "I want
    ONE FILE that WORKS": `cues.is_emphatic_rule`); whole statements only."""
    if not (s.counts and s.by_user) or s.question or not prose.is_statement(s.text):
        return None
    found = preference_in(s)
    if found is not None:
        # a chat's request cue ("please keep", "i want you to") in a coding session is
        # mostly an order for the change at hand; "I prefer ..." says a preference by form
        at_hand = cues.REQUEST_TO_AGENT.search(s.text) and cues.is_order_at_hand(s.text)
        return None if at_hand else found
    if len(s.text.split()) > 30:
        return None
    rule = cues.CODING_PREFERENCE.match(s.text) and not (
        cues.OPEN_QUESTION.match(s.text) or cues.ONE_OFF.search(s.text)
    )
    if not (
        rule
        or cues.is_correction(s.text)
        or cues.is_emphatic_rule(s.text)
        or cues.is_team_rule(s.text)
    ):
        return None
    text = clean(s.text)
    return (text, None) if len(long_words(text)) >= 2 else None


def preference_home(src: SourceTranscript, text: str) -> tuple[str, str]:
    """(file, section) of a v3 preference TEXT said in SRC: the project's Conventions when
    it says it holds for this repo or project and the session has one, else MEMORY.md's
    Preferences (the user's, everywhere)."""
    if cues.PROJECT_SCOPE.search(text) and src.project != "general":
        return project_context_file(src.project), SECTION_CONVENTIONS
    return MEMORY_FILE, SECTION_PREFERENCES


def lessons_v3_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """lessons_llm for v3: a preference goes where `preference_home` says."""
    out = []
    for change in lessons_llm(data, src, key):
        if change.section == SECTION_PREFERENCES:
            path, section = preference_home(src, change.content)
            change = replace(change, path=path, section=section)
        out.append(change)
    return out


def lesson_v3_changes(src: SourceTranscript, key: str, s: Sentence) -> list[KnowledgeChange]:
    """lesson_changes for v3: preferences as `preference_v3_in` finds them, lessons as
    whole statements. A preference said to hold for this repo or project ("we use uv, not
    pip, in this repo") is that project's convention: projects/SLUG/context.md
    (Conventions), where a prompt in another repository does not get it."""
    pref = preference_v3_in(s)
    if pref is not None:
        path, section = preference_home(src, s.text)
        return [
            KnowledgeChange(
                path, "append", section, pref[0], src.provenance(s.at, key), subject=pref[1]
            )
        ]
    lesson = lesson_in(s) if prose.is_statement(s.text) else None
    if lesson is not None and (
        (cues.MAKE_SURE.match(s.text) and not cues.STANDING.search(s.text))
        or cues.BACK_REFERENCE.search(s.text)
    ):
        lesson = None  # an order for the task at hand, or a rule said the sentence before
    if lesson is not None and prose.is_statement(lesson):
        return [
            KnowledgeChange(
                MEMORY_FILE, "append", SECTION_LESSONS, lesson, src.provenance(s.at, key)
            )
        ]
    return []


# what a rule request without a rule of its own is about ("add a rule providing guidance
# on how to write PR descriptions"): the topic its listed rules are said of
_RULE_TOPIC = re.compile(
    r"\b(?:on|for|about|regarding|when)\s+(?P<topic>(?!(?:it|this|that|them)\b)[^.:;!?]{3,60})$",
    re.IGNORECASE,
)


def _requested_rules(text: str) -> list[tuple[str | None, str]]:
    """(topic, rule) of each rule the user's message TEXT asks for (`cues.RULE_REQUEST`):
    what a request says the rule is (no topic), or each item of the list after a request
    that says none, with the topic that request names. Whole statements of three long
    words or more only."""
    lines = [re.sub(r"@\S+", "", line).strip() for line in prose.prose_of(text).split("\n")]
    out = []
    for n, line in enumerate(lines):
        m = cues.RULE_REQUEST.match(line)
        if m is None:
            continue
        rules = [m["body"] or m["listed"] or ""]
        topic = None
        if not m["body"]:
            about = _RULE_TOPIC.search(m["rest"] or "")
            topic = about["topic"].strip() if about else None
            for later in lines[n + 1 :]:
                listed = cues.LIST_ITEM.match(later)
                if listed is None and later:
                    break  # the list, if any, ended
                rules.append(listed["item"] if listed else "")
        out += [
            (topic, rule)
            for rule in rules
            if len(long_words(rule)) >= 3
            and not rule.rstrip().endswith("?")
            and prose.is_statement(rule)
        ]
    return out


def rule_request_changes(
    src: SourceTranscript, key: str, known: frozenset[str] = frozenset()
) -> list[KnowledgeChange]:
    """The rules the user asked the agent to keep (`_requested_rules`: "create a rule that
    ...", or the points of "add a rule providing guidance on how to write PR descriptions"),
    filed as a preference said in the session (`preference_home`); a rule whose words are
    in KNOWN (`normalize_fact`), found already, is left out. No subject: a rule of how to
    code is no answer-length or format preference that a later one replaces (as with
    `preference_v3_in`'s)."""
    out = []
    for turn in src.transcript.turns:
        if turn.role != "user" or turn.name is not None:
            continue
        for item in turn.items:
            if not isinstance(item, tf.Text) or prose.looks_pasted(item.content):
                continue
            for topic, rule in _requested_rules(item.content):
                if normalize_fact(clean(rule)) in known:
                    continue
                text = clean(f"{topic}: {rule}" if topic else rule)
                path, section = preference_home(src, text)
                at = src.provenance(utc(turn.time), key)
                out.append(KnowledgeChange(path, "append", section, text, at))
    return out


def lessons_v3_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    said = [c for s in src.prose_sentences for c in lesson_v3_changes(src, key, s)]
    return said + rule_request_changes(src, key, frozenset(normalize_fact(c.content) for c in said))


LESSONS_V2 = Extractor(
    "lessons",
    2,
    "lessons learned and the user's preferences -> MEMORY.md (Lessons Learned, Preferences)",
    (MEMORY_FILE,),
    frozenset({"append", "supersede"}),
    lessons_offline,
    lessons_llm,
    reply_validator("lesson"),
    "lessons.v2.md",
)

__all__ = [
    "LESSONS_V2",
    "SECTION_CONVENTIONS",
    "SECTION_LESSONS",
    "SECTION_PREFERENCES",
    "lesson_changes",
    "lesson_in",
    "lessons_llm",
    "lessons_offline",
    "preference_in",
]

LESSONS = Extractor(
    "lessons",
    3,
    "lessons learned and the user's preferences (also how to work in code: \"use bun, not "
    "node\") -> MEMORY.md (Lessons Learned, Preferences), or the project's Conventions when "
    'said of "this repo" or "everywhere" in it; v3: only what somebody wrote',
    (MEMORY_FILE, "knowledge/projects/*/context.md"),
    frozenset({"append", "supersede"}),
    lessons_v3_offline,
    lessons_v3_llm,
    reply_validator("lesson"),
    "lessons.v2.md",
)
__all__ += [
    "LESSONS",
    "lesson_v3_changes",
    "lessons_v3_llm",
    "lessons_v3_offline",
    "preference_home",
    "preference_v3_in",
]
