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


def claude_code_exchange(
    session: str,
    n: int,
    question: str,
    answer: str,
    *,
    asked: str,
    answered: str,
    model: str = "claude-sonnet-4",
    usage: tuple[int, int] = (100, 10),
    chained: bool = False,
    **fields: object,
) -> list[dict[str, object]]:
    """The two lines of a Claude Code log (its ~/.claude/projects JSONL) for exchange N of
    SESSION: the user's QUESTION at ASKED (`u{N}`), then the assistant's ANSWER at ANSWERED
    (`a{N}`, its message `msg_{N}` with the tokens of USAGE). CHAINED: each line names the
    one before by `parentUuid` (the exchanges numbered from 0). FIELDS are added to both
    lines (`cwd`, `version`, ...)."""
    user: dict[str, object] = {**fields, "type": "user", "sessionId": session, "uuid": f"u{n}"}
    agent: dict[str, object] = {**fields, "type": "assistant", "sessionId": session}
    agent["uuid"] = f"a{n}"
    if chained:
        user["parentUuid"] = f"a{n - 1}" if n else None
        agent["parentUuid"] = f"u{n}"
    user |= {"timestamp": asked, "message": {"role": "user", "content": question}}
    agent |= {
        "timestamp": answered,
        "message": {
            "id": f"msg_{n}",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": answer}],
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        },
    }
    return [user, agent]
