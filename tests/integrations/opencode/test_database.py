"""OpenCode 1.2's opencode.db: the public storage sample moved into OpenCode's SQLite tables
as OpenCode's own migration does (samples/PROVENANCE.md) reads exactly as the storage does."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import tool_calls, transcripts

STORAGE = Path(__file__).parent / "samples" / "storage_v2"
# The columns of OpenCode's session, message and part tables that hold the conversation
# (anomalyco/opencode packages/opencode/src/session/session.sql.ts).
SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id),
  parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL,
  version TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id),
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id),
  session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
  data TEXT NOT NULL);
"""


def migrate(storage: Path, db: Path) -> None:
    """The storage folder's sessions, messages and parts as OpenCode 1.2's migration writes
    them: one row each, `data` the file's JSON without its ids."""
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA)
    for f in sorted((storage / "session").glob("*/*.json")):
        s = json.loads(f.read_text())
        conn.execute("INSERT OR IGNORE INTO project VALUES (?, ?)", (s["projectID"], "/"))
        conn.execute(
            "INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?)",
            (
                s["id"],
                s["projectID"],
                s.get("parentID"),
                s.get("slug", s["id"]),
                s["directory"],
                s["title"],
                s.get("version", ""),
                s["time"]["created"],
                s["time"].get("updated", s["time"]["created"]),
            ),
        )
    session_of: dict[str, str] = {}
    for f in sorted((storage / "message").glob("*/*.json")):
        m = json.loads(f.read_text())
        data = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
        t = m["time"]["created"]
        session_of[m["id"]] = m["sessionID"]
        conn.execute(
            "INSERT INTO message VALUES (?,?,?,?,?)",
            (m["id"], m["sessionID"], t, t, json.dumps(data)),
        )
    for f in sorted((storage / "part").glob("*/*.json")):
        p = json.loads(f.read_text())
        mid = p.get("messageID", f.parent.name)  # a part file's folder is its message
        data = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
        conn.execute(
            "INSERT INTO part VALUES (?,?,?,?,?,?)",
            (p["id"], mid, session_of[mid], 0, 0, json.dumps(data)),
        )
    conn.commit()
    conn.close()


def test_opencode_db_reads_as_its_storage_did(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    db = tmp_path / ".local/share/opencode/opencode.db"
    db.parent.mkdir(parents=True)
    migrate(STORAGE, db)
    from_db = import_files(memory_repo, [db])
    assert from_db.refused == [] and len(from_db.imported) == 2
    ts = transcripts(memory_repo, from_db.imported)
    large = ts["s_stage0_large"]
    assert (large.meta.topic, large.meta.cwd, large.meta.model) == (
        "OpenCode Large",
        "/tmp/large",
        "gpt-4o-mini",
    )
    assert tool_calls(large)[0] == tf.ToolCall(
        "bash",
        "ls /non-existent-directory",
        "ls: /non-existent-directory: No such file or directory",
    )
    # the same sessions read from the storage folder they came from: the same turns
    from autopoiesis.capture.importers import ImportReport, importers

    opencode = importers()["opencode"]
    files = {d.session_id: d for d in opencode.read_folder(STORAGE, ImportReport())}
    rows = {d.session_id: d for d in opencode.read_database(db, ImportReport())}
    assert files.keys() == rows.keys()
    for sid, draft in files.items():
        assert [(t.role, t.items) for t in rows[sid].turns] == [
            (t.role, t.items) for t in draft.turns
        ]
        assert (rows[sid].tokens_in, rows[sid].model) == (draft.tokens_in, draft.model)


def test_a_database_no_format_reads_is_refused_by_name(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE kv (k TEXT, v TEXT)")
    conn.commit()
    conn.close()
    report = import_files(memory_repo, [db])
    assert report.imported == [] and "is an SQLite database" in report.refused[0]
    assert "opencode" in report.refused[0]
