"""The knowledge files of one repo as parsed documents, for the writer: read once and
written once at the end while batching, redacted when stored whole, and the caches
derived from them (the entry catalog, each file's live facts and ids), which the
writer's own changes keep current."""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Self

from autopoiesis.core.frontmatter import parse_yaml
from autopoiesis.core.frontmatter import split as split_frontmatter
from autopoiesis.core.paths import MemoryRepo, atomic_write
from autopoiesis.core.private import MAGIC, is_ciphertext
from autopoiesis.core.redact import Redactor
from autopoiesis.core.text import utf8_problem
from autopoiesis.errors import (
    FrontmatterError,
    KnowledgeFileError,
    PrivateKnowledgeError,
    UnsafePathError,
)
from autopoiesis.formats import knowledge as kf
from autopoiesis.knowledge.catalog import EntryCatalog

if TYPE_CHECKING:
    from autopoiesis.git.commits import CommitResult


def frontmatter_problem(relpath: str, text: str) -> str | None:
    """Why TEXT's frontmatter cannot be read as YAML (the pre-commit hook's words: not
    closed, not valid, not a mapping, an alias), None when it can or there is none."""
    try:
        head, _ = split_frontmatter(text, relpath)
    except FrontmatterError as exc:
        return str(exc)
    return None if head is None else _yaml_problem(relpath, head)


@functools.lru_cache(maxsize=4096)
def _yaml_problem(relpath: str, head: str) -> str | None:
    """frontmatter_problem of one frontmatter, remembered: the writer reads every
    current-state file at each apply (its entry catalog), and YAML costs ~0.1 ms a file."""
    try:
        parse_yaml(head, relpath)
    except FrontmatterError as exc:
        return str(exc)
    return None


class KnowledgeDocuments:
    """The documents of REPO's knowledge files, cached while batching. SEES, when given,
    is what the caller may read (a model: `MemoryRepo.may_reach_model`): the files it
    does not see are left out of the entry catalog, so nothing derived from them (a
    duplicate, a restated or superseded entry, a target found) answers that caller."""

    def __init__(self, repo: MemoryRepo, *, sees: Callable[[str], bool] | None = None):
        self.repo = repo
        self.sees = sees
        self._docs: dict[str, kf.KnowledgeDoc] = {}
        self._dirty: set[str] = set()
        self._batching = 0
        self._sizes: dict[str, int] = {}  # bytes of each document as stored (FILE_BYTE_CAP)
        self._redactor: Redactor | None = None
        # entries of the current-state files (cross-file supersede)
        self._cat: EntryCatalog | None = None
        # path -> (live facts, entry ids), kept current
        self._known: dict[str, tuple[set[str], set[str]]] = {}

    @property
    def redactor(self) -> Redactor:
        if self._redactor is None:
            self._redactor = self.repo.redactor()
        return self._redactor

    def read(self, relpath: str) -> kf.KnowledgeDoc | None:
        if relpath in self._docs:
            return self._docs[relpath]
        full = self.repo.root / relpath
        if self.repo.is_link(relpath):
            raise UnsafePathError(
                f"{relpath} is a symbolic link (or in a linked folder); knowledge is written "
                "only to regular files. Remove it with `git rm` (`autopoiesis verify` lists them)."
            )
        if full.is_dir():  # a hand move put a folder where the note was: nothing to read
            raise KnowledgeFileError(
                f"{relpath} is a folder, where a knowledge file belongs; nothing is written "
                f"to it until it is a file again: move the folder away (`mv {relpath} "
                f"{relpath}.d`), then bring the note back (`git restore {relpath}`)."
            )
        if full.exists():
            with full.open("rb") as fh:
                head = fh.read(len(MAGIC))
        else:
            # a sparse checkout (a sub-agent's) leaves the file out: written as if new, its
            # few entries replaced the memory's whole note at the merge
            from autopoiesis.git.runner import left_out_of_checkout

            held = left_out_of_checkout(self.repo.root, relpath)
            if held is None:
                return None
            head = held
        if is_ciphertext(head):
            raise PrivateKnowledgeError(
                f"{relpath} is private and locked in this clone (git-crypt): it cannot be "
                "written. Unlock it with `autopoiesis private unlock KEYFILE`."
            )
        try:
            if full.exists():
                text = full.read_text(encoding="utf-8")
            else:  # as read_text reads it: universal newlines
                text = head.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError:
            data = full.read_bytes() if full.exists() else head
            why = utf8_problem(data, relpath) or f"{relpath} is not UTF-8 text"
            raise KnowledgeFileError(f"{why}. Nothing is written to it until then.") from None
        if "\x00" in text:  # git and the index take the file for binary: no diff, no search
            line = text.count("\n", 0, text.index("\x00")) + 1
            raise KnowledgeFileError(
                f"{relpath} holds a NUL byte (line {line}), which makes it binary to git and "
                "to search; knowledge files are UTF-8 Markdown. Delete that byte (`grep -naP "
                f"'\\x00' {relpath}` shows the line)."
            )
        problem = frontmatter_problem(relpath, text)
        if problem is not None:
            # the pre-commit hook refuses the file as it is: what the writer added to it
            # could not be committed, and the run would count as done all the same
            raise KnowledgeFileError(
                f"{problem} Fix it (`git diff {relpath}` shows a hand edit); nothing is "
                "written to it until then."
            )
        doc = kf.parse(text)
        if self._batching:
            self._docs[relpath] = doc
        return doc

    def read_in_sweep(self, relpath: str) -> kf.KnowledgeDoc | None:
        """`read` for a pass over every note (condensing, pruning, a merge's checks): a
        file no reader can take (not UTF-8, KnowledgeFileError) is passed over rather than
        stopping the pass, as the index passes over it; None for it and a missing file."""
        try:
            return self.read(relpath)
        except KnowledgeFileError:
            return None

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
            note_written(self.repo, {relpath: text})
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
        under = "knowledge" if relpath.startswith("knowledge/") else "archive"
        self.repo.resolve_inside(relpath, under=under)
        self._invalidate()
        self._store(relpath, self._redact_doc(doc))

    def _redact_doc(self, doc: kf.KnowledgeDoc) -> kf.KnowledgeDoc:
        r = self.redactor.redact
        sections = []
        for sec in doc.sections:
            lines: list[kf.Line] = []
            for line in sec.lines:
                if isinstance(line, kf.Entry):
                    source = r(line.source) if line.source else line.source
                    line = kf.Entry(line.id, r(line.text), line.date, source, line.at, line.tags)
                else:
                    line = r(line)
                lines.append(line)
            sections.append(kf.Section(sec.level, r(sec.title), tuple(lines)))
        fm = r(doc.frontmatter) if doc.frontmatter else doc.frontmatter
        return kf.KnowledgeDoc(fm, tuple(sections), doc.final_newline, doc.bom)

    def forget(self, relpath: str) -> None:
        """Drop a cached document (its file was moved or removed by someone else)."""
        self._docs.pop(relpath, None)
        self._dirty.discard(relpath)
        self._invalidate()

    @contextlib.contextmanager
    def batch(self) -> Iterator[Self]:
        """Read each file once and write it once, at the end (or at each `flush`). The
        whole batch holds the knowledge-writer lock, as one `apply` does: a file read at
        its start is written back at its end, so another writer (the daemon's condenser,
        a sync's merge, another process's extraction) changing that file in between
        would be overwritten, or would check its change against what the batch had not
        written yet and write an entry the batch writes too (a team run found the same
        journal entry twice, written by an extraction and a condensation at once)."""
        outer = not self._batching
        with self.repo.writer_lock():
            if outer:  # what others wrote before the lock was ours
                self._docs.clear()
                self._invalidate()
            self._batching += 1
            try:
                yield self
            finally:
                self._batching -= 1
                if outer:
                    try:
                        self.flush()
                    finally:
                        self._docs.clear()
                        self._invalidate()

    def commit(self, paths: Sequence[str], message: str) -> CommitResult:
        """Write what the batch holds, then commit PATHS under MESSAGE, inside `batch()`:
        the writer's lock is held from the first write to the commit, so the commit holds
        what this writer wrote and nothing another wrote. Let go in between (a write, then
        a commit), another process (an extraction, an agent's `remember`, the pruner)
        wrote the same journal or MEMORY.md meanwhile and the first commit carried its
        entries under the first's message, or took the files the other had recorded as
        written and not committed (`written_not_committed`). Outside a batch it raises:
        the writes it would commit were made with the lock let go already."""
        from autopoiesis.git.repo import MemoryGit

        if not self._batching:
            raise RuntimeError(
                "KnowledgeWriter.commit outside its batch(): what it commits was written "
                "with the writer's lock let go since, and may hold another writer's lines"
            )
        self.flush()
        return MemoryGit(self.repo).commit_paths(paths, message)

    def flush(self) -> list[str]:
        # archive/ before knowledge/: what a batch moves out of a note (MEMORY.md's
        # overflow, an evicted file) is in its archive before it leaves the note, so a run
        # killed between the writes leaves it in both, never in neither
        written = sorted(self._dirty, key=lambda rel: (not rel.startswith("archive/"), rel))
        texts = {rel: kf.render(self._docs[rel]) for rel in written}
        note_written(self.repo, texts)
        for rel, text in texts.items():
            atomic_write(self.repo.root / rel, text)
        self._dirty.clear()
        self._sizes.clear()
        return written

    def _invalidate(self) -> None:
        self._cat = None
        self._known = {}

    def _facts_and_ids(self, path: str, doc: kf.KnowledgeDoc) -> tuple[set[str], set[str]]:
        """The live facts (hand-written bullets too) and the entry ids of PATH, read once,
        then kept current by the writer: a change costs no scan of the whole file."""
        if path not in self._known:
            self._known[path] = (set(doc.facts()), {e.id for _, e in doc.entries()})
        return self._known[path]

    def _catalog(self) -> EntryCatalog:
        """The live entries of the current-state files: read once a batch (or an apply),
        then kept current by the writer's own changes."""
        if self._cat is None:
            cat = EntryCatalog()
            on_disk = {self.repo.rel(p) for p in self.repo.iter_markdown("knowledge")}
            paths = on_disk | set(self._docs)
            for rel in sorted(paths):
                if not kf.is_current_state(rel) or (self.sees is not None and not self.sees(rel)):
                    continue
                try:
                    doc = self.read(rel)
                except (OSError, KnowledgeFileError, PrivateKnowledgeError):
                    continue  # unreadable here (a private note locked in this clone)
                for sec, e in doc.entries() if doc is not None else ():
                    cat.add(rel, sec.title, e)
            self._cat = cat
        return self._cat


_REMOVED = "-"  # the digest recorded for a file the writer removes (moved to archive/)


def note_written(repo: MemoryRepo, texts: Mapping[str, str], removed: Iterable[str] = ()) -> None:
    """Record each file of TEXTS (path -> the text about to be written) as written by the
    writer and not committed yet, and each of REMOVED as removed by it (a note moved to
    archive/ or renamed), before it is written or removed: a run killed between its writes
    and its commit (or one whose commit a lock or a merge refused) leaves them changed,
    and its next run (`extract` records the transcript as done, `prune` finds the
    journal archived already) no longer knows them from a person's own edits, which no
    command commits. `written_not_committed` gives them to the next extraction's or
    maintenance's commit; a file edited since (its text no longer the one recorded, a
    removed one back) is the person's, and stays out. Appended under the record's lock,
    which `written_not_committed` holds while it cuts the record."""
    lines = [f"{_digest(t)} {p}\n" for p, t in texts.items()]
    lines += [f"{_REMOVED} {p}\n" for p in removed]
    if lines:
        with repo.lock("knowledge-written"):
            with open(repo.state_file("knowledge_written"), "a", encoding="utf-8") as fh:
                fh.write("".join(lines))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def written_not_committed(repo: MemoryRepo) -> list[str]:
    """The files `note_written` recorded that still hold the text it recorded and differ
    from the last commit; the record is cut to them, under its lock: a record another
    writer appended between the read and the cut was lost with it, and what that run
    wrote, were it killed before its commit, was left uncommitted for good."""
    from autopoiesis.git.runner import status

    record = repo.state_file("knowledge_written", create=False)
    with repo.lock("knowledge-written"):
        try:
            lines = record.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        noted: dict[str, str] = {}
        for line in lines:  # the last record of a path is what it was written with last
            digest, _, path = line.partition(" ")
            if path:
                noted[path] = digest
        if not noted:
            return []
        changed = {e.path for e in status(repo.root, sorted(noted)).entries}
        left = []
        for path in sorted(noted.keys() & changed):
            if noted[path] == _REMOVED:
                if not (repo.root / path).exists():
                    left.append(path)
                continue
            try:
                text = (repo.root / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # deleted since, or no longer the writer's text
            if _digest(text) == noted[path]:
                left.append(path)
        atomic_write(record, "".join(f"{noted[p]} {p}\n" for p in left))
    return left
