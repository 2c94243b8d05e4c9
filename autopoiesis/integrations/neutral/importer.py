"""The neutral format: one session per object; a file holds one object, a list of them,
or (as .jsonl) one per line::

    {"session_id": "ses_1", "started": "2026-02-16T18:45:00Z", "ended": "...",
     "model": "gpt-4o", "channel": "webchat", "topic": "optional", "tags": ["optional"],
     "messages": [{"role": "user", "name": "optional speaker", "content": "...",
                   "timestamp": "2026-02-16T18:45:10Z",
                   "tool_calls": [{"tool": "exec", "args": "ls", "result": "3 files"}],
                   "attachments": ["optional/path.png"]}]}

A message without a timestamp takes the time of the one before it (the first: started).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    first_json_line,
    iter_log_lines,
    json_probe,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import args_summary, content_text, whole_number
from autopoiesis.capture.session import normalize_role
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import AutopoiesisError, CaptureError, ImportFormatError
from autopoiesis.formats import transcript as tf


def _is_session(obj: Any) -> bool:
    return isinstance(obj, dict) and "session_id" in obj and "messages" in obj


class NeutralImporter:
    name = "neutral"
    description = "autopoiesis' own JSON: sessions with session_id, started and messages"

    def detect(self, path: Path, text: str) -> float:
        probe = first_json_line(text) if looks_like_jsonl(path, text) else json_probe(text)
        return 1.0 if _is_session(probe) else 0.0

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        if path.suffix == ".jsonl":
            drafts = []
            for n, line in enumerate(iter_log_lines(text), 1):
                if line.strip():
                    try:
                        data = json.loads(line)
                    except ValueError:
                        report.skip_line(str(path), n, "not JSON")
                        continue
                    except RecursionError:
                        report.refuse(
                            f"{path}:{n}",
                            "nested deeper than can be read; nothing of this line was imported.",
                        )
                        continue
                    drafts.extend(parse_sessions(data, f"{path}:{n}", report))
            return drafts
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        return parse_sessions(data, str(path), report)


def parse_sessions(
    data: Any, source: str, report: ImportReport | None = None
) -> list[SessionDraft]:
    """The sessions of one neutral JSON value (an object or a list of them). With REPORT,
    a bad session is refused there on its own and the others are kept; without, it raises."""
    objs = data if isinstance(data, list) else [data]
    drafts = []
    for n, obj in enumerate(objs):
        where = f"{source}[{n}]" if isinstance(data, list) else source
        try:
            drafts.append(_parse_session(obj, where))
        except (AutopoiesisError, RecursionError) as exc:
            if report is None:
                raise
            sid = obj.get("session_id") if isinstance(obj, dict) else None
            what = f"{where} (session {sid!r})" if isinstance(sid, str) else where
            reason = (
                str(exc) if isinstance(exc, AutopoiesisError) else "nested deeper than can be read"
            )
            report.refuse(
                what, f"{reason.removeprefix(where + ': ')} The session was not imported."
            )
    return drafts


def _parse_session(obj: Any, where: str) -> SessionDraft:
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        raise ImportFormatError(
            f"{where}: a neutral session is an object with session_id, started and a messages list."
        )
    if not obj.get("session_id"):
        raise ImportFormatError(f"{where}: session_id is missing; give each session a stable id.")
    tags = obj.get("tags") or ()
    if not isinstance(tags, (list, tuple)):
        raise ImportFormatError(f"{where}: tags must be a list of strings.")
    d = SessionDraft(
        session_id=str(obj["session_id"]),
        model=obj.get("model"),
        channel=obj.get("channel"),
        topic=obj.get("topic"),
        tags=tuple(str(t) for t in tags),
        started=parse_ts(obj["started"], f"{where}: started") if obj.get("started") else None,
        ended=parse_ts(obj["ended"], f"{where}: ended") if obj.get("ended") else None,
        tokens_in=whole_number(obj.get("tokens_in"), f"{where}: tokens_in"),
        tokens_out=whole_number(obj.get("tokens_out"), f"{where}: tokens_out"),
    )
    clock = d.started
    for i, msg in enumerate(obj["messages"]):
        if not isinstance(msg, dict):
            raise ImportFormatError(
                f"{where}: messages[{i}] must be an object with role and content."
            )
        try:
            role = normalize_role(msg.get("role"))
        except CaptureError as exc:
            raise ImportFormatError(f"{where}: messages[{i}]: {exc}") from None
        when = clock
        if msg.get("timestamp"):
            when = parse_ts(msg["timestamp"], f"{where}: messages[{i}].timestamp")
        if when is None:
            raise ImportFormatError(
                f"{where}: messages[{i}] has no timestamp and the session no started time."
            )
        clock = when
        items: list[tf.Item] = []
        if content_text(msg.get("content")):
            items.append(tf.Text(content_text(msg.get("content"))))
        for j, call in enumerate(_list(msg, "tool_calls", f"{where}: messages[{i}]")):
            if not isinstance(call, dict):
                raise ImportFormatError(
                    f"{where}: messages[{i}].tool_calls[{j}] must be an object "
                    "with tool, args and result."
                )
            tool = str(call.get("tool") or call.get("name") or "tool")
            args = args_summary(call.get("args"))
            items.append(tf.ToolCall(tool, args, content_text(call.get("result")) or None))
        for att in _list(msg, "attachments", f"{where}: messages[{i}]"):
            items.append(tf.Attachment(str(att)))
        name = msg.get("name")
        d.add_turn(when, role, items, None if name is None else str(name))
    return d


def _list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    value = obj.get(key) or []
    if not isinstance(value, list):
        raise ImportFormatError(f"{where}.{key} must be a list.")
    return value
