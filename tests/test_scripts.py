"""scripts/: the cron and CI entry points run against a real memory repo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autopoiesis.capture.stream import process_stream
from autopoiesis.core.paths import MemoryRepo

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def script(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture
def captured(memory_repo: MemoryRepo) -> MemoryRepo:
    """A repo with one committed conversation that is not extracted yet."""
    config = memory_repo.root / "memory-config.yaml"
    config.write_text(
        config.read_text().replace(
            "extraction_trigger: on_session_end", "extraction_trigger: manual"
        )
    )
    lines = [
        json.dumps(e).encode()
        for e in (
            {"event": "session_start", "session_id": "cron1", "started": "2026-02-16T18:45:00Z"},
            {
                "event": "message",
                "role": "user",
                "content": "We decided to keep the billing service on Postgres 16.",
            },
            {"event": "message", "role": "agent", "content": "Noted: Postgres 16 for billing."},
            {"event": "session_end", "ended": "2026-02-16T18:50:00Z"},
        )
    ]
    assert process_stream(memory_repo, lines).closed
    return memory_repo


@pytest.mark.slow
def test_extract_then_commit_then_tag(captured: MemoryRepo) -> None:
    root = str(captured.root)
    extracted = script("extract-pending", root)
    assert extracted.returncode == 0, extracted.stderr
    assert "committed" in extracted.stdout
    assert "Postgres 16" in "".join(
        p.read_text() for p in (captured.root / "knowledge").rglob("*.md")
    )
    (captured.root / "knowledge/reference/notes.md").write_text(
        "# Notes\n\n- the invoice run is on the 3rd\n"
    )
    committed = script("commit-knowledge", root)
    assert committed.returncode == 0, committed.stderr
    assert committed.stdout.startswith("[")
    assert "nothing to commit" in script("commit-knowledge", root).stdout
    tagged = script("tag-snapshots", root)
    assert tagged.returncode == 0, tagged.stderr
    assert "memory/daily/" in tagged.stdout


@pytest.mark.slow
def test_condense_prune_and_rebuild_index(captured: MemoryRepo) -> None:
    root = str(captured.root)
    for name, args in (("condense", ("daily",)), ("prune", ()), ("rebuild-index", ())):
        proc = script(name, root, *args)
        assert proc.returncode == 0, (name, proc.stderr)
        assert proc.stdout.strip(), name
    assert captured.index_path.exists()
    assert "indexed" in script("rebuild-index", root).stdout


def test_a_script_outside_a_memory_repo_says_what_to_do(tmp_path: Path) -> None:
    proc = script("extract-pending", cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "autopoiesis init" in proc.stderr
