"""The strict fidelity check (autopoiesis.testing.fidelity) over every public sample of
every format with a reference reader: each text in a turn of its role, each tool result on
its own call. And the check fails when an importer misplaces a result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autopoiesis.capture.importers.shapes import ToolCalls
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.testing.fidelity import check_file, check_files, table
from tests.integrations.cline.test_messages import TASK

TESTS = Path(__file__).resolve().parent.parent


def samples(shared: Path) -> list[Path]:
    roots = [shared / "harness-logs", shared / "claude-code", TESTS / "integrations"]
    return [
        p
        for root in roots
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and p.suffix in (".json", ".jsonl", ".md")
        and ("samples" in p.parts or root != TESTS / "integrations")
        and p.name != "PROVENANCE.md"
    ]


@pytest.mark.slow
def test_every_public_sample_is_imported_faithfully(
    memory_repo: MemoryRepo, shared_data: Path
) -> None:
    rows = check_files(memory_repo, samples(shared_data))
    formats = {r.fmt for r in rows}
    assert formats >= {
        "claude-code",
        "codex",
        "gemini",
        "cursor",
        "copilot",
        "chatgpt",
        "claude-ai",
        "aider",
        "qwen-code",
        "kimi",
        "droid",
        "pi",
    }
    unfaithful = [f"{r.file}: {r.misses}" for r in rows if not r.faithful]
    assert unfaithful == [], table(rows)
    assert sum(r.results for r in rows) >= 15 and sum(r.texts for r in rows) >= 70


def test_the_check_sees_a_result_on_the_wrong_call(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Cline task resumed after an unanswered question: faithful; with the pairing of
    results broken again as it was (each result to the oldest call still waiting, the
    unanswered question among them), the check says so."""
    folder = tmp_path / "saoudrizwan.claude-dev" / "tasks" / "1777070000000"
    folder.mkdir(parents=True)
    task = folder / "api_conversation_history.json"
    task.write_text(json.dumps(TASK))
    row = check_file(memory_repo, task)
    assert row is not None and row.faithful and row.results >= 4
    monkeypatch.setattr(ToolCalls, "unanswered", lambda self: 0)
    monkeypatch.setattr(
        ToolCalls,
        "resolve_oldest",
        lambda self, tool, result, any_tool=False: self.resolve(None, result),
    )
    other = tmp_path / "other" / "saoudrizwan.claude-dev" / "tasks" / "1777070000001"
    other.mkdir(parents=True)
    (other / "api_conversation_history.json").write_text(json.dumps(TASK))
    broken = check_file(memory_repo, other / "api_conversation_history.json")
    assert broken is not None and not broken.faithful
    assert any("not on its call" in m for m in broken.misses)
