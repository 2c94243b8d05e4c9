"""KnowledgeWriter: the one writer of knowledge files (design §8.3, seeds 000 and 002).

Every extractor, the condenser and the pruner hand it `KnowledgeChange`s; nothing else
writes under knowledge/. So the rules hold in one place:

* **A hard guard** (seed 000): a change may only name a Markdown path under knowledge/
  (never raw/, never outside the repo, never knowledge/identity/) that matches the path
  patterns its producer declared, with an action the producer declared. A batch with
  one bad change is refused whole, before anything is written.
* **No duplicates**: a fact whose normalized text is already in the file (as an entry or
  a hand-written bullet) is skipped; a change with a `key` is skipped when a line of the
  section already starts with that key (index files: one line per person/project).
* **Supersede, never delete** (seed 002): the old entry is struck through and tagged
  `#superseded-by:NEWID`, the new entry is appended.
* **Citations**: every entry it writes carries `(source: TRANSCRIPT @ TURN TIME)`.
* **Frontmatter kept current**: `updated` (the latest cited turn time, not the wall clock,
  so a replay of the same transcripts writes the same bytes), `entry_count`, and for
  MEMORY.md `line_count`.
* **Caps, before anything is written**: MEMORY.md never grows past
  `lifecycle.memory_line_cap` lines (the pre-commit hook rejects it at 110%), and no
  knowledge file past FILE_BYTE_CAP. An entry that would cross a cap is not added; it is
  counted in the report (`capped`) and logged with the reason, so a runaway producer
  (a model's 3,000-item reply) can never leave a file that every later commit refuses.
* **Redaction**: every entry's text, section, citation and tags, and every document
  stored whole (condense, prune), go through the repo's redactor (`repo.redactor()`).

`batch()` keeps files in memory and writes them once at the end (or at `flush()`), which
is what makes a replay of a thousand transcripts cheap.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import PurePosixPath

from autopoiesis.core.clock import format_ts, utc
from autopoiesis.core.paths import ACTIVE_PROJECTS_FILE, MEMORY_FILE, PEOPLE_INDEX_FILE, MemoryRepo, atomic_write
from autopoiesis.core.redact import Redactor
from autopoiesis.errors import ChangeRejectedError, UnsafePathError
from autopoiesis.formats import knowledge as kf

log = logging.getLogger(__name__)

ACTIONS = ("append", "supersede")
FILE_BYTE_CAP = 512 * 1024  # a knowledge file the writer grows stops here (the index skips files over 8 MB)


@dataclass(frozen=True)
class Provenance:
    """Where a change comes from: the transcript, the turn time, the producer."""

    source: str  # repo-relative transcript path (raw/conversations/...)
    at: datetime  # the turn the fact was said in (UTC)
    producer: str = ""  # "decisions@1", "condense.daily@1", ...
    session: str | None = None  # the transcript's session id (journals list their sessions)


@dataclass(frozen=True)
class KnowledgeChange:
    """One proposed change to one knowledge file (design §8.3).

    action "append": add CONTENT as an entry of SECTION (created when missing).
    action "supersede": strike the active entry TARGET (an entry id, or a phrase found in
    exactly one active entry of SECTION) and append CONTENT; with no match it appends.
    """

    path: str
    action: str
    section: str
    content: str
    provenance: Provenance
    key: str | None = None  # skip when a line of the section already starts with this
    target: str | None = None  # supersede: entry id or phrase
    dated: bool = True  # prefix the entry with the turn's date (MEMORY.md style)
    section_level: int = 2
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class WritePolicy:
    """What a producer may write: path globs (relative to the repo) and actions."""

    producer: str
    paths: tuple[str, ...]
    actions: frozenset[str] = frozenset({"append"})


@dataclass
class ApplyReport:
    added: list[tuple[str, str]] = field(default_factory=list)  # (path, entry id)
    learned: list[tuple[str, str]] = field(default_factory=list)  # (path, entry text): what commit messages name
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (path, old id)
    duplicates: int = 0
    capped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): entries a cap kept out

    @property
    def paths(self) -> list[str]:
        return sorted({p for p, _ in self.added} | {p for p, _ in self.superseded})

    def merge(self, other: ApplyReport) -> None:
        self.added += other.added
        self.learned += other.learned
        self.superseded += other.superseded
        self.duplicates += other.duplicates
        self.capped += other.capped


# ── templates of files the writer creates ──
def _titled(slug: str) -> str:
    return " ".join(w.capitalize() for w in slug.replace("_", "-").split("-") if w) or slug


def template_for(relpath: str) -> kf.KnowledgeDoc:
    """The skeleton of a new knowledge file, by where it lives (design §2.2)."""
    p = PurePosixPath(relpath)
    parts = p.parts
    if relpath == MEMORY_FILE:
        return kf.new_doc({"type": "memory", "updated": "2026-01-01T00:00:00Z", "line_count": 12},
                          "Core Memory", ("Key Decisions", "Lessons Learned", "Active Context"))
    if relpath == ACTIVE_PROJECTS_FILE:
        return kf.new_doc({"type": "project_index", "updated": "2026-01-01T00:00:00Z"}, "Active Projects")
    if relpath == PEOPLE_INDEX_FILE:
        return kf.new_doc({"type": "people_index", "updated": "2026-01-01T00:00:00Z"}, "People")
    if len(parts) >= 3 and parts[1] == "journal":
        day = p.stem
        return kf.new_doc({"type": "journal", "date": day, "sessions": []}, None, (day,))
    if len(parts) >= 4 and parts[1] == "projects":
        slug = parts[2]
        return kf.new_doc({"type": "project_context", "project": slug}, f"{_titled(slug)} — Context",
                          ("Current State", "Key Decisions"))
    if len(parts) >= 3 and parts[1] == "people":
        name = _titled(p.stem)
        return kf.new_doc({"type": "person", "name": name}, name, ("Communication", "Context"))
    if len(parts) >= 3 and parts[1] == "procedures":
        return kf.new_doc({"type": "procedure"}, _titled(p.stem), ("Steps",))
    return kf.new_doc({"type": "reference"}, _titled(p.stem), ("Facts",))


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(str(text).split())
    flat = flat.replace("{id:", "{id :").replace("~~", "~")  # content cannot forge entry markup
    flat = re.sub(r"\s#superseded-by:", " superseded-by:", flat)
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return flat


class KnowledgeWriter:
    """Applies KnowledgeChanges to the knowledge files of one repo (or worktree)."""

    def __init__(self, repo: MemoryRepo):
        self.repo = repo
        self._docs: dict[str, kf.KnowledgeDoc] = {}
        self._dirty: set[str] = set()
        self._batching = 0
        self._sizes: dict[str, int] = {}  # bytes of each document as stored (FILE_BYTE_CAP)
        self._redactor: Redactor | None = None

    @property
    def redactor(self) -> Redactor:
        if self._redactor is None:
            self._redactor = self.repo.redactor()
        return self._redactor

    def memory_line_limit(self) -> int:
        """The most lines MEMORY.md may have after a write: the configured cap."""
        return int(self.repo.config.lifecycle.memory_line_cap)

    # ── the guard ──
    def validate(self, changes: Iterable[KnowledgeChange], policy: WritePolicy | None = None) -> list[KnowledgeChange]:
        """The changes, checked; raises ChangeRejectedError naming the first bad one."""
        checked = list(changes)
        for ch in checked:
            self._check(ch, policy)
        return checked

    def _check(self, ch: KnowledgeChange, policy: WritePolicy | None) -> None:
        who = policy.producer if policy else (ch.provenance.producer or "a producer")
        path = ch.path
        if not isinstance(path, str) or not path or "\\" in path or "\x00" in path:
            raise ChangeRejectedError(f"{who} proposed an invalid path {path!r}; nothing was written.")
        norm = PurePosixPath(path)
        if norm.is_absolute() or ".." in norm.parts or norm.parts[0] != "knowledge":
            raise ChangeRejectedError(
                f"{who} may only write under knowledge/, not {path!r}; nothing was written. "
                "raw/ is immutable and paths outside the repo are refused."
            )
        try:
            self.repo.resolve_inside(path, under="knowledge")
        except UnsafePathError as exc:
            raise ChangeRejectedError(f"{who}: {exc} Nothing was written.") from None
        if norm.suffix != ".md" or (len(norm.parts) > 1 and norm.parts[1] == "identity"):
            raise ChangeRejectedError(
                f"{who} may not write {path!r}: only .md knowledge files, and never knowledge/identity/ "
                "(identity is edited by people). Nothing was written."
            )
        if ch.action not in ACTIONS:
            raise ChangeRejectedError(f"{who} proposed the unknown action {ch.action!r} on {path}; use append or supersede.")
        if policy is not None:
            if ch.action not in policy.actions:
                raise ChangeRejectedError(
                    f"{who} declared the actions {sorted(policy.actions)} but proposed {ch.action!r} on {path}; nothing was written."
                )
            if not any(fnmatch.fnmatchcase(path, g) for g in policy.paths):
                raise ChangeRejectedError(
                    f"{who} may write only {', '.join(policy.paths)}, not {path}; nothing was written."
                )
        if not ch.content or not str(ch.content).strip():
            raise ChangeRejectedError(f"{who} proposed an empty entry for {path}.")
        if not ch.provenance.source:
            raise ChangeRejectedError(f"{who} proposed an entry for {path} without a source transcript to cite.")

    # ── documents, cached while batching ──
    def read(self, relpath: str) -> kf.KnowledgeDoc | None:
        if relpath in self._docs:
            return self._docs[relpath]
        full = self.repo.root / relpath
        if not full.exists():
            return None
        doc = kf.parse(full.read_text(encoding="utf-8"))
        if self._batching:
            self._docs[relpath] = doc
        return doc

    def _store(self, relpath: str, doc: kf.KnowledgeDoc, size: int | None = None) -> None:
        doc = kf.refresh_counts(relpath, doc)
        if self._batching:
            self._docs[relpath] = doc
            self._dirty.add(relpath)
            if size is not None:
                self._sizes[relpath] = size
            else:
                self._sizes.pop(relpath, None)
        else:
            text = kf.render(doc)
            atomic_write(self.repo.root / relpath, text)
            self._sizes.pop(relpath, None)

    def _size(self, relpath: str, doc: kf.KnowledgeDoc) -> int:
        """The stored size of RELPATH (DOC), in UTF-8 bytes; rendered once, then tracked."""
        if relpath not in self._sizes:
            self._sizes[relpath] = len(kf.render(doc).encode("utf-8"))
        return self._sizes[relpath]

    def write_doc(self, relpath: str, doc: kf.KnowledgeDoc) -> None:
        """Store a whole document (the condenser and pruner use this; counts refreshed,
        every line redacted)."""
        self.repo.resolve_inside(relpath, under="knowledge") if relpath.startswith("knowledge/") else \
            self.repo.resolve_inside(relpath, under="archive")
        self._store(relpath, self._redact_doc(doc))

    def _redact_doc(self, doc: kf.KnowledgeDoc) -> kf.KnowledgeDoc:
        r = self.redactor.redact
        sections = []
        for sec in doc.sections:
            lines: list[kf.Line] = []
            for line in sec.lines:
                if isinstance(line, kf.Entry):
                    line = kf.Entry(line.id, r(line.text), line.date, r(line.source) if line.source else line.source,
                                    line.at, line.tags)
                else:
                    line = r(line)
                lines.append(line)
            sections.append(kf.Section(sec.level, r(sec.title), tuple(lines)))
        fm = r(doc.frontmatter) if doc.frontmatter else doc.frontmatter
        return kf.KnowledgeDoc(fm, tuple(sections), doc.final_newline)

    def forget(self, relpath: str) -> None:
        """Drop a cached document (its file was moved or removed by someone else)."""
        self._docs.pop(relpath, None)
        self._dirty.discard(relpath)

    @contextlib.contextmanager
    def batch(self) -> Iterator[KnowledgeWriter]:
        self._batching += 1
        try:
            yield self
        finally:
            self._batching -= 1
            if not self._batching:
                self.flush()
                self._docs.clear()

    def flush(self) -> list[str]:
        written = sorted(self._dirty)
        for rel in written:
            atomic_write(self.repo.root / rel, kf.render(self._docs[rel]))
        self._dirty.clear()
        self._sizes.clear()
        return written

    # ── applying ──
    def apply(self, changes: Iterable[KnowledgeChange], policy: WritePolicy | None = None) -> ApplyReport:
        """Validate every change (all or nothing), then apply them in order."""
        checked = self.validate(changes, policy)
        report = ApplyReport()
        with self.repo.lock("knowledge-writer") if not self._batching else contextlib.nullcontext():
            for ch in checked:
                self._apply_one(ch, report)
        return report

    def _apply_one(self, ch: KnowledgeChange, report: ApplyReport) -> None:
        redact = self.redactor.redact
        doc = self.read(ch.path) or template_for(ch.path)
        before = doc
        content = redact(_one_line(ch.content))
        fact = kf.normalize_fact(content)
        if not fact:
            report.duplicates += 1
            return
        doc, si = doc.with_section(redact(_one_line(ch.section, 120)), ch.section_level)
        if ch.key:
            k = ch.key.strip().lower()
            for line in doc.sections[si].lines:
                body = line.text if isinstance(line, kf.Entry) else line
                if isinstance(line, kf.Entry) and not line.active:
                    continue
                if body.lower().lstrip("- ").startswith(k):
                    report.duplicates += 1
                    return
        if fact in doc.facts():
            report.duplicates += 1
            if self._note_session(ch, doc) is not doc:
                self._store(ch.path, self._note_session(ch, doc))
            return
        at = utc(ch.provenance.at)
        entry = kf.Entry(
            id=kf.make_entry_id(at, ch.path, ch.provenance.source, fact),
            text=content,
            date=at.strftime("%Y-%m-%d") if ch.dated else None,
            source=redact(ch.provenance.source),
            at=kf.format_at(at),
            tags=tuple(t for t in ch.tags if re.fullmatch(r"[A-Za-z0-9_.-]+", t) and redact(t) == t),
        )
        if kf.render(kf.parse(entry.render())) != entry.render():  # a body the format cannot hold
            entry = kf.Entry(entry.id, re.sub(r"[()]", "", content), entry.date, entry.source, entry.at, entry.tags)
        if ch.action == "supersede" and ch.target:
            old = self._find_target(doc, si, ch.target)
            if old is not None:
                osi, oli = old
                old_entry = doc.sections[osi].lines[oli]
                assert isinstance(old_entry, kf.Entry)
                doc = doc.replace_line(osi, oli, old_entry.superseded(entry.id))
                report.superseded.append((ch.path, old_entry.id))
        doc = doc.append_line(si, entry)
        doc = self._note_session(ch, self._touch(doc, at))
        why = self._over_cap(ch.path, before, doc)
        if why is not None:
            log.warning("%s: entry not added (%s)", ch.path, why)
            report.capped.append((ch.path, why))
            return
        self._store(ch.path, doc, self._size(ch.path, before) + len(doc.sections[si].heading() or "")
                    + len(entry.render().encode("utf-8")) + 64)
        report.added.append((ch.path, entry.id))
        report.learned.append((ch.path, entry.text))

    def _over_cap(self, relpath: str, before: kf.KnowledgeDoc, after: kf.KnowledgeDoc) -> str | None:
        """Why AFTER may not replace BEFORE (a cap it would cross), or None. The byte count
        is exact only near the cap (the size of BEFORE is tracked; rendering every time
        would make a thousand-transcript replay slow)."""
        near = self._size(relpath, before) > FILE_BYTE_CAP - 4096
        return self.cap_violation(relpath, after, bytes_too=near)

    def cap_violation(self, relpath: str, doc: kf.KnowledgeDoc, *, bytes_too: bool = True) -> str | None:
        """Which cap DOC crosses as the content of RELPATH (MEMORY.md's line cap, the byte
        cap of every knowledge file), or None. The writer refuses an entry that would cross
        one; a sync re-checks merged files with this same rule."""
        if relpath == MEMORY_FILE:
            limit = self.memory_line_limit()
            lines = doc.line_count()
            if lines > limit:
                return (f"{MEMORY_FILE} would have {lines} lines, over lifecycle.memory_line_cap ({limit}); "
                        "run `autopoiesis prune`, or move detail into project or people files")
        if bytes_too:
            exact = len(kf.render(doc).encode("utf-8"))
            if exact > FILE_BYTE_CAP:
                return f"the file would be {exact} bytes, over the cap of {FILE_BYTE_CAP}; condense or split it"
        return None

    def find_active(self, relpath: str, target: str) -> tuple[kf.Entry, str] | None:
        """The active entry of RELPATH that TARGET names (its id, or a phrase found in
        exactly one active entry of the file) and its section's title; None when none or
        several match. A caller that must not append without superseding (the MCP
        `supersede` tool) checks with this first, then supersedes by the entry's id."""
        doc = self.read(relpath)
        if doc is None:
            return None
        if kf.ENTRY_ID_RE.match(target):
            hits = [(sec, e) for sec, e in doc.entries() if e.id == target and e.active]
        else:
            want = kf.normalize_fact(target)
            hits = [(sec, e) for sec, e in doc.entries() if want and e.active and want in kf.normalize_fact(e.text)]
        return (hits[0][1], hits[0][0].title) if len(hits) == 1 else None

    @staticmethod
    def _find_target(doc: kf.KnowledgeDoc, si: int, target: str) -> tuple[int, int] | None:
        if kf.ENTRY_ID_RE.match(target):
            found = doc.find_entry(target)
            if found is not None:
                line = doc.sections[found[0]].lines[found[1]]
                return found if isinstance(line, kf.Entry) and line.active else None
            return None
        want = kf.normalize_fact(target)
        if not want:
            return None
        hits = [
            (si, li) for li, l in enumerate(doc.sections[si].lines)
            if isinstance(l, kf.Entry) and l.active and want in kf.normalize_fact(l.text)
        ]
        return hits[-1] if len(hits) == 1 else None  # ambiguous: append only, never guess

    @staticmethod
    def _note_session(ch: KnowledgeChange, doc: kf.KnowledgeDoc) -> kf.KnowledgeDoc:
        """Journals list the sessions they summarise (design §2.2: `sessions: [...]`)."""
        if not ch.path.startswith("knowledge/journal/") or not ch.provenance.session:
            return doc
        sessions = doc.meta().get("sessions") or []
        if not isinstance(sessions, list) or ch.provenance.session in sessions:
            return doc
        return doc.with_meta(sessions=[*map(str, sessions), ch.provenance.session])

    @staticmethod
    def _touch(doc: kf.KnowledgeDoc, at: datetime) -> kf.KnowledgeDoc:
        stamp = format_ts(at)
        current = doc.meta().get("updated")
        if isinstance(current, datetime):
            cur = format_ts(current)
        elif isinstance(current, date):
            cur = current.isoformat()
        else:
            cur = str(current or "")
        if cur < stamp or not cur:
            doc = doc.with_meta(updated=stamp)
        return doc


__all__ = [
    "ACTIONS",
    "ApplyReport",
    "KnowledgeChange",
    "KnowledgeWriter",
    "Provenance",
    "WritePolicy",
    "template_for",
]
