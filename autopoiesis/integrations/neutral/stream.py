"""The capture stream as a file: the newline-delimited JSON events `autopoiesis capture`
reads (capture/stream.py: session_start, message, tool_call, knowledge, attachment,
session_end), written down by a harness, or converted from another log, and given to
`autopoiesis import`. Each session is filed as a finished one, as every import is: by its
id, once (a second import files nothing new), its turns under its own date.

The events mean what they mean to `capture`: `session_id` may be left out while exactly
one session is open; a tool call joins the agent's turn before it, or opens one, and a
memory operation (`knowledge`) an agent's `[memory]` turn; a message or call without a
timestamp takes the time of the event before it (the session's `started` for the first),
and a session without `started`, or with one that is no time, starts at its first timed
event; one no event of which says a time (each 0 or "", a harness's "not set", which
`capture` dates as it arrives) is dated by when its log file was last written. A session the file
never ends is filed all the same: the file is finished. A line that is no event, or one
`capture` would refuse, is skipped with its number and the reason, and the rest of the
file is read.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    DraftTurn,
    ImportReport,
    SessionDraft,
    first_json_line,
)
from autopoiesis.capture.importers.shapes import args_summary, content_text, json_lines
from autopoiesis.capture.session import normalize_role
from autopoiesis.capture.stream import EVENTS, tool_name
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import AutopoiesisError, ImportFormatError, TimestampError
from autopoiesis.formats import transcript as tf


class CaptureStreamImporter:
    name = "capture"
    description = "the events `autopoiesis capture` reads, one JSON object a line"

    def detect(self, path: Path, text: str) -> float:
        first = first_json_line(text)
        return 1.0 if isinstance(first, dict) and first.get("event") in EVENTS else 0.0

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        reading = _Reading(f"capture:{path.name}", written=_modified(path))
        for n, event in json_lines(text, str(path), report):
            try:
                reading.apply(event)
            except AutopoiesisError as exc:
                report.skip_line(str(path), n, str(exc).rstrip("."))
            for note in reading.notes:
                report.warnings.append(f"{path}:{n}: {note}")
            reading.notes.clear()
        if not reading.drafts and not reading.open:
            raise ImportFormatError(f"{path}: no session_start event; nothing to import.")
        return [*reading.drafts, *reading.open.values()]


class _Reading:
    """The sessions of one stream as its events arrive: those still open, by id, and those
    ended, in the order they ended."""

    def __init__(self, source: str, written: datetime | None = None) -> None:
        self.source = source
        # when the log was last written (its file's time): the time of a session no event
        # of which says one (every timestamp 0 or "", a harness's "not set")
        self.written = written
        self.open: dict[str, SessionDraft] = {}
        self.drafts: list[SessionDraft] = []
        self._clock: dict[str, datetime | None] = {}
        self.notes: list[str] = []  # what the last event's reading says besides

    def apply(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind not in EVENTS:
            raise ImportFormatError(f"unknown event {kind!r}; one of {', '.join(EVENTS)} is read")
        if kind == "session_start":
            self._start(event)
            return
        draft = self._session(event)
        if kind == "session_end":
            if event.get("ended"):
                draft.ended = parse_ts(event["ended"], "ended")
            for key in ("tokens_in", "tokens_out"):
                value = event.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    setattr(draft, key, value)
            self.drafts.append(self.open.pop(draft.session_id))
            return
        when = self._when(draft, event.get("timestamp"))
        if kind == "message":
            content, role = event.get("content"), event.get("role")
            if not isinstance(content, str):
                raise ImportFormatError("a message event needs content as a string")
            name = event.get("name")
            role = normalize_role(role)
            # a message the agent's memory wrote (`"memory": true` or `"type": "memory"`) is a
            # [memory] turn, as `capture` has it
            memory = bool(event.get("memory")) or event.get("type") == "memory"
            if content.strip():  # an empty message says nothing, and a turn is never empty
                draft.add_turn(
                    when,
                    role,
                    [tf.Text(content)],
                    None if name is None else str(name),
                    memory=memory,
                )
        elif kind == "tool_call":
            result = content_text(event.get("result")) or None
            call = tf.ToolCall(tool_name(event), args_summary(event.get("args", "")), result)
            self._agent_turn(draft, when, memory=False).items.append(call)
        elif kind == "knowledge":
            if not isinstance(event.get("path"), str):
                raise ImportFormatError("a knowledge event needs a path")
            op = tf.KnowledgeOp(
                str(event.get("action") or "updated"),
                event["path"],
                str(event.get("summary") or "") or None,
            )
            self._agent_turn(draft, when, memory=True).items.append(op)
        else:  # attachment
            if not isinstance(event.get("path"), str):
                raise ImportFormatError("an attachment event needs a path")
            if not draft.turns:
                draft.add_turn(when, "user", [])
            draft.turns[-1].items.append(tf.Attachment(event["path"]))

    def _start(self, event: dict[str, Any]) -> None:
        sid = event.get("session_id")
        if not isinstance(sid, str) or not sid:
            raise ImportFormatError("session_start needs session_id as a string")
        if sid in self.open:
            raise ImportFormatError(f"session {sid!r} is already open")
        tags = event.get("tags") or ()
        if not isinstance(tags, (list, tuple)):
            raise ImportFormatError("tags must be a list of strings")
        started = None
        if event.get("started"):
            try:
                started = parse_ts(event["started"], "started")
            except TimestampError as exc:
                # a finished log: its messages still say when the session ran
                self.notes.append(
                    f"{str(exc).split(';')[0]}; the session starts at its first timed event"
                )
        self.open[sid] = SessionDraft(
            session_id=sid,
            model=_opt(event, "model"),
            channel=_opt(event, "channel"),
            topic=_opt(event, "topic"),
            tags=tuple(str(t) for t in tags),
            started=started,
            cwd=_opt(event, "cwd"),
            project=_opt(event, "project"),
            source=self.source,
        )
        self._clock[sid] = started

    def _session(self, event: dict[str, Any]) -> SessionDraft:
        sid = event.get("session_id")
        if sid is None:
            if len(self.open) != 1:
                raise ImportFormatError(
                    f"{len(self.open)} sessions are open here; the event needs its session_id"
                )
            return next(iter(self.open.values()))
        if not isinstance(sid, str) or sid not in self.open:
            raise ImportFormatError(f"unknown session {sid!r}: not started, or already ended")
        return self.open[sid]

    def _when(self, draft: SessionDraft, value: Any) -> datetime:
        """The event's time: its timestamp, else the time of the event before it."""
        when = parse_ts(value, "timestamp") if value else self._clock.get(draft.session_id)
        if when is None and self.written is not None:
            # capture gives such an event the time it arrives; a finished log's nearest
            # evidence of that is when it was written
            when = self.written
            self.notes.append(
                f"session {draft.session_id!r} says no time (0 or an empty timestamp is none): "
                "dated by when its log file was last written"
            )
        if when is None:
            raise ImportFormatError(
                "the event has no timestamp, and neither has its session before it"
            )
        if draft.started is None:
            draft.started = when
        self._clock[draft.session_id] = when
        return when

    @staticmethod
    def _agent_turn(draft: SessionDraft, when: datetime, *, memory: bool) -> DraftTurn:
        """The turn a tool call (MEMORY false) or a memory operation joins, as `capture`
        has it: the last turn when it is the agent's of that kind with no name (an
        attachment added to a turn leaves it what it was), else a new one."""
        last = draft.turns[-1] if draft.turns else None
        if last is not None and (last.role, last.name, last.memory) == ("agent", None, memory):
            return last
        return draft.add_turn(when, "agent", [], memory=memory)


def _modified(path: Path) -> datetime | None:
    """PATH's modification time (UTC, to the second), or None when it has none to read."""
    try:
        return datetime.fromtimestamp(int(path.stat().st_mtime), tz=UTC)
    except (OSError, ValueError, OverflowError):
        return None


def _opt(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    return None if value is None else str(value)
