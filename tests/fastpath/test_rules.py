"""Which argument lists take the hook fast path (autopoiesis.fastpath.rules.parse_hook_argv),
and which one is the MCP server the daemon starts warm (mcp_call)."""

from __future__ import annotations

import pytest

from autopoiesis.fastpath.rules import mcp_call, parse_hook_argv


@pytest.mark.parametrize(
    "argv, fast",
    [
        (["-C", "/m", "hook", "claude-code", "Stop"], True),
        (["-C/m", "hook", "claude-code", "Stop"], True),
        (["hook", "claude-code", "UserPromptSubmit", "--budget", "900"], True),
        (["-C", "/m", "hook", "codex", "notify", '{"type": "x"}'], True),
        (["-C", "/m", "hook", "import", "claude-code:a"], False),
        (["-C", "/m", "hook", "claude-code", "Stop", "extra"], False),
        (["-C", "/m", "hook", "claude-code", "Stop", "--help"], False),
        (["-C", "/m", "search", "x"], False),
        (["hook", "claude-code"], False),
    ],
)
def test_which_calls_take_the_hook_fast_path(argv: list[str], fast: bool) -> None:
    call = parse_hook_argv(argv)
    assert (call is not None) is fast
    if argv[0].startswith("-C") and call is not None:
        assert call["repo_dir"] == "/m" and call["event"] == argv[argv.index("hook") + 2]
    if "--budget" in argv:
        assert call is not None and call["budget"] == "900" and call["argument"] is None


@pytest.mark.parametrize(
    "argv, warm",
    [
        (["mcp"], True),
        (["-C", "/m", "mcp"], True),
        (["-C/m", "mcp"], True),
        (["-C", "/m", "mcp", "--help"], False),
        (["-C", "/m", "mcp", "extra"], False),
        (["-C", "/m", "search", "mcp"], False),
        ([], False),
    ],
)
def test_only_the_bare_mcp_command_is_started_by_the_daemon(argv: list[str], warm: bool) -> None:
    assert mcp_call(argv) is warm
