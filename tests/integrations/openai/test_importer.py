"""The OpenAI messages import format."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf


def test_openai_messages(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    msgs = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What's the weather in Vienna?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Vienna"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "12°C, cloudy"},
        {"role": "assistant", "content": "It's 12°C and cloudy in Vienna."},
    ]
    f = tmp_path / "chat.json"
    f.write_text(json.dumps({"model": "gpt-4o", "created": 1760000000, "messages": msgs}))
    report = import_files(memory_repo, [f])
    assert len(report.imported) == 1
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert t.meta.model == "gpt-4o"
    assert t.meta.session_id.startswith("oai_")
    assert [x.role for x in t.turns] == ["system", "user", "agent", "agent"]
    assert t.turns[2].items == (tf.ToolCall("weather", '{"city": "Vienna"}', "12°C, cloudy"),)
    assert import_files(memory_repo, [f]).skipped_duplicates == report.imported
