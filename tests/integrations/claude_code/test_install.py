"""The parts of the harness integration that need no subprocess: the compiler without the
session-level slots, the flush block, settings merges a hand edit left odd, the session
registry, and which argument lists take the hook fast path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autopoiesis.compiler import ContextCompiler, ScoredItem
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.fastpath.rules import parse_hook_argv
from autopoiesis.integrations.claude_code.install import install_claude_code, uninstall_claude_code
from autopoiesis.integrations.sessions import SessionRegistry
from autopoiesis.knowledge.flush import FLUSH_BEGIN, FLUSH_END, compaction_instructions, flush_block, parse_flush


def test_compile_without_session_context_leaves_identity_and_p1_out(memory_repo: MemoryRepo) -> None:
    (memory_repo.root / "knowledge/journal").mkdir(exist_ok=True)
    knowledge = [ScoredItem("knowledge/reference/pg.md", 1.0, "[knowledge/reference/pg.md]\nPostgres 17 on pg-2")]
    with ContextCompiler(memory_repo, system_prompt="From memory:") as compiler:
        full = compiler.compile("postgres host?", available_knowledge=knowledge)
        lean = compiler.compile("postgres host?", available_knowledge=knowledge, session_context=False)
    assert "<!-- identity:SOUL.md -->" in full.prompt and "<!-- memory -->" in full.prompt and "<!-- projects -->" in full.prompt
    assert lean.prompt.splitlines()[:2] == ["<!-- system -->", "From memory:"]
    for label in ("identity:", "<!-- memory -->", "<!-- journal:", "<!-- projects -->"):
        assert label not in lean.prompt
    assert "Postgres 17 on pg-2" in lean.prompt and lean.total_tokens < full.total_tokens
    assert any(s.label == "session" and not s.included for s in lean.sections)


def test_flush_block_reads_the_last_marked_block(memory_repo: MemoryRepo) -> None:
    text = compaction_instructions(memory_repo)
    assert FLUSH_BEGIN in text and FLUSH_END in text and "FLUSH_OK" in text
    summary = (f"Summary...\n{FLUSH_BEGIN}\n## memory\n- old\n{FLUSH_END}\nmore\n"
               f"{FLUSH_BEGIN}\n## journal\n- shipped v2\n## memory\n- keep pg-3\n{FLUSH_END}\ntrailer")
    block = flush_block(summary)
    assert block is not None and parse_flush(block) == {"journal": ["shipped v2"], "memory": ["keep pg-3"]}
    assert flush_block("no markers") is None
    assert flush_block(f"{FLUSH_BEGIN} never closed") is None


def test_install_fixes_hand_edits_and_keeps_foreign_entries_in_a_shared_group(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    ours = "autopoiesis -C /old/memory hook claude-code Stop"
    settings.write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "say done"}, {"type": "command", "command": ours}]},
        {"hooks": [{"type": "command", "command": ours}]},  # a second copy
    ]}}))
    report = install_claude_code(memory_repo, settings, python="/usr/bin/python3")
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert stop == [{"hooks": [{"type": "command", "command": "say done"},
                               {"type": "command", "command": f"/usr/bin/python3 -P -m autopoiesis -C {memory_repo.root} hook claude-code Stop",
                                "timeout": 15}]}]
    assert "Stop" in report.updated and "SessionEnd" in report.added
    uninstall_claude_code(settings)
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}


def test_session_registry_keeps_a_session_seen_again_while_it_was_imported(memory_repo: MemoryRepo) -> None:
    registry = SessionRegistry(memory_repo)
    registry.touch("claude-code", "a", path="/x/a.jsonl")
    first = registry.get("claude-code:a")
    assert first is not None and first.path == "/x/a.jsonl"
    registry.forget("claude-code:a", seen="2000-01-01T00:00:00Z")  # seen again since: kept
    assert registry.get("claude-code:a") is not None
    registry.forget("claude-code:a", seen=first.seen)
    assert registry.get("claude-code:a") is None
    assert registry.idle(30) == []
    registry.path.write_text("{not json")  # a damaged cache reads as empty, and is rewritten
    registry.touch("codex", "t")
    assert [s.key for s in registry.all()] == ["codex:t"]


@pytest.mark.parametrize("argv, fast", [
    (["-C", "/m", "hook", "claude-code", "Stop"], True),
    (["hook", "claude-code", "UserPromptSubmit", "--budget", "900"], True),
    (["-C", "/m", "hook", "codex", "notify", '{"type": "x"}'], True),
    (["-C", "/m", "hook", "import", "claude-code:a"], False),
    (["-C", "/m", "hook", "claude-code", "Stop", "extra"], False),
    (["-C", "/m", "hook", "claude-code", "Stop", "--help"], False),
    (["-C", "/m", "search", "x"], False),
    (["hook", "claude-code"], False),
])
def test_which_calls_take_the_hook_fast_path(argv: list[str], fast: bool) -> None:
    call = parse_hook_argv(argv)
    assert (call is not None) is fast
    if argv[:2] == ["-C", "/m"] and call is not None:
        assert call["repo_dir"] == "/m" and call["event"] == argv[4]
    if "--budget" in argv:
        assert call is not None and call["budget"] == "900" and call["argument"] is None


def test_a_symlinked_settings_file_stays_a_symlink(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}')
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.symlink_to(dotfiles)
    install_claude_code(memory_repo, settings)
    assert settings.is_symlink() and "hook claude-code Stop" in dotfiles.read_text()
    uninstall_claude_code(settings)
    assert settings.is_symlink() and json.loads(dotfiles.read_text()) == {"model": "opus"}


def test_hook_context_fits_claude_codes_inline_limit() -> None:
    from autopoiesis.integrations.claude_code.hooks import fit_inline

    sections = ["<!-- system -->\nhead"] + [f"<!-- knowledge:k{i}.md -->\n" + "x" * 3000 for i in range(5)]
    prompt = "\n\n".join(sections)
    text, dropped = fit_inline(prompt)
    assert len(text) <= 10_000 and dropped == 2 and text == "\n\n".join(sections[:4])
    assert fit_inline("short") == ("short", 0)
    huge, dropped = fit_inline("<!-- identity:SOUL.md -->\n" + "line\n" * 5000)
    assert len(huge) <= 10_000 and huge.endswith("cut to fit the hook's 10,000 characters]") and dropped == 0
