"""pi sessions (`~/.pi/agent/sessions/<folder>/<timestamp>_<id>.jsonl`).

A `session` line (`id`, `timestamp`, `cwd`, and in older logs `provider`, `modelId`), then
entries, each with `type`, `timestamp` and (version 3) `id`/`parentId`:

* `message`: `message.role` user, assistant or toolResult. Content is a string or blocks:
  `text`, `toolCall` (`id`, `name`, `arguments`), `image`; `thinking` is left out. A
  toolResult (`toolCallId`, `isError`) answers its call. The assistant's `model` and
  `usage` (`input`, `output`) give the model and tokens.
* `compaction` and `branch_summary`: a summary of what came before, a system item.
* `model_change`, `thinking_level_change` and other entries are bookkeeping.

pi keeps a session as a tree (the user can go back and branch): the conversation is the
chain of `parentId` links ending at the last entry; entries off it are left out.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    first_json_line,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    args_summary,
    count,
    file_session_id,
    json_lines,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
    string,
)
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf

SUMMARY_TYPES = ("compaction", "branch_summary")


class PiImporter:
    name = "pi"
    description = "pi coding agent sessions (~/.pi/agent/sessions/*/*.jsonl)"

    def detect(self, path: Path, text: str) -> float:
        if not looks_like_jsonl(path, text):
            return 0.0
        first = first_json_line(text)
        return (
            0.95
            if isinstance(first, dict)
            and first.get("type") == "session"
            and isinstance(first.get("id"), str)
            and ("cwd" in first or "version" in first)
            else 0.0
        )

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        draft = SessionDraft(session_id="", channel="pi", source=f"pi:{path.name}")
        entries: list[tuple[int, dict[str, Any], datetime]] = []
        clock: datetime | None = None  # the time of the last entry dated
        for n, obj in json_lines(text, str(path), report):
            if obj.get("type") == "session":
                draft.session_id = draft.session_id or (safe_session_id(obj.get("id")) or "")
                draft.cwd = draft.cwd or nonempty_str(obj.get("cwd"))
                draft.model = draft.model or nonempty_str(obj.get("modelId"))
                continue
            when = clock = report.line_time(str(path), n, obj.get("timestamp"), before=clock)
            if when is None:
                continue
            entries.append((n, obj, when))
        if not draft.session_id:
            stem = path.stem.rsplit("_", 1)[-1]
            draft.session_id = file_session_id("pi", stem)
        calls = ToolCalls()
        for _, obj, when in _active(entries):
            _entry(draft, obj, when, calls)
        if not draft.turns:
            raise ImportFormatError(
                f"{path}: this pi session holds no user or assistant message; nothing to import."
            )
        return [draft]


def _active(
    entries: list[tuple[int, dict[str, Any], datetime]],
) -> list[tuple[int, dict[str, Any], datetime]]:
    """The entries on the chain of parentId links that ends at the last one (all of them
    in a log without ids, or when the chain breaks off)."""
    by_id = {e[1]["id"]: e for e in entries if isinstance(e[1].get("id"), str)}
    if not entries or len(by_id) < len(entries):
        return entries
    chain: set[str] = set()
    key: Any = entries[-1][1]["id"]
    while isinstance(key, str) and key not in chain:
        if key not in by_id:
            return entries
        chain.add(key)
        key = by_id[key][1].get("parentId")
    return [e for e in entries if e[1]["id"] in chain]


def _entry(draft: SessionDraft, obj: dict[str, Any], when: datetime, calls: ToolCalls) -> None:
    kind = string(obj.get("type"))
    if kind in SUMMARY_TYPES and nonempty_str(obj.get("summary")):
        draft.add_turn(when, "system", [tf.Text(obj["summary"])])
        return
    if kind != "message":
        return
    message = mapping(obj.get("message"))
    role = message.get("role")
    if role == "toolResult":
        text = output_text(message.get("content"))
        if message.get("isError") and not text.startswith("error"):
            text = f"error: {text}" if text else "error"
        if not calls.resolve(message.get("toolCallId"), text or None):
            tool = str(message.get("toolName") or "result")
            _agent(draft, when).append(tf.ToolCall(tool, "", text or None))
        return
    if role == "assistant":
        draft.model = draft.model or nonempty_str(message.get("model"))
        usage = mapping(message.get("usage"))
        draft.tokens_in += count(usage.get("input")) + count(usage.get("cacheRead"))
        draft.tokens_out += count(usage.get("output"))
    content = message.get("content")
    items: list[tf.Item] = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str) and block.strip():
            items.append(tf.Text(block))
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "text" and nonempty_str(block.get("text")):
            items.append(tf.Text(block["text"]))
        elif block.get("type") == "toolCall":
            call = tf.ToolCall(
                str(block.get("name") or "tool"), args_summary(block.get("arguments"))
            )
            calls.add(block.get("id"), items, call)
        elif block.get("type") == "image":
            items.append(tf.Attachment(f"{block.get('mimeType') or 'image'} (not stored)"))
    if items:
        draft.add_turn(when, "user" if role == "user" else "agent", items)


def _agent(draft: SessionDraft, when: datetime) -> list[tf.Item]:
    if draft.turns and draft.turns[-1].role == "agent":
        return draft.turns[-1].items
    return draft.add_turn(when, "agent", []).items
