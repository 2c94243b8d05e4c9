"""Importers of issue 12 (part B): Cline/Anthropic lists, OpenCode storage, Aider, Continue,
claude-code-transcripts loglines; Claude Code subagents and bookkeeping; the session-id
index; exit codes and advice."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # aider writes local time
    time.tzset()


def transcripts(repo: MemoryRepo, rels: list[str]) -> dict[str, tf.Transcript]:
    return {t.meta.session_id: t for t in (tf.parse((repo.root / r).read_text(encoding="utf-8"), r) for r in rels)}


def tools(t: tf.Transcript) -> list[tf.ToolCall]:
    return [i for turn in t.turns for i in turn.items if isinstance(i, tf.ToolCall)]


# ── Cline / Roo / any Anthropic Messages list ──
CLINE = [
    {"role": "user", "ts": 1760000000000, "content": [
        {"type": "text", "text": "<task>\nFix the failing date parser test\n</task>"},
        {"type": "text", "text": "<environment_details>\n# Current Time\n2025-10-09\n</environment_details>"}]},
    {"role": "assistant", "ts": 1760000005000, "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic"},
     "metrics": {"tokens": {"prompt": 900, "completion": 40}}, "content": [
        {"type": "thinking", "thinking": "secret reasoning"},
        {"type": "text", "text": "I'll run the tests first."},
        {"type": "tool_use", "id": "toolu_1", "name": "execute_command", "input": {"command": "pytest -q tests/test_dates.py"}}]},
    {"role": "user", "ts": 1760000010000, "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "1 failed"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
        {"type": "text", "text": "<environment_details>\nnothing\n</environment_details>"}]},
    {"role": "assistant", "ts": 1760000020000, "content": [
        {"type": "text", "text": "<thinking>the parser drops the zone</thinking>\nThe parser drops the time zone."},
        {"type": "text", "text": "<replace_in_file>\n<path>dates.py</path>\n<diff>...</diff>\n</replace_in_file>"}]},
    {"role": "user", "ts": 1760000030000, "content": [
        {"type": "text", "text": "[replace_in_file for 'dates.py'] Result:"},
        {"type": "text", "text": "The content was successfully saved to dates.py."},
        {"type": "text", "text": "[ERROR] You did not use a tool in your previous response! Please retry with a tool use."}]},
]


def write_cline(tmp: Path, messages: list[dict], harness: str = "saoudrizwan.claude-dev") -> Path:
    folder = tmp / harness / "tasks" / "1760000000000"
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "api_conversation_history.json"
    p.write_text(json.dumps(messages))
    return p


def test_cline_history_keeps_every_tool_call_and_never_writes_an_empty_turn(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    p = write_cline(tmp_path, CLINE)
    assert detect_format(p, p.read_text()).name == "cline"  # not "openai", which lost every tool call
    report = import_files(memory_repo, [p])
    assert report.refused == [] and len(report.imported) == 1
    assert report.imported[0].startswith("raw/conversations/2025/10/09/0853-cline-1760000000000-")
    t = transcripts(memory_repo, report.imported)["cline-1760000000000"]
    assert (t.meta.channel, t.meta.model, t.meta.tokens_in, t.meta.tokens_out) == ("cline", "claude-sonnet-4-5", 900, 40)
    assert all(turn.items for turn in t.turns)
    calls = tools(t)
    assert calls[0] == tf.ToolCall("execute_command", "pytest -q tests/test_dates.py", "1 failed")
    assert calls[1] == tf.ToolCall("replace_in_file", 'dates.py {"diff": "..."}', "The content was successfully saved to dates.py.")
    text = (memory_repo.root / report.imported[0]).read_text()
    assert "> [attachment:image/png from a tool result (not stored)]" in text
    assert "secret reasoning" not in text and "drops the zone" not in text  # reasoning excluded
    assert "environment_details" not in text and "Current Time" not in text
    assert t.turns[0].text == "Fix the failing date parser test"
    assert t.turns[-1].role == "system" and t.turns[-1].text.startswith("[ERROR] You did not use a tool")


def test_an_anthropic_list_is_refused_by_the_openai_reader_and_any_other_file_name_works(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    p = tmp_path / "messages.json"
    p.write_text(json.dumps({"model": "claude-opus-4", "messages": CLINE[1:3]}))
    forced = import_files(memory_repo, [p], "openai")
    assert forced.imported == [] and "--format cline" in forced.refused[0]
    report = import_files(memory_repo, [p])
    assert report.refused == [] and len(report.imported) == 1
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert t.meta.channel == "anthropic" and t.meta.session_id.startswith("anth_")
    assert tools(t)[0].result == "1 failed"


def test_roo_code_is_named_by_its_folder(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    p = write_cline(tmp_path, CLINE[:3], harness="rooveterinaryinc.roo-cline")
    report = import_files(memory_repo, [p])
    assert "roo-code-1760000000000" in transcripts(memory_repo, report.imported)


def test_a_turn_whose_content_was_not_understood_refuses_the_session(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    p = tmp_path / "chat.json"
    p.write_text(json.dumps([{"role": "user", "content": "hi"},
                             {"role": "assistant", "content": [{"type": "future_block", "payload": {"x": 1}}]}]))
    report = import_files(memory_repo, [p], "openai")
    assert report.imported == []
    assert "would be written empty" in report.refused[0] and "--format" in report.refused[0]


# ── OpenCode storage ──
def opencode_storage(root: Path, *, legacy_parts: bool = False) -> Path:
    def put(rel: str, data: dict) -> None:
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(data))

    put("session/proj1/ses_parent.json", {"id": "ses_parent", "projectID": "proj1", "directory": "/w", "title": "Fix CI",
                                          "time": {"created": 1730000000000, "updated": 1730000009000}})
    put("session/proj1/ses_child.json", {"id": "ses_child", "projectID": "proj1", "directory": "/w", "parentID": "ses_parent",
                                         "title": "Search subtask", "time": {"created": 1730000004000}})
    put("message/ses_parent/msg_1.json", {"id": "msg_1", "sessionID": "ses_parent", "role": "user", "time": {"created": 1730000001000},
                                          "model": {"providerID": "openai", "modelID": "gpt-4o-mini"}})
    put("message/ses_parent/msg_2.json", {"id": "msg_2", "sessionID": "ses_parent", "role": "assistant",
                                          "time": {"created": 1730000002000}, "modelID": "gpt-4o-mini",
                                          "tokens": {"input": 120, "output": 16, "reasoning": 4},
                                          "error": {"name": "MessageAbortedError", "data": {"message": "The operation was aborted."}}})
    put("message/ses_child/msg_3.json", {"id": "msg_3", "sessionID": "ses_child", "role": "user", "time": {"created": 1730000004000}})
    parts = [("msg_1", {"id": "prt_a", "type": "text", "text": "Why is CI red?"}),
             ("msg_1", {"id": "prt_b", "type": "text", "text": "<file contents>", "synthetic": True}),
             ("msg_2", {"id": "prt_c", "type": "reasoning", "text": "think think"}),
             ("msg_2", {"id": "prt_d", "type": "tool", "callID": "c1", "tool": "bash",
                        "state": {"status": "completed", "input": {"command": "gh run view"}, "output": "lint failed\n"}}),
             ("msg_2", {"id": "prt_e", "type": "tool", "callID": "c2", "tool": "read",
                        "state": {"status": "error", "input": {"filePath": "x.py"}, "error": "no such file"}}),
             ("msg_2", {"id": "prt_f", "type": "text", "text": "Lint failed on x.py."}),
             ("msg_2", {"id": "prt_g", "type": "step-finish", "tokens": {"input": 120, "output": 16}}),
             ("msg_2", {"id": "prt_h", "type": "file", "filename": "ci.log", "mime": "text/plain", "url": "file:///w/ci.log"}),
             ("msg_3", {"id": "prt_i", "type": "text", "text": "Find every TODO"})]
    for n, (mid, part) in enumerate(parts):
        part = {**part, "messageID": mid}
        put(f"part/prt_{n:03d}.json" if legacy_parts else f"part/{mid}/{part['id']}.json", part)
    return root


@pytest.mark.parametrize("legacy", [False, True])
def test_opencode_storage_folder(memory_repo: MemoryRepo, tmp_path: Path, legacy: bool) -> None:
    root = opencode_storage(tmp_path / "opencode" / "storage", legacy_parts=legacy)
    report = import_files(memory_repo, [root.parent])  # the data folder holding storage/ works too
    assert report.refused == [], report.refused
    ts = transcripts(memory_repo, report.imported)
    parent, child = ts["ses_parent"], ts["ses_child"]
    assert (parent.meta.topic, parent.meta.model, parent.meta.tokens_in, parent.meta.tokens_out) == ("Fix CI", "gpt-4o-mini", 120, 16)
    assert [x.role for x in parent.turns] == ["user", "agent", "system"]
    assert parent.turns[0].text == "Why is CI red?"  # the synthetic part OpenCode added is left out
    assert tools(parent) == [tf.ToolCall("bash", "gh run view", "lint failed"), tf.ToolCall("read", '{"filePath": "x.py"}', "error: no such file")]
    assert tf.Attachment("ci.log") in parent.turns[1].items
    assert "think think" not in (memory_repo.root / report.imported[0]).read_text()
    assert parent.turns[2].text == "MessageAbortedError: The operation was aborted."
    assert child.meta.parent_session == "ses_parent"


def test_opencode_session_or_message_file_imports_its_whole_session(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    root = opencode_storage(tmp_path / "storage")
    by_session = import_files(memory_repo, [root / "session" / "proj1" / "ses_parent.json"])
    assert by_session.refused == [] and len(by_session.imported) == 1
    by_message = import_files(memory_repo, [root / "message" / "ses_parent" / "msg_2.json"])
    assert by_message.imported == [] and by_message.skipped_duplicates == by_session.imported


def test_opencode_shared_samples_are_refused_with_the_reason(memory_repo: MemoryRepo, shared_data: Path) -> None:
    files = sorted((shared_data / "harness-logs" / "opencode").glob("*.json"))
    report = import_files(memory_repo, files)
    assert report.imported == [] and len(report.refused) == 2
    assert all("has no message with text or tool parts" in r and "storage folder" in r for r in report.refused)


# ── Aider ──
# aider ends its own lines (user input, its output) with two spaces; "|" stands for them here
AIDER = """
# aider chat started at 2025-10-20 21:49:17

> Aider v0.86.1|
> Main model: gpt-4o with diff edit format|

#### /add src/dates.py|
> Added src/dates.py to the chat|

#### Why does parse_date drop the zone?|
####   It should keep +02:00.|

It calls `replace(tzinfo=None)`. Here is the fix:

> a quoted line of the reply, not aider's output

src/dates.py
```python
return dt
```

> Tokens: 2.5k sent, 120 received. Cost: $0.01 message, $0.01 session.|
> Applied edit to src/dates.py|
> Commit 1a2b3c4 fix: keep the time zone in parse_date|

#### /run pytest -q|
> Running pytest -q|

# aider chat started at 2025-10-21 08:00:00

> Aider v0.86.1|

#### /ask what else uses parse_date?|

Only `report.py`.
""".replace("|\n", "  \n")


def test_aider_history(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    p = tmp_path / ".aider.chat.history.md"
    p.write_text(AIDER)
    report = import_files(memory_repo, [p])
    assert report.refused == [] and len(report.imported) == 2
    ts = transcripts(memory_repo, report.imported)
    first = ts["aider-20251020T214917Z"]
    assert (first.meta.model, first.meta.tokens_in, first.meta.tokens_out) == ("gpt-4o", 2500, 120)
    assert first.turns[0] == tf.Turn(first.turns[0].time, "user", (tf.Text("Why does parse_date drop the zone?\n  It should keep +02:00."),))
    reply = first.turns[1]
    assert reply.role == "agent" and "> a quoted line of the reply" in reply.text and "```python" in reply.text
    assert [c.tool for c in tools(first)] == ["edit", "commit", "run", "run"]
    assert tools(first)[1] == tf.ToolCall("commit", "fix: keep the time zone in parse_date", "1a2b3c4")
    assert "/add" not in (memory_repo.root / report.imported[0]).read_text()  # bookkeeping
    second = ts["aider-20251021T080000Z"]
    assert [x.text for x in second.turns] == ["what else uses parse_date?", "Only `report.py`."]


def test_aider_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    p = shared_data / "harness-logs" / "aider" / "zen-mcp-server__.aider.chat.history.md"
    assert detect_format(p, p.read_text()).name == "aider"
    report = import_files(memory_repo, [p])
    assert report.refused == [] and len(report.imported) == 1  # the other sessions hold only commands
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert t.meta.model == "gemini/gemini-2.5-pro-preview-06-05" and t.meta.started.isoformat().startswith("2025-10-23T17:04:56")
    assert all(x.role == "user" for x in t.turns) and "gemini" in t.turns[1].text


# ── Continue ──
def test_continue_session(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    folder = tmp_path / ".continue" / "sessions"
    folder.mkdir(parents=True)
    (folder / "sessions.json").write_text(json.dumps([{"sessionId": "c-1", "title": "Dates", "dateCreated": "1760000000000",
                                                      "workspaceDirectory": "/w"}]))
    session = {"sessionId": "c-1", "title": "Dates", "workspaceDirectory": "/w", "chatModelTitle": "GPT-4o",
               "usage": {"promptTokens": 300, "completionTokens": 20, "totalCost": 0.01},
               "history": [
                   {"message": {"role": "user", "content": [{"type": "text", "text": "Where is parse_date?"},
                                                            {"type": "imageUrl", "imageUrl": {"url": "data:image/png;base64,AA"}}]},
                    "contextItems": [{"name": "dates.py", "description": "src/dates.py", "content": "...",
                                      "uri": {"type": "file", "value": "file:///w/src/dates.py"}, "id": {"providerTitle": "file", "itemId": "1"}}]},
                   {"message": {"role": "thinking", "content": "hmm"}, "contextItems": []},
                   {"message": {"role": "assistant", "content": "", "toolCalls": [
                       {"id": "tc1", "type": "function", "function": {"name": "grep_search", "arguments": "{\"query\": \"def parse_date\"}"}}]},
                    "contextItems": [], "toolCallStates": [{"toolCallId": "tc1", "status": "done", "parsedArgs": {},
                                                            "toolCall": {}, "output": [{"name": "r", "description": "", "content": "src/dates.py:3"}]}]},
                   {"message": {"role": "assistant", "content": "In src/dates.py, line 3."}, "contextItems": [],
                    "conversationSummary": "The user looked for parse_date."}]}
    (folder / "c-1.json").write_text(json.dumps(session))
    report = import_files(memory_repo, [folder])  # the folder: sessions.json is passed over
    assert report.refused == [] and len(report.imported) == 1
    assert any("sessions.json: skipped" in w for w in report.warnings)
    t = transcripts(memory_repo, report.imported)["c-1"]
    assert report.imported[0].startswith("raw/conversations/2025/10/09/0853-c-1-")
    assert (t.meta.model, t.meta.topic, t.meta.tokens_in) == ("GPT-4o", "Dates", 300)
    assert [x.role for x in t.turns] == ["user", "agent", "agent", "system"]
    assert t.turns[0].items[1:] == (tf.Attachment("image (not stored)"), tf.Attachment("file:///w/src/dates.py"))
    assert tools(t) == [tf.ToolCall("grep_search", "def parse_date", "src/dates.py:3")]
    assert "hmm" not in (memory_repo.root / report.imported[0]).read_text()


# ── claude-code-transcripts loglines ──
def test_loglines_read_as_the_claude_code_log_they_came_from(memory_repo: MemoryRepo, shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "claude-code" / "claude-code-transcripts__sample_session.jsonl"
    rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    kept = [{k: r[k] for k in ("type", "timestamp", "message") if k in r} for r in rows if r.get("type") in ("user", "assistant")]
    p = tmp_path / "web-session.json"
    p.write_text(json.dumps({"loglines": kept}))
    assert detect_format(p, p.read_text()).name == "loglines"
    report = import_files(memory_repo, [p, src])
    assert report.refused == [] and len(report.imported) == 2
    ts = transcripts(memory_repo, report.imported)
    assert [x.items for x in ts["web-session"].turns] == [x.items for x in ts["test-session-id"].turns]


# ── Claude Code ──
def test_claude_code_subagent_files_in_either_order(memory_repo: MemoryRepo, shared_data: Path, tmp_path: Path) -> None:
    """The real layout: <session>.jsonl beside <session>/subagents/agent-<id>.jsonl."""
    logs = shared_data / "harness-logs" / "claude-code"
    sid = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
    project = tmp_path / "project"
    (project / sid / "subagents").mkdir(parents=True)
    shutil.copy(logs / "agent-sessions__subagent_parent.jsonl", project / f"{sid}.jsonl")
    shutil.copy(logs / "agent-sessions__subagents_agent-a0ad4f44468bdf20d.jsonl", project / sid / "subagents" / "agent-a0ad4f44468bdf20d.jsonl")
    agent_first = import_files(memory_repo, [project / sid / "subagents" / "agent-a0ad4f44468bdf20d.jsonl", project / f"{sid}.jsonl"])
    assert agent_first.refused == [] and len(agent_first.imported) == 2
    ts = transcripts(memory_repo, agent_first.imported)
    assert ts["agent-a0ad4f44468bdf20d"].meta.parent_session == sid
    assert ts[sid].meta.parent_session is None
    assert tools(ts["agent-a0ad4f44468bdf20d"]) == [tf.ToolCall("bash", "grep -rn TODO", "a.txt:1: TODO fix")]
    folder = import_files(memory_repo, [project])  # the folder, parent first: the same two, nothing new
    assert folder.imported == [] and sorted(folder.skipped_duplicates) == sorted(agent_first.imported)


def test_claude_code_agent_file_with_the_parents_session_id(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    """Older Claude Code: agent-<id>.jsonl beside the session, its lines carrying the parent's sessionId."""
    main = [{"type": "user", "sessionId": "S1", "uuid": "u1", "timestamp": "2026-01-05T09:00:00Z", "message": {"role": "user", "content": "Audit the repo"}},
            {"type": "assistant", "sessionId": "S1", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-01-05T09:00:05Z",
             "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "task1", "name": "Task", "input": {"description": "scan"}}]}},
            # a sidechain written into the main file (no agentId): its own transcript
            {"type": "user", "sessionId": "S1", "uuid": "s1", "parentUuid": None, "isSidechain": True, "timestamp": "2026-01-05T09:00:06Z",
             "message": {"role": "user", "content": "Scan for secrets"}},
            {"type": "assistant", "sessionId": "S1", "uuid": "s2", "parentUuid": "s1", "isSidechain": True, "timestamp": "2026-01-05T09:00:07Z",
             "message": {"role": "assistant", "content": "No secrets found."}},
            {"type": "user", "sessionId": "S1", "uuid": "u2", "parentUuid": "a1", "timestamp": "2026-01-05T09:00:09Z",
             "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "task1", "content": "clean"}]}}]
    agent = [{"type": "user", "sessionId": "S1", "agentId": "b77", "uuid": "x1", "isSidechain": True, "timestamp": "2026-01-05T09:01:00Z",
              "message": {"role": "user", "content": "Check the licences"}},
             {"type": "assistant", "sessionId": "S1", "agentId": "b77", "uuid": "x2", "isSidechain": True, "timestamp": "2026-01-05T09:01:02Z",
              "message": {"role": "assistant", "content": "All MIT."}}]
    (tmp_path / "S1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in main))
    (tmp_path / "agent-b77.jsonl").write_text("".join(json.dumps(x) + "\n" for x in agent))
    report = import_files(memory_repo, [tmp_path])  # agent-b77 sorts first
    assert report.refused == [] and len(report.imported) == 3
    ts = transcripts(memory_repo, report.imported)
    assert [x.text for x in ts["S1"].turns if x.role == "user"] == ["Audit the repo"]
    assert tools(ts["S1"]) == [tf.ToolCall("Task", "scan", "clean")]
    assert ts["S1-sidechain-1"].meta.parent_session == "S1" and ts["S1-sidechain-1"].turns[1].text == "No secrets found."
    assert ts["agent-b77"].meta.parent_session == "S1" and ts["agent-b77"].turns[0].text == "Check the licences"


def test_claude_code_bookkeeping_is_not_conversation(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    def line(kind: str, uuid: str, content, **kw) -> dict:
        return {"type": kind, "sessionId": "bk", "uuid": uuid, "timestamp": "2026-02-01T12:00:00Z",
                "message": {"role": "user" if kind == "user" else "assistant", "content": content, **kw.pop("msg", {})}, **kw}

    rows = [
        {"type": "permission-mode", "permissionMode": "default", "sessionId": "bk"},
        line("user", "m0", "Caveat: The messages below were generated by the user while running local commands.", isMeta=True),
        line("user", "c1", "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"),
        line("user", "c2", "<local-command-stdout></local-command-stdout>"),
        line("user", "u1", "Summarise the open pull requests<system-reminder>todo list is empty</system-reminder>"),
        line("assistant", "a1", [{"type": "thinking", "thinking": "hidden"}], msg={"id": "msg_A", "model": "claude-opus-4-1",
                                                                                  "usage": {"input_tokens": 100, "output_tokens": 30}}),
        line("assistant", "a2", [{"type": "text", "text": "Checking."}], msg={"id": "msg_A", "model": "claude-opus-4-1",
                                                                             "usage": {"input_tokens": 100, "output_tokens": 30}}),
        line("assistant", "a3", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/shot.png"}}],
             msg={"id": "msg_A", "model": "claude-opus-4-1", "usage": {"input_tokens": 100, "output_tokens": 30}}),
        line("user", "r1", [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": "a 1x1 PNG"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]),
        line("user", "u1", "a rewound branch repeating u1"),
        line("user", "cs", "This session is being continued from a previous conversation. Summary: PRs reviewed.", isCompactSummary=True),
        line("user", "i1", "[Request interrupted by user for tool use]"),
        {"type": "attachment", "sessionId": "bk", "uuid": "at1", "attachment": {"type": "skill_listing"}},
        {"type": "pr-link", "sessionId": "bk", "prNumber": 7, "prUrl": "https://example.invalid/7"},
        {"type": "worktree-state", "sessionId": "bk", "worktreeSession": None},
        {"type": "ai-title", "sessionId": "bk", "aiTitle": "An AI title"},
        {"type": "custom-title", "sessionId": "bk", "customTitle": "Open PR summary"},
    ]
    p = tmp_path / "bk.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in rows))
    report = import_files(memory_repo, [p])
    assert report.refused == [] and report.bad_lines == 0  # 2.1 line types are known, not malformed
    t = transcripts(memory_repo, report.imported)["bk"]
    text = (memory_repo.root / report.imported[0]).read_text()
    assert t.meta.topic == "Open PR summary"  # custom-title over ai-title
    assert (t.meta.tokens_in, t.meta.tokens_out) == (100, 30)  # one API message, counted once
    assert [x.role for x in t.turns] == ["user", "agent", "system", "system"]
    assert t.turns[0].text == "Summarise the open pull requests"
    # the lines of one API message are one turn, and the result finds its call in it
    assert t.turns[1].items == (tf.Text("Checking."), tf.ToolCall("Read", "/w/shot.png", "a 1x1 PNG"),
                                tf.Attachment("image/png from a tool result (not stored)"))
    assert t.turns[2].text.startswith("This session is being continued")
    for gone in ("Caveat", "/clear", "local-command", "system-reminder", "hidden", "rewound branch"):
        assert gone not in text


def test_claude_code_shared_samples_import_without_malformed_known_lines(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(memory_repo, [shared_data / "harness-logs" / "claude-code"])
    assert report.refused == [] and report.bad_lines == 0
    ts = transcripts(memory_repo, report.imported)
    assert set(ts) == {"ses_stage0_drift", "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f", "agent-a0ad4f44468bdf20d",
                       "claude-normalization-main", "claude-normalization-other", "claude-normalization-main-sidechain-1"}
    main = ts["claude-normalization-main"]
    text = "\n".join(x.text for x in main.turns)
    assert "Conflicting duplicate" not in text and "environment_context" not in text and "command-name" not in text
    assert "Normalization complete." not in text  # the sidechain line went to its own transcript
    assert ts["claude-normalization-main-sidechain-1"].meta.parent_session == "claude-normalization-main"
    assert [c.result for c in tools(main)] == ["Command running in background with ID: task-bg.", None, "error: command failed"]
    assert tools(ts["ses_stage0_drift"]) == [tf.ToolCall("bash", "cat README.md", "# Title Body")]


# ── the session-id index ──
def test_the_session_index_is_rebuilt_when_missing_or_stale(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    from autopoiesis.capture.session import find_transcripts
    from autopoiesis.formats.transcript_files import SessionIndex

    s = {"session_id": "idx-1", "started": "2026-03-01T10:00:00Z", "messages": [{"role": "user", "content": "one"}]}
    f = tmp_path / "a.json"
    f.write_text(json.dumps(s))
    rel = import_files(memory_repo, [f]).imported[0]
    state = memory_repo.state_file("session_index")
    assert state.is_file()
    # a transcript written behind the index's back (another process, a git pull) is found
    other = memory_repo.root / "raw/conversations/2026/03/01/1100-idx-2-hand-made.md"
    other.write_text((memory_repo.root / rel).read_text().replace("idx-1", "idx-2"))
    assert find_transcripts(memory_repo, "idx-2") == [other]
    state.write_text("{not json")  # a broken cache is rebuilt, never trusted
    assert SessionIndex.load(memory_repo).transcripts("idx-1") == [memory_repo.root / rel]
    state.unlink()
    from autopoiesis.formats.transcript_files import session_parts

    assert session_parts(memory_repo, "idx") == []  # a name that could be its is not it: the frontmatter says
    assert import_files(memory_repo, [f]).skipped_duplicates == [rel]


def test_transcript_meta_round_trips_parts_and_parent() -> None:
    from autopoiesis.core.clock import parse_ts
    from autopoiesis.errors import TranscriptFormatError

    t0 = parse_ts("2026-03-01T10:00:00Z")
    meta = tf.TranscriptMeta("s-1", t0, parent_session="p-1", part=2, continues="raw/conversations/2026/02/28/0900-s-1-x.md")
    text = tf.render(tf.Transcript(meta, "T", (tf.Turn(t0, "user", (tf.Text("hi"),)),)))
    assert "parent_session: p-1\npart: 2\ncontinues: raw/conversations/2026/02/28/0900-s-1-x.md\n" in text
    assert tf.parse(text).meta == meta and tf.render(tf.parse(text)) == text
    plain = tf.render(tf.Transcript(tf.TranscriptMeta("s-1", t0), "T", ()))
    assert "part:" not in plain and "parent_session" not in plain and "continues" not in plain
    for bad in ("part: 2\n", "continues: x.md\n", "part: 0\n", "parent_session: ../x\n"):
        with pytest.raises(TranscriptFormatError):
            tf.parse(f"---\nsession_id: s\nstarted: 2026-03-01T10:00:00Z\n{bad}---\n\n# t\n")
    assert tf.continuation_relpath("raw/conversations/2026/02/28/0900-s-1-x.md", t0, 3) == \
        "raw/conversations/2026/03/01/1000-s-1-x+3.md"


# ── exit codes and advice ──
def test_cli_exits_non_zero_with_the_reason_for_a_file_without_a_session(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    empty_aider = tmp_path / ".aider.chat.history.md"
    empty_aider.write_text("\n# aider chat started at 2025-10-20 21:49:17\n\n> Aider v0.86.1  \n\n#### /add x.py  \n")
    notes = tmp_path / "notes.md"
    notes.write_text("# My notes\n\nNothing to see.\n")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TZ": "UTC"}
    for f, reason in ((empty_aider, "none with a message"), (notes, "text that is not JSON")):
        out = subprocess.run([sys.executable, "-m", "autopoiesis", "-C", str(memory_repo.root), "import", str(f)],
                             capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 1, out.stderr
        assert reason in out.stderr and "Traceback" not in out.stderr
        assert "--format claude-code" not in out.stderr
