"""Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/session-*.json` and, since
0.40, `session-*.jsonl`).

The JSON file is one ConversationRecord: `sessionId`, `projectHash`, `startTime`,
`lastUpdated`, optional `summary`, and `messages`. The JSONL file is written the way
the CLI's chatRecordingService replays it: a first metadata line, then message records
(a record whose `id` was seen before replaces it), `{"$set": {...}}` metadata updates
(a `$set` of `messages` starts over from that list) and `{"$rewindTo": id}`, which drops
that message and everything after it (the user rewound the chat; the dropped branch
stays out of the transcript).

Message `type` `user` and `gemini` are the conversation; `info`, `warning` and `error`
are the CLI's notices and are skipped. A gemini message's `toolCalls` become tool-call
lines with their results; `thoughts` are left out on purpose (docs/design.md#transcript-format).
Tokens are
the sum of the messages' `tokens.input` / `tokens.output`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    first_json_line,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    args_summary,
    content_parts,
    count,
    first_time,
    function_part,
    json_lines,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
    sequence,
    stable_id,
    string,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf

NOTICE_TYPES = frozenset({"info", "warning", "error"})


def _is_metadata(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("sessionId"), str)
        and isinstance(obj.get("projectHash"), str)
    )


def _tool_result(call: dict[str, Any]) -> str | None:
    texts = []
    result = call.get("result")
    for part in result if isinstance(result, list) else [result]:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(response, dict) and isinstance(response.get("response"), dict):
            body = response["response"]
            texts.append(
                f"error: {output_text(body['error'])}" if body.get("error") else output_text(body)
            )
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    text = "\n".join(t for t in texts if t)
    if not text:
        display = call.get("resultDisplay")
        text = (
            display
            if isinstance(display, str)
            else (json.dumps(display, ensure_ascii=False) if display else "")
        )
    status = call.get("status")
    if status in ("error", "cancelled") and not text.startswith("error"):
        text = f"{status}: {text}" if text else str(status)
    return text or None


class GeminiImporter:
    name = "gemini"
    description = "Gemini CLI chats (~/.gemini/tmp/*/chats/session-*.json and .jsonl)"

    def detect(self, path: Path, text: str) -> float:
        if _as_lines(path, text):
            return 0.95 if _is_metadata(first_json_line(text)) else 0.0
        try:
            data = load_json(text)
        except (ValueError, RecursionError):
            return 0.0
        if (
            isinstance(data, dict)
            and isinstance(data.get("sessionId"), str)
            and isinstance(data.get("messages"), list)
            and ("projectHash" in data or "startTime" in data)
        ):
            return 0.95
        history = data.get("history") if isinstance(data, dict) else data
        return 0.85 if isinstance(history, list) and history and _is_content(history[0]) else 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        if _as_lines(path, text):
            recording = _Recording()
            for n, obj in json_lines(text, str(path), report):
                apply = recording.handler(obj)
                if apply is None:
                    report.skip_line(
                        str(path),
                        n,
                        "not a Gemini CLI record (metadata, message, $set or $rewindTo)",
                    )
                else:
                    apply(obj)
            draft = _draft(path, recording.meta, list(recording.messages.values()), report)
        else:
            draft = _read_json(path, text, report)
        draft.cwd = project_root(path)
        return [draft]


def _as_lines(path: Path, text: str) -> bool:
    """Whether TEXT is read as a JSONL recording: it looks like JSON lines and is not one
    JSON document holding messages (a chat saved under a `.jsonl` name)."""
    if not looks_like_jsonl(path, text):
        return False
    try:
        data = load_json(text)
    except (ValueError, RecursionError):
        return True
    return not (isinstance(data, dict) and ("messages" in data or "history" in data))


def project_root(path: Path) -> str | None:
    """The folder the CLI ran in: `~/.gemini/tmp/<project>/.project_root`, next to the
    chats/ folder, holds it (the CLI writes it since it names project folders by name
    rather than by hash; a recording copied elsewhere, or an older one, has none)."""
    if path.parent.name != "chats":
        return None
    try:
        root = (path.parent.parent / ".project_root").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return root or None


def _read_json(path: Path, text: str, report: ImportReport) -> SessionDraft:
    """A JSON file: a ConversationRecord, or a saved chat's history of API Contents."""
    try:
        data = load_json(text)
    except ValueError as exc:
        raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
    history = data.get("history") if isinstance(data, dict) else data
    if isinstance(history, list) and history and _is_content(history[0]):
        return _history(path, data if isinstance(data, dict) else {}, history, report)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ImportFormatError(
            f"{path}: a Gemini CLI chat is an object with sessionId and messages."
        )
    messages: dict[str, dict[str, Any]] = {}
    for i, m in enumerate(data["messages"]):
        if isinstance(m, dict):
            messages[str(m.get("id") or f"#{i}")] = m
    return _draft(path, data, list(messages.values()), report)


class _Recording:
    """A JSONL recording replayed record by record the way the CLI replays it: the
    metadata, and the messages by id in first-seen order (as the CLI keeps them)."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.messages: dict[str, dict[str, Any]] = {}

    def handler(self, obj: dict[str, Any]) -> Callable[[dict[str, Any]], None] | None:
        """What replays OBJ, by the kind of record it is; None for no record of a recording."""
        if isinstance(obj.get("$rewindTo"), str):
            return self.rewind
        if isinstance(obj.get("id"), str):
            return self.message
        if isinstance(obj.get("$set"), dict):
            return self.update
        if _is_metadata(obj):
            return self.metadata
        return None

    def rewind(self, obj: dict[str, Any]) -> None:
        """Drop the message `$rewindTo` names and every one after it (all, when it is unknown)."""
        ids = list(self.messages)
        keep = ids[: ids.index(obj["$rewindTo"])] if obj["$rewindTo"] in self.messages else []
        self.messages = {k: self.messages[k] for k in keep}

    def message(self, obj: dict[str, Any]) -> None:
        self.messages[obj["id"]] = obj  # a message seen before is replaced where it stood

    def update(self, obj: dict[str, Any]) -> None:
        """A `$set`: metadata updates; a list of `messages` starts over from that list."""
        changes = obj["$set"]
        if isinstance(changes.get("messages"), list):
            self.messages = {
                m["id"]: m
                for m in changes["messages"]
                if isinstance(m, dict) and isinstance(m.get("id"), str)
            }
        self.meta.update({k: v for k, v in changes.items() if k != "messages"})

    def metadata(self, obj: dict[str, Any]) -> None:
        self.meta.update({k: v for k, v in obj.items() if k != "messages"})
        for m in sequence(obj.get("messages")):
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                self.messages[m["id"]] = m


def _is_content(obj: Any) -> bool:
    """A Gemini API Content (`{"role": "user"|"model", "parts": [...]}`), as checkpoints hold
    them."""
    return (
        isinstance(obj, dict)
        and string(obj.get("role")) in ("user", "model", "gemini")
        and isinstance(obj.get("parts"), list)
    )


def _history(
    path: Path, info: dict[str, Any], history: list[Any], report: ImportReport
) -> SessionDraft:
    """A saved chat (`/chat save` checkpoints, older recordings): a list of API Contents,
    where a model's functionCall part is answered by a functionResponse part after it."""
    meta = mapping(info.get("meta"))
    sid = safe_session_id(info.get("sessionId")) or stable_id("gemini", path.name, history[:2])
    draft = SessionDraft(
        session_id=sid,
        channel="gemini",
        topic=nonempty_str(info.get("summary")),
        model=nonempty_str(meta.get("model")),
        source=f"gemini:{path.name}",
    )
    clock = first_time(info.get("startTime", info.get("start_time")), field="startTime")
    if clock is None:
        clock = parse_ts(path.stat().st_mtime, f"{path}: modification time").replace(
            second=0, microsecond=0
        )
    draft.started = clock
    calls = ToolCalls()
    for i, content in enumerate(history):
        if not _is_content(content):
            report.skip_line(f"{path}#history", i + 1, "not a Content with role and parts")
            continue
        stamp = content.get("ts", content.get("timestamp"))
        if stamp is not None:
            when = report.line_time(f"{path}#history", i + 1, stamp, "ts", before=clock)
            if when is None:
                continue
            clock = when
        texts, items = content_parts(content["parts"])
        turn_items: list[tf.Item] = [tf.Text(t) for t in texts if t.strip()] + items
        for part in content["parts"]:
            if isinstance(part, dict):
                function_part(part, turn_items, calls)
        if not turn_items:
            continue
        role = (
            "user"
            if content["role"] == "user" and not all(isinstance(i, tf.ToolCall) for i in turn_items)
            else "agent"
        )
        draft.add_turn(clock, role, turn_items)
    if not draft.turns:
        raise ImportFormatError(
            f"{path}: this Gemini chat history holds no message; nothing to import."
        )
    return draft


def _gemini_calls(draft: SessionDraft, m: dict[str, Any]) -> list[tf.Item]:
    """The tool calls of gemini message M; its model and tokens go to DRAFT."""
    if draft.model is None and nonempty_str(m.get("model")):
        draft.model = m["model"]
    tokens = mapping(m.get("tokens"))
    draft.tokens_in += count(tokens.get("input"))
    draft.tokens_out += count(tokens.get("output"))
    out: list[tf.Item] = []
    for call in sequence(m.get("toolCalls")):
        if isinstance(call, dict):
            tool = str(call.get("name") or call.get("displayName") or "tool")
            out.append(tf.ToolCall(tool, args_summary(call.get("args")), _tool_result(call)))
    return out


def _draft(
    path: Path, meta: dict[str, Any], messages: list[dict[str, Any]], report: ImportReport
) -> SessionDraft:
    sid = safe_session_id(meta.get("sessionId")) or stable_id("gemini", path.name)
    draft = SessionDraft(
        session_id=sid,
        channel="gemini",
        topic=nonempty_str(meta.get("summary")),
        source=f"gemini:{path.name}",
    )
    draft.started = clock = first_time(meta.get("startTime") or None, field="startTime")
    for i, m in enumerate(messages):
        kind = string(m.get("type"))
        if kind in NOTICE_TYPES:
            continue
        where = f"{path}: message {m.get('id', i)!r}"
        if kind == "model":
            kind = "gemini"  # what some recordings call the model's messages
        if kind not in ("user", "gemini"):
            report.skip_line(
                f"{path}#messages", i + 1, f"message {m.get('id', i)!r} has unknown type {kind!r}"
            )
            continue
        if m.get("timestamp") is not None:
            when = report.line_time(
                f"{path}#messages", i + 1, m["timestamp"], f"{where} timestamp", before=clock
            )
            if when is None:
                continue
            clock = when
        if clock is None:
            report.skip_line(
                f"{path}#messages",
                i + 1,
                f"message {m.get('id', i)!r} has no timestamp and the chat no startTime",
            )
            continue
        shown = (
            m.get("displayContent")
            if kind == "user" and m.get("displayContent")
            else m.get("content")
        )
        texts, attachments = content_parts(shown)
        items: list[tf.Item] = [tf.Text(t) for t in texts if t.strip()] + attachments
        if kind == "gemini":
            items += _gemini_calls(draft, m)
        if items:
            draft.add_turn(clock, "user" if kind == "user" else "agent", items)
    if not draft.turns:
        raise ImportFormatError(
            f"{path}: Gemini chat {sid} holds no user or gemini message; nothing to import."
        )
    return draft
