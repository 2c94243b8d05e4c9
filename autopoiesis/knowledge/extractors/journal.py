"""journal: an extractive summary of the session (what was asked, up to three decisions,
lessons or preferences, quoted) -> journal/YYYY-MM-DD.md under a heading per topic.

A journal is dated history: it is never superseded. Its "Decided:" / "Lesson:" /
"Preference:" lines restate a canonical entry (the decisions or lessons extractor's) and
carry that entry's id, so the weekly rollup can tell whether the fact still stands; and
they take only what counts — the user's words or what the user confirmed, never the
agent's "Understood, ..."."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from autopoiesis.core.clock import utc
from autopoiesis.core.text import (
    interruption_notice,
    said_by_the_harness,
    slash_command,
    slugify,
)
from autopoiesis.formats import transcript as tf
from autopoiesis.knowledge.changes import KnowledgeChange, entry_id_for
from autopoiesis.knowledge.extractors import cues, prose
from autopoiesis.knowledge.extractors.base import (
    NAME_SLUG_LEN,
    Extractor,
    Sentence,
    SourceTranscript,
    checked_name,
    clean,
    long_words,
    reply_items,
    reply_validator,
)
from autopoiesis.knowledge.extractors.coding import names_a_task, request_of, session_outcome
from autopoiesis.knowledge.extractors.decisions import (
    DECISIONS,
    DECISIONS_V2,
    decision_changes,
    decision_in,
    decision_v3_in,
)
from autopoiesis.knowledge.extractors.lessons import (
    LESSONS,
    LESSONS_V2,
    SECTION_LESSONS,
    SECTION_PREFERENCES,
    lesson_changes,
    lesson_v3_changes,
)


def journal_path(src: SourceTranscript) -> str:
    return f"knowledge/journal/{src.started.strftime('%Y-%m-%d')}.md"


def journal_topic(src: SourceTranscript, project: str) -> str:
    """The heading a session is summarised under: its project, else its first tag or
    channel, else "general"."""
    if project != "general":
        return project
    meta = src.transcript.meta
    for cand in (*meta.tags, meta.channel or ""):
        slug = slugify(cand, NAME_SLUG_LEN) if cand else ""
        if slug:
            return slug
    return "general"


def journal_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """An extractive session summary: what was asked, what was decided or learned."""
    path = journal_path(src)
    topic = journal_topic(src, src.project)
    first_user = next((s for s in src.sentences if s.role == "user"), None) or (
        src.sentences[0] if src.sentences else None
    )
    t = src.transcript
    tools = sum(isinstance(i, tf.ToolCall) for turn in t.turns for i in turn.items)
    asked = ""
    if first_user is not None:  # the opening request, a sentence or two of it
        same = [
            s.text for s in src.sentences if s.at == first_user.at and s.role == first_user.role
        ]
        for part in same:
            asked = f"{asked} {part}".strip()
            if len(asked) >= 60:
                break
    summary = (f"{t.meta.topic}: " if t.meta.topic else "") + (
        clean(asked, limit=160) if asked else t.title
    )
    if (
        t.meta.part > 1
    ):  # the session went on in a later import: this is its next part, not a new session
        summary = f"Continued (part {t.meta.part}): {summary}"
    summary += f" ({len(t.turns)} turns" + (f", {tools} tool calls)" if tools else ")")

    def bullet(text: str, at: datetime) -> KnowledgeChange:
        return KnowledgeChange(
            path, "append", topic, text, src.provenance(at, key), dated=False, section_level=3
        )

    out = [bullet(summary, first_user.at if first_user else src.started)]
    project = src.project
    picked = 0
    for s in src.sentences:
        if picked >= 3:
            break
        for canonical in _canonical_changes(src, s, project):
            label = {SECTION_LESSONS: "Lesson", SECTION_PREFERENCES: "Preference"}.get(
                canonical.section, "Decided"
            )
            out.append(
                KnowledgeChange(
                    path,
                    "append",
                    topic,
                    f"{label}: {clean(canonical.content, limit=200)}",
                    src.provenance(s.at, key),
                    dated=False,
                    section_level=3,
                    entry_id=entry_id_for(canonical),
                )
            )
            picked += 1
            break
    return out


def _canonical_changes(src: SourceTranscript, s: Sentence, project: str) -> list[KnowledgeChange]:
    """The canonical entries the decisions and lessons extractors make of S (their ids are
    what the journal's lines carry)."""
    decision = decision_in(s)
    if decision is not None:
        return decision_changes(src, DECISIONS_V2.key, decision, project)[:1]
    return lesson_changes(src, LESSONS_V2.key, s)


def journal_v3_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """v3: one line a session that says what was done, not only what was asked: the
    request, then what the tool calls show (files changed, the check that passed, an
    error left failing) or, with no tool call, the agent's report of the outcome; then up
    to three decisions, lessons or preferences (v3's), each carrying its entry's id."""
    path = journal_path(src)
    project = src.project
    topic = journal_topic(src, project)

    def bullet(text: str, at: datetime, entry_id: str | None = None) -> KnowledgeChange:
        return KnowledgeChange(
            path,
            "append",
            topic,
            text,
            src.provenance(at, key),
            dated=False,
            section_level=3,
            entry_id=entry_id,
        )

    summary = _summary_v3(src)
    out = [bullet(*summary)] if summary is not None else []
    for s, canonical in _canonical_v3(src, project)[:3]:
        label = {SECTION_LESSONS: "Lesson", SECTION_PREFERENCES: "Preference"}.get(
            canonical.section, "Decided"
        )
        text = f"{label}: {clean(canonical.content, limit=200)}"
        out.append(bullet(text, s.at, entry_id_for(canonical)))
    return out


# past this many turns (some fifteen exchanges) a session is more than its opening request:
# with no outcome to report, its request alone would misstate it
LONG_SESSION_TURNS = 30
SUMMARY_CHARS = 300  # a session's line in the journal


def _summary_v3(src: SourceTranscript) -> tuple[str, datetime] | None:
    """(line, time) of what the session did, or None when it has nothing to say: with
    nothing done to report, the request alone stands for a session of up to
    LONG_SESSION_TURNS turns only (in a longer one it is the opening of much else), never
    for a greeting or a session's id."""
    t = src.transcript
    asked, at = _opening_request(src)
    done = session_outcome(src) or [c for c in [_closing_statement(src)] if c]
    if not asked:  # no request its turns or its title say: what was done, else nothing
        line = clean("; ".join(done), limit=SUMMARY_CHARS)
        return (line[:1].upper() + line[1:], at) if done else None
    if not done and (
        len(t.turns) > LONG_SESSION_TURNS
        or len(long_words(asked)) < 2
        or (asked == t.title and _SESSION_ID_TITLE.match(t.title) is not None)
    ):
        return None
    summary = _topic_and_request(t.meta.topic, clean(asked, limit=120))
    if t.meta.part > 1:
        summary = f"Continued (part {t.meta.part}): {summary}"
    summary = summary.rstrip(".")
    if not done:
        return clean(summary + _size(t), limit=SUMMARY_CHARS), at
    # what was done, part by part ("changed 3 files (...)", 'committed "..."', "checks
    # passed: ..."): a later part that would be cut at the line's end is left out whole
    kept = done[:1]
    for part in done[1:]:
        if len(f"{summary} — {'; '.join([*kept, part])}") <= SUMMARY_CHARS:
            kept.append(part)
    return clean(f"{summary} — {'; '.join(kept)}", limit=SUMMARY_CHARS), at


# the title a session without one is given (formats.transcript: "Session ses_1a2b"), which
# says nothing; "Session Start Error For Task 008" is a title of its own
_SESSION_ID_TITLE = re.compile(r"^Session \S+$")


def _words_of(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


# A title that says nothing of the session: the prompt a harness names a chat with, which
# SpecStory took for the title of a Cursor chat ("Generate a name for the chat"), and the
# time an export of a Claude Code session is titled with ("2026-01-25 21:28:55Z", in
# title case "2026 01 25 21 28 55Z"); a session's line said only that, and its size.
_NO_TITLE = re.compile(
    r"^\W*(?:(?:generate|create|suggest|give|write|choose|pick)\s+(?:me\s+)?(?:an?\s+)?"
    r"(?:short\s+|concise\s+|good\s+)?(?:name|title)\s+for\s+(?:the|this)\s+"
    r"(?:chat|conversation|session|thread)\b"
    r"|\d{4}[-/ ]\d{1,2}[-/ ]\d{1,2}(?:[ T_-]+\d{1,2}[: -]\d{2}(?:[: -]\d{2})?(?:\.\d+)?)?"
    r"\s*(?:Z|UTC)?\W*$)",
    re.IGNORECASE,
)


def _says_nothing(title: str | None) -> bool:
    """Whether TITLE (a session's title or topic) is none of its own (`_NO_TITLE`)."""
    return _NO_TITLE.match(title or "") is not None


def _topic_and_request(topic: str | None, asked: str) -> str:
    """`TOPIC: ASKED`, or one of them when they say the same: an export titled after its
    first message ("Please Analyze This Repository And Create A Compre", cut and in title
    case) gave "the request: the request again" for a third of the development memory's
    sessions. Whichever holds the other (their words, in lowercase) stands alone; the
    topic, as its writer cased it, when they are the same words. A topic that says nothing
    (`_says_nothing`) is left out."""
    if not topic or _says_nothing(topic):
        return asked
    mine, theirs = _words_of(topic), _words_of(asked)
    if mine.startswith(theirs) or theirs.startswith(mine):
        return asked if len(theirs) > len(mine) else topic
    return f"{topic}: {asked}"


def _opening_request(src: SourceTranscript) -> tuple[str, datetime]:
    """(what the session was asked, when): its first user turn's request (a subagent's log
    opens with the agent; a message the harness sent in the user's role, as the summary
    that carries a compacted session on, `said_by_the_harness`, is not one), else its
    title, else (a title that says nothing: `_says_nothing`) the first request a later turn
    of the user's makes; a vague one ("Help me solve it") gives way to the title of the
    agent's answer. A first message sent unfinished (a later one repeats it and goes on:
    `_sent_whole`) is said as it was sent whole."""
    t = src.transcript
    users = [turn for turn in t.turns if turn.role == "user" and not said_by_the_harness(turn.text)]
    first_user = users[0] if users else None
    opening = (first_user and _sent_whole(first_user, users[1:2])) or next(iter(t.turns), None)
    asked = (request_of(opening) if opening is not None else "") or (
        "" if _says_nothing(t.title) or _says_nothing(t.meta.topic) else t.title
    )
    if not asked:
        asked = next((r for r in map(_request_made, users[1:]) if r), "")
    if len(long_words(asked)) < 3:
        asked = _answer_title(src) or asked
    return asked, utc(first_user.time) if first_user else src.started


def _sent_whole(first: tf.Turn, later: list[tf.Turn]) -> tf.Turn:
    """FIRST, or the user's next turn (LATER) when it repeats FIRST's text and goes on from
    it: a message sent before it was finished (the Enter key hit early), then sent whole."""
    cut = first.text.strip()
    return next(
        (t for t in later if cut and t.text.strip().startswith(cut) and t.text.strip() != cut),
        first,
    )


def _request_made(turn: tf.Turn) -> str:
    """TURN's request when it makes one: a slash command run with words, or a task named
    (`coding.names_a_task`; cut short or not), not a confirmation, a question, a note or
    Claude Code's notice of an interrupted turn."""
    if interruption_notice(turn.text):
        return ""
    asked = request_of(turn)
    typed = slash_command(turn.text) is not None
    return asked if asked and (typed or names_a_task(asked.removesuffix("…"))) else ""


def _size(t: tf.Transcript) -> str:
    """The session's size, as v2 says it (with nothing done to report; so a decision's own
    "Decided:" line is not taken for a restatement of the request)."""
    tools = sum(isinstance(i, tf.ToolCall) for turn in t.turns for i in turn.items)
    calls = f", {tools} tool call{'s' if tools > 1 else ''}" if tools else ""
    return f" ({len(t.turns)} turn{'s' if len(t.turns) > 1 else ''}{calls})"


def _canonical_v3(src: SourceTranscript, project: str) -> list[tuple[Sentence, KnowledgeChange]]:
    """Each sentence's canonical entry as decisions v3 or lessons v3 make it (their ids are
    what the journal's lines carry)."""
    out = []
    for s in src.prose_sentences:
        decision = decision_v3_in(s)
        canonical = (
            decision_changes(src, DECISIONS.key, decision, project)[:1]
            if decision is not None
            else lesson_v3_changes(src, LESSONS.key, s)
        )
        out += [(s, c) for c in canonical[:1]]
    return out


def _answer_title(src: SourceTranscript) -> str:
    """The first heading of the agent's answer to the opening request ("Secrets exposed
    in Git"), or ""."""
    turns = src.transcript.turns
    users = [i for i, t in enumerate(turns) if t.role == "user"]
    for turn in turns[users[0] + 1 :] if users else ():
        if turn.role == "user":
            break
        for item in turn.items:
            if isinstance(item, tf.Text):
                m = re.search(r"^#{1,3} +(.+)$", item.content, re.MULTILINE)
                if m:
                    title = re.sub(r"\[[A-Z]+\]|[^\w\s:,.()'/-]", "", m.group(1)).strip(" :-")
                    if len(long_words(title)) >= 2:
                        return title
    return ""


def _closing_statement(src: SourceTranscript) -> str:
    """The agent's report of an outcome in its last turn ("I've removed the unused
    imports", "All tests pass now", "Rolled back to revision 41"), or "" (a checklist
    item, a plan, a rule or the agent's narration of its next step is no outcome)."""
    turns = src.transcript.turns
    users = [i for i, t in enumerate(turns) if t.role == "user"]
    # the answer to the opening request (up to the next user turn), then the last turn's
    first = (
        turns[users[0] + 1 : users[1]] if len(users) > 1 else turns[users[0] + 1 :] if users else ()
    )
    last = [t for t in turns if t.role == "agent"][-1:]
    for group in (first, last):
        times = {utc(t.time) for t in group if t.role == "agent"}
        for s in src.prose_sentences:
            if s.role != "agent" or s.at not in times or s.ack or s.question:
                continue
            if (
                (_REPORT.match(s.text) and _OUTCOME.search(s.text) or _DONE_FIRST.match(s.text))
                and not (cues.NARRATION.search(s.text) or _RULE.search(s.text))
                and prose.is_statement(s.text)
            ):
                return clean(s.text, limit=140).rstrip(".")
    return ""


_REPORT = re.compile(
    r"^(?:I(?:'ve| have)|We(?:'ve| have)|All\b|Both\b|The (?:code|tests?|build|fix|change)s?\b|"
    r"(?:Now|Everything)\b)",
    re.IGNORECASE,
)


# a report that opens with what was done, its subject left out as an agent's terse report
# leaves it out ("Rolled back to revision 41; errors are gone."); capitalised, as a
# sentence opens, and followed by what it was done to
_DONE_FIRST = re.compile(
    r"^(?:Fixed|Added|Created|Implemented|Updated|Resolved|Removed|Renamed|Refactored|"
    r"Merged|Pushed|Committed|Rolled back|Reverted|Deployed|Redeployed|Restarted|Migrated|"
    r"Upgraded|Downgraded|Installed|Moved|Replaced|Restored|Released|Published)\s+\w"
)


# a rule the answer restates ("All tasks must be tracked using the canonical process")
_RULE = re.compile(r"\bmust\b", re.IGNORECASE)


_OUTCOME = re.compile(
    r"\b(?:pass(?:ed|es|ing)?|fixed|works?|working|added|created|implemented|updated|"
    r"resolved|removed|renamed|refactored|succeeded|complete[d]?|done|merged|pushed|committed)\b",
    re.IGNORECASE,
)


def journal_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    path = journal_path(src)
    out = []
    for i, d in enumerate(reply_items(data, "bullet")):
        topic = (
            slugify(checked_name(d.get("topic") or "general", "topic", i), NAME_SLUG_LEN)
            or "general"
        )
        text = clean(str(d["bullet"]), limit=240)
        out.append(
            KnowledgeChange(
                path,
                "append",
                topic,
                text,
                src.provenance(src.locate(text), key),
                dated=False,
                section_level=3,
            )
        )
    return out


JOURNAL_V2 = Extractor(
    "journal",
    2,
    "a summary of the session -> journal/YYYY-MM-DD.md",
    ("knowledge/journal/*.md",),
    frozenset({"append"}),
    journal_offline,
    journal_llm,
    reply_validator("bullet", ("topic",)),
    "journal.v1.md",
)

JOURNAL = Extractor(
    "journal",
    3,
    "a summary of the session: what was asked and what was done -> journal/YYYY-MM-DD.md",
    ("knowledge/journal/*.md",),
    frozenset({"append"}),
    journal_v3_offline,
    journal_llm,
    reply_validator("bullet", ("topic",)),
    "journal.v1.md",
)

__all__ = [
    "JOURNAL_V2",
    "JOURNAL",
    "journal_llm",
    "journal_offline",
    "journal_path",
    "journal_topic",
    "journal_v3_offline",
]
