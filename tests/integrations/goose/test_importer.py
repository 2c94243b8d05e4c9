"""The Goose importer: a session file of Goose before 1.20 and its sessions.db since, in the
shapes Goose writes (a metadata line, then role/created/content; the sessions and messages
tables with content_json)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import roles, tool_calls, transcripts

REQUEST = {
    "type": "toolRequest",
    "id": "toolu_bdrk_01H6",
    "toolCall": {
        "status": "success",
        "value": {"name": "developer__shell", "arguments": {"command": "ps aux | grep worker"}},
    },
}
RESPONSE = {
    "type": "toolResponse",
    "id": "toolu_bdrk_01H6",
    "toolResult": {
        "status": "success",
        "value": [{"type": "text", "text": "coding 1234 2.5 8.5 node worker.js"}],
    },
}
MESSAGES = [
    (
        "user",
        1747178328,
        [{"type": "text", "text": "I'm seeing a memory leak in my worker process."}],
    ),
    (
        "assistant",
        1747178334,
        [{"type": "text", "text": "Let's check the memory usage first."}, REQUEST],
    ),
    ("user", 1747178335, [RESPONSE]),
    (
        "assistant",
        1747178340,
        [
            {"type": "thinking", "thinking": "rss grows"},
            {"type": "text", "text": "The worker holds 87 MB and grows."},
        ],
    ),
]


def check(t: tf.Transcript) -> None:
    assert t.meta.cwd == "/home/coding/projects/my-app"
    assert roles(t) == ["user", "agent", "agent"]
    assert tool_calls(t) == [
        tf.ToolCall(
            "developer__shell", "ps aux | grep worker", "coding 1234 2.5 8.5 node worker.js"
        )
    ]
    assert t.turns[-1].text == "The worker holds 87 MB and grows."


def test_a_goose_session_file(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    path = tmp_path / "20250513_1.jsonl"
    meta = {
        "working_dir": "/home/coding/projects/my-app",
        "description": "Debug memory leak",
        "message_count": 4,
        "total_tokens": 1250,
    }
    rows = [meta] + [{"role": r, "created": c, "content": b} for r, c, b in MESSAGES]
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    assert detect_format(path, path.read_text()).name == "goose"
    t = transcripts(memory_repo, import_files(memory_repo, [path]).imported)["goose-20250513_1"]
    assert t.meta.topic == "Debug memory leak"
    check(t)


def test_goose_sessions_db(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT, description TEXT,
          session_type TEXT, working_dir TEXT, created_at TIMESTAMP, updated_at TIMESTAMP,
          input_tokens INTEGER, output_tokens INTEGER, accumulated_input_tokens INTEGER,
          accumulated_output_tokens INTEGER, model_config_json TEXT, parent_session_id TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT,
          session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
          content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
          timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
        """
    )
    conn.execute(
        "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            "20260422_3",
            "Memory leak",
            "",
            "user",
            "/home/coding/projects/my-app",
            "2026-04-22 17:40:00",
            "2026-04-22 17:50:00",
            980,
            270,
            980,
            270,
            json.dumps({"model_name": "claude-sonnet-4-5"}),
            None,
        ),
    )
    for i, (role, created, blocks) in enumerate(MESSAGES):
        conn.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp) "
            "VALUES (?,?,?,?,?)",
            (f"m{i}", "20260422_3", role, json.dumps(blocks), created),
        )
    conn.commit()
    conn.close()
    report = import_files(memory_repo, [db])
    assert report.refused == []
    t = transcripts(memory_repo, report.imported)["goose-20260422_3"]
    assert (t.meta.topic, t.meta.model, t.meta.tokens_in, t.meta.tokens_out) == (
        "Memory leak",
        "claude-sonnet-4-5",
        980,
        270,
    )
    check(t)
