"""The neutral JSON import format: several parties, their own dates."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf


def test_neutral_format_multi_party_and_own_dates(
    memory_repo: MemoryRepo, tmp_path: Path, git
) -> None:
    session = {
        "session_id": "conv1_s1",
        "started": "2023-05-08T13:56:00Z",
        "model": None,
        "channel": "chat",
        "messages": [
            {
                "role": "user",
                "name": "Caroline",
                "content": "I went to a LGBTQ support group yesterday.",
                "timestamp": "2023-05-08T13:56:00Z",
            },
            {
                "role": "agent",
                "name": "Melanie",
                "content": "That's great!",
                "timestamp": "2023-05-08T13:57:00Z",
                "tool_calls": [
                    {"tool": "calendar", "args": {"query": "support group"}, "result": "1 event"}
                ],
            },
        ],
    }
    other = dict(
        session,
        session_id="conv1_s2",
        started="2023-06-01T09:00:00Z",
        messages=[
            {
                "role": "user",
                "name": "Caroline",
                "content": "Back again",
                "timestamp": "2023-06-01T09:00:00Z",
            }
        ],
    )
    f = tmp_path / "sessions.json"
    f.write_text(json.dumps([session, other]))
    report = import_files(memory_repo, [f])
    assert [p.split("/")[2:5] for p in report.imported] == [
        ["2023", "05", "08"],
        ["2023", "06", "01"],
    ]
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert [(x.role, x.name) for x in t.turns] == [("user", "Caroline"), ("agent", "Melanie")]
    assert t.turns[1].items[1] == tf.ToolCall("calendar", "support group", "1 event")
    assert (
        git(memory_repo.root, "log", "-1", "--format=%s").stdout.strip()
        == "conversation: import 2 sessions"
    )
