"""OpenAI chat-completions messages: a list of `{"role", "content", "tool_calls"}`
messages, or an object with `messages` (and optionally `model`, `created`, `id`).

Chat messages carry no times: every turn gets `created` when given, else the file's
modification minute. A session without an id is named by a hash of its opening exchange
(base.opening_id), so importing the same file twice is recognised as the same session,
and the file grown by later messages as that session going on (a continuation part).
A list holding Anthropic content blocks (`tool_use`, `tool_result`, ...) is not this
format: detection leaves it to the `cline` importer, and `--format openai` refuses it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    json_probe,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    args_summary,
    content_text,
    has_anthropic_blocks,
    opening_id,
)
from autopoiesis.capture.session import normalize_role
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import CaptureError, ImportFormatError
from autopoiesis.formats import transcript as tf


class OpenAIImporter:
    name = "openai"
    description = "OpenAI chat-completions messages (a list, or an object with messages)"

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text):
            return 0.0
        probe = json_probe(text)
        if not (isinstance(probe, dict) and ("role" in probe or "messages" in probe)):
            return 0.0
        data = load_json(text)
        messages = data.get("messages") if isinstance(data, dict) else data
        return 0.0 if has_anthropic_blocks(messages) else 0.8

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        mtime = parse_ts(path.stat().st_mtime, f"{path}: modification time").replace(
            second=0, microsecond=0
        )
        return [parse_chat(data, str(path), mtime)]


def parse_chat(data: object, source: str, fallback_time: datetime) -> SessionDraft:
    """One session from chat-completions DATA; FALLBACK_TIME when it has no `created`."""
    messages, info = _chat_messages(data, source)
    sid = str(info.get("session_id") or info.get("id") or opening_id("oai_", messages))
    started = parse_ts(info["created"], "created") if info.get("created") else fallback_time
    model, channel = info.get("model"), info.get("channel") or "openai"
    d = SessionDraft(
        session_id=sid,
        model=None if model is None else str(model),
        channel=str(channel),
        started=started,
    )
    calls = ToolCalls()
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise ImportFormatError(
                f"{source}: messages[{i}] must be an object with role and content."
            )
        _add_message(d, calls, msg, started, f"{source}: messages[{i}]")
    return d


def _chat_messages(data: object, source: str) -> tuple[list[Any], dict[str, Any]]:
    """(the messages, the object around them or {}) of DATA; ImportFormatError when it is
    no chat-completions list."""
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        messages, info = data["messages"], data
    elif isinstance(data, list) and all(isinstance(m, dict) and "role" in m for m in data):
        messages, info = data, {}
    else:
        raise ImportFormatError(
            f"{source}: expected a list of chat messages or an object with a messages list."
        )
    if has_anthropic_blocks(messages):
        raise ImportFormatError(
            f"{source}: its messages hold Anthropic content blocks (tool_use, tool_result, ...), "
            "so it is an Anthropic Messages list, not chat completions; import it with --format "
            "cline."
        )
    return messages, info


def _add_message(
    d: SessionDraft, calls: ToolCalls, msg: dict[str, Any], when: datetime, where: str
) -> None:
    """Add MSG (WHERE names it in errors): a tool result fills in its call, any other
    message is a turn with its text, attachments and the calls it makes."""
    role = msg.get("role")
    if role == "tool":
        calls.resolve(msg.get("tool_call_id"), content_text(msg.get("content")) or None)
        return
    if role == "function":  # the result of a legacy function_call
        calls.resolve(f"function:{msg.get('name')}", content_text(msg.get("content")) or None)
        return
    try:
        norm = normalize_role(role)
    except CaptureError as exc:
        raise ImportFormatError(f"{where}: {exc}") from None
    items: list[tf.Item] = []
    if content_text(msg.get("content")):
        items.append(tf.Text(content_text(msg.get("content"))))
    items.extend(_attachments(msg.get("content")))
    _open_calls(msg, items, calls, where)
    if not items and msg.get("content") in (None, "", []):
        return  # a message with nothing in it (content null and no calls)
    name = msg.get("name")
    d.add_turn(when, norm, items, None if name is None else str(name))


def _open_calls(msg: dict[str, Any], items: list[tf.Item], calls: ToolCalls, where: str) -> None:
    """Add the message's tool calls (and a legacy function_call) to ITEMS, open in CALLS."""
    tool_calls = msg.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise ImportFormatError(f"{where}.tool_calls must be a list of tool calls.")
    for j, call in enumerate(tool_calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            raise ImportFormatError(
                f"{where}.tool_calls[{j}] must be an object with a function (name, arguments)."
            )
        tool = tf.ToolCall(str(fn.get("name") or "tool"), args_summary(fn.get("arguments")), None)
        calls.add(call.get("id"), items, tool)
    legacy = msg.get("function_call")
    if isinstance(legacy, dict):
        name = str(legacy.get("name") or "function")
        tool = tf.ToolCall(name, args_summary(legacy.get("arguments")), None)
        calls.add(f"function:{legacy.get('name')}", items, tool)


def _attachments(content: object) -> list[tf.Item]:
    """Attachment lines for the non-text parts of a message (their bytes are not kept)."""
    out: list[tf.Item] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "image_url":
            url = (
                part["image_url"].get("url")
                if isinstance(part.get("image_url"), dict)
                else part.get("image_url")
            )
            keep = isinstance(url, str) and url.startswith(("http://", "https://"))
            out.append(
                tf.Attachment(url if keep and isinstance(url, str) else "image (not stored)")
            )
        elif kind == "input_audio":
            out.append(tf.Attachment("audio (not stored)"))
        elif kind == "file":
            name = part["file"].get("filename") if isinstance(part.get("file"), dict) else None
            out.append(tf.Attachment(f"{name or 'file'} (not stored)"))
    return out
