"""What an extractor (or the flush, an MCP `remember`) hands the knowledge writer: a
KnowledgeChange with its Provenance, the id its entry gets, the report of applying
changes, and the template a new knowledge file starts from. The writer that applies
them is `writer`."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath

from autopoiesis.core.clock import utc
from autopoiesis.core.paths import ACTIVE_PROJECTS_FILE, MEMORY_FILE, PEOPLE_INDEX_FILE
from autopoiesis.formats import knowledge as kf
from autopoiesis.formats.transcript import normalize_content

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Provenance:
    """Where a change comes from: the transcript, the turn time, the producer."""

    source: str  # repo-relative transcript path (raw/conversations/...)
    at: datetime  # the turn the fact was said in (UTC)
    producer: str = ""  # "decisions@1", "condense.daily@1", ...
    session: str | None = None  # the transcript's session id (journals list their sessions)


@dataclass(frozen=True)
class KnowledgeChange:
    """One proposed change to one knowledge file (docs/design.md#extract).

    action "append": add CONTENT as an entry of SECTION (created when missing).
    action "supersede": strike the active entry TARGET (an entry id, or a phrase found in
    exactly one active entry of SECTION) and append CONTENT; with no match it appends.
    """

    path: str
    action: str
    section: str
    content: str
    provenance: Provenance
    key: str | None = (
        None  # one live line of the section starts with this: append skips, supersede replaces it
    )
    target: str | None = None  # supersede: entry id or phrase
    dated: bool = True  # prefix the entry with the turn's date (MEMORY.md style)
    section_level: int = 2
    tags: tuple[str, ...] = ()
    entry_id: str | None = None  # a derived line: the id of the canonical entry it restates
    subject: str | None = (
        None  # the entry holds the current value of SUBJECT (#about:): it supersedes the last one
    )


def entry_id_for(ch: KnowledgeChange) -> str:
    """The id the writer gives CH's entry: from the turn, the source and the fact, so the
    same fact said in the same turn has one id in every file (a derived line restating a
    canonical entry passes this as its `entry_id`). A hash of the unredacted text: three
    bytes of it reveal nothing."""
    fact = kf.normalize_fact(_one_line(ch.content))
    return kf.make_entry_id(utc(ch.provenance.at), ch.provenance.source, fact)


@dataclass
class ApplyReport:
    added: list[tuple[str, str]] = field(default_factory=list)  # (path, entry id)
    learned: list[tuple[str, str]] = field(
        default_factory=list
    )  # (path, entry text): what commit messages name
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (path, old id)
    duplicates: int = 0
    capped: list[tuple[str, str]] = field(
        default_factory=list
    )  # (path, why): entries a cap kept out
    # files changed with no entry of their own: a journal whose `sessions:` gained one whose
    # line it already held
    noted: list[str] = field(default_factory=list)
    # (archive path, entry id) of the entries moved out of MEMORY.md to make room for new
    # ones under its line cap (`KnowledgeWriter.hold_memory_cap`)
    archived: list[tuple[str, str]] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return sorted(
            {p for p, _ in self.added}
            | {p for p, _ in self.superseded}
            | set(self.noted)
            | {p for p, _ in self.archived}
        )

    def merge(self, other: ApplyReport) -> None:
        self.added += other.added
        self.learned += other.learned
        self.superseded += other.superseded
        self.duplicates += other.duplicates
        self.capped += other.capped
        self.noted += other.noted
        self.archived += other.archived


# ── templates of files the writer creates ──
def _titled(slug: str) -> str:
    return " ".join(w.capitalize() for w in slug.replace("_", "-").split("-") if w) or slug


def template_for(relpath: str) -> kf.KnowledgeDoc:
    """The skeleton of a new knowledge file, by where it lives (docs/design.md#knowledge-files)."""
    p = PurePosixPath(relpath)
    parts = p.parts
    if relpath == MEMORY_FILE:
        return kf.new_doc(
            {"type": "memory", "updated": "2026-01-01T00:00:00Z", "line_count": 12},
            "Core Memory",
            ("Key Decisions", "Lessons Learned", "Active Context"),
        )
    if relpath == ACTIVE_PROJECTS_FILE:
        return kf.new_doc(
            {"type": "project_index", "updated": "2026-01-01T00:00:00Z"}, "Active Projects"
        )
    if relpath == PEOPLE_INDEX_FILE:
        return kf.new_doc({"type": "people_index", "updated": "2026-01-01T00:00:00Z"}, "People")
    if len(parts) >= 3 and parts[1] == "journal":
        day = p.stem
        return kf.new_doc({"type": "journal", "date": day, "sessions": []}, None, (day,))
    if len(parts) >= 4 and parts[1] == "projects":
        slug = parts[2]
        return kf.new_doc(
            {"type": "project_context", "project": slug},
            f"{_titled(slug)} — Context",
            ("Current State", "Key Decisions"),
        )
    if len(parts) >= 3 and parts[1] == "people":
        name = _titled(p.stem)
        return kf.new_doc({"type": "person", "name": name}, name, ("Communication", "Context"))
    if len(parts) >= 3 and parts[1] == "procedures":
        return kf.new_doc({"type": "procedure"}, _titled(p.stem), ("Steps",))
    return kf.new_doc({"type": "reference"}, _titled(p.stem), ("Facts",))


def _one_line(text: str, limit: int = 400) -> str:
    """TEXT as an entry's (or a section's) one line: no control character (an ESC or BEL
    of an MCP client's or a model's text would reach the terminal of whoever prints the
    entry: `search`, `compile`, `cat`, as a sequence that sets its title or writes its
    clipboard), whitespace collapsed, no entry markup, at most LIMIT characters."""
    flat = " ".join(normalize_content(str(text)).split())
    flat = flat.replace("{id:", "{id :").replace("~~", "~")  # content cannot forge entry markup
    flat = re.sub(r"\s#superseded-by:", " superseded-by:", flat)
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return flat
