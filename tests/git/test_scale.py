"""git/scale.tune: the git settings a memory runs with at a team's size, written into the
clone's own .git/config, never over a value the user chose (in the clone or globally)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from autopoiesis.git.scale import SETTINGS, tune


def test_a_clone_gets_each_setting_once(tmp_path: Path, git) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert tune(tmp_path) == [f"{k}={v}" for k, v in SETTINGS]
    for key, value in SETTINGS:
        assert git(tmp_path, "config", "--local", key).stdout.strip() == value
    assert tune(tmp_path) == []  # nothing left to do


def test_the_users_own_choice_stays(tmp_path: Path, git, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "gitconfig"
    mine.write_text("[checkout]\n\tworkers = 1\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(mine))
    repo = tmp_path / "memory"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git(repo, "config", "--local", "core.splitIndex", "false")
    changed = tune(repo)
    assert changed == ["feature.manyFiles=true"]
    assert git(repo, "config", "checkout.workers").stdout.strip() == "1"
    assert git(repo, "config", "core.splitIndex").stdout.strip() == "false"
    assert git(repo, "config", "--local", "--get", "checkout.workers", check=False).stdout == ""
