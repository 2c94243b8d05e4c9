"""The same text pasted into many sessions (a harness's rules, a file read again) is one
search result, so the other results are not crowded out: a real index over real
transcripts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from autopoiesis.index import SearchIndex
from autopoiesis.index.chunking import chunk_file
from autopoiesis.testing.samples import closed_transcript

RULES = (
    "Rules: when asked to create a task, write the task specification document and stop; "
    "implement a task only when asked to implement it."
)


def _write(repo: MemoryRepo, n: int, lines: list[str]) -> str:
    started = datetime(2026, 3, 1, 9, tzinfo=UTC) + timedelta(days=n)
    turns = [
        (
            (started + timedelta(minutes=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "user" if k % 2 == 0 else "agent",
            None,
            text,
        )
        for k, text in enumerate(lines)
    ]
    rel = tf.transcript_relpath(f"ses_p{n}", started, f"session-{n}")
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        closed_transcript(f"ses_p{n}", f"Session {n}", turns, started=turns[0][0]),
        encoding="utf-8",
    )
    return rel


def test_a_pasted_turn_is_one_result(memory_repo: MemoryRepo, commit_all) -> None:
    pasted = [_write(memory_repo, n, [RULES, "Understood."]) for n in range(6)]
    answer = _write(
        memory_repo,
        9,
        ["I only wanted you to create the task, not implement it yet.", "Sorry, stopping."],
    )
    commit_all(memory_repo, "conversation: sessions")
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
        results = index.search("asked to create a task, not implement it", 4)
    paths = [r.path for r in results]
    assert sum(p in pasted for p in paths) == 1  # the rules once, not six times
    assert answer in paths


def test_the_body_hash_ignores_who_said_it_when() -> None:
    a = _chunks("2026-03-01T09:00:00Z", "user")
    b = _chunks("2026-04-02T17:30:00Z", "agent")
    assert a.body_hash == b.body_hash and a.content_hash != b.content_hash
    assert a.body_hash != _chunks("2026-03-01T09:00:00Z", "user", RULES + " Always.").body_hash


def _chunks(when: str, role: str, text: str = RULES):
    doc = closed_transcript("ses_x", "X", [(when, role, None, text)], started=when)
    return chunk_file("raw/conversations/x.md", doc, "conversation").chunks[0]
