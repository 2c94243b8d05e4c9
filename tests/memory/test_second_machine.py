"""A second machine: a clone of a remote whose HEAD names a branch it lacks (a plain
`git init --bare` says master) gets the remote's memory from `init`, and `sync` never
starts a second memory beside it. Real git, a bare remote over file://."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import AutopoiesisError, SyncError
from autopoiesis.memory.initialize import init_memory_repo
from autopoiesis.memory.sync import sync_once

pytestmark = pytest.mark.slow


def _git(where: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(
        ["git", *args], cwd=where, capture_output=True, text=True, check=check
    ).stdout.strip()


def _memory_on_main_and_a_master_head(tmp: Path) -> tuple[MemoryRepo, Path]:
    a = MemoryRepo(init_memory_repo(tmp / "a", build_index=False).root)
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "master", str(remote)], check=True)
    _git(a.root, "remote", "add", "origin", remote.as_uri())
    sync_once(a)
    assert _git(remote, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    return a, remote


def _empty_clone(remote: Path, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", remote.as_uri(), str(where)], capture_output=True)
    assert _git(where, "rev-parse", "-q", "--verify", "HEAD", check=False) == ""  # no commit
    return where


def test_init_on_an_empty_clone_checks_out_the_remotes_memory(tmp_path: Path) -> None:
    a, remote = _memory_on_main_and_a_master_head(tmp_path)
    b = _empty_clone(remote, tmp_path / "b")
    report = init_memory_repo(b, build_index=False)
    assert report.checked_out == "main"
    assert any("origin/main" in w for w in report.warnings)
    assert not report.changed and report.commit is None  # the memory is the remote's
    assert _git(b, "rev-parse", "HEAD") == _git(a.root, "rev-parse", "HEAD")
    assert _git(b, "rev-parse", "--abbrev-ref", "main@{upstream}") == "origin/main"
    # and the two machines now exchange what they write
    (b / "knowledge" / "reference" / "from-b.md").write_text("# From B\n", encoding="utf-8")
    _git(b, "add", "-A")
    _git(b, "commit", "-qm", "memory: from b")
    sync_once(MemoryRepo(b))
    sync_once(a)
    assert (a.root / "knowledge" / "reference" / "from-b.md").is_file()


def test_init_stops_when_the_remote_holds_several_memories(tmp_path: Path) -> None:
    a, remote = _memory_on_main_and_a_master_head(tmp_path)
    _git(a.root, "push", "-q", "origin", "main:other")
    b = _empty_clone(remote, tmp_path / "b")
    with pytest.raises(AutopoiesisError, match="origin/main, origin/other"):
        init_memory_repo(b, build_index=False)
    assert _git(b, "rev-parse", "-q", "--verify", "HEAD", check=False) == ""


@pytest.mark.parametrize("pull", [True, False])
def test_sync_refuses_to_start_a_second_memory_on_the_remote(tmp_path: Path, pull: bool) -> None:
    """What an `init` of an empty clone used to make: a memory of its own on master."""
    _, remote = _memory_on_main_and_a_master_head(tmp_path)
    c = MemoryRepo(init_memory_repo(tmp_path / "c", build_index=False).root)
    _git(c.root, "branch", "-m", "main", "master")
    _git(c.root, "remote", "add", "origin", remote.as_uri())
    with pytest.raises(SyncError, match="holds a memory on main but has no branch master"):
        sync_once(c, pull=pull)
    assert _git(remote, "for-each-ref", "--format=%(refname)") == "refs/heads/main"


def test_sync_still_creates_the_branch_on_an_empty_remote(tmp_path: Path) -> None:
    a = MemoryRepo(init_memory_repo(tmp_path / "a", build_index=False).root)
    _git(a.root, "branch", "-m", "main", "master")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    _git(a.root, "remote", "add", "origin", remote.as_uri())
    sync_once(a)
    assert _git(remote, "for-each-ref", "--format=%(refname)") == "refs/heads/master"
