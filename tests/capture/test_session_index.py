"""The session-id index: which transcripts hold a session, kept up to date by imports."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # aider writes local time
    time.tzset()


def test_the_session_index_is_rebuilt_when_missing_or_stale(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    from autopoiesis.capture.closing import find_transcripts
    from autopoiesis.formats.transcript_files import SessionIndex

    s = {
        "session_id": "idx-1",
        "started": "2026-03-01T10:00:00Z",
        "messages": [{"role": "user", "content": "one"}],
    }
    f = tmp_path / "a.json"
    f.write_text(json.dumps(s))
    rel = import_files(memory_repo, [f]).imported[0]
    state = memory_repo.state_file("session_index")
    assert state.is_file()
    # a transcript written behind the index's back (another process, a git pull) is found
    other = memory_repo.root / "raw/conversations/2026/03/01/1100-idx-2-hand-made.md"
    other.write_text((memory_repo.root / rel).read_text().replace("idx-1", "idx-2"))
    assert find_transcripts(memory_repo, "idx-2") == [other]
    state.write_text("{not json")  # a broken cache is rebuilt, never trusted
    assert SessionIndex.load(memory_repo).transcripts("idx-1") == [memory_repo.root / rel]
    state.unlink()
    from autopoiesis.formats.transcript_files import session_parts

    assert (
        session_parts(memory_repo, "idx") == []
    )  # a name that could be its is not it: the frontmatter says
    assert import_files(memory_repo, [f]).skipped_duplicates == [rel]


def test_transcript_meta_round_trips_parts_and_parent() -> None:
    from autopoiesis.core.clock import parse_ts
    from autopoiesis.errors import TranscriptFormatError

    t0 = parse_ts("2026-03-01T10:00:00Z")
    meta = tf.TranscriptMeta(
        "s-1",
        t0,
        parent_session="p-1",
        part=2,
        continues="raw/conversations/2026/02/28/0900-s-1-x.md",
    )
    text = tf.render(tf.Transcript(meta, "T", (tf.Turn(t0, "user", (tf.Text("hi"),)),)))
    assert (
        "parent_session: p-1\npart: 2\ncontinues: raw/conversations/2026/02/28/0900-s-1-x.md\n"
        in text
    )
    assert tf.parse(text).meta == meta and tf.render(tf.parse(text)) == text
    plain = tf.render(tf.Transcript(tf.TranscriptMeta("s-1", t0), "T", ()))
    assert "part:" not in plain and "parent_session" not in plain and "continues" not in plain
    for bad in ("part: 2\n", "continues: x.md\n", "part: 0\n", "parent_session: ../x\n"):
        with pytest.raises(TranscriptFormatError):
            tf.parse(f"---\nsession_id: s\nstarted: 2026-03-01T10:00:00Z\n{bad}---\n\n# t\n")
    assert (
        tf.continuation_relpath("raw/conversations/2026/02/28/0900-s-1-x.md", t0, 3)
        == "raw/conversations/2026/03/01/1000-s-1-x+3.md"
    )
