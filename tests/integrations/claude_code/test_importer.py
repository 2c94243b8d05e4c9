"""The Claude Code importer on the shared sample logs: tool calls, malformed lines counted, summaries, re-imports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf


def test_claude_code_samples(memory_repo: MemoryRepo, shared_data: Path, git) -> None:
    folder = shared_data / "claude-code"
    report = import_files(memory_repo, sorted(folder.glob("*.jsonl")))
    assert report.refused == []
    # edge_cases.jsonl holds deliberately malformed lines: each is counted, none aborts
    assert report.bad_lines >= 4
    assert all("edge_cases" in w for w in report.warnings if "skipped" in w)
    ids = {tf.parse((memory_repo.root / p).read_text()).meta.session_id for p in report.imported}
    assert {"test-session-id", "edge_cases", "test_session"} <= ids
    sample = next(p for p in report.imported if "test-session-id" in p)
    assert sample.startswith("raw/conversations/2025/12/24/1000-test-session-id-")
    t = tf.parse((memory_repo.root / sample).read_text())
    # its summary line's leaf is no message of this file: another session's summary
    assert t.meta.topic is None and "create-a-hello-world-function" in sample
    assert t.meta.channel == "claude-code"
    tools = [i for turn in t.turns for i in turn.items if isinstance(i, tf.ToolCall)]
    assert tools[0].tool == "Write"
    assert tools[0].result == "File written successfully"
    assert tools[1].tool == "Bash"
    assert tools[1].args.startswith("git add . && git commit")
    # every good message line of the edge-case file is kept, unicode intact
    edge = next(p for p in report.imported if "edge_cases" in p)
    text = (memory_repo.root / edge).read_text()
    assert "café, naïve, résumé, 中文" in text
    # the summary line names the session holding its leafUuid, not every session of the file
    metas = {
        tf.parse((memory_repo.root / p).read_text()).meta.session_id: tf.parse(
            (memory_repo.root / p).read_text()
        ).meta
        for p in report.imported
    }
    assert metas["edge_cases"].topic.startswith("Tested various edge cases")
    assert metas["todowrite_session"].topic is None
    assert git(memory_repo.root, "status", "--porcelain").stdout == ""


def test_reimport_is_a_noop(memory_repo: MemoryRepo, shared_data: Path, git) -> None:
    files = sorted((shared_data / "claude-code").glob("*.jsonl"))
    first = import_files(memory_repo, files)
    head = git(memory_repo.root, "rev-parse", "HEAD").stdout
    again = import_files(memory_repo, files)
    assert again.imported == []
    assert sorted(again.skipped_duplicates) == sorted(first.imported)
    assert git(memory_repo.root, "rev-parse", "HEAD").stdout == head


def test_a_line_whose_timestamp_is_a_number_is_kept_at_its_neighbours_time_not_1970(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Claude Code writes ISO times: one line with `"timestamp": 12345` was read as epoch
    seconds, and the session was filed under raw/conversations/1970/01/01/ (its journal
    written for 1970-01-01). The line is kept, dated as the line before it, with its
    reason; the session keeps its day."""

    lines = [
        {
            "type": "user",
            "timestamp": "2025-12-24T10:00:00.000Z",
            "sessionId": "numeric-ts",
            "message": {"role": "user", "content": "Create a hello world function"},
            "uuid": "m1",
        },
        {
            "type": "assistant",
            "timestamp": 12345,
            "sessionId": "numeric-ts",
            "message": {"role": "assistant", "content": "a reply of another time"},
            "uuid": "m2",
        },
    ]
    log = tmp_path / "numeric.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    report = import_files(memory_repo, [log])
    (filed,) = report.imported
    assert filed.startswith("raw/conversations/2025/12/24/")
    assert any("timestamp 12345 is a number, not an ISO time" in w for w in report.warnings)
    turns = tf.parse((memory_repo.root / filed).read_text()).turns
    assert [t.text for t in turns] == ["Create a hello world function", "a reply of another time"]


def test_a_message_whose_timestamp_is_missing_or_unreadable_is_kept_in_its_place(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A line without a usable `timestamp` (missing, `null`, "soon") was skipped as
    malformed, and the message it held never reached the transcript. Each is kept in its
    place, dated as the line before it (the first line, as the first dated line after
    it), with a warning naming the line; a second import files nothing new."""

    def line(n: int, role: str, text: str, **when: object) -> dict[str, object]:
        return {
            "type": role,
            "sessionId": "undated-lines",
            "uuid": f"m{n}",
            "message": {"role": role, "content": text},
            **when,
        }

    lines = [
        line(1, "user", "first words, never dated"),
        line(2, "assistant", "an answer at ten", timestamp="2025-12-24T10:00:00Z"),
        line(3, "user", "a question written without a time", timestamp=None),
        line(4, "assistant", "an answer with a broken time", timestamp="soon"),
        line(5, "user", "thanks, at five past", timestamp="2025-12-24T10:05:00Z"),
    ]
    log = tmp_path / "undated.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    report = import_files(memory_repo, [log])
    assert report.refused == [] and report.bad_lines == 0
    (filed,) = report.imported
    turns = tf.parse((memory_repo.root / filed).read_text()).turns
    assert [t.text for t in turns] == [x["message"]["content"] for x in lines]  # type: ignore[index]
    assert [t.time.strftime("%H:%M") for t in turns] == ["10:00"] * 4 + ["10:05"]
    kept = [w for w in report.warnings if "the line is kept" in w]
    assert [w.split(": ")[0].rsplit(":", 1)[1] for w in kept] == ["1", "3", "4"]
    assert "first dated line after it" in kept[0] and "line before it" in kept[2]
    assert import_files(memory_repo, [log]).imported == []


def test_a_user_message_that_quotes_a_bash_tag_is_their_words(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Any `<bash-...>` element in a user's message made it the record of a `!` command:
    a question quoting `<bash-stdout>permission denied</bash-stdout>` from a log left no
    user turn, its words lost. Only a message that is wholly such a record is one (Claude
    Code writes the command, then its output, each as a message of its own); the command
    is still a bash call with its output, and the question is the user's turn as typed."""
    question = (
        "In my log I see <bash-stdout>permission denied</bash-stdout> after the deploy step; "
        "why does the deploy fail?"
    )
    said = [
        ("user", "<bash-input>ls deploy</bash-input>"),
        ("user", "<bash-stdout>run.sh</bash-stdout><bash-stderr></bash-stderr>"),
        ("user", question),
        ("assistant", "The deploy user lacks write access."),
    ]
    lines = [
        {
            "type": role,
            "timestamp": f"2026-02-01T10:00:0{n}.000Z",
            "sessionId": "bash-mention",
            "message": {"role": role, "content": text},
            "uuid": f"m{n}",
        }
        for n, (role, text) in enumerate(said)
    ]
    log = tmp_path / "bash_mention.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    report = import_files(memory_repo, [log])
    (filed,) = report.imported
    t = tf.parse((memory_repo.root / filed).read_text(encoding="utf-8"), filed)
    assert [turn.role for turn in t.turns] == ["user", "user", "agent"]
    assert t.turns[0].items == (tf.ToolCall("bash", "ls deploy", "run.sh"),)
    assert t.turns[1].text == question


def test_a_message_whose_content_is_a_number_is_kept_as_its_digits(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`"content": 12345` (a hand-made or broken log): the turn was dropped without a word
    and the import said nothing. It is kept as its digits, as capture keeps such a field;
    a boolean is still no text."""
    from tests.capture.test_import import _claude_log

    log = tmp_path / "c.jsonl"
    sent: list[tuple[str, Any]] = [("user", 12345), ("assistant", 2.5), ("user", True)]
    log.write_bytes(_claude_log("cnum", sent))
    report = import_files(memory_repo, [log])
    assert report.refused == [], report.refused
    turns = tf.parse((memory_repo.root / report.imported[0]).read_text()).turns
    said = [(t.role, i.content.strip()) for t in turns for i in t.items if isinstance(i, tf.Text)]
    assert said == [("user", "12345"), ("agent", "2.5")]
