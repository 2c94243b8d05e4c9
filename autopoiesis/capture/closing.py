"""Closing a transcript for good and crash recovery (docs/design.md#capture).

Closing (`finalize_transcript`) rewrites the frontmatter, moves the file to its final
slugged name and commits it; recovery (`recover_abandoned`) closes what a dead capture
left open (its session lock is free) and commits what a crash or a failed commit left
uncommitted. Both need a session's lock and its transcripts on disk, which live capture
(session.py) takes from here too.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.core.gitdirs import is_sparse_checkout
from autopoiesis.core.paths import CONVERSATIONS_DIR, FileLock, MemoryRepo, atomic_write
from autopoiesis.errors import (
    AutopoiesisError,
    GitError,
    ImmutableTranscriptError,
    TranscriptFormatError,
)
from autopoiesis.formats import tool_calls
from autopoiesis.formats import transcript as tf
from autopoiesis.formats.transcript_files import SessionIndex
from autopoiesis.git import runner as git
from autopoiesis.git.repo import MemoryGit


@dataclass(frozen=True)
class ClosedSession:
    session_id: str
    path: str  # repo-relative
    commit: str | None
    status: str
    turns: int
    not_committed: str | None = None  # why COMMIT is None (auto_commit off, a failed commit)


def find_transcripts(
    repo: MemoryRepo, session_id: str, started: datetime | None = None
) -> list[Path]:
    """Transcripts of SESSION_ID, every part (in STARTED's day folder when given, else
    anywhere, through the session index). In a sparse checkout that leaves raw/ out (a
    sub-agent's, docs/subagents.md) they are the ones its HEAD holds: not on its disk, yet
    the memory's, so a session id the memory holds is refused there as it is in the
    memory (its commit would be refused later, the transcript left behind)."""
    if started is None:
        index = SessionIndex.load(repo)
        found = index.transcripts(session_id)
        index.save()
    else:
        folder = repo.root / Path(tf.transcript_relpath(session_id, started, "")).parent
        candidates = folder.glob(f"????-{session_id}*.md") if folder.is_dir() else []
        found = [p for p in candidates if _names_session(p.name, session_id)]
    if is_sparse_checkout(repo.root):
        found = [*found, *_committed_transcripts(repo, session_id, started)]
    return sorted(set(found))


def _names_session(name: str, session_id: str) -> bool:
    """Whether NAME (`HHMM-{id}-{slug}[+N].md`) is a transcript file of SESSION_ID."""
    stem = name[5:-3].split("+", 1)[0]
    return stem == session_id or stem.startswith(session_id + "-")


def _committed_transcripts(
    repo: MemoryRepo, session_id: str, started: datetime | None
) -> list[Path]:
    """The transcripts of SESSION_ID that HEAD holds (in STARTED's day folder when given)."""
    folder = (
        Path(tf.transcript_relpath(session_id, started, "")).parent.as_posix()
        if started is not None
        else CONVERSATIONS_DIR
    )
    held = git.ls_tree(repo.root, "HEAD", [folder])
    return sorted(
        repo.root / rel for rel in held if _names_session(rel.rpartition("/")[2], session_id)
    )


def session_lock(repo: MemoryRepo, session_id: str) -> FileLock:
    """The lock a live capture holds on SESSION_ID (the kernel frees it when the holder dies).
    Transient: its file goes with its release, or every session ever captured left one in
    .autopoiesis/locks/ (one a crashed capture held stays until the next taker releases it)."""
    return FileLock(repo.session_lock_path(session_id), transient=True)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def transcript_meta(path: Path, rel: str) -> tf.TranscriptMeta:
    """The frontmatter of the transcript at PATH, from its head alone (a frontmatter is a
    few hundred bytes; the transcript may be megabytes). OSError or TranscriptFormatError
    when it cannot be read as one."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return tf.parse_meta(fh.read(16384), rel)


def read_transcript(path: Path, rel: str) -> str:
    """The text of the transcript at PATH (a character cut off at its end dropped)."""
    return tf.decode(path.read_bytes(), rel)


def finalize_transcript(
    repo: MemoryRepo, path: Path, *, commit: bool = True, **meta_changes: Any
) -> ClosedSession:
    """Close an open transcript: final frontmatter, slugged name, commit. A failed commit
    leaves it closed and uncommitted (ClosedSession.not_committed says why)."""
    rel_old = repo.rel(path)
    text = read_transcript(path, rel_old)
    if not text.endswith("\n"):
        text += "\n"  # a last line cut short by a killed write
    transcript = tf.parse(text, rel_old)
    meta = transcript.meta
    if meta.status != "open":
        raise ImmutableTranscriptError(
            f"{rel_old} is already closed; a closed transcript is never modified."
        )
    new_meta = replace(meta, **meta_changes)
    # a stream with no folder: the project its tool calls worked in
    new_meta = tool_calls.with_project_worked_in(new_meta, transcript, repo.root)
    if new_meta.ended is None:
        new_meta = replace(
            new_meta, ended=transcript.turns[-1].time if transcript.turns else meta.started
        )
    if new_meta.ended is not None and new_meta.ended < meta.started:
        # a session cannot end before it began: its last turn dated earlier than its start
        # (a harness's clock, a recovered log) ends it where it started
        new_meta = replace(new_meta, ended=meta.started)
    slug = tf.slug_from_turns(transcript.turns, meta.topic)
    title = tf.title_from_slug(slug, meta.session_id)
    final_rel = tf.transcript_relpath(meta.session_id, meta.started, slug)
    final = repo.root / final_rel
    atomic_write(final, tf.encode(tf.replace_frontmatter(text, new_meta, title)))
    if final != path:
        path.unlink(missing_ok=True)
    fsync_dir(final.parent)
    sha: str | None = None
    why: str | None = "git.auto_commit is false: `autopoiesis commit` commits it"
    if commit:
        sha, why = commit_closed(repo, final_rel, slug or meta.session_id)
    return ClosedSession(
        meta.session_id, final_rel, sha, new_meta.status, len(transcript.turns), why
    )


def commit_closed(repo: MemoryRepo, rel: str, slug: str) -> tuple[str | None, str | None]:
    """(commit, None), or (None, why) when git refused: the transcript stays closed and
    uncommitted, which recovery and `autopoiesis commit` pick up."""
    try:
        return MemoryGit(repo).commit_transcript(rel, slug), None
    except GitError as exc:
        why = (
            f"the commit failed: {exc} The transcript is kept; `autopoiesis capture --recover` "
            "commits it."
        )
        warnings.warn(f"{rel} is closed but not committed: {why}", stacklevel=2)
        return None, why


def uncommitted_transcripts(repo: MemoryRepo) -> list[Path]:
    """Transcripts under raw/ that are not in a commit yet (open or closed-but-uncommitted;
    untracked, staged, or left intent-to-add by a killed commit)."""
    if not (repo.root / ".git").exists():
        return sorted(repo.conversations_dir.rglob("*.md"))
    return [
        repo.root / p for p in git.uncommitted(repo.root, [CONVERSATIONS_DIR]) if p.endswith(".md")
    ]


def _ids_in_name(path: Path) -> list[str]:
    """The session ids a transcript's file name can stand for (HHMM-{id}[-{slug}].md)."""
    stem = path.name[5:-3].split("+", 1)[0]
    return [stem[:i] for i in range(len(stem), 0, -1) if i == len(stem) or stem[i] == "-"]


def _remove_empty_leftover(repo: MemoryRepo, path: Path) -> bool:
    """Remove a 0-byte transcript (a session start that died before its first write) when
    no live capture holds any session it could belong to."""
    locks = [session_lock(repo, sid) for sid in _ids_in_name(path) if tf.SESSION_ID_RE.match(sid)]
    held = []
    try:
        for lock in locks:
            if not lock.acquire(timeout=0):
                return False
            held.append(lock)
        if path.stat().st_size == 0:
            path.unlink()
            return True
        return False
    finally:
        for lock in held:
            lock.release()


def recover_abandoned(repo: MemoryRepo, *, commit: bool = True) -> list[ClosedSession]:
    """Close and commit transcripts whose capture died (their session lock is free), and
    commit closed ones a crash or a failed commit left uncommitted. Never raises for one
    transcript: what cannot be done is a warning, and the rest is still recovered."""
    recovered: list[ClosedSession] = []
    if commit and (repo.root / ".git").exists():
        try:
            g = MemoryGit(repo)
            g.clear_stale_index_lock()
            g.repair_interrupted_commits()
        except (AutopoiesisError, OSError) as exc:
            warnings.warn(f"could not check the git index before recovery: {exc}", stacklevel=2)
    for path in uncommitted_transcripts(repo):
        try:
            closed = _recover_one(repo, path, commit=commit)
        except (AutopoiesisError, OSError) as exc:
            warnings.warn(
                f"{repo.rel(path)} could not be recovered ({exc}); it is left as it is.",
                stacklevel=2,
            )
            continue
        if closed is not None:
            recovered.append(closed)
    return recovered


def _recover_one(repo: MemoryRepo, path: Path, *, commit: bool) -> ClosedSession | None:
    rel = repo.rel(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if not data:
        if _remove_empty_leftover(repo, path):
            warnings.warn(
                f"removed {rel}: an empty transcript left by a session start that failed.",
                stacklevel=2,
            )
        return None
    try:
        meta = tf.parse_meta(tf.decode(data, rel), rel)
    except TranscriptFormatError as exc:
        warnings.warn(f"{rel} is not a readable transcript ({exc}); left as it is.", stacklevel=2)
        return None
    lock = session_lock(repo, meta.session_id)
    if not lock.acquire(timeout=0):
        return None  # a live capture owns it
    try:
        # read again, now that no capture can change it: read before the lock was ours,
        # it may have been open then and been closed and committed since, under the same
        # name (a session that ended as this recovery looked), and a closed transcript
        # was "recovered" into an error and a warning that it was left as it was
        try:
            meta = tf.parse_meta(tf.decode(path.read_bytes(), rel), rel)
        except FileNotFoundError:
            return None
        if meta.status != "open" and rel in git.ls_tree(repo.root, "HEAD", [rel]):
            return None  # committed meanwhile
        if meta.status == "open":
            # a leftover of a crash between writing the final file and removing the open one
            closed = [p for p in find_transcripts(repo, meta.session_id, meta.started) if p != path]
            if any(tf.parse_meta(read_transcript(p, repo.rel(p))).status != "open" for p in closed):
                path.unlink()
                return None
            text = read_transcript(path, rel)
            transcript = tf.parse(text if text.endswith("\n") else text + "\n", rel)
            if not transcript.turns:
                path.unlink()
                return None
            return finalize_transcript(
                repo, path, commit=commit, ended=transcript.turns[-1].time, status="recovered"
            )
        if not commit:
            return None
        slug = Path(rel).stem[5 + len(meta.session_id) + 1 :]
        sha, why = commit_closed(repo, rel, slug or meta.session_id)
        return ClosedSession(meta.session_id, rel, sha, meta.status, -1, why)
    finally:
        lock.release()
