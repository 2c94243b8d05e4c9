"""OpenAI chat-completions messages: a list of `{"role", "content", "tool_calls"}`
messages, or an object with `messages` (and optionally `model`, `created`, `id`).

Chat messages carry no times: every turn gets `created` when given, else the file's
modification minute. A session without an id is named by a hash of its messages, so
importing the same file twice is recognised as the same session.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    ToolCalls,
    args_summary,
    content_text,
    json_probe,
    load_json,
    looks_like_jsonl,
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
        return 0.8 if isinstance(probe, dict) and ("role" in probe or "messages" in probe) else 0.0

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        mtime = parse_ts(path.stat().st_mtime, f"{path}: modification time").replace(second=0, microsecond=0)
        return [parse_chat(data, str(path), mtime)]


def parse_chat(data: object, source: str, fallback_time: datetime) -> SessionDraft:
    """One session from chat-completions DATA; FALLBACK_TIME when it has no `created`."""
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        messages, info = data["messages"], data
    elif isinstance(data, list) and all(isinstance(m, dict) and "role" in m for m in data):
        messages, info = data, {}
    else:
        raise ImportFormatError(f"{source}: expected a list of chat messages or an object with a messages list.")
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")
    sid = str(info.get("session_id") or info.get("id") or "oai_" + hashlib.sha256(canonical).hexdigest()[:16])
    started = parse_ts(info["created"], "created") if info.get("created") else fallback_time
    model, channel = info.get("model"), info.get("channel") or "openai"
    d = SessionDraft(session_id=sid, model=None if model is None else str(model), channel=str(channel), started=started)
    calls = ToolCalls()
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise ImportFormatError(f"{source}: messages[{i}] must be an object with role and content.")
        role = msg.get("role")
        if role == "tool":
            calls.resolve(msg.get("tool_call_id"), content_text(msg.get("content")) or None)
            continue
        try:
            norm = normalize_role(role)
        except CaptureError as exc:
            raise ImportFormatError(f"{source}: messages[{i}]: {exc}") from None
        items: list[tf.Item] = []
        if content_text(msg.get("content")):
            items.append(tf.Text(content_text(msg.get("content"))))
        tool_calls = msg.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            raise ImportFormatError(f"{source}: messages[{i}].tool_calls must be a list of tool calls.")
        for j, call in enumerate(tool_calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                raise ImportFormatError(
                    f"{source}: messages[{i}].tool_calls[{j}] must be an object with a function (name, arguments)."
                )
            calls.add(call.get("id"), items, tf.ToolCall(str(fn.get("name") or "tool"), args_summary(fn.get("arguments")), None))
        name = msg.get("name")
        d.add_turn(started, norm, items, None if name is None else str(name))
    return d
