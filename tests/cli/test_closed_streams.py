"""Commands started with a standard stream closed (`<&-`, `>&-`: a shell, a harness or a
service manager may start one so): Python has None for it, and the hooks, `mcp`,
`watch`, `flush` and `forget --stdin` died with a traceback. Each now goes through
autopoiesis.core.streams: a hook exits 0 and logs why, any other command says stdin is
closed and what to pipe into it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import PROJECT_ROOT

START = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})


def _run(repo: MemoryRepo, args: str, redirect: str, data: str = "") -> subprocess.CompletedProcess:
    """`autopoiesis -C REPO ARGS` from a shell, with REDIRECT (`<&-`, `>&-`) applied and
    DATA piped in when stdin stays open."""
    env = {
        **os.environ,
        "AUTOPOIESIS_NO_DAEMON": "1",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])
        ),
    }
    return subprocess.run(
        [
            "sh",
            "-c",
            f'"$0" -P -m autopoiesis -C "$1" {args} {redirect}',
            sys.executable,
            str(repo.root),
        ],
        input=data,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _log(repo: MemoryRepo) -> list[dict]:
    path = repo.root / ".autopoiesis/logs/harness.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("hook", ["claude-code SessionStart", "codex SessionStart"])
def test_a_hook_with_stdin_closed_exits_0_and_logs_why(memory_repo: MemoryRepo, hook: str) -> None:
    r = _run(memory_repo, f"hook {hook}", "<&-")
    assert r.returncode == 0 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    row = _log(memory_repo)[-1]
    assert row["ok"] is False and "stdin is closed" in row["error"]


def test_a_hook_with_stdout_closed_exits_0_and_logs_why(memory_repo: MemoryRepo) -> None:
    r = _run(memory_repo, "hook claude-code SessionStart", ">&-", data=START)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    row = _log(memory_repo)[-1]
    assert row["ok"] is False and "stdout is closed" in row["error"]
    # with stdout open, the same call answers
    r = _run(memory_repo, "hook claude-code SessionStart", "", data=START)
    assert r.returncode == 0 and "additionalContext" in r.stdout
    assert _log(memory_repo)[-1]["ok"] is True


@pytest.mark.parametrize(
    ("args", "pipe"),
    [
        ("mcp", "an MCP client's requests"),
        ("watch", "the JSONL messages to watch"),
        ("flush", "the agent's reply"),
        ("forget -m leak -y --stdin", "the string to forget"),
        ("capture", "the events"),
    ],
)
def test_a_command_reading_stdin_says_it_is_closed(
    memory_repo: MemoryRepo, args: str, pipe: str
) -> None:
    r = _run(memory_repo, args, "<&-")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"stdin is closed; pipe {pipe}" in r.stderr


def test_search_batch_from_a_closed_stdin_is_a_usage_error(memory_repo: MemoryRepo) -> None:
    r = _run(memory_repo, "search --batch -", "<&-")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "stdin is closed; pipe the lines into it, or give --batch FILE." in r.stderr


def test_stderr_closed_is_no_crash(memory_repo: MemoryRepo) -> None:
    """A long command asks whether stderr is a terminal (to draw its progress bar): a
    closed one is not one. It died there (exit 1, its traceback lost with stderr)."""
    r = _run(memory_repo, "index rebuild", "2>&-")
    assert r.returncode == 0 and r.stdout.startswith("indexed ")


def test_a_command_reading_a_terminal_says_so_and_ends_at_ctrl_d(memory_repo: MemoryRepo) -> None:
    """`autopoiesis capture` typed at a shell with nothing piped in waited on the terminal
    without a word, and looked hung. On a terminal it now says what it reads and that
    Ctrl-D ends it; Ctrl-D (an empty read) ends it as an empty stream does."""
    import pty

    main, side = pty.openpty()
    env = {
        **os.environ,
        "AUTOPOIESIS_NO_DAEMON": "1",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])
        ),
    }
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "autopoiesis", "-C", str(memory_repo.root), "capture"],
        stdin=side,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    os.close(side)
    try:
        os.write(main, b"\x04")  # Ctrl-D at the start of a line: the terminal's end of input
        _, err = proc.communicate(timeout=120)
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    hint, *_ = err.splitlines()  # said before it reads anything
    assert "reading the events" in hint and "end with Ctrl-D" in hint, err
    assert "captured 0 of 0 events" in err and "Traceback" not in err


def test_a_pipe_gets_no_terminal_hint(memory_repo: MemoryRepo) -> None:
    r = _run(memory_repo, "capture", "")
    assert r.returncode == 0 and "Ctrl-D" not in r.stderr, r.stderr
