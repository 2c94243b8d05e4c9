"""Goose sessions: the SQLite database of Goose 1.20 and later
(`~/.local/share/goose/sessions/sessions.db`: `sessions` with `id`, `name` or
`description`, `working_dir`, `created_at`, `parent_session_id`; `messages` with
`session_id`, `role`, `content_json`, `created_timestamp` in seconds) and the JSONL files
before it (a first line of metadata, `working_dir` and `description`, then one
`{"role", "created", "content"}` message a line).

A message's content is a list of blocks: `text`; `toolRequest` (`id`, `toolCall.value`
with `name` and `arguments`), answered by a later `toolResponse` of the same `id`
(`toolResult.value`: a content list, or `{content, isError}`; `status: error`);
`image`; `thinking` and `redactedThinking` are left out. The model comes from a
message's `metadata_json` or the session's `model_config_json` where they say.
"""

from __future__ import annotations

import json
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
    first_time,
    json_lines,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
)
from autopoiesis.core.sqlite import open_readonly
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf


def _is_metadata(first: Any) -> bool:
    return isinstance(first, dict) and "working_dir" in first and "role" not in first


class GooseImporter:
    name = "goose"
    description = "Goose sessions (~/.local/share/goose/sessions: sessions.db, or *.jsonl)"

    def detect(self, path: Path, text: str) -> float:
        if not looks_like_jsonl(path, text):
            return 0.0
        first = first_json_line(text)
        if _is_metadata(first):
            return 0.95
        content = first.get("content") if isinstance(first, dict) else None
        if not isinstance(content, list) or "created" not in first:
            return 0.0
        return 0.6 if any(isinstance(b, dict) and "toolCall" in b for b in content) else 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        draft = SessionDraft(
            session_id=file_session_id("goose", path.stem),
            channel="goose",
            source=f"goose:{path.name}",
        )
        calls = ToolCalls()
        for n, obj in json_lines(text, str(path), report):
            if _is_metadata(obj):
                draft.cwd = nonempty_str(obj.get("working_dir"))
                draft.topic = nonempty_str(obj.get("description"))
                continue
            when = first_time(obj.get("created"), field="created")
            if when is None or obj.get("role") not in ("user", "assistant"):
                report.skip_line(str(path), n, "not a Goose message (role, created, content)")
                continue
            _message(draft, obj.get("role"), obj.get("content"), when, calls)
        return [_finished(draft, str(path))]

    def detect_database(self, path: Path) -> float:
        try:
            conn = open_readonly(path)
            cols = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
            conn.close()
        except Exception:
            return 0.0
        return 1.0 if {"session_id", "role", "content_json", "created_timestamp"} <= cols else 0.0

    def read_database(self, path: Path, report: ImportReport) -> list[SessionDraft]:
        conn = open_readonly(path)
        try:
            sessions = conn.execute("SELECT * FROM sessions ORDER BY created_at, id").fetchall()
            names = [d[0] for d in conn.execute("SELECT * FROM sessions LIMIT 0").description]
            drafts = []
            for row in sessions:
                info = dict(zip(names, row, strict=True))
                draft = _db_session(conn, info, path, report)
                if draft.turns:
                    drafts.append(draft)
        finally:
            conn.close()
        if not drafts:
            raise ImportFormatError(f"{path}: Goose's database holds no session with a message.")
        return drafts


def _db_session(conn: Any, info: dict[str, Any], path: Path, report: ImportReport) -> SessionDraft:
    sid = str(info.get("id"))
    model = mapping(_json(info.get("model_config_json"))).get("model_name")
    draft = SessionDraft(
        session_id=safe_session_id(f"goose-{sid}") or file_session_id("goose", sid),
        channel="goose",
        source=f"goose:{path.name}",
        topic=nonempty_str(info.get("name")) or nonempty_str(info.get("description")),
        cwd=nonempty_str(info.get("working_dir")),
        model=nonempty_str(model),
        parent_session=safe_session_id(f"goose-{info['parent_session_id']}")
        if nonempty_str(info.get("parent_session_id"))
        else None,
    )
    draft.tokens_in = count(info.get("accumulated_input_tokens") or info.get("input_tokens"))
    draft.tokens_out = count(info.get("accumulated_output_tokens") or info.get("output_tokens"))
    calls = ToolCalls()
    for role, raw, created, meta in conn.execute(
        "SELECT role, content_json, created_timestamp, metadata_json FROM messages "
        "WHERE session_id = ? ORDER BY created_timestamp, id",
        (sid,),
    ):
        when = first_time(created, field="created_timestamp")
        content = _json(raw)
        if when is None or not isinstance(content, list):
            report.skip_line(f"{path}#session/{sid}", 1, "a message without time or content")
            continue
        inference = mapping(mapping(_json(meta)).get("inference"))
        draft.model = draft.model or nonempty_str(inference.get("requestedModel"))
        _message(draft, role, content, when, calls)
    return draft


def _json(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        return None


def _message(
    draft: SessionDraft, role: Any, content: Any, when: datetime, calls: ToolCalls
) -> None:
    items: list[tf.Item] = []
    for block in content if isinstance(content, list) else []:
        part = mapping(block)
        kind = part.get("type")
        if kind == "text" and nonempty_str(part.get("text")):
            items.append(tf.Text(part["text"]))
        elif kind == "toolRequest":
            call = mapping(part.get("toolCall"))
            request = mapping(call.get("value")) or call
            line = tf.ToolCall(
                str(request.get("name") or "tool"), args_summary(request.get("arguments"))
            )
            calls.add(part.get("id"), items, line)
        elif kind == "toolResponse":
            result = mapping(part.get("toolResult"))
            value: Any = result.get("value")
            text = output_text(
                mapping(value).get("content", value) if isinstance(value, dict) else value
            )
            if result.get("status") == "error" or mapping(value).get("isError") is True:
                text = f"error: {text or output_text(result.get('error'))}"
            if not calls.resolve(part.get("id"), text or None):
                items.append(tf.ToolCall("result", str(part.get("id") or ""), text or None))
        elif kind == "image":
            items.append(tf.Attachment(f"{part.get('mimeType') or 'image'} (not stored)"))
    if not items:
        return
    agent = role != "user" or all(isinstance(i, tf.ToolCall) for i in items)
    draft.add_turn(when, "agent" if agent else "user", items)


def _finished(draft: SessionDraft, source: str) -> SessionDraft:
    if not draft.turns:
        raise ImportFormatError(
            f"{source}: this Goose session holds no message; nothing to import."
        )
    return draft
