"""The progress bar of the long commands: drawn on a terminal (a real pseudo-terminal
here), silent with --quiet and when stderr is not a terminal, where tqdm is not even
imported."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import PROJECT_ROOT, Cli


def _sessions(folder: Path, n: int) -> Path:
    folder.mkdir()
    for i in range(n):
        lines = [
            {
                "type": "user",
                "sessionId": f"sess-{i}",
                "timestamp": f"2025-03-0{1 + i % 9}T10:00:00Z",
                "message": {"role": "user", "content": f"question number {i}"},
            },
            {
                "type": "assistant",
                "sessionId": f"sess-{i}",
                "timestamp": f"2025-03-0{1 + i % 9}T10:00:05Z",
                "message": {"role": "assistant", "content": f"answer number {i}"},
            },
        ]
        (folder / f"s{i}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return folder


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT),
        "COLUMNS": "100",
        "TERM": "xterm",
    }


def _run_on_terminal(argv: list[str]) -> tuple[int, str]:
    """Run `autopoiesis ARGV` with stdout and stderr on a pseudo-terminal; its output."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "autopoiesis", *argv],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=_env(),
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_import_draws_a_bar_with_counts_and_rate_on_a_terminal(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    logs = _sessions(tmp_path / "logs", 3)
    code, out = _run_on_terminal(["-C", str(memory_repo.root), "import", str(logs)])
    assert code == 0, out
    assert "importing" in out
    assert "/3" in out  # the count of files
    assert "files/s" in out  # the rate
    assert out.count("imported raw/conversations/") == 3


@pytest.mark.slow
def test_quiet_draws_no_bar_even_on_a_terminal(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    logs = _sessions(tmp_path / "logs", 2)
    code, out = _run_on_terminal(["-C", str(memory_repo.root), "import", "--quiet", str(logs)])
    assert code == 0, out
    assert "importing" not in out
    assert out.count("imported raw/conversations/") == 2


def test_no_bar_and_no_tqdm_when_stderr_is_not_a_terminal(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    logs = _sessions(tmp_path / "logs", 2)
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('tqdm loaded:', 'tqdm' in sys.modules))\n"
        "from autopoiesis.cli import main\n"
        f"main(['-C', {str(memory_repo.root)!r}, 'import', {str(logs)!r}])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-P", "-c", script], capture_output=True, text=True, env=_env()
    )
    assert proc.returncode == 0, proc.stderr
    assert "tqdm loaded: False" in proc.stdout
    assert "importing" not in proc.stderr
    assert proc.stdout.count("imported raw/conversations/") == 2


def test_every_long_command_takes_quiet(cli: Cli) -> None:
    for command in (
        ["import"],
        ["extract"],
        ["replay"],
        ["index", "rebuild"],
        ["eval"],
        ["forget"],
    ):
        r = cli(*command, "--help")
        assert r.returncode == 0, r.stderr
        assert "--quiet" in r.stdout, command


def test_extract_reports_progress_per_transcript(memory_repo: MemoryRepo, cli: Cli) -> None:
    from autopoiesis.memory import Memory

    logs = memory_repo.root.parent / "logs"
    _sessions(logs, 3)
    cli("import", str(logs), repo=memory_repo, check=True)
    seen: list[tuple[int, int]] = []
    Memory(memory_repo).extract(
        pending=True, progress=lambda done, total, path: seen.append((done, total))
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_import_reports_progress_per_file(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    from autopoiesis.memory import Memory

    logs = _sessions(tmp_path / "logs", 4)
    seen: list[tuple[int, int]] = []
    Memory(memory_repo).import_files([logs], progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_quiet_shows_none_of_the_librarys_warnings(memory_repo: MemoryRepo, cli: Cli) -> None:
    """`extract -q` (and `replay -q`, hundreds of "entry not added" lines) printed the
    library's logged warnings though --quiet promises only errors and the result; without
    it they are still said."""
    day = memory_repo.root / "raw" / "conversations" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    (day / "0000-x-bad.md").write_bytes(b"---\nsession_id: x\n---\n\xff\xfe not UTF-8\n")
    loud = cli("extract", "--pending", repo=memory_repo, process=True)
    assert loud.returncode == 0 and "skipping unreadable transcript" in loud.stderr
    quiet = cli("extract", "--pending", "-q", repo=memory_repo, process=True)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert "0 extractions" in quiet.stdout
    as_json = cli("extract", "--pending", "--json", repo=memory_repo, process=True)
    assert "skipping unreadable transcript" in as_json.stderr  # JSON draws no bar, still warns
