"""Sample memory content for tests and benchmarks, written by the formats' own renderers
(never as hand-copied literals, which drift from the format)."""

from __future__ import annotations

from collections.abc import Sequence

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
