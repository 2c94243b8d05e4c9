"""Live capture: the library API, the NDJSON stream, durability, recovery, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autopoiesis.capture.closing import recover_abandoned
from autopoiesis.capture.session import ConversationCapture, Session
from autopoiesis.capture.stream import process_stream
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import CaptureError, ImmutableTranscriptError
from autopoiesis.formats import transcript as tf

UTC = UTC


def events(*evs: dict) -> list[bytes]:
    return [json.dumps(e).encode() + b"\n" for e in evs]


def start(sid: str = "s1", **kw) -> dict:
    return {
        "event": "session_start",
        "session_id": sid,
        "started": "2026-02-16T18:45:00Z",
        "model": "m",
        "channel": "cli",
        **kw,
    }


@pytest.mark.slow
def test_library_api_writes_commits_and_names_the_transcript(memory_repo: MemoryRepo, git) -> None:
    cap = ConversationCapture(memory_repo)
    s = Session(
        "ses_a1b2",
        started=datetime(2026, 2, 16, 18, 45, tzinfo=UTC),
        model="opus",
        channel="webchat",
    )
    path = cap.on_session_start(s)
    assert path.exists()
    assert tf.parse_meta(path.read_text()).status == "open"
    cap.on_message(
        s, "user", "Read all open issues and summarise", {"timestamp": "2026-02-16T18:45:30Z"}
    )
    cap.on_tool_call(s, "exec", "gh issue list", "12 results", timestamp="2026-02-16T18:46:00Z")
    cap.on_message(s, "assistant", "Here are the 12 issues.", {"timestamp": "2026-02-16T18:46:10Z"})
    closed = cap.on_session_end(s, ended="2026-02-16T19:32:00Z", tokens_in=45230, tokens_out=12840)
    assert closed is not None
    assert closed.commit
    assert (
        closed.path
        == "raw/conversations/2026/02/16/1845-ses_a1b2-read-all-open-issues-and-summarise.md"
    )
    text = (memory_repo.root / closed.path).read_text()
    t = tf.parse(text)
    assert tf.render(t) == text
    assert t.meta.status == "closed"
    assert t.meta.tokens_in == 45230
    assert t.meta.ended == datetime(2026, 2, 16, 19, 32, tzinfo=UTC)
    assert [x.role for x in t.turns] == ["user", "agent", "agent"]
    assert t.turns[1].items == (tf.ToolCall("exec", "gh issue list", "12 results"),)
    log = git(memory_repo.root, "show", "-s", "--format=%B", closed.commit).stdout
    assert log.startswith(
        "conversation: read-all-open-issues-and-summarise\n\nSession: raw/conversations/2026/02/16/"
    )
    assert not path.exists() or path == memory_repo.root / closed.path


@pytest.mark.slow
def test_stream_interleaved_sessions_and_redaction(memory_repo: MemoryRepo, git) -> None:
    report = process_stream(
        memory_repo,
        events(
            start("a", topic="alpha work"),
            start("b"),
            {
                "event": "message",
                "session_id": "a",
                "role": "user",
                "content": "key sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1 here",
                "timestamp": "2026-02-16T18:46:00Z",
            },
            {
                "event": "message",
                "session_id": "b",
                "role": "user",
                "content": "hello from b",
                "name": "Bob",
            },
            {"event": "session_end", "session_id": "b"},
            {"event": "message", "role": "agent", "content": "only a is open now"},
            {"event": "session_end"},
        ),
    )
    assert report.refused == []
    assert len(report.closed) == 2
    a = next(c for c in report.closed if c.session_id == "a")
    text = (memory_repo.root / a.path).read_text()
    assert "[redacted:openai_key]" in text
    assert "Zz9Yy8" not in text
    assert tf.parse(text).meta.redactions == (("openai_key", 1),)
    assert "alpha-work" in a.path
    assert git(memory_repo.root, "status", "--porcelain").stdout == ""


@pytest.mark.slow
@pytest.mark.parametrize(
    "bad, fragment",
    [
        (
            b'{"event": "message", "role": "user", "content": "x", "session_id": "ghost"}\n',
            "unknown session",
        ),
        (b"not json\n", "not valid JSON"),
        (b'{"event": "explode"}\n', "unknown event"),
        (b'{"type": "message", "role": "user", "content": "x"}\n', '"event", not "type"'),
        (b'{"event": "tool_call", "tool_name": "Bash", "args": "ls"}\n', '"tool", not "tool_name"'),
        (b'{"event": "tool_call", "args": "ls"}\n', 'names its tool in "tool".'),
        (b'{"event": "session_start", "session_id": "../../etc/passwd"}\n', "'/'"),
        (b'{"event": "session_start", "session_id": "a\\u0000b"}\n', "NUL"),
        (b'{"event": "session_end", "session_id": "nope"}\n', "unknown session"),
        (b"[1, 2]\n", "JSON object"),
        # (an impossible time refuses nothing: test_hostile_input's untrusted times)
    ],
)
def test_bad_events_are_refused_and_nothing_else_is_lost(
    memory_repo: MemoryRepo, bad: bytes, fragment: str
) -> None:
    lines = (
        events(start("good"))
        + [bad]
        + events(
            {"event": "message", "role": "user", "content": "kept", "session_id": "good"},
            {"event": "session_end", "session_id": "good"},
        )
    )
    report = process_stream(memory_repo, lines)
    assert len(report.refused) == 1, report.refused
    assert fragment in report.refused[0], report.refused
    assert report.refused[0].startswith("line 2:")
    assert len(report.closed) == 1
    assert "kept" in (memory_repo.root / report.closed[0].path).read_text()
    assert not list((memory_repo.root.parent).glob("etc*"))


@pytest.mark.parametrize("dangling", [False, True])
def test_a_session_is_never_written_through_a_link_a_clone_holds(
    memory_repo: MemoryRepo, tmp_path: Path, dangling: bool
) -> None:
    """A month's folder of transcripts that is a symbolic link (pulled from a collaborator,
    kept by a clone): the conversation was written wherever it pointed, then refused at
    its end; a dangling one read as "already exists". Refused at session_start, naming the
    link; nothing is written outside, and once the link is gone the session starts."""
    outside = tmp_path / "outside"
    if not dangling:
        outside.mkdir()
    month = memory_repo.conversations_dir / "2026" / "02"
    month.parent.mkdir(parents=True, exist_ok=True)
    month.symlink_to(outside)
    said = {"event": "message", "role": "user", "content": "hello there", "session_id": "s1"}
    report = process_stream(memory_repo, events(start(), said, {"event": "session_end"}))
    assert report.closed == []
    assert report.refused[0].startswith("line 1: cannot write raw/conversations/2026/02/16/")
    assert f"raw/conversations/2026/02 -> {outside} is a symbolic link" in report.refused[0]
    assert "git rm" in report.refused[0]
    assert not outside.exists() or list(outside.rglob("*")) == []
    month.unlink()
    report = process_stream(memory_repo, events(start(), said, {"event": "session_end"}))
    assert len(report.closed) == 1 and report.refused == []
    assert "hello there" in (memory_repo.root / report.closed[0].path).read_text()


def test_a_message_with_a_byte_that_is_not_utf8_is_kept_with_a_warning(
    memory_repo: MemoryRepo,
) -> None:
    """A stray byte in one event (a tool's binary output sent as it came) refused the
    whole event, and the message was lost; it is kept, the byte read as U+FFFD, and the
    warning names the line. A UTF-16 stream is still refused, with how to convert it."""
    lines = (
        events(start("odd"))
        + [b'{"event": "message", "role": "user", "content": "fix the caf\xe9 bug"}\n']
        + [b'{"event": "message", "role": "agent", "content": "na\xefve fix done"}\n']
        + events({"event": "session_end", "session_id": "odd"})
    )
    report = process_stream(memory_repo, lines)
    assert report.refused == []
    text = (memory_repo.root / report.closed[0].path).read_text(encoding="utf-8")
    assert "fix the caf\ufffd bug" in text and "na\ufffdve fix done" in text
    # told once, however many lines a harness of another encoding sends
    told = [w for w in report.warnings if "not UTF-8" in w]
    assert told == [
        "line 2: bytes that are not UTF-8 (the first at byte 60) were read as U+FFFD "
        "(\ufffd), and so were those of 1 more line; send UTF-8 JSON."
    ], report.warnings
    wide = process_stream(memory_repo, ['{"event": "session_start"}\n'.encode("utf-16")])
    assert len(wide.refused) == 1 and "UTF-16" in wide.refused[0]


def test_out_of_order_and_unknown_role(memory_repo: MemoryRepo) -> None:
    report = process_stream(
        memory_repo,
        events(
            {"event": "message", "role": "user", "content": "too early"},
            start("s"),
            {"event": "message", "role": "wizard", "content": "x"},
            {"event": "message", "role": "user", "content": "fine"},
            {"event": "session_end"},
            {"event": "session_end", "session_id": "s"},
            start("s"),
        ),
    )
    assert [r.split(":")[0] for r in report.refused] == ["line 1", "line 3", "line 6", "line 7"]
    assert "no session is open" in report.refused[0]
    assert "unknown role" in report.refused[1]
    assert "already captured" in report.refused[3]
    assert len(report.closed) == 1


@pytest.mark.slow
def test_huge_message_is_cut_with_a_marker_and_binary_is_cleaned(memory_repo: MemoryRepo) -> None:
    # five times capture.max_message_bytes: an event line past 8 times it and 1 MB is
    # refused whole (test_hostile_input's line cap)
    big = "x" * (5 * 1024 * 1024)
    report = process_stream(
        memory_repo,
        events(
            start("big"),
            {"event": "message", "role": "user", "content": big},
            {"event": "message", "role": "user", "content": "bin\u0000ary\u0007 data"},
            {"event": "session_end"},
        ),
    )
    assert report.refused == []
    text = (memory_repo.root / report.closed[0].path).read_text()
    assert "[truncated: message was 5242880 bytes" in text
    assert len(text) < 2 * 1024 * 1024
    assert "binary data" in text


def test_a_time_under_another_name_is_reported_not_silently_lost(
    memory_repo: MemoryRepo,
) -> None:
    """An event's time is read from `timestamp` (a session's from `started` and `ended`);
    a stream that wrote `ts` was captured with the times it arrived, without a word. Now
    each event kind says so once; a field no time is meant by stays ignored."""
    report = process_stream(
        memory_repo,
        events(
            start("ses_ts1"),
            {"event": "message", "role": "user", "content": "hello", "ts": "2026-02-16T18:46Z"},
            {"event": "message", "role": "agent", "content": "hi", "ts": "2026-02-16T18:47Z"},
            {"event": "message", "role": "user", "content": "bye", "mood": "fine"},
            {"event": "session_end", "created_at": "2026-02-16T18:50Z"},
        ),
    )
    assert report.refused == [] and len(report.closed) == 1
    about_time = [w for w in report.warnings if "time is read from" in w]
    assert about_time == [
        "a message event's time is read from 'timestamp', not 'ts': such events got the time "
        "they arrived. Send 'timestamp' (ISO 8601) to keep the log's times.",
        "a session_end event's time is read from 'ended', not 'created_at': such events got "
        "the time they arrived. Send 'ended' (ISO 8601) to keep the log's times.",
    ]
    assert not any("mood" in w for w in report.warnings)


def test_a_session_stamped_like_its_messages_keeps_its_times(memory_repo: MemoryRepo) -> None:
    """A harness that stamps every event with `timestamp` had its session_start and
    session_end read as "now" without a word: a session of March was filed under the day
    it was streamed, and ended before its own turns. A session's `timestamp` is its start
    or end when it sends no `started` or `ended`; one that sends both keeps `started`."""
    report = process_stream(
        memory_repo,
        events(
            {"event": "session_start", "session_id": "ses_st1", "timestamp": "2026-03-01T10:00Z"},
            {
                "event": "message",
                "role": "user",
                "content": "hello",
                "timestamp": "2026-03-01T10:01Z",
            },
            {"event": "session_end", "timestamp": "2026-03-01T10:05Z"},
            {
                "event": "session_start",
                "session_id": "ses_st2",
                "started": "2026-03-02T09:00Z",
                "timestamp": "2026-03-02T09:30Z",
            },
            {
                "event": "message",
                "role": "user",
                "content": "again",
                "timestamp": "2026-03-02T09:31Z",
            },
            {"event": "session_end"},
        ),
    )
    assert report.refused == [] and len(report.closed) == 2
    assert not [w for w in report.warnings if "time is read from" in w]
    first, second = (memory_repo.root / c.path for c in report.closed)
    assert (
        first.relative_to(memory_repo.root)
        .as_posix()
        .startswith("raw/conversations/2026/03/01/1000-ses_st1")
    )
    text = first.read_text(encoding="utf-8")
    assert "started: 2026-03-01T10:00:00Z" in text and "ended: 2026-03-01T10:05:00Z" in text
    assert "/2026/03/02/0900-ses_st2" in second.as_posix()


def test_a_field_of_the_wrong_type_is_left_out_with_a_warning(memory_repo: MemoryRepo) -> None:
    """A session's optional text fields (cwd, model, topic, tags; a speaker's name) were written as
    Python's rendering of whatever came: `"cwd": ["a"]` became `cwd: "['a']"` in the
    transcript. Now a list, an object or a boolean is left out with a warning that names
    the field, a number is read as its digits, and the session and its messages are kept."""
    report = process_stream(
        memory_repo,
        events(
            start("ses_types", cwd=["a"], model={"x": 1}, topic=True, tags=["ok", {"y": 2}, 3]),
            {"event": "message", "role": "user", "content": "hello", "name": ["Ann"]},
            {"event": "tool_call", "tool": {"name": "read"}, "args": "a.txt"},
            {"event": "session_end"},
        ),
    )
    assert report.refused == [
        "line 3: a tool_call event names its tool in \"tool\" as text, not {'name': 'read'}."
    ]
    assert len(report.closed) == 1
    text = (memory_repo.root / report.closed[0].path).read_text()
    assert "— user\nhello\n" in text and "Ann" not in text
    meta = tf.parse_meta((memory_repo.root / report.closed[0].path).read_text())
    assert (meta.cwd, meta.model, meta.topic, meta.tags) == (None, None, None, ("ok", "3"))
    left_out = sorted(w for w in report.warnings if "it was left out" in w)
    assert left_out == [
        "'cwd' is text, not list ([\"a\"]): it was left out. Send it as a string.",
        "'model' is text, not dict ({\"x\": 1}): it was left out. Send it as a string.",
        "'topic' is text, not bool (true): it was left out. Send it as a string.",
        "a message's 'name' is text, not list ([\"Ann\"]): it was left out. Send it as a string.",
        'a tag is text, not dict ({"y": 2}): it was left out. Send it as a string.',
    ]


def test_empty_session_leaves_nothing(memory_repo: MemoryRepo, git) -> None:
    head = git(memory_repo.root, "rev-parse", "HEAD").stdout
    report = process_stream(memory_repo, events(start("empty"), {"event": "session_end"}))
    assert report.closed == []
    assert report.refused == []
    assert any("no messages" in w for w in report.warnings)
    assert git(memory_repo.root, "rev-parse", "HEAD").stdout == head
    assert not list(memory_repo.conversations_dir.rglob("*empty*.md"))


def test_closed_transcript_is_immutable(memory_repo: MemoryRepo) -> None:
    from autopoiesis.capture.closing import finalize_transcript

    report = process_stream(
        memory_repo,
        events(
            start("imm"),
            {"event": "message", "role": "user", "content": "x"},
            {"event": "session_end"},
        ),
    )
    path = memory_repo.root / report.closed[0].path
    with pytest.raises(ImmutableTranscriptError):
        finalize_transcript(memory_repo, path)
    cap = ConversationCapture(memory_repo)
    with pytest.raises(CaptureError, match="already captured"):
        cap.on_session_start(Session("imm", started=datetime(2026, 2, 16, 18, 45, tzinfo=UTC)))


def _capture_proc(root: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "autopoiesis.cli", "-C", str(root), "capture"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.slow
def test_killed_harness_loses_nothing_and_is_recovered(memory_repo: MemoryRepo, git) -> None:
    proc = _capture_proc(memory_repo.root)
    assert proc.stdin is not None
    proc.stdin.write(b"".join(events(start("crash"))))
    for i in range(5):
        proc.stdin.write(
            b"".join(
                events(
                    {
                        "event": "message",
                        "role": "user",
                        "content": f"message number {i}",
                        "timestamp": f"2026-02-16T18:5{i}:00Z",
                    }
                )
            )
        )
    proc.stdin.flush()
    deadline = time.time() + 60
    open_files = []
    while time.time() < deadline:
        open_files = list(memory_repo.conversations_dir.rglob("*crash*.md"))
        if open_files and "message number 4" in open_files[0].read_text():
            break
        time.sleep(0.05)
    # the live session is not "recovered" by another process while its capture runs
    assert recover_abandoned(memory_repo) == []
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    text = open_files[0].read_text()
    assert all(f"message number {i}" in text for i in range(5))
    recovered = recover_abandoned(memory_repo)
    assert len(recovered) == 1
    assert recovered[0].status == "recovered"
    t = tf.parse((memory_repo.root / recovered[0].path).read_text())
    assert t.meta.status == "recovered"
    assert t.meta.ended == datetime(2026, 2, 16, 18, 54, tzinfo=UTC)
    assert len(t.turns) == 5
    assert git(memory_repo.root, "status", "--porcelain").stdout == ""


@pytest.mark.slow
def test_cli_capture_reports_and_exits_nonzero_on_refusal(memory_repo: MemoryRepo) -> None:
    stream = (
        b"".join(events(start("cli"), {"event": "message", "role": "user", "content": "hi"}))
        + b"garbage\n"
        + b"".join(events({"event": "session_end"}))
    )
    proc = subprocess.run(
        [sys.executable, "-m", "autopoiesis.cli", "-C", str(memory_repo.root), "capture"],
        input=stream,
        capture_output=True,
    )
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "refused: line 3: not valid JSON" in err
    assert "Traceback" not in err
    out = [json.loads(l) for l in proc.stdout.decode().splitlines()]
    assert out[0]["event"] == "committed"
    assert out[0]["session_id"] == "cli"


@pytest.mark.slow
def test_a_left_open_session_is_recovered_by_the_next_capture(memory_repo: MemoryRepo, git) -> None:
    first = process_stream(
        memory_repo,
        events(start("left"), {"event": "message", "role": "user", "content": "unfinished"}),
    )
    assert first.left_open
    assert not first.closed
    second = process_stream(
        memory_repo,
        events(
            start("next"),
            {"event": "message", "role": "user", "content": "x"},
            {"event": "session_end"},
        ),
    )
    assert [r.session_id for r in second.recovered] == ["left"]
    assert git(memory_repo.root, "status", "--porcelain").stdout == ""


def test_a_recovered_session_never_ends_before_it_started(memory_repo: MemoryRepo) -> None:
    """Recovery closes a left-open session at its last turn's time: a turn dated before the
    session's start (a harness's clock) made `ended` earlier than `started`, which a normal
    session_end refuses to write."""
    process_stream(
        memory_repo,
        events(
            start("skewed"),
            {
                "event": "message",
                "role": "user",
                "content": "early",
                "timestamp": "2026-02-16T18:00:00Z",
            },
        ),  # fmt: skip
    )
    second = process_stream(
        memory_repo,
        events(start("next"), {"event": "message", "role": "user", "content": "x"},
               {"event": "session_end"}),
    )  # fmt: skip
    assert [r.session_id for r in second.recovered] == ["skewed"]
    path = memory_repo.root / second.recovered[0].path
    meta = tf.parse_meta(path.read_text(encoding="utf-8"))
    assert meta.ended is not None and meta.ended >= meta.started


@pytest.mark.slow
def test_concurrent_harnesses_lose_nothing(memory_repo: MemoryRepo, git) -> None:
    n_procs, n_msgs = 8, 20
    procs = []
    for p in range(n_procs):
        proc = _capture_proc(memory_repo.root)
        body = (
            events(start(f"h{p}"))
            + events(
                *[
                    {
                        "event": "message",
                        "role": "user" if i % 2 == 0 else "agent",
                        "content": f"p{p} m{i}",
                    }
                    for i in range(n_msgs)
                ]
            )
            + events({"event": "session_end"})
        )
        procs.append((proc, b"".join(body)))
    for proc, body in procs:
        proc.stdin.write(body)
        proc.stdin.close()
    for proc, _ in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()
    files = list(memory_repo.conversations_dir.rglob("*.md"))
    assert len(files) == n_procs
    for f in files:
        t = tf.parse(f.read_text())
        assert len(t.turns) == n_msgs
    assert git(memory_repo.root, "status", "--porcelain").stdout == ""
    # closes that queue behind a commit are committed together (group commit)
    assert (
        1
        <= int(git(memory_repo.root, "rev-list", "--count", "HEAD", "--", "raw").stdout)
        <= n_procs
    )
    tracked = [
        f
        for f in git(memory_repo.root, "ls-files", "raw/conversations").stdout.split()
        if f.endswith(".md")
    ]
    assert len(tracked) == n_procs
    for f in tracked:
        assert f"Session: {f}" in git(memory_repo.root, "log", "--format=%B", "--", f).stdout
    git(memory_repo.root, "fsck", "--no-progress")


# ── what follows a commit is the caller's callback (capture never imports the lifecycle) ──
DECISION = [
    {
        "event": "message",
        "role": "user",
        "content": "Let's decide how memory is stored.",
        "timestamp": "2026-02-16T18:45:00Z",
    },
    {
        "event": "message",
        "role": "agent",
        "content": "Two options: SQLite or Markdown files in git.",
        "timestamp": "2026-02-16T18:46:00Z",
    },
    {
        "event": "message",
        "role": "user",
        "content": "We decided: files are the source of truth, SQLite is only a cache. "
        "Lesson learned: always keep the raw transcripts.",
        "timestamp": "2026-02-16T18:47:00Z",
    },
    {"event": "session_end", "ended": "2026-02-16T18:50:00Z"},
]


def test_on_committed_runs_after_the_commit_with_the_transcript_path(
    memory_repo: MemoryRepo, git
) -> None:
    seen: list[tuple[str, str]] = []

    def after(path: str) -> None:  # the commit is already there when the hook runs
        seen.append(
            (path, git(memory_repo.root, "log", "-1", "--format=%s", "--", path).stdout.strip())
        )

    cap = ConversationCapture(memory_repo, on_committed=after)
    s = Session("hook1", started=datetime(2026, 2, 16, 18, 45, tzinfo=UTC))
    cap.on_session_start(s)
    cap.on_message(s, "user", "hello hook")
    closed = cap.on_session_end(s)
    assert closed is not None
    assert seen == [(closed.path, "conversation: hello-hook")]
    uncommitted = ConversationCapture(memory_repo, auto_commit=False, on_committed=after)
    s2 = Session("hook2", started=datetime(2026, 2, 16, 18, 45, tzinfo=UTC))
    uncommitted.on_session_start(s2)
    uncommitted.on_message(s2, "user", "not committed")
    assert uncommitted.on_session_end(s2) is not None
    assert len(seen) == 1  # nothing committed, nothing to follow


def test_a_failing_after_commit_step_leaves_the_session_committed(
    memory_repo: MemoryRepo, git
) -> None:
    from autopoiesis.errors import ExtractionError

    def broken(path: str) -> None:
        raise ExtractionError("the extractor fell over")

    report = process_stream(memory_repo, events(start("brk"), *DECISION), on_committed=broken)
    assert report.refused == []
    assert len(report.closed) == 1
    assert report.closed[0].commit
    assert any("after-commit step failed: the extractor fell over" in w for w in report.warnings)
    assert git(memory_repo.root, "status", "--porcelain").stdout == ""


@pytest.mark.slow
def test_extraction_follows_the_commit_when_the_config_says_so(
    memory_repo: MemoryRepo, git
) -> None:
    from autopoiesis.memory import Memory

    report = process_stream(
        memory_repo,
        events(start("ext"), *DECISION),
        on_committed=Memory(memory_repo).after_commit(),
    )
    assert report.refused == []
    assert len(report.closed) == 1
    subjects = git(memory_repo.root, "log", "-2", "--format=%s").stdout.splitlines()
    assert subjects[0].startswith("memory:")
    assert subjects[1].startswith("conversation:")
    assert (
        f"Session: {report.closed[0].path}"
        in git(memory_repo.root, "log", "-1", "--format=%B").stdout
    )
    (memory_repo.root / "memory-config.yaml").write_text(
        "lifecycle:\n  extraction_trigger: manual\n"
    )
    assert Memory(MemoryRepo(memory_repo.root)).after_commit() is None


def test_failed_extraction_leaves_the_transcript_pending(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch, git
) -> None:
    from autopoiesis.errors import ExtractionError
    from autopoiesis.knowledge.extract import KnowledgeExtractor
    from autopoiesis.memory import Memory

    def fail(self, *args, **kwargs):
        raise ExtractionError("endpoint down")

    with monkeypatch.context() as m:
        m.setattr(KnowledgeExtractor, "extract_from_session", fail)
        report = process_stream(
            memory_repo,
            events(start("pend"), *DECISION),
            on_committed=Memory(memory_repo).after_commit(),
        )
    assert report.refused == []
    assert report.closed[0].commit
    assert git(memory_repo.root, "log", "-1", "--format=%s").stdout.startswith("conversation:")
    log = (memory_repo.state_dir / "logs" / "lifecycle.jsonl").read_text()
    assert "on_session_end_failed" in log
    assert "endpoint down" in log
    with KnowledgeExtractor(memory_repo) as ex:
        pending = ex.extract_pending()
    assert report.closed[0].path in pending.transcripts


def test_session_start_cwd_gives_the_project(memory_repo: MemoryRepo, tmp_path, git) -> None:
    # `cwd` in a subfolder of a git repository: the repository's project; `project` names
    # one outright; a folder in no repository is global (cwd kept, no project).
    repo = tmp_path / "Tool_Box"
    (repo / "lib").mkdir(parents=True)
    git(repo, "init", "-q")
    outside = tmp_path / "plain"
    outside.mkdir()
    say = {"event": "message", "role": "user", "content": "hello"}
    end = {"event": "session_end"}
    report = process_stream(
        memory_repo,
        events(
            start("p1", cwd=str(repo / "lib")),
            {**say, "session_id": "p1"},
            {**end, "session_id": "p1"},
            start("p2", cwd=str(repo), project="Named Here"),
            {**say, "session_id": "p2"},
            {**end, "session_id": "p2"},
            start("p3", cwd=str(outside)),
            {**say, "session_id": "p3"},
            {**end, "session_id": "p3"},
        ),
    )
    assert report.refused == []
    metas = {
        m.session_id: m
        for m in (tf.parse_meta(p.read_text()) for p in memory_repo.conversations_dir.rglob("*.md"))
    }
    assert (metas["p1"].project, metas["p1"].cwd) == ("tool-box", str(repo / "lib"))
    assert metas["p2"].project == "named-here"
    assert (metas["p3"].project, metas["p3"].cwd) == (None, str(outside))


def test_a_cwd_of_another_machine_gives_the_project_its_path_names(
    memory_repo: MemoryRepo, cli
) -> None:
    # A stream converted from logs recorded elsewhere: the folders are not on this machine.
    # The same repository from its top level and from a subfolder is one project, and
    # `autopoiesis projects` lists it; a home folder is no project.
    say = {"event": "message", "role": "user", "content": "we use uv, not pip, in this repo"}
    end = {"event": "session_end"}
    cwds = {
        "f1": "/Users/someone-else/Projects/minsky",
        "f2": "/Users/someone-else/Projects/minsky/src/cli",
        "f3": "C:\\Users\\dev\\source\\repos\\Roo-Cline",
        "f4": "/Users/someone-else",
    }
    stream = []
    for sid, cwd in cwds.items():
        assert not Path(cwd).exists()
        stream += [start(sid, cwd=cwd), {**say, "session_id": sid}, {**end, "session_id": sid}]
    report = process_stream(memory_repo, events(*stream))
    assert report.refused == []
    metas = {
        m.session_id: m
        for m in (tf.parse_meta(p.read_text()) for p in memory_repo.conversations_dir.rglob("*.md"))
    }
    assert {sid: metas[sid].project for sid in cwds} == {
        "f1": "minsky",
        "f2": "minsky",
        "f3": "roo-cline",
        "f4": None,
    }
    assert metas["f3"].cwd == cwds["f3"]
    listed = json.loads(cli("projects", "--json", repo=memory_repo, check=True).stdout)
    assert {p["name"]: p["transcripts"] for p in listed} == {"minsky": 2, "roo-cline": 1}


def test_a_secret_in_a_session_id_is_filed_without_it(memory_repo: MemoryRepo, git) -> None:
    """Every field was redacted but the session id, which names the file, the commit and
    every citation: a GitHub token as `session_id` reached git 17 times. It is filed under
    what is left of it, the token's kind and a hash of the whole (the same id twice is the
    same session); the stream still names the session by the id it gave."""
    from autopoiesis.capture.importers import import_files

    token = "ghp_iK2ZWeqhFWCEPyYngFb51yBMWXaSCrUZoL8g"
    report = process_stream(
        memory_repo,
        [
            json.dumps(e).encode()
            for e in (
                {"event": "session_start", "session_id": token, "started": "2026-03-05T10:00:00Z"},
                {"event": "message", "session_id": token, "role": "user", "content": "hello"},
                {"event": "session_end", "session_id": token},
            )
        ],
    )
    assert report.refused == [] and len(report.closed) == 1
    path = report.closed[0].path
    assert "/1000-redacted-github_token-" in path and token not in path
    assert tf.parse_meta((memory_repo.root / path).read_text()).session_id.startswith(
        "redacted-github_token-"
    )
    # an imported log's session id, the same way (Claude Code's sessionId)
    line = {
        "type": "user",
        "timestamp": "2025-12-24T10:00:00.000Z",
        "sessionId": f"sess-{token}",
        "cwd": "/project",
        "message": {"role": "user", "content": "Create a hello world function"},
        "uuid": "msg-001",
    }
    log = memory_repo.root.parent / "secret-session.jsonl"
    log.write_text(json.dumps(line) + "\n", encoding="utf-8")
    imported = import_files(memory_repo, [log])
    (filed,) = imported.imported
    assert filed.split("/")[-1].startswith("1000-sess-redacted-github_token-")
    history = git(memory_repo, "log", "--all", "-p").stdout
    assert token not in history and "iK2ZWeq" not in history


def test_a_byte_order_mark_and_a_closed_stdin(memory_repo: MemoryRepo) -> None:
    """A stream that starts with a UTF-8 byte order mark (PowerShell's pipes, a file saved
    by Notepad) had its first event refused, so the whole session; `import` read the same
    bytes. And `capture` started with its standard input closed died on a traceback."""
    events = (
        b'\xef\xbb\xbf{"event": "session_start", "session_id": "bom1", '
        b'"started": "2026-03-12T10:00:00Z"}\n'
        b'{"event": "message", "role": "user", "content": "x"}\n{"event": "session_end"}\n'
    )
    report = process_stream(memory_repo, events.splitlines(keepends=True))
    assert report.refused == [] and len(report.closed) == 1
    closed = subprocess.run(
        [sys.executable, "-m", "autopoiesis", "-C", str(memory_repo.root), "capture"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        close_fds=True,
        preexec_fn=lambda: os.close(0),
    )
    assert closed.returncode == 1 and "Traceback" not in closed.stderr
    assert "stdin is closed; pipe the events" in closed.stderr


def test_a_gitignore_rule_over_the_memory_neither_stops_a_commit_nor_goes_unsaid(
    memory_repo: MemoryRepo, git, cli
) -> None:
    """A collaborator's .gitignore with `raw/` and `knowledge/` (pulled with a sync) made
    every transcript commit fail, `capture --recover` then found nothing to recover, and
    nothing reported it. The files the memory commits are named, so no ignore rule keeps
    them out; `doctor` names the rule."""
    gitignore = memory_repo.root / ".gitignore"
    gitignore.write_text(gitignore.read_text() + "raw/\nknowledge/\n", encoding="utf-8")
    git(memory_repo, "commit", "-qam", "ignore the memory")
    report = process_stream(
        memory_repo,
        events(
            start("ign"),
            {"event": "message", "role": "user", "content": "x"},
            {"event": "session_end"},
        ),
    )
    assert report.refused == [] and report.closed[0].commit
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    doctor = cli("doctor", repo=memory_repo)
    assert doctor.returncode == 1
    assert "knowledge/memory/MEMORY.md by `knowledge/` (.gitignore)" in doctor.stdout


def test_a_session_cannot_end_before_it_began(memory_repo: MemoryRepo) -> None:
    """`ended` earlier than `started` was written as it came (an import keeps the later
    of the two); now the session ends at its last turn, with a warning."""
    report = process_stream(
        memory_repo,
        events(
            start("backwards", started="2026-03-02T10:00:00Z"),
            {
                "event": "message",
                "role": "user",
                "content": "x",
                "timestamp": "2026-03-02T10:01:00Z",
            },
            {"event": "session_end", "ended": "1971-01-01T00:00:00Z"},
        ),
    )
    assert report.refused == [] and len(report.closed) == 1
    meta = tf.parse_meta((memory_repo.root / report.closed[0].path).read_text())
    assert meta.ended == parse_ts("2026-03-02T10:01:00Z")
    assert any(
        "session backwards: ended 1971-01-01T00:00:00Z is before it started "
        "(2026-03-02T10:00:00Z); it ends at its last turn, 2026-03-02T10:01:00Z." in w
        for w in report.warnings
    )


def test_a_session_being_captured_elsewhere_is_said_to_be_so(memory_repo: MemoryRepo) -> None:
    """A second capture starting a session another capture has open was told the session
    "was already captured ... transcripts are immutable": it is being captured."""
    live = ConversationCapture(memory_repo)
    when = datetime(2026, 3, 1, 9, tzinfo=UTC)
    live.on_session_start(Session("live2", started=when))
    try:
        with pytest.raises(CaptureError, match="is being captured in raw/conversations/2026/03/01"):
            ConversationCapture(memory_repo).on_session_start(Session("live2", started=when))
    finally:
        live.close_all()


def test_events_of_a_refused_session_start_say_it_was_refused(memory_repo: MemoryRepo) -> None:
    """A session_start refused (another capture holds the session) left its later events
    refused as "unknown session 's1': it was never started here, or it has already
    ended.": the user looked for a typo in the id. They now say its session_start was
    refused, and why; a later start of the id that succeeds takes its events again."""
    live = ConversationCapture(memory_repo)
    live.on_session_start(Session("held", started=datetime(2026, 2, 16, 18, 45, tzinfo=UTC)))
    try:
        report = process_stream(
            memory_repo,
            events(
                start("held"),
                {"event": "message", "session_id": "held", "role": "user", "content": "hi"},
                {"event": "session_end", "session_id": "held"},
            ),
        )
    finally:
        live.close_all()
    why = "session held is being captured in raw/conversations/2026/02/16/"
    assert report.refused[0].startswith(f"line 1: {why}"), report.refused
    for number, refusal in enumerate(report.refused[1:], start=2):
        assert refusal.startswith(
            f"line {number}: session 'held' was not started: its session_start was refused ({why}"
        ), refusal
        assert refusal.endswith(
            "by another capture process), so none of its events can be kept; fix that, then "
            "send the session again from its session_start."
        ), refusal
    assert len(report.refused) == 3

    again = process_stream(
        memory_repo,
        events(
            start("fixed", tags="not a list"),
            {"event": "message", "session_id": "fixed", "role": "user", "content": "hi"},
            start("fixed"),
            {"event": "message", "session_id": "fixed", "role": "user", "content": "hi"},
            {"event": "session_end", "session_id": "fixed"},
        ),
    )
    assert again.refused == [
        "line 1: tags must be a list of strings.",
        "line 2: session 'fixed' was not started: its session_start was refused (tags must "
        "be a list of strings), so none of its events can be kept; fix that, then send the "
        "session again from its session_start.",
    ]
    assert len(again.closed) == 1


def test_a_message_with_no_text_is_no_turn(memory_repo: MemoryRepo) -> None:
    """An empty (or blank) message was written as a turn with nothing under its heading;
    an import keeps no such turn. It is passed over with a warning, not refused."""
    report = process_stream(
        memory_repo,
        events(
            start("blank"),
            {"event": "message", "role": "user", "content": "hello"},
            {"event": "message", "role": "system", "content": "\n  \n"},
            {"event": "session_end"},
        ),
    )
    assert report.refused == [] and len(report.closed) == 1
    turns = tf.parse((memory_repo.root / report.closed[0].path).read_text()).turns
    assert [t.role for t in turns] == ["user"]
    assert "a message with no text is not kept as a turn." in report.warnings


def test_a_chat_api_message_is_kept_as_its_text_and_its_tool_output(
    memory_repo: MemoryRepo,
) -> None:
    """A harness that forwards a chat API's messages as they are had them refused, and so
    lost: content as a list of parts (OpenAI's, Anthropic's), an assistant message that
    only calls tools (content null), and a tool's output in the role "tool". Now the parts'
    text is the message, a message without text is passed over with a warning, and a tool
    message is a tool call's output under its name; content that is neither is refused."""
    report = process_stream(
        memory_repo,
        events(
            start("ses_api"),
            {
                "event": "message",
                "role": "user",
                "content": [
                    {"type": "text", "text": "Run the tests of the parser."},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                    {"type": "text", "text": "Only the parser."},
                ],
            },
            {"event": "message", "role": "assistant", "content": None},
            {"event": "message", "role": "tool", "name": "run_tests", "content": "3 passed"},
            {"event": "message", "role": "function", "content": "ok"},
            {"event": "message", "role": "user", "content": {"text": "an object"}},
            {"event": "session_end"},
        ),
    )
    assert len(report.refused) == 1 and report.refused[0].startswith("line 6:")
    assert "content as a string (or a list of parts with text)" in report.refused[0]
    assert "a message with no text is not kept as a turn." in report.warnings
    turns = tf.parse((memory_repo.root / report.closed[0].path).read_text()).turns
    assert [t.role for t in turns] == ["user", "agent"]
    texts = [i for i in turns[0].items if isinstance(i, tf.Text)]
    assert [t.content for t in texts] == ["Run the tests of the parser.\n\nOnly the parser."]
    calls = [(c.tool, c.result) for c in turns[1].items if isinstance(c, tf.ToolCall)]
    assert calls == [("run_tests", "3 passed"), ("function", "ok")]


def test_a_chat_api_s_tool_calls_are_kept_and_their_output_named_by_the_call(
    memory_repo: MemoryRepo,
) -> None:
    """An assistant message that only calls tools (`content: null`, OpenAI's `tool_calls`)
    lost its calls, and the output that answered one, naming only its `tool_call_id`, was
    filed under the tool "tool". Each call is a line of its own, and the output goes under
    the name of the call it answers."""
    report = process_stream(
        memory_repo,
        events(
            start("ses_calls"),
            {"event": "message", "role": "user", "content": "Weather in Paris?"},
            {
                "event": "message",
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"event": "message", "role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"event": "session_end"},
        ),
    )
    assert report.refused == [] and "a message with no text is not kept as a turn." not in (
        report.warnings
    )
    turns = tf.parse((memory_repo.root / report.closed[0].path).read_text()).turns
    calls = [
        (c.tool, c.args, c.result) for t in turns for c in t.items if isinstance(c, tf.ToolCall)
    ]
    assert calls == [("get_weather", '{"city":"Paris"}', None), ("get_weather", "", "sunny")]


def test_a_session_end_that_cannot_close_counts_its_session_as_left_open(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    """A session_end that could not close its transcript (a full disk) refused it as
    staying open, then the summary said "0 left open": the two lines disagreed. The
    session is counted as left open, and `capture --recover` closes it."""
    import errno

    import autopoiesis.capture.session as session_module

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(session_module, "finalize_transcript", full_disk)
    said = {"event": "message", "role": "user", "content": "kept", "session_id": "s1"}
    report = process_stream(memory_repo, events(start(), said, {"event": "session_end"}))
    assert report.refused[0].startswith("line 3: session s1 could not be closed")
    assert report.closed == [] and len(report.not_closed) == 1
    assert "kept" in (memory_repo.root / report.not_closed[0]).read_text()
    monkeypatch.undo()
    recovered = recover_abandoned(memory_repo)
    assert [r.path for r in recovered] and "kept" in (
        memory_repo.root / recovered[0].path
    ).read_text()


def test_a_secret_a_tool_s_result_names_is_redacted_in_its_arguments_too(
    memory_repo: MemoryRepo, git
) -> None:
    """`echo KEY | aws configure set aws_secret_access_key` whose result printed
    `AWS_SECRET_ACCESS_KEY=KEY`: the result was redacted, the arguments written as they
    were, and committed. The result is read first; the key is known in both."""
    key = "Zx9kP2mQ7vR4tY8wB3nL6jH1cF5gD0sA2eU9iO4p"
    call = {
        "event": "tool_call",
        "tool": "exec",
        "args": f"echo {key} | aws configure set aws_secret_access_key",
        "result": f"AWS_SECRET_ACCESS_KEY={key}",
        "session_id": "s1",
    }
    said = {"event": "message", "role": "user", "content": "set it up", "session_id": "s1"}
    report = process_stream(memory_repo, events(start(), said, call, {"event": "session_end"}))
    assert len(report.closed) == 1 and report.refused == []
    assert key not in git(memory_repo, "log", "-p", "--all").stdout
    text = (memory_repo.root / report.closed[0].path).read_text()
    assert "echo [redacted:aws_secret_key] | aws configure" in text


def test_a_refused_message_writes_none_of_its_tool_calls(memory_repo: MemoryRepo) -> None:
    """A message of an unknown role (or a role that is no string) was refused after its
    `tool_calls` had been written: the refused event left lines in the transcript, and the
    harness that sent it again, mended, had them twice. An event is written whole or not
    at all; an accepted message's text comes before the calls it makes."""

    def call(cid: str, name: str) -> dict:
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}

    report = process_stream(
        memory_repo,
        events(
            start("ses_partial"),
            {"event": "message", "role": "user", "content": "list files"},
            {"event": "message", "role": "bogus", "content": "x", "tool_calls": [call("a", "rm")]},
            {"event": "message", "role": 42, "content": "x", "tool_calls": [call("b", "cp")]},
            {"event": "message", "role": "bogus", "content": None, "tool_calls": [call("c", "mv")]},
            {
                "event": "message",
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [call("d", "ls")],
            },
            {"event": "session_end"},
        ),
    )
    assert [r.split(":")[0] for r in report.refused] == ["line 3", "line 4", "line 5"]
    turns = tf.parse((memory_repo.root / report.closed[0].path).read_text()).turns
    items = [
        ("call", i.tool) if isinstance(i, tf.ToolCall) else ("text", i.content.strip())
        for t in turns[1:]
        for i in t.items
    ]
    assert items == [("text", "Let me look."), ("call", "ls")]


def test_a_session_numbered_by_its_harness_is_captured(memory_repo: MemoryRepo) -> None:
    """A harness that numbers its sessions (`"session_id": 42`) had its session_start and
    every message refused: nothing of the session was kept. A whole number is the id's
    digits; a session_id that is neither text nor a whole number is still refused."""
    report = process_stream(
        memory_repo,
        events(
            {"event": "session_start", "session_id": 42, "started": "2026-03-01T10:00Z"},
            {"event": "message", "session_id": 42, "role": "user", "content": "hello"},
            {"event": "message", "session_id": 4.2, "role": "user", "content": "lost"},
            {"event": "session_end", "session_id": 42},
        ),
    )
    assert len(report.refused) == 1 and report.refused[0].startswith("line 3:")
    assert (
        "session_id must be a string like ses_a1b2c3d4 (or a whole number), not 4.2"
        in (report.refused[0])
    )
    assert len(report.closed) == 1 and "/1000-42-" in report.closed[0].path
    meta = tf.parse((memory_repo.root / report.closed[0].path).read_text()).meta
    assert meta.session_id == "42"


def test_a_warning_after_the_first_redaction_still_reaches_the_user(
    memory_repo: MemoryRepo, cli
) -> None:
    """detect-secrets, loaded on the first text that needs it, routes every warning of the
    process into logging when imported: a capture whose first message held a token said
    nothing of the empty message and the unread time after it. Run as a process, so the
    library loads during this capture."""
    stream = "".join(
        json.dumps(e) + "\n"
        for e in (
            {"event": "session_start", "session_id": "ses_warned"},
            {"event": "message", "role": "user", "content": "key ghp_" + "Y" * 36 + " here"},
            {"event": "message", "role": "user", "content": "   "},
            {"event": "message", "role": "user", "content": "hi", "ts": "2026-01-01T00:00Z"},
            {"event": "session_end"},
        )
    )
    done = cli("capture", repo=memory_repo, input=stream, process=True)
    assert done.returncode == 0, done.stderr
    assert "warning: a message with no text is not kept as a turn." in done.stderr
    assert "warning: a message event's time is read from 'timestamp', not 'ts'" in done.stderr


def test_a_time_of_zero_or_empty_is_the_time_the_event_arrived(memory_repo: MemoryRepo) -> None:
    """A harness that sends `timestamp: 0` or `""` for "not set" had its turn dated 1 January
    1970 (0) or now without a word (""); a session started "now" then held turns of 1970.
    Both are the time the event arrived, with a warning saying so."""
    report = process_stream(
        memory_repo,
        events(
            {"event": "session_start", "session_id": "ses_zero", "started": 0},
            {"event": "message", "role": "user", "content": "hello", "timestamp": 0},
            {"event": "message", "role": "agent", "content": "hi", "timestamp": ""},
            {"event": "session_end", "ended": 0},
        ),
    )
    assert report.refused == [] and len(report.closed) == 1
    t = tf.parse((memory_repo.root / report.closed[0].path).read_text())
    assert all(turn.time.year > 2000 for turn in t.turns) and t.meta.started.year > 2000
    said = "\n".join(report.warnings)
    assert "session ses_zero: a started of 0 is no time. The event is kept, dated " in said
    assert "(the time it arrived)" in said
    assert "session ses_zero: a timestamp of 0 is no time. The event is kept, dated " in said
    assert "session ses_zero: a timestamp of '' is no time." in said


def test_doctor_names_a_transcript_no_commit_holds(memory_repo: MemoryRepo, cli) -> None:
    """A transcript whose frontmatter recovery cannot read stayed untracked with only a
    warning, and `doctor` said everything was fine; so did an abandoned one (a capture
    killed before its end). Both are named, with what to do; a live capture's is not."""
    folder = memory_repo.conversations_dir / "2026/03/01"
    folder.mkdir(parents=True)
    (folder / "0900-dmg.md").write_text("---\nsession_id: dmg\nstarted: 2026-03-01T09:00:00Z\n")
    with pytest.warns(UserWarning, match="0900-dmg.md is not a readable transcript"):
        live = ConversationCapture(memory_repo)  # (a capture's start recovers what is left)
    live.on_session_start(Session("live", started=datetime(2026, 3, 1, 9, 10, tzinfo=UTC)))
    with pytest.warns(UserWarning, match="0900-dmg.md is not a readable transcript"):
        left = ConversationCapture(memory_repo)
    left.on_session_start(Session("gone", started=datetime(2026, 3, 1, 9, 5, tzinfo=UTC)))
    left.on_message("gone", "user", "hello")
    left.close_all()  # as a killed capture leaves it: open, unlocked
    try:
        doctor = cli("doctor", repo=memory_repo)
    finally:
        live.close_all()
    assert doctor.returncode == 1
    assert (
        "not readable as a transcript, so never committed: raw/conversations/2026/03/01/0900-dmg.md"
        in doctor.stdout
    )
    assert (
        "1 finished or abandoned transcript not committed: raw/conversations/2026/03/01/0905-gone"
        in doctor.stdout
    )
    assert "0910-live" not in doctor.stdout


def test_a_session_started_twice_at_once_is_filed_once(
    memory_repo: MemoryRepo, git, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two captures of one session id starting at once: the second asked whether the
    session existed before it took the session's lock, and the first ran whole in
    between (started, ended, committed), so the second wrote a second transcript of the
    session, which no commit admits (it then blocked `autopoiesis commit` for every
    transcript). The lock is taken first: the second is told the session was captured."""
    from autopoiesis.capture import session as capture_session

    when = datetime(2026, 3, 1, 9, tzinfo=UTC)
    first, second = ConversationCapture(memory_repo), ConversationCapture(memory_repo)
    take_lock = capture_session.session_lock

    def first_runs_whole_before_the_lock(repo: MemoryRepo, sid: str):
        monkeypatch.setattr(capture_session, "session_lock", take_lock)
        s = Session("twice", started=when)
        first.on_session_start(s)
        first.on_message(s, "user", "the first capture's message")
        assert first.on_session_end(s).commit
        return take_lock(repo, sid)

    monkeypatch.setattr(capture_session, "session_lock", first_runs_whole_before_the_lock)
    with pytest.raises(CaptureError, match="was already captured in raw/conversations/2026/03/01"):
        second.on_session_start(Session("twice", started=when))
    transcripts = [p for p in memory_repo.conversations_dir.rglob("*twice*.md")]
    assert len(transcripts) == 1
    assert git(memory_repo.root, "status", "--porcelain", "raw").stdout.strip() == ""


def test_recovery_passes_over_a_session_that_ends_as_it_looks(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture starting (its recovery) while another capture's session ended: recovery
    read the transcript open, took its lock once the live capture had closed and
    committed it under the same name, and tried to close it again: a warning said the
    transcript "could not be recovered ... it is left as it is", of one properly kept.
    Read again under the lock, it is passed over."""
    from autopoiesis.capture import closing

    live = ConversationCapture(memory_repo)
    s = Session("ends", started=datetime(2026, 3, 1, 9, tzinfo=UTC))
    live.on_session_start(s)
    live.on_message(s, "user", "!!!")  # no words: the closed transcript keeps its name
    take_lock = closing.session_lock
    ended = []

    def live_session_ends_first(repo: MemoryRepo, sid: str):
        monkeypatch.setattr(closing, "session_lock", take_lock)
        ended.append(live.on_session_end(s))
        return take_lock(repo, sid)

    monkeypatch.setattr(closing, "session_lock", live_session_ends_first)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert recover_abandoned(memory_repo) == []
    assert [str(w.message) for w in said] == []
    assert ended[0] is not None and ended[0].commit
    assert ended[0].path == "raw/conversations/2026/03/01/0900-ends.md"


def test_captured_sessions_leave_no_lock_files_behind(memory_repo: MemoryRepo) -> None:
    """Each session's capture takes a lock named for it (.autopoiesis/locks/session-ID.lock)
    and left the file there when the session ended: one file for every session ever
    captured (500 after 500 sessions). Its file goes with its release now; a recovery or
    a doctor's look at an uncommitted transcript takes and releases it alike."""
    locks = memory_repo.state_path("locks")
    cap = ConversationCapture(memory_repo)
    for n in range(5):
        s = Session(f"ses_gone{n}", started=datetime(2026, 2, 16, 18, n, tzinfo=UTC), model="m")
        cap.on_session_start(s)
        assert (locks / f"session-ses_gone{n}.lock").exists()  # held while it is live
        cap.on_message(s, "user", f"question {n}", {"timestamp": f"2026-02-16T18:{n:02d}:30Z"})
        cap.on_session_end(s, ended=f"2026-02-16T18:{n:02d}:50Z")
    killed = ConversationCapture(memory_repo)  # a capture killed mid-session
    s = Session("ses_killed", started=datetime(2026, 2, 16, 19, 0, tzinfo=UTC), model="m")
    killed.on_session_start(s)
    killed.on_message(s, "user", "then it died", {"timestamp": "2026-02-16T19:00:30Z"})
    held = killed._open[s.id].lock
    os.close(held.fd)  # what the kernel does when its process dies: the file stays
    held._fd = None
    assert (locks / "session-ses_killed.lock").exists()
    assert [c.status for c in recover_abandoned(memory_repo)] == ["recovered"]
    assert sorted(p.name for p in locks.glob("session-*")) == []
