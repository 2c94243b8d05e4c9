"""The state a memory repo keeps beside its files: the event log, SQLite in WAL mode, the state folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopoiesis.core.events import EventLog
from autopoiesis.core.paths import STATE_FILES, STATE_LOG_KEEP_BYTES, MemoryRepo
from autopoiesis.core.sqlite import open_db


def test_event_log_appends_whole_lines_and_skips_a_torn_one(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "x" / "log.jsonl")
    log.append({"event": "a"})
    with open(log.path, "a", encoding="utf-8") as fh:
        fh.write('{"event": "torn"')  # a crash mid-append
    log.append({"event": "b"})
    rows = log.rows()
    assert [r["event"] for r in rows] == [
        "a",
        "b",
    ]  # the torn line is skipped; "b" starts a line of its own
    assert rows[0]["ts"].endswith("Z")


def test_open_db_is_in_wal_mode(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "x.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_every_state_file_lives_under_the_state_folder(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path)
    for name in STATE_FILES:
        assert repo.state_file(name).is_relative_to(tmp_path / ".autopoiesis")
    assert MemoryRepo("~").root == Path.home().resolve()


def test_usage_counts_are_written_whole_without_waiting_for_the_disk(
    memory_repo: MemoryRepo, monkeypatch
) -> None:
    """The inclusion counts are rewritten on every prompt: atomically (never half a file),
    but without a flush to disk, which waits for whatever else the disk is writing. A
    power cut may leave the file empty; that reads as nothing recorded."""
    import os

    from autopoiesis.core.paths import atomic_write
    from autopoiesis.memory.usage import inclusion_counts, record_inclusions

    flushes: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (flushes.append(fd), real_fsync(fd)))
    record_inclusions(memory_repo, ["knowledge/a.md", "knowledge/b.md"])
    record_inclusions(memory_repo, ["knowledge/a.md"])
    assert inclusion_counts(memory_repo) == {"knowledge/a.md": 2, "knowledge/b.md": 1}
    assert flushes == []
    atomic_write(memory_repo.root / "durable.txt", "kept")  # other state is still flushed
    assert len(flushes) == 1
    memory_repo.state_file("inclusions").write_bytes(b"")  # what a power cut may leave
    assert inclusion_counts(memory_repo) == {}
    record_inclusions(memory_repo, ["knowledge/a.md"])
    assert inclusion_counts(memory_repo) == {"knowledge/a.md": 1}


def test_a_rewritten_file_keeps_its_mode(tmp_path) -> None:
    """`integrate` rewrites a harness's private settings (~/.claude.json may hold an API
    key; 0600): a rewrite keeps the file's mode, and a new file gets 0644."""
    import stat

    from autopoiesis.core.paths import atomic_write, atomic_write_many
    from autopoiesis.integrations.install import write_settings

    private = tmp_path / ".claude.json"
    private.write_text('{"primaryApiKey": "x"}')
    private.chmod(0o600)
    write_settings(private, '{"primaryApiKey": "x", "hooks": {}}')
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    atomic_write_many([(private, b"{}")])
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    new = tmp_path / "new.json"
    atomic_write(new, "{}")
    assert stat.S_IMODE(new.stat().st_mode) == 0o644


def test_a_transient_lock_removes_its_file_and_a_waiter_never_holds_a_removed_one(
    tmp_path: Path,
) -> None:
    """A transient lock's file goes with its release. A waiter that opened the file before
    it was removed locks the removed file when it is freed: it must take the one at the
    path instead, or it and a newcomer that made a new file would both hold the lock."""
    import fcntl
    import os

    from autopoiesis.core.paths import FileLock

    path = tmp_path / "locks" / "session-x.lock"
    first = FileLock(path, transient=True)
    assert first.acquire(timeout=0)
    stale = os.open(path, os.O_RDWR)  # a waiter opened the file while FIRST held it ...
    waiter = FileLock(path, transient=True)
    opens, open_path = iter([stale]), waiter._open
    waiter._open = lambda: next(opens, None) or open_path()  # type: ignore[method-assign]
    first.release()  # ... which removes it
    assert not path.exists()
    newcomer = FileLock(path, transient=True)
    assert newcomer.acquire(timeout=0)  # a new file at the path
    assert not waiter.acquire(timeout=0)  # the removed file was free; the path's is not
    newcomer.release()
    assert waiter.acquire(timeout=0) and waiter.fd is not None
    held = os.fstat(waiter.fd)
    assert (held.st_ino, held.st_nlink) == (os.stat(path).st_ino, 1)
    other = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        raise AssertionError("the path's file was not locked")
    except BlockingIOError:
        pass
    finally:
        os.close(other)
    waiter.release()
    assert not path.exists()
    # a lock that is not transient keeps its file, as before
    kept = FileLock(tmp_path / "locks" / "git.lock")
    assert kept.acquire(timeout=0)
    kept.release()
    assert kept.path.exists()


def test_a_log_with_a_cap_is_rotated_and_read_across_its_generations(tmp_path: Path) -> None:
    """An EventLog written on every hook call grew by ~200 bytes a call for ever. With
    KEEP_BYTES it is renamed PATH.1 once past it (the generation before dropped): it
    holds at most twice KEEP_BYTES, and a reader still reads the latest rows in order."""
    log = EventLog(tmp_path / "logs" / "h.jsonl", keep_bytes=1000)
    for n in range(200):
        log.append({"n": n, "pad": "x" * 40})
    sizes = [log.path.stat().st_size, log.previous.stat().st_size]
    assert all(size <= 1000 + 80 for size in sizes), sizes
    kept = [row["n"] for row in log]
    assert kept == list(range(200 - len(kept), 200)) and len(kept) >= 1000 // 80
    uncapped = EventLog(tmp_path / "logs" / "g.jsonl")
    for n in range(50):
        uncapped.append({"n": n, "pad": "x" * 40})
    assert not uncapped.previous.exists() and len(uncapped.rows()) == 50


def test_a_kill_between_the_rotation_and_the_append_loses_no_row_written(
    tmp_path: Path, monkeypatch
) -> None:
    """The rotation is one rename: a process killed right after it (before it opened the
    new file and wrote its row) leaves every row written in PATH.1, PATH missing; readers
    read them all, and the next append starts PATH again."""
    from autopoiesis.core import events

    real_replace = events.os.replace

    def killed_after(src, dst):
        real_replace(src, dst)
        raise SystemExit("killed")

    monkeypatch.setattr(events.os, "replace", killed_after)
    log = EventLog(tmp_path / "logs" / "l.jsonl", keep_bytes=500)
    written = 0
    with pytest.raises(SystemExit):
        while True:
            log.append({"n": written, "pad": "x" * 40})
            written += 1
    assert not log.path.exists() and log.previous.exists()
    assert [row["n"] for row in log] == list(range(written))
    monkeypatch.setattr(events.os, "replace", real_replace)
    log.append({"n": written})
    assert [row["n"] for row in log] == list(range(written + 1))


def test_the_lifecycle_log_keeps_its_latest_events_within_its_cap(memory_repo, monkeypatch) -> None:
    """Extraction and maintenance append to logs/lifecycle.jsonl every failure, left-out
    change and rejected compaction, and it was never cut: it is rotated past its
    STATE_LOG_KEEP_BYTES, its latest events kept and read across both generations."""
    from autopoiesis.knowledge.extract import on_session_end

    monkeypatch.setitem(STATE_LOG_KEEP_BYTES, "lifecycle_log", 1500)
    for n in range(30):
        gone = memory_repo.root / "raw" / "conversations" / f"gone-{n}.md"
        assert on_session_end(memory_repo, gone, commit=False) is None  # logged, not raised
    log = memory_repo.state_log("lifecycle_log")
    sizes = [log.path.stat().st_size, log.previous.stat().st_size]
    row = max(len(line) for line in log.previous.read_text().splitlines()) + 1
    assert all(size < 1500 + row for size in sizes), sizes
    kept = [int(r["path"].rsplit("-", 1)[1].removesuffix(".md")) for r in log]
    assert kept == list(range(30 - len(kept), 30)) and len(kept) < 30


def test_a_process_output_log_is_rotated_when_the_next_process_is_started_past_its_cap(
    memory_repo: MemoryRepo, monkeypatch
) -> None:
    """The index sync's, the daemon's and a detached import's output files were appended by
    each process started, for ever: past its cap the file becomes NAME.1 when the next one
    is started."""
    monkeypatch.setitem(STATE_LOG_KEEP_BYTES, "index_sync_log", 100)
    for n in range(3):
        with memory_repo.open_state_log("index_sync_log") as out:
            out.write(f"sync {n} ".encode() + b"x" * 120 + b"\n")
    path = memory_repo.state_file("index_sync_log")
    assert path.read_text().startswith("sync 2 ")
    assert path.with_name(path.name + ".1").read_text().startswith("sync 1 ")


def test_the_harness_log_keeps_its_latest_calls_within_its_cap(memory_repo, monkeypatch) -> None:
    """Every hook call appends its line to .autopoiesis/logs/harness.jsonl (207 bytes a
    call measured over 935 calls): a year of a coding agent's hooks was some 50 MB, never
    cut. It is rotated past its STATE_LOG_KEEP_BYTES (its latest calls kept)."""
    import io
    import json

    from autopoiesis.integrations import sessions
    from autopoiesis.integrations.runner import run_hook

    monkeypatch.setitem(STATE_LOG_KEEP_BYTES, "harness_log", 2000)
    for n in range(40):
        payload = {"session_id": f"s{n}", "cwd": "/tmp", "prompt": f"question {n}"}
        run_hook(
            str(memory_repo.root),
            "claude-code",
            "UserPromptSubmit",
            stdin=io.BytesIO(json.dumps(payload).encode()),
            stdout=io.StringIO(),
        )
    log = sessions.harness_log(memory_repo)
    assert log.path.stat().st_size + log.previous.stat().st_size <= 2 * (2000 + 1000)
    assert [row["session"] for row in log][-1] == "s39"
