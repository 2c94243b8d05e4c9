"""OpenCode 1.2 and later keep their sessions in SQLite (`~/.local/share/opencode/
opencode.db`, OpenCode's own migration moved the JSON storage there): tables `session`
(`id`, `parent_id`, `directory`, `title`, `time_created`), `message` (`id`, `session_id`,
`time_created`, `data`) and `part` (`id`, `message_id`, `session_id`, `data`), where `data`
is the JSON the storage files held, without their ids. Each row is given its ids back and
read exactly as the storage files are (importer._session).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import ImportReport, SessionDraft
from autopoiesis.core.sqlite import database_tables, open_readonly
from autopoiesis.errors import ImportFormatError, TranscriptFormatError

TABLES = frozenset({"session", "message", "part"})


def is_opencode_db(path: Path) -> bool:
    """Whether the database at PATH has OpenCode's session, message and part tables."""
    return TABLES <= database_tables(path)


def _data(raw: Any, where: str, report: ImportReport) -> dict[str, Any] | None:
    try:
        data = json.loads(raw) if isinstance(raw, str | bytes) else None
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        report.skip_line(where, 1, "its data is not a JSON object")
        return None
    return data


def read_database(path: Path, report: ImportReport, session: Any) -> list[SessionDraft]:
    """Every session of the OpenCode database at PATH, each read by SESSION (the storage
    reader: sid, info, messages, parts-of-a-message, source)."""
    try:
        conn = open_readonly(path)
        sessions = conn.execute(
            "SELECT id, parent_id, directory, title, time_created FROM session "
            "ORDER BY time_created, id"
        ).fetchall()
    except Exception as exc:
        raise ImportFormatError(f"{path}: cannot read OpenCode's database ({exc}).") from None
    drafts = []
    try:
        for sid, parent, directory, title, created in sessions:
            info = {
                "id": sid,
                "parentID": parent,
                "directory": directory,
                "title": title,
                "time": {"created": created},
            }
            messages = []
            for mid, m_created, raw in conn.execute(
                "SELECT id, time_created, data FROM message WHERE session_id = ? "
                "ORDER BY time_created, rowid",
                (sid,),
            ):
                data = _data(raw, f"{path}#message/{mid}", report)
                if data is not None:
                    time: dict[str, Any] = (
                        data["time"] if isinstance(data.get("time"), dict) else {}
                    )
                    messages.append(
                        {
                            **data,
                            "id": mid,
                            "sessionID": sid,
                            "time": {"created": m_created, **time},
                        }
                    )
            parts: dict[str, list[dict[str, Any]]] = {}
            for pid, mid, raw in conn.execute(
                "SELECT id, message_id, data FROM part WHERE session_id = ? "
                "ORDER BY message_id, time_created, rowid",
                (sid,),
            ):
                data = _data(raw, f"{path}#part/{pid}", report)
                if data is not None:
                    parts.setdefault(mid, []).append(
                        {**data, "id": pid, "messageID": mid, "sessionID": sid}
                    )
            try:
                draft = session(sid, info, messages, _parts_of(parts), str(path))
            except (ImportFormatError, TranscriptFormatError) as exc:
                report.refuse(f"{path}: session {sid}", str(exc))
                continue
            if draft.turns:
                drafts.append(draft)
    finally:
        conn.close()
    return drafts


def _parts_of(parts: dict[str, list[dict[str, Any]]]) -> Any:
    """The parts-of-a-message function the storage reader takes, over PARTS by message."""
    return lambda message: parts.get(str(message.get("id")), [])
