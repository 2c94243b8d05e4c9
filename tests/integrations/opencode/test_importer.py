"""The OpenCode importer: its storage folder, parts in the legacy layout."""

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


def opencode_storage(root: Path, *, legacy_parts: bool = False, directory: str = "/w") -> Path:
    def put(rel: str, data: dict) -> None:
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(data))

    put(
        "session/proj1/ses_parent.json",
        {
            "id": "ses_parent",
            "projectID": "proj1",
            "directory": directory,
            "title": "Fix CI",
            "time": {"created": 1730000000000, "updated": 1730000009000},
        },
    )
    put(
        "session/proj1/ses_child.json",
        {
            "id": "ses_child",
            "projectID": "proj1",
            "directory": directory,
            "parentID": "ses_parent",
            "title": "Search subtask",
            "time": {"created": 1730000004000},
        },
    )
    put(
        "message/ses_parent/msg_1.json",
        {
            "id": "msg_1",
            "sessionID": "ses_parent",
            "role": "user",
            "time": {"created": 1730000001000},
            "model": {"providerID": "openai", "modelID": "gpt-4o-mini"},
        },
    )
    put(
        "message/ses_parent/msg_2.json",
        {
            "id": "msg_2",
            "sessionID": "ses_parent",
            "role": "assistant",
            "time": {"created": 1730000002000},
            "modelID": "gpt-4o-mini",
            "tokens": {"input": 120, "output": 16, "reasoning": 4},
            "error": {
                "name": "MessageAbortedError",
                "data": {"message": "The operation was aborted."},
            },
        },
    )
    put(
        "message/ses_child/msg_3.json",
        {
            "id": "msg_3",
            "sessionID": "ses_child",
            "role": "user",
            "time": {"created": 1730000004000},
        },
    )
    parts = [
        ("msg_1", {"id": "prt_a", "type": "text", "text": "Why is CI red?"}),
        ("msg_1", {"id": "prt_b", "type": "text", "text": "<file contents>", "synthetic": True}),
        ("msg_2", {"id": "prt_c", "type": "reasoning", "text": "think think"}),
        (
            "msg_2",
            {
                "id": "prt_d",
                "type": "tool",
                "callID": "c1",
                "tool": "bash",
                "state": {
                    "status": "completed",
                    "input": {"command": "gh run view"},
                    "output": "lint failed\n",
                },
            },
        ),
        (
            "msg_2",
            {
                "id": "prt_e",
                "type": "tool",
                "callID": "c2",
                "tool": "read",
                "state": {
                    "status": "error",
                    "input": {"filePath": "x.py"},
                    "error": "no such file",
                },
            },
        ),
        ("msg_2", {"id": "prt_f", "type": "text", "text": "Lint failed on x.py."}),
        ("msg_2", {"id": "prt_g", "type": "step-finish", "tokens": {"input": 120, "output": 16}}),
        (
            "msg_2",
            {
                "id": "prt_h",
                "type": "file",
                "filename": "ci.log",
                "mime": "text/plain",
                "url": "file:///w/ci.log",
            },
        ),
        ("msg_3", {"id": "prt_i", "type": "text", "text": "Find every TODO"}),
    ]
    for n, (mid, part) in enumerate(parts):
        part = {**part, "messageID": mid}
        put(f"part/prt_{n:03d}.json" if legacy_parts else f"part/{mid}/{part['id']}.json", part)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("legacy", [False, True])
def test_opencode_storage_folder(memory_repo: MemoryRepo, tmp_path: Path, legacy: bool) -> None:
    root = opencode_storage(tmp_path / "opencode" / "storage", legacy_parts=legacy)
    report = import_files(memory_repo, [root.parent])  # the data folder holding storage/ works too
    assert report.refused == [], report.refused
    ts = transcripts(memory_repo, report.imported)
    parent, child = ts["ses_parent"], ts["ses_child"]
    assert (
        parent.meta.topic,
        parent.meta.model,
        parent.meta.tokens_in,
        parent.meta.tokens_out,
    ) == ("Fix CI", "gpt-4o-mini", 120, 16)
    assert [x.role for x in parent.turns] == ["user", "agent", "system"]
    assert parent.turns[0].text == "Why is CI red?"  # the synthetic part OpenCode added is left out
    assert tool_calls(parent) == [
        tf.ToolCall("bash", "gh run view", "lint failed"),
        tf.ToolCall("read", '{"filePath": "x.py"}', "error: no such file"),
    ]
    assert tf.Attachment("ci.log") in parent.turns[1].items
    assert "think think" not in (memory_repo.root / report.imported[0]).read_text()
    assert parent.turns[2].text == "MessageAbortedError: The operation was aborted."
    assert child.meta.parent_session == "ses_parent"


def test_opencode_session_or_message_file_imports_its_whole_session(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    root = opencode_storage(tmp_path / "storage")
    by_session = import_files(memory_repo, [root / "session" / "proj1" / "ses_parent.json"])
    assert by_session.refused == [] and len(by_session.imported) == 1
    by_message = import_files(memory_repo, [root / "message" / "ses_parent" / "msg_2.json"])
    assert by_message.imported == [] and by_message.skipped_duplicates == by_session.imported


def test_opencode_shared_samples_are_refused_with_the_reason(
    memory_repo: MemoryRepo, shared_data: Path
) -> None:
    files = sorted((shared_data / "harness-logs" / "opencode").glob("*.json"))
    report = import_files(memory_repo, files)
    assert report.imported == [] and len(report.refused) == 2
    assert all(
        "has no message with text or tool parts" in r and "storage folder" in r
        for r in report.refused
    )
