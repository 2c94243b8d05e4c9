"""Harnesses autopoiesis does not read yet are refused by name, not as malformed lines."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo

# The first lines of each harness's log, as the public fixtures of a session viewer
# (jazzyalex/agent-sessions, Resources/Fixtures/stage0/agents) hold them.
LOGS = {
    "Grok CLI": (
        "chat_history.jsonl",
        [
            {
                "type": "system",
                "content": "You are Grok 4.5 released by xAI. You are an interactive CLI tool.",
            },
            {
                "type": "user",
                "content": [{"type": "text", "text": "Read hello.py"}],
                "prompt_index": 0,
            },
        ],
    ),
    "Hermes Agent": (
        "session.json",
        {
            "session_id": "20260429_hermes_small",
            "model": "claude-sonnet-4-6",
            "platform": "cli",
            "session_start": "2026-04-29T20:00:00Z",
            "cwd": "/tmp/hermes-small",
            "messages": [{"role": "user", "content": "Summarize this directory."}],
        },
    ),
    "Google Antigravity": (
        "transcript.jsonl",
        [
            {
                "step_index": 0,
                "source": "USER_EXPLICIT",
                "type": "USER_INPUT",
                "status": "DONE",
                "created_at": "2026-06-26T21:16:16Z",
                "content": "<USER_REQUEST>\nList the files.\n</USER_REQUEST>",
            },
            {
                "step_index": 1,
                "source": "SYSTEM",
                "type": "CONVERSATION_HISTORY",
                "status": "DONE",
                "created_at": "2026-06-26T21:16:16Z",
            },
        ],
    ),
}


@pytest.mark.parametrize("harness", sorted(LOGS))
def test_a_log_of_a_harness_not_read_yet_is_refused_by_name(
    memory_repo: MemoryRepo, tmp_path: Path, harness: str
) -> None:
    name, content = LOGS[harness]
    path = tmp_path / name
    if isinstance(content, list):
        path.write_text("".join(json.dumps(x) + "\n" for x in content))
    else:
        path.write_text(json.dumps(content, indent=2))
    report = import_files(memory_repo, [path])
    assert report.imported == [] and report.bad_lines == 0
    assert report.refused == [
        f"{path}: this looks like {harness}, which autopoiesis does not read yet; nothing of it "
        "was imported."
    ]


def test_a_database_of_a_harness_not_read_yet_is_refused_by_name(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    db = tmp_path / "data.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE conversations_v2 (key TEXT, conversation_id TEXT, value TEXT)")
    conn.commit()
    conn.close()
    report = import_files(memory_repo, [db])
    assert report.refused == [
        f"{db}: this looks like Kiro CLI, which autopoiesis does not read yet; nothing of it was "
        "imported."
    ]
