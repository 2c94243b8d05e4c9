"""Qwen Code chat recordings (`~/.qwen/projects/<project>/chats/<sessionId>.jsonl`).

One record a line, shaped like Claude Code's (`uuid`, `parentUuid`, `sessionId`,
`timestamp`, `type`, `cwd`, `version`) but carrying a Gemini API `message` (`role` user or
model, `parts`):

* `user` records are the user's prompt: `systemPayload.displayText`, what the user typed,
  else the text parts without the `<qwen:...>` context a hook added; a `notification`
  subtype (a background task's notice) is a system item.
* `assistant` records: text parts (thought parts left out), `functionCall` parts as tool
  calls; records repeating a `uuid` are one message written in pieces. `model` and
  `usageMetadata` give the model and the tokens.
* `tool_result` records answer a call by its `functionResponse` id.
* `system` records are bookkeeping (telemetry, slash commands, snapshots) except
  `custom_title`, the topic.

A rewind starts a new branch from an earlier record: the conversation is the chain of
`parentUuid` links that ends at the last message, and records off it (the abandoned
branch, its title) are left out. A line holding two records written back to back is
read as both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    first_json_line,
    head_lines,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    content_parts,
    count,
    function_part,
    json_lines,
    mapping,
    nonempty_str,
    safe_session_id,
    sequence,
    string,
)
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf

MESSAGE_TYPES = ("user", "assistant", "tool_result")
RECORD_TYPES = (*MESSAGE_TYPES, "system")
_HOOK_CONTEXT_RE = re.compile(r"<(qwen:[a-z-]+)>.*?</\1>", re.S)


def _is_record(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("sessionId"), str)
        and string(obj.get("type")) in RECORD_TYPES
        and (
            isinstance(mapping(obj.get("message")).get("parts"), list)
            or isinstance(obj.get("systemPayload"), dict)
        )
    )


@dataclass
class _Record:
    n: int
    obj: dict[str, Any]
    when: datetime
    parts: list[Any] = field(default_factory=list)


class QwenCodeImporter:
    name = "qwen-code"
    description = "Qwen Code chats (~/.qwen/projects/*/chats/*.jsonl)"

    def detect(self, path: Path, text: str) -> float:
        if not looks_like_jsonl(path, text):
            return 0.0
        first = first_json_line(text)
        if isinstance(first, dict):  # (the common case, parsed once for every detector)
            return 0.95 if _is_record(first) else 0.0
        for line in head_lines(text, 5):  # records written back to back on a line
            first = next(json_lines([line], "", ImportReport()), (0, None))[1]
            if first is not None:
                return 0.95 if _is_record(first) else 0.0
        return 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        sessions: dict[str, dict[str, _Record]] = {}
        clock: datetime | None = None  # the time of the last record dated
        for n, obj in json_lines(text, str(path), report):
            if not _is_record(obj):
                report.skip_line(str(path), n, "not a Qwen Code record (sessionId, type, message)")
                continue
            sid = safe_session_id(obj["sessionId"])
            when = clock = report.line_time(str(path), n, obj.get("timestamp"), before=clock)
            if when is None:
                continue
            if sid is None:
                report.skip_line(str(path), n, f"session id {obj['sessionId']!r} is not one")
                continue
            records = sessions.setdefault(sid, {})
            key = str(obj.get("uuid") or f"line-{n}")
            parts = sequence(mapping(obj.get("message")).get("parts"))
            if key in records:  # one message written in pieces: the later fields win
                records[key].parts.extend(parts)
                records[key].obj = {**records[key].obj, **obj}
            else:
                records[key] = _Record(n, obj, when, list(parts))
        drafts = [_session(sid, records, path) for sid, records in sessions.items()]
        drafts = [d for d in drafts if d.turns]
        if not drafts:
            raise ImportFormatError(
                f"{path}: this Qwen Code chat holds no user or model message; nothing to import."
            )
        return drafts


def _active(records: dict[str, _Record]) -> set[str]:
    """The keys of the records on the chain that ends at the last message (every key when
    the chain breaks off at a record the file does not hold)."""
    leaf = next((k for k in reversed(records) if records[k].obj.get("type") in MESSAGE_TYPES), None)
    chain: set[str] = set()
    key = leaf
    while key is not None and key not in chain:
        if key not in records:
            return set(records)
        chain.add(key)
        parent = records[key].obj.get("parentUuid")
        key = parent if isinstance(parent, str) else None
    return chain


def _session(sid: str, records: dict[str, _Record], path: Path) -> SessionDraft:
    draft = SessionDraft(session_id=sid, channel="qwen-code", source=f"qwen-code:{path.name}")
    active = _active(records)
    calls = ToolCalls()
    for key, rec in records.items():
        parent = rec.obj.get("parentUuid")
        kind = rec.obj["type"]
        if kind == "system":
            payload = mapping(rec.obj.get("systemPayload"))
            if rec.obj.get("subtype") == "custom_title" and (key in active or parent in active):
                draft.topic = nonempty_str(payload.get("customTitle")) or draft.topic
            continue
        if key not in active:
            continue  # a branch a rewind abandoned
        draft.cwd = nonempty_str(rec.obj.get("cwd")) or draft.cwd
        if kind == "user":
            _user(draft, rec)
        elif kind == "assistant":
            _assistant(draft, rec, calls)
        else:
            items: list[tf.Item] = []
            for part in rec.parts:
                if isinstance(part, dict):
                    function_part(part, items, calls)
            if items:
                draft.add_turn(rec.when, "agent", items)
    return draft


def _user(draft: SessionDraft, rec: _Record) -> None:
    shown = nonempty_str(mapping(rec.obj.get("systemPayload")).get("displayText"))
    texts, items = content_parts(rec.parts)
    text = shown or _HOOK_CONTEXT_RE.sub("", "\n\n".join(texts)).strip()
    turn: list[tf.Item] = ([tf.Text(text)] if text else []) + items
    if not turn:
        return
    role = "system" if rec.obj.get("subtype") == "notification" else "user"
    draft.add_turn(rec.when, role, turn)


def _assistant(draft: SessionDraft, rec: _Record, calls: ToolCalls) -> None:
    if draft.model is None and nonempty_str(rec.obj.get("model")):
        draft.model = rec.obj["model"]
    usage = mapping(rec.obj.get("usageMetadata"))
    draft.tokens_in += count(usage.get("promptTokenCount"))
    draft.tokens_out += count(usage.get("candidatesTokenCount"))
    turn: list[tf.Item] = []
    for part in rec.parts:  # in order: a call, then what the model says after it
        if isinstance(part, dict) and ("functionCall" in part or "functionResponse" in part):
            function_part(part, turn, calls)
            continue
        texts, items = content_parts([part])
        turn += [tf.Text(t) for t in texts if t.strip()] + items
    if turn:
        draft.add_turn(rec.when, "agent", turn)
