"""Continue sessions (`~/.continue/sessions/<sessionId>.json`)::

    {"sessionId", "title", "workspaceDirectory", "mode"?, "chatModelTitle"?, "usage"?,
     "history": [{"message": {"role": "user" | "assistant" | "thinking" | "system" | "tool",
                              "content": str | [{"type": "text" | "imageUrl", ...}],
                              "toolCalls"?: [{"id", "function": {"name", "arguments"}}],
                              "toolCallId"?},
                  "contextItems": [{"name", "description", "content", "uri"?}],
                  "toolCallStates"?: [{"toolCallId", "toolCall", "status", "output"?}],
                  "conversationSummary"?, "reasoning"?}]}

Assistant tool calls are answered by `tool` messages or the item's `toolCallStates`
output; `thinking` messages and `reasoning` are left out; the context items the user
attached (files, URLs) are attachment lines; a `conversationSummary` (Continue compacted
the chat) is a system item. `sessions.json` beside the sessions (the list of them) is no
session and is passed over.

Continue writes no time per message: a session is dated by its `dateCreated` in the
`sessions.json` beside it, else the file's modification minute, and every turn carries
that time (a reasoning block's own start time where there is one).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    as_dict,
    as_list,
    json_probe,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import ToolCalls, args_summary, content_text
from autopoiesis.capture.session import normalize_role
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import CaptureError, ImportFormatError, TranscriptFormatError
from autopoiesis.formats import transcript as tf


def workspace_folder(value: Any) -> str | None:
    """The folder of a session's `workspaceDirectory`: a path, or (newer Continue) a
    `file://` URI; None for anything else (a remote workspace's URI)."""
    if not isinstance(value, str) or not value.strip():
        return None
    if value.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(value).path) or None
    return value if "://" not in value else None


class ContinueImporter:
    name = "continue"
    description = "Continue sessions (~/.continue/sessions/*.json)"

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text):
            return 0.0
        probe = json_probe(text) if text.lstrip().startswith("{") else None
        return (
            0.95
            if isinstance(probe, dict)
            and "sessionId" in probe
            and isinstance(probe.get("history"), list)
            else 0.0
        )

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        if not isinstance(data, dict) or not isinstance(data.get("history"), list):
            raise ImportFormatError(
                f"{path}: a Continue session is an object with sessionId and a history list."
            )
        sid = str(data.get("sessionId") or "")
        try:
            tf.validate_session_id(sid)
        except TranscriptFormatError as exc:
            raise ImportFormatError(f"{path}: sessionId: {exc}") from None
        started = _created(path, sid) or parse_ts(
            path.stat().st_mtime, f"{path}: modification time"
        ).replace(second=0, microsecond=0)
        usage = as_dict(data.get("usage"))
        draft = SessionDraft(
            session_id=sid,
            channel="continue",
            source=f"continue:{path.name}",
            started=started,
            topic=data.get("title")
            if isinstance(data.get("title"), str) and data["title"] != "New Session"
            else None,
            model=data.get("chatModelTitle")
            if isinstance(data.get("chatModelTitle"), str)
            else None,
            tokens_in=_whole(usage.get("promptTokens")),
            tokens_out=_whole(usage.get("completionTokens")),
            cwd=workspace_folder(data.get("workspaceDirectory")),
        )
        _read_history(draft, data["history"], started, str(path))
        return [draft]


def _whole(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _created(path: Path, sid: str) -> datetime | None:
    """The session's dateCreated from the sessions.json list beside it."""
    listing = path.parent / "sessions.json"
    try:
        entries = json.loads(listing.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    for entry in entries if isinstance(entries, list) else []:
        if (
            isinstance(entry, dict)
            and entry.get("sessionId") == sid
            and entry.get("dateCreated") is not None
        ):
            created = entry["dateCreated"]
            try:
                return parse_ts(
                    int(created) if isinstance(created, str) and created.isdigit() else created,
                    "dateCreated",
                )
            except TranscriptFormatError:
                return None
    return None


def _read_history(draft: SessionDraft, history: list[Any], started: datetime, source: str) -> None:
    calls = ToolCalls()
    for i, item in enumerate(history):
        msg = item.get("message") if isinstance(item, dict) else None
        if not isinstance(msg, dict):
            raise ImportFormatError(f"{source}: history[{i}] must be an object with a message.")
        when = _item_time(item, started)
        role = msg.get("role")
        if role == "thinking":
            continue
        if role == "tool":
            calls.resolve(msg.get("toolCallId"), content_text(msg.get("content")) or None)
            continue
        try:
            norm = normalize_role(role)
        except CaptureError as exc:
            raise ImportFormatError(f"{source}: history[{i}].message: {exc}") from None
        items = _message_items(msg, calls)
        _resolve_call_states(item, calls)
        if norm == "user":
            items.extend(_context_attachments(item))
        if items:
            draft.add_turn(when, norm, items)
        summary = item.get("conversationSummary")
        if isinstance(summary, str) and summary.strip():
            draft.add_turn(when, "system", [tf.Text(summary)])


def _item_time(item: dict[str, Any], started: datetime) -> datetime:
    """STARTED, or the item's reasoning block's start when it has a readable later one."""
    reasoning = item.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("startAt") is not None:
        try:
            return max(started, parse_ts(reasoning["startAt"], "reasoning.startAt"))
        except TranscriptFormatError:
            pass
    return started


def _message_items(msg: dict[str, Any], calls: ToolCalls) -> list[tf.Item]:
    """The text, image attachments and tool calls (opened in CALLS) of a message."""
    items: list[tf.Item] = []
    text = content_text(msg.get("content"))
    if text.strip():
        items.append(tf.Text(text))
    for part in as_list(msg.get("content")):
        if isinstance(part, dict) and part.get("type") == "imageUrl":
            items.append(tf.Attachment("image (not stored)"))
    for call in as_list(msg.get("toolCalls")):
        fn = as_dict(as_dict(call).get("function"))
        tool = tf.ToolCall(str(fn.get("name") or "tool"), args_summary(fn.get("arguments")), None)
        calls.add(as_dict(call).get("id"), items, tool)
    return items


def _resolve_call_states(item: dict[str, Any], calls: ToolCalls) -> None:
    """Write the outputs of the item's toolCallStates into their calls."""
    for state in as_list(item.get("toolCallStates")):
        if isinstance(state, dict) and isinstance(state.get("output"), list):
            parts = [str(o.get("content") or "") for o in state["output"] if isinstance(o, dict)]
            output = "\n".join(parts).strip()
            if state.get("status") == "errored":
                output = f"error: {output}".strip()
            calls.resolve(state.get("toolCallId"), output or None)


def _context_attachments(item: dict[str, Any]) -> list[tf.Item]:
    """Attachment lines for the context items (files, URLs) the user attached."""
    out: list[tf.Item] = []
    for ctx in as_list(item.get("contextItems")):
        if isinstance(ctx, dict) and not ctx.get("hidden"):
            uri = as_dict(ctx.get("uri"))
            name = uri.get("value") or ctx.get("description") or ctx.get("name")
            if isinstance(name, str) and name.strip():
                out.append(tf.Attachment(name))
    return out
