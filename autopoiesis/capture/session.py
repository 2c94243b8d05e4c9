"""ConversationCapture: live sessions streamed into immutable transcripts (docs/design.md#capture).

Every event is appended to the open transcript with one write and an fsync, so a harness
that is killed loses nothing it already sent. While a session is open its capture holds
an flock on `.autopoiesis/locks/session-{id}.lock`; the kernel drops it when the process
dies, which is how crash recovery tells an abandoned transcript from a live one.

Every field that reaches the file (content, tool calls, knowledge events, attachments,
speaker names, model, channel, topic, tags) goes through the repo's redactor
(`repo.redactor()`, one per session, via `transcript.map_text`). An event is written whole
or not at all: it is rendered first, and a failed write (a full disk) is cut back off the
file and refused. A session that cannot start leaves no file behind.

Closing a session rewrites the frontmatter (ended, tokens, status, redaction counts),
moves the file to its final slugged name, and commits it (`conversation: {slug}`) unless
`git.auto_commit` is false; then it stays closed but uncommitted until `autopoiesis
commit` (or `capture --recover`) commits it. A commit that fails (a foreign
`.git/index.lock`, a refusing hook) leaves the transcript closed for the same commands to
commit later. After that commit the transcript is immutable. What follows a commit (extraction,
docs/design.md#flow-conversation)
is not capture's business: the caller passes it in as `on_committed`.

The closing itself (`finalize_transcript`) and crash recovery (`recover_abandoned`) are
closing.py.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.closing import (
    ClosedSession,
    finalize_transcript,
    find_transcripts,
    fsync_dir,
    recover_abandoned,
    session_lock,
    transcript_meta,
)
from autopoiesis.core.clock import format_ts, said_time, utc, utc_now
from autopoiesis.core.paths import FileLock, MemoryRepo, link_in_the_way, write_remedy
from autopoiesis.core.project import session_project
from autopoiesis.core.redact import Redactor
from autopoiesis.core.text import one_line, slugify
from autopoiesis.errors import (
    AutopoiesisError,
    CaptureError,
    TimestampError,
)
from autopoiesis.formats import transcript as tf

ROLE_ALIASES = {
    "user": "user",
    "human": "user",
    "agent": "agent",
    "assistant": "agent",
    "model": "agent",
    "ai": "agent",
    "bot": "agent",
    "system": "system",
    "developer": "system",
}


def normalize_role(role: Any) -> str:
    """ROLE as a transcript role (user, agent, system); CaptureError for anything else."""
    if not isinstance(role, str) or role.strip().lower() not in ROLE_ALIASES:
        raise CaptureError(f"unknown role {role!r}; use user, agent (or assistant) or system.")
    return ROLE_ALIASES[role.strip().lower()]


def event_time(
    value: Any, field: str, *, session: str, fallback: datetime | None = None, why: str = ""
) -> datetime:
    """An event's time FIELD as sent, when it can be trusted to date the session
    (core.clock.said_time), else a time that can. Absent, it is the time the event
    arrived. One that is no time, or cannot be trusted (no time zone, before 1970, in the
    future; and, with a warning, an empty string or 0, which a harness sends for "not
    set" and which read as a time dated the turn 1 January 1970) never refuses the event:
    what the user said is kept, dated FALLBACK (WHY says what that is: the session's last
    time) or, without one, the time it arrived, and the warning names SESSION and the
    value sent."""
    if value is None:
        return utc_now()
    if value == "" or (value == 0 and not isinstance(value, bool)):
        problem = f"a {field} of {value!r} is no time"
    else:
        try:
            return said_time(value, field)
        except TimestampError as exc:
            problem = str(exc).rstrip(".")
    when, what = (fallback, why) if fallback is not None else (utc_now(), "the time it arrived")
    warnings.warn(
        f"session {session}: {problem}. The event is kept, dated {format_ts(when)} ({what}).",
        stacklevel=3,
    )
    return when


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
    # the project it works on, as the harness names it; else `cwd` names it (core/project.py)
    project: str | None = None
    cwd: str | None = None  # the folder it runs in


@dataclass
class _OpenTranscript:
    session: Session
    path: Path
    fd: int
    lock: FileLock
    meta: tf.TranscriptMeta
    redactor: Redactor
    last_day: date
    # the time of the latest turn (the start, before the first): no event is dated earlier
    last_time: datetime
    last_role: str | None = None
    last_item: tf.Item | None = None
    turns: int = 0
    size: int = 0  # bytes of the file written so far (a failed append is cut back to it)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


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
        knowledge extraction (the Memory facade builds it from the config: Memory.after_commit).

        RECOVER closes (and commits) what crashed captures left behind first; what it
        cannot do is a warning, never an error: capture must start whatever the past left."""
        self.repo = repo
        self.config = repo.config
        self.auto_commit = self.config.git.auto_commit if auto_commit is None else auto_commit
        self.on_closed = on_closed
        self.on_committed = on_committed
        self._open: dict[str, _OpenTranscript] = {}
        # transcripts whose session_end could not close them (a full disk): still open
        # on disk, for `capture --recover`, though no longer this capture's
        self.not_closed: list[str] = []
        # a chat API's tool call ids, to the names of their tools: the output that answers
        # one names only its id (stream.apply_event)
        self.call_names: dict[tuple[str, str], str] = {}
        self.recovered: list[ClosedSession] = []
        if recover:
            self.recovered = recover_abandoned(repo, commit=self.auto_commit)

    # ── lifecycle ──
    def on_session_start(self, session: Session) -> Path:
        given = tf.validate_session_id(session.id)
        # the id the events name it by (the key of _open); filed without its secrets
        sid = tf.written_session_id(given, self.repo.redactor().redact)
        if given in self._open:
            raise CaptureError(
                f"session {sid} is already open in this capture; send session_end before starting "
                "it again."
            )
        started = event_time(session.started, "started", session=sid)
        # the session's lock first, then whether it exists: asked before the lock, the
        # answer could be stale by the time the lock is ours (another capture of the id
        # started, ended and committed in between) and a second transcript of one session
        # was written, which no commit admits (git/admission)
        lock = session_lock(self.repo, sid)
        try:
            if not lock.acquire(timeout=0):
                live = self._transcripts_of(sid, started)
                where = f" in {self.repo.rel(live[0])}" if live else ""
                raise CaptureError(
                    f"session {sid} is being captured{where} by another capture process; send "
                    "its events to that capture, or start a new session_id."
                )
        except OSError as exc:
            raise CaptureError(
                f"cannot take the lock of session {sid} ({_why(exc)}); nothing was written."
            ) from None
        try:
            return self._start_locked(session, given, sid, started, lock)
        except BaseException:
            lock.release()
            raise

    def _start_locked(
        self, session: Session, given: str, sid: str, started: datetime, lock: FileLock
    ) -> Path:
        """The rest of on_session_start, with the session's LOCK held (released by the
        caller when this raises)."""
        existing = self._transcripts_of(sid, started)
        if existing and _is_open(existing[0]):
            raise CaptureError(
                f"session {sid} is being captured in {self.repo.rel(existing[0])} (its "
                "transcript is still open: another capture, or one killed before it ended, "
                "which `autopoiesis capture --recover` closes); send its events to that "
                "capture, or start a new session_id."
            )
        if existing:
            raise CaptureError(
                f"session {sid} was already captured in {self.repo.rel(existing[0])}; transcripts "
                "are immutable, "
                "so start the continuation under a new session_id."
            )
        redactor = self.repo.redactor()
        meta = tf.TranscriptMeta(
            session_id=sid,
            started=started,
            model=session.model,
            channel=session.channel,
            topic=session.topic,
            tags=tuple(str(t) for t in session.tags),
            status="open",
            # read through a redactor of its own: the session's counts what map_text finds
            project=session_project(
                session.project, session.cwd, self.repo.redactor().redact, self.repo.root
            ),
            cwd=session.cwd,
        )
        meta = tf.map_text(meta, redactor.redact)
        slug = slugify(meta.topic) if meta.topic else ""
        rel = tf.transcript_relpath(sid, started, slug)
        path = self.repo.root / rel
        why = link_in_the_way(self.repo.root, rel)
        if why:  # a clone's link would have the conversation written wherever it points
            raise CaptureError(
                f"cannot write {rel}: {why}, then send its session_start again; session "
                f"{sid} was not started and nothing was written."
            )
        # everything is rendered before the file exists: a session that fails to start
        # leaves nothing behind that would block its id
        data = tf.encode(tf.render_preamble(meta, tf.title_from_slug(slug, sid)))
        fd = -1
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            _write_all(fd, data)
            os.fsync(fd)
            fsync_dir(path.parent)
        except BaseException as exc:
            if fd >= 0:
                os.close(fd)
                path.unlink(missing_ok=True)
            if isinstance(exc, FileExistsError):
                raise CaptureError(
                    f"{rel} already exists; session {sid} cannot be started twice."
                ) from None
            if isinstance(exc, OSError):
                raise CaptureError(
                    f"cannot write {rel} ({_why(exc)}); session {sid} was not started and nothing "
                    f"was kept: {write_remedy(exc)}, and send its session_start again."
                ) from None
            raise
        session.transcript_path = path
        self._open[given] = _OpenTranscript(
            session,
            path,
            fd,
            lock,
            meta,
            redactor,
            last_day=started.date(),
            last_time=started,
            size=len(data),
        )
        return path

    def _transcripts_of(self, sid: str, started: datetime) -> list[Path]:
        """The transcripts of session SID on disk (in STARTED's day folder first)."""
        return find_transcripts(self.repo, sid, started) or find_transcripts(self.repo, sid)

    def _get(self, session: Session | str) -> _OpenTranscript:
        sid = session if isinstance(session, str) else session.id
        state = self._open.get(sid)
        if state is None:
            raise CaptureError(
                f"session {sid!r} is not open; send session_start first (or it has already ended)."
            )
        return state

    def _write(self, state: _OpenTranscript, counts_before: Counter[str], text: str) -> None:
        """Append TEXT whole, or nothing: a failed write is cut back off the file, the
        redaction counts are restored, and the event is refused."""
        data = tf.encode(text)
        try:
            _write_all(state.fd, data)
            os.fsync(state.fd)
        except OSError as exc:
            try:
                os.ftruncate(state.fd, state.size)
            except OSError:
                pass
            state.redactor.counts.clear()
            state.redactor.counts.update(counts_before)
            raise CaptureError(
                f"cannot write to {self.repo.rel(state.path)} ({_why(exc)}); this event was not "
                f"kept, the session stays open: {write_remedy(exc)}, and resend it."
            ) from None
        state.size += len(data)

    @staticmethod
    def _when(state: _OpenTranscript, value: Any) -> datetime:
        """The time of an event of STATE's session sent with VALUE (event_time). A session's
        order is the order its events arrived in: one stamped before the turn ahead of it
        (a clock stepped back, a message queued while the agent answered; the session's
        start, for the first) keeps its place and takes that turn's time, so the
        transcript's times never run backwards."""
        when = event_time(
            value,
            "timestamp",
            session=state.meta.session_id,
            fallback=state.last_time,
            why="the time of the turn before it",
        )
        return max(when, state.last_time)

    def _emit(
        self,
        state: _OpenTranscript,
        item: tf.Item | None,
        *,
        turn: tf.Turn | None,
        key: str | None = None,
        counts: Counter[str] | None = None,
    ) -> None:
        """Write ITEM (after TURN's header when a new turn starts) and only then move the
        session's state on. COUNTS: the redaction counts to restore if the write fails
        (taken before the caller redacted raw values; default: now)."""
        counts = Counter(state.redactor.counts) if counts is None else counts
        if item is not None:
            item = tf.map_text(item, state.redactor.redact)
        out = ""
        last_item = state.last_item
        if turn is not None:
            out = tf.render_turn_start(turn, state.last_day)
            last_item = None
        if item is not None and not (
            isinstance(item, tf.Text) and not tf.normalize_content(item.content)
        ):
            out += tf.item_separator(last_item, item) + tf.render_item(item) + "\n"
            last_item = item
        self._write(state, counts, out)
        if turn is not None:
            state.last_day = turn.time.date()
            state.last_time = max(state.last_time, utc(turn.time))
            state.last_role = key
            state.turns += 1
        state.last_item = last_item
        if isinstance(item, tf.KnowledgeOp):
            ref = tf.KnowledgeChangeRef(item.path, item.action, item.summary or "")
            state.meta = replace(
                state.meta, knowledge_changes=state.meta.knowledge_changes + (ref,)
            )

    def _cap(self, content: str) -> str:
        limit = self.config.capture.max_message_bytes
        raw = tf.encode(content)
        if len(raw) <= limit:
            return content
        cut = raw[:limit].decode("utf-8", "ignore")
        return (
            cut
            + f"\n[truncated: message was {len(raw)} bytes, capture.max_message_bytes is {limit}]"
        )

    def on_message(
        self, session: Session | str, role: str, content: str, meta: dict[str, Any] | None = None
    ) -> None:
        state = self._get(session)
        role = normalize_role(role)
        if not isinstance(content, str):
            raise CaptureError(f"message content must be text, not {type(content).__name__}.")
        meta = meta or {}
        when = self._when(state, meta.get("timestamp"))
        counts = Counter(state.redactor.counts)
        redact = state.redactor.redact  # before anything is cut: a cut secret would leak its head
        name = one_line(redact(str(meta["name"])), 80) if meta.get("name") is not None else None
        memory = bool(meta.get("memory")) or meta.get("type") == "memory"
        turn = tf.Turn(time=when, role=role, name=name, memory=memory)
        self._emit(
            state,
            tf.Text(self._cap(redact(content))),
            turn=turn,
            key=f"{role}:{turn.name}:{memory}",
            counts=counts,
        )

    def on_tool_call(
        self,
        session: Session | str,
        tool: str,
        args_summary: Any = "",
        result_summary: Any = None,
        *,
        timestamp: Any = None,
    ) -> None:
        state = self._get(session)
        when = self._when(state, timestamp)
        counts = Counter(state.redactor.counts)
        # redacted whole before one_line cuts them (a cut secret would leak its head), and
        # together: a secret its result names (`AWS_SECRET_ACCESS_KEY=KEY`) is redacted in
        # its arguments too (`echo KEY | aws configure ...`), where no rule sees it
        has_result = result_summary not in (None, "")
        args, result = state.redactor.redact_fields(
            [_as_text(args_summary), _as_text(result_summary) if has_result else ""]
        )
        item = tf.ToolCall(
            state.redactor.redact(str(tool)) or "tool",
            one_line(args, tf.ANSWER_CHARS),
            one_line(result, tf.ANSWER_CHARS) if has_result else None,
        )
        key = "agent:None:False"
        turn = tf.Turn(time=when, role="agent") if state.last_role != key else None
        self._emit(state, item, turn=turn, key=key, counts=counts)

    def on_knowledge_change(
        self,
        session: Session | str,
        action: str,
        path: str,
        summary: str = "",
        *,
        timestamp: Any = None,
    ) -> None:
        """A memory operation the agent did during the session: a `[memory]` turn line."""
        state = self._get(session)
        when = self._when(state, timestamp)
        counts = Counter(state.redactor.counts)
        redact = state.redactor.redact
        item = tf.KnowledgeOp(
            redact(str(action)), redact(str(path)), redact(summary) if summary else None
        )
        key = "agent:None:True"
        turn = tf.Turn(time=when, role="agent", memory=True) if state.last_role != key else None
        self._emit(state, item, turn=turn, key=key, counts=counts)

    def on_attachment(self, session: Session | str, path: str, *, timestamp: Any = None) -> None:
        state = self._get(session)
        when = self._when(state, timestamp)
        counts = Counter(state.redactor.counts)
        turn = tf.Turn(time=when, role="user") if state.last_role is None else None
        self._emit(
            state,
            tf.Attachment(state.redactor.redact(str(path))),
            turn=turn,
            key="user:None:False",
            counts=counts,
        )

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
        (an empty session leaves nothing behind). Bad arguments are refused before
        anything changes: the session then stays open."""
        state = self._get(session)
        sid = state.meta.session_id
        given = state.session.id  # the key of _open: the id the events name
        extra: dict[str, Any] = {
            "ended": event_time(
                ended, "ended", session=sid, fallback=state.last_time, why="its last turn's time"
            ),
            "status": "closed",
        }
        if extra["ended"] < state.last_time:  # a session cannot end before it began, or
            if ended is not None:  # before its last turn: it ends then
                before = (
                    f"it started ({format_ts(state.meta.started)})"
                    if extra["ended"] < state.meta.started
                    else "its last turn"
                )
                warnings.warn(
                    f"session {sid}: ended {format_ts(extra['ended'])} is before {before}; it "
                    f"ends at its last turn, {format_ts(state.last_time)}.",
                    stacklevel=2,
                )
            extra["ended"] = state.last_time
        for key, value in (("tokens_in", tokens_in), ("tokens_out", tokens_out)):
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise CaptureError(f"{key} must be a non-negative whole number, not {value!r}.")
                extra[key] = value
        if tags is not None:
            extra["tags"] = tf.map_text(
                replace(state.meta, tags=tuple(str(t) for t in tags)), state.redactor.redact
            ).tags
        os.close(state.fd)
        del self._open[given]
        try:
            if state.turns == 0:
                state.path.unlink(missing_ok=True)
                warnings.warn(f"session {sid} had no messages; nothing was kept.", stacklevel=2)
                return None
            extra["redactions"] = tuple(sorted(state.redactor.counts.items()))
            extra["knowledge_changes"] = state.meta.knowledge_changes
            try:
                closed = finalize_transcript(
                    self.repo, state.path, commit=self.auto_commit, **extra
                )
            except (OSError, AutopoiesisError) as exc:
                why = _why(exc) if isinstance(exc, OSError) else str(exc)
                self.not_closed.append(self.repo.rel(state.path))
                raise CaptureError(
                    f"session {sid} could not be closed ({why}); its transcript "
                    f"{self.repo.rel(state.path)} keeps "
                    "every message and stays open: `autopoiesis capture --recover` closes it."
                ) from None
        finally:
            state.lock.release()
        if self.on_closed is not None:
            self.on_closed(closed)
        if self.on_committed is not None and closed.commit:
            try:
                self.on_committed(closed.path)
            except Exception as exc:
                # the transcript is committed whatever the hook does; what the hook did not
                # finish is its own to retry (extraction leaves it pending)
                warnings.warn(
                    f"session {sid} was committed as {closed.path}, but the after-commit step "
                    f"failed: {exc}",
                    stacklevel=2,
                )
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


def _as_text(value: Any) -> str:
    """A tool call's field as the text redacted whole before it is cut to one line (a
    secret cut in two would slip past the detectors) of at most what a tool call keeps
    (`tf.ANSWER_CHARS`: how much it keeps is the call's, `tf.ToolCall`: a question's
    answers and a rejection's words whole, 300 characters of the rest; a cut to 300 here
    lost the user's answer at the end of a question tool's result)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _is_open(path: Path) -> bool:
    """Whether the transcript at PATH says it is still open (`status: open`)."""
    try:
        return transcript_meta(path, str(path)).status == "open"
    except (OSError, AutopoiesisError):
        return False
