"""The subprocess git runner (autopoiesis.git.runner): uncommitted files, batched blob reads, staged changes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

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


# ── a calling git's repository variables ──
_STREAM = (
    b'{"event":"session_start","session_id":"ses_hook1","ts":"2026-03-01T10:00:00Z"}\n'
    b'{"event":"message","session_id":"ses_hook1","role":"user",'
    b'"content":"remember that the staging db runs on port 5433","ts":"2026-03-01T10:00:05Z"}\n'
    b'{"event":"session_end","session_id":"ses_hook1","ts":"2026-03-01T10:01:00Z"}\n'
)


def _code_repo(tmp_path: Path) -> Path:
    code = tmp_path / "code"
    subprocess.run(["git", "init", "-q", str(code)], check=True)
    (code / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "a.txt"], cwd=code, check=True)
    subprocess.run(["git", "commit", "-qm", "code: first"], cwd=code, check=True)
    return code


def _tree(repo: Path, rev: str = "HEAD") -> set[str]:
    out = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev], cwd=repo, capture_output=True, text=True
    )
    return set(out.stdout.split())


def test_a_capture_run_by_a_code_repository_s_hook_commits_to_the_memory_repo(
    memory_repo: Any, tmp_path: Path
) -> None:
    """A code repository's pre-commit hook that captures a session: for a commit of some
    paths git hands its hooks GIT_INDEX_FILE, a temporary index of the code repository.
    autopoiesis's git inherited it and staged the transcript there; now the code
    repository commits what it was committing and the memory repo gets the session."""
    import sys

    code = _code_repo(tmp_path)
    stream = tmp_path / "stream.jsonl"
    stream.write_bytes(_STREAM)
    hook = code / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        f"#!/bin/sh\nexec {sys.executable} -m autopoiesis -C {memory_repo.root} capture "
        f"< {stream} > {tmp_path / 'capture.out'} 2>&1\n"
    )
    hook.chmod(0o755)
    (code / "a.txt").write_text("a, changed\n")
    (code / "b.txt").write_text("b\n")
    subprocess.run(["git", "add", "b.txt"], cwd=code, check=True)
    done = subprocess.run(
        ["git", "commit", "-qm", "code: a changed", "a.txt"], cwd=code, capture_output=True
    )
    assert done.returncode == 0, (done.stderr, (tmp_path / "capture.out").read_text())
    log = subprocess.run(["git", "log", "--format=%s"], cwd=code, capture_output=True, text=True)
    assert log.stdout.split("\n")[:2] == ["code: a changed", "code: first"]
    assert _tree(code) == {"a.txt"}  # b.txt stays staged, as git commit a.txt leaves it
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"], cwd=code, capture_output=True, text=True
    )
    assert staged.stdout.split() == ["b.txt"]
    mine = _tree(memory_repo.root)
    assert any(p.startswith("raw/conversations/") and "ses_hook1" in p for p in mine), mine
    assert "a.txt" not in mine and "b.txt" not in mine


def test_a_git_dir_exported_by_the_calling_git_is_not_the_memory_repo(
    memory_repo: Any, tmp_path: Path
) -> None:
    """`git bisect run` and `git rebase --exec` export GIT_DIR: a capture run under them
    committed the transcript and its knowledge into that repository."""
    import os
    import sys

    code = _code_repo(tmp_path)
    env = {**os.environ, "GIT_DIR": str(code / ".git"), "GIT_WORK_TREE": str(code)}
    done = subprocess.run(
        [sys.executable, "-m", "autopoiesis", "-C", str(memory_repo.root), "capture"],
        input=_STREAM,
        cwd=code,
        env=env,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    log = subprocess.run(["git", "log", "--format=%s"], cwd=code, capture_output=True, text=True)
    assert log.stdout.split("\n")[0] == "code: first"
    assert _tree(code) == {"a.txt"}
    assert any("ses_hook1" in p for p in _tree(memory_repo.root))


def test_the_memory_repo_s_own_hook_keeps_its_index(
    memory_repo: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The variables stay when they describe the repository git runs in: the memory repo's
    pre-commit hook reads the index git is committing (a temporary one for a commit of
    some paths). From another repository's folder they are left out."""
    code = _code_repo(tmp_path)
    monkeypatch.setenv("GIT_INDEX_FILE", str(memory_repo.root / ".git" / "next-index-1.lock"))
    monkeypatch.chdir(memory_repo.root)  # where git runs the memory repo's hooks
    assert coregit.repository_env(memory_repo.root) is None  # this process's, whole
    monkeypatch.chdir(code)
    left = coregit.repository_env(memory_repo.root)
    assert left is not None and "GIT_INDEX_FILE" not in left and "PATH" in left
    monkeypatch.setenv("GIT_DIR", str(memory_repo.root / ".git"))  # named, from anywhere
    assert coregit.repository_env(memory_repo.root) is None
    assert "GIT_DIR" not in (coregit.repository_env(code) or {})
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert coregit.repository_env(code) is None  # nothing set: nothing to leave out


def test_the_list_of_repository_variables_is_git_s_own() -> None:
    out = subprocess.run(
        ["git", "rev-parse", "--local-env-vars"], capture_output=True, text=True, check=True
    )
    assert set(out.stdout.split()) <= coregit.LOCAL_ENV_VARS


def test_gitpython_reads_the_memory_repo_under_another_repository_s_variables(
    memory_repo: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """GitPython's git processes take this process's environment whole (it pins GIT_DIR
    itself, but keeps an inherited GIT_OBJECT_DIRECTORY, as a server's pre-receive hook
    sets for its quarantine): `show --at` and the explore branches looked for the memory
    repo's objects in another repository. Its variables are pinned to the memory repo's
    own."""
    from autopoiesis.git.repo import MemoryGit

    code = _code_repo(tmp_path)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=memory_repo.root, capture_output=True, text=True
    ).stdout.strip()
    monkeypatch.chdir(code)
    monkeypatch.setenv("GIT_DIR", str(code / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(code / ".git" / "index"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(code / ".git" / "objects"))
    g = MemoryGit(memory_repo)
    commit = g.gitpython.commit("HEAD")
    assert commit.hexsha == head and commit.message.startswith("maintenance: initialize")
    assert g.gitpython.git.rev_parse("HEAD") == head
