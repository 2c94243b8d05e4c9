"""The Claude.ai data export's `conversations.json`: a list of conversations (or one),
each with `uuid`, `name`, `created_at` and `chat_messages`.

Each conversation is one transcript, named by its `name`. A chat message has a `sender`
(`human` or `assistant`), `created_at`, `text`, and in newer exports `content` blocks:
`text`, `thinking` (left out on purpose, docs/design.md#transcript-format), `tool_use` and
`tool_result`
(written as one tool-call line), images. When no text block says anything the message's
`text` is used. Uploaded `attachments` and `files` become attachment lines (by name; the
extracted text of an upload is not copied into the transcript).

When the messages carry `parent_message_uuid`, the turns are the branch that ends at the
last message of the list (the one the user last saw): edited-away branches stay out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    json_probe,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    args_summary,
    content_text,
    first_time,
    nonempty_str,
    read_export,
    safe_session_id,
    sequence,
    stable_id,
    string,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import ImportFormatError, TimestampError
from autopoiesis.formats import transcript as tf

ROLES = {"human": "user", "user": "user", "assistant": "agent"}


def _is_conversation(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("chat_messages"), list) and "uuid" in obj


def _branch(messages: list[Any]) -> list[dict[str, Any]]:
    """The messages of the branch ending at the last one, when they name their parents."""
    msgs = [m for m in messages if isinstance(m, dict)]
    if not msgs or not all(isinstance(m.get("parent_message_uuid"), str) for m in msgs):
        return msgs
    by_id = {m.get("uuid"): m for m in msgs}
    path: list[dict[str, Any]] = []
    node: dict[str, Any] | None = msgs[-1]
    while node is not None and node not in path:
        path.append(node)
        node = by_id.get(node.get("parent_message_uuid"))
    return path[::-1]


class ClaudeAIImporter:
    name = "claude-ai"
    description = "Claude.ai export conversations.json (chat_messages)"

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text):
            return 0.0
        return 0.95 if _is_conversation(json_probe(text)) else 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        return read_export(
            path,
            text,
            report,
            export="Claude.ai",
            is_conversation=_is_conversation,
            needs="a uuid and chat_messages",
            read_one=lambda conv, where: _conversation(conv, where, path.name, report),
        )


def _conversation(
    conv: dict[str, Any], where: str, filename: str, report: ImportReport
) -> SessionDraft:
    name = nonempty_str(conv.get("name"))
    sid = safe_session_id(conv.get("uuid")) or stable_id("claude_ai", name, conv.get("created_at"))
    draft = SessionDraft(
        session_id=sid,
        channel="claude-ai",
        topic=name,
        source=f"claude-ai:{filename}",
        model=nonempty_str(conv.get("model")),
    )
    branch = _branch(conv["chat_messages"])
    # without a readable time of its own, the conversation starts at its first message's
    # that has one: a first message without one then takes it, rather than refuse every
    # message of the conversation for the want of one time
    clock = draft.started = first_time(
        conv.get("created_at"),
        *(m.get("created_at") for m in branch),
        conv.get("updated_at"),
        field="created_at",
    )
    calls = ToolCalls()
    for i, msg in enumerate(branch):
        role = ROLES.get(str(msg.get("sender")))
        if role is None:
            report.skip_line(
                f"{where}#chat_messages",
                i + 1,
                f"sender {msg.get('sender')!r} is not human or assistant",
            )
            continue
        try:
            if msg.get("created_at") is not None:
                clock = parse_ts(msg["created_at"], "created_at")
        except TimestampError as exc:  # an unreadable time: the message keeps the time before it
            report.warnings.append(
                f"{where}: message {msg.get('uuid')!r}: {str(exc).split(';')[0]}; it keeps the "
                "time before it"
            )
        if clock is None:
            raise ImportFormatError(
                f"message {msg.get('uuid')!r} has no readable created_at and neither has the "
                "conversation; it was not imported."
            )
        items = _items(msg, calls)
        if not items:
            continue
        if role == "user" and all(isinstance(i, tf.ToolCall) for i in items):
            role = "agent"
        draft.add_turn(clock, role, items)
    return draft


def _items(msg: dict[str, Any], calls: ToolCalls) -> list[tf.Item]:
    items: list[tf.Item] = []
    has_text = False
    for block in sequence(msg.get("content")):
        if not isinstance(block, dict):
            continue
        kind = string(block.get("type"))
        if kind == "text" and isinstance(block.get("text"), str):
            if block["text"].strip():
                items.append(tf.Text(block["text"]))
                has_text = True
        elif kind == "tool_use":
            calls.add(
                block.get("id"),
                items,
                tf.ToolCall(
                    str(block.get("name") or "tool"), args_summary(block.get("input")), None
                ),
            )
        elif kind == "tool_result":
            result = content_text(block.get("content")) or None
            if block.get("is_error") and result:
                result = f"error: {result}"
            name = nonempty_str(block.get("name"))
            if not calls.resolve(block.get("tool_use_id"), result) and not calls.resolve_oldest(
                name, result
            ):
                items.append(
                    tf.ToolCall(name or "result", str(block.get("tool_use_id") or ""), result)
                )
        elif kind == "image":
            items.append(tf.Attachment("image (not stored)"))
    if not has_text and nonempty_str(msg.get("text")):
        items.insert(0, tf.Text(msg["text"]))
    for key in ("attachments", "files"):
        for upload in msg.get(key) or [] if isinstance(msg.get(key), list) else []:
            if isinstance(upload, dict) and nonempty_str(upload.get("file_name")):
                items.append(tf.Attachment(upload["file_name"]))
    return items
