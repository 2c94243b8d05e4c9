"""The Amp importer: a thread as the Amp CLI keeps and exports it (the shape public Amp
readers test against: v, id T-..., created, messages with meta.sentAt and usage)."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import roles, tool_calls, transcripts

THREAD = {
    "v": 1,
    "id": "T-e2e-amp",
    "created": 1778155200000,
    "title": "Create hello.txt",
    "env": {"initial": {"workingDirectory": "/home/me/site"}},
    "messages": [
        {
            "role": "user",
            "messageId": 0,
            "meta": {"sentAt": 1778155200000},
            "content": [{"type": "text", "text": "Create hello.txt"}],
        },
        {
            "role": "assistant",
            "messageId": 1,
            "meta": {"sentAt": 1778155201000},
            "usage": {
                "model": "claude-sonnet-4-5",
                "inputTokens": 100,
                "outputTokens": 25,
                "cacheReadInputTokens": 7,
                "cacheCreationInputTokens": 3,
            },
            "content": [
                {"type": "thinking", "thinking": "simple"},
                {
                    "type": "tool_use",
                    "id": "tool1",
                    "name": "edit_file",
                    "input": {"path": "hello.txt", "content": "hi"},
                },
            ],
        },
        {
            "role": "user",
            "messageId": 2,
            "meta": {"sentAt": 1778155202000},
            "content": [
                {
                    "type": "tool_result",
                    "toolUseID": "tool1",
                    "run": {"status": "done", "result": {"output": "Created hello.txt"}},
                }
            ],
        },
        {
            "role": "assistant",
            "messageId": 3,
            "meta": {"sentAt": 1778155203000},
            "content": [{"type": "text", "text": "Done: hello.txt holds hi."}],
            "state": {"type": "complete"},
        },
    ],
}


def test_an_amp_thread(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    path = tmp_path / "T-e2e-amp.json"
    path.write_text(json.dumps(THREAD))
    assert detect_format(path, path.read_text()).name == "amp"
    report = import_files(memory_repo, [path])
    t = transcripts(memory_repo, report.imported)["T-e2e-amp"]
    assert (t.meta.topic, t.meta.cwd, t.meta.model) == (
        "Create hello.txt",
        "/home/me/site",
        "claude-sonnet-4-5",
    )
    assert (t.meta.tokens_in, t.meta.tokens_out) == (107, 25)
    assert roles(t) == ["user", "agent", "agent"]
    assert tool_calls(t) == [
        tf.ToolCall("edit_file", 'hello.txt {"content": "hi"}', "Created hello.txt")
    ]
    assert t.turns[-1].text == "Done: hello.txt holds hi."
