"""The Cline importer, and any Anthropic Messages list (Roo Code's among them)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import tool_calls, transcripts


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # aider writes local time
    time.tzset()


CLINE = [
    {
        "role": "user",
        "ts": 1760000000000,
        "content": [
            {"type": "text", "text": "<task>\nFix the failing date parser test\n</task>"},
            {
                "type": "text",
                "text": "<environment_details>\n# Current Time\n2025-10-09\n</environment_details>",
            },
        ],
    },
    {
        "role": "assistant",
        "ts": 1760000005000,
        "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic"},
        "metrics": {"tokens": {"prompt": 900, "completion": 40}},
        "content": [
            {"type": "thinking", "thinking": "secret reasoning"},
            {"type": "text", "text": "I'll run the tests first."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "execute_command",
                "input": {"command": "pytest -q tests/test_dates.py"},
            },
        ],
    },
    {
        "role": "user",
        "ts": 1760000010000,
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {"type": "text", "text": "1 failed"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": "iVBORw0KGgo=",
                        },
                    },
                ],
            },
            {"type": "text", "text": "<environment_details>\nnothing\n</environment_details>"},
        ],
    },
    {
        "role": "assistant",
        "ts": 1760000020000,
        "content": [
            {
                "type": "text",
                "text": "<thinking>the parser drops the zone</thinking>\nThe parser drops the time zone.",
            },
            {
                "type": "text",
                "text": "<replace_in_file>\n<path>dates.py</path>\n<diff>...</diff>\n</replace_in_file>",
            },
        ],
    },
    {
        "role": "user",
        "ts": 1760000030000,
        "content": [
            {"type": "text", "text": "[replace_in_file for 'dates.py'] Result:"},
            {"type": "text", "text": "The content was successfully saved to dates.py."},
            {
                "type": "text",
                "text": "[ERROR] You did not use a tool in your previous response! Please retry with a tool use.",
            },
        ],
    },
]


def write_cline(tmp: Path, messages: list[dict], harness: str = "saoudrizwan.claude-dev") -> Path:
    folder = tmp / harness / "tasks" / "1760000000000"
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "api_conversation_history.json"
    p.write_text(json.dumps(messages))
    return p


def test_cline_history_keeps_every_tool_call_and_never_writes_an_empty_turn(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    p = write_cline(tmp_path, CLINE)
    assert (
        detect_format(p, p.read_text()).name == "cline"
    )  # not "openai", which lost every tool call
    report = import_files(memory_repo, [p])
    assert report.refused == [] and len(report.imported) == 1
    assert report.imported[0].startswith("raw/conversations/2025/10/09/0853-cline-1760000000000-")
    t = transcripts(memory_repo, report.imported)["cline-1760000000000"]
    assert (t.meta.channel, t.meta.model, t.meta.tokens_in, t.meta.tokens_out) == (
        "cline",
        "claude-sonnet-4-5",
        900,
        40,
    )
    assert all(turn.items for turn in t.turns)
    calls = tool_calls(t)
    assert calls[0] == tf.ToolCall("execute_command", "pytest -q tests/test_dates.py", "1 failed")
    assert calls[1] == tf.ToolCall(
        "replace_in_file",
        'dates.py {"diff": "..."}',
        "The content was successfully saved to dates.py.",
    )
    text = (memory_repo.root / report.imported[0]).read_text()
    assert "> [attachment:image/png from a tool result (not stored)]" in text
    assert "secret reasoning" not in text and "drops the zone" not in text  # reasoning excluded
    assert "environment_details" not in text and "Current Time" not in text
    assert t.turns[0].text == "Fix the failing date parser test"
    assert t.turns[-1].role == "system" and t.turns[-1].text.startswith(
        "[ERROR] You did not use a tool"
    )


def test_an_anthropic_list_is_refused_by_the_openai_reader_and_any_other_file_name_works(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    p = tmp_path / "messages.json"
    p.write_text(json.dumps({"model": "claude-opus-4", "messages": CLINE[1:3]}))
    forced = import_files(memory_repo, [p], "openai")
    assert forced.imported == [] and "--format cline" in forced.refused[0]
    report = import_files(memory_repo, [p])
    assert report.refused == [] and len(report.imported) == 1
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert t.meta.channel == "anthropic" and t.meta.session_id.startswith("anth_")
    assert tool_calls(t)[0].result == "1 failed"


def test_roo_code_is_named_by_its_folder(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    p = write_cline(tmp_path, CLINE[:3], harness="rooveterinaryinc.roo-cline")
    report = import_files(memory_repo, [p])
    assert "roo-code-1760000000000" in transcripts(memory_repo, report.imported)


def test_a_turn_whose_content_was_not_understood_refuses_the_session(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    p = tmp_path / "chat.json"
    p.write_text(
        json.dumps(
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "future_block", "payload": {"x": 1}}]},
            ]
        )
    )
    report = import_files(memory_repo, [p], "openai")
    assert report.imported == []
    assert "would be written empty" in report.refused[0] and "--format" in report.refused[0]
