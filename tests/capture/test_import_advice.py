"""Exit codes and advice of `autopoiesis import` for a file that holds no session."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import PROJECT_ROOT


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # aider writes local time
    time.tzset()


def test_cli_exits_non_zero_with_the_reason_for_a_file_without_a_session(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    empty_aider = tmp_path / ".aider.chat.history.md"
    empty_aider.write_text(
        "\n# aider chat started at 2025-10-20 21:49:17\n\n> Aider v0.86.1  \n\n#### /add x.py  \n"
    )
    notes = tmp_path / "notes.md"
    notes.write_text("# My notes\n\nNothing to see.\n")
    env = {
        "PYTHONPATH": str(PROJECT_ROOT),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TZ": "UTC",
    }
    for f, reason in ((empty_aider, "none with a message"), (notes, "text that is not JSON")):
        out = subprocess.run(
            [sys.executable, "-m", "autopoiesis", "-C", str(memory_repo.root), "import", str(f)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert out.returncode == 1, out.stderr
        assert reason in out.stderr and "Traceback" not in out.stderr
        assert "--format claude-code" not in out.stderr
