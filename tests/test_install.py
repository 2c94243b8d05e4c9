"""Installed like a tool: the wheel built from this checkout installs into a fresh virtual
environment (what `pipx install` and `uv tool install` do), with its dependencies from the
package registry, and its `autopoiesis demo` runs the whole pipeline offline there, from
the packaged template, without the optional extras."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

# the user's own pip cache (the tests run with a HOME of their own): the second run does
# not fetch every dependency again
_PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")


def _run(*cmd: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=1500
    )
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.mark.slow
def test_the_wheel_installs_in_a_fresh_venv_and_runs_the_demo(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PIP_CACHE_DIR"] = _PIP_CACHE
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheels = tmp_path / "wheels"
    _run(
        sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, PROJECT_ROOT,
        cwd=tmp_path, env=env,
    )  # fmt: skip
    (wheel,) = wheels.glob("autopoiesis-*.whl")
    venv = tmp_path / "tool"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path, env=env)
    _run(venv / "bin" / "pip", "install", "-q", wheel, cwd=tmp_path, env=env)
    exe = venv / "bin" / "autopoiesis"
    # run from an unrelated folder: nothing of the checkout may be read
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    version = _run(exe, "--version", cwd=elsewhere, env=env).stdout
    assert version.startswith("autopoiesis ")
    demo = _run(exe, "demo", tmp_path / "demo-memory", cwd=elsewhere, env=env)
    assert "Traceback" not in demo.stderr
    assert (tmp_path / "demo-memory" / "raw" / "conversations").is_dir()
    assert (tmp_path / "demo-memory" / "knowledge" / "identity" / "USER.md").is_file()
    # the optional extras are not installed, and nothing needed them
    installed = _run(venv / "bin" / "pip", "list", "--format=freeze", cwd=tmp_path, env=env).stdout
    assert "wordllama==" not in installed.lower() and "jinja2==" not in installed.lower()
    status = _run(exe, "-C", tmp_path / "demo-memory", "status", cwd=elsewhere, env=env).stdout
    assert "sessions" in status and "transcripts" in status
