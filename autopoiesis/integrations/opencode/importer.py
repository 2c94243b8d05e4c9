"""OpenCode sessions: in SQLite since 1.2 (`~/.local/share/opencode/opencode.db`, read by
`database`, row by row as the files below), and before that as a folder of JSON files
(`~/.local/share/opencode/storage/`)::

    session/<projectID>/<sessionID>.json   id, title, directory, parentID, time.created
    message/<sessionID>/<messageID>.json   id, role, time.created, modelID, tokens, error
    part/<messageID>/<partID>.json         type: text, reasoning, tool, file, subtask, ...

Older versions keep `session/info/<id>.json`, `session/message/<sid>/<mid>.json` and
`session/part/<sid>/<mid>/<pid>.json`, or every part in `part/<partID>.json` with its
`messageID`; the oldest messages hold their `parts` themselves. All of these are read.

`autopoiesis import` takes the storage folder (every session in it), a session file or a
message file (that whole session, found through the storage around the file). Text parts
are the turns (a user's `synthetic` text, which OpenCode adds itself, is left out, and so
is `reasoning`); a tool part is a `> [tool:NAME] args → output` line; a file part an
attachment line; step, snapshot, patch and compaction parts are bookkeeping. A message
that ended in an error gets a system line saying so. A session's `parentID` (a subagent
session) is its `parent_session`.
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
    json_probe,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import args_summary, content_text, nonempty_str
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import ImportFormatError, TranscriptFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.integrations.opencode.database import is_opencode_db, read_database

SKIPPED_PARTS = frozenset(
    {"reasoning", "step-start", "step-finish", "snapshot", "patch", "compaction", "retry", "agent"}
)


def _kind(data: Any) -> str | None:
    """session | message | part, for one OpenCode storage file's JSON."""
    if not isinstance(data, dict):
        return None
    if "role" in data and ("sessionID" in data or "metadata" in data) and "id" in data:
        return "message"
    if "type" in data and ("messageID" in data or "callID" in data) and "id" in data:
        return "part"
    if (
        "id" in data
        and isinstance(data.get("time"), dict)
        and ("projectID" in data or "directory" in data)
    ):
        return "session"
    return None


def _read_json(path: Path, report: ImportReport) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError, RecursionError) as exc:
        report.skip_line(str(path), 1, f"not readable JSON ({type(exc).__name__})")
        return None


class OpenCodeImporter:
    name = "opencode"
    description = (
        "OpenCode's opencode.db, or its older storage folder (~/.local/share/opencode/storage), "
        "a session or a message file"
    )

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text):
            return 0.0
        kind = _kind(json_probe(text) if text.lstrip().startswith("{") else None)
        return {"session": 0.9, "message": 0.9, "part": 0.7}.get(kind or "", 0.0)

    def detect_folder(self, path: Path) -> float:
        return 1.0 if _storage_root(path, up=False) is not None else 0.0

    def detect_database(self, path: Path) -> float:
        return 1.0 if is_opencode_db(path) else 0.0

    def read_database(self, path: Path, report: ImportReport) -> list[SessionDraft]:
        drafts = read_database(path, report, _session)
        if not drafts and not report.refused:
            raise ImportFormatError(f"{path}: OpenCode's database holds no session with a message.")
        return drafts

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        kind = _kind(data)
        if kind is None:
            raise ImportFormatError(f"{path}: not an OpenCode session, message or part file.")
        sid = (
            data.get("id")
            if kind == "session"
            else data.get("sessionID") or (data.get("metadata") or {}).get("sessionID")
        )
        if not isinstance(sid, str) or not sid:
            raise ImportFormatError(
                f"{path}: this OpenCode {kind} file does not name its session (sessionID)."
            )
        root = _storage_root(path, up=True)
        store = _Storage(root, report) if root is not None else None
        info = data if kind == "session" else store.session_info(sid) if store else None
        if store is None:
            messages = [data] if kind == "message" else []
            draft = _session(sid, info, messages, lambda _m: [], str(path))
        else:
            draft = _session(sid, info, store.messages(sid), store.parts, str(path))
        if not draft.turns:
            where = (
                f"under {root}"
                if root is not None
                else f"around {path} (no message/ and part/ folders found)"
            )
            raise ImportFormatError(
                f"{path}: OpenCode session {sid} has no message with text or tool parts {where}. "
                "Import the storage folder (~/.local/share/opencode/storage) or copy the session "
                "with its message/ and part/ folders."
            )
        return [draft]

    def read_folder(self, path: Path, report: ImportReport) -> list[SessionDraft]:
        root = _storage_root(path, up=False)
        if root is None:
            raise ImportFormatError(
                f"{path}: not an OpenCode storage folder (no message/ folder in it)."
            )
        store = _Storage(root, report)
        drafts = []
        for sid in store.session_ids():
            draft = _session(
                sid, store.session_info(sid), store.messages(sid), store.parts, str(root)
            )
            if draft.turns:
                drafts.append(draft)
        return drafts


def _storage_root(path: Path, *, up: bool) -> Path | None:
    """The storage folder PATH is (or, with UP, is inside of): the one holding message/
    (or the old session/message/)."""
    candidates = [path, path / "storage"] if not up else [path.parent, *list(path.parents)[1:5]]
    for folder in candidates:
        if (folder / "message").is_dir() or (folder / "session" / "message").is_dir():
            return folder
    return None


class _Storage:
    def __init__(self, root: Path, report: ImportReport):
        self.root = root
        self.report = report
        self._flat_parts: dict[str, list[Path]] | None = None

    def _message_dirs(self, sid: str) -> list[Path]:
        return [
            d
            for d in (self.root / "message" / sid, self.root / "session" / "message" / sid)
            if d.is_dir()
        ]

    def session_ids(self) -> list[str]:
        ids: set[str] = set()
        for base in (self.root / "message", self.root / "session" / "message"):
            if base.is_dir():
                ids.update(d.name for d in base.iterdir() if d.is_dir())
        return sorted(ids)

    def session_info(self, sid: str) -> dict[str, Any] | None:
        base = self.root / "session"
        if not base.is_dir():
            return None
        for candidate in sorted(base.glob(f"*/*{sid}.json")):
            data = _read_json(candidate, self.report)
            if isinstance(data, dict) and data.get("id") == sid:
                return data
        return None

    def messages(self, sid: str) -> list[dict[str, Any]]:
        out = []
        for folder in self._message_dirs(sid):
            for f in sorted(folder.glob("*.json")):
                data = _read_json(f, self.report)
                if _kind(data) == "message":
                    out.append(data)
        return out

    def parts(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        mid, sid = str(message.get("id")), str(message.get("sessionID"))
        files: list[Path] = []
        for folder in (self.root / "part" / mid, self.root / "session" / "part" / sid / mid):
            if folder.is_dir():
                files.extend(sorted(folder.glob("*.json")))
        files.extend(self._flat().get(mid, []))
        out = []
        for f in files:
            data = _read_json(f, self.report)
            if isinstance(data, dict) and "type" in data:
                out.append(data)
        return out

    def _flat(self) -> dict[str, list[Path]]:
        """Old storage: every part in part/<partID>.json, naming its message."""
        if self._flat_parts is None:
            self._flat_parts = {}
            base = self.root / "part"
            if base.is_dir():
                for f in sorted(base.glob("*.json")):
                    data = _read_json(f, self.report)
                    if isinstance(data, dict) and isinstance(data.get("messageID"), str):
                        self._flat_parts.setdefault(data["messageID"], []).append(f)
        return self._flat_parts


def _when(value: Any, fallback: datetime | None) -> datetime | None:
    try:
        return parse_ts(value, "time.created") if value is not None else fallback
    except TranscriptFormatError:
        return fallback


def _created(obj: dict[str, Any]) -> Any:
    for holder in (
        obj.get("time"),
        (obj.get("metadata") or {}).get("time") if isinstance(obj.get("metadata"), dict) else None,
    ):
        if isinstance(holder, dict) and holder.get("created") is not None:
            return holder["created"]
    return None


def _session(
    sid: str,
    info: dict[str, Any] | None,
    messages: list[dict[str, Any]],
    parts_of: Any,
    source: str,
) -> SessionDraft:
    tf.validate_session_id(sid)
    info = info or {}
    parent = (
        info.get("parentID")
        if isinstance(info.get("parentID"), str) and tf.SESSION_ID_RE.match(info["parentID"])
        else None
    )
    started = _when(_created(info), None)
    draft = SessionDraft(
        session_id=sid,
        channel="opencode",
        source=f"opencode:{sid}",
        parent_session=parent,
        topic=info.get("title") if isinstance(info.get("title"), str) else None,
        started=started,
        cwd=nonempty_str(info.get("directory")),  # the folder OpenCode ran in
    )
    messages = sorted(messages, key=lambda m: (str(_created(m) or ""), str(m.get("id"))))
    clock = started
    for msg in messages:
        when = _when(_created(msg), clock)
        if when is None:
            raise ImportFormatError(
                f"{source}: OpenCode message {msg.get('id')} has no time.created."
            )
        clock = when
        parts = list(msg["parts"]) if isinstance(msg.get("parts"), list) else []
        parts += parts_of(msg)
        role = "agent" if msg.get("role") == "assistant" else "user"
        if role == "agent":
            _assistant_meta(draft, msg)
        items = _items(parts, role)
        if items:
            summary = msg.get("summary") is True  # a compaction summary OpenCode wrote itself
            draft.add_turn(when, "system" if summary else role, items)
        error = msg.get("error")
        if isinstance(error, dict):
            data = as_dict(error.get("data"))
            text = data.get("message") if isinstance(data.get("message"), str) else ""
            draft.add_turn(
                when, "system", [tf.Text(f"{error.get('name') or 'error'}: {text}".strip(": "))]
            )
    return draft


def _assistant_meta(draft: SessionDraft, msg: dict[str, Any]) -> None:
    model = msg.get("modelID")
    if not isinstance(model, str) and isinstance(msg.get("model"), dict):
        model = msg["model"].get("modelID")
    if not draft.model and isinstance(model, str):
        draft.model = model
    tokens = as_dict(msg.get("tokens"))
    for key, attr in (("input", "tokens_in"), ("output", "tokens_out")):
        value = tokens.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            setattr(draft, attr, getattr(draft, attr) + int(value))


def _items(parts: list[dict[str, Any]], role: str) -> list[tf.Item]:
    items: list[tf.Item] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            if part.get("ignored") or (part.get("synthetic") and role == "user"):
                continue
            if isinstance(part.get("text"), str) and part["text"].strip():
                items.append(tf.Text(part["text"]))
        elif kind == "tool" or kind == "tool-invocation":
            items.append(_tool(part))
        elif kind == "file":
            name = part.get("filename") or part.get("url") or "file"
            items.append(
                tf.Attachment(
                    str(name)
                    if not str(name).startswith("data:")
                    else f"{part.get('mime') or 'file'} (not stored)"
                )
            )
        elif kind == "subtask":
            items.append(
                tf.ToolCall("task", str(part.get("description") or part.get("prompt") or ""), None)
            )
    return items


def _tool(part: dict[str, Any]) -> tf.ToolCall:
    state = as_dict(part.get("state"))
    if (
        part.get("type") == "tool-invocation"
    ):  # the oldest storage: {toolInvocation: {toolName, args, result}}
        inv = as_dict(part.get("toolInvocation"))
        return tf.ToolCall(
            str(inv.get("toolName") or "tool"),
            args_summary(inv.get("args")),
            content_text(inv.get("result")) or None,
        )
    status = state.get("status")
    if status == "error":
        result: str | None = f"error: {content_text(state.get('error'))}".strip()
    else:
        result = content_text(state.get("output")) or None
    return tf.ToolCall(str(part.get("tool") or "tool"), args_summary(state.get("input")), result)
