"""`autopoiesis clone`: a new machine gets every commit but only the recent transcripts'
files, searches at once, reads older transcripts from the remote when asked, indexes a
year it checks out later, and verifies from the history as cloned."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autopoiesis.capture.session import ConversationCapture, Session
from autopoiesis.core.paths import MemoryRepo


def session(repo: MemoryRepo, sid: str, when: datetime, line: str) -> str:
    cap = ConversationCapture(repo)
    s = Session(sid, started=when, model="m", channel="cli")
    cap.on_session_start(s)
    cap.on_message(s, "user", line, {"timestamp": when.isoformat()})
    closed = cap.on_session_end(s, ended=when)
    assert closed is not None and closed.commit
    return closed.path


@pytest.fixture
def remote(memory_repo: MemoryRepo, git, tmp_path: Path) -> tuple[Path, str, str]:
    """A bare remote holding a memory with a 2025 and a 2026 transcript."""
    old = session(memory_repo, "old1", datetime(2025, 6, 1, 9, tzinfo=UTC), "the walrus budget")
    new = session(memory_repo, "new1", datetime(2026, 2, 1, 9, tzinfo=UTC), "the heron deploy")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    git(bare, "config", "uploadpack.allowFilter", "true")
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    git(memory_repo, "push", "-q", f"file://{bare}", "HEAD:refs/heads/main")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    return bare, old, new


@pytest.mark.slow
def test_a_clone_holds_the_history_and_the_recent_files(remote, git, cli, tmp_path: Path) -> None:
    bare, old, new = remote
    dest = tmp_path / "laptop"
    done = cli("clone", f"file://{bare}", str(dest), "--since", "2026", process=True)
    assert done.returncode == 0, done.stderr
    assert "verify starts from the cloned history" in done.stdout
    assert (dest / new).is_file() and not (dest / old).exists()
    assert (dest / "knowledge" / "identity" / "USER.md").is_file()
    assert git(dest, "status", "--porcelain").stdout == ""
    tags = {line[:1] for line in git(dest, "ls-files", "-t", "--", "knowledge").stdout.splitlines()}
    assert tags == {"H"}  # every knowledge file checked out (S: left out by the sparse cone)
    # every commit is there, and an old transcript is read from the remote when asked
    assert (
        git(dest, "rev-list", "--count", "HEAD").stdout
        == git(bare, "rev-list", "--count", "HEAD").stdout
    )
    assert "walrus" in git(dest, "show", f"HEAD:{old}").stdout
    assert git(dest, "config", "feature.manyFiles").stdout.strip() == "true"
    assert git(dest, "config", "checkout.workers").stdout.strip() == "0"
    # the search index answers for what is checked out
    found = cli("search", "--json", "heron deploy", repo=dest, process=True)
    assert new in {r["path"] for r in json.loads(found.stdout)}
    # a year checked out later is searched too (no commit changed: the sparse state did)
    git(dest, "sparse-checkout", "add", "raw/conversations/2025")
    assert (dest / old).is_file()
    found = cli("search", "--json", "walrus budget", repo=dest, process=True)
    assert old in {r["path"] for r in json.loads(found.stdout)}
    # verify reads what came after the clone, not the history before it
    checked = cli("verify", "--json", repo=dest, process=True)
    assert json.loads(checked.stdout)["commits_checked"] == 0
    assert json.loads(checked.stdout)["ok"]


def test_clone_refuses_a_folder_that_is_not_empty(remote, cli, tmp_path: Path) -> None:
    bare, _, _ = remote
    dest = tmp_path / "busy"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    done = cli("clone", f"file://{bare}", str(dest))
    assert done.returncode == 1 and "not empty" in done.stderr
    assert "Traceback" not in done.stderr
    for since in ("last week", "2026-13", "2026-0", "26"):
        bad = cli("clone", f"file://{bare}", str(tmp_path / "x"), "--since", since)
        assert bad.returncode == 1 and "2026-03" in bad.stderr, since
        assert not (tmp_path / "x").exists()  # refused before anything was cloned


def test_clone_refuses_a_link_a_collaborator_pushed(memory_repo, git, cli, tmp_path) -> None:
    """`autopoiesis clone` of a memory whose `.gitignore` a collaborator replaced by a link
    to a file of the victim's (hooks off) appended init's ignore lines to that file. The
    clone is kept, not set up, and the error names the link and what to do."""
    outside = tmp_path / "dotfile"
    outside.write_text("mine\n")
    (memory_repo.root / ".gitignore").unlink()
    (memory_repo.root / ".gitignore").symlink_to(outside)
    git(memory_repo, "add", "-A")
    git(memory_repo, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "link")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(memory_repo.root), str(bare))
    dest = tmp_path / "laptop"
    done = cli("clone", f"file://{bare}", str(dest))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"into {dest.resolve()}, but did not set it up" in done.stderr
    assert f".gitignore -> {outside}" in done.stderr
    assert outside.read_text() == "mine\n"


@pytest.mark.slow
def test_a_clone_of_a_remote_whose_head_names_no_branch_is_still_partial(
    remote, git, cli, tmp_path: Path
) -> None:
    """docs/sync.md's remote is a plain `git init --bare`, whose HEAD says master while the
    memory is pushed to main. Cloned from there, the new machine had no commit when the
    checkout was chosen: every transcript was checked out whatever `--since` said, and
    verify got no checkpoint (init then switched to origin/main with a warning)."""
    bare, old, new = remote
    git(bare, "symbolic-ref", "HEAD", "refs/heads/master")
    dest = tmp_path / "laptop"
    done = cli("clone", f"file://{bare}", str(dest), "--since", "2026", process=True)
    assert done.returncode == 0, done.stderr
    assert "transcripts checked out from 2026 on" in done.stdout
    assert "verify starts from the cloned history" in done.stdout
    assert (dest / new).is_file() and not (dest / old).exists()
    assert git(dest, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "main"
    assert git(dest, "rev-parse", "--abbrev-ref", "main@{upstream}").stdout.strip() == "origin/main"
    assert git(dest, "status", "--porcelain").stdout == ""
