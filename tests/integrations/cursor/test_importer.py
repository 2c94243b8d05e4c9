"""The Cursor importers: agent JSONL and the Markdown export."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import jsonl, roles, tool_calls, transcripts


def test_cursor_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    f = shared_data / "harness-logs" / "cursor" / "agent-sessions__small.jsonl"
    report = import_files(memory_repo, [f])
    assert report.refused == [] and report.bad_lines == 0
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (
        t.meta.session_id == "cursor-agent-sessions__small"
    )  # not a UUID: prefixed with the format
    assert roles(t) == ["user", "agent", "user", "agent"]
    assert tool_calls(t) == [tf.ToolCall("Bash", "ls", None)]
    minute = int(f.stat().st_mtime) // 60 * 60  # no times in the log: the file's minute
    assert t.meta.started.timestamp() == minute
    # ... and the import says so, once for the file
    dated = [w for w in report.warnings if "dated by the file's modification time" in w]
    assert len(dated) == 1 and dated[0].startswith(f"{f}: Cursor writes no times; 4 message")


def test_cursor_jsonl_blocks_and_hostile_lines(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    sid = "9f1c2d3e-1111-4222-8333-444455556666"
    os.utime(
        jsonl(
            tmp_path / f"{sid}.jsonl",
            [
                {
                    "role": "user",
                    "message": {
                        "content": [
                            {
                                "type": "text",
                                "text": "<user_info>OS: linux</user_info>\n<user_query>\nrun the tests\n</user_query>",
                            }
                        ]
                    },
                },
                {
                    "role": "assistant",
                    "model": "cursor-auto",
                    "message": {
                        "content": [
                            {"type": "thinking", "thinking": "PRIVATE PLAN"},
                            {"type": "text", "text": "Running them."},
                            {
                                "type": "tool_use",
                                "id": "t1",
                                "name": "Shell",
                                "input": {"command": "pytest -q"},
                            },
                            {
                                "type": "tool_use",
                                "id": "t2",
                                "name": "Read",
                                "input": {"path": "a.py"},
                            },
                        ]
                    },
                },
                {
                    "role": "user",
                    "message": {
                        "content": [
                            {"type": "tool_result", "tool_use_id": "t2", "content": "print(1)"},
                            {
                                "type": "tool_result",
                                "tool_use_id": "t1",
                                "content": [{"type": "text", "text": "3 passed"}],
                            },
                        ]
                    },
                },
                {"type": "turn_ended", "status": "success"},
                {"role": "assistant", "message": {"content": "All 3 pass."}},
                {
                    "role": "assistant",
                    "message": {"content": [{"type": "text", "text": "late"}]},
                    "timestamp": "1e30",
                },
                ["not", "an", "object"],
            ],
            tail='{"role": "user", "message": {"cont',
        ),
        (1_760_000_000, 1_760_000_000),
    )
    report = import_files(memory_repo, [tmp_path / f"{sid}.jsonl"])
    assert report.refused == []
    (t,) = transcripts(memory_repo, report.imported).values()
    assert t.meta.session_id == sid and t.meta.model == "cursor-auto"
    assert t.meta.started.isoformat() == "2025-10-09T08:53:00+00:00"
    assert roles(t) == ["user", "agent", "agent", "agent"]
    assert t.turns[0].text == "run the tests"
    # the message of an absurd time is kept, dated as the line before it
    assert t.turns[-1].text == "late" and t.turns[-1].time == t.turns[-2].time
    assert tool_calls(t) == [
        tf.ToolCall("Shell", "pytest -q", "3 passed"),
        tf.ToolCall("Read", "a.py", "print(1)"),
    ]
    assert "PRIVATE PLAN" not in (memory_repo.root / report.imported[0]).read_text()
    assert report.bad_lines == 2  # the JSON array, the cut-off line


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
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (t.meta.topic, t.meta.channel) == ("Fix the login form", "cursor")
    assert t.meta.started.isoformat() == "2025-12-29T18:57:23+00:00"  # GMT-3 read as UTC
    assert roles(t) == ["user", "agent", "user"]
    assert (
        "const EMAIL" in t.turns[1].text and "---" in t.turns[1].text
    )  # a rule inside a message stays in it
    assert t.turns[2].text == "thanks"
    again = tmp_path / "export-again.md"
    again.write_text(
        CURSOR_EXPORT.replace("12/29/2025 at 15:57:23 GMT-3", "12/30/2025 at 09:00:00 PST")
    )
    assert (
        import_files(memory_repo, [again]).skipped_duplicates == report.imported
    )  # the same chat, the same id


@pytest.mark.parametrize(
    ("line", "iso"),
    [
        ("4/11/2026 at 10:29:42 PDT", "2026-04-11T17:29:42+00:00"),
        ("2025. 7. 6. at 18시 15분 42초 GMT+9", "2025-07-06T09:15:42+00:00"),
        ("2025/12/16 at GMT+8 16:06:09", "2025-12-16T08:06:09+00:00"),
        ("8/13/2026 at 11:26:03 GMT+5:30", "2026-08-13T05:56:03+00:00"),
    ],
)
def test_cursor_export_times_in_any_locale(line: str, iso: str) -> None:
    from autopoiesis.integrations.cursor.importer import export_time

    assert export_time(line).isoformat() == iso
