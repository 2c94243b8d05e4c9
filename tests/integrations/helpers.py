"""Helpers shared by the importer tests (no tests here): the transcripts an import wrote,
their tool calls and roles, a JSONL log written from rows, a chat export of one
conversation imported."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf


def transcripts(repo: MemoryRepo, rels: list[str]) -> dict[str, tf.Transcript]:
    """session id -> the parsed transcript, for the transcripts at RELS (an import's `.imported`)."""
    return {
        t.meta.session_id: t
        for t in (tf.parse((repo.root / r).read_text(encoding="utf-8"), r) for r in rels)
    }


def tool_calls(t: tf.Transcript) -> list[tf.ToolCall]:
    return [i for turn in t.turns for i in turn.items if isinstance(i, tf.ToolCall)]


def roles(t: tf.Transcript) -> list[str]:
    return [turn.role for turn in t.turns]


def jsonl(path: Path, lines: list[object], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + tail, encoding="utf-8")
    return path


def imported_export(repo: MemoryRepo, folder: Path, conversations: list[object]) -> tf.Transcript:
    """The one transcript an import of CONVERSATIONS, written as a chat export's
    `conversations.json` in FOLDER, filed (nothing refused)."""
    export = folder / "conversations.json"
    export.write_text(json.dumps(conversations))
    report = import_files(repo, [export])
    assert report.refused == [] and len(report.imported) == 1
    (t,) = transcripts(repo, report.imported).values()
    return t
