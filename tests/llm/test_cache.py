"""The response cache's bound: every call may add an answer for as long as the memory
lives, so it keeps at most MAX_BYTES of them, the least recently used going first."""

from __future__ import annotations

import sqlite3

from autopoiesis.llm.cache import ResponseCache

KEY_BYTES = len("s") + len("m") + 64  # stage, model and a sha256 key


def _key(i: int) -> str:
    return f"{i:064d}"


def test_the_cache_keeps_at_most_max_bytes_dropping_the_least_recently_used(tmp_path):
    answer = "x" * 1000
    row = KEY_BYTES + len(answer)
    cache = ResponseCache(tmp_path / "cache.sqlite", max_bytes=10 * row)
    for i in range(10):
        cache.put("s", "m", _key(i), answer, 10, 1)
    assert cache.get("s", "m", _key(0)) is not None  # now the most recently used

    for i in range(10, 15):
        cache.put("s", "m", _key(i), answer, 10, 1)

    assert cache.size_bytes() <= 10 * row
    kept = [i for i in range(15) if cache.get("s", "m", _key(i)) is not None]
    # 1..5 were the least recently used; 0 was hit, so it stays
    assert kept == [0, *range(6, 15)]


def test_a_year_of_answers_stays_within_the_bound(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite", max_bytes=50_000)
    for i in range(2000):
        cache.put("s", "m", _key(i), "answer " * (i % 50), 10, 1)
        assert cache.size_bytes() <= 50_000
    assert cache.get("s", "m", _key(1999)) is not None  # the newest are kept
    # another process sees the same order and the same bound
    other = ResponseCache(tmp_path / "cache.sqlite", max_bytes=50_000)
    other.put("s", "m", _key(5000), "late", 1, 1)
    assert other.size_bytes() <= 50_000
    assert cache.get("s", "m", _key(5000)) == ("late", 1, 1)


def test_a_cache_of_the_unbounded_version_is_kept_and_bounded(tmp_path):
    path = tmp_path / "cache.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE responses (stage TEXT NOT NULL, model TEXT NOT NULL, key TEXT NOT NULL,"
        " text TEXT NOT NULL, tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL,"
        " created TEXT NOT NULL, PRIMARY KEY (stage, model, key))"
    )
    for i in range(5):
        db.execute(
            "INSERT INTO responses VALUES ('s', 'm', ?, ?, 3, 1, '2025-01-01T00:00:00Z')",
            (_key(i), f"old answer {i}"),
        )
    db.commit()
    db.close()

    row = KEY_BYTES + len("old answer 0")
    cache = ResponseCache(path, max_bytes=5 * row)
    assert cache.get("s", "m", _key(1)) == ("old answer 1", 3, 1)
    assert cache.size_bytes() == 5 * row
    cache.put("s", "m", _key(9), "new answer 9", 3, 1)
    kept = [i for i in (0, 1, 2, 3, 4, 9) if cache.get("s", "m", _key(i)) is not None]
    assert kept == [1, 2, 3, 4, 9]  # the oldest unused went
