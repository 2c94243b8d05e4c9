"""The CLI in the environments a real machine gives it: an output that cannot hold every
character, Ctrl-C in the middle of a command, a reader that goes away early, no git on PATH. Each gets a
message saying what happened (or, for the reader, nothing), never a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import PROJECT_ROOT, Cli


def test_an_output_that_cannot_hold_a_character_shows_a_question_mark(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    """PYTHONIOENCODING=latin-1 (or a legacy 8-bit locale): memory content holds arrows and
    dashes the output cannot encode. A search died at its first such hit with a
    UnicodeEncodeError; it now shows `?` for the character and goes on."""
    note = memory_repo.root / "knowledge/facts/arrows.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Arrows\n\n- The zebrafish pipeline: fetch \u2192 build \u2192 ship.\n")
    r = cli("search", "zebrafish", repo=memory_repo, env={"PYTHONIOENCODING": "latin-1"},
            process=True, text=False)  # fmt: skip
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    assert b"fetch ? build ? ship" in r.stdout


def _process(repo: MemoryRepo, *args: str, **popen: Any) -> subprocess.Popen:
    """`autopoiesis -C REPO ARGS` as its own process, run from this checkout."""
    env = {
        **os.environ,
        "AUTOPOIESIS_NO_DAEMON": "1",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])
        ),
    }
    command = [sys.executable, "-P", "-m", "autopoiesis", "-C", str(repo.root), *args]
    return subprocess.Popen(command, env=env, **popen)


def test_ctrl_c_in_a_command_says_interrupted_and_exits_130(memory_repo: MemoryRepo) -> None:
    """Ctrl-C in the middle of a command: click turned it into a silent exit 130, so the
    user saw the command stop with no word of why."""
    proc = _process(
        memory_repo, "watch", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("deploy the service\n")
    proc.stdin.flush()
    assert proc.stdout.readline()  # its answer to the first message: it is in its loop
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "interrupted\n", err


def test_a_reader_gone_early_ends_the_command_quietly_and_well(
    memory_repo: MemoryRepo,
) -> None:
    """`autopoiesis search x | head -0`: the reader went away before the first line. click
    ended the command with exit 1 (failing a `set -o pipefail` script); a reader that has
    read all it wants is no failure of the command, as the CLI's own handler says."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = _process(memory_repo, "search", "memory", stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and b"Traceback" not in err, err


@pytest.mark.parametrize("command", [["verify"], ["explore", "list"]])
def test_git_missing_from_path_is_named_with_what_to_do(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path, command: list[str]
) -> None:
    """No git on PATH: `verify` (git run by autopoiesis itself) said "No such file or
    directory (git). Check the path and its permissions, and the free disk space.", and
    `explore list` (GitPython, which looks for git as it loads) died with an ImportError
    traceback. Both now say git is missing and what to do."""
    empty = tmp_path / "bin"
    empty.mkdir()
    r = cli(*command, repo=memory_repo, env={"PATH": str(empty)}, process=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr == (
        "error: git is not installed, or not on PATH: install it (or add the folder that holds "
        "it to PATH), then run this again.\n"
    )


@pytest.mark.parametrize("command", ["status", "doctor"])
def test_git_missing_from_path_is_said_once_by_status_and_doctor(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path, command: str
) -> None:
    """No git on PATH (a folder holding only python): `status` said "could not be read:
    No such file or directory (git)" for each of three parts and `doctor` "the check
    failed: ..." for five checks, never that git is missing or what to do. Each now says
    it once, with the parts it left unread, and the rest of the report still runs."""
    only_python = tmp_path / "bin"
    only_python.mkdir()
    (only_python / "python").symlink_to(sys.executable)
    r = cli(command, repo=memory_repo, env={"PATH": str(only_python)}, process=True)
    assert "Traceback" not in r.stderr, r.stderr
    assert "No such file or directory" not in r.stdout, r.stdout
    told = "install git (or add the folder that holds it to PATH), then run this again"
    if command == "status":
        assert r.returncode == 0
        assert [line for line in r.stdout.splitlines() if "git" in line] == [
            "git        not installed, or not on PATH: repo, extraction, remote could not be "
            f"read; {told}."
        ], r.stdout
        assert "knowledge  0 live entries" in r.stdout  # the parts without git still ran
    else:
        assert r.returncode == 1
        assert [line for line in r.stdout.splitlines() if line.startswith("problem     git")] == [
            "problem     git: not installed, or not on PATH: ignored, history, git hooks, "
            f"remote, operation could not be checked; {told}"
        ], r.stdout
        assert "config      memory-config.yaml is valid" in r.stdout


def test_a_memory_folder_that_is_a_symlink_loop_is_said_not_a_traceback(
    tmp_path: Path, cli
) -> None:
    """`-C` (or $AUTOPOIESIS_REPO, or `init`) naming a link that leads back to itself:
    every command, and the prompt hook, whose contract is to exit 0, ended in Python's
    "Symlink loop" traceback. Each says what is wrong; the hook still exits 0."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    loop = str(tmp_path / "a")
    prompt = '{"session_id": "x", "prompt": "hi", "cwd": "/tmp"}'
    hook = cli("-C", loop, "hook", "claude-code", "UserPromptSubmit", input=prompt)
    assert hook.returncode == 0 and "Traceback" not in hook.stderr
    for args, env in (
        (("-C", loop, "search", "x"), None),
        (("status",), {"AUTOPOIESIS_REPO": loop}),
        (("init", loop), None),
    ):
        proc = cli(*args, env=env)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "symbolic link" in proc.stderr and "loop" in proc.stderr
