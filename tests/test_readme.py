"""The README's Python examples run as written, in order, against `autopoiesis init ~/memory`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(
        r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), flags=re.S | re.M
    )


def test_readme_python_examples_run_as_written(tmp_path: Path) -> None:
    blocks = python_blocks()
    assert len(blocks) >= 2
    env = {**os.environ, "HOME": str(tmp_path)}
    init = subprocess.run(
        [sys.executable, "-m", "autopoiesis", "init", "~/memory".replace("~", str(tmp_path))],
        capture_output=True,
        text=True,
        env=env,
    )
    assert init.returncode == 0, init.stderr
    outputs = []
    for block in blocks:
        proc = subprocess.run(
            [sys.executable, "-c", block], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        assert proc.returncode == 0, f"{block}\n{proc.stderr}"
        outputs.append(proc.stdout)
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=tmp_path / "memory", capture_output=True, text=True
    ).stdout
    assert (
        "conversation: read-all-open-issues-and-summarise-them" in log
    )  # the capture example committed
    assert not (tmp_path / "~").exists()  # "~/memory" was expanded, not taken literally
