"""`autopoiesis capture`: newline-delimited JSON events from an agent harness.

    {"event": "session_start", "session_id": "s1", "started": "...", "model": "...", "channel":
    "...", "topic"?: "...", "tags"?: [...], "cwd"?: "/abs/folder", "project"?: "slug"}
    {"event": "message", "session_id"?: "s1", "role": "user", "content": "...", "timestamp"?: "...",
    "name"?: "..."}
    {"event": "tool_call", "session_id"?: "s1", "tool": "exec", "args": "...", "result": "...",
    "timestamp"?: "..."}
    {"event": "knowledge", "session_id"?: "s1", "action": "updated", "path": "knowledge/...",
    "summary": "..."}
    {"event": "session_end", "session_id"?: "s1", "ended"?: "...", "tokens_in"?: 0, "tokens_out"?:
    0}

Each event is applied as it arrives (appended and fsynced). `session_id` may be left out
while exactly one session is open. A session event without `started` / `ended` takes its
`timestamp`, as the other events do. A chat API's message is read as it is sent: content
parts are their text, `content: null` is no turn, the role "tool" is a tool's output. A
refused event (bad JSON, UTF-16, unknown event or role, a message before its
session_start, an unknown session, a second session_end, a bad session id) is reported
with its line number and skipped; an event with bytes that are not UTF-8 is kept, each
read as U+FFFD, with a warning; everything else in the stream is still captured, and the
exit status says that something was refused. The later events of a session whose
session_start was refused are refused saying so, and why. `cwd`, the folder the agent
works in, gives the transcript its `project:` (the git repository it is in) unless
`project` names one. A
session still open at the end of input stays open and is recovered later (`autopoiesis
capture --recover`, or the next capture start).

No input raises out of the loop: JSON nested deeper than Python can read, text with lone
surrogates, a full disk — each event is either kept or refused with its line number and
the reason. A time that cannot be trusted (no time, NaN, 1e20, year 1 or 9999, no time
zone, in the future) refuses nothing: the event is kept at the time of the turn before
it, with a warning (session.event_time).

Each closed session is announced on stdout: `{"event": "committed", ...}` with its
commit, or `{"event": "closed", "commit": null, "reason": ...}` when it was not committed
(`git.auto_commit: false`, or a commit git refused; `autopoiesis commit` commits it).
"""

from __future__ import annotations

import codecs
import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, cast

from autopoiesis.capture.session import (
    ClosedSession,
    ConversationCapture,
    Session,
    event_time,
    normalize_role,
)
from autopoiesis.core.approval import capture_held_back
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import counted, decode_replacing
from autopoiesis.errors import AutopoiesisError, CaptureError

TOO_DEEP = (
    "the event is nested deeper than can be read; send flat JSON (tool arguments as a string)."
)
# a stream that opens with UTF-16's byte order mark (PowerShell's `>` writes one): each of
# its lines breaks into halves that are no JSON, so the first says what it is
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
UTF16 = (
    "the stream is UTF-16 text (its byte order mark says so), and capture reads UTF-8: "
    "convert it on the way in, `iconv -f UTF-16 -t UTF-8 FILE | autopoiesis capture`; no "
    "event of it was kept."
)
EVENTS = ("session_start", "message", "tool_call", "knowledge", "attachment", "session_end")


class TooLong:
    """A line longer than the stream's cap: its size, and nothing of it kept."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


def line_cap(max_message_bytes: int) -> int:
    """The longest event line a capture reads: a message's content is cut to
    capture.max_message_bytes anyway, and JSON may spell a character in six bytes."""
    return 8 * max_message_bytes + (1 << 20)


def capped_lines(stream: IO[bytes], cap: int) -> Iterator[bytes | TooLong]:
    """The lines of STREAM, none held past CAP bytes: a longer one is read through to its
    end in pieces and given as TooLong (a 256 MB line held a gigabyte)."""
    while True:
        line = stream.readline(cap + 1)
        if not line:
            return
        if len(line) <= cap or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = stream.readline(1 << 20)
            if not line:
                break
            size += len(line)
        yield TooLong(size)


@dataclass
class StreamReport:
    events: int = 0
    refused: list[str] = field(default_factory=list)
    closed: list[ClosedSession] = field(default_factory=list)
    left_open: list[str] = field(default_factory=list)
    not_closed: list[str] = field(default_factory=list)  # a session_end that failed: still open
    recovered: list[ClosedSession] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _session_id(value: Any) -> str | None:
    """An event's session_id as text: a string, or a whole number as its digits (a
    harness that numbers its sessions sent `"session_id": 42` on every event, and every
    one was refused). None when there is none; CaptureError for any other value."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise CaptureError(
        f"session_id must be a string like ses_a1b2c3d4 (or a whole number), not {_short(value)}."
    )


def _session_for(
    capture: ConversationCapture, event: dict[str, Any], refused_starts: dict[str, str]
) -> str:
    sid = _session_id(event.get("session_id"))
    if sid is not None:
        if sid in capture.open_sessions:
            return sid
        if sid in refused_starts:
            raise CaptureError(
                f"session {sid!r} was not started: its session_start was refused "
                f"({refused_starts[sid]}), so none of its events can be kept; fix that, then "
                "send the session again from its session_start."
            )
        raise CaptureError(
            f"unknown session {sid!r}: it was never started here, or it has already ended."
        )
    open_ids = capture.open_sessions
    if len(open_ids) == 1:
        return open_ids[0]
    if not open_ids:
        raise CaptureError("no session is open; send a session_start event first.")
    raise CaptureError(
        f"{len(open_ids)} sessions are open ({', '.join(open_ids)}); add session_id to the event."
    )


# Where an event's time is read, and the names other logs give it. A field this version
# does not read is left alone (a newer harness may send more), but a time under another name
# is a date silently lost: the event gets the time it arrived, and the transcript the day.
# A session's start and end are read from "timestamp" too when they carry no "started" or
# "ended": a harness that stamps every event alike would otherwise file a session of March
# under the day it was streamed, ended before its own turns.
_TIME_FIELD = {"session_start": "started", "session_end": "ended"}  # the others: "timestamp"
_TIME_ALIASES = ("ts", "time", "at", "date", "datetime", "created", "created_at", "createdAt")


TOOL_ROLES = ("tool", "function")  # a message in such a role is a tool's output


def _event_time(kind: str, event: dict[str, Any]) -> Any:
    """The time EVENT of KIND carries (its field's value, or None)."""
    named = event.get(_TIME_FIELD.get(kind, "timestamp"))
    return named if named is not None else event.get("timestamp")


def _warn_unread_time(kind: str, event: dict[str, Any]) -> None:
    read = _TIME_FIELD.get(kind, "timestamp")
    for alias in _TIME_ALIASES:
        if alias in event and read not in event and "timestamp" not in event:
            warnings.warn(
                f"a {kind} event's time is read from {read!r}, not {alias!r}: such events got "
                f"the time they arrived. Send {read!r} (ISO 8601) to keep the log's times.",
                stacklevel=2,
            )
            return


def apply_event(
    capture: ConversationCapture, event: Any, refused_starts: dict[str, str] | None = None
) -> ClosedSession | None:
    """Apply EVENT to CAPTURE. REFUSED_STARTS: the sessions whose session_start this
    stream refused, each with why, kept up to date here: their later events are refused
    saying so (an "unknown session" sent the user looking for a typo in the id)."""
    refused_starts = {} if refused_starts is None else refused_starts
    if not isinstance(event, dict):
        raise CaptureError(f"an event is a JSON object, not {type(event).__name__}.")
    kind = event.get("event")
    if kind is None:  # another stream's shape ("type": ...): say which field is read
        other = next((k for k in ("type", "kind", "event_type") if k in event), None)
        raise CaptureError(
            'an event names its kind in "event"'
            + (f', not "{other}"' if other else "")
            + f"; use one of {', '.join(EVENTS)}."
        )
    if kind not in EVENTS:
        raise CaptureError(f"unknown event {kind!r}; use one of {', '.join(EVENTS)}.")
    _warn_unread_time(kind, event)
    if kind == "session_start":
        sid = _session_id(event.get("session_id"))
        if sid is None:
            raise CaptureError("session_start needs session_id as a string, like ses_a1b2c3d4.")
        was_open = sid in capture.open_sessions  # refused as a second start: its events go on
        try:
            _start_session(capture, event, sid)
        except Exception as exc:
            if not was_open:
                refused_starts[sid] = _briefly(exc)
            raise
        refused_starts.pop(sid, None)
        return None
    sid = _session_for(capture, event, refused_starts)
    if kind == "message":
        content = event.get("content")
        if content is None:  # a chat API's message that only calls tools: no text
            content = ""
        if isinstance(content, list):  # an API's content parts: their text, joined
            from autopoiesis.capture.importers.shapes import content_text  # the importers'

            content = content_text(content)
        if not isinstance(content, str):
            raise CaptureError(
                "a message event needs content as a string (or a list of parts with text)."
            )
        if event.get("role") in TOOL_ROLES:
            # a chat API's tool message (OpenAI's "tool", its older "function"): the output
            # of a call, kept as one rather than refused as a speaker, under its tool's name
            # (the call it answers names it when the message gives only its id)
            call_id = event.get("tool_call_id")
            tool = (
                _text(event.get("name"), "a message's 'name'")
                or capture.call_names.get((sid, str(call_id)))
                or str(event["role"])
            )
            capture.on_tool_call(sid, tool, "", content, timestamp=event.get("timestamp"))
            return None
        # everything the event says is checked before a line of it is written: an event is
        # written whole or not at all (a refused message's tool calls were kept, and came
        # twice when the harness sent it again, mended)
        role = event.get("role")
        if content.strip() or role is not None:
            if not isinstance(role, str):
                raise CaptureError("a message event needs role as a string: user, agent or system.")
            normalize_role(role)
        calls = _api_tool_calls(event.get("tool_calls"))
        meta = {k: event[k] for k in ("timestamp", "type", "memory") if event.get(k) is not None}
        name = _text(event.get("name"), "a message's 'name'")
        if name is not None:
            meta["name"] = name
        if content.strip():  # what the agent said, then the calls it made saying it
            capture.on_message(sid, str(role), content, meta)
        elif not calls:  # says nothing: no turn of its own, as an import keeps none
            warnings.warn("a message with no text is not kept as a turn.", stacklevel=2)
        for called, args, call_id in calls:
            # the calls an assistant message makes (OpenAI's tool_calls): each its own line
            if call_id:
                capture.call_names[(sid, call_id)] = called
            capture.on_tool_call(sid, called, args, None, timestamp=event.get("timestamp"))
    elif kind == "tool_call":
        capture.on_tool_call(
            sid,
            tool_name(event),
            event.get("args", ""),
            event.get("result"),
            timestamp=event.get("timestamp"),
        )
    elif kind == "knowledge":
        if not isinstance(event.get("path"), str):
            raise CaptureError("a knowledge event needs its path as a string.")
        capture.on_knowledge_change(
            sid,
            _text(event.get("action"), "a knowledge event's 'action'") or "updated",
            event["path"],
            _text(event.get("summary"), "a knowledge event's 'summary'") or "",
            timestamp=event.get("timestamp"),
        )
    elif kind == "attachment":
        if not isinstance(event.get("path"), str):
            raise CaptureError("an attachment event needs its path as a string.")
        capture.on_attachment(sid, event["path"], timestamp=event.get("timestamp"))
    elif kind == "session_end":
        return capture.on_session_end(
            sid,
            ended=_event_time(kind, event),
            tokens_in=_int(event, "tokens_in"),
            tokens_out=_int(event, "tokens_out"),
        )
    return None


def _start_session(capture: ConversationCapture, event: dict[str, Any], sid: str) -> None:
    """Start in CAPTURE the session SID a session_start EVENT names."""
    tags = event.get("tags") or ()
    if not isinstance(tags, (list, tuple)):
        raise CaptureError("tags must be a list of strings.")
    capture.on_session_start(
        Session(
            id=sid,  # its characters are validated by on_session_start
            started=event_time(_event_time("session_start", event), "started", session=sid),
            model=_opt(event, "model"),
            channel=_opt(event, "channel"),
            topic=_opt(event, "topic"),
            tags=tuple(t for t in (_text(t, "a tag") for t in tags) if t is not None),
            cwd=_opt(event, "cwd"),
            # `project` names it; else `cwd` does (ConversationCapture.on_session_start)
            project=_opt(event, "project"),
        )
    )


def _briefly(exc: BaseException) -> str:
    """Why EXC refused a session_start, in a clause: its message up to what it says to do."""
    text = str(exc).split("; ")[0].rstrip(".") or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "\u2026"


def _api_tool_calls(value: Any) -> list[tuple[str, str, str]]:
    """(name, arguments, id) of each call of a chat API message's `tool_calls` (OpenAI's
    `{"id", "type": "function", "function": {"name", "arguments"}}`); what is not one is
    passed over."""
    calls = []
    for call in value if isinstance(value, list) else []:
        if not isinstance(call, dict):
            continue
        fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
        name = fn.get("name")
        if not isinstance(name, str) or not name.strip():
            continue
        args = fn.get("arguments", "")
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        call_id = call.get("id")
        calls.append((name, args, call_id if isinstance(call_id, str) else ""))
    return calls


def tool_name(event: dict[str, Any]) -> str:
    """The tool a tool_call EVENT names in "tool"; CaptureError saying so when it names it
    under another field (hooks and SDKs call it `name` or `tool_name`) or not at all."""
    tool = event.get("tool")
    if tool and isinstance(tool, (str, int, float)) and not isinstance(tool, bool):
        return str(tool)
    if tool:
        raise CaptureError(f'a tool_call event names its tool in "tool" as text, not {tool!r}.')
    other = next((k for k in ("name", "tool_name", "toolName") if event.get(k)), None)
    raise CaptureError(
        'a tool_call event names its tool in "tool"' + (f', not "{other}".' if other else ".")
    )


def _opt(event: dict[str, Any], key: str) -> str | None:
    """The optional text field KEY of EVENT (see _text)."""
    return _text(event.get(key), repr(key))


def _text(value: Any, what: str) -> str | None:
    """VALUE as the text of an optional field WHAT; a number is read as its digits. Any
    other value (a list, an object, true) is no such text: it is dropped with a warning,
    and the event is still taken (refusing a session's start would refuse its messages)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    warnings.warn(
        f"{what} is text, not {type(value).__name__} ({_short(value)}): it was left out. "
        "Send it as a string.",
        stacklevel=3,
    )
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "\u2026"


def _int(event: dict[str, Any], key: str) -> int | None:
    value = event.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CaptureError(f"{key} must be a non-negative whole number, not {value!r}.")
    return value


def process_stream(
    repo: MemoryRepo,
    lines: Iterable[bytes] | IO[bytes],
    out: IO[str] | None = None,
    *,
    on_committed: Callable[[str], None] | None = None,
) -> StreamReport:
    """Apply each NDJSON event of LINES (a binary stream is read a line at a time, none
    held past line_cap); report what was refused. Never raises for bad input.

    Each commit is announced on OUT as a `committed` event; ON_COMMITTED then runs on the
    committed transcript's path (see ConversationCapture)."""
    report = StreamReport()

    def announce(closed: ClosedSession) -> None:
        if out is None:
            return
        event: dict[str, Any] = {
            "event": "committed" if closed.commit else "closed",
            "session_id": closed.session_id,
            "path": closed.path,
            "commit": closed.commit,
        }
        if not closed.commit:
            event["reason"] = closed.not_committed
        try:
            out.write(json.dumps(event) + "\n")
            out.flush()
        except (OSError, ValueError):
            pass  # a reader that went away must not stop the capture (the transcript is on disk)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        capture = ConversationCapture(repo, on_closed=announce, on_committed=on_committed)
        report.recovered = capture.recovered
        held = capture_held_back(repo.root)
        if held:
            warnings.warn(held, stacklevel=1)
        refused_starts: dict[str, str] = {}
        not_utf8: list[tuple[int, int]] = []  # (line, byte) of the events read with U+FFFD
        cap = line_cap(repo.config.capture.max_message_bytes)
        source: Iterable[bytes | TooLong] = (
            capped_lines(cast(IO[bytes], lines), cap) if hasattr(lines, "readline") else lines
        )
        try:
            for number, raw in enumerate(source, start=1):
                if isinstance(raw, TooLong) or len(raw) > cap:
                    size = raw.size if isinstance(raw, TooLong) else len(raw)
                    report.events += 1
                    report.refused.append(
                        f"line {number}: {size} bytes, over the cap of {cap} on one event (8 x "
                        "capture.max_message_bytes + 1 MB); it was not kept, and the rest of "
                        "the stream was read. Send a long message as several events, or raise "
                        "capture.max_message_bytes."
                    )
                    continue
                if not raw.strip():
                    continue
                report.events += 1
                text, bad_at = decode_replacing(raw) if isinstance(raw, bytes) else (raw, None)
                if bad_at is not None:
                    if number == 1 and raw.startswith(_UTF16_BOMS):
                        report.refused.append(f"line {number}: {UTF16}")
                        continue
                    # a stray byte (a tool's binary output) does not cost the message
                    not_utf8.append((number, bad_at))
                if number == 1 and text.startswith("\ufeff"):
                    text = text[1:]  # a byte order mark (PowerShell's pipes, Notepad's files)
                try:
                    event = json.loads(text)
                except ValueError as exc:
                    why = (
                        "a number of more than 4,300 digits"
                        if "int_max_str_digits" in str(exc)
                        else str(exc)
                    )
                    report.refused.append(f"line {number}: not valid JSON ({why}).")
                    continue
                except RecursionError:
                    report.refused.append(f"line {number}: {TOO_DEEP}")
                    continue
                try:
                    closed = apply_event(capture, event, refused_starts)
                except AutopoiesisError as exc:
                    report.refused.append(f"line {number}: {exc}")
                    continue
                except RecursionError:
                    report.refused.append(f"line {number}: {TOO_DEEP}")
                    continue
                except Exception as exc:
                    report.refused.append(
                        f"line {number}: the event could not be applied ({type(exc).__name__}: "
                        f"{exc}); it was not kept. "
                        "Please report this with the event."
                    )
                    continue
                if closed is not None:
                    report.closed.append(closed)
        finally:
            report.left_open = capture.close_all()
            report.not_closed = list(capture.not_closed)
    report.warnings = list(dict.fromkeys(str(w.message) for w in caught))  # each once
    if not_utf8:  # told once: a harness that writes another encoding sends it on every line
        (number, at), more = not_utf8[0], len(not_utf8) - 1
        report.warnings.append(
            f"line {number}: bytes that are not UTF-8 (the first at byte {at}) were read as "
            "U+FFFD (\ufffd)"
            + (f", and so were those of {counted(more, 'more line')}" if more else "")
            + "; send UTF-8 JSON."
        )
    return report
