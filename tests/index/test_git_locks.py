"""The index's git reads never take .git/index.lock away from the user's own git."""

from __future__ import annotations

import threading

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.git.repo import MemoryGit
from autopoiesis.index.freshness import tree_state

pytestmark = pytest.mark.slow


def test_status_reads_never_block_a_concurrent_git_add(memory_repo: MemoryRepo, git) -> None:
    root = memory_repo.root
    for i in range(200):  # enough files that a refreshing status holds the lock a while
        (root / f"knowledge/reference/f{i}.md").write_text(f"# f{i}\n")
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            tree_state(root)
            MemoryGit(memory_repo).pending_changes()

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    failures = []
    try:
        for i in range(60):
            (root / f"knowledge/reference/f{i % 200}.md").write_text(f"# f{i} changed\n")
            proc = git(root, "add", "-A", "knowledge", check=False)
            if proc.returncode != 0:
                failures.append(proc.stderr)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == []
