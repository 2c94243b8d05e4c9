"""The pre-compaction flush (docs/design.md#flush): before older history is dropped from the
context, the agent is asked for what is worth keeping, and its reply is appended to the
journal, MEMORY.md and project context files.

When the compiler reports `CompiledContext.flush_due`, the runtime sends `flush_prompt()`
to the agent as a silent turn and hands the reply to `apply_flush`, which writes through
the one knowledge writer: append only, never rewriting an entry, each entry citing the
session being compacted.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from datetime import UTC, date, datetime

from autopoiesis.core.clock import today as utc_today
from autopoiesis.core.clock import utc_now
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo, project_context_file
from autopoiesis.core.text import counted, noun, slugify
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
from autopoiesis.knowledge.writer import KnowledgeWriter

FLUSH_PROMPT = """The context window is filling up. Before older messages are dropped, write down
what is worth keeping. Reply in this form, leaving out empty parts:

## journal
- what happened today ({today})
## memory
- lessons and decisions worth remembering for months
## project: SLUG
- decisions and state of project SLUG (one section per project; active: {projects})

Only write what's worth preserving. If nothing important, reply FLUSH_OK."""

# A harness that compacts by itself (Claude Code) cannot be asked for a silent turn; its
# compaction summary is asked for the notes instead, between these marker lines, and the
# block is read back from the summary once compaction is done.
FLUSH_BEGIN = "<memory-flush>"
FLUSH_END = "</memory-flush>"
COMPACTION_INSTRUCTIONS = """After the summary, add the notes worth keeping in long-term memory,
between a line {begin} and a line {end}, in this form:

{prompt}"""

_FLUSH_HEADING = re.compile(r"^#{1,3}\s*(journal|memory|project\s*:\s*(.+?))\s*$", re.IGNORECASE)
_ANY_HEADING = re.compile(r"^#{1,6}\s+(.*?)[\s:]*$")
UNPLACED = "unplaced"  # parse_flush's key for lines under no heading of the prompt's


@dataclass(frozen=True)
class FlushReport:
    """What a flush appended: (repo-relative path, entries) per file."""

    written: tuple[tuple[str, int], ...]  # (repo-relative path, lines appended)
    nothing_to_do: bool = False
    commit: str | None = None  # the commit of what it appended (`apply_flush`'s COMMIT_AS)


def flush_prompt(repo: MemoryRepo, today: date | None = None) -> str:
    """The silent turn that asks the agent for durable notes before history is dropped."""
    today = today or utc_today()
    projects = (
        sorted(p.name for p in (repo.knowledge_dir / "projects").iterdir() if p.is_dir())
        if (repo.knowledge_dir / "projects").is_dir()
        else []
    )
    return FLUSH_PROMPT.format(today=today.isoformat(), projects=", ".join(projects) or "none yet")


def compaction_instructions(repo: MemoryRepo, today: date | None = None) -> str:
    """The flush as instructions for a harness's compaction summary: the notes come back
    between FLUSH_BEGIN and FLUSH_END (read them with `flush_block`)."""
    return COMPACTION_INSTRUCTIONS.format(
        begin=FLUSH_BEGIN, end=FLUSH_END, prompt=flush_prompt(repo, today)
    )


def flush_block(text: str) -> str | None:
    """The notes between the last FLUSH_BEGIN and the FLUSH_END after it in TEXT (a
    compaction summary), or None when there is no such block."""
    start = text.rfind(FLUSH_BEGIN)
    if start < 0:
        return None
    end = text.find(FLUSH_END, start)
    if end < 0:
        return None
    return text[start + len(FLUSH_BEGIN) : end].strip()


def parse_flush(reply: str) -> dict[str, list[str]]:
    """{"journal": [...], "memory": [...], "project:SLUG": [...]} from the agent's reply
    (the Markdown form of FLUSH_PROMPT, or a JSON object with journal/memory/projects).

    The flush is the last look at history before it is dropped, so nothing the agent
    wrote is left out for being out of form: a line under no heading of the prompt's
    (prose, bullets before any heading, a heading of its own such as `## decisions`, a
    project that names none) is kept in the journal, under its heading's words
    ("decisions: use Kafka"), and a warning says the reply was out of form."""
    text = reply.strip()
    if not text or text.upper().startswith("FLUSH_OK"):
        return {}
    out: dict[str, list[str]] = {}
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            for key in ("journal", "memory"):
                vals = data.get(key) or []
                out[key] = [
                    str(v) for v in (vals if isinstance(vals, list) else [vals]) if str(v).strip()
                ]
            projects = data.get("projects") or {}
            if not isinstance(projects, dict):
                # a list or a string names no project: the rest of the reply still counts
                warnings.warn(
                    "flush: `projects` is not an object of project names and their notes "
                    '({"billing": ["..."]}); its notes were left out, the rest kept.',
                    stacklevel=2,
                )
                projects = {}
            for slug, vals in projects.items():
                out[f"project:{slug}"] = [
                    str(v) for v in (vals if isinstance(vals, list) else [vals]) if str(v).strip()
                ]
            for key, vals in data.items():
                if key not in ("journal", "memory", "projects"):
                    out.setdefault(UNPLACED, []).extend(
                        f"{key}: {v}"
                        for v in (vals if isinstance(vals, list) else [vals])
                        if str(v).strip()
                    )
            return {k: v for k, v in out.items() if v}
    current, context = UNPLACED, ""
    for line in text.splitlines():
        m = _FLUSH_HEADING.match(line.strip())
        other = None if m else _ANY_HEADING.match(line.strip())
        if m:
            current = f"project:{m.group(2).strip()}" if m.group(2) else m.group(1).lower()
            context = ""
            continue
        if other:  # a heading of the agent's own: its lines are kept under its words
            current, context = UNPLACED, other.group(1)
            continue
        item = line.strip()
        if item and item.upper() != "FLUSH_OK":
            item = re.sub(r"^[-*]\s+", "", item)
            out.setdefault(current, []).append(f"{context}: {item}" if context else item)
    return {k: v for k, v in out.items() if v}


def apply_flush(
    repo: MemoryRepo,
    reply: str,
    *,
    today: date | None = None,
    source: str | None = None,
    at: datetime | None = None,
    commit_as: str | None = None,
) -> FlushReport:
    """Append the notes of the agent's flush REPLY to the right knowledge files: journal
    -> knowledge/journal/TODAY.md, memory -> MEMORY.md (Active Context), project:SLUG ->
    knowledge/projects/SLUG/context.md (Key Decisions).

    Goes through the one knowledge writer, so it is append-only (existing entries are
    never rewritten), skips notes already present, and cites SOURCE — the transcript of
    the session being compacted — and the time of the flush in every entry. COMMIT_AS,
    a commit subject, commits what it appended (a line a file) under the writer's lock
    it wrote with (`KnowledgeWriter.commit`): committed after the lock was let go, the
    commit carried what another writer appended to the same MEMORY.md meanwhile."""
    today = today or utc_today()
    parts = parse_flush(reply)
    if not parts:
        return FlushReport((), True)
    day = today.isoformat()
    when = at or datetime.combine(today, utc_now().time(), tzinfo=UTC).replace(microsecond=0)
    prov = Provenance(source=source or "pre-compaction flush", at=when, producer="flush@1")
    unplaced = parts.pop(UNPLACED, [])
    for key in [k for k in parts if k.startswith("project:")]:
        if not slugify(key.split(":", 1)[1]):  # a project the reply names by nothing
            unplaced += [f"{key.split(':', 1)[1].strip()}: {line}" for line in parts.pop(key)]
    if unplaced:
        warnings.warn(
            f"flush: {counted(len(unplaced), 'line')} of the reply "
            f"{noun(len(unplaced), 'was', 'were')} under no `## journal`, `## memory` or "
            "`## project: NAME` heading: kept in the journal.",
            stacklevel=2,
        )
        parts["journal"] = parts.get("journal", []) + unplaced
    changes: list[KnowledgeChange] = []
    for key, lines in parts.items():
        lines = [re.sub(r"^\d{4}-\d\d-\d\d:\s*", "", line).strip() for line in lines]
        lines = [line for line in lines if line]
        if key == "journal":
            changes += [
                KnowledgeChange(
                    f"knowledge/journal/{day}.md",
                    "append",
                    "session notes",
                    line,
                    prov,
                    dated=False,
                    section_level=3,
                )
                for line in lines
            ]
        elif key == "memory":
            changes += [
                KnowledgeChange(MEMORY_FILE, "append", "Active Context", line, prov)
                for line in lines
            ]
        elif key.startswith("project:"):
            slug = slugify(key.split(":", 1)[1])
            changes += [
                KnowledgeChange(project_context_file(slug), "append", "Key Decisions", line, prov)
                for line in lines
            ]
    if not changes:
        return FlushReport((), True)
    writer = KnowledgeWriter(repo)
    with writer.batch():
        report = writer.apply(changes)
        counts: dict[str, int] = {}
        for path, _ in report.added:
            counts[path] = counts.get(path, 0) + 1
        written = tuple(sorted(counts.items()))
        sha = None
        if commit_as is not None and written:
            body = "".join(f"- {p}: +{counted(n, 'entry', 'entries')}\n" for p, n in written)
            sha = writer.commit([p for p, _ in written], f"{commit_as}\n\n{body}").sha
    return FlushReport(written, not counts, sha)
