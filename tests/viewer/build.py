"""The memory the viewer's tests look at: three sessions over two weeks, two projects'
worth of harnesses, a decision that changes (so an entry is superseded), and a session
whose words are hostile HTML (a `<script>`, an `onerror`), captured and extracted through
the real paths."""

from __future__ import annotations

import json
from typing import Any

from autopoiesis.memory import Memory

XSS_SCRIPT = "<script>window.__xss = 1</script>"
XSS_IMG = '<img src=x onerror="window.__xss = 2">'


def _session(
    sid: str, started: str, channel: str, turns: list[dict[str, Any]], **meta: str
) -> list[bytes]:
    events: list[dict[str, Any]] = [
        {
            "event": "session_start",
            "session_id": sid,
            "started": started,
            "channel": channel,
            **meta,
        }
    ]
    events += [{"session_id": sid, **t} for t in turns]
    events.append({"event": "session_end", "session_id": sid, "ended": started[:14] + "30:00Z"})
    return [json.dumps(e).encode() for e in events]


SESSIONS = [
    _session(
        "ses_pool1",
        "2026-03-02T09:00:00Z",
        "claude-code",
        [
            {
                "event": "message",
                "role": "user",
                "timestamp": "2026-03-02T09:00:00Z",
                "content": "For the billing-service project we'll put PgBouncer in front of Postgres, in transaction mode.",
            },
            {
                "event": "tool_call",
                "tool": "exec",
                "args": "psql -c 'show pools'",
                "result": "3 pools",
                "timestamp": "2026-03-02T09:01:00Z",
            },
            {
                "event": "tool_call",
                "tool": "read",
                "args": "pgbouncer.ini",
                "result": "42 lines",
                "timestamp": "2026-03-02T09:01:00Z",
            },
            {
                "event": "message",
                "role": "agent",
                "timestamp": "2026-03-02T09:02:00Z",
                "content": "Noted: PgBouncer in transaction mode for billing-service.",
            },
        ],
        project="billing-service",
    ),
    _session(
        "ses_pool2",
        "2026-03-09T10:00:00Z",
        "codex",
        [
            {
                "event": "message",
                "role": "user",
                "timestamp": "2026-03-09T10:00:00Z",
                "content": "For the billing-service project we decided to drop PgBouncer and use HikariCP instead.",
            },
            {
                "event": "message",
                "role": "agent",
                "timestamp": "2026-03-09T10:01:00Z",
                "content": "Understood, HikariCP does the pooling from now on.",
            },
        ],
        project="billing-service",
    ),
    _session(
        "ses_html1",
        "2026-03-10T11:00:00Z",
        "webchat",
        [
            {
                "event": "message",
                "role": "user",
                "timestamp": "2026-03-10T11:00:00Z",
                "content": f"Why does this page break? {XSS_SCRIPT} and {XSS_IMG} and [a link](javascript:alert(1))",
            },
            {
                "event": "message",
                "role": "agent",
                "timestamp": "2026-03-10T11:01:00Z",
                "content": "The page runs the script tag from the template: escape it.",
            },
        ],
    ),
]


def build(repo: Any) -> None:
    """Capture SESSIONS into REPO (each extracted and committed as it closes), and build
    its search index."""
    memory = Memory(repo)
    for lines in SESSIONS:
        report = memory.capture_stream(lines)
        assert not report.refused, report.refused
    memory.extract(pending=True)
    from autopoiesis.index import SearchIndex

    with SearchIndex(memory.repo) as index:
        index.rebuild_full()
