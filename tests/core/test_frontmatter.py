"""The kernel (autopoiesis.core): each concept's one owner, tested directly."""

from __future__ import annotations

import math
import subprocess
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autopoiesis.core import clock, frontmatter, text
from autopoiesis.core.events import EventLog
from autopoiesis.core.paths import STATE_FILES, MemoryRepo
from autopoiesis.core.sqlite import open_db
from autopoiesis.errors import FrontmatterError, TimestampError
from autopoiesis.git import runner as coregit


# ── frontmatter ──
def test_frontmatter_handles_bom_and_crlf_once() -> None:
    meta, body = frontmatter.load("\ufeff---\r\ntitle: A\r\ntags: [x, y]\r\n---\r\n# A\r\nbody\r\n")
    assert meta == {"title": "A", "tags": ["x", "y"]}
    assert body == "# A\nbody\n"


@pytest.mark.parametrize("value", ["1:30", "0x1F", "1_000", "1e3", "0o17", "yes", "off", "2026-02-16", "null", "~", "12:30:45"])
def test_number_and_bool_lookalikes_stay_strings(value: str) -> None:
    written = frontmatter.scalar(value)
    assert frontmatter.parse_yaml(f"k: {written}\n")["k"] == value
    # hand-written, unquoted: the loader keeps base-60 and hex forms as text too
    if value in ("1:30", "0x1F", "1_000", "0o17"):
        assert frontmatter.parse_yaml(f"k: {value}\n")["k"] == value


@given(st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s))
def test_scalar_round_trips_any_string(value: str) -> None:
    assert frontmatter.parse_yaml(f"k: {frontmatter.scalar(value)}\n")["k"] == value


def test_frontmatter_errors_name_the_file() -> None:
    with pytest.raises(FrontmatterError, match="notes.md: the frontmatter is not closed"):
        frontmatter.split("---\ntitle: x\n", "notes.md")
    with pytest.raises(FrontmatterError, match="not valid YAML"):
        frontmatter.load("---\ntags: [a\n---\n", "notes.md")
    with pytest.raises(FrontmatterError, match="must be a YAML mapping"):
        frontmatter.load("---\n- a\n---\n", "notes.md")
    assert frontmatter.split("no frontmatter\n") == (None, "no frontmatter\n")


# ── clock ──
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e20, "0001-01-01T00:00:00+01:00",
                                 "9999-12-31T23:59:59-05:00", "yesterday", "", True, None, [1]])
def test_absurd_timestamps_are_refused_with_a_hint(bad: object) -> None:
    with pytest.raises(TimestampError, match="2026-02-16T18:45:00Z"):
        clock.parse_ts(bad, "started")


def test_timestamps_parse_to_utc() -> None:
    assert clock.parse_ts("2026-02-16T19:45:00+01:00") == datetime(2026, 2, 16, 18, 45, tzinfo=UTC)
    assert clock.parse_ts(1771267500) == datetime(2026, 2, 16, 18, 45, tzinfo=UTC)
    assert clock.parse_ts(1771267500000) == datetime(2026, 2, 16, 18, 45, tzinfo=UTC)  # milliseconds
    assert clock.parse_ts(date(2026, 2, 16)) == datetime(2026, 2, 16, tzinfo=UTC)
    assert clock.format_ts(datetime(2026, 2, 16, 18, 45, 9, 500)) == "2026-02-16T18:45:09Z"
    assert clock.iso_week(date(2026, 2, 16)) == "2026-W08"
    assert clock.utc_now().tzinfo == UTC


# ── text ──
def test_one_line_flattens_every_line_break_and_control() -> None:
    assert text.one_line("a\r\nb\rc\x00d\te \u2192 f") == "a b c d e -> f"
    assert len(text.one_line("x" * 500, 20)) == 20


def test_token_counts_and_content_words() -> None:
    assert text.count_tokens("") == 0
    assert text.count_tokens("Hello world, 12345!") == 6  # Hello, world, ",", 123, 45, "!"
    assert text.content_words("The deploys were deployed to the topics") == {"deploy", "deployed", "topic"}
    assert text.slugify("Let's move the memory to Markdown") == "lets-move-the-memory-to-markdown"


# ── git ──
def test_uncommitted_sees_untracked_and_staged_files(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    conv = tmp_path / "raw" / "conversations"
    conv.mkdir(parents=True)
    (conv / "a.md").write_text("a\n")
    (conv / "b.md").write_text("b\n")
    (conv / "c.md").write_text("c\n")
    subprocess.run(["git", "add", "raw/conversations/c.md"], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-qm", "c"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "raw/conversations/b.md"], cwd=tmp_path, check=True)  # staged, never committed
    assert coregit.uncommitted(tmp_path, ["raw/conversations"]) == ["raw/conversations/a.md", "raw/conversations/b.md"]
    blobs = coregit.cat_file_batch(tmp_path, [":raw/conversations/b.md", "HEAD:raw/conversations/c.md", ":nope.md"])
    assert blobs == {":raw/conversations/b.md": b"b\n", "HEAD:raw/conversations/c.md": b"c\n", ":nope.md": None}
    changes = coregit.staged_changes(tmp_path)
    assert [(c.status, c.path) for c in changes] == [("A", "raw/conversations/b.md")]


# ── events, sqlite, paths ──
def test_event_log_appends_whole_lines_and_skips_a_torn_one(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "x" / "log.jsonl")
    log.append({"event": "a"})
    with open(log.path, "a", encoding="utf-8") as fh:
        fh.write('{"event": "torn"')  # a crash mid-append
    log.append({"event": "b"})
    rows = log.rows()
    assert [r["event"] for r in rows] == ["a", "b"]  # the torn line is skipped; "b" starts a line of its own
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
