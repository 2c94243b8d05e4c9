"""The state a memory repo keeps beside its files: the event log, SQLite in WAL mode, the state folder."""

from __future__ import annotations

from pathlib import Path

from autopoiesis.core.events import EventLog
from autopoiesis.core.paths import STATE_FILES, MemoryRepo
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
