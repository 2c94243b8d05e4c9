"""KnowledgeWriter: the one writer of knowledge files (design §8.3, seeds 000 and 002).

Every extractor, the condenser and the pruner hand it `KnowledgeChange`s; nothing else
writes under knowledge/. So the rules hold in one place:

* **A hard guard** (seed 000): a change may only name a Markdown path under knowledge/
  (never raw/, never outside the repo, never knowledge/identity/) that matches the path
  patterns its producer declared, with an action the producer declared. A batch with
  one bad change is refused whole, before anything is written.
* **No duplicates**: a fact whose normalized text is already in the file (as an entry or
  a hand-written bullet), or that says nothing a live entry of the file does not
  (`knowledge.restates`: another phrasing of it), is skipped; a change with a `key` is
  skipped when a live line of the section already starts with that key (index files: one
  line per person/project) — or, as a supersede, replaces that line.
* **One fact, one id** (issue 11): an entry's id comes from its turn, source and fact
  (`entry_id_for`), and a derived line (MEMORY.md, `_active.md`, `people/_index.md`, a
  journal) passes the canonical entry's id as its `entry_id`.
* **Supersede, never delete, everywhere** (seed 002): the old entry is struck through and
  tagged `#superseded-by:NEWID`, the new entry is appended — and every live copy of the
  old fact in the current-state files (same id, or in older files the very same fact) is
  struck too, whichever file it is in. Journals are dated history and stay as written.
  A change supersedes: its `target` (an entry id, or a phrase matching one entry of the
  section, the file, or same-titled sections elsewhere; ambiguous means append only);
  the live entry of its `subject` (`#about:SUBJECT`: one current value per subject);
  entries of its section it restates in full. An append that restates a superseded
  fact and is not newer than what superseded it is a duplicate: condensation and
  replays never bring an old fact back.
* **Citations**: every entry it writes carries `(via SESSION)`; the id holds the turn time.
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
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import PurePosixPath

from autopoiesis.core.clock import format_ts, utc
from autopoiesis.core.paths import ACTIVE_PROJECTS_FILE, MEMORY_FILE, PEOPLE_INDEX_FILE, MemoryRepo, atomic_write
from autopoiesis.core.redact import Redactor
from autopoiesis.errors import AutopoiesisError, ChangeRejectedError, UnsafePathError
from autopoiesis.formats import knowledge as kf
from autopoiesis.formats.transcript import parse_meta

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
    key: str | None = None  # one live line of the section starts with this: append skips, supersede replaces it
    target: str | None = None  # supersede: entry id or phrase
    dated: bool = True  # prefix the entry with the turn's date (MEMORY.md style)
    section_level: int = 2
    tags: tuple[str, ...] = ()
    entry_id: str | None = None  # a derived line: the id of the canonical entry it restates
    subject: str | None = None  # the entry holds the current value of SUBJECT (#about:): it supersedes the last one


def entry_id_for(ch: KnowledgeChange) -> str:
    """The id the writer gives CH's entry: from the turn, the source and the fact, so the
    same fact said in the same turn has one id in every file (a derived line restating a
    canonical entry passes this as its `entry_id`). A hash of the unredacted text: three
    bytes of it reveal nothing."""
    fact = kf.normalize_fact(_one_line(ch.content))
    return kf.make_entry_id(utc(ch.provenance.at), ch.provenance.source, fact)


def _bare_fact(text: str) -> str:
    """The normalized fact of a line, without an index line's `**key** — ` lead."""
    return kf.normalize_fact(re.sub(r"^\*\*[^*]+\*\*\s*[—:-]\s*", "", text))


def _signature(text: str) -> tuple[frozenset[str], frozenset[str]]:
    return kf.fact_words(text)


COMMON_WORD = 400  # a word in more entries than this finds no candidates (the others do)


class _Catalog:
    """The entries of the current-state files (live and struck), indexed by id, fact,
    subject and word, so that "does a live entry restate this?" looks at a few candidates
    instead of every entry (a 3,000-entry file stays fast)."""

    def __init__(self) -> None:
        self._all: dict[tuple[str, str], tuple[str, kf.Entry]] = {}  # (path, id) -> (section title, entry)
        self._by_id: dict[str, set[str]] = {}  # live only
        self._by_fact: dict[str, set[str]] = {}  # live only
        self._by_subject: dict[str, set[tuple[str, str]]] = {}  # live only
        self._postings: dict[str, set[tuple[str, str]]] = {}  # word or number -> entries holding it
        self.files: Counter[str] = Counter()  # path -> live entries

    def add(self, path: str, title: str, e: kf.Entry) -> None:
        key = (path, e.id)
        self._all[key] = (title.strip().lower(), e)
        words, numbers = _signature(e.text)
        for w in words | numbers:
            self._postings.setdefault(w, set()).add(key)
        if e.active:
            self._live_index(path, e, add=True)

    def drop(self, path: str, e: kf.Entry) -> None:
        """E was struck: it stays a candidate for the revival check, not a live entry."""
        found = self._all.get((path, e.id))
        if found is None or not found[1].active:
            return
        self._all[(path, e.id)] = (found[0], found[1].superseded(e.superseded_by or "-"))
        self._live_index(path, found[1], add=False)

    def _live_index(self, path: str, e: kf.Entry, *, add: bool) -> None:
        fact = _bare_fact(e.text)
        if add:
            self._by_id.setdefault(e.id, set()).add(path)
            self._by_fact.setdefault(fact, set()).add(path)
            if e.subject:
                self._by_subject.setdefault(e.subject, set()).add((path, e.id))
        else:
            self._by_id.get(e.id, set()).discard(path)
            self._by_fact.get(fact, set()).discard(path)
            if e.subject:
                self._by_subject.get(e.subject, set()).discard((path, e.id))
        self.files[path] += 1 if add else -1

    def live(self) -> Iterator[tuple[str, str, kf.Entry]]:
        for (path, _), (title, e) in self._all.items():
            if e.active:
                yield path, title, e

    def paths_of(self, entry_id: str) -> list[str]:
        return sorted(self._by_id.get(entry_id, ()))

    def paths_stating(self, fact: str) -> list[str]:
        return sorted(self._by_fact.get(fact, ()))

    def with_subject(self, subject: str) -> list[tuple[str, kf.Entry]]:
        return [(p, self._all[(p, i)][1]) for p, i in sorted(self._by_subject.get(subject, ()))]

    def _candidates(self, content: str, *, superset: bool) -> list[tuple[str, str]]:
        """Entries that may restate CONTENT (SUPERSET: hold most of its words) or that
        CONTENT may restate (share at least two of its words), found through the postings
        of its rarer words."""
        words, numbers = _signature(content)
        terms = sorted(words | numbers, key=lambda w: len(self._postings.get(w, ())))
        if superset:
            # an entry holding 80% of the words holds one of the rarest 20% + 1, and every number
            pool = [w for w in terms if w in words][: int(0.2 * len(words)) + 1]
            keys: set[tuple[str, str]] = set()
            for w in pool:
                keys |= self._postings.get(w, set())
            for n in numbers:
                keys &= self._postings.get(n, set())
            return sorted(keys)
        hits: Counter[tuple[str, str]] = Counter()
        for w in terms:
            posting = self._postings.get(w, set())
            if len(posting) <= COMMON_WORD:
                hits.update(posting)
        return sorted(k for k, n in hits.items() if n >= 2)

    def restating(self, content: str, path: str | None = None) -> Iterator[tuple[str, str, kf.Entry]]:
        """(path, section title, entry) of the entries (of PATH) that say all CONTENT says."""
        for key in self._candidates(content, superset=True):
            if path is None or key[0] == path:
                title, e = self._all[key]
                if kf.restates(content, e.text):
                    yield key[0], title, e

    def restated_by(self, content: str, path: str, title: str) -> list[kf.Entry]:
        """The live entries of PATH's section TITLE that CONTENT says in full (or more)."""
        want = title.strip().lower()
        out = []
        for key in self._candidates(content, superset=False):
            t, e = self._all[key]
            if key[0] == path and t == want and e.active and kf.restates(e.text, content):
                out.append(e)
        return out


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
        self._cat: _Catalog | None = None  # entries of the current-state files (cross-file supersede)
        self._known: dict[str, tuple[set[str], set[str]]] = {}  # path -> (live facts, entry ids), kept current
        self._sessions: dict[str, str] = {}  # transcript path -> session id (citations)

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
        if ch.entry_id is not None and not kf.ENTRY_ID_RE.match(str(ch.entry_id)):
            raise ChangeRejectedError(f"{who} proposed the entry id {ch.entry_id!r} for {path}; ids look like 20260216-1850-a1b2c3.")

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
        self._invalidate()
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
        self._invalidate()

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
                self._invalidate()

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
            if not self._batching:
                self._invalidate()  # files may have changed since the last apply
            try:
                for ch in checked:
                    self._apply_one(ch, report)
            finally:
                if not self._batching:
                    self._invalidate()
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
        at = utc(ch.provenance.at)
        new_id = ch.entry_id or entry_id_for(ch)
        current = kf.is_current_state(ch.path)
        strike: list[tuple[str, str]] = []  # (path, entry id) the new entry supersedes, with every copy
        replaced: str | None = None  # the index line a keyed supersede replaces (that line only)
        if ch.key:
            line = self._key_line(doc, si, ch.key)
            if line is not None:
                if ch.action != "supersede" or not isinstance(line, kf.Entry) or kf.restates(content, line.text):
                    report.duplicates += 1
                    return
                replaced = line.id
        facts, ids = self._facts_and_ids(ch.path, doc)
        if fact in facts or new_id in ids or (current and self._repeats(ch.path, content, at)):
            report.duplicates += 1
            if self._note_session(ch, doc) is not doc:
                self._store(ch.path, self._note_session(ch, doc))
            return
        subject = kf.subject_slug(ch.subject) if ch.subject else ""
        title = doc.sections[si].title.strip().lower()
        if current and not ch.entry_id and not ch.key and any(
                e.active and t == title for _, t, e in self._catalog().restating(content)):
            report.duplicates += 1  # a fact already live in another file of its kind (one fact, one entry)
            return
        if current:
            # a fuller statement of a fact of the section replaces it (nothing is lost)
            strike += [(ch.path, e.id) for e in self._catalog().restated_by(content, ch.path, title)]
            if subject:
                for path, old in self._catalog().with_subject(subject):
                    if kf.restates(content, old.text):  # the subject's value did not change
                        report.duplicates += 1
                        return
                    strike.append((path, old.id))
            if ch.action == "supersede" and ch.target and not ch.key:
                found = self._find_target(ch.path, doc, si, ch.target)
                if found is not None:
                    strike.append(found)
        tags = tuple(t for t in ch.tags if re.fullmatch(r"[A-Za-z0-9_.-]+", t) and redact(t) == t)
        if subject and redact(subject) == subject:
            tags = (*tags, kf.SUBJECT_TAG + subject)
        entry = kf.Entry(
            id=new_id,
            text=content,
            date=at.strftime("%Y-%m-%d") if ch.dated else None,
            source=redact(self._cite(ch.provenance)),
            at=None,
            tags=tags,
        )
        if kf.render(kf.parse(entry.render())) != entry.render():  # a body the format cannot hold
            entry = kf.Entry(entry.id, re.sub(r"[()]", "", content), entry.date, entry.source, entry.at, entry.tags)
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
        facts.add(kf.normalize_fact(entry.text))
        ids.add(entry.id)
        if current:
            self._catalog().add(ch.path, doc.sections[si].title, entry)
        if replaced is not None:  # another derived line for the key: the fact it restated still stands
            where = doc.find_entry(replaced)
            if where is not None:
                old_line = doc.sections[where[0]].lines[where[1]]
                assert isinstance(old_line, kf.Entry)
                self._store(ch.path, doc.replace_line(*where, old_line.superseded(entry.id)))
                report.superseded.append((ch.path, replaced))
                facts.discard(kf.normalize_fact(old_line.text))
                if current:
                    self._catalog().drop(ch.path, old_line.superseded(entry.id))
        for path, old_id in dict.fromkeys(strike):
            if old_id != entry.id:
                self._supersede_everywhere(path, old_id, entry.id, report)

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

    # ── one fact, one live version (design §8.3, seed 002) ──
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

    def _repeats(self, path: str, content: str, at: datetime) -> bool:
        """Whether CONTENT says nothing new for the current-state file PATH: it restates a
        live entry, or revives a superseded one without being newer than what superseded
        it (a rollup or a replay of old sessions must not bring an old fact back; a fact
        said again later may)."""
        stamp = kf.format_at(at)
        for _, _, e in self._catalog().restating(content, path):
            if e.active:
                return True
            newer = kf.id_turn_at(e.superseded_by or "")
            if newer is None or stamp <= newer:
                return True
        return False

    def _find_target(self, path: str, doc: kf.KnowledgeDoc, si: int, target: str) -> tuple[str, str] | None:
        """The live entry TARGET names: an entry id (in PATH, else in any current-state
        file), or a phrase found in the facts of exactly one entry of the section, else of
        the file, else of the same-titled sections of the current-state files. Ambiguous:
        None (append only, never guess)."""
        if kf.ENTRY_ID_RE.match(target):
            if any(e.id == target and e.active for _, e in doc.entries()):
                return path, target
            where = self._catalog().paths_of(target)
            return (where[0], target) if where else None
        want = kf.normalize_fact(target)
        if not want:
            return None

        def has(e: kf.Entry) -> bool:
            return e.active and f" {want} " in f" {kf.normalize_fact(e.text)} "

        title = doc.sections[si].title.strip().lower()
        scopes = [
            [(path, e) for e in doc.sections[si].entries() if has(e)],
            [(path, e) for _, e in doc.entries() if has(e)],
            [(p, e) for p, t, e in self._catalog().live() if t == title and has(e)],
        ]
        for hits in scopes:
            ids = {e.id for _, e in hits}
            if len(ids) == 1:
                return hits[-1][0], hits[-1][1].id
            if len(ids) > 1:
                return None
        return None

    def _supersede_everywhere(self, path: str, old_id: str, new_id: str, report: ApplyReport) -> None:
        """Strike OLD_ID in PATH and every live copy of it in the current-state files: the
        lines with its id, and (in files written before copies shared ids) lines stating
        its very fact. Journals are history and keep what they said."""
        cat = self._catalog()
        doc = self.read(path)
        old = next((e for _, e in doc.entries() if e.id == old_id), None) if doc is not None else None
        fact = _bare_fact(old.text) if old is not None else None
        places = set(cat.paths_of(old_id)) | ({path} if kf.is_current_state(path) else set())
        if fact:
            places |= set(cat.paths_stating(fact))
        for rel in sorted(places):
            d = self.read(rel)
            if d is None:
                continue
            changed = d
            for si, sec in enumerate(d.sections):
                for li, line in enumerate(sec.lines):
                    if not isinstance(line, kf.Entry) or not line.active or line.id == new_id:
                        continue
                    if line.id == old_id or (fact and _bare_fact(line.text) == fact):
                        changed = changed.replace_line(si, li, line.superseded(new_id))
                        report.superseded.append((rel, line.id))
                        if rel in self._known:
                            self._known[rel][0].discard(kf.normalize_fact(line.text))
                        cat.drop(rel, line.superseded(new_id))
            if changed is not d:
                self._store(rel, changed)

    def files_with_entries(self, prefix: str = "knowledge/") -> list[str]:
        """The current-state files under PREFIX that hold live entries (written or not)."""
        return sorted(p for p, n in self._catalog().files.items() if n > 0 and p.startswith(prefix))

    def _invalidate(self) -> None:
        self._cat = None
        self._known = {}

    def _facts_and_ids(self, path: str, doc: kf.KnowledgeDoc) -> tuple[set[str], set[str]]:
        """The live facts (hand-written bullets too) and the entry ids of PATH, read once,
        then kept current by the writer: a change costs no scan of the whole file."""
        if path not in self._known:
            self._known[path] = (set(doc.facts()), {e.id for _, e in doc.entries()})
        return self._known[path]

    def live_entries(self) -> Iterator[tuple[str, str, kf.Entry]]:
        """(path, section title in lower case, entry) of every live entry of the
        current-state files, as the writer sees them now (its batch included)."""
        yield from list(self._catalog().live())

    def _catalog(self) -> _Catalog:
        """The live entries of the current-state files: read once a batch (or an apply),
        then kept current by the writer's own changes."""
        if self._cat is None:
            cat = _Catalog()
            paths = {self.repo.rel(p) for p in self.repo.knowledge_dir.rglob("*.md")} | set(self._docs)
            for rel in sorted(paths):
                if not kf.is_current_state(rel):
                    continue
                try:
                    doc = self.read(rel)
                except (OSError, UnicodeDecodeError):
                    continue
                for sec, e in doc.entries() if doc is not None else ():
                    cat.add(rel, sec.title, e)
            self._cat = cat
        return self._cat

    def _cite(self, prov: Provenance) -> str:
        """The compact citation of PROV: its session (read from the transcript when the
        provenance does not say), else the source itself as one token."""
        session = prov.session
        if session is None and prov.source.startswith("raw/") and prov.source.endswith(".md"):
            if prov.source not in self._sessions:
                try:
                    text = (self.repo.root / prov.source).read_text(encoding="utf-8")
                    self._sessions[prov.source] = parse_meta(text, prov.source).session_id
                except (OSError, UnicodeDecodeError, AutopoiesisError):  # HHMM-SESSION-slug.md: drop the time
                    self._sessions[prov.source] = re.sub(r"^\d{4}-", "", PurePosixPath(prov.source).stem)
            session = self._sessions[prov.source]
        return kf.citation_ref(session or prov.source)

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
    "entry_id_for",
    "template_for",
]
