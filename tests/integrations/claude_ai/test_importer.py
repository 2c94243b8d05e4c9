"""The Claude.ai export importer."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import imported_export, tool_calls, transcripts


def test_claude_ai_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(
        memory_repo, [shared_data / "harness-logs" / "claude-ai" / "polylogue__sample-00.json"]
    )
    assert report.refused == [] and report.bad_lines == 0
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (t.meta.session_id, t.meta.topic) == (
        "37f8a88b-17fc-495a-87a0-ca6e0822e8f3",
        "Improving search index performance",
    )
    assert [(x.role, x.text) for x in t.turns] == [
        ("user", "Can you explain how this works?"),
        ("agent", "After reviewing, I found several areas for improvement."),
        ("user", "Can you explain how this works?"),
    ]
    assert (
        sum(isinstance(i, tf.Attachment) for x in t.turns for i in x.items) == 4 + 2 + 3 + 4 + 4 + 3
    )
    # the synthetic created_at values end in a bare "+": each is named in a warning and keeps the time before it
    assert sum("keeps the time before it" in w for w in report.warnings) == 3
    assert t.meta.started.isoformat() == "2022-12-28T18:09:27+00:00"


def test_claude_ai_tools_branches_and_bad_entries(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    root = "00000000-0000-4000-8000-000000000000"

    def m(uuid: str, parent: str, sender: str, created: str, content: list, text: str = "") -> dict:
        return {
            "uuid": uuid,
            "parent_message_uuid": parent,
            "sender": sender,
            "created_at": created,
            "text": text,
            "content": content,
            "attachments": [],
            "files": [],
        }

    conv = {
        "uuid": "5ca1ab1e-0000-4000-8000-000000000001",
        "name": "Weather lookup",
        "created_at": "2025-03-01T09:00:00Z",
        "chat_messages": [
            m(
                "m1",
                root,
                "human",
                "2025-03-01T09:00:01Z",
                [{"type": "text", "text": "Weather in Oslo?"}],
            ),
            m(
                "m2",
                "m1",
                "assistant",
                "2025-03-01T09:00:02Z",
                [{"type": "text", "text": "EDITED AWAY"}],
            ),
            m(
                "m3",
                "m1",
                "assistant",
                "2025-03-01T09:00:03Z",
                [
                    {"type": "thinking", "thinking": "HIDDEN"},
                    {
                        "type": "tool_use",
                        "id": "tu1",
                        "name": "web_search",
                        "input": {"query": "Oslo weather"},
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu1",
                        "name": "web_search",
                        "content": [{"type": "text", "text": "4°C, rain"}],
                    },
                    {"type": "text", "text": "4°C and raining."},
                ],
            ),
        ],
    }
    conv["chat_messages"][0]["attachments"] = [
        {"file_name": "notes.txt", "extracted_content": "PASTED TEXT"}
    ]
    odd = {
        "uuid": "5ca1ab1e-0000-4000-8000-000000000002",
        "name": "Odd",
        "created_at": "nope",
        "chat_messages": [
            {"uuid": "x", "sender": "human", "created_at": "also nope", "text": "hi"}
        ],
    }
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([conv, odd, ["junk"]]))
    report = import_files(memory_repo, [f])
    assert len(report.refused) == 2
    assert any("[1]" in r and "no readable created_at" in r for r in report.refused)
    assert any("[2]" in r and "not a Claude.ai conversation" in r for r in report.refused)
    (t,) = transcripts(memory_repo, report.imported).values()
    assert [(x.role, x.text) for x in t.turns] == [
        ("user", "Weather in Oslo?"),
        ("agent", "4°C and raining."),
    ]
    assert t.turns[0].items[1] == tf.Attachment("notes.txt")
    assert tool_calls(t) == [tf.ToolCall("web_search", "Oslo weather", "4°C, rain")]
    text = (memory_repo.root / report.imported[0]).read_text()
    assert "EDITED AWAY" not in text and "HIDDEN" not in text and "PASTED TEXT" not in text


def test_a_conversation_whose_first_times_are_unreadable_is_kept_at_its_first_readable_one(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    conv = {
        "uuid": "5ca1ab1e-0000-4000-8000-000000000003",
        "name": "Times lost",
        "created_at": None,
        "chat_messages": [
            {"uuid": "m1", "sender": "human", "created_at": "2023-10-07T07:03:01+", "text": "hi"},
            {
                "uuid": "m2",
                "sender": "assistant",
                "created_at": "2023-10-07T07:04:00Z",
                "text": "hello",
            },
        ],
    }
    t = imported_export(memory_repo, tmp_path, [conv])
    assert [(turn.role, turn.text) for turn in t.turns] == [("user", "hi"), ("agent", "hello")]
    assert t.meta.started.isoformat() == "2023-10-07T07:04:00+00:00"
