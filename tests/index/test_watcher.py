"""In a long-lived process, search trusts inotify for "nothing changed" — and never
returns a stale result for it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index import SearchIndex

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="inotify is Linux-only"
)


def paths(index: SearchIndex, query: str) -> set[str]:
    return {r.path for r in index.search(query, 10)}


def test_every_kind_of_change_is_seen_between_searches(memory_repo: MemoryRepo, git) -> None:
    root = memory_repo.root
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
        assert "knowledge/reference/animals.md" not in paths(index, "quokka")
        # a process that searches once never pays for the watcher: it starts at the second search
        assert index.freshness._watcher is None
        assert "knowledge/reference/animals.md" not in paths(index, "quokka")
        watcher = index.freshness.change_watcher()
        assert watcher is not None
        assert watcher.verified

        # an uncommitted edit of a tracked file
        ref = root / "knowledge/reference/animals.md"
        ref.write_text("# Animals\n\n- The quokka lives on Rottnest Island\n")
        assert "knowledge/reference/animals.md" in paths(index, "quokka")
        # nothing changed: the watcher answers, no full check
        assert index.catch_up().indexed == 0
        assert watcher.verified

        # a new folder, created and filled at once
        deep = root / "knowledge/projects/zoo/notes"
        deep.mkdir(parents=True)
        (deep / "plan.md").write_text("# Plan\n\n- Build a wombat enclosure\n")
        assert "knowledge/projects/zoo/notes/plan.md" in paths(index, "wombat")
        # and a file written into that folder afterwards (its watch exists by now)
        (deep / "later.md").write_text("# Later\n\n- Feed the platypus at noon\n")
        assert "knowledge/projects/zoo/notes/later.md" in paths(index, "platypus")

        # commit, then reset --hard to before it: git's state moves, content reverts
        git(root, "add", "-A")
        git(root, "commit", "-qm", "zoo")
        assert "knowledge/projects/zoo/notes/plan.md" in paths(index, "wombat")
        git(root, "reset", "-q", "--hard", "HEAD~1")
        assert not {"knowledge/projects/zoo/notes/plan.md", "knowledge/reference/animals.md"} & (
            paths(index, "wombat") | paths(index, "quokka")
        )

        # a top-level content folder that did not exist when the watcher started
        subprocess.run(["rm", "-rf", str(root / "archive")], check=True)
        assert "archive/reference/old.md" not in paths(index, "pangolin")
        (root / "archive/reference").mkdir(parents=True)
        (root / "archive/reference/old.md").write_text("# Old\n\n- The pangolin note\n")
        assert "archive/reference/old.md" in paths(index, "pangolin")

        # a deletion
        (root / "archive/reference/old.md").unlink()
        assert "archive/reference/old.md" not in paths(index, "pangolin")


def test_branch_checkout_is_seen(memory_repo: MemoryRepo, git) -> None:
    root = memory_repo.root
    git(root, "checkout", "-q", "-b", "side")
    (root / "knowledge/reference/side.md").write_text("# Side\n\n- The narwhal branch fact\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "side")
    git(root, "checkout", "-q", "main")
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
        assert "knowledge/reference/side.md" not in paths(index, "narwhal")
        assert "knowledge/reference/side.md" not in paths(index, "narwhal")  # verified now
        git(root, "checkout", "-q", "side")
        assert "knowledge/reference/side.md" in paths(index, "narwhal")
