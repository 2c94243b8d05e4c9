"""Transcript commits of MemoryGit: one `conversation:` commit at the end of each session,
cheap whatever the size of the repository (docs/scale.md).

* **The road**: a commit that only adds transcripts is made through git's plumbing
  (git/direct_commit.py: no read or write of the whole index, the pre-commit hook's checks
  run in-process, the reference-transaction and post-commit hooks run as for any commit);
  where that road is closed (a merge in progress, a foreign pre-commit hook, no commit
  yet) `git commit --only` makes it, as before.
* **Group commit**: whoever holds the repo's git lock also commits the other finished
  transcripts waiting for it (`conversation: {slug} (+N more)`, one `Session:` line
  each). A waiter says so in the commit queue (`.autopoiesis/queue/transcripts/`, one
  small file a transcript) before it waits, so the lock holder finds them without
  listing the work tree; one that finds its transcript committed returns that commit.
* **Already committed?** is asked of HEAD's tree (one `ls-tree`), not of the history: `git
  log -1 -- PATH` of a path never committed walks every commit (2.5 s at 10,000).

`autopoiesis commit`, sync and recovery commit every finished transcript the work tree
holds (`closed_uncommitted_transcripts`, one `git status`), through the same road.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from pathlib import Path

from autopoiesis.core.paths import CONVERSATIONS_DIR
from autopoiesis.git.commits import CommitResult, GitCore
from autopoiesis.git.direct_commit import commit_new_files
from autopoiesis.git.runner import ls_tree, uncommitted


class TranscriptCommitsMixin(GitCore):
    """Committing finished transcripts."""

    def _queue_entry(self, relpath: str) -> Path:
        name = hashlib.blake2b(relpath.encode("utf-8", "surrogateescape"), digest_size=12)
        folder = self.repo.state_file("commit_queue")
        folder.mkdir(exist_ok=True)
        return folder / name.hexdigest()

    def _queued(self) -> list[str]:
        """The transcripts the commit queue names (in the order they were queued)."""
        folder = self.repo.state_file("commit_queue", create=False)
        try:
            entries = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime_ns)
        except OSError:
            return []
        out = []
        for entry in entries:
            try:
                out.append(entry.read_text(encoding="utf-8", errors="surrogateescape"))
            except OSError:
                continue
        return out

    def _finished(self, paths: Sequence[str], *, say_unreadable: bool = False) -> list[str]:
        """Those of PATHS that are finished transcripts (closed or recovered) on disk. One
        that cannot be read (a frontmatter a hand edit or another tool broke, a start in
        the year 1) is never committed; with SAY_UNREADABLE a warning names it and why,
        else a transcript left out of every commit would wait in the work tree unsaid."""
        from autopoiesis.errors import TranscriptFormatError
        from autopoiesis.formats.transcript import decode, parse_meta

        ready = []
        for rel in dict.fromkeys(paths):
            if not (rel.startswith(CONVERSATIONS_DIR + "/") and rel.endswith(".md")):
                continue
            try:
                meta = parse_meta(decode((self.root / rel).read_bytes(), rel), rel)
            except OSError:
                continue
            except TranscriptFormatError as exc:
                if say_unreadable:
                    warnings.warn(
                        f"{exc} It is not committed until it can be read: fix it, then "
                        "run `autopoiesis commit` again.",
                        stacklevel=2,
                    )
                continue
            if meta.status != "open":
                ready.append(rel)
        return ready

    def closed_uncommitted_transcripts(self) -> list[str]:
        """Transcripts that are finished (closed or recovered) but not committed yet,
        untracked or staged alike; a warning names each that cannot be read."""
        return self._finished(uncommitted(self.root, [CONVERSATIONS_DIR]), say_unreadable=True)

    def commit_new_transcripts(self, paths: Sequence[str], message: str) -> CommitResult:
        """Commit the finished transcripts PATHS with MESSAGE (the caller holds the git
        lock): through plumbing where it can, else `git commit --only`. A private one this
        clone cannot encrypt is left out (GitCore.held_out)."""
        held = self.held_out(paths)
        paths = [p for p in paths if p not in held]
        if not paths:
            return CommitResult(None, message, ())
        done = commit_new_files(self, paths, message)
        if done is None:
            return self._commit_paths_locked(paths, message)
        return CommitResult(done[0] or None, message, tuple(done[1]))

    def commit_transcript(self, relpath: str, slug: str) -> str | None:
        """Commit a finished transcript as `conversation: {slug}` / blank / `Session: {path}`,
        with the others the commit queue names (see the module doc)."""
        entry = self._queue_entry(relpath)
        entry.write_text(relpath, encoding="utf-8", errors="surrogateescape")
        try:
            with self.repo.lock("git"):
                queued = self._queued()
                candidates = [relpath] + [p for p in self._finished(queued) if p != relpath]
                committed = ls_tree(self.root, "HEAD", candidates)
                if relpath in committed:
                    return self.last_commit_of(relpath)
                others = [p for p in candidates[1:] if p not in committed]
                batch = [relpath] + others
                subject = f"conversation: {slug}" + (f" (+{len(others)} more)" if others else "")
                message = subject + "\n\n" + "".join(f"Session: {p}\n" for p in batch)
                done = self.commit_new_transcripts(batch, message)
                for rel in queued:
                    if rel in batch or not (self.root / rel).exists():
                        self._queue_entry(rel).unlink(missing_ok=True)
                return done.sha
        finally:
            entry.unlink(missing_ok=True)

    def commit_finished_transcripts(self) -> CommitResult:
        """Commit every finished (closed or recovered) transcript that waits for a commit,
        as one `conversation:` commit: what `autopoiesis commit` does first, so that with
        `git.auto_commit: false` transcripts are committed by hand, and never swept into a
        knowledge commit."""
        with self.repo.lock("git"):
            self.clear_stale_index_lock()
            self.repair_interrupted_commits()
            ready = self.closed_uncommitted_transcripts()
            if not ready:
                return CommitResult(None, "", ())
            stem = Path(ready[0]).stem[5:]
            subject = f"conversation: {stem}" + (
                f" (+{len(ready) - 1} more)" if len(ready) > 1 else ""
            )
            message = subject + "\n\n" + "".join(f"Session: {p}\n" for p in ready)
            return self.commit_new_transcripts(ready, message)
