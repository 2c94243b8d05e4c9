"""Importing finished sessions: Claude Code logs, neutral JSON, OpenAI messages."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.conftest import Cli


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
    assert t.meta.topic == "Test session for JSONL parsing"
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
    metas = {tf.parse((memory_repo.root / p).read_text()).meta.session_id: tf.parse((memory_repo.root / p).read_text()).meta for p in report.imported}
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


def test_neutral_format_multi_party_and_own_dates(memory_repo: MemoryRepo, tmp_path: Path, git) -> None:
    session = {
        "session_id": "conv1_s1", "started": "2023-05-08T13:56:00Z", "model": None, "channel": "chat",
        "messages": [
            {"role": "user", "name": "Caroline", "content": "I went to a LGBTQ support group yesterday.", "timestamp": "2023-05-08T13:56:00Z"},
            {"role": "agent", "name": "Melanie", "content": "That's great!", "timestamp": "2023-05-08T13:57:00Z",
             "tool_calls": [{"tool": "calendar", "args": {"query": "support group"}, "result": "1 event"}]},
        ],
    }
    other = dict(session, session_id="conv1_s2", started="2023-06-01T09:00:00Z",
                 messages=[{"role": "user", "name": "Caroline", "content": "Back again", "timestamp": "2023-06-01T09:00:00Z"}])
    f = tmp_path / "sessions.json"
    f.write_text(json.dumps([session, other]))
    report = import_files(memory_repo, [f])
    assert [p.split("/")[2:5] for p in report.imported] == [["2023", "05", "08"], ["2023", "06", "01"]]
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert [(x.role, x.name) for x in t.turns] == [("user", "Caroline"), ("agent", "Melanie")]
    assert t.turns[1].items[1] == tf.ToolCall("calendar", "support group", "1 event")
    assert git(memory_repo.root, "log", "-1", "--format=%s").stdout.strip() == "conversation: import 2 sessions"


def test_openai_messages(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    msgs = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What's the weather in Vienna?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Vienna\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "12°C, cloudy"},
        {"role": "assistant", "content": "It's 12°C and cloudy in Vienna."},
    ]
    f = tmp_path / "chat.json"
    f.write_text(json.dumps({"model": "gpt-4o", "created": 1760000000, "messages": msgs}))
    report = import_files(memory_repo, [f])
    assert len(report.imported) == 1
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert t.meta.model == "gpt-4o"
    assert t.meta.session_id.startswith("oai_")
    assert [x.role for x in t.turns] == ["system", "user", "agent", "agent"]
    assert t.turns[2].items == (tf.ToolCall("weather", '{"city": "Vienna"}', "12°C, cloudy"),)
    assert import_files(memory_repo, [f]).skipped_duplicates == report.imported


def test_bad_files_are_refused_with_a_reason(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    binary = tmp_path / "blob.json"
    binary.write_bytes(b"\x00\x01\x02binary")
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"session_id": "x", "messages": [{"role": "user", "content": "caf\xe9"}]}'.encode("latin-1"))
    unsafe = tmp_path / "unsafe.json"
    unsafe.write_text(json.dumps({"session_id": "../evil", "started": "2026-01-01T00:00:00Z", "messages": [{"role": "user", "content": "x"}]}))
    report = import_files(memory_repo, [binary, latin, unsafe, tmp_path / "missing.json"])
    assert report.imported == []
    joined = "\n".join(report.refused)
    assert "looks binary" in joined
    assert "not valid UTF-8" in joined
    assert "'/'" in joined
    assert "no such file" in joined
    assert not (memory_repo.root.parent / "evil").exists()


def test_same_id_other_content_is_refused(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    s = {"session_id": "dup", "started": "2026-01-01T10:00:00Z", "messages": [{"role": "user", "content": "one"}]}
    f = tmp_path / "a.json"
    f.write_text(json.dumps(s))
    import_files(memory_repo, [f])
    s["messages"][0]["content"] = "uno"  # not grown: an earlier turn changed
    f.write_text(json.dumps(s))
    report = import_files(memory_repo, [f])
    assert report.imported == []
    assert "immutable" in report.refused[0] and "earlier turn changed" in report.refused[0]


def test_cli_import(memory_repo: MemoryRepo, shared_data: Path, cli: Cli) -> None:
    f = shared_data / "claude-code" / "claude-code-log__edge_cases.jsonl"
    proc = cli("import", str(f), repo=memory_repo)
    assert proc.returncode == 0, proc.stderr
    assert "malformed lines skipped" in proc.stderr
    assert "imported raw/conversations/2025/06/14/" in proc.stdout


# ── formats are plugins: one class, one registration ──
def test_a_new_format_is_one_class_and_one_registration(memory_repo: MemoryRepo, tmp_path: Path, monkeypatch) -> None:
    from datetime import datetime

    from autopoiesis.capture.importers import ImportReport, SessionDraft, base, format_names, register_importer

    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # the registration ends with the test

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
    assert format_names()[:4] == ("auto", "neutral", "openai", "claude-code")
    assert {"cline", "opencode", "aider", "continue", "loglines", "codex", "gemini", "chatgpt"} <= set(format_names())
    assert list(importers().values()) == list(BUILTIN_IMPORTERS)
    assert all(isinstance(i, Importer) for i in BUILTIN_IMPORTERS)


def test_detection_and_unknown_formats(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    from autopoiesis.capture.importers import detect_format

    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text(json.dumps({"session_id": "n1", "started": "2026-01-01T10:00:00Z", "messages": [{"role": "user", "content": "a"}]}) + "\n")
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
    assert "unknown format 'nope'; use one of auto, neutral, openai, claude-code, " in report.refused[0]
    report = import_files(memory_repo, [prose])
    # the advice says what the file looks like and names the real flag, not a format it is not
    assert "text that is not JSON, which is none of the session logs autopoiesis reads" in report.refused[0]
    assert "--format NAME" in report.refused[0] and "pass --format claude-code" not in report.refused[0]


def test_cli_format_choices_come_from_the_registry(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from autopoiesis.cli import app

    f = tmp_path / "c.json"
    f.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    r = CliRunner().invoke(app, ["-C", str(memory_repo.root), "import", "--format", "nope", str(f)])
    assert r.exit_code == 2
    assert "use one of auto, neutral, openai, claude-code," in r.output
    r = CliRunner().invoke(app, ["-C", str(memory_repo.root), "import", "--format", "openai", str(f)])
    assert r.exit_code == 0
    assert "imported raw/conversations/" in r.output
