"""Keeping memory.db fresh against git: the tree state the index recorded, what differs
from it now, and re-indexing only that difference.

*Catch up*: one `git status` (core.git.status, which takes no lock) says what HEAD is and
which memory files differ from it; if that is not what the index recorded, only the
difference is re-indexed (committed changes from `git diff OLD NEW`, plus every path dirty
then or now). So a result is never stale after a commit, checkout, merge, reset or
uncommitted edit. In a process that searches repeatedly, an inotify watcher
(background.ChangeWatcher) answers "nothing changed since the last full check" in
microseconds.

*Outdated*: an index built by another chunker, schema or embedder is rebuilt whole. A
search rebuilds a small one itself; a larger one would keep a search (a prompt hook, with
its deadline) waiting for many seconds, so the search starts that rebuild in the
background and raises IndexOutdatedError, which the search and the compiler answer with
git grep until the new index is complete.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from autopoiesis.core.paths import CONTENT_DIRS, category_of, shared_mounts
from autopoiesis.core.project import read_head
from autopoiesis.core.sqlite import SQLiteInfo
from autopoiesis.core.text import is_utf8
from autopoiesis.errors import IndexBusyError, IndexOutdatedError
from autopoiesis.git import runner as git
from autopoiesis.git.scale import sparse_state
from autopoiesis.index import build, db
from autopoiesis.index.background import ChangeWatcher, spawn_background
from autopoiesis.index.files import (
    FileItem,
    hash_bytes,
    markdown_paths,
    never_held,
    racy,
    read_memory_file,
    stat_key,
)
from autopoiesis.index.store import IndexStore, IndexUpdate

# An outdated index of at most this many files is rebuilt by the search that finds it
# (about a second on a 2-core machine); a larger one in the background (see the docstring).
INLINE_REBUILD_FILES = 1000
# Seconds a search waits for another process's hold on the index (a rebuild, a catch-up
# after a large import) before it answers with git grep (IndexBusyError): a catch-up after
# a commit takes well under this; a prompt hook has 10 s for everything
# (integrations.DEADLINES).
SEARCH_LOCK_WAIT = 2.0


@dataclass(frozen=True)
class TreeState:
    """HEAD and the memory files that differ from it, with their stat, taken at TAKEN_NS."""

    head: str  # "" before the first commit or outside git
    dirty: dict[
        str, list[int] | None
    ]  # path -> store.stat_key (mtime, ctime, size), None when deleted
    ok: bool = True  # False when git could not be asked (not a repo, git missing)
    taken_ns: int = 0  # time.time_ns() before git was asked
    sparse: str = ""  # what a sparse checkout holds (git.scale.sparse_state)
    mounts: dict[str, str] | None = None  # each team's mount (shared/<team>) -> its HEAD

    def same_as(
        self, head: str | None, dirty: dict[str, Any], mounts: Any = None, sparse: str = ""
    ) -> bool:
        return (
            self.ok
            and self.head == head
            and self.dirty == dirty
            and (self.mounts or {}) == (mounts or {})
            and self.sparse == sparse
        )


def _stat(root: Path, rel: str) -> list[int] | None:
    try:
        return stat_key(os.stat(root / rel))
    except OSError:
        return None


def tree_state(root: Path) -> TreeState:
    """HEAD and the dirty memory Markdown files, from one lock-free `git status`, and the
    HEAD of each team's mount."""
    status = git.status(root, CONTENT_DIRS)
    if not status.ok:
        return TreeState("", {}, ok=False, taken_ns=status.started_ns)
    dirty = {e.path: _stat(root, e.path) for e in status.entries if e.path.endswith(".md")}
    # a team's mount (shared/<team>) by its HEAD, read from its files: no second git
    # process per search; its notes change by commits (`share`, `sync`), seen through it
    mounts = {m: head for m in shared_mounts(root) if (head := read_head(root / m))}
    return TreeState(
        status.head,
        dirty,
        taken_ns=status.started_ns,
        sparse=sparse_state(root),
        mounts=mounts or None,
    )


def sync_meta(state: TreeState) -> dict[str, str]:
    """How a tree state is recorded in index_meta."""
    return {
        "head": state.head,
        "dirty": json.dumps(state.dirty, sort_keys=True),
        "synced": str(time.time()),
        "dirty_taken_ns": str(state.taken_ns),
        "sparse": state.sparse,
        "mounts": json.dumps(state.mounts or {}, sort_keys=True),
    }


@dataclass(frozen=True)
class IndexStatus:
    db_path: str
    exists: bool
    files_indexed: int
    chunks: int
    files_in_repo: int
    head_indexed: str
    head_now: str
    fresh: bool
    embedder: str
    dimensions: int
    chunker_version: str
    sqlite: SQLiteInfo
    stale_paths: tuple[str, ...] = ()


class Freshness:
    """Catch-up of one IndexStore with its repo's work tree."""

    def __init__(self, store: IndexStore):
        self.store = store
        self.root = store.repo.root
        self._watcher: ChangeWatcher | None = None
        self._watcher_tried = False
        self._checks = 0  # catch-ups so far
        self.watch_from = (
            2  # the catch-up that starts the watcher (1: a process known to search many times)
        )

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        self._watcher, self._watcher_tried = None, False

    def recorded(self) -> tuple[str | None, dict[str, Any]]:
        """(HEAD, dirty paths) as the index last recorded them; HEAD None before the first build."""
        head = self.store.meta("head")
        try:
            dirty = json.loads(self.store.meta("dirty") or "{}")
        except ValueError:
            dirty = {}
        return head, dirty

    def recorded_mounts(self) -> dict[str, str]:
        """Each team's mount and its HEAD, as the index last recorded them."""
        try:
            mounts = json.loads(self.store.meta("mounts") or "{}")
        except ValueError:
            return {}
        return mounts if isinstance(mounts, dict) else {}

    def _mount_changes(self, state: TreeState) -> list[str] | None:
        """The notes each team's mount changed since the recorded HEADs (None: cannot tell,
        a mount came or went)."""
        old, now = self.recorded_mounts(), state.mounts or {}
        if set(old) != set(now):
            return None
        changed: list[str] = []
        for mount, head in now.items():
            if old[mount] != head:
                found = git.changed_between(self.root / mount, old[mount], head, ("knowledge",))
                if found is None:
                    return None
                changed += [f"{mount}/{p}" for p in found]
        return changed

    def is_fresh(self, state: TreeState | None = None) -> bool:
        """Whether the index holds what STATE (now, by default) says the files hold. A
        recorded dirty file whose stat was taken too soon after it changed (store.racy)
        could have changed again unseen, so its content is compared with what was indexed."""
        state = state or tree_state(self.root)
        head, dirty = self.recorded()
        sparse = self.store.meta("sparse") or ""
        if (
            head is None
            or self.store.needs_rebuild()
            or not state.same_as(head, dirty, self.recorded_mounts(), sparse)
        ):
            return False
        taken = int(self.store.meta("dirty_taken_ns") or 0)
        return all(
            self._holds(path) for path, key in dirty.items() if key is not None and racy(key, taken)
        )

    def _holds(self, path: str) -> bool:
        """Whether the index holds PATH's content as it is on disk now."""
        if never_held(path):
            return True  # no file it can hold: the catch-up warned (read_memory_file)
        row = self.store.conn.execute(
            "SELECT content_hash FROM files WHERE path = ?", (path,)
        ).fetchone()
        if never_held(path, _size(self.root / path)):
            return row is None  # too large to index: held as nothing
        try:
            data = (self.root / path).read_bytes()
        except OSError:
            return row is None
        return row is not None and row[0] == hash_bytes(data)

    def rebuild_full(
        self, progress: Callable[[int, int], None] | None = None, *, seconds: float | None = None
    ) -> IndexUpdate:
        """Re-index every memory file from scratch (see IndexStore.rebuild), recording
        the tree state it started from; an index that holds nothing yet is built in steps
        (index/build.py), for at most about SECONDS when given."""
        self.store.warnings.clear()
        with self.store.write_lock():
            state = tree_state(self.root)
            if build.builds_in_steps(self.store):
                return build.build_in_steps(self.store, sync_meta(state), progress, seconds=seconds)
            return self.store.rebuild(sync_meta(state), progress)

    def change_watcher(self) -> ChangeWatcher | None:
        if not self._watcher_tried:
            self._watcher_tried = True
            self._watcher = ChangeWatcher.start(self.root)
        return self._watcher

    def catch_up(self, *, timeout: float = 60.0, searching: bool = False) -> IndexUpdate:
        """Bring the index up to date with HEAD and the working tree, re-indexing only
        what differs from what it recorded. With a watcher, "no event at all since the
        last full check" skips the check; any event, or no watcher, means a full check.
        The watcher starts at the second catch-up: arming it walks every memory folder
        (~30 ms at 10,000 files), which a process that searches once never gets back.
        SEARCHING: a search waits for this, but at most SEARCH_LOCK_WAIT for another
        process's hold on the index (IndexBusyError); an outdated index of more than
        INLINE_REBUILD_FILES is then rebuilt in the background (IndexOutdatedError)."""
        self._checks += 1
        watcher = self.change_watcher() if self._checks >= self.watch_from else None
        if watcher is not None:
            if watcher.changed():
                watcher.verified = False
            elif watcher.verified:
                return IndexUpdate()
        try:
            report = self._catch_up_full(timeout, searching)
        except self.store.db_error as exc:
            if searching and db.classify(exc) == db.BUSY:  # another connection is writing
                raise IndexBusyError(self.store.explain(db.BUSY, exc)) from exc
            raise
        if watcher is not None:
            watcher.verified = True  # armed before this check, so later changes are pending
        return report

    def _catch_up_full(self, timeout: float, searching: bool = False) -> IndexUpdate:
        started = time.monotonic()
        state = tree_state(self.root)
        if state.ok and self.is_fresh(state):
            return IndexUpdate()
        if build.pending(self.store) is not None:
            return self._while_building(searching)
        if searching and self.store.needs_rebuild() and self.store.meta("head") is not None:
            indexed = self.store.count("files")
            if indexed > INLINE_REBUILD_FILES:
                self._rebuild_in_background(indexed)
        if searching:
            lock = self.store.write_lock(min(timeout, SEARCH_LOCK_WAIT), busy=IndexBusyError)
        else:
            lock = self.store.write_lock(timeout)
        with lock:
            state = tree_state(self.root)  # again: the other holder may have moved things on
            if self.store.needs_rebuild() or self.store.meta("head") is None:
                return self.rebuild_full()
            if state.ok and self.is_fresh(state):
                return IndexUpdate()
            head, dirty = self.recorded()
            changed = (
                git.changed_between(self.root, head or "", state.head, CONTENT_DIRS)
                if head != state.head
                else []
            )
            in_mounts = self._mount_changes(state)
            if (
                changed is None
                or in_mounts is None
                or not state.ok
                or state.sparse != (self.store.meta("sparse") or "")
            ):
                # git cannot tell, or a sparse checkout holds other folders now: compare
                # every file by stat and hash
                candidates = None
            else:
                candidates = set(changed) | set(in_mounts) | set(dirty) | set(state.dirty)
            return self._reconcile(candidates, state, started)

    def _rebuild_in_background(self, indexed: int) -> NoReturn:
        """Start the rebuild of an outdated index in the background, unless one runs (it
        holds the write lock), and say so: IndexOutdatedError."""
        if self.store.try_write_lock():
            try:
                # a plain sync: its catch-up rebuilds what is outdated, under the lock, and
                # one started by a search meanwhile finds the index fresh (no second rebuild)
                spawn_background(self.store.repo)
            except OSError:
                pass  # the next search tries again; `autopoiesis index rebuild` does it now
            finally:
                self.store.release_write_lock()
        raise IndexOutdatedError(
            f"the search index ({indexed:,} files) was built by another version "
            f"({'; '.join(self.store.outdated())}) and is being rebuilt in the background; "
            "`autopoiesis index rebuild` does it now"
        )

    def _while_building(self, searching: bool = False) -> IndexUpdate:
        """A build in steps is under way (index/build.py): search what it has indexed, with
        a notice, rather than wait for it; a search (SEARCHING) of an index that holds
        nothing yet is IndexOutdatedError, which its caller answers with `git grep`. One
        whose process died is continued in the background."""
        if self.store.try_write_lock():
            try:
                spawn_background(self.store.repo, build=True)
            except OSError:
                pass  # the next catch-up, or `autopoiesis index rebuild`, continues it
            finally:
                self.store.release_write_lock()
        record = build.pending(self.store) or {}
        note = build.notice(record)
        if searching and self.store.count("files") == 0:
            # nothing indexed yet (a build just started, after a corrupt file was moved
            # aside): a search of it would answer nothing, where `git grep` answers
            raise IndexOutdatedError(note)
        if note not in self.store.warnings:
            self.store.warnings.append(note)
        return IndexUpdate(warnings=(note,))

    def _reconcile(
        self, candidates: set[str] | None, state: TreeState, started: float
    ) -> IndexUpdate:
        store = self.store
        store.warnings.clear()
        rows = "SELECT path, mtime_ns, ctime_ns, size, content_hash, last_indexed FROM files"
        known = {r[0]: r[1:] for r in store.conn.execute(rows)} if candidates is None else {}
        if candidates is None:
            on_disk = set(markdown_paths(store.repo))
            candidates = on_disk | set(known)
        to_write: list[FileItem] = []
        to_remove: list[str] = []
        unchanged = 0
        for path in sorted(candidates):
            row = (
                known.get(path)
                if known or not is_utf8(path)  # no row names it: read_memory_file warns
                else store.conn.execute(
                    "SELECT mtime_ns, ctime_ns, size, content_hash, last_indexed FROM files WHERE "
                    "path = ?",
                    (path,),
                ).fetchone()
            )
            try:
                st: os.stat_result | None = os.stat(self.root / path)
            except OSError:
                st = None
            if st is None or category_of(path) is None:
                if row is not None:
                    to_remove.append(path)
                continue
            if (
                row is not None
                and list(row[:3]) == stat_key(st)
                and not racy(stat_key(st), int(row[4] * 1e9))
            ):
                unchanged += 1
                continue
            got = read_memory_file(store.repo, path, store.warnings)
            if got is None:
                if row is not None:
                    to_remove.append(path)
                continue
            if row is not None and row[3] == got[2]:
                unchanged += 1  # touched, not changed: refresh the stat only
                store.refresh_stat(path, got[1])
                continue
            to_write.append((path, *got))
        embedded = store.apply(to_write, to_remove, sync_meta(state))
        return IndexUpdate(
            indexed=len(to_write),
            removed=len(to_remove),
            unchanged=unchanged,
            embedded=embedded,
            seconds=time.monotonic() - started,
            warnings=tuple(store.warnings),
        )

    def status(self) -> IndexStatus:
        store = self.store
        assert store.info is not None  # set when the store opened memory.db
        state = tree_state(self.root)
        head, _ = self.recorded()
        # a file the index never holds (read_memory_file skips it): not behind for it
        on_disk = {p for p in markdown_paths(store.repo) if not never_held(p)}
        rows = {
            p: ([m, c, s], h)
            for p, m, c, s, h in store.conn.execute(
                "SELECT path, mtime_ns, ctime_ns, size, content_hash FROM files"
            )
        }
        # one on disk and not indexed is behind unless it is too large to hold
        stale = [
            p
            for p in sorted(on_disk ^ set(rows))
            if p in rows or not never_held(p, _size(self.root / p))
        ]
        for p in on_disk & set(rows):
            try:
                st = os.stat(self.root / p)
            except OSError:
                continue
            if stat_key(st) != rows[p][0] and not self._holds(p):
                # a stat that differs with the same content (a copy, a restore, a touch)
                # is no change: git sees none, so no search would "catch it up"
                stale.append(p)
        return IndexStatus(
            db_path=str(store.db_path),
            exists=store.db_path.exists(),
            files_indexed=len(rows),
            chunks=store.count("chunks"),
            files_in_repo=len(on_disk),
            head_indexed=head or "",
            head_now=state.head,
            fresh=self.is_fresh(state) and not stale,
            embedder=store.meta("embedder") or "",
            dimensions=int(store.meta("dimensions") or 0),
            chunker_version=store.meta("chunker_version") or "",
            sqlite=store.info,
            stale_paths=tuple(sorted(set(stale))),
        )


def _size(path: Path) -> int | None:
    """PATH's size, or None when it is gone."""
    try:
        return os.stat(path).st_size
    except OSError:
        return None
