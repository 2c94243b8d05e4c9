"""Every writer of knowledge files commits what it wrote, and only that, under its own
message, while another writes the same files: an agent's `remember` (MCP), the
pre-compaction flush, the pruner, `autopoiesis mv`. Each race is played for real: the
first writer has written and waits for the git lock (held here by the test, as a
capture's transcript commit holds it), the second starts then. Before, the first had let
the writer's lock go between its write and its commit: the second wrote the same file
meanwhile, and the first commit carried the second's entry under the first's message (the
second's commit then had nothing of it left to commit). Now every writer holds the
writer's lock from its write to its commit (`KnowledgeWriter.commit`), and the second
writes after it."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.mcp.tools import MemoryTools
from autopoiesis.memory.facade import Memory
from tests.knowledge.helpers import Waits


def _race(repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch, **writers: Callable[[], Any]):
    """Run the two WRITERS (first, second) as described above; what each returned (or
    raised), and which lock the second waited for."""
    (first_name, first), (second_name, second) = writers.items()
    waits = Waits(monkeypatch)
    results: dict[str, Any] = {}

    def run(name: str, write: Callable[[], Any]) -> None:
        try:
            results[name] = write()
        except Exception as exc:  # the assertions name it
            results[name] = exc

    git_lock = repo.lock("git")
    assert git_lock.acquire()
    try:
        one = waits.start(first_name, run, first_name, first)
        assert waits.until_waiting(first_name) == "git", results  # written, its commit waiting
        two = waits.start(second_name, run, second_name, second)
        waited = waits.until_waiting(second_name)
    finally:
        git_lock.release()
    one.join()
    two.join()
    return results, waited


def _count(git, repo: MemoryRepo, since: str) -> int:
    """How many commits were made after SINCE."""
    return int(git(repo, "rev-list", "--count", f"{since}..HEAD").stdout)


def _cited(git, repo: MemoryRepo, sha: str) -> set[str]:
    """The citations (`(via X)`) of the lines the commit SHA adds."""
    diff = git(repo, "show", "--format=", sha).stdout
    return {
        m
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
        for m in re.findall(r"\(via ([^)\s]+)\)", line)
    }


def _remember(root: Path, path: str, fact: str, source: str) -> Callable[[], Any]:
    """An agent's `remember` through the MCP tools of a process of its own."""

    def write() -> Any:
        tools = MemoryTools(Memory(MemoryRepo(root)))
        try:
            return tools.remember(path, fact, source=source)
        finally:
            tools.close()

    return write


def _two_commits_apart(git, repo: MemoryRepo, base: str, waited: str | None) -> None:
    """A commit a writer since BASE, nothing left uncommitted, and the second writer
    waited for the writer's lock (WAITED): it wrote after the first's commit."""
    assert _count(git, repo, base) == 2
    assert git(repo, "status", "--porcelain").stdout == ""
    assert waited == "knowledge-writer"


def _head(git, repo: MemoryRepo) -> str:
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def test_two_remembers_at_once_commit_each_its_own_entry(
    memory_repo: MemoryRepo, git, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = "knowledge/reference/billing.md"
    base = _head(git, memory_repo)
    results, waited = _race(
        memory_repo,
        monkeypatch,
        first=_remember(memory_repo.root, note, "Invoices close on the 5th.", "ses_one"),
        second=_remember(memory_repo.root, note, "Refunds need a ticket number.", "ses_two"),
    )
    assert all(isinstance(r, dict) and r["status"] == "added" for r in results.values()), results
    one, two = results["first"]["commit"], results["second"]["commit"]
    assert one and two and one != two
    assert _cited(git, memory_repo, one) == {"mcp:ses_one"}
    assert _cited(git, memory_repo, two) == {"mcp:ses_two"}
    _two_commits_apart(git, memory_repo, base, waited)


def test_a_pre_compaction_flush_commits_only_its_own_notes(
    memory_repo: MemoryRepo, tmp_path: Path, git, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autopoiesis.integrations.claude_code.hooks import flush_from_summary
    from autopoiesis.knowledge.flush import FLUSH_BEGIN, FLUSH_END

    summary = f"Summary.\n{FLUSH_BEGIN}\n## memory\n- Keep pg-3 as the database.\n{FLUSH_END}\n"
    log = tmp_path / "session.jsonl"
    row = {"type": "user", "isCompactSummary": True, "message": {"content": summary}}
    log.write_text(json.dumps(row) + "\n", encoding="utf-8")
    base = _head(git, memory_repo)
    results, waited = _race(
        memory_repo,
        monkeypatch,
        flush=lambda: flush_from_summary(MemoryRepo(memory_repo.root), "s1", str(log)),
        remember=_remember(memory_repo.root, MEMORY_FILE, "Deploys go out on Tuesdays.", "ses_two"),
    )
    flushed, remembered = results["flush"], results["remember"]
    assert isinstance(flushed, dict) and flushed["status"] == "flushed", flushed
    assert isinstance(remembered, dict) and remembered["status"] == "added", remembered
    assert flushed["commit"] and remembered["commit"]
    assert "mcp:ses_two" not in _cited(git, memory_repo, flushed["commit"])
    assert _cited(git, memory_repo, flushed["commit"])  # its own note is in it
    assert _cited(git, memory_repo, remembered["commit"]) == {"mcp:ses_two"}
    _two_commits_apart(git, memory_repo, base, waited)


def test_the_pruner_commits_only_what_it_moved(
    memory_repo: MemoryRepo, git, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.prune import MemoryPruner
    from autopoiesis.knowledge.writer import KnowledgeWriter

    config = memory_repo.root / "memory-config.yaml"
    text = config.read_text(encoding="utf-8")
    assert "  memory_line_cap: 200 " in text
    config.write_text(text.replace("  memory_line_cap: 200 ", "  memory_line_cap: 20 "))
    # MEMORY.md over its cap, as a hand edit or a merge leaves it
    writer = KnowledgeWriter(memory_repo)
    writer.memory_line_limit = lambda: 10**6  # type: ignore[method-assign]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    writer.apply(
        [
            KnowledgeChange(
                MEMORY_FILE,
                "append",
                "Lessons Learned",
                f"Lesson number {i} about topic {i * 7}",
                Provenance("raw/conversations/a.md", t0 + timedelta(hours=i), "t@1", "ses_old"),
            )
            for i in range(30)
        ]
    )
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "an over-cap MEMORY.md", "--no-verify")
    base = _head(git, memory_repo)

    def prune() -> Any:
        with MemoryPruner(MemoryRepo(memory_repo.root)) as pruner:
            return pruner.prune_memory().commit

    results, waited = _race(
        memory_repo,
        monkeypatch,
        prune=prune,
        remember=_remember(memory_repo.root, MEMORY_FILE, "Deploys go out on Tuesdays.", "ses_two"),
    )
    pruned, remembered = results["prune"], results["remember"]
    assert isinstance(pruned, str), pruned
    assert isinstance(remembered, dict) and remembered["commit"], remembered
    assert "mcp:ses_two" not in _cited(git, memory_repo, pruned)
    assert "mcp:ses_two" in _cited(git, memory_repo, remembered["commit"])
    # and the trim of MEMORY.md is the pruner's, not committed as part of the `remember`
    assert MEMORY_FILE in git(memory_repo, "show", "--name-only", "--format=", pruned).stdout
    _two_commits_apart(git, memory_repo, base, waited)


def test_mv_commits_the_move_and_not_an_entry_written_meanwhile(
    memory_repo: MemoryRepo, git, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autopoiesis.knowledge.rename import move_note

    for rel, text in {
        "knowledge/people/ann.md": "# Ann\n\n- Billing lead.\n",
        "knowledge/reference/billing.md": "# Billing\n\n## Notes\n- ask [[ann]]\n",
    }.items():
        (memory_repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (memory_repo.root / rel).write_text(text, encoding="utf-8")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "notes")
    base = _head(git, memory_repo)
    note = "knowledge/reference/billing.md"
    results, waited = _race(
        memory_repo,
        monkeypatch,
        mv=lambda: (
            move_note(
                MemoryRepo(memory_repo.root),
                "knowledge/people/ann.md",
                "knowledge/people/ann-smith",
            ).commit
        ),
        remember=_remember(memory_repo.root, note, "Invoices close on the 5th.", "ses_two"),
    )
    moved, remembered = results["mv"], results["remember"]
    assert isinstance(moved, str), moved
    assert isinstance(remembered, dict) and remembered["commit"], remembered
    assert "Invoices close" not in git(memory_repo, "show", "--format=", moved).stdout
    assert _cited(git, memory_repo, remembered["commit"]) == {"mcp:ses_two"}
    # nor the move's rewritten link in the entry's commit
    entry_diff = git(memory_repo, "show", "--format=", remembered["commit"]).stdout
    assert not [line for line in entry_diff.splitlines() if line[:1] in "+-" and "ann" in line]
    assert "[[ann-smith|ann]]" in git(memory_repo, "show", f"{moved}:{note}").stdout
    _two_commits_apart(git, memory_repo, base, waited)


def test_the_writers_lock_is_taken_again_by_its_holder_and_waited_for_by_others(
    memory_repo: MemoryRepo,
) -> None:
    """A FileLock taken twice by one thread waits for itself for ever (flock knows no
    threads): `mv`'s undo of a refused commit, or the pruner run inside a merge that holds
    the writer's lock, would hang. The writer's lock counts its holder's takes; another
    thread (as another process) finds it held until the outermost take lets go."""
    outer, inner = memory_repo.writer_lock(), memory_repo.writer_lock()
    assert outer.acquire(timeout=0)
    try:
        assert inner.acquire(timeout=0)  # not a wait on itself
        inner.release()
        other: list[bool] = []

        def try_it() -> None:
            lock = memory_repo.writer_lock()
            other.append(lock.acquire(timeout=0))
            lock.release()

        thread = threading.Thread(target=try_it)
        thread.start()
        thread.join()
        assert other == [False]  # still held by the outer take
    finally:
        outer.release()
    again = memory_repo.writer_lock()
    assert again.acquire(timeout=0)
    again.release()


def test_a_forked_child_takes_the_writers_lock_as_another_process_does(
    memory_repo: MemoryRepo,
) -> None:
    """A child forked while its parent's thread held the writer's lock inherited the
    count of that thread (its own thread may have the same id) and took the lock as if it
    were its holder, writing beside the parent. The child starts with no takes."""
    import os

    lock = memory_repo.writer_lock()
    assert lock.acquire(timeout=0)
    try:
        pid = os.fork()
        if pid == 0:  # the child: the lock is the parent's
            child = memory_repo.writer_lock()
            os._exit(0 if not child.acquire(timeout=0) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        lock.release()
    assert os.waitstatus_to_exitcode(status) == 0
