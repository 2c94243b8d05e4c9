"""Helpers shared by the knowledge tests (no tests here): sessions in the neutral import format, LLM config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.testing.openai_server import write_llm_config


def session(sid: str, started: str, *messages: tuple[str, str], **meta: Any) -> dict[str, Any]:
    """A neutral-format session; messages are (role, content), one minute apart."""
    from datetime import datetime, timedelta

    t0 = datetime.fromisoformat(started.replace("Z", "+00:00"))
    msgs = [
        {
            "role": r,
            "content": c,
            "timestamp": (t0 + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for i, (r, c) in enumerate(messages)
    ]
    return {"session_id": sid, "started": started, "messages": msgs, **meta}


def import_sessions(repo: MemoryRepo, tmp: Path, sessions: list[dict[str, Any]]) -> list[str]:
    from autopoiesis.capture.importers import import_files

    f = tmp / f"sessions-{sessions[0]['session_id']}.json"
    f.write_text(json.dumps(sessions), encoding="utf-8")
    report = import_files(repo, [f], "neutral")
    assert not report.refused, report.refused
    return report.imported


def use_llm(repo: MemoryRepo, base_url: str, **extra: Any) -> MemoryRepo:
    """The repo configured for the OpenAI provider at BASE_URL (fast failures for tests)."""
    write_llm_config(repo.root, base_url, **{"max_retries": 0, "timeout_seconds": 5, **extra})
    return MemoryRepo(repo.root)  # config is cached per instance


DEMO = [
    session(
        "ses_a",
        "2026-02-16T18:45:00Z",
        (
            "user",
            "Let's decide how memory is stored. Read knowledge/projects/autopoiesis/context.md first.",
        ),
        ("agent", "Two options: SQLite or Markdown files in git."),
        (
            "user",
            "We decided: files are the source of truth, SQLite is only a cache. Lesson learned: always keep the raw transcripts.",
        ),
    ),
    session(
        "ses_b",
        "2026-02-16T21:10:00Z",
        (
            "user",
            "Maria Lopez owns the capture module. Procedure for releases: run the tests, tag the version, then push the tag.",
        ),
        ("agent", "Noted. FYI the staging server runs on port 8443."),
    ),
]
