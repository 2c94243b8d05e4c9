"""The Claude Code importer beyond the main log: subagents, bookkeeping lines, background tasks."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import tool_calls, transcripts


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # aider writes local time
    time.tzset()


def test_claude_code_subagent_files_in_either_order(
    memory_repo: MemoryRepo, shared_data: Path, tmp_path: Path
) -> None:
    """The real layout: <session>.jsonl beside <session>/subagents/agent-<id>.jsonl."""
    logs = shared_data / "harness-logs" / "claude-code"
    sid = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
    project = tmp_path / "project"
    (project / sid / "subagents").mkdir(parents=True)
    shutil.copy(logs / "agent-sessions__subagent_parent.jsonl", project / f"{sid}.jsonl")
    shutil.copy(
        logs / "agent-sessions__subagents_agent-a0ad4f44468bdf20d.jsonl",
        project / sid / "subagents" / "agent-a0ad4f44468bdf20d.jsonl",
    )
    agent_first = import_files(
        memory_repo,
        [project / sid / "subagents" / "agent-a0ad4f44468bdf20d.jsonl", project / f"{sid}.jsonl"],
    )
    assert agent_first.refused == [] and len(agent_first.imported) == 2
    ts = transcripts(memory_repo, agent_first.imported)
    assert ts["agent-a0ad4f44468bdf20d"].meta.parent_session == sid
    assert ts[sid].meta.parent_session is None
    assert tool_calls(ts["agent-a0ad4f44468bdf20d"]) == [
        tf.ToolCall("bash", "grep -rn TODO", "a.txt:1: TODO fix")
    ]
    folder = import_files(
        memory_repo, [project]
    )  # the folder, parent first: the same two, nothing new
    assert folder.imported == [] and sorted(folder.skipped_duplicates) == sorted(
        agent_first.imported
    )


def test_claude_code_agent_file_with_the_parents_session_id(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Older Claude Code: agent-<id>.jsonl beside the session, its lines carrying the parent's sessionId."""
    main = [
        {
            "type": "user",
            "sessionId": "S1",
            "uuid": "u1",
            "timestamp": "2026-01-05T09:00:00Z",
            "message": {"role": "user", "content": "Audit the repo"},
        },
        {
            "type": "assistant",
            "sessionId": "S1",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-01-05T09:00:05Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "task1",
                        "name": "Task",
                        "input": {"description": "scan"},
                    }
                ],
            },
        },
        # a sidechain written into the main file (no agentId): its own transcript
        {
            "type": "user",
            "sessionId": "S1",
            "uuid": "s1",
            "parentUuid": None,
            "isSidechain": True,
            "timestamp": "2026-01-05T09:00:06Z",
            "message": {"role": "user", "content": "Scan for secrets"},
        },
        {
            "type": "assistant",
            "sessionId": "S1",
            "uuid": "s2",
            "parentUuid": "s1",
            "isSidechain": True,
            "timestamp": "2026-01-05T09:00:07Z",
            "message": {"role": "assistant", "content": "No secrets found."},
        },
        {
            "type": "user",
            "sessionId": "S1",
            "uuid": "u2",
            "parentUuid": "a1",
            "timestamp": "2026-01-05T09:00:09Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "task1", "content": "clean"}],
            },
        },
    ]
    agent = [
        {
            "type": "user",
            "sessionId": "S1",
            "agentId": "b77",
            "uuid": "x1",
            "isSidechain": True,
            "timestamp": "2026-01-05T09:01:00Z",
            "message": {"role": "user", "content": "Check the licences"},
        },
        {
            "type": "assistant",
            "sessionId": "S1",
            "agentId": "b77",
            "uuid": "x2",
            "isSidechain": True,
            "timestamp": "2026-01-05T09:01:02Z",
            "message": {"role": "assistant", "content": "All MIT."},
        },
    ]
    (tmp_path / "S1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in main))
    (tmp_path / "agent-b77.jsonl").write_text("".join(json.dumps(x) + "\n" for x in agent))
    report = import_files(memory_repo, [tmp_path])  # agent-b77 sorts first
    assert report.refused == [] and len(report.imported) == 3
    ts = transcripts(memory_repo, report.imported)
    assert [x.text for x in ts["S1"].turns if x.role == "user"] == ["Audit the repo"]
    assert tool_calls(ts["S1"]) == [tf.ToolCall("Task", "scan", "clean")]
    assert (
        ts["S1-sidechain-1"].meta.parent_session == "S1"
        and ts["S1-sidechain-1"].turns[1].text == "No secrets found."
    )
    assert (
        ts["agent-b77"].meta.parent_session == "S1"
        and ts["agent-b77"].turns[0].text == "Check the licences"
    )


def test_claude_code_bookkeeping_is_not_conversation(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    def line(kind: str, uuid: str, content, **kw) -> dict:
        return {
            "type": kind,
            "sessionId": "bk",
            "uuid": uuid,
            "timestamp": "2026-02-01T12:00:00Z",
            "message": {
                "role": "user" if kind == "user" else "assistant",
                "content": content,
                **kw.pop("msg", {}),
            },
            **kw,
        }

    rows = [
        {"type": "permission-mode", "permissionMode": "default", "sessionId": "bk"},
        line(
            "user",
            "m0",
            "Caveat: The messages below were generated by the user while running local commands.",
            isMeta=True,
        ),
        line(
            "user",
            "c1",
            "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
        ),
        line("user", "c2", "<local-command-stdout></local-command-stdout>"),
        line(
            "user",
            "u1",
            "Summarise the open pull requests<system-reminder>todo list is empty</system-reminder>",
        ),
        line(
            "assistant",
            "a1",
            [{"type": "thinking", "thinking": "hidden"}],
            msg={
                "id": "msg_A",
                "model": "claude-opus-4-1",
                "usage": {"input_tokens": 100, "output_tokens": 30},
            },
        ),
        line(
            "assistant",
            "a2",
            [{"type": "text", "text": "Checking."}],
            msg={
                "id": "msg_A",
                "model": "claude-opus-4-1",
                "usage": {"input_tokens": 100, "output_tokens": 30},
            },
        ),
        line(
            "assistant",
            "a3",
            [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Read",
                    "input": {"file_path": "/w/shot.png"},
                }
            ],
            msg={
                "id": "msg_A",
                "model": "claude-opus-4-1",
                "usage": {"input_tokens": 100, "output_tokens": 30},
            },
        ),
        line(
            "user",
            "r1",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "text", "text": "a 1x1 PNG"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": "iVBORw0KGgo=",
                            },
                        },
                    ],
                }
            ],
        ),
        line("user", "u1", "a rewound branch repeating u1"),
        line(
            "user",
            "cs",
            "This session is being continued from a previous conversation. Summary: PRs reviewed.",
            isCompactSummary=True,
        ),
        line("user", "i1", "[Request interrupted by user for tool use]"),
        {
            "type": "attachment",
            "sessionId": "bk",
            "uuid": "at1",
            "attachment": {"type": "skill_listing"},
        },
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
    assert t.turns[1].items == (
        tf.Text("Checking."),
        tf.ToolCall("Read", "/w/shot.png", "a 1x1 PNG"),
        tf.Attachment("image/png from a tool result (not stored)"),
    )
    assert t.turns[2].text.startswith("This session is being continued")
    for gone in (
        "Caveat",
        "/clear",
        "local-command",
        "system-reminder",
        "hidden",
        "rewound branch",
    ):
        assert gone not in text


def test_claude_code_shared_samples_import_without_malformed_known_lines(
    memory_repo: MemoryRepo, shared_data: Path
) -> None:
    report = import_files(memory_repo, [shared_data / "harness-logs" / "claude-code"])
    assert report.refused == [] and report.bad_lines == 0
    ts = transcripts(memory_repo, report.imported)
    assert set(ts) == {
        "ses_stage0_drift",
        "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f",
        "agent-a0ad4f44468bdf20d",
        "claude-normalization-main",
        "claude-normalization-other",
        "claude-normalization-main-sidechain-1",
    }
    main = ts["claude-normalization-main"]
    text = "\n".join(x.text for x in main.turns)
    assert (
        "Conflicting duplicate" not in text
        and "environment_context" not in text
        and "command-name" not in text
    )
    assert "Normalization complete." not in text  # the sidechain line went to its own transcript
    assert (
        ts["claude-normalization-main-sidechain-1"].meta.parent_session
        == "claude-normalization-main"
    )
    assert [c.result for c in tool_calls(main)] == [
        "Command running in background with ID: task-bg.",
        None,
        "error: command failed",
    ]
    assert tool_calls(ts["ses_stage0_drift"]) == [
        tf.ToolCall("bash", "cat README.md", "# Title Body")
    ]


# Claude Code 2.0.26's pre-warm request, as it writes it (two sidechain lines, Haiku).
WARMUP = [
    {
        "parentUuid": None,
        "isSidechain": True,
        "userType": "external",
        "cwd": "/home/me/sage",
        "sessionId": "0145b08f-fd45-4207-a8eb-2cbd01daca30",
        "version": "2.0.26",
        "type": "user",
        "message": {"role": "user", "content": "Warmup"},
        "uuid": "1678846a-0e71-4776-b07b-526b874a12d9",
        "timestamp": "2025-10-28T18:06:11.015Z",
    },
    {
        "parentUuid": "1678846a-0e71-4776-b07b-526b874a12d9",
        "isSidechain": True,
        "sessionId": "0145b08f-fd45-4207-a8eb-2cbd01daca30",
        "version": "2.0.26",
        "message": {
            "model": "claude-haiku-4-5-20251001",
            "id": "msg_016KnwwJYPybk4ownPxuL3Ly",
            "role": "assistant",
            "content": [{"type": "text", "text": "I'm Claude Code's file search specialist..."}],
        },
        "type": "assistant",
        "uuid": "5a068ce6-7e86-4ba4-9c20-97748546e257",
        "timestamp": "2025-10-28T18:06:13.231Z",
    },
]


def test_a_warmup_sidechain_is_passed_over_not_filed(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    project = tmp_path / "-home-me-sage"
    project.mkdir()
    warm = project / "agent-6cce90d0.jsonl"
    warm.write_text("".join(json.dumps(x) + "\n" for x in WARMUP))
    main = project / "0145b08f-fd45-4207-a8eb-2cbd01daca30.jsonl"
    main.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "0145b08f-fd45-4207-a8eb-2cbd01daca30",
                "uuid": "m1",
                "timestamp": "2025-10-28T18:07:00Z",
                "message": {"role": "user", "content": "Get context on this repo"},
            }
        )
        + "\n"
    )
    report = import_files(memory_repo, [project])
    assert report.refused == [] and len(report.imported) == 1  # the session, not the warmup
    assert report.passed_over == [str(warm)]
    assert any("pre-warm" in w for w in report.warnings)
    # a real sidechain that merely mentions the word is kept
    real = [dict(WARMUP[0], message={"role": "user", "content": "Warmup the cache, then grep"})]
    (project / "agent-77aa.jsonl").write_text(json.dumps(real[0]) + "\n")
    again = import_files(memory_repo, [project / "agent-77aa.jsonl"])
    assert len(again.imported) == 1 and again.passed_over == []


def test_a_prompt_suggestion_sidechain_is_left_out_beside_the_session(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Claude Code asks a subagent to guess the user's next message (its prompt
    `[SUGGESTION MODE: ...]`): that run is no conversation, and is left out with a warning
    when it shares a file with the session."""
    sid = "0145b08f-fd45-4207-a8eb-2cbd01daca30"
    rows = [
        {
            "type": "user",
            "sessionId": sid,
            "uuid": "m1",
            "timestamp": "2025-10-28T18:07:00Z",
            "message": {"role": "user", "content": "Get context on this repo"},
        },
        dict(
            WARMUP[0],
            uuid="s1",
            message={"role": "user", "content": "[SUGGESTION MODE: Suggest what the user types]"},
        ),
        dict(
            WARMUP[1],
            parentUuid="s1",
            uuid="s2",
            message=dict(WARMUP[1]["message"], content=[{"type": "text", "text": "run tests"}]),
        ),
    ]
    log = tmp_path / "-home-me-sage" / f"{sid}.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps(x) + "\n" for x in rows))
    report = import_files(memory_repo, [log])
    assert report.refused == [] and len(report.imported) == 1
    assert any("1 run left out (Claude Code asking a subagent" in w for w in report.warnings)
    [t] = transcripts(memory_repo, report.imported).values()
    assert t.meta.session_id.endswith(sid) and "SUGGESTION" not in str(t.turns)


def test_a_summary_of_another_session_is_not_the_title_and_the_old_caveat_is_dropped(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    rows = [
        # summaries Claude Code copied from the sessions this one resumed
        {"type": "summary", "summary": "Fix flaky CI on Windows", "leafUuid": "elsewhere-1"},
        {"type": "summary", "summary": "Billing export", "leafUuid": "elsewhere-2"},
        {
            "type": "user",
            "sessionId": "S9",
            "uuid": "c0",
            "userType": "human",
            "version": "1.0.0",
            "timestamp": "2025-06-14T11:02:00Z",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "Caveat: The messages below were generated by the user while "
                        "running local commands. DO NOT respond to these messages or otherwise "
                        "consider them in your response unless the user explicitly asks you to.",
                    }
                ],
            },
        },
        {
            "type": "user",
            "sessionId": "S9",
            "uuid": "u1",
            "timestamp": "2025-06-14T11:03:00Z",
            "message": {"role": "user", "content": "Rename the export job"},
        },
        {
            "type": "assistant",
            "sessionId": "S9",
            "uuid": "a1",
            "timestamp": "2025-06-14T11:03:09Z",
            "message": {"role": "assistant", "content": "Renamed."},
        },
    ]
    log = tmp_path / "S9.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in rows))
    report = import_files(memory_repo, [log])
    t = transcripts(memory_repo, report.imported)["S9"]
    assert t.meta.topic is None and "Rename" in t.title
    assert [x.text for x in t.turns if x.role == "user"] == ["Rename the export job"]
    # a summary whose leaf is in the file is its title
    rows.append({"type": "summary", "summary": "Export job renamed", "leafUuid": "a1"})
    log.write_text("".join(json.dumps(x) + "\n" for x in rows))
    other = tmp_path / "other"
    other.mkdir()
    copy = other / "S10.jsonl"
    # answered otherwise: the same lines under another id are a resumed session's copy,
    # filed once (test_resume.py)
    copy.write_text(log.read_text().replace('"S9"', '"S10"').replace("Renamed.", "Done."))
    t10 = transcripts(memory_repo, import_files(memory_repo, [copy]).imported)["S10"]
    assert t10.meta.topic == "Export job renamed"


def test_the_words_typed_after_a_slash_command_are_the_users_turn(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Claude Code records `/review check login.py` as the command's name and its
    arguments, then the prompt it expands to (isMeta). The whole record was dropped as
    bookkeeping, and with it the only words the user typed: the session had no user turn.
    Now the command and its words are the user's turn; a command run with no words after
    it (`/clear`) is still bookkeeping, and so is its expansion. The index reads the same
    of a Markdown export that keeps the record's tags in the user's text."""
    from autopoiesis.index.chunking import chunk_file

    def line(uuid: str, content: str, **kw: object) -> dict:
        return {
            "type": "user",
            "sessionId": "slash",
            "uuid": uuid,
            "timestamp": "2026-02-01T10:00:00Z",
            "message": {"role": "user", "content": content},
            **kw,
        }

    record = (
        "<command-message>review</command-message>\n<command-name>/review</command-name>\n"
        "<command-args>check the auth module for SQL injection</command-args>"
    )
    rows = [
        line("c0", "<command-name>/clear</command-name>\n<command-args></command-args>"),
        line("u1", record),
        line("u2", "Review the code the user names. ARGUMENTS: check the auth", isMeta=True),
        {
            "type": "assistant",
            "sessionId": "slash",
            "uuid": "a1",
            "timestamp": "2026-02-01T10:00:05Z",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "text", "text": "Reviewing login.py."}],
            },
        },
    ]
    p = tmp_path / "slash.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in rows))
    report = import_files(memory_repo, [p])
    turns = transcripts(memory_repo, report.imported)["slash"].turns
    assert [(t.role, t.text) for t in turns] == [
        ("user", "/review check the auth module for SQL injection"),
        ("agent", "Reviewing login.py."),
    ]

    exported = (
        "---\nsession_id: ses_exp\nstarted: 2026-02-01T10:00:00Z\nstatus: closed\n---\n\n"
        "# Export\n\n## 10:00 — user\n" + record + "\n\n## 10:01 — agent\nReviewing login.py.\n"
    )
    read = "\n".join(c.text for c in chunk_file("raw/x.md", exported).chunks)
    assert "/review" in read and "check the auth module for SQL injection" in read
    assert "command-" not in read and "\nreview\n" not in read


def test_a_slash_command_s_long_or_many_lined_words_are_kept_as_typed(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """The words after a slash command were read with a pattern bounded at 4,000
    characters, so longer ones dropped the whole turn as bookkeeping, and their lines
    were joined into one (a code block flattened). They are kept whole, as typed."""
    long_words = "check every handler " * 300  # 6,000 characters
    block = "fix this:\n```py\ndef f():\n    return 1\n```"
    rows = []
    for n, words in enumerate((long_words, block)):
        rows.append(
            {
                "type": "user",
                "sessionId": "slash2",
                "uuid": f"u{n}",
                "timestamp": f"2026-02-01T10:0{n}:00Z",
                "message": {
                    "role": "user",
                    "content": "<command-name>/review</command-name>\n"
                    f"<command-args>{words}</command-args>",
                },
            }
        )
    p = tmp_path / "slash2.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in rows))
    report = import_files(memory_repo, [p])
    said = [t.text for t in transcripts(memory_repo, report.imported)["slash2"].turns]
    assert said[0] == "/review " + long_words.strip()
    assert said[1] == "/review " + block
