"""Search ranks a file still as the template ships it (an identity file nobody filled in, a
starter topic) below what the memory learned: its chunks count SHIPPED_FACTOR of their
score, so its generic words do not push a session that answers out of the results, yet it
is still found when nothing else fits, and counts in full once someone writes into it.
Real memory repos (init's template), real commits, a real SQLite index."""

from __future__ import annotations

import pytest

from autopoiesis.core.paths import IDENTITY_DIR, MemoryRepo, shipped_files, template_dir
from autopoiesis.index import SearchIndex
from autopoiesis.index import query as index_query
from autopoiesis.index.files import hash_bytes, shipped_hashes
from autopoiesis.index.query import SHIPPED_FACTOR
from autopoiesis.testing.samples import write_closed_transcript

SOUL = f"{IDENTITY_DIR}/SOUL.md"
# The shipped SOUL.md's words, said in a session once among others
QUERY = "where did I learn what I know and write down the lessons"


def _session(repo: MemoryRepo) -> str:
    """A conversation between two named people (no user-turn factor) with a few of the
    query's words."""
    turns = [
        ("2026-04-02T09:00:00Z", "user", "Ann", "How did the billing incident review go?"),
        (
            "2026-04-02T09:01:00Z",
            "agent",
            "Bob",
            "The lessons of the billing outage, learned in the incident review: retries "
            "without jitter overloaded the database, and the fix was exponential backoff "
            "with jitter in the billing client.",
        ),
    ]
    return write_closed_transcript(repo.root, "ses_outage", "Outage review", "outage-review", turns)


def _search(repo: MemoryRepo, query: str) -> list:
    with SearchIndex(repo) as index:
        index.catch_up()
        return index.search(query, limit=10, explain=True, fresh=False)


def test_the_shipped_files_are_what_init_copies(memory_repo: MemoryRepo) -> None:
    shipped = shipped_files()
    assert SOUL in shipped and "knowledge/memory/MEMORY.md" in shipped
    assert any(rel.startswith("topics/") for rel in shipped)
    assert shipped[SOUL] == (template_dir("knowledge") / "identity" / "SOUL.md").read_bytes()
    # a new memory has each of them byte for byte, so its files match the hashes
    for rel, data in shipped.items():
        assert (memory_repo.root / rel).read_bytes() == data, rel
    assert hash_bytes((memory_repo.root / SOUL).read_bytes()) == shipped_hashes()[SOUL]


def test_a_session_that_answers_ranks_above_the_shipped_identity(
    memory_repo: MemoryRepo, commit_all, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _session(memory_repo)
    commit_all(memory_repo, "an outage review")
    results = _search(memory_repo, QUERY)
    paths = [r.path for r in results]
    assert session in paths and SOUL in paths
    assert paths.index(session) < paths.index(SOUL)
    soul = results[paths.index(SOUL)]
    assert soul.explain["shipped_factor"] == SHIPPED_FACTOR
    assert results[paths.index(session)].explain["shipped_factor"] is None

    # the same search counting the shipped file in full puts it first: the factor is what
    # keeps it out of the way
    monkeypatch.setattr(index_query, "SHIPPED_FACTOR", 1.0)
    unscaled = [r.path for r in _search(memory_repo, QUERY)]
    assert unscaled.index(SOUL) < unscaled.index(session)


def test_the_shipped_file_is_found_when_nothing_else_fits(memory_repo: MemoryRepo) -> None:
    results = _search(memory_repo, "curated under knowledge, git remembers every change")
    assert results and results[0].path == SOUL
    assert results[0].explain["shipped_factor"] == SHIPPED_FACTOR


def test_a_file_someone_wrote_into_counts_in_full(memory_repo: MemoryRepo, commit_all) -> None:
    session = _session(memory_repo)
    soul = memory_repo.root / SOUL
    soul.write_text(
        soul.read_text(encoding="utf-8") + "- I write down where I learned each lesson.\n",
        encoding="utf-8",
    )
    commit_all(memory_repo, "an outage review and a line of my own")
    results = _search(memory_repo, QUERY)
    paths = [r.path for r in results]
    assert results[paths.index(SOUL)].explain["shipped_factor"] is None
    assert paths.index(SOUL) < paths.index(session)


def test_search_explain_names_the_factor(memory_repo: MemoryRepo, commit_all, cli) -> None:
    _session(memory_repo)
    commit_all(memory_repo, "an outage review")
    cli("index", "rebuild", repo=memory_repo, check=True)
    r = cli("search", QUERY, "--explain", "--limit", "5", repo=memory_repo, check=True)
    blocks = r.stdout.split("\n0.")
    soul = next(b for b in blocks if f"{SOUL}:" in b)
    session = next(b for b in blocks if "ses_outage" in b)
    assert f"factors: shipped={SHIPPED_FACTOR}" in soul
    assert "factors:" not in session
