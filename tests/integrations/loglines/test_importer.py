"""The claude-code-transcripts loglines importer."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from tests.integrations.helpers import transcripts


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # aider writes local time
    time.tzset()


def test_loglines_read_as_the_claude_code_log_they_came_from(
    memory_repo: MemoryRepo, shared_data: Path, tmp_path: Path
) -> None:
    src = shared_data / "claude-code" / "claude-code-transcripts__sample_session.jsonl"
    rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    kept = [
        {k: r[k] for k in ("type", "timestamp", "message") if k in r}
        for r in rows
        if r.get("type") in ("user", "assistant")
    ]
    p = tmp_path / "web-session.json"
    p.write_text(json.dumps({"loglines": kept}))
    assert detect_format(p, p.read_text()).name == "loglines"
    report = import_files(memory_repo, [p, src])
    assert report.refused == [] and len(report.imported) == 2
    ts = transcripts(memory_repo, report.imported)
    assert [x.items for x in ts["web-session"].turns] == [
        x.items for x in ts["test-session-id"].turns
    ]
