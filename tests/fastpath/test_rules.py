"""Which argument lists take the hook fast path (autopoiesis.fastpath.rules.parse_hook_argv),
and which one is the MCP server the daemon starts warm (mcp_call)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

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


@pytest.mark.parametrize(
    "args, collector",
    [
        (["compile", "what did we decide", "--dry-run"], False),
        (["search", "decide"], False),
        (["hook", "claude-code", "Stop"], False),
        (["status"], True),  # not a call the daemon answers: the collector stays on
    ],
)
def test_a_call_the_daemon_may_answer_runs_without_the_cycle_collector(
    memory_repo: Any, args: list[str], collector: bool
) -> None:
    """The light entry turns the cyclic garbage collector off for the one-shot calls
    (search, compile, the harness hooks), whose objects all go with the process, and
    freezes them at exit so that the interpreter's teardown does not run the collector
    over them after all; every other command keeps it. Run as `python -m autopoiesis`
    runs, reporting at exit (after the entry's own exit handlers)."""
    probe = (
        "import atexit, gc, runpy, sys\n"
        "atexit.register(lambda: sys.stderr.write(\n"
        "    f'collector={gc.isenabled()} frozen={gc.get_freeze_count() > 0}\\n'))\n"
        f"sys.argv = ['autopoiesis', '-C', {str(memory_repo.root)!r}, *{args!r}]\n"
        "runpy.run_module('autopoiesis', run_name='__main__')\n"
    )
    env = dict(os.environ, AUTOPOIESIS_NO_DAEMON="1")
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, input="{}", capture_output=True, text=True
    )
    assert f"collector={collector} frozen={not collector}" in done.stderr, done.stderr
