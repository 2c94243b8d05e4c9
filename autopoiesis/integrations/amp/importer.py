"""Amp threads (`~/.local/share/amp/threads/T-<id>.json`, and `amp threads export`).

One JSON object: `{"v", "id": "T-...", "created": ms, "title"?, "messages": [...],
"env": {"initial": {"workingDirectory"?}}}`. A message has `role` (user or assistant),
Anthropic `content` blocks (`text`, `tool_use`, `tool_result`, `image`; `thinking` left
out), `meta.sentAt` (ms) and, for the assistant, `usage` (`model`, `inputTokens`,
`outputTokens`, cache tokens). Tool results come in the next user message, by
`tool_use_id` (Amp's own export: `toolUseID`, the output in `run.result`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    anthropic_attachment,
    anthropic_tool_result,
    args_summary,
    count,
    file_session_id,
    first_time,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
    sequence,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf


def _is_thread(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("id"), str)
        and data["id"].startswith("T-")
        and isinstance(data.get("messages"), list)
        and "v" in data
    )


class AmpImporter:
    name = "amp"
    description = "Amp threads (~/.local/share/amp/threads/T-*.json, amp threads export)"

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text) or not text.lstrip().startswith("{"):
            return 0.0
        try:
            return 0.95 if _is_thread(load_json(text)) else 0.0
        except (ValueError, RecursionError):
            return 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        if not _is_thread(data):
            raise ImportFormatError(f"{path}: not an Amp thread (v, id T-..., messages).")
        env = mapping(mapping(data.get("env")).get("initial"))
        draft = SessionDraft(
            session_id=safe_session_id(data["id"]) or file_session_id("amp", path.stem),
            channel="amp",
            source=f"amp:{path.name}",
            topic=nonempty_str(data.get("title")),
            cwd=nonempty_str(env.get("workingDirectory")),
        )
        clock = first_time(data.get("created"), data.get("updatedAt"), field="created")
        if clock is None:
            clock = parse_ts(path.stat().st_mtime, f"{path}: modification time")
        draft.started = clock
        calls = ToolCalls()
        for i, message in enumerate(sequence(data["messages"])):
            if not isinstance(message, dict):
                report.skip_line(str(path), i + 1, f"messages[{i}] is not an object")
                continue
            clock = first_time(mapping(message.get("meta")).get("sentAt"), field="sentAt") or clock
            _message(draft, message, clock, calls)
        if not draft.turns:
            raise ImportFormatError(f"{path}: this Amp thread holds no message; nothing to import.")
        return [draft]


def _message(
    draft: SessionDraft, message: dict[str, Any], when: datetime, calls: ToolCalls
) -> None:
    role = "user" if message.get("role") == "user" else "agent"
    usage = mapping(message.get("usage"))
    if role == "agent":
        draft.model = draft.model or nonempty_str(usage.get("model"))
        draft.tokens_in += count(usage.get("inputTokens")) + count(
            usage.get("cacheReadInputTokens")
        )
        draft.tokens_out += count(usage.get("outputTokens"))
    items: list[tf.Item] = []
    content = message.get("content")
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and nonempty_str(block.get("text")):
            items.append(tf.Text(block["text"]))
        elif kind == "tool_use":
            call = tf.ToolCall(str(block.get("name") or "tool"), args_summary(block.get("input")))
            calls.add(block.get("id"), items, call)
        elif kind == "tool_result":
            run = mapping(block.get("run"))  # Amp's own shape: toolUseID and run.result
            result = block.get("content", run.get("result"))
            anthropic_tool_result(
                {
                    **block,
                    "tool_use_id": block.get("tool_use_id", block.get("toolUseID")),
                    "content": result if isinstance(result, str | list) else output_text(result),
                    "is_error": block.get("is_error") or run.get("status") in ("error", "rejected"),
                },
                calls,
                items,
            )
        elif kind in ("image", "document"):
            items.append(anthropic_attachment(block))
    if not items:
        return
    if role == "user" and all(isinstance(i, tf.ToolCall | tf.Attachment) for i in items):
        role = "agent"  # results of calls the log does not show
    draft.add_turn(when, role, items)
