"""The Kimi Code importer, on public journals: the shared main-agent sample, and a
subagent's journal in Kimi's own layout (tests/integrations/kimi/samples/PROVENANCE.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import tool_calls, transcripts

SAMPLES = Path(__file__).parent / "samples"


def test_kimi_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    f = shared_data / "harness-logs" / "kimi" / "agent-sessions__small.jsonl"
    assert detect_format(f, f.read_text()).name == "kimi"
    report = import_files(memory_repo, [f])
    assert report.refused == [] and report.bad_lines == 0
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (t.meta.model, t.meta.channel) == ("kimi-k2.7-code", "kimi")
    # the user said hi, steered with "stop", cancelled, and said hi again (both resent)
    assert [x.text for x in t.turns if x.role == "user"] == ["hi", "hi", "stop"]
    assert "You are Kimi Code CLI" not in (memory_repo.root / report.imported[0]).read_text()


def test_a_kimi_subagent_journal_is_its_own_session(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    session = (
        tmp_path
        / ".kimi-code/sessions/wd_project_ac3bb318f98e"
        / "session_1bcbe023-4f7e-4971-9dc9-43b8756045b0"
    )
    (session / "agents/agent-0").mkdir(parents=True)
    shutil.copy(SAMPLES / "subagent_agent-0.jsonl", session / "agents/agent-0/wire.jsonl")
    shutil.copy(SAMPLES / "state.json", session / "state.json")
    report = import_files(memory_repo, [session / "agents/agent-0/wire.jsonl"])
    assert report.refused == []
    t = transcripts(memory_repo, report.imported)[
        "session_1bcbe023-4f7e-4971-9dc9-43b8756045b0-agent-0"
    ]
    assert t.meta.parent_session == "session_1bcbe023-4f7e-4971-9dc9-43b8756045b0"
    assert t.meta.cwd == "/private/tmp/as-agent-lab/kimi/project"  # the state's workDir
    assert t.meta.tokens_out == 75 + 136 + 119
    calls = tool_calls(t)
    assert [c.tool for c in calls] == ["Glob", "Bash"] and calls[1].result == "3124"
    assert t.turns[-1].role == "agent" and t.turns[-1].text.startswith("**Exact count:**")
    body = (memory_repo.root / report.imported[0]).read_text()
    assert "The Glob tool" not in body  # a think part
    assert all(isinstance(i, (tf.Text, tf.ToolCall)) for turn in t.turns for i in turn.items)
