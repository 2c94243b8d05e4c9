"""Two extractions at once in one memory repo: each commit holds exactly the entries of
the sessions its message names (`git log -S` and `git blame` are how a person recalls,
so a commit that says "session A" must not carry session B's entries)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.memory.facade import Memory
from tests.knowledge.helpers import DEMO, Waits, import_sessions


def _cited_in_commit(git, repo: MemoryRepo, sha: str) -> set[str]:
    """The sessions whose entries the commit SHA adds (its `+` lines' `(via ses_x)`)."""
    diff = git(repo, "show", "--format=", sha, "--", "knowledge").stdout
    return {
        m
        for line in diff.splitlines()
        if line.startswith("+")
        for m in re.findall(r"\(via (ses_\w+)\)", line)
    }


def test_two_extractions_at_once_commit_each_its_own_entries(
    memory_repo: MemoryRepo, tmp_path: Path, git, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first extraction wrote its entries, then waited for the git lock (held here by
    the test, as a capture's transcript commit holds it); the writer's lock was let go
    between a run's writes and its commit, so the second wrote the same journal and
    MEMORY.md meanwhile. Whichever committed first carried both sessions' entries under
    its own session's message, and the other's commit missed them. Now a run holds the
    writer's lock from its first write to its commit: the second writes after it."""
    paths = import_sessions(memory_repo, tmp_path, DEMO)
    imported = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
    waits = Waits(monkeypatch)
    results: dict[str, object] = {}

    def extract(transcript: str) -> None:
        try:
            results[transcript] = Memory(MemoryRepo(memory_repo.root)).extract([transcript]).commit
        except Exception as exc:  # the assertion below names it
            results[transcript] = exc

    git_lock = memory_repo.lock("git")
    assert git_lock.acquire()
    try:
        first = waits.start("first", extract, paths[0])
        assert waits.until_waiting("first") == "git"  # written, its commit waiting
        second = waits.start("second", extract, paths[1])
        # today: the second writes, then waits for the git lock too; fixed: it waits for the
        # first's locks before writing anything
        waits.until_waiting("second")
    finally:
        git_lock.release()
    first.join()
    second.join()
    assert all(isinstance(sha, str) for sha in results.values()), results
    assert git(memory_repo, "status", "--porcelain").stdout == ""  # nothing left behind
    commits = git(memory_repo, "log", "--format=%H", f"{imported}..HEAD").stdout.split()
    by_session = {}
    for sha in commits:
        message = git(memory_repo, "log", "-1", "--format=%B", sha).stdout
        named = {s for s, p in zip(("ses_a", "ses_b"), paths, strict=True) if p in message}
        by_session[frozenset(named)] = _cited_in_commit(git, memory_repo, sha)
    assert by_session == {frozenset({"ses_a"}): {"ses_a"}, frozenset({"ses_b"}): {"ses_b"}}
