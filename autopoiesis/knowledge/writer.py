"""KnowledgeWriter: the one writer of knowledge files (docs/design.md#extract,
docs/design.md#extraction-bookkeeping and docs/design.md#entry-ids).

Every extractor, the condenser and the pruner hand it `KnowledgeChange`s; nothing else
writes under knowledge/. So the rules hold in one place:

* **A hard guard** (docs/design.md#extraction-bookkeeping): a change may only name a Markdown path
under knowledge/
  (never raw/, never outside the repo, never knowledge/identity/) that matches the path
  patterns its producer declared, with an action the producer declared. A batch with
  one bad change is refused whole, before anything is written.
* **No duplicates**: a fact whose normalized text is already in the file (as an entry or
  a hand-written bullet), or that says nothing a live entry of the file does not
  (`knowledge.restates`: another phrasing of it), is skipped; a change with a `key` is
  skipped when a live line of the section already starts with that key (index files: one
  line per person/project) — or, as a supersede, replaces that line.
* **Projects keep their own** (`catalog.one_scope`): an entry of another project than
  the change's never makes it a duplicate, is its target, holds its subject or is struck
  as the same fact; two projects that each say "use bun, not node" each keep the line.
  An entry's project is its file's, or for a line of a global file derived from a
  project's entry, that entry's (`EntryCatalog.project_of`: MEMORY.md's "alpha: Use
  bun, ..." is alpha's, and beta's mirrored line is no duplicate of it).
* **One fact, one id** (issue 11): an entry's id comes from its turn, source and fact
  (`entry_id_for`), and a derived line (MEMORY.md, `_active.md`, `people/_index.md`, a
  journal) passes the canonical entry's id as its `entry_id`.
* **Supersede, never delete, everywhere** (docs/design.md#entry-ids): the old entry is struck
through and
  tagged `#superseded-by:NEWID`, the new entry is appended — and every live copy of the
  old fact in the current-state files (same id, or in older files the very same fact) is
  struck too, whichever file it is in. Journals are dated history and stay as written.
  A change supersedes: its `target` (an entry id, or a phrase matching one entry of the
  section, the file, or same-titled sections elsewhere; ambiguous means append only);
  the live entry of its `subject` (`#about:SUBJECT`: one current value per subject, in
  each project and globally);
  entries of its section it restates in full. An append that restates a superseded
  fact and is not newer than what superseded it is a duplicate: condensation and
  replays never bring an old fact back.
* **What its caller sees** (`sees`, e.g. `MemoryRepo.may_reach_model` for a model's
  writes, MCP's): a file the caller may not read (a private note) is neither written nor
  looked at — no duplicate of it, no target in it, none of its entries struck — so a
  write's answer never tells the caller what such a file holds.
* **Citations**: every entry it writes carries `(via SESSION)`; the id holds the turn time.
* **Frontmatter kept current**: `updated` (the latest cited turn time, not the wall clock,
  so a replay of the same transcripts writes the same bytes), `entry_count`, and for
  MEMORY.md `line_count`.
* **Caps, kept here**: MEMORY.md never grows past `lifecycle.memory_line_cap` lines (the
  pre-commit hook rejects it at 110%), and no knowledge file past FILE_BYTE_CAP. A new
  entry of MEMORY.md that would cross its cap makes room (`hold_memory_cap`, which the
  pruner runs too): superseded entries first, then the oldest, move to
  archive/memory/MEMORY.md, so a new fact is never lost to the cap. An entry that would
  cross a cap no room can be made under (a file of hand-written lines, the byte cap) is
  not added; it is counted in the report (`capped`) and logged with the reason, so a
  runaway producer (a model's 3,000-item reply) can never leave a file that every later
  commit refuses.
* **Redaction**: every entry's text, section, citation and tags, and every document
  stored whole (condense, prune), go through the repo's redactor (`repo.redactor()`).

`batch()` keeps files in memory and writes them once at the end (or at `flush()`), which
is what makes a replay of a thousand transcripts cheap.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import PurePosixPath

from autopoiesis.core.clock import FUTURE_SLACK, format_minute, format_ts, utc, utc_now
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo, knowledge_project
from autopoiesis.errors import AutopoiesisError, ChangeRejectedError
from autopoiesis.formats import knowledge as kf
from autopoiesis.formats.transcript import parse_meta
from autopoiesis.knowledge.catalog import bare_fact, one_scope
from autopoiesis.knowledge.changes import (
    ApplyReport,
    KnowledgeChange,
    Provenance,
    _one_line,
    entry_id_for,
    template_for,
)
from autopoiesis.knowledge.documents import KnowledgeDocuments
from autopoiesis.knowledge.guard import ACTIONS, WritePolicy, check_change
from autopoiesis.knowledge.linking import KnownNames, link_names

log = logging.getLogger(__name__)

FILE_BYTE_CAP = (
    512 * 1024
)  # a knowledge file the writer grows stops here (the index skips files over 8 MB)
# where MEMORY.md's entries go to hold its line cap (the same path below archive/)
ARCHIVE_MEMORY = "archive/" + MEMORY_FILE.removeprefix("knowledge/")
# An entry is one line a reader takes in at a glance: its tags a handful of short words
# (an MCP client passed ten thousand, and the entry became a line of 30 KB)
MAX_ENTRY_TAGS = 10
_TAG = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# which entries of MEMORY.md leave first for the archive: superseded ones (-1), then the
# oldest of Active Context (0), then the oldest of the curated sections (1)
_LEAVES_FIRST = {"active context": 0, "lessons learned": 1, "key decisions": 1}


def memory_overflow(
    doc: kf.KnowledgeDoc, limit: int, keep: str | None = None
) -> tuple[kf.KnowledgeDoc, list[tuple[str, kf.Entry]]]:
    """DOC (MEMORY.md) with entries taken out until it has at most LIMIT lines, and
    (section title, entry) of each taken, in the order they leave: superseded entries
    first, then the oldest (Active Context before Lessons Learned and Key Decisions). The
    entry KEEP (the one just written) stays; hand-written lines are never taken, so a file
    of them stays over."""
    moved: list[tuple[str, kf.Entry]] = []
    while doc.line_count() > limit:
        found: list[tuple[int, str, int, int, kf.Entry]] = []
        for si, sec in enumerate(doc.sections):
            rank = _LEAVES_FIRST.get(sec.title.strip().lower(), 1)
            for li, line in enumerate(sec.lines):
                if isinstance(line, kf.Entry) and line.id != keep:
                    when = line.turn_at or line.date or ""
                    found.append((rank if line.active else -1, when, si, li, line))
        if not found:
            break
        found.sort(key=lambda v: v[:4])
        chosen = found[: doc.line_count() - limit]
        moved += [(doc.sections[si].title, e) for _, _, si, _, e in chosen]
        for _, _, si, li, _ in sorted(chosen, key=lambda v: v[2:4], reverse=True):
            doc = doc.remove_line(si, li)  # from the end: the indexes of the rest hold
    return doc, moved


@dataclass(frozen=True)
class _Draft:
    """A change on its way to an entry: what the writer decides about it is read here."""

    ch: KnowledgeChange
    doc: kf.KnowledgeDoc  # the file, with the change's section added when missing
    si: int  # that section
    content: str  # the entry's text: one line, redacted
    fact: str  # the normalized fact of CONTENT
    at: datetime  # the turn (UTC)
    new_id: str
    current: bool  # a current-state file (not a journal): one fact, one live entry
    subject: str  # the slug of the change's subject, or ""
    key_line: kf.Line | None  # the live line of the section that starts with the change's key
    project: str | None  # the project the change is about (catalog.project_of), None: global

    @property
    def title(self) -> str:
        return self.doc.sections[self.si].title.strip().lower()

    @property
    def replaced(self) -> str | None:
        """The index line a keyed supersede replaces."""
        return self.key_line.id if isinstance(self.key_line, kf.Entry) else None


class KnowledgeWriter(KnowledgeDocuments):
    """Applies KnowledgeChanges to the knowledge files of one repo (or worktree)."""

    def __init__(self, repo: MemoryRepo, *, sees: Callable[[str], bool] | None = None):
        super().__init__(repo, sees=sees)
        self._sessions: dict[str, str] = {}  # transcript path -> session id (citations)
        self._known_names = KnownNames(repo)  # people, projects, procedures: linked in entries

    def memory_line_limit(self) -> int:
        """The most lines MEMORY.md may have after a write: the configured cap."""
        return int(self.repo.config.lifecycle.memory_line_cap)

    # ── the guard ──
    def validate(
        self, changes: Iterable[KnowledgeChange], policy: WritePolicy | None = None
    ) -> list[KnowledgeChange]:
        """The changes, checked; raises ChangeRejectedError naming the first bad one."""
        checked = list(changes)
        for ch in checked:
            check_change(self.repo, ch, policy)
            if self.sees is not None and not self.sees(ch.path):
                # a write into a file its caller may not read would tell it what the file
                # holds (a duplicate, a target found) and change it blind
                who = policy.producer if policy else (ch.provenance.producer or "a producer")
                raise ChangeRejectedError(
                    f"{who} may not write {ch.path}, which it may not read (a private note "
                    "reaches a model only where private.model_paths names it); nothing was "
                    "written."
                )
        return checked

    # ── applying ──
    def apply(
        self, changes: Iterable[KnowledgeChange], policy: WritePolicy | None = None
    ) -> ApplyReport:
        """Validate every change (all or nothing), then apply them in order."""
        checked = self.validate(changes, policy)
        report = ApplyReport()
        with self.repo.writer_lock():
            if not self._batching:
                self._invalidate()  # files may have changed since the last apply
                self._known_names.invalidate()
            try:
                for ch in checked:
                    self._apply_one(ch, report)
            finally:
                if not self._batching:
                    self._invalidate()
        return report

    def _apply_one(self, ch: KnowledgeChange, report: ApplyReport) -> None:
        """Apply one checked change: a change that says nothing new is counted as a
        duplicate, an entry that would cross a cap is reported and left out; otherwise
        its entry is appended and every entry it supersedes is struck, wherever it is."""
        before = self.read(ch.path) or template_for(ch.path)
        draft = self._draft(ch, before)
        if draft is None or self._is_duplicate(draft, before, report):
            report.duplicates += 1
            return
        strike = self._superseded_by(draft)
        entry = self._entry(draft)
        doc = draft.doc.append_line(draft.si, entry)
        doc = self._note_session(ch, self._touch(doc, draft.at))
        why = self._over_cap(ch.path, before, doc, draft.new_id)
        if why is not None:
            log.warning("%s: entry not added (%s)", ch.path, why)
            report.capped.append((ch.path, why))
            return
        self._add_entry(draft, before, doc, entry, report)
        if draft.replaced is not None:
            # another derived line for the key: the fact it restated still stands
            self._strike_key_line(draft, draft.replaced, doc, entry, report)
        for path, old_id in dict.fromkeys(strike):
            if old_id != entry.id:
                self._supersede_everywhere(path, old_id, entry.id, report)
        if ch.path == MEMORY_FILE:  # after the strikes: what they superseded leaves first
            report.archived += [
                (ARCHIVE_MEMORY, e.id) for _, e in self.hold_memory_cap(keep=entry.id)
            ]

    def _draft(self, ch: KnowledgeChange, doc: kf.KnowledgeDoc) -> _Draft | None:
        """CH as it would be written into DOC (its section added when missing), or None
        when its text, redacted, holds no fact."""
        redact = self.redactor.redact  # before a line is cut: a cut secret keeps its head
        content = _one_line(redact(ch.content))
        fact = kf.normalize_fact(content)
        if not fact:
            return None
        doc, si = doc.with_section(_one_line(redact(ch.section), 120), ch.section_level)
        key_line = self._key_line(doc, si, ch.key) if ch.key else None
        subject = kf.subject_slug(redact(ch.subject)) if ch.subject else ""
        return _Draft(
            ch,
            doc,
            si,
            content,
            fact,
            utc(ch.provenance.at),
            ch.entry_id or entry_id_for(ch),
            kf.is_current_state(ch.path),
            subject,
            key_line,
            self._catalog().project_of(ch.path, ch.entry_id),
        )

    def _is_duplicate(self, d: _Draft, before: kf.KnowledgeDoc, report: ApplyReport) -> bool:
        """Whether the change says nothing new, checked in this order: a live
        line holds its key (and it may not replace it); the file holds its fact or its
        id, or (a current-state file) restates it; another file of its kind holds it
        live; its subject's live value says the same. The entry a supersede replaces is
        none of these: the new value restates it but for the word that changed ("on
        Tuesdays" -> "on Wednesdays")."""
        ch = d.ch
        line = d.key_line
        if line is not None and (
            ch.action != "supersede"
            or not isinstance(line, kf.Entry)
            or kf.restates(d.content, line.text)
        ):
            return True
        facts, ids = self._facts_and_ids(ch.path, d.doc)
        if (
            d.fact in facts
            or d.new_id in ids
            or (
                d.current
                and self._repeats(ch.path, d.content, d.at, d.project, d.subject, self._replaced(d))
            )
        ):
            # the journal the fact is already in summarises this session too: noted in the
            # file as it is (not D.doc, which holds the change's section, added if missing)
            # and reported, so the extraction's commit carries it
            noted = self._note_session(ch, before)
            if noted is not before:
                self._store(ch.path, noted)
                report.noted.append(ch.path)
            return True
        if not d.current:
            return False
        if (
            not ch.entry_id
            and not ch.key
            and any(
                e.active
                and t == d.title
                and e.id != self._replaced(d)
                and self._one_scope(d.project, p, e, d.subject)
                and self._says_again(d.content, e, d.subject)
                for p, t, e in self._catalog().restating(d.content)
            )
        ):
            return True  # a fact already live in another file of its kind (one fact, one entry)
        # the subject's value did not change
        return bool(d.subject) and any(
            old.id != self._replaced(d) and self._says_again(d.content, old, d.subject)
            for p, old in self._catalog().with_subject(d.subject)
            if self._one_scope(d.project, p, old)
        )

    def _superseded_by(self, d: _Draft) -> list[tuple[str, str]]:
        """(path, entry id) of the entries the change supersedes, each to be struck with
        every copy: in a current-state file the entries of its section it says in full
        (a fuller statement replaces them: nothing is lost) and its subject's live value;
        a supersede's target."""
        strike: list[tuple[str, str]] = []
        if d.current:
            restated = self._catalog().restated_by(d.content, d.ch.path, d.title)
            strike += [
                (d.ch.path, e.id)
                for e in restated
                if self._one_scope(d.project, d.ch.path, e, d.subject)
            ]
            if d.subject:
                strike += [
                    (path, old.id)
                    for path, old in self._catalog().with_subject(d.subject)
                    if self._one_scope(d.project, path, old)
                ]
        if d.ch.action == "supersede" and d.ch.target and not d.ch.key:
            found = self._find_target(d, d.ch.target)
            if found is not None:
                strike.append(found)
        return strike

    def _entry(self, d: _Draft) -> kf.Entry:
        """The change's entry: its text, the turn's date (when dated), the citation, and
        the tags that are safe to write (and its subject's)."""
        redact = self.redactor.redact
        ch = d.ch
        safe = (t for t in ch.tags if _TAG.fullmatch(t) and redact(t) == t)
        tags = tuple(dict.fromkeys(safe))[:MAX_ENTRY_TAGS]  # each once, a handful
        if d.subject and redact(d.subject) == d.subject:
            tags = (*tags, kf.SUBJECT_TAG + d.subject)
        # a keyed line (an index's `**Name** — ...`) is found by its key: left as written
        text = d.content if ch.key else link_names(d.content, self._known_names, ch.path)
        entry = kf.Entry(
            id=d.new_id,
            text=text,
            date=d.at.strftime("%Y-%m-%d") if ch.dated else None,
            source=redact(self._cite(ch.provenance)),
            at=None,
            tags=tags,
        )
        if kf.render(kf.parse(entry.render())) != entry.render():  # a body the format cannot hold
            entry = kf.Entry(
                entry.id,
                re.sub(r"[()]", "", d.content),
                entry.date,
                entry.source,
                entry.at,
                entry.tags,
            )
        return entry

    def _add_entry(
        self,
        d: _Draft,
        before: kf.KnowledgeDoc,
        doc: kf.KnowledgeDoc,
        entry: kf.Entry,
        report: ApplyReport,
    ) -> None:
        """Store DOC (BEFORE with ENTRY appended) and keep the report and the caches of
        facts, ids and catalog current."""
        path = d.ch.path
        self._store(
            path,
            doc,
            self._size(path, before)
            + len(doc.sections[d.si].heading() or "")
            + len(entry.render().encode("utf-8"))
            + 64,
        )
        report.added.append((path, entry.id))
        report.learned.append((path, entry.text))
        facts, ids = self._facts_and_ids(path, doc)
        facts.add(kf.normalize_fact(entry.text))
        ids.add(entry.id)
        if d.current:
            self._catalog().add(path, doc.sections[d.si].title, entry)

    def _strike_key_line(
        self, d: _Draft, replaced: str, doc: kf.KnowledgeDoc, entry: kf.Entry, report: ApplyReport
    ) -> None:
        """Strike REPLACED, the index line a keyed supersede replaces (that line only), in
        DOC."""
        where = doc.find_entry(replaced)
        if where is None:
            return
        old_line = doc.sections[where[0]].lines[where[1]]
        assert isinstance(old_line, kf.Entry)
        self._store(d.ch.path, doc.replace_line(*where, old_line.superseded(entry.id)))
        report.superseded.append((d.ch.path, replaced))
        facts, _ = self._facts_and_ids(d.ch.path, doc)
        facts.discard(kf.normalize_fact(old_line.text))
        if d.current:
            self._catalog().drop(d.ch.path, old_line.superseded(entry.id))

    def _over_cap(
        self, relpath: str, before: kf.KnowledgeDoc, after: kf.KnowledgeDoc, new_id: str
    ) -> str | None:
        """Why AFTER, BEFORE with the entry NEW_ID added, may not replace it (a cap it would
        cross even with room made, `hold_memory_cap`), or None. The byte count is exact
        only near the cap (the size of BEFORE is tracked; rendering every time would make
        a thousand-transcript replay slow)."""
        near = self._size(relpath, before) > FILE_BYTE_CAP - 4096
        if relpath == MEMORY_FILE:
            after, _ = memory_overflow(after, self.memory_line_limit(), keep=new_id)
        return self.cap_violation(relpath, after, bytes_too=near)

    def hold_memory_cap(self, *, keep: str | None = None) -> list[tuple[str, kf.Entry]]:
        """Hold MEMORY.md to `lifecycle.memory_line_cap` lines, the one rule of that cap: while
        it is over, its entries move to ARCHIVE_MEMORY under the same sections, superseded
        ones first, then the oldest (`memory_overflow`); the entry KEEP (just written)
        stays. Nothing is deleted. Returns (section title, entry) of each entry moved. The
        writer runs it after each entry it adds to MEMORY.md, the pruner for a file a hand
        edit or a merge took over the cap."""
        doc = self.read(MEMORY_FILE)
        if doc is None:
            return []
        trimmed, moved = memory_overflow(doc, self.memory_line_limit(), keep)
        if not moved:
            return []
        archive = self.read(ARCHIVE_MEMORY) or kf.new_doc(
            {"type": "archive", "of": MEMORY_FILE}, "Core Memory — archived entries"
        )
        archived = {e.id for _, e in archive.entries()}
        for title, entry in moved:
            if entry.id in archived:  # archived by a run killed before it trimmed MEMORY.md
                continue
            archive, ai = archive.with_section(title)
            archive = archive.append_line(ai, entry)
        # the archive first: a run killed between the two writes leaves an entry in both
        # files (the next run trims it), never in neither
        self._store(ARCHIVE_MEMORY, archive)
        self._store(MEMORY_FILE, trimmed)
        facts, ids = self._known.get(MEMORY_FILE, (set(), set()))
        for _, entry in moved:  # gone from the file: a later statement of it is new there
            facts.discard(kf.normalize_fact(entry.text))
            ids.discard(entry.id)
            if self._cat is not None:
                self._cat.remove(MEMORY_FILE, entry)
        return moved

    def cap_violation(
        self, relpath: str, doc: kf.KnowledgeDoc, *, bytes_too: bool = True
    ) -> str | None:
        """Which cap DOC crosses as the content of RELPATH (MEMORY.md's line cap, the byte
        cap of every knowledge file), or None. The writer refuses an entry that would cross
        one; a sync re-checks merged files with this same rule."""
        if relpath == MEMORY_FILE:
            limit = self.memory_line_limit()
            lines = doc.line_count()
            if lines > limit:
                return (
                    f"{MEMORY_FILE} would have {lines} lines, over lifecycle.memory_line_cap "
                    f"({limit}), in lines that are not entries (written by hand), which "
                    "are never moved to archive/ to make room; move them into project or "
                    "people files, or raise the cap"
                )
        if bytes_too:
            exact = len(kf.render(doc).encode("utf-8"))
            if exact > FILE_BYTE_CAP:
                return (
                    f"the file would be {exact} bytes, over the cap of {FILE_BYTE_CAP}; "
                    "condense or split it"
                )
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
            hits = [
                (sec, e)
                for sec, e in doc.entries()
                if want and e.active and want in kf.normalize_fact(e.text)
            ]
        return (hits[0][1], hits[0][0].title) if len(hits) == 1 else None

    # ── one fact, one live version (docs/design.md#extract, docs/design.md#entry-ids) ──
    @staticmethod
    def _key_line(doc: kf.KnowledgeDoc, si: int, key: str) -> kf.Line | None:
        """The live line of section SI that starts with KEY (index files: one a subject)."""
        k = key.strip().lower()
        for line in doc.sections[si].lines:
            if isinstance(line, kf.Entry) and not line.active:
                continue
            body = line.text if isinstance(line, kf.Entry) else line
            if body.lower().lstrip("- ").startswith(k):
                return line
        return None

    def _one_scope(self, project: str | None, path: str, e: kf.Entry, subject: str = "") -> bool:
        """Whether the entry E of PATH may be one fact with a change about PROJECT (and
        SUBJECT: an entry that holds another subject's value is another fact, however many
        words they share: "Run the tests: `bun test`" is not "... `bun test src/a.test.ts`")."""
        if subject and e.subject and e.subject != subject:
            return False
        return one_scope(project, self.entry_project(path, e))

    def entry_project(self, path: str, e: kf.Entry) -> str | None:
        """The project the entry E of PATH is about (`EntryCatalog.project_of`)."""
        return self._catalog().project_of(path, e.id)

    @staticmethod
    def _says_again(content: str, e: kf.Entry, subject: str) -> bool:
        """Whether CONTENT, which restates the entry E by the usual share of its words,
        says E's fact again. An entry of the same SUBJECT is that subject's value, and a
        value is often one word among a template's ("The work is pushed to branch `main`
        of `origin`", then "... of `upstream`": four content words of five the same), so
        it says it again only when every content word of CONTENT is in E."""
        return not (subject and e.subject == subject) or kf.restates(content, e.text, share=1.0)

    def _replaced(self, d: _Draft) -> str | None:
        """The id of the entry D supersedes by its target (None for any other change)."""
        if d.ch.action != "supersede" or not d.ch.target or d.ch.key:
            return None
        found = self._find_target(d, d.ch.target)
        return found[1] if found is not None else None

    def _repeats(
        self,
        path: str,
        content: str,
        at: datetime,
        project: str | None,
        subject: str = "",
        replaced: str | None = None,
    ) -> bool:
        """Whether CONTENT says nothing new for the current-state file PATH: it restates a
        live entry, or revives a superseded one without being newer than what superseded
        it (a rollup or a replay of old sessions must not bring an old fact back; a fact
        said again later may). An entry about another project than PROJECT says nothing
        of it (MEMORY.md's "alpha: Use bun" is not "beta: Use bun"), nor one of another
        SUBJECT, and only the same value of it (`_says_again`)."""
        stamp = kf.format_at(at)
        for _, _, e in self._catalog().restating(content, path):
            if e.id == replaced or not self._one_scope(project, path, e, subject):
                continue
            if not self._says_again(content, e, subject):
                continue
            if e.active:
                return True
            newer = kf.id_turn_at(e.superseded_by or "")
            if newer is None or stamp <= newer:
                return True
        return False

    def _find_target(self, d: _Draft, target: str) -> tuple[str, str] | None:
        """The live entry TARGET names: an entry id (in PATH, else in any current-state
        file), or a phrase found in the facts of exactly one entry of the section, else
        of the file, else of the same-titled sections of the current-state files. Another
        project's entry is never a target (`one_scope`). Ambiguous: None (append only,
        never guess)."""
        path, doc, si = d.ch.path, d.doc, d.si
        if kf.ENTRY_ID_RE.match(target):
            if any(
                e.id == target and e.active and self._one_scope(d.project, path, e)
                for _, e in doc.entries()
            ):
                return path, target
            cat = self._catalog()
            where = [
                p for p in cat.paths_of(target) if one_scope(d.project, cat.project_of(p, target))
            ]
            return (where[0], target) if where else None
        want = kf.normalize_fact(target)
        if not want:
            return None

        def has(p: str, e: kf.Entry) -> bool:
            return (
                e.active
                and f" {want} " in f" {kf.normalize_fact(e.text)} "
                and self._one_scope(d.project, p, e)
            )

        title = doc.sections[si].title.strip().lower()
        scopes = [
            [(path, e) for e in doc.sections[si].entries() if has(path, e)],
            [(path, e) for _, e in doc.entries() if has(path, e)],
            [(p, e) for p, t, e in self._catalog().live() if t == title and has(p, e)],
        ]
        for hits in scopes:
            ids = {e.id for _, e in hits}
            if len(ids) == 1:
                return hits[-1][0], hits[-1][1].id
            if len(ids) > 1:
                return None
        return None

    def _supersede_everywhere(
        self, path: str, old_id: str, new_id: str, report: ApplyReport
    ) -> None:
        """Strike OLD_ID in PATH and every live copy of it in the current-state files: the
        lines with its id, and (in files written before copies shared ids) lines stating
        its very fact, but for another project's (`one_scope`: its same words are its own
        fact). Journals are history and keep what they said."""
        cat = self._catalog()
        doc = self.read(path)
        old = (
            next((e for _, e in doc.entries() if e.id == old_id), None) if doc is not None else None
        )
        fact = bare_fact(old.text) if old is not None else None
        places = set(cat.paths_of(old_id)) | ({path} if kf.is_current_state(path) else set())
        if fact:
            scope = cat.project_of(path, old_id)
            places |= {p for p in cat.paths_stating(fact) if one_scope(knowledge_project(p), scope)}
        for rel in sorted(places):
            d = self.read(rel)
            if d is None:
                continue
            changed = d
            for si, sec in enumerate(d.sections):
                for li, line in enumerate(sec.lines):
                    if not isinstance(line, kf.Entry) or not line.active or line.id == new_id:
                        continue
                    if line.id == old_id or (fact and bare_fact(line.text) == fact):
                        changed = changed.replace_line(si, li, line.superseded(new_id))
                        report.superseded.append((rel, line.id))
                        if rel in self._known:
                            self._known[rel][0].discard(kf.normalize_fact(line.text))
                        cat.drop(rel, line.superseded(new_id))
            if changed is not d:
                self._store(rel, changed)

    def settle_subjects(self) -> ApplyReport:
        """One live value per subject, and one live entry per fact in a file, after a
        merge: two clones that each wrote a value of one subject without seeing the
        other's (`planned for June 3`, `moved to June 17`), or each learned the same fact,
        both keep theirs live until they meet. The later statement (Entry.said_order: by its
        turn, never one dated in the future; the id breaks a tie, so every clone settles
        alike) supersedes the others, every copy.
        The caller holds the writer's lock (`batch()`; a sync's merge holds it too)."""
        report = ApplyReport()
        self._invalidate()
        values: dict[tuple[str | None, str], list[tuple[str, kf.Entry]]] = {}
        cat = self._catalog()
        for path, _, e in cat.live():
            if e.subject:  # a subject has one value in each project, and one elsewhere
                values.setdefault((cat.project_of(path, e.id), e.subject), []).append((path, e))
            # one fact, one live entry in a file: two clones that each learned the same
            # fact (from sessions of their own) wrote it under two ids
            fact = kf.normalize_fact(e.text)
            if fact:
                values.setdefault((path, "\x00" + fact), []).append((path, e))
        horizon = format_minute(utc_now() + FUTURE_SLACK)  # a later date no clock said
        for found in values.values():
            latest = max((e for _, e in found), key=lambda e: e.said_order(horizon))
            for path, e in found:
                if e.id != latest.id and (path, e.id) not in report.superseded:
                    self._supersede_everywhere(path, e.id, latest.id, report)
        self._invalidate()
        return report

    def files_with_entries(self, prefix: str = "knowledge/") -> list[str]:
        """The current-state files under PREFIX that hold live entries (written or not)."""
        return sorted(p for p, n in self._catalog().files.items() if n > 0 and p.startswith(prefix))

    def live_entries(self) -> Iterator[tuple[str, str, kf.Entry]]:
        """(path, section title in lower case, entry) of every live entry of the
        current-state files, as the writer sees them now (its batch included)."""
        yield from list(self._catalog().live())

    def remove_entries_from(
        self, source: str, *, dry_run: bool = False
    ) -> list[tuple[str, kf.Entry]]:
        """Delete every entry, live or struck, whose citation names the transcript SOURCE
        (its session, or the path itself in the older form), from every file under
        knowledge/ and archive/: what `autopoiesis forget --transcript` leaves no trace of.
        The one exception to "supersede, never delete". Returns (path, entry) of each;
        DRY_RUN: only find them."""
        cited = {self._cite(Provenance(source, utc(datetime(1970, 1, 1)))), source}
        removed: list[tuple[str, kf.Entry]] = []
        with self.repo.writer_lock():
            self._invalidate()
            for top in ("knowledge", "archive"):
                for full in self.repo.iter_markdown(top):
                    rel = self.repo.rel(full)
                    doc = self.read_in_sweep(rel)
                    if doc is None:
                        continue
                    before = doc
                    for si in range(len(doc.sections) - 1, -1, -1):
                        for li in range(len(doc.sections[si].lines) - 1, -1, -1):
                            line = doc.sections[si].lines[li]
                            if isinstance(line, kf.Entry) and line.source in cited:
                                removed.append((rel, line))
                                doc = doc.remove_line(si, li)
                    if doc is not before and not dry_run:
                        self._store(rel, doc)
            self._invalidate()
        return removed

    def _cite(self, prov: Provenance) -> str:
        """The compact citation of PROV: its session (read from the transcript when the
        provenance does not say), else the source itself as one token."""
        session = prov.session
        if session is None and prov.source.startswith("raw/") and prov.source.endswith(".md"):
            if prov.source not in self._sessions:
                try:
                    text = (self.repo.root / prov.source).read_text(encoding="utf-8")
                    self._sessions[prov.source] = parse_meta(text, prov.source).session_id
                except (
                    OSError,
                    UnicodeDecodeError,
                    AutopoiesisError,
                ):  # HHMM-SESSION-slug.md: drop the time
                    self._sessions[prov.source] = re.sub(
                        r"^\d{4}-", "", PurePosixPath(prov.source).stem
                    )
            session = self._sessions[prov.source]
        # redacted before the reference is cut to its length (a cut secret keeps its head)
        return kf.citation_ref(self.redactor.redact(session or prov.source))

    @staticmethod
    def _note_session(ch: KnowledgeChange, doc: kf.KnowledgeDoc) -> kf.KnowledgeDoc:
        """Journals list the sessions they summarise (docs/design.md#knowledge-files: `sessions:
        [...]`)."""
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
    "entry_id_for",
    "template_for",
]
