"""The Codex CLI importer (and OpenAI Responses items): the shared sample, a current rollout with every item type, hostile input."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import jsonl, roles, tool_calls, transcripts


def test_codex_shared_samples(memory_repo: MemoryRepo, shared_data: Path) -> None:
    folder = shared_data / "harness-logs" / "codex"
    report = import_files(memory_repo, sorted(folder.iterdir()))
    # the 0.50 legacy fixture holds only bookkeeping events: refused, with the reason
    assert len(report.refused) == 1 and "codex_050_legacy" in report.refused[0]
    assert "no user or agent message (5 bookkeeping lines)" in report.refused[0]
    t = transcripts(memory_repo, report.imported)["019fc8be-3658-7ca3-9e29-000000000000"]
    assert report.imported[0].startswith("raw/conversations/2026/08/03/1048-019fc8be")
    assert (t.meta.model, t.meta.channel, t.meta.tokens_in, t.meta.tokens_out) == (
        "gpt-5.6-luna",
        "codex",
        16341,
        81,
    )
    assert roles(t)[:3] == ["user", "agent", "agent"]
    assert t.turns[0].text == "List the files" and t.turns[2].text == "Found 2 files."
    assert [(c.tool, c.args, c.result) for c in tool_calls(t)][:4] == [
        ("shell", "ls", "a.txt b.txt"),
        ("shell", "ls", "a.txt"),
        ("tool_search", "example", "example_group"),
        ("web_search", "example", None),
    ]
    # the event_msg copies (user_message, agent_message, agent_reasoning) add nothing
    assert "agent_reasoning" not in (memory_repo.root / report.imported[0]).read_text()
    # lines 27+ of the fixture have "[trimmed for fixture]" timestamps: the content lines
    # among them are kept, dated as the line before them (they were skipped, and lost)
    kept = [w for w in report.warnings if "the line is kept, dated 2026-08-03T10:48:56Z" in w]
    assert report.bad_lines == 0 and len(kept) == 17
    assert all("trimmed for fixture" in w for w in kept) and len(t.turns) > 3


def test_codex_current_rollout_every_item_type(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    def line(ts: str, kind: str, payload: dict) -> dict:
        return {"timestamp": ts, "type": kind, "payload": payload}

    def item(ts: str, payload: dict) -> dict:
        return line(ts, "response_item", payload)

    def msg(role: str, *texts: str, kind: str = "input_text") -> dict:
        return {
            "type": "message",
            "role": role,
            "content": [{"type": kind, "text": t} for t in texts],
        }

    sid = "0199a213-81c0-7800-8aa1-bbab2a035a53"
    f = jsonl(
        tmp_path / f"rollout-2025-10-30T23-55-00-{sid}.jsonl",
        [
            line(
                "2025-10-30T23:55:00.000Z",
                "session_meta",
                {"id": sid, "timestamp": "2025-10-30T23:55:00Z", "cwd": "/r"},
            ),
            line("2025-10-30T23:55:00.100Z", "turn_context", {"model": "gpt-5-codex", "cwd": "/r"}),
            item(
                "2025-10-30T23:55:00.200Z",
                msg("developer", "<permissions instructions>sandboxed</permissions instructions>"),
            ),
            item(
                "2025-10-30T23:55:00.300Z",
                msg(
                    "user",
                    "# AGENTS.md instructions for /r\n\n<INSTRUCTIONS>be terse</INSTRUCTIONS>",
                ),
            ),
            item(
                "2025-10-30T23:55:00.400Z",
                msg("user", "<environment_context>\n  <cwd>/r</cwd>\n</environment_context>"),
            ),
            item(
                "2025-10-30T23:55:01.000Z",
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "Fix the failing test"},
                        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                    ],
                },
            ),
            line(
                "2025-10-30T23:55:01.000Z",
                "event_msg",
                {"type": "user_message", "message": "Fix the failing test"},
            ),
            item(
                "2025-10-30T23:55:02.000Z",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "SECRET THOUGHT"}],
                },
            ),
            line(
                "2025-10-30T23:55:02.100Z",
                "event_msg",
                {"type": "agent_reasoning", "text": "SECRET THOUGHT"},
            ),
            item(
                "2025-10-30T23:55:03.000Z",
                {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": "c1",
                    "arguments": json.dumps(
                        {"command": ["bash", "-lc", "pytest -q"], "workdir": "/r"}
                    ),
                },
            ),
            item(
                "2025-10-30T23:55:04.000Z",
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": json.dumps(
                        {
                            "output": "1 failed",
                            "metadata": {"exit_code": 1, "duration_seconds": 0.5},
                        }
                    ),
                },
            ),
            item(
                "2025-10-30T23:55:05.000Z",
                {
                    "type": "local_shell_call",
                    "call_id": "c2",
                    "status": "completed",
                    "action": {"type": "exec", "command": ["git", "diff", "--stat"]},
                },
            ),
            item(
                "2025-10-30T23:55:06.000Z",
                {
                    "type": "custom_tool_call",
                    "call_id": "c3",
                    "name": "apply_patch",
                    "input": "*** Begin Patch\n*** Update File: a.py\n*** End Patch",
                },
            ),
            item(
                "2025-10-30T23:55:07.000Z",
                {
                    "type": "custom_tool_call_output",
                    "call_id": "c3",
                    "output": "Success. Updated a.py",
                },
            ),
            item(
                "2025-10-30T23:55:08.000Z",
                {
                    "type": "function_call",
                    "name": "search",
                    "namespace": "docs",
                    "call_id": "c4",
                    "arguments": '{"query": "pytest fixtures"}',
                },
            ),
            item(
                "2025-10-30T23:55:09.000Z",
                {
                    "type": "function_call_output",
                    "call_id": "c4",
                    "output": {"content": "server down", "success": False},
                },
            ),
            item(
                "2025-10-30T23:55:10.000Z",
                {
                    "type": "web_search_call",
                    "status": "completed",
                    "action": {"type": "search", "query": "pytest -q exit code"},
                },
            ),
            item(
                "2025-10-30T23:55:11.000Z",
                {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}},
            ),
            item(
                "2025-10-30T23:55:12.000Z",
                msg("assistant", "Fixed: the fixture was stale.", kind="output_text"),
            ),
            line(
                "2025-10-30T23:55:12.000Z",
                "event_msg",
                {"type": "agent_message", "message": "Fixed: the fixture was stale."},
            ),
            line(
                "2025-10-30T23:55:13.000Z",
                "event_msg",
                {
                    "type": "token_count",
                    "info": {"total_token_usage": {"input_tokens": 900, "output_tokens": 40}},
                },
            ),
            line(
                "2025-10-30T23:55:14.000Z",
                "event_msg",
                {
                    "type": "token_count",
                    "info": {"total_token_usage": {"input_tokens": 2500, "output_tokens": 130}},
                },
            ),
            line(
                "2025-10-30T23:55:15.000Z",
                "event_msg",
                {"type": "thread_name_updated", "thread_name": "Fix stale fixture"},
            ),
            line(
                "2025-10-31T00:05:00.000Z",
                "compacted",
                {"message": "Summary: the fixture was regenerated."},
            ),
            item("2025-10-31T00:06:00.000Z", msg("user", "Thanks, commit it")),
            item(
                "9999-01-01T00:00:00Z", msg("assistant", "from the far future", kind="output_text")
            ),
            item("2025-10-31T00:07:00.000Z", {"type": "hologram_call", "call_id": "c9"}),
            line("2025-10-31T00:08:00.000Z", "world_state", {"full": True, "state": {}}),
        ],
        tail='{"timestamp": "2025-10-31T00:09:00Z", "type": "response_item", "payload": {"type": "mess',
    )
    report = import_files(memory_repo, [f])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report.imported).values()
    assert report.imported[0].startswith(
        f"raw/conversations/2025/10/30/2355-{sid}-fix-stale-fixture"
    )
    assert (t.meta.model, t.meta.topic, t.meta.tokens_in, t.meta.tokens_out) == (
        "gpt-5-codex",
        "Fix stale fixture",
        2500,
        130,
    )
    # the message of an absurd time is kept, dated as the line before it
    assert roles(t) == ["user", "agent", "agent", "system", "user", "agent"]
    assert t.turns[-1].text == "from the far future" and t.turns[-1].time == t.turns[-2].time
    assert t.turns[0].items == (
        tf.Text("Fix the failing test"),
        tf.Attachment("image (not stored)"),
    )
    assert [(c.tool, c.args, c.result) for c in tool_calls(t)] == [
        ("shell", "pytest -q", "1 failed"),
        ("shell", "git diff --stat", None),
        (
            "apply_patch",
            "*** Begin Patch *** Update File: a.py *** End Patch",
            "Success. Updated a.py",
        ),
        ("docs.search", "pytest fixtures", "error: server down"),
        ("web_search", "pytest -q exit code", None),
    ]
    assert t.turns[2].text == "Fixed: the fixture was stale."
    assert (
        t.turns[3].time.isoformat() == "2025-10-31T00:05:00+00:00"
    )  # after midnight UTC, same file
    text = (memory_repo.root / report.imported[0]).read_text()
    for gone in (
        "SECRET THOUGHT",
        "AGENTS.md",
        "environment_context",
        "permissions instructions",
    ):
        assert gone not in text
    assert "> [tool:shell] git diff --stat\n" in text
    assert (
        text.count("Fixed: the fixture was stale.") == 1
    )  # the event_msg copy is not a second turn
    # the unknown item type and the cut-off last line are malformed; nothing else is
    assert report.bad_lines == 2, report.warnings


def test_codex_older_generations_and_events_only_logs(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    early = jsonl(
        tmp_path / "rollout-2025-05-07T17-24-21-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl",
        [
            {
                "id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e",
                "timestamp": "2025-05-07T17:24:21.123Z",
                "instructions": None,
            },
            {"record_type": "state"},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<user_instructions>x</user_instructions>"}
                ],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "what is in README?"}],
            },
            {
                "type": "local_shell_call",
                "call_id": "s1",
                "status": "completed",
                "action": {"type": "exec", "command": ["cat", "README.md"]},
            },
            {
                "type": "function_call_output",
                "call_id": "s1",
                "output": '{"output":"# Demo\\n","metadata":{"exit_code":0}}',
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "A demo README."}],
            },
            {"record_type": "state"},
        ],
    )
    typescript = tmp_path / "rollout-2025-04-20-abc.json"
    typescript.write_text(
        json.dumps(
            {
                "session": {"timestamp": "2025-04-20T08:00:00.000Z", "id": "ts-session-1"},
                "items": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "hello ts"}],
                    },
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "hi"}],
                    },
                ],
            }
        )
    )
    events = jsonl(
        tmp_path / "events-only.jsonl",
        [
            {
                "timestamp": "2025-10-30T10:00:00Z",
                "type": "session_meta",
                "payload": {"id": "evt-1", "timestamp": "2025-10-30T10:00:00Z"},
            },
            {
                "timestamp": "2025-10-30T10:00:01Z",
                "type": "event_msg",
                "payload": {"type": "user_message", "message": "run ls"},
            },
            {
                "timestamp": "2025-10-30T10:00:02Z",
                "type": "event_msg",
                "payload": {
                    "type": "exec_command_end",
                    "call_id": "e1",
                    "command": ["bash", "-lc", "ls"],
                    "aggregated_output": "a\nb",
                    "exit_code": 0,
                },
            },
            {
                "timestamp": "2025-10-30T10:00:03Z",
                "type": "event_msg",
                "payload": {"type": "agent_message", "message": "two files"},
            },
            {
                "timestamp": "2025-10-30T10:00:04Z",
                "type": "event_msg",
                "payload": {
                    "type": "turn.completed",
                    "usage": {"input_tokens": 10, "output_tokens": 3},
                },
            },
        ],
    )
    report = import_files(memory_repo, [early, typescript, events])
    assert report.refused == [] and report.bad_lines == 0
    got = transcripts(memory_repo, report.imported)
    e = got["5973b6c0-94b8-487b-a530-2aeb6098ae0e"]
    assert roles(e) == ["user", "agent", "agent"] and e.turns[0].text == "what is in README?"
    assert tool_calls(e) == [tf.ToolCall("shell", "cat README.md", "# Demo")]
    assert e.turns[0].time.isoformat() == "2025-05-07T17:24:00+00:00"
    assert roles(got["ts-session-1"]) == ["user", "agent"]
    ev = got["evt-1"]
    assert roles(ev) == ["user", "agent", "agent"] and tool_calls(ev) == [
        tf.ToolCall("shell", "ls", "a b")
    ]
    assert (ev.meta.tokens_in, ev.meta.tokens_out) == (10, 3)


def test_responses_item_list(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    f = tmp_path / "response.json"
    f.write_text(
        json.dumps(
            {
                "id": "resp_abc123",
                "object": "response",
                "created_at": 1761868800,
                "model": "gpt-5",
                "usage": {"input_tokens": 50, "output_tokens": 7},
                "output": [
                    {"type": "reasoning", "summary": []},
                    {
                        "type": "mcp_call",
                        "server_label": "gh",
                        "name": "list_issues",
                        "arguments": "{}",
                        "output": "3 issues",
                    },
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "There are 3 issues."}],
                    },
                ],
            }
        )
    )
    items = tmp_path / "items.json"
    items.write_text(
        json.dumps(
            [
                {"type": "message", "role": "user", "content": "plain string content"},
                {"type": "function_call", "name": "calc", "call_id": "k", "arguments": '{"x": 1}'},
                {
                    "type": "function_call_output",
                    "call_id": "k",
                    "output": [{"type": "input_text", "text": "2"}],
                },
            ]
        )
    )
    assert detect_format(items, items.read_text()).name == "openai-responses"
    report = import_files(memory_repo, [f, items])
    assert report.refused == []
    got = transcripts(memory_repo, report.imported)
    r = got["resp_abc123"]
    assert (r.meta.model, r.meta.tokens_in, r.meta.tokens_out) == ("gpt-5", 50, 7)
    assert (
        tool_calls(r) == [tf.ToolCall("gh.list_issues", "{}", "3 issues")]
        and r.turns[-1].text == "There are 3 issues."
    )
    (other,) = [t for sid, t in got.items() if sid != "resp_abc123"]
    assert other.meta.session_id.startswith("resp_") and tool_calls(other) == [
        tf.ToolCall("calc", '{"x": 1}', "2")
    ]


def test_codex_desktop_and_ide_wrappers_leave_the_request(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Codex Desktop and the IDE extension send the editor's state and the mentioned files
    ahead of the prompt; the prompt is what follows `## My request for Codex:`."""
    sid = "019c2c24-29ad-72c2-83dd-f3edfa6bf161"

    def user(text: str, ts: str) -> dict:
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        return {"timestamp": ts, "type": "response_item", "payload": item}

    def agent(text: str, ts: str) -> dict:
        item = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }
        return {"timestamp": ts, "type": "response_item", "payload": item}

    rows = [
        {
            "timestamp": "2026-02-05T10:21:33Z",
            "type": "session_meta",
            "payload": {
                "id": sid,
                "timestamp": "2026-02-05T10:21:33Z",
                "cwd": "/home/me/site",
                "originator": "codex_vscode",
                "cli_version": "0.98.0",
            },
        },
        user(
            "# Context from my IDE setup:\n\n## Active file: .env\n\n## Open tabs:\n"
            "- .env: .env\n- index.html: articles/index.html\n\n"
            "## My request for Codex:\nWhy is featured_img_url undefined in the build?",
            "2026-02-05T10:21:34Z",
        ),
        agent("The build reads `featured_image`, not `featured_img_url`.", "2026-02-05T10:21:50Z"),
        user(
            "# Files mentioned by the user:\n\n## screenshot.png:\n"
            "/home/me/Pictures/screenshot.png\n\n## build.log: /home/me/site/build.log\n\n"
            "## My request for Codex:\nAnd this error?",
            "2026-02-05T10:22:10Z",
        ),
        agent("That is the same field.", "2026-02-05T10:22:30Z"),
    ]
    path = jsonl(tmp_path / f"rollout-2026-02-05T10-21-33-{sid}.jsonl", rows)
    report = import_files(memory_repo, [path])
    t = transcripts(memory_repo, report.imported)[sid]
    assert "why-is-featured-img-url-undefined" in report.imported[0]
    assert [x.text for x in t.turns if x.role == "user"] == [
        "Why is featured_img_url undefined in the build?",
        "And this error?",
    ]
    assert [i for i in t.turns[2].items if isinstance(i, tf.Attachment)] == [
        tf.Attachment("/home/me/Pictures/screenshot.png"),
        tf.Attachment("/home/me/site/build.log"),
    ]
    assert "Open tabs" not in (memory_repo.root / report.imported[0]).read_text()
