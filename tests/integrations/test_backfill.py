"""`autopoiesis import --all`: every harness's history on this machine, found where each
harness keeps it under HOME (a fake one here, holding real public sample logs), imported
once; a second run files nothing new."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.conftest import Cli
from tests.integrations.cline.test_messages import TASK

HERE = Path(__file__).parent


def place(home: Path, shared: Path) -> None:
    """Real samples where their harness keeps them, in HOME."""
    logs = shared / "harness-logs"
    sid = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
    where = {
        f".claude/projects/-home-me-app/{sid}.jsonl": logs
        / "claude-code/agent-sessions__subagent_parent.jsonl",
        f".claude/projects/-home-me-app/{sid}/subagents/agent-a0ad4f44468bdf20d.jsonl": logs
        / "claude-code/agent-sessions__subagents_agent-a0ad4f44468bdf20d.jsonl",
        ".codex/sessions/2026/08/03/rollout-2026-08-03T10-48-00-019fc8be-3658-7ca3-9e29-000000000000.jsonl": logs
        / "codex/agent-sessions__small.jsonl",
        ".gemini/tmp/abc123/chats/session-2025-09-18T10-00-abc.json": logs
        / "gemini/agent-sessions__small.json",
        ".copilot/session-state/copilot_stage0_small/events.jsonl": logs
        / "copilot/agent-sessions__small.jsonl",
        ".cursor/projects/home-me-app/agent-transcripts/3f1c.jsonl": logs
        / "cursor/agent-sessions__small.jsonl",
        ".qwen/projects/-home-me-app/chats/019f0000-0000-7000-8000-000000000001.jsonl": logs
        / "qwen/agent-sessions__qwen1.jsonl",
        ".kimi-code/sessions/wd_app_1/session_1/agents/main/wire.jsonl": logs
        / "kimi/agent-sessions__small.jsonl",
        ".factory/sessions/-tmp-large/droid_large.jsonl": HERE
        / "droid/samples/session_store_large.jsonl",
        ".pi/agent/sessions/--tmp-as-agent-fixture-project--/2026-05-12T01-02-27-657Z_019e19b4-eb48-746a-aa6b-8dfcfa37954b.jsonl": next(
            (HERE / "pi/samples").glob("*.jsonl")
        ),
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1777070000000/api_conversation_history.json": None,
        "Downloads/notes.jsonl": logs
        / "claude-code/agent-sessions__schema_drift.jsonl",  # not a harness folder
    }
    for rel, source in where.items():
        target = home / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source is None:  # a Cline task in the current shape
            target.write_text(json.dumps(TASK))
        else:
            shutil.copy(source, target)


@pytest.mark.slow
def test_import_all_finds_every_harness_history_under_home_once(
    memory_repo: MemoryRepo, tmp_path: Path, shared_data: Path, cli: Cli
) -> None:
    home = tmp_path / "home"
    place(home, shared_data)
    env = {"HOME": str(home), "CODEX_HOME": None}
    first = cli("import", "--all", repo=memory_repo, env=env, process=True)
    assert "Traceback" not in first.stderr
    filed = {tf.parse(p.read_text()).meta.channel for p in (memory_repo.root / "raw").rglob("*.md")}
    assert filed >= {
        "claude-code",
        "codex",
        "gemini",
        "copilot",
        "cursor",
        "qwen-code",
        "kimi",
        "droid",
        "pi",
        "cline",
    }
    count = len(list((memory_repo.root / "raw").rglob("*.md")))
    assert "agent-a0ad4f44468bdf20d" in first.stdout  # the subagent, from its folder
    assert "notes" not in first.stdout  # Downloads is no harness's folder
    again = cli("import", "--all", repo=memory_repo, env=env, process=True)
    assert "imported raw/" not in again.stdout and again.returncode == first.returncode
    assert len(list((memory_repo.root / "raw").rglob("*.md"))) == count


def test_import_all_with_no_history_says_so(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli
) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()
    out = cli("import", "--all", repo=memory_repo, env={"HOME": str(home), "CODEX_HOME": None})
    assert out.returncode == 0 and "no harness history found" in out.stdout
    bare = cli("import", repo=memory_repo, env={"HOME": str(home)})
    assert bare.returncode == 2 and "--all" in bare.stderr
