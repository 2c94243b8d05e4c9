"""`autopoiesis import` of a capture stream written to a file: the events `capture` reads,
filed as finished sessions, the same turns `capture` writes of them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.capture.stream import process_stream
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from autopoiesis.memory.initialize import init_memory_repo

AWS_KEY = "AKIA" + "QYLPMN5HJKXZ7A2B"  # a redactor's pattern: never on disk


def _stream() -> list[dict]:
    return [
        {
            "event": "session_start",
            "session_id": "ses_a",
            "started": "2026-02-16T18:45:00Z",
            "model": "gpt-4o",
            "cwd": "/home/ann/work/shop",
        },
        {
            "event": "message",
            "role": "user",
            "content": "Use bun, not node, for the shop's scripts.",
            "timestamp": "2026-02-16T18:45:10Z",
        },
        {"event": "message", "role": "assistant", "content": "Switching the scripts to bun."},
        {"event": "tool_call", "tool": "Bash", "args": "bun test", "result": "12 pass"},
        {
            "event": "session_start",
            "session_id": "ses_b",
            "started": "2026-02-17T09:00:00Z",
        },
        {
            "event": "message",
            "session_id": "ses_b",
            "role": "user",
            "content": f"The deploy key is {AWS_KEY}.",
            "timestamp": "2026-02-17T09:00:05Z",
        },
        {
            "event": "knowledge",
            "session_id": "ses_a",
            "action": "updated",
            "path": "knowledge/projects/shop/context.md",
            "summary": "bun for scripts",
            "timestamp": "2026-02-16T18:46:00Z",
        },
        {"event": "session_end", "session_id": "ses_a", "tokens_in": 120, "tokens_out": 40},
        # ses_b is never ended: the file is finished, and so is the session
    ]


def _write(path: Path, events: list[dict], extra: list[str] = ()) -> Path:
    path.write_text("\n".join([*(json.dumps(e) for e in events), *extra]) + "\n", encoding="utf-8")
    return path


def test_a_capture_stream_file_is_imported_as_its_sessions(
    memory_repo: MemoryRepo, tmp_path: Path, git
) -> None:
    stream = _write(tmp_path / "recorded.jsonl", _stream())
    report = import_files(memory_repo, [stream])
    assert not report.refused, report.refused
    assert [p.split("/")[2:5] for p in report.imported] == [
        ["2026", "02", "16"],
        ["2026", "02", "17"],
    ]
    a = tf.parse((memory_repo.root / report.imported[0]).read_text(encoding="utf-8"))
    assert a.meta.session_id == "ses_a" and a.meta.model == "gpt-4o"
    assert a.meta.tokens_in == 120 and a.meta.tokens_out == 40
    # the call joins the agent's turn, the memory operation is a [memory] turn; the
    # untimed reply takes the time of the message before it
    assert [t.role for t in a.turns] == ["user", "agent", "agent"]
    assert a.turns[1].items[1:] == (tf.ToolCall("Bash", "bun test", "12 pass"),)
    assert a.turns[2].memory and a.turns[2].items == (
        tf.KnowledgeOp("updated", "knowledge/projects/shop/context.md", "bun for scripts"),
    )
    assert a.turns[1].time == a.turns[0].time
    b_text = (memory_repo.root / report.imported[1]).read_text(encoding="utf-8")
    assert AWS_KEY not in b_text and "The deploy key is" in b_text
    log = git(memory_repo.root, "log", "-p", "--all").stdout
    assert AWS_KEY not in log
    # a second import files nothing new
    again = import_files(memory_repo, [stream])
    assert again.imported == [] and len(again.skipped_duplicates) == 2


def test_the_import_writes_the_turns_capture_writes(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    events = _stream()
    events.insert(
        3, {"event": "message", "role": "agent", "content": "Noted: bun.", "type": "memory"}
    )
    # an attachment and a call after it join the turn before them, in capture as here
    events[5:5] = [
        {"event": "attachment", "path": "screens/failing-test.png"},
        {"event": "tool_call", "tool": "Read", "args": "screens/failing-test.png"},
    ]
    events.append({"event": "session_end", "session_id": "ses_b"})
    for e in events:  # capture dates an untimed event by its arrival, an import by the log
        if e["event"] in ("message", "tool_call"):
            e.setdefault("timestamp", "2026-02-16T18:45:30Z")
    stream = _write(tmp_path / "recorded.jsonl", events)
    imported = import_files(memory_repo, [stream])
    other = MemoryRepo(init_memory_repo(tmp_path / "captured", build_index=False).root)
    captured = process_stream(other, stream.read_bytes().splitlines(keepends=True))
    assert not captured.refused, captured.refused
    assert len(captured.closed) == 2
    for mine, theirs in zip(imported.imported, [c.path for c in captured.closed], strict=True):
        assert Path(mine).name == Path(theirs).name
        got = tf.parse((memory_repo.root / mine).read_text(encoding="utf-8"))
        want = tf.parse((other.root / theirs).read_text(encoding="utf-8"))
        assert got.turns == want.turns
    assert any(
        t.memory for t in tf.parse((memory_repo.root / imported.imported[0]).read_text()).turns
    )


def test_bad_lines_are_skipped_with_their_number_and_the_rest_is_kept(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    stream = _write(
        tmp_path / "recorded.jsonl",
        _stream()[:2],
        extra=[
            "{not json",
            json.dumps({"event": "message", "role": "wizard", "content": "hi"}),
            json.dumps({"event": "tool_call", "name": "Bash", "args": "ls"}),
            json.dumps({"event": "message", "session_id": "nope", "role": "user", "content": "x"}),
            json.dumps({"type": "user", "message": "another log's line"}),
            json.dumps(
                {
                    "event": "message",
                    "role": "user",
                    "content": "Still here.",
                    "timestamp": "0001-01-01T00:00:00Z",
                }
            ),
            json.dumps({"event": "message", "role": "user", "content": "And kept."}),
        ],
    )
    report = import_files(memory_repo, [stream])
    assert len(report.imported) == 1 and not report.refused
    assert report.bad_lines == 6
    skipped = "\n".join(report.warnings)
    for number, why in (
        (3, "not JSON"),
        (4, "unknown role 'wizard'"),
        (5, 'names its tool in "tool", not "name"'),
        (6, "unknown session 'nope'"),
        (7, "unknown event None"),
        (8, "outside 1970-2200"),
    ):
        assert f"recorded.jsonl:{number}: skipped" in skipped and why in skipped, (number, why)
    t = tf.parse((memory_repo.root / report.imported[0]).read_text(encoding="utf-8"))
    assert [turn.items[0].content for turn in t.turns] == [
        "Use bun, not node, for the shop's scripts.",
        "And kept.",
    ]


def test_the_cli_detects_a_stream_and_refuses_one_without_a_session(
    cli, memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    stream = _write(tmp_path / "recorded.jsonl", _stream())
    done = cli("import", "--json", str(stream), repo=memory_repo)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["imported"]) == 2
    orphan = _write(
        tmp_path / "orphan.jsonl",
        [{"event": "message", "role": "user", "content": "no start", "timestamp": 1700000000}],
    )
    done = cli("import", str(orphan), repo=memory_repo)
    assert done.returncode == 1
    assert "no session_start event" in done.stderr and "Traceback" not in done.stderr
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=memory_repo.root, capture_output=True, text=True
    )
    assert status.stdout == ""


def test_a_session_whose_start_is_no_time_starts_at_its_first_message(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`capture` refuses such a session_start, and with it every event of the session; a
    finished log's messages still say when it ran, so nothing of it is lost here."""
    events = [
        {"event": "session_start", "session_id": "ses_y", "started": "9999-12-31T23:59:59Z"},
        {
            "event": "message",
            "role": "user",
            "content": "Pin the Go version to 1.25.6 everywhere.",
            "timestamp": "2026-01-28T13:10:00Z",
        },
        {"event": "message", "role": "assistant", "content": "Pinned in three files."},
    ]
    report = import_files(memory_repo, [_write(tmp_path / "recorded.jsonl", events)])
    assert not report.refused and len(report.imported) == 1
    assert report.imported[0].startswith("raw/conversations/2026/01/28/1310-")
    assert any(
        "recorded.jsonl:1: started" in w and "starts at its first timed event" in w
        for w in report.warnings
    ), report.warnings
    t = tf.parse((memory_repo.root / report.imported[0]).read_text(encoding="utf-8"))
    assert len(t.turns) == 2


def test_a_session_no_event_of_which_says_a_time_is_dated_by_its_file(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Every time 0 (a harness's "not set"): `capture` keeps such a session, dated when its
    events arrive; the import skipped each line as a bad timestamp and refused the session
    as having "no messages and no started time", though it had two."""
    import os

    events = [
        {"event": "session_start", "session_id": "z1", "started": 0},
        {
            "event": "message",
            "role": "user",
            "content": "Use Postgres for billing.",
            "timestamp": 0,
        },
        {"event": "message", "role": "agent", "content": "Noted.", "timestamp": ""},
        {"event": "session_end", "ended": 0},
    ]
    log = _write(tmp_path / "zero.jsonl", events)
    os.utime(log, (1_767_225_600, 1_767_225_600))  # written 2026-01-01 00:00 UTC
    report = import_files(memory_repo, [log])
    assert not report.refused and len(report.imported) == 1, report.refused
    assert report.imported[0].startswith("raw/conversations/2026/01/01/0000-")
    assert any("says no time" in w for w in report.warnings), report.warnings
    t = tf.parse((memory_repo.root / report.imported[0]).read_text(encoding="utf-8"))
    assert [turn.role for turn in t.turns] == ["user", "agent"]
