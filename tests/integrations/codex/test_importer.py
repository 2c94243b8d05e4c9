"""The harness importers of issue 12: Codex CLI (and OpenAI Responses items), Cursor
(agent JSONL and Markdown export), Gemini CLI, ChatGPT and Claude.ai exports, Copilot CLI.

Each format is checked on the shared public sample (counts verified by reading the file),
on a hand-written log with the item types the sample lacks, and under hostile input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autopoiesis.capture.importers import ImportReport, detect_format, import_files, read_sessions, read_text
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf
from tests.conftest import Cli

ROOT = Path(__file__).resolve().parents[3]
MINE = {"codex", "openai-responses", "cursor", "cursor-md", "gemini", "chatgpt", "copilot", "claude-ai"}
FOLDER_FORMAT = {"codex": "codex", "cursor": "cursor", "gemini": "gemini", "chatgpt": "chatgpt",
                 "copilot": "copilot", "claude-ai": "claude-ai"}


def transcripts(repo: MemoryRepo, report: ImportReport) -> dict[str, tf.Transcript]:
    out = {}
    for rel in report.imported:
        t = tf.parse((repo.root / rel).read_text(encoding="utf-8"), rel)
        out[t.meta.session_id] = t
    return out


def calls(t: tf.Transcript) -> list[tf.ToolCall]:
    return [i for turn in t.turns for i in turn.items if isinstance(i, tf.ToolCall)]


def roles(t: tf.Transcript) -> list[str]:
    return [turn.role for turn in t.turns]


def jsonl(path: Path, lines: list[object], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + tail, encoding="utf-8")
    return path


# ── detection across every shared sample ──
def test_each_shared_sample_goes_to_its_importer_and_no_other_format_is_claimed(shared_data: Path) -> None:
    from autopoiesis.capture.importers import importers

    folders = sorted(p for p in (shared_data / "harness-logs").iterdir() if p.is_dir())
    assert {p.name for p in folders} >= set(FOLDER_FORMAT) | {"claude-code", "kimi", "qwen", "opencode", "aider"}
    for folder in folders:
        for f in sorted(folder.iterdir()):
            text = read_text(f)
            if folder.name in FOLDER_FORMAT:
                assert detect_format(f, text).name == FOLDER_FORMAT[folder.name], f
            else:  # another helper's formats: none of these importers may take them
                claimed = {n for n, i in importers().items() if n in MINE and i.detect(f, text) > 0}
                assert claimed == set(), (f, claimed)
    for f in sorted((shared_data / "claude-code").glob("*.jsonl")):
        assert detect_format(f, read_text(f)).name == "claude-code"


# ── Codex CLI ──
def test_codex_shared_samples(memory_repo: MemoryRepo, shared_data: Path) -> None:
    folder = shared_data / "harness-logs" / "codex"
    report = import_files(memory_repo, sorted(folder.iterdir()))
    # the 0.50 legacy fixture holds only bookkeeping events: refused, with the reason
    assert len(report.refused) == 1 and "codex_050_legacy" in report.refused[0]
    assert "no user or agent message (5 bookkeeping lines)" in report.refused[0]
    t = transcripts(memory_repo, report)["019fc8be-3658-7ca3-9e29-000000000000"]
    assert report.imported[0].startswith("raw/conversations/2026/08/03/1048-019fc8be")
    assert (t.meta.model, t.meta.channel, t.meta.tokens_in, t.meta.tokens_out) == ("gpt-5.6-luna", "codex", 16341, 81)
    assert roles(t) == ["user", "agent", "agent"]
    assert t.turns[0].text == "List the files" and t.turns[2].text == "Found 2 files."
    assert [(c.tool, c.args, c.result) for c in calls(t)] == [
        ("shell", "ls", "a.txt b.txt"), ("shell", "ls", "a.txt"),
        ("tool_search", "example", "example_group"), ("web_search", "example", None)]
    # the event_msg copies (user_message, agent_message, agent_reasoning) add nothing
    assert "agent_reasoning" not in (memory_repo.root / report.imported[0]).read_text()
    # lines 27+ of the fixture have "[trimmed for fixture]" timestamps: content lines among them are malformed
    assert report.bad_lines == 17 and all("trimmed for fixture" in w for w in report.warnings if "skipped" in w)


def test_codex_current_rollout_every_item_type(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    def line(ts: str, kind: str, payload: dict) -> dict:
        return {"timestamp": ts, "type": kind, "payload": payload}

    def item(ts: str, payload: dict) -> dict:
        return line(ts, "response_item", payload)

    def msg(role: str, *texts: str, kind: str = "input_text") -> dict:
        return {"type": "message", "role": role, "content": [{"type": kind, "text": t} for t in texts]}

    sid = "0199a213-81c0-7800-8aa1-bbab2a035a53"
    f = jsonl(tmp_path / f"rollout-2025-10-30T23-55-00-{sid}.jsonl", [
        line("2025-10-30T23:55:00.000Z", "session_meta", {"id": sid, "timestamp": "2025-10-30T23:55:00Z", "cwd": "/r"}),
        line("2025-10-30T23:55:00.100Z", "turn_context", {"model": "gpt-5-codex", "cwd": "/r"}),
        item("2025-10-30T23:55:00.200Z", msg("developer", "<permissions instructions>sandboxed</permissions instructions>")),
        item("2025-10-30T23:55:00.300Z", msg("user", "# AGENTS.md instructions for /r\n\n<INSTRUCTIONS>be terse</INSTRUCTIONS>")),
        item("2025-10-30T23:55:00.400Z", msg("user", "<environment_context>\n  <cwd>/r</cwd>\n</environment_context>")),
        item("2025-10-30T23:55:01.000Z", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Fix the failing test"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}),
        line("2025-10-30T23:55:01.000Z", "event_msg", {"type": "user_message", "message": "Fix the failing test"}),
        item("2025-10-30T23:55:02.000Z", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "SECRET THOUGHT"}]}),
        line("2025-10-30T23:55:02.100Z", "event_msg", {"type": "agent_reasoning", "text": "SECRET THOUGHT"}),
        item("2025-10-30T23:55:03.000Z", {"type": "function_call", "name": "shell", "call_id": "c1",
                                          "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"], "workdir": "/r"})}),
        item("2025-10-30T23:55:04.000Z", {"type": "function_call_output", "call_id": "c1", "output": json.dumps(
            {"output": "1 failed", "metadata": {"exit_code": 1, "duration_seconds": 0.5}})}),
        item("2025-10-30T23:55:05.000Z", {"type": "local_shell_call", "call_id": "c2", "status": "completed",
                                          "action": {"type": "exec", "command": ["git", "diff", "--stat"]}}),
        item("2025-10-30T23:55:06.000Z", {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch",
                                          "input": "*** Begin Patch\n*** Update File: a.py\n*** End Patch"}),
        item("2025-10-30T23:55:07.000Z", {"type": "custom_tool_call_output", "call_id": "c3", "output": "Success. Updated a.py"}),
        item("2025-10-30T23:55:08.000Z", {"type": "function_call", "name": "search", "namespace": "docs", "call_id": "c4",
                                          "arguments": "{\"query\": \"pytest fixtures\"}"}),
        item("2025-10-30T23:55:09.000Z", {"type": "function_call_output", "call_id": "c4",
                                          "output": {"content": "server down", "success": False}}),
        item("2025-10-30T23:55:10.000Z", {"type": "web_search_call", "status": "completed",
                                          "action": {"type": "search", "query": "pytest -q exit code"}}),
        item("2025-10-30T23:55:11.000Z", {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        item("2025-10-30T23:55:12.000Z", msg("assistant", "Fixed: the fixture was stale.", kind="output_text")),
        line("2025-10-30T23:55:12.000Z", "event_msg", {"type": "agent_message", "message": "Fixed: the fixture was stale."}),
        line("2025-10-30T23:55:13.000Z", "event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 900, "output_tokens": 40}}}),
        line("2025-10-30T23:55:14.000Z", "event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 2500, "output_tokens": 130}}}),
        line("2025-10-30T23:55:15.000Z", "event_msg", {"type": "thread_name_updated", "thread_name": "Fix stale fixture"}),
        line("2025-10-31T00:05:00.000Z", "compacted", {"message": "Summary: the fixture was regenerated."}),
        item("2025-10-31T00:06:00.000Z", msg("user", "Thanks, commit it")),
        item("9999-01-01T00:00:00Z", msg("assistant", "from the far future", kind="output_text")),
        item("2025-10-31T00:07:00.000Z", {"type": "hologram_call", "call_id": "c9"}),
        line("2025-10-31T00:08:00.000Z", "world_state", {"full": True, "state": {}}),
    ], tail='{"timestamp": "2025-10-31T00:09:00Z", "type": "response_item", "payload": {"type": "mess')
    report = import_files(memory_repo, [f])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report).values()
    assert report.imported[0].startswith(f"raw/conversations/2025/10/30/2355-{sid}-fix-stale-fixture")
    assert (t.meta.model, t.meta.topic, t.meta.tokens_in, t.meta.tokens_out) == ("gpt-5-codex", "Fix stale fixture", 2500, 130)
    assert roles(t) == ["user", "agent", "agent", "system", "user"]
    assert t.turns[0].items == (tf.Text("Fix the failing test"), tf.Attachment("image (not stored)"))
    assert [(c.tool, c.args, c.result) for c in calls(t)] == [
        ("shell", "pytest -q", "1 failed"),
        ("shell", "git diff --stat", None),
        ("apply_patch", "*** Begin Patch *** Update File: a.py *** End Patch", "Success. Updated a.py"),
        ("docs.search", 'pytest fixtures', "error: server down"),
        ("web_search", "pytest -q exit code", None)]
    assert t.turns[2].text == "Fixed: the fixture was stale."
    assert t.turns[3].time.isoformat() == "2025-10-31T00:05:00+00:00"  # after midnight UTC, same file
    text = (memory_repo.root / report.imported[0]).read_text()
    for gone in ("SECRET THOUGHT", "AGENTS.md", "environment_context", "permissions instructions", "far future"):
        assert gone not in text
    assert "> [tool:shell] git diff --stat\n" in text
    assert text.count("Fixed: the fixture was stale.") == 1  # the event_msg copy is not a second turn
    # the absurd timestamp, the unknown item type and the cut-off last line are malformed; nothing else is
    assert report.bad_lines == 3, report.warnings


def test_codex_older_generations_and_events_only_logs(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    early = jsonl(tmp_path / "rollout-2025-05-07T17-24-21-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl", [
        {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-05-07T17:24:21.123Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<user_instructions>x</user_instructions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "what is in README?"}]},
        {"type": "local_shell_call", "call_id": "s1", "status": "completed", "action": {"type": "exec", "command": ["cat", "README.md"]}},
        {"type": "function_call_output", "call_id": "s1", "output": "{\"output\":\"# Demo\\n\",\"metadata\":{\"exit_code\":0}}"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A demo README."}]},
        {"record_type": "state"},
    ])
    typescript = tmp_path / "rollout-2025-04-20-abc.json"
    typescript.write_text(json.dumps({"session": {"timestamp": "2025-04-20T08:00:00.000Z", "id": "ts-session-1"},
                                      "items": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello ts"}]},
                                                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}]}))
    events = jsonl(tmp_path / "events-only.jsonl", [
        {"timestamp": "2025-10-30T10:00:00Z", "type": "session_meta", "payload": {"id": "evt-1", "timestamp": "2025-10-30T10:00:00Z"}},
        {"timestamp": "2025-10-30T10:00:01Z", "type": "event_msg", "payload": {"type": "user_message", "message": "run ls"}},
        {"timestamp": "2025-10-30T10:00:02Z", "type": "event_msg", "payload": {"type": "exec_command_end", "call_id": "e1",
                                                                                   "command": ["bash", "-lc", "ls"], "aggregated_output": "a\nb", "exit_code": 0}},
        {"timestamp": "2025-10-30T10:00:03Z", "type": "event_msg", "payload": {"type": "agent_message", "message": "two files"}},
        {"timestamp": "2025-10-30T10:00:04Z", "type": "event_msg", "payload": {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 3}}},
    ])
    report = import_files(memory_repo, [early, typescript, events])
    assert report.refused == [] and report.bad_lines == 0
    got = transcripts(memory_repo, report)
    e = got["5973b6c0-94b8-487b-a530-2aeb6098ae0e"]
    assert roles(e) == ["user", "agent", "agent"] and e.turns[0].text == "what is in README?"
    assert calls(e) == [tf.ToolCall("shell", "cat README.md", "# Demo")]
    assert e.turns[0].time.isoformat() == "2025-05-07T17:24:00+00:00"
    assert roles(got["ts-session-1"]) == ["user", "agent"]
    ev = got["evt-1"]
    assert roles(ev) == ["user", "agent", "agent"] and calls(ev) == [tf.ToolCall("shell", "ls", "a b")]
    assert (ev.meta.tokens_in, ev.meta.tokens_out) == (10, 3)


def test_responses_item_list(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    f = tmp_path / "response.json"
    f.write_text(json.dumps({"id": "resp_abc123", "object": "response", "created_at": 1761868800, "model": "gpt-5",
                             "usage": {"input_tokens": 50, "output_tokens": 7},
                             "output": [{"type": "reasoning", "summary": []},
                                        {"type": "mcp_call", "server_label": "gh", "name": "list_issues", "arguments": "{}", "output": "3 issues"},
                                        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "There are 3 issues."}]}]}))
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"type": "message", "role": "user", "content": "plain string content"},
                                 {"type": "function_call", "name": "calc", "call_id": "k", "arguments": "{\"x\": 1}"},
                                 {"type": "function_call_output", "call_id": "k", "output": [{"type": "input_text", "text": "2"}]}]))
    assert detect_format(items, items.read_text()).name == "openai-responses"
    report = import_files(memory_repo, [f, items])
    assert report.refused == []
    got = transcripts(memory_repo, report)
    r = got["resp_abc123"]
    assert (r.meta.model, r.meta.tokens_in, r.meta.tokens_out) == ("gpt-5", 50, 7)
    assert calls(r) == [tf.ToolCall("gh.list_issues", "{}", "3 issues")] and r.turns[-1].text == "There are 3 issues."
    (other,) = [t for sid, t in got.items() if sid != "resp_abc123"]
    assert other.meta.session_id.startswith("resp_") and calls(other) == [tf.ToolCall("calc", '{"x": 1}', "2")]


# ── Cursor ──
def test_cursor_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    f = shared_data / "harness-logs" / "cursor" / "agent-sessions__small.jsonl"
    report = import_files(memory_repo, [f])
    assert report.refused == [] and report.bad_lines == 0
    (t,) = transcripts(memory_repo, report).values()
    assert t.meta.session_id == "cursor-agent-sessions__small"  # not a UUID: prefixed with the format
    assert roles(t) == ["user", "agent", "user", "agent"]
    assert calls(t) == [tf.ToolCall("Bash", "ls", None)]
    minute = int(f.stat().st_mtime) // 60 * 60  # no times in the log: the file's minute
    assert t.meta.started.timestamp() == minute


def test_cursor_jsonl_blocks_and_hostile_lines(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    sid = "9f1c2d3e-1111-4222-8333-444455556666"
    os.utime(jsonl(tmp_path / f"{sid}.jsonl", [
        {"role": "user", "message": {"content": [{"type": "text", "text": "<user_info>OS: linux</user_info>\n<user_query>\nrun the tests\n</user_query>"}]}},
        {"role": "assistant", "model": "cursor-auto", "message": {"content": [
            {"type": "thinking", "thinking": "PRIVATE PLAN"}, {"type": "text", "text": "Running them."},
            {"type": "tool_use", "id": "t1", "name": "Shell", "input": {"command": "pytest -q"}},
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "a.py"}}]}},
        {"role": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "print(1)"},
                                                 {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "3 passed"}]}]}},
        {"type": "turn_ended", "status": "success"},
        {"role": "assistant", "message": {"content": "All 3 pass."}},
        {"role": "assistant", "message": {"content": [{"type": "text", "text": "late"}]}, "timestamp": "1e30"},
        ["not", "an", "object"],
    ], tail='{"role": "user", "message": {"cont'), (1_760_000_000, 1_760_000_000))
    report = import_files(memory_repo, [tmp_path / f"{sid}.jsonl"])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report).values()
    assert t.meta.session_id == sid and t.meta.model == "cursor-auto"
    assert t.meta.started.isoformat() == "2025-10-09T08:53:00+00:00"
    assert roles(t) == ["user", "agent", "agent"]
    assert t.turns[0].text == "run the tests"
    assert calls(t) == [tf.ToolCall("Shell", "pytest -q", "3 passed"), tf.ToolCall("Read", "a.py", "print(1)")]
    assert "PRIVATE PLAN" not in (memory_repo.root / report.imported[0]).read_text()
    assert report.bad_lines == 3  # the absurd timestamp, the JSON array, the cut-off line


CURSOR_EXPORT = """# Fix the login form
_Exported on 12/29/2025 at 15:57:23 GMT-3 from Cursor (2.2.44)_

---

**User**

The login form rejects valid emails.

---

**Cursor**

The regex was too strict. I changed it:

---

```ts
const EMAIL = /^[^@]+@[^@]+$/;
```

---

**User**

thanks
"""


def test_cursor_markdown_export(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    f = tmp_path / "cursor_fix_the_login_form.md"
    f.write_text(CURSOR_EXPORT)
    report = import_files(memory_repo, [f])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report).values()
    assert (t.meta.topic, t.meta.channel) == ("Fix the login form", "cursor")
    assert t.meta.started.isoformat() == "2025-12-29T18:57:23+00:00"  # GMT-3 read as UTC
    assert roles(t) == ["user", "agent", "user"]
    assert "const EMAIL" in t.turns[1].text and "---" in t.turns[1].text  # a rule inside a message stays in it
    assert t.turns[2].text == "thanks"
    again = tmp_path / "export-again.md"
    again.write_text(CURSOR_EXPORT.replace("12/29/2025 at 15:57:23 GMT-3", "12/30/2025 at 09:00:00 PST"))
    assert import_files(memory_repo, [again]).skipped_duplicates == report.imported  # the same chat, the same id


@pytest.mark.parametrize(("line", "iso"), [
    ("4/11/2026 at 10:29:42 PDT", "2026-04-11T17:29:42+00:00"),
    ("2025. 7. 6. at 18시 15분 42초 GMT+9", "2025-07-06T09:15:42+00:00"),
    ("2025/12/16 at GMT+8 16:06:09", "2025-12-16T08:06:09+00:00"),
    ("8/13/2026 at 11:26:03 GMT+5:30", "2026-08-13T05:56:03+00:00"),
])
def test_cursor_export_times_in_any_locale(line: str, iso: str) -> None:
    from autopoiesis.integrations.cursor.importer import export_time

    assert export_time(line).isoformat() == iso


# ── Gemini CLI ──
def test_gemini_shared_samples(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(memory_repo, sorted((shared_data / "harness-logs" / "gemini").iterdir()))
    assert report.refused == [] and report.bad_lines == 0
    got = transcripts(memory_repo, report)
    j = got["gemini_stage0_jsonl"]
    assert roles(j) == ["user", "agent", "agent"] and j.meta.model == "gemini-3-flash-preview"
    assert calls(j) == [tf.ToolCall("run_shell_command", "ls -F",
                                    "Output: AgentSessions/ README.md Process Group PGID: 12345")]
    assert (j.meta.tokens_in, j.meta.tokens_out) == (11855 + 12069, 81 + 147)
    s = got["session-2026-01-16T18-34-3739ef95"]
    assert [(x.role, x.text) for x in s.turns] == [("user", "Hello"), ("agent", "Hi!")]
    assert "Short reasoning placeholder" not in (memory_repo.root / report.imported[1]).read_text()


def test_gemini_jsonl_updates_rewinds_and_notices(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    f = jsonl(tmp_path / "session-2026-05-01T10-00-abc.jsonl", [
        {"sessionId": "gem-rewind-1", "projectHash": "ph", "startTime": "2026-05-01T10:00:00Z", "kind": "main"},
        {"id": "u1", "timestamp": "2026-05-01T10:00:01Z", "type": "user", "content": [{"text": "@a.py explain"}], "displayContent": "explain a.py"},
        {"id": "g1", "timestamp": "2026-05-01T10:00:02Z", "type": "gemini", "content": "", "model": "gemini-2.5-pro"},
        {"id": "g1", "timestamp": "2026-05-01T10:00:02Z", "type": "gemini", "content": "It prints 1.", "model": "gemini-2.5-pro",
         "thoughts": [{"subject": "x", "description": "HIDDEN REASONING"}],
         "tokens": {"input": 100, "output": 20},
         "toolCalls": [{"id": "r1", "name": "read_file", "args": {"absolute_path": "/p/a.py"}, "status": "success",
                        "result": [{"functionResponse": {"id": "r1", "name": "read_file", "response": {"output": "print(1)"}}}]},
                       {"id": "r2", "name": "run_shell_command", "args": {"command": "python a.py"}, "status": "error",
                        "result": [{"functionResponse": {"id": "r2", "name": "run_shell_command", "response": {"error": "denied"}}}]}]},
        {"$set": {"lastUpdated": "2026-05-01T10:00:03Z", "summary": "Explain a.py"}},
        {"id": "i1", "timestamp": "2026-05-01T10:00:04Z", "type": "info", "content": "Request cancelled."},
        {"id": "u2", "timestamp": "2026-05-01T10:00:05Z", "type": "user", "content": "no, rewrite it"},
        {"id": "g2", "timestamp": "2026-05-01T10:00:06Z", "type": "gemini", "content": "Rewritten.", "tokens": {"input": 999, "output": 999}},
        {"$rewindTo": "u2"},
        {"id": "u3", "timestamp": "2026-05-01T10:00:07Z", "type": "user", "content": "thanks"},
        {"id": "u4", "timestamp": "year 3000", "type": "user", "content": "bad time"},
        {"foo": "bar"},
    ], tail="{\"id\": \"u5\", \"timest")
    report = import_files(memory_repo, [f])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report).values()
    assert (t.meta.session_id, t.meta.topic, t.meta.model) == ("gem-rewind-1", "Explain a.py", "gemini-2.5-pro")
    assert [(x.role, x.text) for x in t.turns] == [("user", "explain a.py"), ("agent", "It prints 1."), ("user", "thanks")]
    assert calls(t) == [tf.ToolCall("read_file", "/p/a.py", "print(1)"), tf.ToolCall("run_shell_command", "python a.py", "error: denied")]
    assert (t.meta.tokens_in, t.meta.tokens_out) == (100, 20)  # the update counts once, the rewound reply not at all
    text = (memory_repo.root / report.imported[0]).read_text()
    assert "HIDDEN REASONING" not in text and "Rewritten" not in text and "Request cancelled" not in text
    assert report.bad_lines == 3  # "year 3000", the unknown record, the cut-off line


# ── ChatGPT ──
def test_chatgpt_shared_samples(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(memory_repo, sorted((shared_data / "harness-logs" / "chatgpt").iterdir()))
    assert report.refused == [] and report.bad_lines == 0
    got = transcripts(memory_repo, report)
    n = got["chatgpt-fixture-conversation"]
    assert (n.meta.topic, n.meta.model) == ("Privacy-safe ChatGPT native fixture", "gpt-5-6-pro")
    assert roles(n) == ["user", "agent", "agent"]
    assert calls(n) == [tf.ToolCall("browser.search", "fixture evidence", "Privacy-safe tool result.")]
    assert n.turns[0].items[1:] == (tf.Attachment("file-service://fixture-input-image"), tf.Attachment("input.txt"))
    text = (memory_repo.root / next(p for p in report.imported if "chatgpt-fixture" in p)).read_text()
    for gone in ("Superseded answer", "reasoning trace", "reasoning summary", "Privacy-safe fixture profile"):
        assert gone not in text  # the other branch, thoughts, the recap, custom instructions
    s = got["35c7936c-5b99-42c6-a61f-ecc00a368ce7"]  # conversation_id is not a usable id there; id is
    assert [x.role for x in s.turns] == ["user", "user"]  # current_node's branch: the assistant reply is off it
    assert s.turns[0].time <= s.turns[1].time  # a child stamped before its parent keeps its place


def node(nid: str, parent: str | None, children: list[str], role: str | None = None, text: str = "", t: float | None = None,
         **extra: object) -> dict:
    msg = None
    if role:
        content = extra.pop("content", {"content_type": "text", "parts": [text]})
        msg = {"id": nid, "author": {"role": role, "name": extra.pop("name", None)}, "create_time": t,
               "content": content, "recipient": extra.pop("recipient", "all"), "metadata": extra.pop("metadata", {})}
    return {"id": nid, "parent": parent, "children": children, "message": msg}


def test_chatgpt_tree_branches_tools_and_a_bad_conversation(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    good = {"id": "c0ffee00-0000-4000-8000-000000000001", "title": "Plot a sine", "create_time": 1700000000.0,
            "default_model_slug": "gpt-4o", "mapping": {
                "root": node("root", None, ["sys"]),
                "sys": node("sys", "root", ["u1"], "system", "", None, metadata={"is_visually_hidden_from_conversation": True}),
                "u1": node("u1", "sys", ["a-old", "a1"], "user", "plot sin(x)", 1700000001.0),
                "a-old": node("a-old", "u1", [], "assistant", "REGENERATED AWAY", 1700000002.0),
                "a1": node("a1", "u1", ["th"], "assistant", "", 1700000003.0, recipient="python",
                           content={"content_type": "code", "language": "python", "text": "plt.plot(x, sin(x))"}),
                "th": node("th", "a1", ["out"], "assistant", "", 1700000004.0,
                           content={"content_type": "thoughts", "thoughts": [{"summary": "s", "content": "THINKING"}]}),
                "out": node("out", "th", ["a2"], "tool", "", 1700000005.0, name="python",
                            content={"content_type": "execution_output", "text": "<Figure>"}),
                "a2": node("a2", "out", [], "assistant", "Here is the plot.", None, metadata={"model_slug": "gpt-4o-2024"}),
            }}  # no current_node: the newest leaf stands in
    bad = {"id": "c0ffee00-0000-4000-8000-000000000002", "title": "Broken", "create_time": "9999-99-99",
           "current_node": "u", "mapping": {"u": node("u", None, [], "user", "hi", float("inf"))}}
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([good, bad, {"not": "a conversation"}]))
    report = import_files(memory_repo, [f])
    assert len(report.refused) == 2, report.refused
    assert any("[1]" in r and "no readable create_time" in r for r in report.refused)
    assert any("[2]" in r and "not a ChatGPT conversation" in r for r in report.refused)
    (t,) = transcripts(memory_repo, report).values()
    assert (t.meta.topic, t.meta.model) == ("Plot a sine", "gpt-4o")
    assert [(x.role, x.text) for x in t.turns] == [("user", "plot sin(x)"), ("agent", ""), ("agent", "Here is the plot.")]
    assert calls(t) == [tf.ToolCall("python", "plt.plot(x, sin(x))", "<Figure>")]
    assert t.turns[2].time == t.turns[1].time  # no create_time: the time before it
    text = (memory_repo.root / report.imported[0]).read_text()
    assert "REGENERATED AWAY" not in text and "THINKING" not in text


# ── Copilot CLI ──
def test_copilot_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(memory_repo, [shared_data / "harness-logs" / "copilot" / "agent-sessions__small.jsonl"])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report).values()
    assert (t.meta.session_id, t.meta.model, t.meta.tokens_in, t.meta.tokens_out) == ("copilot_stage0_small", "gpt-5-mini", 100, 15)
    assert [(x.role, x.text) for x in t.turns] == [("user", "List the files"), ("agent", "Listing the files."), ("agent", "Done")]
    assert calls(t) == [tf.ToolCall("shell", "ls", "a.txt b.txt")]
    assert "[trimmed for fixture]" not in (memory_repo.root / report.imported[0]).read_text()
    assert report.bad_lines == 8  # the fixture's trimmed events with "[trimmed for fixture]" timestamps


def test_copilot_events_subagents_and_hostile_lines(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    def ev(n: int, kind: str, data: dict, ts: str | None = None) -> dict:
        return {"type": kind, "data": data, "id": f"e{n}", "timestamp": ts or f"2026-03-26T17:50:{n:02d}.000Z", "parentId": None}

    sid = "aaaabbbb-1111-2222-3333-ccccddddeeee"
    (tmp_path / sid).mkdir()
    f = jsonl(tmp_path / sid / "events.jsonl", [
        ev(1, "session.start", {"sessionId": sid, "startTime": "2026-03-26T17:50:01.000Z", "selectedModel": "claude-sonnet-4.5"}),
        ev(2, "system.message", {"content": "SYSTEM PROMPT", "role": "system"}),
        ev(3, "user.message", {"content": "find TODOs", "transformedContent": "INJECTED CONTEXT find TODOs",
                               "attachments": [{"type": "file", "path": "src/app.py", "displayName": "app.py"}]}),
        ev(4, "assistant.turn_start", {"turnId": "0"}),
        ev(5, "assistant.reasoning", {"reasoningId": "r", "content": "PRIVATE REASONING"}),
        ev(6, "tool.execution_start", {"toolCallId": "t1", "toolName": "task", "arguments": {"description": "search"}}),
        ev(7, "assistant.message", {"content": "Delegating.", "toolRequests": [{"toolCallId": "t1", "name": "task", "arguments": {}}],
                                    "outputTokens": 5}),
        ev(8, "subagent.started", {"toolCallId": "t1", "agentName": "explore", "agentDisplayName": "Explore"}),
        ev(9, "assistant.message", {"parentToolCallId": "t1", "content": "Found 2 TODOs.", "toolRequests": [
            {"toolCallId": "t2", "name": "grep", "arguments": "{\"pattern\": \"TODO\"}"}]}),
        ev(10, "tool.execution_complete", {"parentToolCallId": "t1", "toolCallId": "t2", "success": True, "result": {"content": "a.py:3"}}),
        ev(11, "tool.execution_complete", {"toolCallId": "t1", "success": True, "result": {"content": "2 TODOs"}}),
        ev(12, "tool.execution_start", {"toolCallId": "t3", "toolName": "list", "mcpServerName": "github", "mcpToolName": "list_issues", "arguments": {}}),
        ev(13, "tool.execution_complete", {"toolCallId": "t3", "success": False, "error": {"message": "rate limited"}}),
        ev(14, "assistant.message", {"content": "Done: 2 TODOs.", "toolRequests": [], "outputTokens": 7}),
        ev(15, "session.shutdown", {"modelMetrics": {"claude-sonnet-4.5": {"usage": {"inputTokens": 1200, "outputTokens": 60}}}}),
        ev(16, "session.frobnicate", {}),
        ev(17, "user.message", {"content": "late"}, ts="99999-01-01"),
        ev(18, "teleport.begin", {}),
        {"type": "user.message", "data": "wrong type", "id": "e19", "timestamp": "2026-03-26T17:51:00Z"},
    ], tail='{"type": "assistant.mess')
    report = import_files(memory_repo, [f])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report).values()
    assert (t.meta.session_id, t.meta.model, t.meta.tokens_in, t.meta.tokens_out) == (sid, "claude-sonnet-4.5", 1200, 60)
    assert [(x.role, x.name, x.text) for x in t.turns] == [
        ("user", None, "find TODOs"), ("agent", None, ""), ("agent", None, "Delegating."),
        ("agent", "Explore", "Found 2 TODOs."), ("agent", None, ""), ("agent", None, "Done: 2 TODOs.")]
    assert t.turns[0].items[1] == tf.Attachment("src/app.py")
    assert calls(t) == [tf.ToolCall("task", "search", "2 TODOs"), tf.ToolCall("grep", "TODO", "a.py:3"),
                        tf.ToolCall("github.list_issues", "{}", "error: rate limited")]
    text = (memory_repo.root / report.imported[0]).read_text()
    assert "SYSTEM PROMPT" not in text and "PRIVATE REASONING" not in text and "INJECTED" not in text
    assert report.bad_lines == 4  # teleport.begin, the absurd time, data of the wrong type, the cut-off line
    # session.frobnicate is an unknown event of a known family: bookkeeping, not malformed


# ── Claude.ai ──
def test_claude_ai_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(memory_repo, [shared_data / "harness-logs" / "claude-ai" / "polylogue__sample-00.json"])
    assert report.refused == [] and report.bad_lines == 0
    (t,) = transcripts(memory_repo, report).values()
    assert (t.meta.session_id, t.meta.topic) == ("37f8a88b-17fc-495a-87a0-ca6e0822e8f3", "Improving search index performance")
    assert [(x.role, x.text) for x in t.turns] == [
        ("user", "Can you explain how this works?"), ("agent", "After reviewing, I found several areas for improvement."),
        ("user", "Can you explain how this works?")]
    assert sum(isinstance(i, tf.Attachment) for x in t.turns for i in x.items) == 4 + 2 + 3 + 4 + 4 + 3
    # the synthetic created_at values end in a bare "+": each is named in a warning and keeps the time before it
    assert sum("keeps the time before it" in w for w in report.warnings) == 3
    assert t.meta.started.isoformat() == "2022-12-28T18:09:27+00:00"


def test_claude_ai_tools_branches_and_bad_entries(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    root = "00000000-0000-4000-8000-000000000000"

    def m(uuid: str, parent: str, sender: str, created: str, content: list, text: str = "") -> dict:
        return {"uuid": uuid, "parent_message_uuid": parent, "sender": sender, "created_at": created, "text": text,
                "content": content, "attachments": [], "files": []}

    conv = {"uuid": "5ca1ab1e-0000-4000-8000-000000000001", "name": "Weather lookup", "created_at": "2025-03-01T09:00:00Z",
            "chat_messages": [
                m("m1", root, "human", "2025-03-01T09:00:01Z", [{"type": "text", "text": "Weather in Oslo?"}]),
                m("m2", "m1", "assistant", "2025-03-01T09:00:02Z", [{"type": "text", "text": "EDITED AWAY"}]),
                m("m3", "m1", "assistant", "2025-03-01T09:00:03Z", [
                    {"type": "thinking", "thinking": "HIDDEN"},
                    {"type": "tool_use", "id": "tu1", "name": "web_search", "input": {"query": "Oslo weather"}},
                    {"type": "tool_result", "tool_use_id": "tu1", "name": "web_search", "content": [{"type": "text", "text": "4°C, rain"}]},
                    {"type": "text", "text": "4°C and raining."}]),
            ]}
    conv["chat_messages"][0]["attachments"] = [{"file_name": "notes.txt", "extracted_content": "PASTED TEXT"}]
    odd = {"uuid": "5ca1ab1e-0000-4000-8000-000000000002", "name": "Odd", "created_at": "nope",
           "chat_messages": [{"uuid": "x", "sender": "human", "created_at": "also nope", "text": "hi"}]}
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([conv, odd, ["junk"]]))
    report = import_files(memory_repo, [f])
    assert len(report.refused) == 2
    assert any("[1]" in r and "no readable created_at" in r for r in report.refused)
    assert any("[2]" in r and "not a Claude.ai conversation" in r for r in report.refused)
    (t,) = transcripts(memory_repo, report).values()
    assert [(x.role, x.text) for x in t.turns] == [("user", "Weather in Oslo?"), ("agent", "4°C and raining.")]
    assert t.turns[0].items[1] == tf.Attachment("notes.txt")
    assert calls(t) == [tf.ToolCall("web_search", "Oslo weather", "4°C, rain")]
    text = (memory_repo.root / report.imported[0]).read_text()
    assert "EDITED AWAY" not in text and "HIDDEN" not in text and "PASTED TEXT" not in text


# ── every format: empty files, re-imports, the CLI ──
@pytest.mark.parametrize("fmt", sorted(MINE))
def test_an_empty_file_is_refused_with_its_reason(memory_repo: MemoryRepo, tmp_path: Path, fmt: str) -> None:
    f = tmp_path / ("empty.md" if fmt == "cursor-md" else "empty.jsonl" if fmt in ("codex", "cursor", "copilot") else "empty.json")
    f.write_text("")
    report = import_files(memory_repo, [f], fmt)
    assert report.imported == [] and len(report.refused) == 1
    assert str(f) in report.refused[0] and ("nothing to import" in report.refused[0] or "not valid JSON" in report.refused[0])


def test_every_shared_sample_reimports_as_a_noop(memory_repo: MemoryRepo, shared_data: Path, git) -> None:
    files = [f for name in FOLDER_FORMAT for f in sorted((shared_data / "harness-logs" / name).iterdir())]
    first = import_files(memory_repo, files)
    head = git(memory_repo.root, "rev-parse", "HEAD").stdout
    again = import_files(memory_repo, files)
    assert again.imported == [] and sorted(again.skipped_duplicates) == sorted(first.imported)
    assert git(memory_repo.root, "rev-parse", "HEAD").stdout == head


def test_cli_refuses_a_log_without_conversation_and_names_real_formats(memory_repo: MemoryRepo,
                                                                       shared_data: Path, tmp_path: Path, cli: Cli) -> None:
    legacy = shared_data / "harness-logs" / "codex" / "agent-sessions__codex_050_legacy.jsonl"
    out = cli("import", str(legacy), repo=memory_repo)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "holds no user or agent message" in out.stderr
    prose = tmp_path / "notes.txt"
    prose.write_text("just prose")
    with pytest.raises(ImportFormatError) as exc:
        read_sessions(prose, "auto", ImportReport())
    assert all(name in str(exc.value) for name in MINE)  # the advice lists the real --format names
    # a log passed with the wrong --format is refused with the format it is in
    gemini = shared_data / "harness-logs" / "gemini" / "agent-sessions__small.json"
    report = import_files(memory_repo, [gemini], "chatgpt")
    assert report.imported == [] and report.refused[0].endswith("It reads as gemini: pass --format gemini (or auto).")
