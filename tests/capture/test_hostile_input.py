"""Capture under hostile input and failures: nothing raises out
of the stream, nothing blocks a session id, a killed commit loses nothing."""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autopoiesis.capture.closing import recover_abandoned
from autopoiesis.capture.session import ConversationCapture, Session
from autopoiesis.capture.stream import process_stream
from autopoiesis.core.clock import format_ts, parse_ts, utc_now
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import CaptureError, GitError
from autopoiesis.formats import transcript as tf
from autopoiesis.git.repo import MemoryGit
from tests.conftest import Cli, all_objects

ROOT = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000


def line(event: dict) -> bytes:
    return json.dumps(event).encode() + b"\n"


def msg(content: str, **kw) -> dict:
    return {"event": "message", "role": "user", "content": content, **kw}


def start(sid: str, **kw) -> dict:
    return {"event": "session_start", "session_id": sid, "started": "2026-02-16T18:45:00Z", **kw}


def transcripts(repo: MemoryRepo) -> list[Path]:
    return sorted(repo.conversations_dir.rglob("*.md"))


# ── 1. no input raises out of the stream loop ──
BAD_EVENTS = [
    (
        b'{"event": "message", "role": "user", "content": "x", "extra": ' + DEEP.encode() + b"}\n",
        "nested deeper",
    ),
    (
        b'{"event": "tool_call", "tool": "t", "args": ' + ("[" * 900 + "]" * 900).encode() + b"}\n",
        "",
    ),
    (b'{"event": "session_end", "tokens_in": "abc"}\n', "tokens_in"),
]

# Times no conversation can have: each event is kept all the same, at the time of the turn
# before it, with a warning naming the session and the value (they were refused, and
# what the user said with them was lost).
UNTRUSTED_TIMES = [
    (b'{"event": "message", "role": "user", "content": "x", "timestamp": NaN}\n', "timestamp nan"),
    (
        b'{"event": "message", "role": "user", "content": "x", "timestamp": Infinity}\n',
        "timestamp inf",
    ),
    (b'{"event": "message", "role": "user", "content": "x", "timestamp": 1e20}\n', "out of range"),
    (line(msg("x", timestamp="0001-01-01T00:00:00+01:00")), "out of range"),
    (line(msg("x", timestamp="9999-12-31T23:59:59-05:00")), "out of range"),
    (line(msg("x", timestamp=-1)), "timestamp -1 is outside 1970-2200"),
    # a month ahead of whenever the test runs
    (line(msg("x", timestamp=format_ts(utc_now() + timedelta(days=30)))), "is in the future"),
    (line(msg("x", timestamp="soon")), "not an ISO-8601 timestamp"),
    (line({"event": "tool_call", "tool": "t", "args": "a", "timestamp": 1e20}), "out of range"),
    (
        line({"event": "knowledge", "path": "k.md", "timestamp": "9999-12-31T23:59:59-05:00"}),
        "out of range",
    ),
]


@pytest.mark.parametrize(
    "bad, fragment", UNTRUSTED_TIMES, ids=[fragment for _, fragment in UNTRUSTED_TIMES]
)
def test_an_untrusted_time_keeps_its_event_at_the_turn_before(
    memory_repo: MemoryRepo, cli: Cli, bad: bytes, fragment: str
) -> None:
    """Through the CLI, as a harness sends it: the event is kept in its place, dated the
    turn before it, nothing is refused, and the warning names the session and the value."""
    stream = line(start("s1")) + line(msg("before", timestamp="2026-02-16T18:45:00Z")) + bad
    stream += line(msg("after", timestamp="2026-02-16T18:46:00Z"))
    stream += line({"event": "session_end", "ended": "2026-02-16T18:50:00Z"})
    out = cli("capture", repo=memory_repo, input=stream)
    assert out.returncode == 0, out.stderr
    assert "0 refused" in out.stderr and "refused:" not in out.stderr
    (warned,) = [w for w in out.stderr.splitlines() if w.startswith("warning: session s1: ")]
    assert fragment in warned.replace("'", ""), warned
    assert "The event is kept, dated 2026-02-16T18:45:00Z (the time of the turn before it)" in (
        out.stderr
    )
    (path,) = transcripts(memory_repo)
    assert "2026/02/16" in str(path)
    t = tf.parse(path.read_text())
    assert [turn.text for turn in t.turns][::2] == ["before", "after"] and len(t.turns) == 3
    assert [turn.time for turn in t.turns] == [
        parse_ts("2026-02-16T18:45:00Z"),
        parse_ts("2026-02-16T18:45:00Z"),
        parse_ts("2026-02-16T18:46:00Z"),
    ]
    assert t.meta.ended == parse_ts("2026-02-16T18:50:00Z")


def test_a_time_without_a_zone_is_read_as_utc_and_keeps_the_logs_chronology(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    """A converter that replays last year's chat log through `capture` with times that
    name no zone (Python's `isoformat()` of a naive time): they are read as UTC, as
    documented, without a warning each, so the session is filed on its own day and its
    turns keep their times (dated by their arrival, every turn would be today)."""
    stream = line(start("s2", started="2025-03-04T09:00:00"))
    stream += line(msg("first", timestamp="2025-03-04T09:01:00"))
    stream += line(msg("second", timestamp="2025-03-04T09:07:00"))
    stream += line({"event": "session_end", "ended": "2025-03-04T09:10:00"})
    out = cli("capture", repo=memory_repo, input=stream)
    assert out.returncode == 0, out.stderr
    assert "warning:" not in out.stderr
    (path,) = transcripts(memory_repo)
    assert "2025/03/04" in str(path)
    t = tf.parse(path.read_text())
    assert [turn.time for turn in t.turns] == [
        parse_ts("2025-03-04T09:01:00Z"),
        parse_ts("2025-03-04T09:07:00Z"),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("bad, fragment", BAD_EVENTS)
def test_a_bad_event_is_refused_with_its_line_and_the_stream_goes_on(
    memory_repo: MemoryRepo, bad: bytes, fragment: str
) -> None:
    report = process_stream(
        memory_repo,
        [
            line(start("s1")),
            line(msg("before")),
            bad,
            line(msg("after")),
            line({"event": "session_end"}),
        ],
    )
    assert len(report.closed) == 1, report.refused
    text = (memory_repo.root / report.closed[0].path).read_text()
    assert "before" in text and "after" in text
    if fragment:  # (a tool call nested 900 deep is readable: kept, not refused)
        assert (
            len(report.refused) == 1
            and report.refused[0].startswith("line 3: ")
            and fragment in report.refused[0]
        )


def test_a_utf16_stream_is_refused_saying_so_with_the_command_that_converts_it(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    utf8 = line(start("u16")) + line(msg("hello")) + line({"event": "session_end"})
    out = cli(
        "capture",
        repo=memory_repo,
        input=codecs.BOM_UTF16_LE + utf8.decode().encode("utf-16-le"),
        text=False,
    )
    assert out.returncode == 1 and not transcripts(memory_repo)
    first = out.stderr.decode().splitlines()[0]
    assert first.startswith("refused: line 1: the stream is UTF-16 text"), first
    assert "iconv -f UTF-16 -t UTF-8 FILE | autopoiesis capture" in first


@pytest.mark.slow
@pytest.mark.parametrize(
    "field", ["content", "args", "result", "topic", "name", "model", "channel", "tags", "path"]
)
def test_a_lone_surrogate_in_any_field_is_kept_as_a_replacement_character(
    memory_repo: MemoryRepo, field: str
) -> None:
    bad = "x\ud83dy"
    s = start(
        "s1",
        **{k: bad for k in ("topic", "model", "channel") if k == field},
        **({"tags": [bad]} if field == "tags" else {}),
    )
    events = [line(s)]
    if field in ("content", "name"):
        events.append(
            line(
                msg(
                    bad if field == "content" else "hello",
                    **({"name": bad} if field == "name" else {}),
                )
            )
        )
    elif field in ("args", "result"):
        events.append(
            line(
                {
                    "event": "tool_call",
                    "tool": "exec",
                    "args": bad if field == "args" else "a",
                    "result": bad,
                }
            )
        )
    elif field == "path":
        events.append(line({"event": "knowledge", "path": f"knowledge/{bad}.md", "summary": bad}))
    events += [line(msg("good")), line({"event": "session_end"})]
    report = process_stream(memory_repo, events)
    assert report.refused == []
    text = (memory_repo.root / report.closed[0].path).read_text(encoding="utf-8")
    assert "x\ufffdy" in text and "good" in text
    assert tf.render(tf.parse(text)) == text


def test_a_session_that_fails_to_start_leaves_no_file_and_its_id_stays_free(
    memory_repo: MemoryRepo, monkeypatch
) -> None:
    import autopoiesis.capture.session as session_mod

    real = session_mod._write_all

    def full_disk(fd: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session_mod, "_write_all", full_disk)
    report = process_stream(memory_repo, [line(start("s1", topic="a topic")), line(msg("lost"))])
    assert (
        "No space left on device" in report.refused[0] and "nothing was kept" in report.refused[0]
    )
    assert transcripts(memory_repo) == []
    monkeypatch.setattr(session_mod, "_write_all", real)
    report = process_stream(
        memory_repo,
        [line(start("s1", topic="a topic")), line(msg("kept")), line({"event": "session_end"})],
    )
    assert report.refused == [] and report.closed[0].commit


def test_a_failed_append_is_cut_back_and_refused_and_the_session_goes_on(
    memory_repo: MemoryRepo, monkeypatch
) -> None:
    import autopoiesis.capture.session as session_mod

    real = session_mod._write_all
    calls = {"n": 0}

    def half_then_fail(fd: int, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            os.write(fd, data[: len(data) // 2])
            raise OSError(28, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(session_mod, "_write_all", half_then_fail)
    report = process_stream(
        memory_repo,
        [
            line(start("s1")),
            line(msg("one")),
            line(msg("two two two")),
            line(msg("three")),
            line({"event": "session_end"}),
        ],
    )
    assert len(report.refused) == 1 and report.refused[0].startswith("line 3: cannot write")
    t = tf.parse((memory_repo.root / report.closed[0].path).read_text())
    assert [x.text for x in t.turns] == ["one", "three"]


def test_a_bad_session_end_leaves_the_session_open_for_a_good_one(memory_repo: MemoryRepo) -> None:
    report = process_stream(
        memory_repo,
        [
            line(start("s1")),
            line(msg("hi")),
            b'{"event": "session_end", "tokens_in": -3}\n',
            line({"event": "session_end"}),
        ],
    )
    assert len(report.refused) == 1 and report.refused[0].startswith("line 3:")
    assert (
        len(report.closed) == 1 and report.closed[0].status == "closed" and report.closed[0].commit
    )


def test_an_empty_transcript_left_by_an_old_crash_no_longer_blocks_its_id(
    memory_repo: MemoryRepo,
) -> None:
    leftover = memory_repo.root / tf.transcript_relpath("s1", parse_ts("2026-02-16T18:45:00Z"), "x")
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"")
    report = process_stream(
        memory_repo, [line(start("s1")), line(msg("hi")), line({"event": "session_end"})]
    )
    assert report.refused == [] and report.closed[0].commit
    assert not leftover.exists()


# fuzz: arbitrary bytes lines and arbitrary JSON events mixed with good ones
# text with lone surrogates too (what a JSON "\ud83d" escape decodes to)
_text = st.text(
    st.characters(codec=None) | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    max_size=12,
)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | _text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_text, children, max_size=4),
    max_leaves=12,
)
_keys = st.sampled_from(
    [
        "event",
        "session_id",
        "role",
        "content",
        "timestamp",
        "tool",
        "args",
        "result",
        "path",
        "summary",
        "name",
        "topic",
        "tags",
        "ended",
        "tokens_in",
        "started",
        "model",
        "channel",
        "action",
    ]
)
_event = st.fixed_dictionaries(
    {
        "event": st.sampled_from(
            [
                "message",
                "tool_call",
                "knowledge",
                "attachment",
                "session_end",
                "session_start",
                "nope",
            ]
        )
    },
    optional={"session_id": st.sampled_from(["good", "other", "bad/id", ""]) | st.text(max_size=5)},
).flatmap(
    lambda base: st.dictionaries(_keys, _json, max_size=5).map(lambda extra: {**extra, **base})
)
_hostile = st.one_of(
    st.binary(max_size=60),
    _json.map(lambda v: json.dumps(v).encode()),
    _event.map(lambda v: json.dumps(v).encode()),
    _text.map(lambda t: json.dumps({"event": "message", "role": "user", "content": t}).encode()),
    st.integers(900, 200_000).map(
        lambda n: b'{"event": "message", "role": "user", "content": ' + b"[" * n + b"]" * n + b"}"
    ),
    st.just(b'{"event": "message", "role": "user", "content": "x", "timestamp": 1e400}'),
)
FUZZ_RUNS = {"n": 0}


@pytest.mark.slow
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(junk=st.lists(_hostile, max_size=6))
def test_fuzz_no_input_escapes_the_stream_and_every_good_event_is_kept(
    memory_repo: MemoryRepo, junk: list[bytes]
) -> None:
    FUZZ_RUNS["n"] += 1
    if FUZZ_RUNS["n"] == 1:  # no commit per example: the fuzz is about the stream, and stays fast
        cfg = memory_repo.root / "memory-config.yaml"
        cfg.write_text(cfg.read_text().replace("auto_commit: true", "auto_commit: false"))
        memory_repo.__dict__.pop("config", None)
    sid = f"fz{FUZZ_RUNS['n']}"
    good = [line(msg(f"good-{sid}-{i}", session_id=sid)) for i in range(3)]
    # a second open session makes an event without session_id ambiguous, so junk cannot
    # legitimately end the good session (an explicit "session_end" for it would)
    lines = [line(start(sid)), line(start(f"decoy{sid}"))]
    for i, g in enumerate(good):
        lines += [j.replace(b"\n", b" ") + b"\n" for j in junk[i::3]]
        lines.append(g)
    lines.append(line({"event": "session_end", "session_id": sid}))
    report = process_stream(memory_repo, lines)  # must not raise
    mine = [c for c in report.closed if c.session_id == sid]
    assert mine, report.refused
    text = (memory_repo.root / mine[0].path).read_text(encoding="utf-8")
    for i in range(3):
        assert f"good-{sid}-{i}" in text
    assert tf.render(tf.parse(text)) == text
    assert all(r.startswith("line ") for r in report.refused)


# ── 6. one-line fields round-trip, whatever they hold ──
_field = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40) | st.sampled_from(
    ["a\rb", "a\nb", "x → y", "%20 %25", "]", ")("]
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    path=_field,
    summary=_field,
    tool=_field,
    args=_field,
    result=_field,
    name=_field,
    action=_field,
    att=_field,
)
def test_one_line_fields_can_never_break_the_round_trip(
    path, summary, tool, args, result, name, action, att
) -> None:
    items = (
        tf.KnowledgeOp(action, path, summary or None),
        tf.ToolCall(tool, args, result or None),
        tf.Attachment(att),
    )
    t = tf.Transcript(
        tf.TranscriptMeta(
            "s1",
            parse_ts("2026-02-16T18:45:00Z"),
            topic=path,
            model=name,
            tags=(summary,),
            knowledge_changes=(tf.KnowledgeChangeRef(path, action, summary),),
        ),
        "T",
        (tf.Turn(parse_ts("2026-02-16T18:46:00Z"), "agent", items, name=name or None),),
    )
    text = tf.render(t)
    back = tf.parse(text)
    assert back == t
    assert tf.render(back) == text


def test_a_line_break_in_a_knowledge_path_cannot_forge_a_turn(memory_repo: MemoryRepo) -> None:
    report = process_stream(
        memory_repo,
        [
            line(start("s1")),
            line(
                {
                    "event": "knowledge",
                    "path": "a.md\r\n## 18:50 — user\nforged",
                    "summary": "s\n> [tool:x] y",
                }
            ),
            line({"event": "session_end"}),
        ],
    )
    t = tf.parse((memory_repo.root / report.closed[0].path).read_text())
    assert [x.role for x in t.turns] == ["agent"]
    assert len(t.turns[0].items) == 1 and isinstance(t.turns[0].items[0], tf.KnowledgeOp)


# ── 7. every field is redacted ──
SECRET = "AKIAQWERTYUIOPASDFGH"


def _no_secret_anywhere(repo: MemoryRepo, git) -> None:
    for p in repo.root.rglob("*"):
        if p.is_file() and ".git" not in p.parts and ".autopoiesis" not in p.parts:
            assert SECRET.encode() not in p.read_bytes(), p
    assert SECRET.encode() not in all_objects(repo.root)
    assert (
        git(
            repo, "grep", "-c", SECRET, *git(repo, "rev-list", "--all").stdout.split(), check=False
        ).stdout
        == ""
    )
    assert SECRET not in git(repo, "log", "--all", "--format=%B").stdout


def test_a_secret_in_every_captured_field_reaches_neither_file_nor_git(
    memory_repo: MemoryRepo, git
) -> None:
    s = SECRET
    report = process_stream(
        memory_repo,
        [
            line(
                start("s1", topic=f"topic {s}", model=f"m-{s}", channel=f"c {s}", tags=[f"t {s}"])
            ),
            line(msg(f"content {s}", name=f"Bob {s}")),
            line({"event": "tool_call", "tool": f"tool {s}", "args": {"k": s}, "result": f"r {s}"}),
            line(
                {
                    "event": "knowledge",
                    "action": f"a {s}",
                    "path": f"knowledge/{s}.md",
                    "summary": f"sum {s}",
                }
            ),
            line({"event": "attachment", "path": f"files/{s}.png"}),
            line({"event": "session_end", "tags": [f"end {s}"]}),
        ],
    )
    assert report.refused == [] and report.closed[0].commit
    text = (memory_repo.root / report.closed[0].path).read_text()
    assert text.count("[redacted:") >= 12
    _no_secret_anywhere(memory_repo, git)


@pytest.mark.slow
def test_a_secret_in_every_imported_field_reaches_neither_file_nor_git(
    memory_repo: MemoryRepo, git, tmp_path: Path
) -> None:
    from autopoiesis.capture.importers import import_files

    s = SECRET
    src = tmp_path / "in.json"
    src.write_text(
        json.dumps(
            {
                "session_id": "imp1",
                "started": "2026-02-16T18:45:00Z",
                "model": f"m {s}",
                "channel": f"c {s}",
                "topic": f"t {s}",
                "tags": [f"g {s}"],
                "messages": [
                    {
                        "role": "user",
                        "name": f"n {s}",
                        "content": f"c {s}",
                        "tool_calls": [{"tool": f"x {s}", "args": {"a": s}, "result": f"r {s}"}],
                        "attachments": [f"at/{s}.png"],
                    }
                ],
            }
        )
    )
    report = import_files(memory_repo, [src])
    assert report.refused == [] and report.commit
    src2 = tmp_path / f"cc-{s}.jsonl"  # the file name lands in `source`
    src2.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "cc1",
                "timestamp": "2026-02-16T18:45:00Z",
                "message": {"role": "user", "content": "hello"},
            }
        )
        + "\n"
    )
    report = import_files(memory_repo, [src2], "claude-code")
    assert report.refused == [] and report.commit
    _no_secret_anywhere(memory_repo, git)


# ── 3. a crash during the commit loses nothing ──
SLOW_HOOK = '#!/bin/sh\ntouch "$MARK"\nsleep 30\n'


def _chain_slow_hook(repo: MemoryRepo) -> None:
    hooks = Path(MemoryGit(repo).run("rev-parse", "--git-path", "hooks").stdout.strip())
    hooks = hooks if hooks.is_absolute() else repo.root / hooks
    (hooks / "pre-commit.local").write_text(SLOW_HOOK)
    (hooks / "pre-commit.local").chmod(0o755)


def _kill_capture_mid_commit(repo: MemoryRepo, tmp_path: Path, sid: str) -> None:
    mark = tmp_path / f"in-hook-{sid}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MARK": str(mark)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "capture"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(
        line(start(sid)) + line(msg(f"precious {sid}")) + line({"event": "session_end"})
    )
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not mark.exists():
        assert time.monotonic() < deadline and proc.poll() is None, (
            "the commit never reached the hook"
        )
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_kill_during_the_commit_then_recovery_commits_the_transcript(
    memory_repo: MemoryRepo, git, tmp_path: Path, cli: Cli
) -> None:
    _chain_slow_hook(memory_repo)
    _kill_capture_mid_commit(memory_repo, tmp_path, "k1")
    lock = Path(git(memory_repo, "rev-parse", "--absolute-git-dir").stdout.strip()) / "index.lock"
    assert lock.exists()
    hooks = memory_repo.root / ".git" / "hooks"
    (hooks / "pre-commit.local").unlink()
    # an unrelated knowledge commit does not sweep the transcript in
    (memory_repo.root / "knowledge" / "reference" / "note.md").write_text("# Note\n\nA fact.\n")
    out = cli("commit", "-m", "memory: add a note", repo=memory_repo, text=False)
    assert out.returncode == 0, out.stderr
    assert b"removed a stale" in out.stderr
    for sha in git(memory_repo, "rev-list", "HEAD").stdout.split():
        subject = git(memory_repo, "show", "-s", "--format=%s", sha).stdout
        files = git(memory_repo, "show", "--name-only", "--format=", sha).stdout
        if any(f.startswith("raw/conversations/") and f.endswith(".md") for f in files.split()):
            assert subject.startswith("conversation:"), (subject, files)
    t = [p for p in transcripts(memory_repo) if "k1" in p.name]
    assert len(t) == 1 and "precious k1" in t[0].read_text()
    assert git(memory_repo, "log", "--format=%s", "--", memory_repo.rel(t[0])).stdout.startswith(
        "conversation:"
    )
    assert not lock.exists()
    assert git(memory_repo, "fsck", "--no-progress").returncode == 0
    assert git(memory_repo, "status", "--porcelain", "--", "raw").stdout == ""


@pytest.mark.slow
def test_capture_recover_finds_a_staged_transcript_and_clears_our_stale_lock(
    memory_repo: MemoryRepo, git, tmp_path: Path, cli: Cli
) -> None:
    _chain_slow_hook(memory_repo)
    _kill_capture_mid_commit(memory_repo, tmp_path, "k2")
    (memory_repo.root / ".git" / "hooks" / "pre-commit.local").unlink()
    out = cli("capture", "--recover", repo=memory_repo, text=False)
    assert out.returncode == 0, out.stderr
    assert b"removed a stale" in out.stderr and b"recovered raw/conversations/" in out.stdout
    assert git(memory_repo, "status", "--porcelain", "--", "raw").stdout == ""
    # the next capture starts normally
    out = cli(
        "capture",
        repo=memory_repo,
        input=line(start("k3")) + line(msg("next")) + line({"event": "session_end"}),
        text=False,
        process=True,
    )
    assert out.returncode == 0, out.stderr


def test_a_transcript_left_staged_by_an_old_version_is_recovered(
    memory_repo: MemoryRepo, git
) -> None:
    cap = ConversationCapture(memory_repo, auto_commit=False)
    cap.on_session_start(Session("old1"))
    cap.on_message("old1", "user", "staged long ago")
    closed = cap.on_session_end("old1")
    assert closed is not None and closed.commit is None
    git(memory_repo, "add", closed.path)
    recovered = recover_abandoned(memory_repo)
    assert [r.path for r in recovered] == [closed.path] and recovered[0].commit


@pytest.mark.slow
def test_an_index_lock_of_another_program_is_reported_with_the_fix_not_removed(
    memory_repo: MemoryRepo, git
) -> None:
    lock = memory_repo.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    report = process_stream(
        memory_repo, [line(start("f1")), line(msg("kept anyway")), line({"event": "session_end"})]
    )
    assert lock.exists()
    closed = report.closed[0]
    assert closed.commit is None and f"rm {lock}" in (closed.not_committed or "")
    assert "kept anyway" in (memory_repo.root / closed.path).read_text()
    lock.unlink()
    recovered = recover_abandoned(memory_repo)
    assert [r.path for r in recovered] == [closed.path] and recovered[0].commit


@pytest.mark.slow
def test_capture_exits_1_when_a_session_could_not_be_committed(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    lock = memory_repo.root / ".git" / "index.lock"  # another program's: git refuses
    lock.write_bytes(b"")
    out = cli(
        "capture",
        repo=memory_repo,
        input=line(start("f2")) + line(msg("kept, not committed")) + line({"event": "session_end"}),
        text=False,
    )
    assert out.returncode == 1, out.stderr  # the harness learns it from the status
    assert b"0 sessions committed, 1 closed but not committed" in out.stderr
    event = json.loads(out.stdout.decode().splitlines()[0])
    assert "kept, not committed" in (memory_repo.root / event["path"]).read_text()
    lock.unlink()


def test_a_transcript_cut_mid_utf8_at_its_tail_is_recovered(memory_repo: MemoryRepo, git) -> None:
    cap = ConversationCapture(memory_repo)
    path = cap.on_session_start(Session("cut1"))
    cap.on_message("cut1", "user", "first message")
    cap.close_all()
    with path.open("ab") as fh:
        fh.write("\n## 18:50 — user\ncaf\u00e9 \u00e9".encode()[:-1])  # killed inside the last é
    recovered = recover_abandoned(memory_repo)
    assert len(recovered) == 1 and recovered[0].commit and recovered[0].status == "recovered"
    text = (memory_repo.root / recovered[0].path).read_text(encoding="utf-8")
    assert "first message" in text and "café" in text
    assert tf.render(tf.parse(text)) == text


LONG_LINE_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    from autopoiesis.capture.stream import process_stream
    from autopoiesis.core.paths import MemoryRepo
    repo = MemoryRepo(sys.argv[1])
    repo.config
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = process_stream(repo, sys.stdin.buffer)
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"refused": report.refused, "closed": [c.path for c in report.closed], "grew_kb": grew}))
""")


@pytest.mark.slow
def test_a_line_past_the_cap_is_refused_without_holding_it_and_the_rest_is_kept(
    memory_repo: MemoryRepo,
) -> None:
    """A 64 MB event line is read through in pieces and refused with its size; the events
    around it are kept, and the process grows by about the cap, not by the line."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LONG_LINE_SCRIPT, str(memory_repo.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdin is not None
    proc.stdin.write(line(start("big1")) + line(msg("before the long line")))
    proc.stdin.write(b'{"event": "message", "role": "user", "content": "')
    chunk = b"y" * (1 << 20)
    for _ in range(64):
        proc.stdin.write(chunk)
    proc.stdin.write(b'"}\n' + line(msg("after the long line")) + line({"event": "session_end"}))
    proc.stdin.close()
    out = json.loads(proc.stdout.read() if proc.stdout else b"{}")
    assert proc.wait() == 0
    (refused,) = out["refused"]
    assert refused.startswith("line 3: 67108916 bytes, over the cap of 9437184")
    text = (memory_repo.root / out["closed"][0]).read_text()
    assert "before the long line" in text and "after the long line" in text
    assert out["grew_kb"] < 40 * 1024, out["grew_kb"]


# ── 4. disk full ──
FULL_DISK_SCRIPT = textwrap.dedent("""
    import json, resource, signal, sys
    from autopoiesis.capture.stream import process_stream
    from autopoiesis.core.paths import MemoryRepo
    repo = MemoryRepo(sys.argv[1])
    repo.config  # read before the limit
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
    lines = [l.encode() + b"\\n" for l in sys.argv[3:]]
    report = process_stream(repo, lines)
    print(json.dumps({"refused": report.refused, "left_open": report.left_open, "closed": [c.path for c in report.closed]}))
""")


def test_disk_full_rlimit_refuses_clearly_and_blocks_nothing(memory_repo: MemoryRepo) -> None:
    """Writes fail with EFBIG beyond RLIMIT_FSIZE (what a full disk looks like to capture)."""
    events = [
        json.dumps(start("df1", topic="x" * 50)),
        json.dumps(msg("y" * 5000)),
        json.dumps({"event": "session_end"}),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK_SCRIPT, str(memory_repo.root), "200", *events],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (
        result["refused"][0].startswith("line 1: cannot write")
        and "nothing was kept" in result["refused"][0]
    )
    assert transcripts(memory_repo) == []
    report = process_stream(
        memory_repo,
        [line(start("df1", topic="x" * 50)), line(msg("y")), line({"event": "session_end"})],
    )
    assert report.refused == [] and report.closed[0].commit


def test_disk_full_tmpfs_refuses_clearly_and_blocks_nothing(memory_repo: MemoryRepo, git) -> None:
    """A real full file system: a 64 KiB tmpfs mounted on the transcripts' day folder."""
    day = memory_repo.conversations_dir / "2026" / "02" / "16"
    day.mkdir(parents=True)
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(day)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        report = process_stream(
            memory_repo,
            [
                line(start("tf1")),
                line(msg("small one")),
                *[line(msg("z" * 20_000)) for _ in range(5)],
                line({"event": "session_end"}),
            ],
        )
        assert any("No space left on device" in r for r in report.refused), report.refused
        # the close needs room for the final file: refused, the transcript stays open with every kept message
        for p in day.glob("*.md"):
            assert p.stat().st_size > 0
            assert "small one" in p.read_text()
        report2 = process_stream(memory_repo, [line(start("tf2")), line(msg("x" * 70_000))])
        assert report2.refused and "No space left on device" in report2.refused[-1]
    finally:
        subprocess.run(["umount", "-l", str(day)], check=False)
    # nothing is blocked: with space again, the session ids are free or recoverable
    report = process_stream(
        memory_repo, [line(start("tf3")), line(msg("fine")), line({"event": "session_end"})]
    )
    assert report.refused == [] and report.closed[0].commit


@contextlib.contextmanager
def full_folder(folder: Path, size: str = "16k") -> Iterator[Path]:
    """FOLDER on a tmpfs of SIZE, filled up: a real full file system there (needs root)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        with contextlib.suppress(OSError), (folder / "filler").open("wb") as fh:
            while True:
                fh.write(b"f" * 4096)
                fh.flush()
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_full_disk_under_the_git_record_runs_no_git_and_leaves_no_lock(
    memory_repo: MemoryRepo, git
) -> None:
    """The record of a running git (.autopoiesis/locks/git-index.PID.json) cannot be
    written: git is not started, so no index.lock is left that nothing explains."""
    (memory_repo.root / "knowledge/reference/disk.md").write_text("# Disk\n\n- a fact\n")
    locks = memory_repo.state_dir / "locks"
    with full_folder(locks), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            MemoryGit(memory_repo).commit_paths(["knowledge/reference/disk.md"], "memory: disk")
        except GitError as exc:  # the road through `git commit`: nothing was run
            assert "was not run and nothing changed. Free disk space" in str(exc)
        else:  # the plumbing road: committed without the index, whose update was refused
            assert any("git index could not be updated" in str(w.message) for w in caught)
        assert not (memory_repo.root / ".git/index.lock").exists()
        assert not [p for p in locks.iterdir() if p.name.startswith("git-index.")]
    MemoryGit(memory_repo).commit_paths(["knowledge/reference/disk.md"], "memory: disk")
    assert "disk.md" in git(memory_repo, "log", "-1", "--stat", "--", "knowledge/reference").stdout
    assert git(memory_repo, "status", "--porcelain", "--", "knowledge/reference").stdout == ""


def _neutral_log(tmp: Path, sid: str, text: str) -> Path:
    log = tmp / f"{sid}.json"
    log.write_text(
        json.dumps(
            {
                "session_id": sid,
                "started": "2026-02-16T18:45:00Z",
                "messages": [{"role": "user", "content": text}],
            }
        )
    )
    return log


@pytest.mark.slow
def test_a_transcript_an_import_wrote_but_could_not_commit_is_committed_by_the_next(
    memory_repo: MemoryRepo, git, tmp_path: Path
) -> None:
    from autopoiesis.capture.importers import import_files

    log = _neutral_log(tmp_path, "ses_w1", "written, then the commit failed")
    lock = memory_repo.root / ".git" / "index.lock"  # another program's: the commit fails
    lock.write_bytes(b"")
    first = import_files(memory_repo, [log])
    assert first.imported and not first.commit and "not committed" in first.refused[0]
    lock.unlink()
    again = import_files(memory_repo, [log])
    assert again.skipped_duplicates == []  # it was not "already imported"
    assert again.imported == first.imported and again.commit
    assert "never committed" in again.warnings[0]
    assert git(memory_repo, "log", "--format=%H", "--", first.imported[0]).stdout.strip()
    assert import_files(memory_repo, [log]).skipped_duplicates == first.imported


def test_a_full_disk_leaves_no_temporary_file_in_raw(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    from autopoiesis.capture.importers import import_files

    day = memory_repo.conversations_dir / "2026" / "02" / "16"
    log = _neutral_log(tmp_path, "ses_t1", "x" * 40_000)
    with full_folder(day, "64k"):
        report = import_files(memory_repo, [log])
        assert report.refused and "No space left on device" in report.refused[0]
        assert [p.name for p in day.iterdir()] == ["filler"]  # no 0-byte .tmp left behind


# ── 5. git.auto_commit: false ──
@pytest.mark.slow
def test_auto_commit_false_says_closed_not_committed_and_commit_commits_it(
    memory_repo: MemoryRepo, git, cli: Cli
) -> None:
    cfg = memory_repo.root / "memory-config.yaml"
    text = cfg.read_text()
    assert "auto_commit: true" in text
    cfg.write_text(text.replace("auto_commit: true", "auto_commit: false"))
    out = cli(
        "capture",
        repo=memory_repo,
        input=line(start("ac1")) + line(msg("manual please")) + line({"event": "session_end"}),
        text=False,
        process=True,
    )
    assert out.returncode == 0, out.stderr
    event = json.loads(out.stdout.decode().splitlines()[0])
    assert (
        event["event"] == "closed"
        and event["commit"] is None
        and "autopoiesis commit" in event["reason"]
    )
    assert b"0 sessions committed, 1 closed but not committed" in out.stderr
    path = event["path"]
    assert git(memory_repo, "log", "--format=%H", "--", path).stdout == ""
    out = cli("commit", repo=memory_repo, text=False)
    assert out.returncode == 0, out.stderr
    assert b"conversation: ac1" in out.stdout
    assert git(memory_repo, "log", "-1", "--format=%s", "--", path).stdout.startswith(
        "conversation: ac1"
    )
    assert git(memory_repo, "status", "--porcelain", "--", "raw").stdout == ""


def test_library_session_start_failure_raises_capture_error_without_a_file(
    memory_repo: MemoryRepo, monkeypatch
) -> None:
    import autopoiesis.capture.session as session_mod

    monkeypatch.setattr(
        session_mod,
        "_write_all",
        lambda fd, data: (_ for _ in ()).throw(OSError(27, "File too large")),
    )
    cap = ConversationCapture(memory_repo)
    with pytest.raises(CaptureError, match="File too large"):
        cap.on_session_start(Session("lib1", topic="t"))
    assert transcripts(memory_repo) == [] and cap.open_sessions == []


def test_a_secret_across_a_cut_is_redacted_whole(memory_repo) -> None:
    """Fields are redacted before they are cut to one line: a key that straddles the
    300-character cut of a tool argument must not leave its head in the transcript."""
    import json as _json

    from autopoiesis.capture.stream import process_stream

    key = "AKIA" + "Q7XZ2M4K9P3W8R5T"
    args = "x" * 290 + " " + key + " tail"
    lines = [
        _json.dumps(e).encode()
        for e in (
            {"event": "session_start", "session_id": "cut1", "started": "2026-03-01T09:00:00Z"},
            {"event": "message", "role": "user", "content": "run it", "name": "y" * 75 + key},
            {"event": "tool_call", "tool": "exec", "args": args, "result": "ok"},
            {"event": "session_end"},
        )
    ]
    report = process_stream(memory_repo, lines)
    text = (memory_repo.root / report.closed[0].path).read_text(encoding="utf-8")
    assert "AKIA" not in text
    assert "Q7XZ2M4K" not in text
