"""The Copilot CLI importer."""

from __future__ import annotations

from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import jsonl, tool_calls, transcripts


def test_copilot_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(
        memory_repo, [shared_data / "harness-logs" / "copilot" / "agent-sessions__small.jsonl"]
    )
    assert report.refused == []
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (t.meta.session_id, t.meta.model, t.meta.tokens_in, t.meta.tokens_out) == (
        "copilot_stage0_small",
        "gpt-5-mini",
        100,
        15,
    )
    assert [(x.role, x.text) for x in t.turns][:3] == [
        ("user", "List the files"),
        ("agent", "Listing the files."),
        ("agent", "Done"),
    ]
    assert tool_calls(t)[0] == tf.ToolCall("shell", "ls", "a.txt b.txt")
    # the fixture's trimmed events with "[trimmed for fixture]" timestamps are kept, each
    # dated as the event before it (they were skipped, and what they said lost)
    kept = [w for w in report.warnings if "the line is kept" in w]
    assert report.bad_lines == 0 and len(kept) == 8 and len(t.turns) > 3


def test_copilot_events_subagents_and_hostile_lines(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    def ev(n: int, kind: str, data: dict, ts: str | None = None) -> dict:
        return {
            "type": kind,
            "data": data,
            "id": f"e{n}",
            "timestamp": ts or f"2026-03-26T17:50:{n:02d}.000Z",
            "parentId": None,
        }

    sid = "aaaabbbb-1111-2222-3333-ccccddddeeee"
    (tmp_path / sid).mkdir()
    f = jsonl(
        tmp_path / sid / "events.jsonl",
        [
            ev(
                1,
                "session.start",
                {
                    "sessionId": sid,
                    "startTime": "2026-03-26T17:50:01.000Z",
                    "selectedModel": "claude-sonnet-4.5",
                },
            ),
            ev(2, "system.message", {"content": "SYSTEM PROMPT", "role": "system"}),
            ev(
                3,
                "user.message",
                {
                    "content": "find TODOs",
                    "transformedContent": "INJECTED CONTEXT find TODOs",
                    "attachments": [
                        {"type": "file", "path": "src/app.py", "displayName": "app.py"}
                    ],
                },
            ),
            ev(4, "assistant.turn_start", {"turnId": "0"}),
            ev(5, "assistant.reasoning", {"reasoningId": "r", "content": "PRIVATE REASONING"}),
            ev(
                6,
                "tool.execution_start",
                {"toolCallId": "t1", "toolName": "task", "arguments": {"description": "search"}},
            ),
            ev(
                7,
                "assistant.message",
                {
                    "content": "Delegating.",
                    "toolRequests": [{"toolCallId": "t1", "name": "task", "arguments": {}}],
                    "outputTokens": 5,
                },
            ),
            ev(
                8,
                "subagent.started",
                {"toolCallId": "t1", "agentName": "explore", "agentDisplayName": "Explore"},
            ),
            ev(
                9,
                "assistant.message",
                {
                    "parentToolCallId": "t1",
                    "content": "Found 2 TODOs.",
                    "toolRequests": [
                        {"toolCallId": "t2", "name": "grep", "arguments": '{"pattern": "TODO"}'}
                    ],
                },
            ),
            ev(
                10,
                "tool.execution_complete",
                {
                    "parentToolCallId": "t1",
                    "toolCallId": "t2",
                    "success": True,
                    "result": {"content": "a.py:3"},
                },
            ),
            ev(
                11,
                "tool.execution_complete",
                {"toolCallId": "t1", "success": True, "result": {"content": "2 TODOs"}},
            ),
            ev(
                12,
                "tool.execution_start",
                {
                    "toolCallId": "t3",
                    "toolName": "list",
                    "mcpServerName": "github",
                    "mcpToolName": "list_issues",
                    "arguments": {},
                },
            ),
            ev(
                13,
                "tool.execution_complete",
                {"toolCallId": "t3", "success": False, "error": {"message": "rate limited"}},
            ),
            ev(
                14,
                "assistant.message",
                {"content": "Done: 2 TODOs.", "toolRequests": [], "outputTokens": 7},
            ),
            ev(
                15,
                "session.shutdown",
                {
                    "modelMetrics": {
                        "claude-sonnet-4.5": {"usage": {"inputTokens": 1200, "outputTokens": 60}}
                    }
                },
            ),
            ev(16, "session.frobnicate", {}),
            ev(17, "user.message", {"content": "late"}, ts="99999-01-01"),
            ev(18, "teleport.begin", {}),
            {
                "type": "user.message",
                "data": "wrong type",
                "id": "e19",
                "timestamp": "2026-03-26T17:51:00Z",
            },
        ],
        tail='{"type": "assistant.mess',
    )
    report = import_files(memory_repo, [f])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (t.meta.session_id, t.meta.model, t.meta.tokens_in, t.meta.tokens_out) == (
        sid,
        "claude-sonnet-4.5",
        1200,
        60,
    )
    assert [(x.role, x.name, x.text) for x in t.turns] == [
        ("user", None, "find TODOs"),
        ("agent", None, ""),
        ("agent", None, "Delegating."),
        ("agent", "Explore", "Found 2 TODOs."),
        ("agent", None, ""),
        ("agent", None, "Done: 2 TODOs."),
        ("user", None, "late"),  # its absurd time: kept, dated as the event before it
    ]
    assert t.turns[-1].time == t.turns[-2].time
    assert t.turns[0].items[1] == tf.Attachment("src/app.py")
    assert tool_calls(t) == [
        tf.ToolCall("task", "search", "2 TODOs"),
        tf.ToolCall("grep", "TODO", "a.py:3"),
        tf.ToolCall("github.list_issues", "{}", "error: rate limited"),
    ]
    text = (memory_repo.root / report.imported[0]).read_text()
    assert (
        "SYSTEM PROMPT" not in text and "PRIVATE REASONING" not in text and "INJECTED" not in text
    )
    assert report.bad_lines == 3  # teleport.begin, data of the wrong type, the cut-off line


def test_copilot_1_0_12_names_its_model_only_on_tool_events_and_at_shutdown(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Copilot CLI 1.0.12: no model on session.start or the assistant messages; the tool
    events and the shutdown metrics carry it."""
    sid = "aaaabbbb-1111-2222-3333-ccccddddeeee"

    def ev(kind: str, data: dict, second: int) -> dict:
        return {
            "type": kind,
            "data": data,
            "id": f"e{second}",
            "parentId": None,
            "timestamp": f"2026-03-26T17:50:{second:02d}.000Z",
        }

    start = {
        "sessionId": sid,
        "version": 1,
        "producer": "copilot-agent",
        "copilotVersion": "1.0.12",
        "startTime": "2026-03-26T17:50:34.263Z",
        "context": {"cwd": "/tmp/project", "gitRoot": "/tmp/project"},
    }
    rows = [
        ev("session.start", start, 34),
        ev(
            "user.message",
            {
                "content": "List the files",
                "transformedContent": "List the files",
                "attachments": [],
                "interactionId": "int-1",
            },
            35,
        ),
        ev(
            "assistant.message",
            {
                "messageId": "m1",
                "content": "",
                "toolRequests": [
                    {"toolCallId": "c1", "name": "bash", "arguments": {"command": "ls"}}
                ],
                "interactionId": "int-1",
                "outputTokens": 12,
            },
            36,
        ),
        ev(
            "tool.execution_start",
            {"toolCallId": "c1", "toolName": "bash", "arguments": {"command": "ls"}},
            37,
        ),
        ev(
            "tool.execution_complete",
            {
                "toolCallId": "c1",
                "success": True,
                "model": "claude-sonnet-4.6",
                "interactionId": "int-1",
                "result": {"content": "file1\nfile2\n"},
            },
            38,
        ),
        ev(
            "assistant.message",
            {
                "messageId": "m2",
                "content": "file1 and file2.",
                "toolRequests": [],
                "outputTokens": 14,
            },
            39,
        ),
    ]
    (tmp_path / sid).mkdir()
    one = jsonl(tmp_path / sid / "events.jsonl", rows)
    t = next(iter(transcripts(memory_repo, import_files(memory_repo, [one]).imported).values()))
    assert t.meta.model == "claude-sonnet-4.6"
    # no tool event names it: the shutdown's metrics do
    shutdown = {
        "shutdownType": "routine",
        "totalPremiumRequests": 1,
        "modelMetrics": {
            "gpt-5-mini": {"requests": {"count": 1}},
            "claude-haiku-4.5": {"requests": 3},
        },
    }
    rows2 = [r for r in rows if r["type"] != "tool.execution_complete"]
    rows2 = [
        {**r, "data": {**r["data"], "sessionId": "other-session"}}
        if r["type"] == "session.start"
        else r
        for r in rows2
    ]
    two = jsonl(tmp_path / "two.jsonl", [*rows2, ev("session.shutdown", shutdown, 40)])
    t2 = transcripts(memory_repo, import_files(memory_repo, [two]).imported)["other-session"]
    assert t2.meta.model == "claude-haiku-4.5"
