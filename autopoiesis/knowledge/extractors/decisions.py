"""decisions: what the user decides or plans ("we decided ...", "we'll put X in front of
Y", "let's go with X", "the plan is to ...", an agent's proposal the user accepts) ->
projects/SLUG/context.md (Key Decisions), with a derived line in projects/_active.md
carrying its id; or MEMORY.md when no project is named.

A decision that replaces an earlier one ("X instead", "from X to Y", "drop X", "no longer
use X", "replace X") supersedes it, and the writer strikes every live copy of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from autopoiesis.core.clock import utc
from autopoiesis.core.paths import ACTIVE_PROJECTS_FILE, MEMORY_FILE, project_context_file
from autopoiesis.core.text import slugify
from autopoiesis.formats import tool_calls
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
    item_action,
    long_words,
    reply_items,
    reply_validator,
    session_project,
)

# how an agent marks the option it would pick ("Skip it (Recommended)"): its, not the user's
_RECOMMENDED = re.compile(r"\s*\(recommended\)\s*$", re.I)


@dataclass(frozen=True)
class Decision:
    text: str
    target: str | None  # what it replaces (a phrase or an entry id), if anything
    at: datetime


def decision_in(s: Sentence) -> Decision | None:
    """The decision sentence S states, if it counts as one: said or confirmed by the user
    (an agent's "Understood, ..." never is), a plan or a choice, not a question, not a
    preference or a lesson (those have their own homes)."""
    if not s.counts or s.question or cues.OPEN_QUESTION.match(s.text):
        return None
    if not (cues.DECISION_CUE.search(s.text) or (s.confirmed and cues.PROPOSAL.search(s.text))):
        return None
    if cues.LESSON_CUE.search(s.text) or (s.by_user and cues.PREFERENCE_CUE.search(s.text)):
        return None
    if s.speaker and not s.confirmed and cues.FIRST_PERSON_ONLY.search(s.text):
        return None  # a participant's own choice ("I decided to run again") is a fact about them
    text = clean(cues.with_absolute_dates(s.text, s.at), cues.DECISION_PREFIX)
    if len(long_words(text)) < 3:
        return None
    return Decision(text, cues.change_target(s.text), s.at)


def decision_changes(
    src: SourceTranscript, key: str, d: Decision, project: str, context: str = ""
) -> list[KnowledgeChange]:
    """The canonical entry of D and the derived line of projects/_active.md (same id)."""
    content = d.text + (
        f" — {context}" if context and context.lower() not in d.text.lower() else ""
    )
    prov = src.provenance(d.at, key)
    action = "supersede" if d.target else "append"
    if not project or project == "general":
        return [
            KnowledgeChange(MEMORY_FILE, action, "Key Decisions", content, prov, target=d.target)
        ]
    canonical = KnowledgeChange(
        project_context_file(project),
        action,
        "Key Decisions",
        content,
        prov,
        target=d.target,
    )
    derived = KnowledgeChange(
        ACTIVE_PROJECTS_FILE,
        "append",
        "Active Projects",
        f"**{project}** — {d.text}",
        prov,
        key=f"**{project}**",
        dated=False,
        section_level=1,
        entry_id=entry_id_for(canonical),
    )
    return [canonical, derived]


def decisions_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    project = src.project
    out: list[KnowledgeChange] = []
    for s in src.sentences:
        d = decision_in(s)
        if d is not None:
            out += decision_changes(src, key, d, project)
    return out


def decisions_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """The model's decisions, each filed under the project the session ran in when its
    transcript names one (a model's "project" cannot move a decision into another
    codebase's file, whatever the transcript asked of it), else under the model's."""
    out: list[KnowledgeChange] = []
    ran_in = session_project(src)
    for i, d in enumerate(reply_items(data, "decision")):
        act = item_action(d, src)
        if act is None:
            continue
        said = checked_name(d.get("project") or "general", "project", i)
        project = ran_in or slugify(said, NAME_SLUG_LEN) or "general"
        text = clean(str(d["decision"]))
        context = " ".join(str(d.get("context") or "").split()).strip(" .")[:200]
        target = act[1] or cues.change_target(text)
        out += decision_changes(
            src, key, Decision(text, target, src.locate(text)), project, context
        )
    return out


def decision_v3_in(s: Sentence) -> Decision | None:
    """decision_in for v3: also a whole statement with an object ("Let's implement the
    plan." decides nothing), not an order for the task at hand ("Make a rule to record
    what we learned ..."), and not a rule about how to work (a preference: lessons v3's)."""
    if not prose.is_statement(s.text) or cues.ORDER.match(s.text):
        return None
    if s.by_user and cues.CODING_PREFERENCE.match(s.text):
        return None
    d = decision_in(s)
    if d is None or not prose.is_statement(d.text):
        return None
    return d


def decided_through_tools(src: SourceTranscript) -> list[Decision]:
    """What the user decided answering the agent's tools: an option they chose among those
    it offered through a question tool (Claude Code's AskUserQuestion:
    `tool_calls.choices`), named with what the agent said it means ("How should the failing
    test be fixed? — chosen: Skip when the session is not found (change t.Fatalf to
    t.Skipf)"), and a plan they approved (ExitPlanMode: `tool_calls.approved_plan`), by
    its title ("Approved plan: Extract commands from main.go into pkg/cmd/")."""
    out: list[Decision] = []
    for turn in src.transcript.turns:
        if turn.role != "agent":
            continue
        for item in turn.items:
            if not isinstance(item, tf.ToolCall):
                continue
            plan = tool_calls.approved_plan(item)
            if plan is not None:
                out.append(Decision(clean(f"Approved plan: {plan}"), None, utc(turn.time)))
            for c in tool_calls.choices(item):
                label = _RECOMMENDED.sub("", c.label)
                text = f"{c.question} — chosen: {label}" + (
                    f" ({c.description})" if c.description else ""
                )
                out.append(Decision(clean(text), None, utc(turn.time)))
    return out


def decisions_v3_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """v3: the sentences somebody wrote (no pasted logs or forms, no headings), whole
    statements only, and what the user decided answering the agent's tools
    (`decided_through_tools`), filed under the session's project (`detect_project`
    prefers the transcript's `project:`)."""
    project = src.project
    out: list[KnowledgeChange] = []
    for s in src.prose_sentences:
        d = decision_v3_in(s)
        if d is not None:
            out += decision_changes(src, key, d, project)
    for d in decided_through_tools(src):
        out += decision_changes(src, key, d, project)
    return out


DECISIONS_V2 = Extractor(
    "decisions",
    2,
    "decisions -> projects/SLUG/context.md (Key Decisions), or MEMORY.md for general ones",
    ("knowledge/projects/*/context.md", ACTIVE_PROJECTS_FILE, MEMORY_FILE),
    frozenset({"append", "supersede"}),
    decisions_offline,
    decisions_llm,
    reply_validator("decision", ("project",)),
    "decisions.v2.md",
)

__all__ = [
    "DECISIONS_V2",
    "Decision",
    "decision_changes",
    "decision_in",
    "decisions_llm",
    "decisions_offline",
]

DECISIONS = Extractor(
    "decisions",
    3,
    "decisions -> projects/SLUG/context.md (Key Decisions), or MEMORY.md for general ones; "
    "v3: only what somebody wrote, as whole statements",
    DECISIONS_V2.paths,
    DECISIONS_V2.actions,
    decisions_v3_offline,
    decisions_llm,
    reply_validator("decision", ("project",)),
    "decisions.v2.md",
)
__all__ += ["DECISIONS", "decision_v3_in", "decisions_v3_offline"]
