"""The harness session registry: a session seen again while it was imported is kept, a damaged cache reads as empty."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.integrations.sessions import SessionRegistry


def test_session_registry_keeps_a_session_seen_again_while_it_was_imported(
    memory_repo: MemoryRepo,
) -> None:
    registry = SessionRegistry(memory_repo)
    registry.touch("claude-code", "a", path="/x/a.jsonl")
    first = registry.get("claude-code:a")
    assert first is not None and first.path == "/x/a.jsonl"
    registry.forget("claude-code:a", seen="2000-01-01T00:00:00Z")  # seen again since: kept
    assert registry.get("claude-code:a") is not None
    registry.forget("claude-code:a", seen=first.seen)
    assert registry.get("claude-code:a") is None
    assert registry.idle(30) == []
    registry.path.write_text("{not json")  # a damaged cache reads as empty, and is rewritten
    registry.touch("codex", "t")
    assert [s.key for s in registry.all()] == ["codex:t"]


def test_a_session_whose_import_could_not_be_written_stays_registered(
    memory_repo: MemoryRepo, tmp_path, shared_data
) -> None:
    """A write that failed (a full disk; here a file where the dated folder goes) may pass:
    the session stays registered, and the next import files it."""
    import shutil

    from autopoiesis.integrations.sessions import import_sessions

    log = tmp_path / "test-session-id.jsonl"
    shutil.copy(shared_data / "claude-code/claude-code-transcripts__sample_session.jsonl", log)
    registry = SessionRegistry(memory_repo)
    registry.touch("claude-code", "test-session-id", path=str(log))
    blocker = memory_repo.root / "raw/conversations/2025"
    blocker.write_text("in the way\n")
    (failed,) = import_sessions(memory_repo, ["claude-code:test-session-id"])
    assert failed.refused and failed.retry and not failed.imported
    assert registry.get("claude-code:test-session-id") is not None
    blocker.unlink()
    (done,) = import_sessions(memory_repo, ["claude-code:test-session-id"])
    assert done.imported and not done.refused
    assert registry.get("claude-code:test-session-id") is None


def test_a_session_whose_log_path_is_a_folder_or_a_pipe_is_refused_as_no_file(
    memory_repo: MemoryRepo, tmp_path
) -> None:
    """A hook payload whose transcript_path named a folder or a FIFO: the import said the
    log "is not there", sending the user to look for a file that is there. Nothing is
    read from it (a pipe would hang the import)."""
    import os

    from autopoiesis.integrations.sessions import import_sessions

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    registry = SessionRegistry(memory_repo)
    registry.touch("claude-code", "in-a-folder", path=str(tmp_path))
    registry.touch("claude-code", "in-a-pipe", path=str(fifo))
    registry.touch("claude-code", "gone", path=str(tmp_path / "gone.jsonl"))
    outcomes = import_sessions(
        memory_repo, ["claude-code:in-a-folder", "claude-code:in-a-pipe", "claude-code:gone"]
    )
    assert [o.refused for o in outcomes] == [
        (f"the session's log file {tmp_path} is no regular file",),
        (f"the session's log file {fifo} is no regular file",),
        (f"the session's log file {tmp_path / 'gone.jsonl'} is not there",),
    ]
    assert registry.all() == []
