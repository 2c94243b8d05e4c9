"""The index's work outside a search: the detached sync after a commit, and the inotify
watcher that lets a long-lived process skip freshness checks.

**The post-commit sync.** The post-commit hook (the hooks/post-commit shell shim, or
hooks.post_commit for `autopoiesis git-hooks run post-commit`) runs inside `git commit`. It
must not slow the commit, so it does no indexing itself: it starts `python -m
autopoiesis.index.sync --root ROOT` as a detached process (its own session, so a
terminal's Ctrl-C or the hook's exit does not kill it) and returns. That process takes the
index lock, re-indexes what changed since the commit the index recorded (git's own diff),
and repeats while HEAD keeps moving (a burst of commits costs one catch-up), then folds
the chunks written since the last build into the term postings when they have grown: see
`sync_until_fresh`. Searches catch up by themselves too, so a slow or failed background
run is never seen as a stale result; it only moves work off the next search.

**The watcher.** The index's full freshness check asks git for HEAD and the dirty files;
on a memory repo of 10,000 files that is ~30 ms, spent before every search. A process
that searches again and again (an agent harness, the context compiler) can do better:
inotify tells it when anything under the memory folders or git's own state moved, and
when nothing did, the last full check still holds. Correctness rules, because a missed
change would mean a stale result:
* the watcher is armed *before* the full check it vouches for, so a change made during
  that check is still pending afterwards;
* "nothing changed" is trusted only after a full check completed with the watcher armed
  (`verified`), and only while no event at all has arrived since;
* a new folder gets its watch as soon as its creation is read, before the full check that
  covers what was written into it meanwhile;
* any doubt (queue overflow, a watched folder removed or moved, an error) means: do the
  full check. Where inotify is unavailable (not Linux, no inotify_simple, no watches left)
  there is no watcher and every search does the full check.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.config import CONFIG_FILENAME
from autopoiesis.core.paths import CONTENT_DIRS, MemoryRepo
from autopoiesis.index.store import IndexUpdate

SYNC_MODULE = (
    "autopoiesis.index.sync"  # what `python -m` runs; the hooks/post-commit shim names it too
)


# ── the detached sync ──
def spawn_background(repo: MemoryRepo, *, rebuild: bool = False, build: bool = False) -> int:
    """Start the background sync of REPO (after a full rebuild with REBUILD; after going
    on with a build in steps under way with BUILD, index/build.py); returns its pid."""
    args = [sys.executable, "-m", SYNC_MODULE, "--root", str(repo.root)]
    if rebuild:
        args.append("--rebuild")
    if build:
        args.append("--build")
    with repo.open_state_log("index_sync_log") as out:
        proc = subprocess.Popen(
            args,
            cwd=repo.root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    return proc.pid


class Syncable(Protocol):
    """What the sync needs of an index (SearchIndex)."""

    def rebuild_full(self, progress: Callable[[int, int], None] | None = None) -> IndexUpdate: ...

    def catch_up(self, *, timeout: float = 60.0) -> IndexUpdate: ...

    def is_fresh(self) -> bool: ...

    def compact(self) -> list[str]: ...


def log_line(message: str) -> None:
    """One line of the sync's log (its stdout, appended to the index_sync_log state file)."""
    print(f"{format_ts(utc_now())} {message}", flush=True)


def sync_until_fresh(
    index: Syncable,
    *,
    rebuild: bool = False,
    rounds: int = 5,
    log: Callable[[str], None] = log_line,
) -> None:
    """Catch INDEX up (after a full rebuild when REBUILD), again while HEAD keeps moving,
    at most ROUNDS times."""
    if rebuild:
        report = index.rebuild_full()
        log(f"rebuild: {report.indexed} files, {report.embedded} embedded, {report.seconds:.2f} s")
    for _ in range(rounds):
        report = index.catch_up(timeout=300)
        if report.indexed or report.removed or report.full:
            log(f"sync: {report.indexed} indexed, {report.removed} removed, {report.seconds:.3f} s")
        for w in report.warnings:
            log(f"warning: {w}")
        if index.is_fresh():
            break
    for done in index.compact():
        log(done)


# ── the watcher ──
# Content changes; IN_ATTRIB is left out on purpose: a bare touch changes no content.
_CONTENT_MASK_NAMES = (
    "CREATE",
    "DELETE",
    "MODIFY",
    "CLOSE_WRITE",
    "MOVED_FROM",
    "MOVED_TO",
    "DELETE_SELF",
    "MOVE_SELF",
)


_GIT_STATE_FILES = {"HEAD", "index", "packed-refs"}


class ChangeWatcher:
    """inotify watches on the memory folders and on git's HEAD, index and refs."""

    def __init__(self, root: Path):
        from inotify_simple import INotify, flags

        self.root = root
        self._flags = flags
        self._mask = 0
        for name in _CONTENT_MASK_NAMES:
            self._mask |= getattr(flags, name)
        self._inotify = INotify()
        self._watched: dict[int, Path] = {}
        self._tops = {Path(d).parts[0] for d in CONTENT_DIRS}
        self.verified = False
        self._arm()

    def _arm(self) -> None:
        """Watch every folder that matters (adding a watch twice is harmless)."""
        git_dir = self.root / ".git"
        # the root itself, for content folders that appear or vanish at the top level
        self._add(self.root, recursive=False)
        # git's state: HEAD and the index live in .git/, branch tips under refs/heads/
        self._add(git_dir, recursive=False)
        self._add(git_dir / "refs" / "heads", recursive=True)
        for top in CONTENT_DIRS:
            self._add(self.root / top, recursive=True)

    @classmethod
    def start(cls, root: Path) -> ChangeWatcher | None:
        """A watcher for ROOT, or None where inotify cannot serve (then: full checks)."""
        if not (root / ".git").is_dir():
            return None  # a linked worktree or no git: keep to full checks
        try:
            return cls(root)
        except (ImportError, OSError, AttributeError):
            return None

    def _add(self, folder: Path, *, recursive: bool) -> None:
        if not folder.is_dir():
            return
        folders = [folder]
        if recursive:
            for dirpath, dirnames, _ in os.walk(folder):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                folders.extend(Path(dirpath) / d for d in dirnames)
        for f in folders:
            wd = self._inotify.add_watch(str(f), self._mask)
            self._watched[wd] = f

    def _relevant(self, folder: Path | None, name: str) -> bool:
        if folder == self.root:
            # content folders appearing or vanishing, and the config (a new embedder means
            # a rebuild); not memory.db and its journal files, which the index itself writes
            return name in self._tops or name == CONFIG_FILENAME
        if folder == self.root / ".git":
            return name in _GIT_STATE_FILES  # not index.lock, COMMIT_EDITMSG, logs, ...
        return True

    def changed(self) -> bool:
        """Drain the pending events: True when anything may have changed since the last
        call (and then the caller must do a full check)."""
        try:
            events = self._inotify.read(timeout=0)
        except OSError:
            self.verified = False
            return True
        flags = self._flags
        relevant = False
        rescan = False
        for ev in events:
            if ev.mask & flags.Q_OVERFLOW:
                relevant = rescan = True
                continue
            folder = self._watched.get(ev.wd)
            if ev.mask & (flags.DELETE_SELF | flags.MOVE_SELF | flags.IGNORED):
                self._watched.pop(ev.wd, None)
                relevant = rescan = True
                continue
            if not self._relevant(folder, ev.name):
                continue
            relevant = True
            if (
                ev.mask & flags.ISDIR
                and ev.mask & (flags.CREATE | flags.MOVED_TO)
                and folder is not None
            ):
                rescan = True
        if rescan:
            try:
                self._arm()  # before the full check that follows, so nothing falls between
            except OSError:
                self.verified = False
        return relevant

    def close(self) -> None:
        try:
            self._inotify.close()
        except OSError:
            pass
