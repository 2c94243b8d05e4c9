"""The Factory Droid importer, on public logs (tests/integrations/droid/samples/PROVENANCE.md):
a session log and a stream-json log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import roles, tool_calls, transcripts

SAMPLES = Path(__file__).parent / "samples"


def test_a_droid_session_log_with_its_settings(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    folder = tmp_path / ".factory/sessions/-tmp-large"
    folder.mkdir(parents=True)
    log = folder / "droid_large.jsonl"
    shutil.copy(SAMPLES / "session_store_large.jsonl", log)
    (folder / "droid_large.settings.json").write_text(
        json.dumps(
            {"model": "claude-sonnet-4-5", "tokenUsage": {"inputTokens": 900, "outputTokens": 40}}
        )
    )
    assert detect_format(log, log.read_text()).name == "droid"
    report = import_files(memory_repo, [log])
    t = transcripts(memory_repo, report.imported)["droid_large"]
    assert (t.meta.topic, t.meta.cwd, t.meta.model) == (
        "Stage0 Droid Large",
        "/tmp/large",
        "claude-sonnet-4-5",
    )
    assert (t.meta.tokens_in, t.meta.tokens_out) == (900, 40)
    assert [x.text for x in t.turns if x.role == "user"] == ["Step 1", "Step 2"]
    assert tool_calls(t) == [
        tf.ToolCall("Execute", "printf 'line1\\nline2\\nline3\\n'", "line1 line2 line3")
    ]


def test_a_droid_stream_json_log(memory_repo: MemoryRepo) -> None:
    log = SAMPLES / "stream_json_schema_drift.jsonl"
    assert detect_format(log, log.read_text()).name == "droid"  # not claude-code's stream
    report = import_files(memory_repo, [log])
    assert report.refused == [] and report.bad_lines == 0
    t = transcripts(memory_repo, report.imported)["sid_stage0_drift"]
    assert (t.meta.model, t.meta.cwd, t.meta.tokens_in, t.meta.tokens_out) == (
        "droid-model",
        "/tmp/drift",
        10,
        5,
    )
    assert roles(t) == ["user", "agent", "agent"]
    assert t.turns[0].text == "List files"  # the system reminder is not the user's
    assert tool_calls(t) == [
        tf.ToolCall(
            "Execute", "ls -la", "error: ls: /non-existent-directory: No such file or directory"
        )
    ]
