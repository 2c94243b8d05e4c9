"""Hangs: a slow LLM never holds the git lock, every LLM call ends by its deadline, and a
capture's transcript commit never waits on a model. Real processes, a real loopback
server that trickles its answer one byte at a time, real git."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import LLMUnavailableError
from autopoiesis.git.repo import MemoryGit
from autopoiesis.llm import LLMClient
from autopoiesis.testing.openai_server import OpenAIServer, write_llm_config
from autopoiesis.testing.samples import closed_transcript

TRANSCRIPT = closed_transcript("ses_hang01", "Database Choice")

TRICKLE = {
    "trickle": 0.5,
    "content": "remember that the index is a cache",
}  # ~300 bytes: ~150 s in all


def _llm_repo(memory_repo: MemoryRepo, server: OpenAIServer, git, **llm) -> MemoryRepo:
    write_llm_config(memory_repo.root, server.base_url, **llm)
    git(memory_repo.root, "commit", "-qm", "maintenance: llm config", "--", "memory-config.yaml")
    return MemoryRepo(memory_repo.root)


@pytest.mark.slow
def test_a_trickling_answer_ends_at_the_calls_deadline(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    write_llm_config(tmp_path, openai_server.base_url, timeout_seconds=1, max_retries=1)
    openai_server.default_chat = lambda body: dict(TRICKLE)
    with LLMClient(MemoryRepo(tmp_path), backoff_base=0.01) as llm:
        assert (
            2.5 <= llm.deadline < 2.6
        )  # (timeout + 0.25 s margin) x (max_retries + 1) + the backoff
        t0 = time.monotonic()
        with pytest.raises(LLMUnavailableError, match="deadline of 2"):
            llm.complete("commit_message", "summarize")
        took = time.monotonic() - t0
    # the error names the deadline; the bound is only a hang guard: waited for, the trickle
    # takes ~150 s (and then answers, so the call would not have raised at all)
    assert took < 60, took


@pytest.mark.slow
def test_deadline_seconds_bounds_the_retries_too(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    write_llm_config(
        tmp_path, openai_server.base_url, timeout_seconds=5, max_retries=5, deadline_seconds=1
    )
    openai_server.default_chat = lambda body: {"status": 500, "headers": {"Retry-After": "0.4"}}
    with LLMClient(MemoryRepo(tmp_path)) as llm:
        with pytest.raises(LLMUnavailableError, match="deadline of 1 s"):
            llm.complete("gate", "x")
    # without the deadline: 6 attempts and 5 waits of 0.4 s; the count is the witness (a
    # busy machine stretches the clock, not the number of attempts that fit in 1 s)
    assert 1 <= len(openai_server.chat_bodies()) <= 3


@pytest.mark.slow
def test_slow_model_neither_blocks_commit_nor_a_concurrent_transcript_commit(
    memory_repo: MemoryRepo, openai_server: OpenAIServer, git
) -> None:
    """`autopoiesis commit` while its model has not answered: a capture's transcript commit
    made meanwhile (another process) does not wait for the model, and the commit, its model
    failing, ends with the deterministic subject.

    The server holds the model's answer until the capture is done (not a clock: a busy
    machine may take its time), then fails it; a capture that waited for the model would
    wait until the commit's deadline (~60 s) and finish after it. How a call ends at its
    deadline is test_a_trickling_answer_ends_at_the_calls_deadline's."""
    repo = _llm_repo(memory_repo, openai_server, git, timeout_seconds=60, max_retries=0)
    openai_server.default_chat = lambda body: {"status": 500, "message": "down"}
    openai_server.hold()
    mem = repo.memory_file
    mem.write_text(mem.read_text() + "- 2026-03-02: the index is a cache\n")
    rel = "raw/conversations/2026/03/01/2358-ses_hang01-database-choice.md"
    (repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (repo.root / rel).write_text(TRANSCRIPT)

    t0 = time.monotonic()
    commit = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "commit"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not openai_server.chat_bodies():  # the model is being asked now
            assert commit.poll() is None and time.monotonic() - t0 < 120, (
                "commit never called the model"
            )
            time.sleep(0.02)
        capture = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from autopoiesis.core.paths import MemoryRepo; "
                "from autopoiesis.git.repo import MemoryGit; g = MemoryGit(MemoryRepo(sys.argv[1])); "
                "print(g.commit_transcript(sys.argv[2], 'database-choice'))",
                str(repo.root),
                rel,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        model_still_asked = commit.poll() is None and openai_server.in_flight == 1
        openai_server.release()
        out, err = commit.communicate(timeout=120)
    finally:
        openai_server.release()
        if commit.poll() is None:
            commit.kill()
            commit.wait()
    assert capture.returncode == 0, capture.stderr
    assert commit.returncode == 0, err
    assert model_still_asked, "the transcript commit waited for the model"
    log = git(repo.root, "log", "--format=%s", "-3").stdout.splitlines()
    # the transcript is in a conversation: commit of its own (the capture's, or `autopoiesis
    # commit`'s first step, which commits finished transcripts before any knowledge)
    assert any(s.startswith("conversation: ") and s.endswith("database-choice") for s in log), log
    assert "memory: the index is a cache" in log  # the model failed: the deterministic subject
    assert git(repo.root, "status", "--porcelain").stdout == ""


def test_a_model_message_is_dropped_when_the_changes_moved_on(memory_repo: MemoryRepo) -> None:
    """The model is asked outside the lock; if the files change before the commit, its
    summary no longer describes them and the deterministic message is used for all."""
    g = MemoryGit(memory_repo)
    note = memory_repo.root / "knowledge/reference/a.md"
    note.write_text("# A\n- first\n")
    asked: list[str] = []

    def summarize(diff: str, ctype: str) -> str:
        asked.append(diff)
        (memory_repo.root / "knowledge/reference/b.md").write_text(
            "# B\n- written while the model thought\n"
        )
        return "describe only the first note in detail"

    result = g.commit_pending(summarize=summarize)
    assert asked and "b.md" not in asked[0]
    assert result.message.splitlines()[0] == "memory: first; written while the model thought"
    assert set(result.files) == {"knowledge/reference/a.md", "knowledge/reference/b.md"}

    note.write_text("# A\n- first\n- second\n")
    result = g.commit_pending(summarize=lambda diff, ctype: "add a second point to note A")
    assert result.message.splitlines()[0] == "memory: add a second point to note A"


def test_commit_pending_holds_no_lock_while_the_model_thinks(memory_repo: MemoryRepo) -> None:
    g = MemoryGit(memory_repo)
    (memory_repo.root / "knowledge/reference/a.md").write_text("# A\n- first\n")
    free: list[bool] = []

    def summarize(diff: str, ctype: str) -> str:
        lock = memory_repo.lock("git")
        free.append(lock.acquire(timeout=0))
        lock.release()
        return "note the first point of A"

    g.commit_pending(summarize=summarize)
    assert free == [True]


def test_commit_pending_commits_nothing_else_that_is_staged(memory_repo: MemoryRepo, git) -> None:
    rel = "raw/conversations/2026/03/01/2358-ses_hang01-database-choice.md"
    (memory_repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (memory_repo.root / rel).write_text(TRANSCRIPT)
    git(memory_repo.root, "add", rel)
    (memory_repo.root / "knowledge/reference/a.md").write_text("# A\n- first\n")
    result = MemoryGit(memory_repo).commit_pending()
    assert result.files == ("knowledge/reference/a.md",)
    shown = git(memory_repo.root, "show", "--name-only", "--format=", "HEAD").stdout.split()
    assert shown == ["knowledge/reference/a.md"]
    assert git(memory_repo.root, "diff", "--cached", "--name-only").stdout.split() == [rel]


def test_a_moved_knowledge_file_commits_both_sides(memory_repo: MemoryRepo, git) -> None:
    g = MemoryGit(memory_repo)
    src = memory_repo.root / "knowledge/reference/old.md"
    src.write_text("# Old\n- a fact that will be archived\n")
    g.commit_pending("memory: old note")
    (memory_repo.root / "archive").mkdir(exist_ok=True)
    os.replace(src, memory_repo.root / "archive/old.md")
    result = g.commit_pending()
    assert result.sha
    assert git(memory_repo.root, "status", "--porcelain").stdout == ""
