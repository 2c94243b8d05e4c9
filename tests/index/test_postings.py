"""The fast roads of search give what the plain ones give: BM25 summed from the
term postings ranks exactly as FTS5's bm25() does, through every kind of write; the
offline embedder's batch vectors are its one-at-a-time vectors; `--mode bm25` ranks by
BM25 alone; and no edit that keeps a file's size and mtime escapes the freshness check."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index import SearchIndex, postings
from autopoiesis.index.embedders import HashingEmbedder
from autopoiesis.index.embedders import offline as offline_embedder
from autopoiesis.index.files import racy
from autopoiesis.index.text import query_terms

COMMON = "deploy rollback database migration schema index query latency cache review merge branch".split()
RARE = [
    f"{a}{b}"
    for a in ("zor", "quil", "brant", "vesk", "mird")
    for b in ("ax", "umble", "ette", "ion")
]
QUERIES = [
    "deploy rollback",
    "database migration zoraxe",
    "schema index query",
    "quilumble cache",
    "latency",
    "brantette review merge",
    "the deploy of the database",
    "veskion veskion branch",
    "deploying databases",
    "mirdax rollback schema latency cache",
    "merging reviewed branches",
    "zorumble",
]


def write(repo: MemoryRepo, rel: str, text: str) -> Path:
    p = repo.root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def note(rng: random.Random, i: int) -> str:
    lines = [f"# Note {i}", ""]
    for section in range(rng.randint(1, 3)):
        lines += [f"## Part {section}", ""]
        for _ in range(rng.randint(1, 4)):
            words = [
                rng.choice(COMMON) if rng.random() < 0.7 else rng.choice(RARE)
                for _ in range(rng.randint(3, 14))
            ]
            lines.append("- " + " ".join(words))
    return "\n".join(lines) + "\n"


@pytest.fixture
def corpus(memory_repo: MemoryRepo, commit_all, monkeypatch: pytest.MonkeyPatch) -> MemoryRepo:
    """80 reference notes and 20 of projects; tokens in 8 chunks or more get postings (the
    shipped threshold is 300)."""
    monkeypatch.setattr(postings, "LISTED_MIN", 8)
    rng = random.Random(3)
    for i in range(80):
        write(memory_repo, f"knowledge/reference/n{i:02d}.md", note(rng, i))
    for i in range(20):
        write(memory_repo, f"knowledge/projects/billing/p{i:02d}.md", note(rng, 200 + i))
    commit_all(memory_repo, "notes")
    return memory_repo


def assert_roads_agree(index: SearchIndex) -> None:
    """Both roads give the same chunks, scores (bit for bit) and MATCH for every query, in
    the whole index and in each category."""
    conn = index.store.conn
    categories = [c for (c,) in conn.execute("SELECT DISTINCT category FROM chunks")]
    assert len(categories) >= 2  # the projects' notes and the reference ones
    arrays_used = 0
    for q in QUERIES:
        terms = query_terms(q)
        for category in (None, *categories):
            fts = index.query.bm25.rank_fts(terms, 40, category)
            arrays = index.query.bm25.rank_arrays(terms, 40, category)
            if arrays is None:  # no listed term: FTS5 answers
                continue
            arrays_used += 1
            assert (arrays.ids, arrays.scores, arrays.match) == (
                fts.ids,
                fts.scores,
                fts.match,
            ), (q, category)
            if category is None:
                last = arrays.ids[-3:]
                assert arrays.score_of(last) == dict(zip(last, arrays.scores[-3:]))
    assert arrays_used >= len(QUERIES) // 2


def by_content(index: SearchIndex) -> dict[str, set[tuple]]:
    """Each listed token's chunks as a search reads them (the build's lists without the
    removed chunks, with the added ones), named by place rather than by id."""
    conn = index.store.conn
    place = {
        cid: (p, s, e)
        for cid, p, s, e in conn.execute("SELECT id, path, start_line, end_line FROM chunks")
    }
    out = {}
    for (token,) in conn.execute("SELECT term FROM term_postings"):
        ids, freqs, lengths = index.query.bm25.postings_of(token)
        out[token] = {(place[int(i)], int(f), int(n)) for i, f, n in zip(ids, freqs, lengths)}
    return out


def test_postings_rank_as_fts5_through_every_write(corpus: MemoryRepo, git, tmp_path: Path) -> None:
    rng = random.Random(9)
    with SearchIndex(corpus) as index:
        index.rebuild_full()
        assert postings.built_max_id(index.store.conn) is not None
        assert index.store.conn.execute("SELECT count(*) FROM term_postings").fetchone()[0] >= 10
        assert_roads_agree(index)
        # a search in a long-lived process takes the arrays road from its second search on
        index.search("database migration zoraxe")
        assert index.query.bm25.rank(query_terms("database migration"), 10).road == "arrays"

        for round_ in range(3):
            for i in rng.sample(range(80), 6):  # edited: their chunks leave and come back
                p = corpus.root / f"knowledge/reference/n{i:02d}.md"
                if p.exists():
                    p.write_text(
                        p.read_text() + f"- deploy {RARE[round_]} migration again\n",
                        encoding="utf-8",
                    )
            for i in rng.sample(range(80), 2):  # deleted
                (corpus.root / f"knowledge/reference/n{i:02d}.md").unlink(missing_ok=True)
            for i in range(3):  # new
                write(corpus, f"knowledge/projects/new{round_}-{i}.md", note(rng, 100 + i))
            if round_ == 1:  # committed and dirty changes both; without the post-commit hook,
                # whose background sync would otherwise race this process to index the next round
                git(corpus, "add", "-A")
                git(corpus, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "some of it")
            assert index.catch_up().indexed > 0
            assert (
                index.store.conn.execute("SELECT count(*) FROM term_postings_added").fetchone()[0]
                > 0
            )
            assert_roads_agree(index)
            # the lists a search reads are those a build from scratch makes
            with SearchIndex(corpus, db_path=tmp_path / f"fresh{round_}.db") as fresh:
                fresh.rebuild_full()
                mine, theirs = by_content(index), by_content(fresh)
                shared = set(mine) & set(theirs)
                assert len(shared) >= 10
                assert all(mine[t] == theirs[t] for t in shared)

        # compaction folds the writes into new lists, and changes no ranking
        assert postings.needs_compaction(index.store.conn, at_least=1)
        with index.store.write_lock(), index.store.transaction():
            assert index.store.tokenizer is not None
            postings.build(index.store.conn, index.store.tokenizer)
        assert (
            index.store.conn.execute("SELECT count(*) FROM term_postings_added").fetchone()[0] == 0
        )
        assert_roads_agree(index)


def test_rare_terms_keep_to_fts5_and_a_category_takes_the_arrays(corpus: MemoryRepo) -> None:
    with SearchIndex(corpus) as index:
        index.rebuild_full()
        index.search("warm up")
        bm25 = index.query.bm25
        assert bm25.rank(query_terms("pangolin aardvark"), 10).road == "fts5"
        # a category filter (the viewer's timeline searches transcripts) ranks as fast
        hits = bm25.rank(query_terms("database migration"), 10, "reference")
        assert hits.road == "arrays"
        assert hits.ids == bm25.rank_fts(query_terms("database migration"), 10, "reference").ids
        assert bm25.rank(query_terms("database migration"), 10, "conversation").ids == []


def test_postings_are_built_where_sqlite_has_no_fts5_flush(corpus: MemoryRepo) -> None:
    """The term postings are built where SQLite refuses FTS5's 'flush' command (the SQLite
    of Debian 12's Python, 3.40, does not know it: every `index rebuild` there ended in a
    traceback). Here SQLite's authorizer refuses any write into chunks_fts while they are
    built inside a transaction: the lists are those of a build that could flush, rows
    written in the same transaction counted."""
    from autopoiesis.core.sqlite import sqlite_module

    module = sqlite_module()
    with SearchIndex(corpus) as index:
        index.rebuild_full()
        conn = index.store.conn

        def lists() -> dict[str, tuple]:
            return {t: tuple(r) for t, *r in conn.execute("SELECT * FROM term_postings")}

        built = lists()
        assert built
        extra = note(random.Random(9), 999) * 3

        def no_write_into_fts(action: int, table: str | None, *_: object) -> int:
            if action == module.SQLITE_INSERT and table == "chunks_fts":
                return module.SQLITE_DENY
            return module.SQLITE_OK

        assert index.store.tokenizer is not None
        with index.store.write_lock(), index.store.transaction():
            extra_path = write(corpus, "knowledge/reference/extra.md", extra)
            rel = "knowledge/reference/extra.md"
            index.store.write_files([(rel, "reference", os.stat(extra_path), "extra", extra)])
            conn.set_authorizer(no_write_into_fts)
            try:
                postings.build(conn, index.store.tokenizer)
            finally:
                conn.set_authorizer(None)
            in_transaction = lists()
        with index.store.write_lock(), index.store.transaction():
            postings.build(conn, index.store.tokenizer)  # after the commit: FTS5's own totals
        assert in_transaction == lists() != built
        assert_roads_agree(index)


def test_batch_vectors_are_the_single_text_vectors() -> None:
    rng = random.Random(5)
    texts = [note(rng, i) for i in range(300)] + [
        "",
        "the and of",
        "Painting paintings painted, a painter's PAINT",
        "naïve café — Ünïcödé ✓ 東京 x",
        "deploy " * 400,
        "a\x00b\ud800c",
        "x",
    ]
    embedder = HashingEmbedder()
    single = [embedder.embed_query(t) for t in texts]
    assert embedder._embed_many(texts) == single
    assert embedder.embed(texts * 2) == single * 2  # more than NUMPY_BATCH texts: the numpy road
    assert len(texts) * 2 >= offline_embedder.NUMPY_BATCH


def test_mode_bm25_ranks_by_bm25_alone(corpus: MemoryRepo) -> None:
    with SearchIndex(corpus) as index:
        index.rebuild_full()
        hits = index.search("database migration zoraxe", limit=8, mode="bm25", explain=True)
        assert hits and all(
            h.explain["merge"] == "bm25" and h.explain["vector_similarity"] is None for h in hits
        )
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(
            h.score == h.explain["chunk_score"] and abs(h.score - h.explain["bm25"]) < 1e-4
            for h in hits
        )  # the BM25 score
        with pytest.raises(ValueError, match="hybrid, bm25"):
            index.search("database", mode="vectors")
    runner = CliRunner()
    from autopoiesis.cli import app

    r = runner.invoke(
        app,
        [
            "-C",
            str(corpus.root),
            "search",
            "database migration",
            "--mode",
            "bm25",
            "--json",
            "--limit",
            "3",
        ],
    )
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)) == 3
    r = runner.invoke(app, ["-C", str(corpus.root), "search", "database", "--mode", "vectors"])
    assert r.exit_code == 2 and "hybrid or bm25" in r.output


def paths_for(index: SearchIndex, query: str) -> set[str]:
    """The files whose text has QUERY's words (BM25 alone: no fuzzy vector neighbours)."""
    return {r.path for r in index.search(query, 10, mode="bm25")}


def same_second_rewrite(p: Path, text: str, *, restore_mtime: bool) -> bool:
    """Rewrite P with TEXT of the same size in the second of its last change, the mtime
    put back to the old value (to the nanosecond) when RESTORE_MTIME; False when the
    second had ended (a busy machine), and the rewrite is not the case to test."""
    before = os.stat(p)
    p.write_text(text, encoding="utf-8")
    if restore_mtime:
        os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(p)
    assert after.st_size == before.st_size
    assert not restore_mtime or after.st_mtime_ns == before.st_mtime_ns
    return after.st_mtime_ns // 10**9 == before.st_mtime_ns // 10**9  # the mtime second is the same


def start_of_a_second() -> None:
    """Wait for a new second, so that what follows fits in one."""
    now = time.time()
    time.sleep(1 - (now - int(now)) + 0.01)


@pytest.mark.slow
def test_a_committed_file_edited_in_its_second_keeps_its_size_and_is_found(
    memory_repo: MemoryRepo, commit_all
) -> None:
    """Committed, indexed and rewritten (same size) within one second: git's own racy-file
    rule sees it, and so does the next search, in a new process and in a long-lived one.

    A busy machine may not commit and search within one second: the case is then set up
    again (a new file, the next second), never counted a failure."""
    for attempt in range(5):
        if committed_file_edited_in_its_second(
            memory_repo, commit_all, f"knowledge/reference/fox{attempt}.md"
        ):
            return
    pytest.skip(
        "five tries, and never a commit and a search within one second: the machine is too busy"
    )


def committed_file_edited_in_its_second(repo: MemoryRepo, commit_all, rel: str) -> bool:
    """The scenario of the test above on REL; False when a second ended before the rewrite."""
    p = write(repo, rel, "# Fox\n\n- The quick brown fox\n")
    with SearchIndex(repo) as long_lived:
        for word, new in (("quick", "quack"), ("quack", "quirk")):
            start_of_a_second()
            p.write_text(f"# Fox\n\n- The {word} brown fox\n", encoding="utf-8")
            commit_all(repo, f"fox {word}")
            assert paths_for(long_lived, word) == {rel}
            if not same_second_rewrite(p, f"# Fox\n\n- The {new} brown fox\n", restore_mtime=False):
                commit_all(repo, "fox: a rewrite that came a second late")
                return False
            with SearchIndex(repo) as cold:
                assert paths_for(cold, new) == {rel}
                assert not paths_for(cold, word)
            assert paths_for(long_lived, new) == {rel}
    return True


@pytest.mark.slow
@pytest.mark.parametrize("restore_mtime", [False, True])
def test_an_uncommitted_file_edited_with_its_size_and_mtime_is_found(
    memory_repo: MemoryRepo, restore_mtime: bool
) -> None:
    """An uncommitted file, indexed, then rewritten with the same size in the same second
    (its mtime even set back to the old value): its ctime tells, which no program sets
    back. A new process's first search and a long-lived process both see it."""
    p = write(memory_repo, "knowledge/reference/fox.md", "# Fox\n\n- The quick brown fox\n")
    with SearchIndex(memory_repo) as long_lived:
        for word, new in (("quick", "quack"), ("quack", "quirk")):
            start_of_a_second()
            p.write_text(f"# Fox\n\n- The {word} brown fox\n", encoding="utf-8")
            assert paths_for(long_lived, word) == {"knowledge/reference/fox.md"}
            assert paths_for(long_lived, word)  # a second search: the watcher is armed
            assert same_second_rewrite(
                p, f"# Fox\n\n- The {new} brown fox\n", restore_mtime=restore_mtime
            )
            with SearchIndex(memory_repo) as cold:
                assert paths_for(cold, new) == {"knowledge/reference/fox.md"}
                assert not paths_for(cold, word)
            assert paths_for(long_lived, new) == {"knowledge/reference/fox.md"}
            assert not paths_for(long_lived, word)


def test_a_file_indexed_as_it_was_written_is_checked_by_content(memory_repo: MemoryRepo) -> None:
    """A dirty file whose stat was recorded within two seconds of its change could change
    again unseen (racy): the check compares its content, and when that matches the index
    stays fresh without a write."""
    write(memory_repo, "knowledge/reference/new.md", "# New\n\n- The pelican note\n")
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
        taken = int(index.store.meta("dirty_taken_ns") or 0)
        key = json.loads(index.store.meta("dirty") or "{}")["knowledge/reference/new.md"]
        assert racy(key, taken)
        assert paths_for(index, "pelican") == {"knowledge/reference/new.md"}
        generation = index.store.generation
        assert index.is_fresh()
        assert index.catch_up().indexed == 0
        assert index.store.generation == generation  # verified by content, nothing written
        (memory_repo.root / "knowledge/reference/new.md").write_text(
            "# New\n\n- The penguin note\n", encoding="utf-8"
        )
        assert not index.is_fresh()
        assert paths_for(index, "penguin") == {"knowledge/reference/new.md"}


def test_search_without_sqlite_vec_ranks_the_same(
    corpus: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where sqlite-vec cannot load, vectors are plain rows compared in Python: the same
    results (the rows hold the vector, the category beside it)."""
    with SearchIndex(corpus) as index:
        index.rebuild_full()
        want = {q: [(r.path, r.start_line) for r in index.search(q, 5)] for q in QUERIES}
    monkeypatch.setattr("autopoiesis.core.sqlite.sqlite_vec_path", lambda: None)
    with SearchIndex(corpus, db_path=tmp_path / "novec.db") as plain:
        assert not plain.store.vec_loaded
        plain.rebuild_full()
        row = plain.store.conn.execute(
            "SELECT typeof(v.embedding), v.category, c.category FROM chunks_vecplain v"
            " JOIN chunks c ON c.id = v.id WHERE c.path LIKE 'knowledge/reference/%'"
        ).fetchone()
        assert row == ("blob", "reference", "reference")
        assert {q: [(r.path, r.start_line) for r in plain.search(q, 5)] for q in QUERIES} == want


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=400, unique=True),
    st.data(),
)
def test_postings_bytes_round_trip(ids: list[int], data: st.DataObject) -> None:
    """A token's lists are kept as narrow as their values allow (gaps of two bytes, a
    frequency of one): they read back as they were, whatever the values."""
    import numpy as np

    n = len(ids)
    freqs = data.draw(st.lists(st.integers(1, 2**32 - 1), min_size=n, max_size=n))
    lengths = data.draw(st.lists(st.integers(1, 2**32 - 1), min_size=n, max_size=n))
    arrays = [np.array(sorted(ids), dtype=np.int64), np.array(freqs), np.array(lengths)]
    blobs = postings.encode(*arrays)
    back = postings.decode(n, *blobs)
    assert [list(map(int, b)) for b in back] == [list(map(int, a)) for a in arrays]
    if n > 1 and max(np.diff(arrays[0])) <= 0xFFFF:
        assert len(blobs[0]) == 2 * n + 2
    if max(freqs) <= 0xFF:
        assert len(blobs[1]) == n
