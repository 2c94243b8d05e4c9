"""Sample memory content for tests and benchmarks, written by the formats' own renderers
(never as hand-copied literals, which drift from the format)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from autopoiesis.core.clock import parse_ts
from autopoiesis.formats import transcript as tf

# (time, role, speaker name or None, text)
TurnSpec = tuple[str, str, str | None, str]

DATABASE_CHOICE: tuple[TurnSpec, ...] = (
    (
        "2026-03-01T23:58:00Z",
        "user",
        "Alice",
        "Should we keep the embeddings in PostgreSQL or in SQLite?",
    ),
    (
        "2026-03-01T23:59:00Z",
        "agent",
        None,
        "SQLite with the sqlite-vec extension: one file, no server.",
    ),
)


def closed_transcript(
    session_id: str,
    title: str,
    turns: Sequence[TurnSpec] = DATABASE_CHOICE,
    *,
    started: str = "2026-03-01T23:58:00Z",
    ended: str = "2026-03-02T00:03:00Z",
) -> str:
    """The text of a closed transcript holding TURNS, as capture would have written it
    (without redaction: a test may need a secret on disk)."""
    meta = tf.TranscriptMeta(
        session_id=session_id, started=parse_ts(started), ended=parse_ts(ended), status="closed"
    )
    rendered = tuple(
        tf.Turn(time=parse_ts(when), role=role, items=(tf.Text(text),), name=name)
        for when, role, name, text in turns
    )
    return tf.render(tf.Transcript(meta=meta, title=title, turns=rendered))


def write_closed_transcript(
    root: Path,
    session_id: str,
    title: str,
    slug: str,
    turns: Sequence[TurnSpec],
    *,
    filed_at: datetime | None = None,
) -> str:
    """Write closed_transcript(SESSION_ID, TITLE, TURNS) where capture would file it under
    ROOT (a memory repo's folder: by FILED_AT, else its first turn's time) and return its
    path in the repo. It runs from its first turn to its last."""
    started, ended = turns[0][0], turns[-1][0]
    rel = tf.transcript_relpath(session_id, filed_at or parse_ts(started), slug)
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        closed_transcript(session_id, title, turns, started=started, ended=ended),
        encoding="utf-8",
    )
    return rel
