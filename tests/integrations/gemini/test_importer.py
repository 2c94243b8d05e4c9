"""The Gemini CLI importer."""

from __future__ import annotations

from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import jsonl, roles, tool_calls, transcripts


def test_gemini_shared_samples(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(memory_repo, sorted((shared_data / "harness-logs" / "gemini").iterdir()))
    assert report.refused == [] and report.bad_lines == 0
    got = transcripts(memory_repo, report.imported)
    j = got["gemini_stage0_jsonl"]
    assert roles(j) == ["user", "agent", "agent"] and j.meta.model == "gemini-3-flash-preview"
    assert tool_calls(j) == [
        tf.ToolCall(
            "run_shell_command",
            "ls -F",
            "Output: AgentSessions/ README.md Process Group PGID: 12345",
        )
    ]
    assert (j.meta.tokens_in, j.meta.tokens_out) == (11855 + 12069, 81 + 147)
    s = got["session-2026-01-16T18-34-3739ef95"]
    assert [(x.role, x.text) for x in s.turns] == [("user", "Hello"), ("agent", "Hi!")]
    assert "Short reasoning placeholder" not in (memory_repo.root / report.imported[1]).read_text()


def test_gemini_jsonl_updates_rewinds_and_notices(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    f = jsonl(
        tmp_path / "session-2026-05-01T10-00-abc.jsonl",
        [
            {
                "sessionId": "gem-rewind-1",
                "projectHash": "ph",
                "startTime": "2026-05-01T10:00:00Z",
                "kind": "main",
            },
            {
                "id": "u1",
                "timestamp": "2026-05-01T10:00:01Z",
                "type": "user",
                "content": [{"text": "@a.py explain"}],
                "displayContent": "explain a.py",
            },
            {
                "id": "g1",
                "timestamp": "2026-05-01T10:00:02Z",
                "type": "gemini",
                "content": "",
                "model": "gemini-2.5-pro",
            },
            {
                "id": "g1",
                "timestamp": "2026-05-01T10:00:02Z",
                "type": "gemini",
                "content": "It prints 1.",
                "model": "gemini-2.5-pro",
                "thoughts": [{"subject": "x", "description": "HIDDEN REASONING"}],
                "tokens": {"input": 100, "output": 20},
                "toolCalls": [
                    {
                        "id": "r1",
                        "name": "read_file",
                        "args": {"absolute_path": "/p/a.py"},
                        "status": "success",
                        "result": [
                            {
                                "functionResponse": {
                                    "id": "r1",
                                    "name": "read_file",
                                    "response": {"output": "print(1)"},
                                }
                            }
                        ],
                    },
                    {
                        "id": "r2",
                        "name": "run_shell_command",
                        "args": {"command": "python a.py"},
                        "status": "error",
                        "result": [
                            {
                                "functionResponse": {
                                    "id": "r2",
                                    "name": "run_shell_command",
                                    "response": {"error": "denied"},
                                }
                            }
                        ],
                    },
                ],
            },
            {"$set": {"lastUpdated": "2026-05-01T10:00:03Z", "summary": "Explain a.py"}},
            {
                "id": "i1",
                "timestamp": "2026-05-01T10:00:04Z",
                "type": "info",
                "content": "Request cancelled.",
            },
            {
                "id": "u2",
                "timestamp": "2026-05-01T10:00:05Z",
                "type": "user",
                "content": "no, rewrite it",
            },
            {
                "id": "g2",
                "timestamp": "2026-05-01T10:00:06Z",
                "type": "gemini",
                "content": "Rewritten.",
                "tokens": {"input": 999, "output": 999},
            },
            {"$rewindTo": "u2"},
            {"id": "u3", "timestamp": "2026-05-01T10:00:07Z", "type": "user", "content": "thanks"},
            {"id": "u4", "timestamp": "year 3000", "type": "user", "content": "bad time"},
            {"foo": "bar"},
        ],
        tail='{"id": "u5", "timest',
    )
    report = import_files(memory_repo, [f])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (t.meta.session_id, t.meta.topic, t.meta.model) == (
        "gem-rewind-1",
        "Explain a.py",
        "gemini-2.5-pro",
    )
    assert [(x.role, x.text) for x in t.turns] == [
        ("user", "explain a.py"),
        ("agent", "It prints 1."),
        ("user", "thanks"),
        ("user", "bad time"),  # "year 3000": kept, dated as the message before it
    ]
    assert tool_calls(t) == [
        tf.ToolCall("read_file", "/p/a.py", "print(1)"),
        tf.ToolCall("run_shell_command", "python a.py", "error: denied"),
    ]
    assert (t.meta.tokens_in, t.meta.tokens_out) == (
        100,
        20,
    )  # the update counts once, the rewound reply not at all
    text = (memory_repo.root / report.imported[0]).read_text()
    assert (
        "HIDDEN REASONING" not in text
        and "Rewritten" not in text
        and "Request cancelled" not in text
    )
    assert report.bad_lines == 2  # the unknown record, the cut-off line


def test_a_gemini_chat_saved_as_jsonl_is_read_as_gemini(
    memory_repo: MemoryRepo, shared_data: Path, tmp_path: Path
) -> None:
    """A ConversationRecord written with indentation under a .jsonl name: read with
    --format gemini (and by auto), and never advised as claude-code."""
    import json

    from autopoiesis.capture.importers import detect_format, importers

    record = json.loads(
        (shared_data / "harness-logs/gemini/agent-sessions__small.json").read_text()
    )
    saved = tmp_path / "chat.jsonl"
    saved.write_text(json.dumps(record, indent=2))
    text = saved.read_text()
    assert detect_format(saved, text).name == "gemini"
    assert importers()["claude-code"].detect(saved, text) == 0.0
    for fmt in ("gemini", "auto"):
        report = import_files(memory_repo, [saved], fmt)
        assert report.refused == [] and report.bad_lines == 0
    # named wrongly, the refusal points to gemini
    wrong = import_files(memory_repo, [saved], "claude-code")
    assert wrong.imported == [] and "--format gemini" in wrong.refused[0]
    assert "claude-code" not in wrong.refused[0].split("It reads as")[-1]
