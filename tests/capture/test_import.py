"""Importing finished sessions, whatever the format: bad files refused with a reason, a session id that comes back with other content refused, the CLI, formats as plugins (one class, one registration), detection."""

from __future__ import annotations

import json
import os
from datetime import UTC
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.capture.importers.summary import summarize
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.conftest import Cli


def test_bad_files_are_refused_with_a_reason(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    binary = tmp_path / "blob.json"
    binary.write_bytes(b"\x00\x01\x02binary")
    latin = tmp_path / "latin.json"
    latin.write_bytes(
        '{"session_id": "x", "messages": [{"role": "user", "content": "caf\xe9"}]}'.encode(
            "latin-1"
        )
    )
    unsafe = tmp_path / "unsafe.json"
    unsafe.write_text(
        json.dumps(
            {
                "session_id": "../evil",
                "started": "2026-01-01T00:00:00Z",
                "messages": [{"role": "user", "content": "x"}],
            }
        )
    )
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    dangling = tmp_path / "gone.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    report = import_files(
        memory_repo, [binary, latin, unsafe, tmp_path / "missing.json", fifo, dangling, "-"]
    )
    assert report.imported == []
    joined = "\n".join(report.refused)
    # a pipe, a link to nothing and `-` exist: not "no such file" (a pipe read would block)
    assert f"{fifo}: no regular file (a pipe" in joined
    assert f"{dangling}: a link to nothing" in joined
    assert "-: import reads log files and folders, not standard input" in joined
    assert "looks binary" in joined and "Markdown export" in joined
    assert "not valid UTF-8" in joined
    assert "'/'" in joined
    assert "no such file" in joined
    assert not (memory_repo.root.parent / "evil").exists()


def test_a_session_is_never_written_through_a_link_a_clone_holds(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A month's folder of transcripts that is a symbolic link (pulled from a collaborator,
    kept by a clone): the session was written wherever it pointed. It is refused, naming
    the link, as one to try again (the session watcher does); once the link is gone it is
    filed."""
    log = tmp_path / "s.jsonl"
    log.write_bytes(_claude_log("linked", [("user", "hello there"), ("assistant", "hi")]))
    outside = tmp_path / "outside"
    outside.mkdir()
    month = memory_repo.conversations_dir / "2025" / "12"
    month.parent.mkdir(parents=True)
    month.symlink_to(outside)
    report = import_files(memory_repo, [log])
    assert report.imported == [] and list(outside.rglob("*")) == []
    assert len(report.refused) == 1 and report.temporary == report.refused
    assert f"raw/conversations/2025/12 -> {outside} is a symbolic link" in report.refused[0]
    month.unlink()
    report = import_files(memory_repo, [log])
    assert len(report.imported) == 1 and report.refused == []
    assert "hello there" in (memory_repo.root / report.imported[0]).read_text()


def _claude_log(sid: str, said: list[tuple[str, str]], first: int = 0) -> bytes:
    """A Claude Code log of SAID ((role, text) a line, numbered from FIRST), as bytes."""
    return b"".join(
        json.dumps(
            {
                "type": role,
                "timestamp": f"2025-12-24T10:00:0{n}.000Z",
                "sessionId": sid,
                "message": {"role": role, "content": text},
                "uuid": f"m{n}",
            },
            ensure_ascii=False,
        ).encode()
        + b"\n"
        for n, (role, text) in enumerate(said, first)
    )


SAID = [
    ("user", "Create a hello world function"),
    ("assistant", "Done: hello() is in hello.py."),
    ("user", "Now add a goodbye function"),
    ("assistant", "Done! goodbye() is ready, café included."),
]


def test_a_damaged_line_of_a_json_lines_log_is_kept_or_skipped_and_every_other_kept(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """One byte that is not UTF-8 refused a whole log ("is not valid UTF-8 (byte 1759);
    re-encode it"), and then dropped its whole message: a `\\xff` in one message. A final
    line cut in the middle of a character as a crash leaves a log being written; NUL
    padding at the end was refused as binary in a small file and imported from a big one.
    A log of JSON lines is read line by line: the message with a bad byte is kept, the
    byte read as U+FFFD, and the file's warning says so; the cut line is skipped and
    counted like a malformed one, with its number; the padding is trimmed; every other
    line is kept."""
    bad_byte = tmp_path / "badutf8.jsonl"
    bad_byte.write_bytes(
        _claude_log("bad-byte", SAID[:2])
        + b'{"type":"user","sessionId":"bad-byte","message":{"content":"a \xff\xfe b"}}\n'
        + _claude_log("bad-byte", SAID[3:], 3)
    )
    cut = tmp_path / "trunc_mb.log"  # no .jsonl name: its first line is a JSON object
    whole = _claude_log("cut-off", SAID)
    cut.write_bytes(whole[: whole.index("café".encode()) + 4])
    padded = tmp_path / "zerotail_small.jsonl"
    padded.write_bytes(_claude_log("padded", SAID) + b"\x00" * 4096)
    report = import_files(memory_repo, [bad_byte, cut, padded])
    assert report.refused == [], report.refused
    assert report.bad_lines == 1
    told = (
        f"{bad_byte}: 1 line with bytes that are not UTF-8 (the first: line 3, byte 62) was "
        "read with each such byte as U+FFFD (\ufffd)"
    )
    assert told in report.warnings and told in summarize(report.warnings)
    assert f"{cut}:4: skipped (not valid UTF-8: cut off in the middle of a character)" in (
        report.warnings
    )
    read = {
        t.meta.session_id: [turn.text for turn in t.turns]
        for t in (tf.parse((memory_repo.root / r).read_text(), r) for r in report.imported)
    }
    texts = [text for _, text in SAID]
    assert read == {
        "bad-byte": [texts[0], texts[1], "a \ufffd\ufffd b", texts[3]],
        "cut-off": texts[:3],
        "padded": texts,
    }


def test_a_file_that_is_no_utf8_text_is_refused_saying_what_it_is(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """What is refused says what the file is and what to do: UTF-16 text (with a BOM or
    without) is named so, with the iconv command that converts it; NULs throughout, an
    image, or space never written are no log; a whole document (a JSON file) with a bad
    byte inside is refused at its line, since dropping a byte would change what it says.
    A Markdown export cut off in the middle of its last character keeps all before it."""
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes(_claude_log("wide", SAID).decode().encode("utf-16"))
    utf16le = tmp_path / "utf16le.jsonl"
    utf16le.write_bytes(_claude_log("wide", SAID).decode().encode("utf-16-le"))
    image = tmp_path / "image.jsonl"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    unwritten = tmp_path / "unwritten.jsonl"
    unwritten.write_bytes(b"\x00" * 8192)
    document = tmp_path / "latin.json"
    document.write_bytes(
        b'{"session_id": "doc", "started": "2026-01-01T10:00:00Z",\n'
        b' "messages": [{"role": "user", "content": "caf\xe9"}]}\n'
    )
    export = tmp_path / "export.md"
    export.write_bytes(
        "<!-- Generated by SpecStory -->\n\n# Deploy (2025-01-01 10:00:00)\n\n_**User**_\n\n"
        "Why does the deploy fail?\n\n---\n\n_**Assistant**_\n\nIt lacks write access, "
        "café".encode()[:-1]
    )
    report = import_files(memory_repo, [utf16, utf16le, image, unwritten, document, export])
    refused = "\n".join(report.refused)
    assert f"{utf16} is UTF-16 text" in refused
    assert f"`iconv -f UTF-16 -t UTF-8 {utf16} > {tmp_path / 'utf16.utf8.jsonl'}`" in refused
    assert f"`iconv -f UTF-16LE -t UTF-8 {utf16le} >" in refused
    assert f"{image} looks binary (NUL bytes)" in refused
    assert f"{unwritten} holds nothing but NUL bytes" in refused
    assert f"{document} is not valid UTF-8 (line 2, byte" in refused and "iconv" in refused
    assert len(report.refused) == 5
    [filed] = report.imported
    t = tf.parse((memory_repo.root / filed).read_text(), filed)
    assert t.turns[-1].text == "It lacks write access, caf"
    assert (
        f"{export}: ends in the middle of a character (the file was cut off); its last 1 byte "
        "was left out" in report.warnings
    )


def test_same_id_other_content_is_refused(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    s = {
        "session_id": "dup",
        "started": "2026-01-01T10:00:00Z",
        "messages": [{"role": "user", "content": "one"}],
    }
    f = tmp_path / "a.json"
    f.write_text(json.dumps(s))
    import_files(memory_repo, [f])
    s["messages"][0]["content"] = "uno"  # not grown: an earlier turn changed
    f.write_text(json.dumps(s))
    report = import_files(memory_repo, [f])
    assert report.imported == []
    assert "immutable" in report.refused[0] and "does not begin as the filed" in report.refused[0]
    assert "a session id of its own" in report.refused[0]


def test_a_session_refused_or_warned_about_names_the_file_it_was_read_from(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Of several files in one import, two sessions under one id: the refusal said
    "session dup: ..." and named no file, so which of them to give an id of its own was
    left to guess."""

    def log(name: str, *said: str) -> Path:
        messages = [{"role": "user", "content": words} for words in said]
        f = tmp_path / name
        f.write_text(
            json.dumps(
                {"session_id": "dup", "started": "2026-01-01T10:00:00Z", "messages": messages}
            )
        )
        return f

    first, other = log("a.json", "one"), log("b.json", "uno")
    report = import_files(memory_repo, [first, other])
    assert len(report.imported) == 1
    [refused] = report.refused
    assert refused.startswith(f"{other}: session dup: it is already filed as")
    # a log whose second turn was edited since: the warning names the file too
    import_files(memory_repo, [log("c.json", "one", "two")])
    edited = log("c.json", "one", "three")
    report = import_files(memory_repo, [edited])
    assert any(w.startswith(f"{edited}: session dup: the log was rewound") for w in report.warnings)


def test_cli_import(memory_repo: MemoryRepo, shared_data: Path, cli: Cli) -> None:
    f = shared_data / "claude-code" / "claude-code-log__edge_cases.jsonl"
    proc = cli("import", str(f), repo=memory_repo)
    assert proc.returncode == 0, proc.stderr
    # one line for the file, not one a skipped line
    assert "edge_cases.jsonl: 6 lines skipped: 3 not JSON objects, 2 without content" in proc.stderr
    assert proc.stderr.count("warning:") == 1
    assert "imported raw/conversations/2025/06/14/" in proc.stdout


# ── formats are plugins: one class, one registration ──
def test_a_new_format_is_one_class_and_one_registration(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch
) -> None:
    from datetime import datetime

    from autopoiesis import plugins
    from autopoiesis.capture.importers import (
        ImportReport,
        SessionDraft,
        format_names,
        register_importer,
    )

    manager = plugins.PluginManager()
    monkeypatch.setattr(
        plugins, "plugin_manager", lambda: manager
    )  # the registration ends with the test

    class LinesImporter:
        """'who: text' lines, one session per file."""

        name = "lines"
        description = "who: text lines"

        def detect(self, path: Path, text: str) -> float:
            return 1.0 if path.suffix == ".lines" else 0.0

        def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
            draft = SessionDraft(session_id=path.stem, channel="lines")
            when = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
            for line in text.splitlines():
                who, _, said = line.partition(": ")
                draft.add_turn(when, "user" if who == "me" else "agent", [tf.Text(said)])
            return [draft]

    register_importer(LinesImporter())
    assert format_names()[-1] == "lines"
    f = tmp_path / "chat-1.lines"
    f.write_text("me: my key is sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1\nbot: noted\n")
    report = import_files(memory_repo, [f])
    assert report.refused == []
    assert report.imported[0].startswith("raw/conversations/2026/03/01/0900-chat-1-")
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert [x.role for x in t.turns] == ["user", "agent"]
    assert t.meta.redactions == (("openai_key", 1),)
    assert import_files(memory_repo, [f], "lines").skipped_duplicates == report.imported


def test_builtin_importers_are_registered_in_order() -> None:
    from autopoiesis.capture.importers import BUILTIN_IMPORTERS, Importer, format_names, importers

    assert format_names() == ("auto", *(i.name for i in BUILTIN_IMPORTERS))
    assert format_names()[:5] == ("auto", "neutral", "capture", "openai", "claude-code")
    assert {
        "cline",
        "opencode",
        "aider",
        "continue",
        "loglines",
        "codex",
        "gemini",
        "chatgpt",
    } <= set(format_names())
    assert list(importers().values()) == list(BUILTIN_IMPORTERS)
    assert all(isinstance(i, Importer) for i in BUILTIN_IMPORTERS)


def test_detection_and_unknown_formats(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    from autopoiesis.capture.importers import detect_format

    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text(
        json.dumps(
            {
                "session_id": "n1",
                "started": "2026-01-01T10:00:00Z",
                "messages": [{"role": "user", "content": "a"}],
            }
        )
        + "\n"
    )
    assert detect_format(jsonl, jsonl.read_text()).name == "neutral"
    chat = tmp_path / "c.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    assert detect_format(chat, chat.read_text()).name == "openai"
    log = tmp_path / "log.jsonl"
    log.write_text('{"type": "user", "sessionId": "x"}\n')
    assert detect_format(log, log.read_text()).name == "claude-code"
    prose = tmp_path / "notes.txt"
    prose.write_text("just prose")
    report = import_files(memory_repo, [prose, chat], "nope")
    assert len(report.refused) == 2
    assert (
        "unknown format 'nope'; use one of auto, neutral, capture, openai, claude-code, "
        in report.refused[0]
    )
    report = import_files(memory_repo, [prose])
    # the advice says what the file looks like and names the real flag, not a format it is not
    assert (
        "text that is not JSON, which is none of the session logs autopoiesis reads"
        in report.refused[0]
    )
    assert (
        "--format NAME" in report.refused[0]
        and "pass --format claude-code" not in report.refused[0]
    )


def test_a_json_document_with_a_message_a_line_is_that_document(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A JSON document that writes each message of its `messages` list on a line of its
    own was read as JSON lines because lines began with `{`: a neutral session was refused
    as "4 lines skipped: 3 not JSON", a chat-completions request as "none of the session
    logs". A text that parses as one document is that document; JSON lines (under a .json
    name too) are still read line by line."""
    neutral = tmp_path / "neutral_lines.json"
    neutral.write_text(
        '{"session_id":"neu-1","started":"2026-02-16T18:45:00Z","messages":[\n'
        '{"role":"user","content":"Hello there","timestamp":"2026-02-16T18:45:10Z"},\n'
        '{"role":"agent","content":"Hi!","timestamp":"2026-02-16T18:45:20Z"}\n'
        "]}\n"
    )
    chat = tmp_path / "openai_chat.json"
    chat.write_text(
        '{"model":"gpt-4o","created":1735000000,"messages":[\n'
        '{"role":"user","content":"What is the weather in Paris?"},\n'
        '{"role":"assistant","content":"18C and sunny."}\n'
        "]}\n"
    )
    lines = tmp_path / "claude_lines.json"
    lines.write_text(
        "".join(
            json.dumps(
                {
                    "type": role,
                    "timestamp": f"2025-12-24T10:00:0{n}.000Z",
                    "sessionId": "lines-as-json",
                    "message": {"role": role, "content": text},
                    "uuid": f"m{n}",
                }
            )
            + "\n"
            for n, (role, text) in enumerate([("user", "Hello"), ("assistant", "Hi")])
        )
    )
    report = import_files(memory_repo, [neutral, chat, lines])
    assert report.refused == [] and report.bad_lines == 0, report.refused + report.warnings
    read = {
        t.meta.session_id: [(turn.role, turn.text) for turn in t.turns]
        for t in (tf.parse((memory_repo.root / r).read_text(), r) for r in report.imported)
    }
    assert read["neu-1"] == [("user", "Hello there"), ("agent", "Hi!")]
    assert read["lines-as-json"] == [("user", "Hello"), ("agent", "Hi")]
    [openai] = [v for k, v in read.items() if k.startswith("oai_")]
    assert openai == [("user", "What is the weather in Paris?"), ("agent", "18C and sunny.")]


def test_cli_format_choices_come_from_the_registry(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from autopoiesis.cli import app

    f = tmp_path / "c.json"
    f.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    r = CliRunner().invoke(app, ["-C", str(memory_repo.root), "import", "--format", "nope", str(f)])
    assert r.exit_code == 2
    assert "use one of auto, neutral, capture, openai, claude-code," in r.output
    r = CliRunner().invoke(
        app, ["-C", str(memory_repo.root), "import", "--format", "openai", str(f)]
    )
    assert r.exit_code == 0
    assert "imported raw/conversations/" in r.output


def test_a_log_reached_twice_is_imported_once_without_a_false_warning(
    memory_repo: MemoryRepo, tmp_path: Path, git
) -> None:
    """A folder holding a link back to itself (`self -> .`) was walked 40 levels deep and
    its one log imported 41 times into one commit, with a warning that 40 transcripts an
    earlier import wrote were never committed; the same file named twice, or a copy of
    it, did the same. Each file and folder is read once; a copy is already imported."""
    line = {
        "type": "user",
        "timestamp": "2025-12-24T10:00:00.000Z",
        "sessionId": "loop-session",
        "message": {"role": "user", "content": "Create a hello world function"},
        "uuid": "msg-001",
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    (logs / "b.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")  # a copy
    (logs / "self").symlink_to(".")
    report = import_files(memory_repo, [logs, logs / "a.jsonl"])
    assert len(report.imported) == 1 and report.refused == []
    assert not any("never committed" in w for w in report.warnings)
    assert report.skipped_duplicates == report.imported  # the copy
    subject = git(memory_repo, "log", "-1", "--format=%s").stdout
    assert subject.startswith("conversation: loop-session")


def test_two_imports_of_one_growing_log_file_it_one_after_the_other(
    memory_repo: MemoryRepo, tmp_path: Path, git
) -> None:
    """Two imports of one session at once, its log grown between them (the session
    watcher, a hook's import and a person's `import` overlapping): each read that nothing
    was filed and filed it as a new session under its own name; the second file could
    never be committed, and every later import of the session was refused. An import
    files under the repo's import lock: the second waits, then continues the first."""
    import threading

    said = [("user", "hello there"), ("assistant", "hi"), ("user", "and then"), ("assistant", "ok")]
    short, full = tmp_path / "short.jsonl", tmp_path / "full.jsonl"
    short.write_bytes(_claude_log("growing", said[:2]))
    full.write_bytes(_claude_log("growing", said))
    reports: list = []
    with memory_repo.lock("import"):  # held by another import
        threads = [
            threading.Thread(target=lambda f=f: reports.append(import_files(memory_repo, [f])))
            for f in (short, full)
        ]
        for t in threads:
            t.start()
        threads[0].join(timeout=1.0)
        assert threads[0].is_alive() and reports == []  # waits for the lock
    for t in threads:
        t.join()
    assert all(r.refused == [] for r in reports), [r.refused for r in reports]
    assert git(memory_repo, "status", "--porcelain", "raw").stdout == ""
    filed = sorted(memory_repo.conversations_dir.rglob("*growing*.md"))
    turns = [t for f in filed for t in tf.parse(f.read_text(encoding="utf-8")).turns]
    assert [t.role for t in turns] == ["user", "agent", "user", "agent"]
    again = import_files(memory_repo, [full])
    assert again.refused == [] and again.imported == []


def test_an_older_copy_of_a_log_filed_in_two_parts_is_already_imported(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A log imported early, grown and imported again (a continuation, part +2), then its
    older copy imported once more (a backup, a second machine's stale file): it was
    refused with exit 1 as a log whose "earlier turn changed or is gone". It is what was
    filed, up to where it ends: already imported."""

    def line(n: int, role: str, text: str) -> str:
        return json.dumps(
            {
                "type": role,
                "timestamp": f"2025-06-14T10:0{n}:00.000Z",
                "sessionId": "grown",
                "message": {"role": role, "content": text},
                "uuid": f"m{n}",
            }
        )

    early = [line(1, "user", "How does the parser work?"), line(2, "assistant", "It reads lines.")]
    later = early + [line(3, "user", "And the writer?"), line(4, "assistant", "It renders.")]
    old, grown = tmp_path / "old.jsonl", tmp_path / "grown.jsonl"
    old.write_text("\n".join(early) + "\n", encoding="utf-8")
    grown.write_text("\n".join(later) + "\n", encoding="utf-8")
    assert len(import_files(memory_repo, [old]).imported) == 1
    assert import_files(memory_repo, [grown]).imported[0].endswith("+2.md")
    again = import_files(memory_repo, [old])
    assert again.refused == [] and again.imported == []
    assert len(again.skipped_duplicates) == 2


def test_a_log_of_json_lines_is_read_a_line_at_a_time() -> None:
    """A log's lines one at a time (iter_log_lines, what json_lines reads a text with, so a
    log of hundreds of MB is not held twice: bench_import measures the memory) are its
    lines as a list gives them: split at line feeds alone, a CRLF's CR dropped. Each line
    is parsed as it comes: the first object before a later line is looked at."""
    from autopoiesis.capture.importers.base import ImportReport, iter_log_lines, log_lines
    from autopoiesis.capture.importers.shapes import json_lines

    text = '{"n": 1}\r\n{"n": 2}\u2028 still 2"}\nnot json\n\n{"n": 4}'
    assert list(iter_log_lines(text)) == log_lines(text)
    assert log_lines(text) == ['{"n": 1}', '{"n": 2}\u2028 still 2"}', "not json", "", '{"n": 4}']
    assert list(iter_log_lines("a\n")) == ["a", ""] and list(iter_log_lines("")) == [""]

    report = ImportReport()
    read = json_lines(text, "log.jsonl", report)
    assert next(read) == (1, {"n": 1})
    assert report.bad_lines == 0  # lines 2 and 3 not read yet
    assert list(read) == [(5, {"n": 4})]
    assert report.bad_lines == 2


def test_a_line_separator_inside_a_message_splits_no_log_line(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A harness writes U+2028 (and U+2029, a form feed) unescaped inside a JSON string;
    the readers split logs with str.splitlines, which breaks a line there too: the line
    fell into two "not JSON" halves and its message was lost. Logs are split at line feeds
    alone (base.log_lines), in JSON lines of every format and in aider's Markdown."""
    said = "first line\u2028second part of the question\u2029and the last"
    rows = [
        {
            "type": "user",
            "sessionId": "u2028",
            "uuid": "u1",
            "timestamp": "2026-02-01T10:00:00Z",
            "message": {"role": "user", "content": said},
        },
        {
            "type": "assistant",
            "sessionId": "u2028",
            "uuid": "a1",
            "timestamp": "2026-02-01T10:00:05Z",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
            },
        },
    ]
    log = tmp_path / "u2028.jsonl"
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    neutral = tmp_path / "neutral.jsonl"
    session = {
        "session_id": "n2028",
        "started": "2026-02-01T11:00:00Z",
        "messages": [{"role": "user", "content": said}, {"role": "agent", "content": "ok"}],
    }
    neutral.write_text(json.dumps(session, ensure_ascii=False) + "\n", "utf-8")
    report = import_files(memory_repo, [log, neutral])
    assert report.refused == [] and report.bad_lines == 0, (report.refused, report.warnings)
    for rel in report.imported:
        t = tf.parse((memory_repo.root / rel).read_text(encoding="utf-8"))
        user = [turn.text for turn in t.turns if turn.role == "user"]
        assert len(user) == 1 and "second part of the question" in user[0]
        assert "and the last" in user[0]


SAMPLES = Path(__file__).parents[1] / "integrations"


@pytest.mark.parametrize(
    "sample, said",
    [
        (
            "pi/samples/2026-05-12T01-02-27-657Z_019e19b4-eb48-746a-aa6b-8dfcfa37954b.jsonl",
            "Read hello.py and summarize what it prints without editing files.",
        ),
        ("droid/samples/session_store_large.jsonl", "Captured multiline output."),
        (
            "qwen_code/samples/019f0000-0000-7000-8000-000000000004.jsonl",
            "Continue from the rewound branch.",
        ),
    ],
    ids=["pi", "droid", "qwen-code"],
)
def test_a_message_whose_time_cannot_be_read_is_kept_dated_as_the_line_before(
    memory_repo: MemoryRepo, tmp_path: Path, sample: str, said: str
) -> None:
    """A line of a JSON-lines log whose `timestamp` cannot be read ("soon") was skipped as
    malformed (ImportReport.line_time), and the message it held was lost. It is kept in
    its place, dated as the line before it, with a warning naming the line."""
    lines = (SAMPLES / sample).read_text(encoding="utf-8").splitlines()
    (n,) = [i for i, line in enumerate(lines) if said in line]
    obj = json.loads(lines[n])
    obj["timestamp"] = "soon"
    lines[n] = json.dumps(obj)
    log = tmp_path / Path(sample).name
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = import_files(memory_repo, [log])
    assert report.refused == [] and report.bad_lines == 0
    (filed,) = report.imported
    turns = tf.parse((memory_repo.root / filed).read_text(encoding="utf-8")).turns
    (turn,) = [t for t in turns if said in t.text]
    before = json.loads(lines[n - 1])["timestamp"]
    assert turn.time.strftime("%H:%M") == before[11:16]
    assert [w for w in report.warnings if f":{n + 1}: timestamp 'soon'" in w and "kept" in w]


@pytest.mark.parametrize(
    ("err", "said"),
    [
        (28, "free disk space, and import it again"),  # ENOSPC
        (30, "writable (mounted read-write, yours to write), and import it again"),  # EROFS
    ],
)
def test_a_session_that_cannot_be_written_says_what_to_do_for_its_reason(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int, said: str
) -> None:
    """A read-only file system was met with "free disk space and import it again", which
    sent a person to a disk with room. The advice follows the reason; nothing is filed,
    and the session is one to try again."""
    import autopoiesis.capture.importers.filing as filing

    def refused(files: list) -> list:
        return [OSError(err, os.strerror(err), str(path)) for path, _ in files]

    monkeypatch.setattr(filing, "atomic_write_many", refused)
    log = tmp_path / "s.jsonl"
    log.write_bytes(_claude_log("rofs", [("user", "hello there"), ("assistant", "hi")]))
    report = import_files(memory_repo, [log])
    assert report.imported == [] and report.temporary == report.refused
    assert said in report.refused[0], report.refused
