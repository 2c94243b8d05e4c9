"""ConversationCapture: live sessions streamed into immutable transcripts (design §8.2).

Every event is appended to the open transcript with one write and an fsync, so a harness
that is killed loses nothing it already sent. While a session is open its capture holds
an flock on `.autopoiesis/locks/session-{id}.lock`; the kernel drops it when the process
dies, which is how crash recovery tells an abandoned transcript from a live one.

Closing a session rewrites the frontmatter (ended, tokens, status, redaction counts),
moves the file to its final slugged name, and commits it (`conversation: {slug}`). After
that commit the transcript is immutable. What follows a commit (extraction, design §10.1)
is not capture's business: the caller passes it in as `on_committed`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from autopoiesis.core import git
from autopoiesis.core.clock import parse_ts, utc, utc_now
from autopoiesis.core.paths import CONVERSATIONS_DIR, FileLock, MemoryRepo, atomic_write
from autopoiesis.core.redact import Redactor, redactor_from_config
from autopoiesis.core.text import one_line, slugify
from autopoiesis.errors import AutopoiesisError, CaptureError, ImmutableTranscriptError, TranscriptFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.gitops import MemoryGit

ROLE_ALIASES = {
    "user": "user", "human": "user",
    "agent": "agent", "assistant": "agent", "model": "agent", "ai": "agent", "bot": "agent",
    "system": "system", "developer": "system",
}


def normalize_role(role: Any) -> str:
    """ROLE as a transcript role (user, agent, system); CaptureError for anything else."""
    if not isinstance(role, str) or role.strip().lower() not in ROLE_ALIASES:
        raise CaptureError(f"unknown role {role!r}; use user, agent (or assistant) or system.")
    return ROLE_ALIASES[role.strip().lower()]


@dataclass
class Session:
    """A conversation as the harness describes it."""

    id: str
    started: datetime = field(default_factory=utc_now)
    model: str | None = None
    channel: str | None = None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    transcript_path: Path | None = None


@dataclass
class _OpenTranscript:
    session: Session
    path: Path
    fd: int
    lock: FileLock
    meta: tf.TranscriptMeta
    redactor: Redactor
    last_day: date
    last_role: str | None = None
    last_item: tf.Item | None = None
    turns: int = 0


@dataclass(frozen=True)
class ClosedSession:
    session_id: str
    path: str  # repo-relative
    commit: str | None
    status: str
    turns: int


def find_transcripts(repo: MemoryRepo, session_id: str, started: datetime | None = None) -> list[Path]:
    """Transcripts of SESSION_ID (in STARTED's day folder when given, else anywhere)."""
    if started is not None:
        rel = tf.transcript_relpath(session_id, started, "")
        folder = repo.root / Path(rel).parent
        pattern = f"????-{session_id}*.md"
        candidates = folder.glob(pattern) if folder.is_dir() else []
    else:
        candidates = repo.conversations_dir.glob(f"*/*/*/????-{session_id}*.md")
    result = []
    for p in candidates:
        stem = p.name[5:-3]
        if stem == session_id or stem.startswith(session_id + "-"):
            result.append(p)
    return sorted(result)


def session_lock(repo: MemoryRepo, session_id: str) -> FileLock:
    """The lock a live capture holds on SESSION_ID (the kernel frees it when the holder dies)."""
    return FileLock(repo.session_lock_path(session_id))


def _fsync_dir(path: Path) -> None:
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


class ConversationCapture:
    """Streams sessions into raw/conversations/ and commits each when it ends."""

    def __init__(
        self,
        repo: MemoryRepo,
        *,
        auto_commit: bool | None = None,
        recover: bool = True,
        on_closed: Callable[[ClosedSession], None] | None = None,
        on_committed: Callable[[str], None] | None = None,
    ):
        """ON_CLOSED is called with every closed session, committed or not (the CLI
        reports the commit there). ON_COMMITTED is then called with the repo-relative
        path of each transcript that was committed: what follows the commit, such as the
        lifecycle's extraction (app.capture_hooks builds it from the config)."""
        self.repo = repo
        self.config = repo.config
        self.auto_commit = self.config.git.auto_commit if auto_commit is None else auto_commit
        self.on_closed = on_closed
        self.on_committed = on_committed
        self._open: dict[str, _OpenTranscript] = {}
        self.recovered: list[ClosedSession] = []
        if recover:
            self.recovered = recover_abandoned(repo, commit=self.auto_commit)

    # ── lifecycle ──
    def on_session_start(self, session: Session) -> Path:
        sid = tf.validate_session_id(session.id)
        if sid in self._open:
            raise CaptureError(f"session {sid} is already open in this capture; send session_end before starting it again.")
        started = utc(session.started)
        existing = find_transcripts(self.repo, sid, started) or find_transcripts(self.repo, sid)
        if existing:
            raise CaptureError(
                f"session {sid} was already captured in {self.repo.rel(existing[0])}; transcripts are immutable, "
                "so start the continuation under a new session_id."
            )
        lock = session_lock(self.repo, sid)
        if not lock.acquire(timeout=0):
            raise CaptureError(f"session {sid} is open in another capture process; use a new session_id.")
        redactor = redactor_from_config(self.config)
        slug = slugify(session.topic) if session.topic else ""
        rel = tf.transcript_relpath(sid, started, slug)
        path = self.repo.root / rel
        meta = tf.TranscriptMeta(
            session_id=sid,
            started=started,
            model=redactor.redact(session.model) if session.model else None,
            channel=session.channel,
            topic=redactor.redact(session.topic) if session.topic else None,
            tags=tuple(str(t) for t in session.tags),
            status="open",
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except FileExistsError:
            lock.release()
            raise CaptureError(f"{rel} already exists; session {sid} cannot be started twice.") from None
        title = tf.title_from_slug(slug, sid)
        os.write(fd, tf.render_preamble(meta, title).encode("utf-8"))
        os.fsync(fd)
        _fsync_dir(path.parent)
        session.transcript_path = path
        self._open[sid] = _OpenTranscript(session, path, fd, lock, meta, redactor, last_day=started.date())
        return path

    def _get(self, session: Session | str) -> _OpenTranscript:
        sid = session if isinstance(session, str) else session.id
        state = self._open.get(sid)
        if state is None:
            raise CaptureError(f"session {sid!r} is not open; send session_start first (or it has already ended).")
        return state

    def _append(self, state: _OpenTranscript, text: str) -> None:
        data = text.encode("utf-8")
        written = os.write(state.fd, data)
        while written < len(data):  # rare: a short write on a full pipe-like fs
            written += os.write(state.fd, data[written:])
        os.fsync(state.fd)

    def _start_turn(self, state: _OpenTranscript, role: str, when: datetime, name: str | None, memory: bool) -> str:
        turn = tf.Turn(time=when, role=role, name=name, memory=memory)
        text = tf.render_turn_start(turn, state.last_day)
        state.last_day = when.date()
        state.last_role = role if not memory and name is None else f"{role}:{name}:{memory}"
        state.last_item = None
        state.turns += 1
        return text

    def _cap(self, content: str) -> str:
        limit = self.config.capture.max_message_bytes
        raw = content.encode("utf-8", "replace")
        if len(raw) <= limit:
            return content
        cut = raw[:limit].decode("utf-8", "ignore")
        return cut + f"\n[truncated: message was {len(raw)} bytes, capture.max_message_bytes is {limit}]"

    def on_message(self, session: Session | str, role: str, content: str, meta: dict[str, Any] | None = None) -> None:
        state = self._get(session)
        role = normalize_role(role)
        if not isinstance(content, str):
            raise CaptureError(f"message content must be text, not {type(content).__name__}.")
        meta = meta or {}
        when = parse_ts(meta["timestamp"], "timestamp") if meta.get("timestamp") else utc_now()
        name = meta.get("name")
        if name is not None:
            name = str(name)
        memory = bool(meta.get("memory")) or meta.get("type") == "memory"
        text = state.redactor.redact(self._cap(content))
        item = tf.Text(text)
        out = self._start_turn(state, role, when, name, memory)
        if tf.normalize_content(text):
            out += tf.render_item(item) + "\n"
            state.last_item = item
        self._append(state, out)

    def on_tool_call(self, session: Session | str, tool: str, args_summary: Any = "", result_summary: Any = None, *, timestamp: Any = None) -> None:
        state = self._get(session)
        when = parse_ts(timestamp, "timestamp") if timestamp else utc_now()
        redact = state.redactor.redact
        item = tf.ToolCall(
            redact(one_line(str(tool), 80)) or "tool",
            redact(_summarise(args_summary)),
            redact(_summarise(result_summary)) if result_summary not in (None, "") else None,
        )
        out = ""
        if state.last_role != "agent":
            out = self._start_turn(state, "agent", when, None, False)
        out += tf.item_separator(state.last_item, item) + tf.render_item(item) + "\n"
        state.last_item = item
        self._append(state, out)

    def on_knowledge_change(self, session: Session | str, action: str, path: str, summary: str = "", *, timestamp: Any = None) -> None:
        """A memory operation the agent did during the session: a `[memory]` turn line."""
        state = self._get(session)
        when = parse_ts(timestamp, "timestamp") if timestamp else utc_now()
        item = tf.KnowledgeOp(action, path, summary or None)
        out = ""
        if state.last_role != "agent:None:True":
            out = self._start_turn(state, "agent", when, None, True)
        out += tf.item_separator(state.last_item, item) + tf.render_item(item) + "\n"
        state.last_item = item
        changes = state.meta.knowledge_changes + (tf.KnowledgeChangeRef(path, action, summary),)
        state.meta = replace(state.meta, knowledge_changes=changes)
        self._append(state, out)

    def on_attachment(self, session: Session | str, path: str, *, timestamp: Any = None) -> None:
        state = self._get(session)
        item = tf.Attachment(path)
        out = ""
        if state.last_role is None:
            out = self._start_turn(state, "user", parse_ts(timestamp, "timestamp") if timestamp else utc_now(), None, False)
        out += tf.item_separator(state.last_item, item) + tf.render_item(item) + "\n"
        state.last_item = item
        self._append(state, out)

    def on_session_end(
        self,
        session: Session | str,
        *,
        ended: Any = None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        tags: Iterable[str] | None = None,
    ) -> ClosedSession | None:
        """Finalize the transcript and commit it. None when the session held no turns
        (an empty session leaves nothing behind)."""
        state = self._get(session)
        sid = state.meta.session_id
        os.close(state.fd)
        del self._open[sid]
        try:
            if state.turns == 0:
                state.path.unlink(missing_ok=True)
                warnings.warn(f"session {sid} had no messages; nothing was kept.", stacklevel=2)
                return None
            end_time = parse_ts(ended, "ended") if ended else utc_now()
            extra = {
                "ended": end_time,
                "status": "closed",
                "redactions": tuple(sorted(state.redactor.counts.items())),
                "knowledge_changes": state.meta.knowledge_changes,
            }
            if tokens_in is not None:
                extra["tokens_in"] = int(tokens_in)
            if tokens_out is not None:
                extra["tokens_out"] = int(tokens_out)
            if tags is not None:
                extra["tags"] = tuple(str(t) for t in tags)
            closed = finalize_transcript(self.repo, state.path, commit=self.auto_commit, **extra)
        finally:
            state.lock.release()
        if self.on_closed is not None:
            self.on_closed(closed)
        if self.on_committed is not None and closed.commit:
            try:
                self.on_committed(closed.path)
            except (AutopoiesisError, OSError) as exc:
                # the transcript is committed whatever the hook does; what the hook did not
                # finish is its own to retry (extraction leaves it pending)
                warnings.warn(f"session {sid} was committed as {closed.path}, but the after-commit step failed: {exc}",
                              stacklevel=2)
        return closed

    def close_all(self) -> list[str]:
        """Release every open session without closing it (they stay open for recovery)."""
        left = []
        for sid, state in list(self._open.items()):
            os.close(state.fd)
            state.lock.release()
            left.append(self.repo.rel(state.path))
            del self._open[sid]
        return left

    @property
    def open_sessions(self) -> list[str]:
        return list(self._open)


def _summarise(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return one_line(value)
    try:
        return one_line(json.dumps(value, ensure_ascii=False, sort_keys=True))
    except (TypeError, ValueError):
        return one_line(repr(value))


def finalize_transcript(repo: MemoryRepo, path: Path, *, commit: bool = True, **meta_changes: Any) -> ClosedSession:
    """Close an open transcript: final frontmatter, slugged name, commit."""
    rel_old = repo.rel(path)
    text = path.read_text(encoding="utf-8")
    transcript = tf.parse(text, rel_old)
    meta = transcript.meta
    if meta.status != "open":
        raise ImmutableTranscriptError(f"{rel_old} is already closed; a closed transcript is never modified.")
    new_meta = replace(meta, **meta_changes)
    if new_meta.ended is None:
        new_meta = replace(new_meta, ended=transcript.turns[-1].time if transcript.turns else meta.started)
    slug = tf.slug_from_turns(transcript.turns, meta.topic)
    title = tf.title_from_slug(slug, meta.session_id)
    final_rel = tf.transcript_relpath(meta.session_id, meta.started, slug)
    final = repo.root / final_rel
    atomic_write(final, tf.replace_frontmatter(text, new_meta, title))
    if final != path:
        path.unlink(missing_ok=True)
    _fsync_dir(final.parent)
    sha = None
    if commit:
        sha = MemoryGit(repo).commit_transcript(final_rel, slug or meta.session_id)
    return ClosedSession(meta.session_id, final_rel, sha, new_meta.status, len(transcript.turns))


def uncommitted_transcripts(repo: MemoryRepo) -> list[Path]:
    """Transcripts under raw/ that are not in a commit yet (open or closed-but-uncommitted)."""
    if not (repo.root / ".git").exists():
        return sorted(repo.conversations_dir.rglob("*.md"))
    return [repo.root / p for p in git.uncommitted(repo.root, [CONVERSATIONS_DIR]) if p.endswith(".md")]


def recover_abandoned(repo: MemoryRepo, *, commit: bool = True) -> list[ClosedSession]:
    """Close and commit transcripts whose capture died (their session lock is free)."""
    recovered: list[ClosedSession] = []
    for path in uncommitted_transcripts(repo):
        try:
            meta = tf.parse_meta(path.read_text(encoding="utf-8"), repo.rel(path))
        except (TranscriptFormatError, UnicodeDecodeError, OSError) as exc:
            warnings.warn(f"{repo.rel(path)} is not a readable transcript ({exc}); left as it is.", stacklevel=2)
            continue
        lock = session_lock(repo, meta.session_id)
        if not lock.acquire(timeout=0):
            continue  # a live capture owns it
        try:
            if not path.exists():
                continue
            if meta.status == "open":
                # a leftover of a crash between writing the final file and removing the open one
                closed = [p for p in find_transcripts(repo, meta.session_id, meta.started) if p != path]
                if any(tf.parse_meta(p.read_text(encoding="utf-8")).status != "open" for p in closed):
                    path.unlink()
                    continue
                transcript = tf.parse(path.read_text(encoding="utf-8"), repo.rel(path))
                if not transcript.turns:
                    path.unlink()
                    continue
                recovered.append(
                    finalize_transcript(repo, path, commit=commit, ended=transcript.turns[-1].time, status="recovered")
                )
            elif commit:
                rel = repo.rel(path)
                slug = Path(rel).stem[5 + len(meta.session_id) + 1 :]
                sha = MemoryGit(repo).commit_transcript(rel, slug or meta.session_id)
                recovered.append(ClosedSession(meta.session_id, rel, sha, meta.status, -1))
        finally:
            lock.release()
    return recovered
