"""The Continue importer."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import tool_calls, transcripts


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # aider writes local time
    time.tzset()


def test_continue_session(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    folder = tmp_path / ".continue" / "sessions"
    folder.mkdir(parents=True)
    (folder / "sessions.json").write_text(
        json.dumps(
            [
                {
                    "sessionId": "c-1",
                    "title": "Dates",
                    "dateCreated": "1760000000000",
                    "workspaceDirectory": "/w",
                }
            ]
        )
    )
    session = {
        "sessionId": "c-1",
        "title": "Dates",
        "workspaceDirectory": "/w",
        "chatModelTitle": "GPT-4o",
        "usage": {"promptTokens": 300, "completionTokens": 20, "totalCost": 0.01},
        "history": [
            {
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Where is parse_date?"},
                        {"type": "imageUrl", "imageUrl": {"url": "data:image/png;base64,AA"}},
                    ],
                },
                "contextItems": [
                    {
                        "name": "dates.py",
                        "description": "src/dates.py",
                        "content": "...",
                        "uri": {"type": "file", "value": "file:///w/src/dates.py"},
                        "id": {"providerTitle": "file", "itemId": "1"},
                    }
                ],
            },
            {"message": {"role": "thinking", "content": "hmm"}, "contextItems": []},
            {
                "message": {
                    "role": "assistant",
                    "content": "",
                    "toolCalls": [
                        {
                            "id": "tc1",
                            "type": "function",
                            "function": {
                                "name": "grep_search",
                                "arguments": '{"query": "def parse_date"}',
                            },
                        }
                    ],
                },
                "contextItems": [],
                "toolCallStates": [
                    {
                        "toolCallId": "tc1",
                        "status": "done",
                        "parsedArgs": {},
                        "toolCall": {},
                        "output": [{"name": "r", "description": "", "content": "src/dates.py:3"}],
                    }
                ],
            },
            {
                "message": {"role": "assistant", "content": "In src/dates.py, line 3."},
                "contextItems": [],
                "conversationSummary": "The user looked for parse_date.",
            },
        ],
    }
    (folder / "c-1.json").write_text(json.dumps(session))
    report = import_files(memory_repo, [folder])  # the folder: sessions.json is passed over
    assert report.refused == [] and len(report.imported) == 1
    assert any("sessions.json: skipped" in w for w in report.warnings)
    t = transcripts(memory_repo, report.imported)["c-1"]
    assert report.imported[0].startswith("raw/conversations/2025/10/09/0853-c-1-")
    assert (t.meta.model, t.meta.topic, t.meta.tokens_in) == ("GPT-4o", "Dates", 300)
    assert [x.role for x in t.turns] == ["user", "agent", "agent", "system"]
    assert t.turns[0].items[1:] == (
        tf.Attachment("image (not stored)"),
        tf.Attachment("file:///w/src/dates.py"),
    )
    assert tool_calls(t) == [tf.ToolCall("grep_search", "def parse_date", "src/dates.py:3")]
    assert "hmm" not in (memory_repo.root / report.imported[0]).read_text()
