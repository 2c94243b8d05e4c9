"""The subprocess git runner (autopoiesis.git.runner): uncommitted files, batched blob reads, staged changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from autopoiesis.git import runner as coregit


def test_uncommitted_sees_untracked_and_staged_files(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    conv = tmp_path / "raw" / "conversations"
    conv.mkdir(parents=True)
    (conv / "a.md").write_text("a\n")
    (conv / "b.md").write_text("b\n")
    (conv / "c.md").write_text("c\n")
    subprocess.run(["git", "add", "raw/conversations/c.md"], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-qm", "c"], cwd=tmp_path, check=True)
    subprocess.run(
        ["git", "add", "raw/conversations/b.md"], cwd=tmp_path, check=True
    )  # staged, never committed
    assert coregit.uncommitted(tmp_path, ["raw/conversations"]) == [
        "raw/conversations/a.md",
        "raw/conversations/b.md",
    ]
    blobs = coregit.cat_file_batch(
        tmp_path, [":raw/conversations/b.md", "HEAD:raw/conversations/c.md", ":nope.md"]
    )
    assert blobs == {
        ":raw/conversations/b.md": b"b\n",
        "HEAD:raw/conversations/c.md": b"c\n",
        ":nope.md": None,
    }
    changes = coregit.staged_changes(tmp_path)
    assert [(c.status, c.path) for c in changes] == [("A", "raw/conversations/b.md")]


def _served_remote(tmp_path: Path) -> Path:
    """A bare repository with one commit on main, in tmp_path/served/."""
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    (work / "a.md").write_text("a\n")
    subprocess.run(["git", "add", "a.md"], cwd=work, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"],
        cwd=work,
        check=True,
    )
    bare = tmp_path / "served" / "memory.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare


def test_a_remote_command_whose_connection_dropped_runs_once_more(tmp_path: Path) -> None:
    from autopoiesis.testing.git_http import GitHTTPServer

    bare = _served_remote(tmp_path)
    with GitHTTPServer(bare.parent) as server:
        url = server.url(bare.name)
        server.drop_next(1)  # a proxy that closed the first connection without an answer
        done = coregit.call(None, "ls-remote", "--heads", url, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [_head(bare), "refs/heads/main"]
        assert server.dropped == 1

        server.drop_next(5)  # down for longer than one retry: git's reason, after two tries
        done = coregit.call(tmp_path / "work", "fetch", "-q", url, text=True)
        assert done.returncode != 0 and coregit.is_transient(done.stderr), done.stderr
        assert server.dropped == 3  # the first request of each of the two tries
        assert server.errors == []


def test_a_remote_that_refuses_for_good_is_asked_once(tmp_path: Path) -> None:
    from autopoiesis.testing.git_http import GitHTTPServer

    bare = _served_remote(tmp_path)
    with GitHTTPServer(bare.parent) as server:
        server.url(bare.name)
        before = server.requests
        missing = f"http://127.0.0.1:{server.port}/nothing-here.git"
        done = coregit.call(None, "ls-remote", missing, text=True)
        assert done.returncode != 0 and not coregit.is_transient(done.stderr), done.stderr
        assert server.requests - before == 1  # a wrong address is not worth a second try


def test_the_command_is_found_after_gits_own_options() -> None:
    assert coregit._subcommand(["-c", "a=b", "-C", "x", "fetch", "origin"]) == "fetch"
    assert coregit._subcommand(["--no-optional-locks", "status"]) == "status"


def _head(bare: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(bare), "rev-parse", "main"], capture_output=True, text=True, check=True
    ).stdout.strip()
