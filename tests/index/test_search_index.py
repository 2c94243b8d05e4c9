"""The search index against real git repositories and real SQLite with sqlite-vec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.sqlite import connect
from autopoiesis.index import (
    IndexFallbackWarning,
    SearchIndex,
    SearchResult,
    search,
    search_outcome,
)
from autopoiesis.index import db as dbmod
from autopoiesis.index.chunking import MAX_CHUNK_CHARS, chunk_file
from autopoiesis.index.embedders import HashingEmbedder, OpenAIEmbedder, from_blob
from autopoiesis.index.text import fts_match, query_terms
from autopoiesis.testing.openai_server import default_embeddings
from autopoiesis.testing.samples import closed_transcript

TRANSCRIPT = closed_transcript(
    "ses_test01",
    "Database Choice",
    (
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
            "SQLite with the sqlite-vec extension: one file, no server.\nIt rebuilds from the Markdown files.",
        ),
        ("2026-03-02T00:03:00Z", "user", "Alice", "Great, the gardening calendar is next."),
    ),
)

KNOWLEDGE = """---
tags: [infra]
---
# Infrastructure

## Database
We store search data in SQLite; the index is a cache.

## Deploys
Deploys go through the blue-green pipeline with a smoke test first.
"""


def write(repo: MemoryRepo, rel: str, text: str | bytes) -> Path:
    p = repo.root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def filled(memory_repo: MemoryRepo, commit_all) -> MemoryRepo:
    write(
        memory_repo, "raw/conversations/2026/03/01/2358-ses_test01-database-choice.md", TRANSCRIPT
    )
    write(memory_repo, "knowledge/projects/infra/context.md", KNOWLEDGE)
    commit_all(memory_repo, "test content")
    return memory_repo


# ── SQLite and sqlite-vec ──
def test_sqlite_vec_really_loads(tmp_path: Path) -> None:
    conn, info = connect(tmp_path / "x.db")
    assert info.sqlite_vec_loaded, info.error
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")
    # the module without enable_load_extension on this machine falls back to pysqlite3
    import sqlite3

    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        assert info.module == "pysqlite3"
    conn.close()


def test_lexical_embedder_vectors_are_rows_compared_by_sqlite_vec(filled: MemoryRepo) -> None:
    """The offline (lexical) embedder's vectors are plain rows of 16-bit whole numbers (half
    float32's bytes): search re-scores BM25's candidates by id with their exact cosines,
    and its fallback KNN lets sqlite-vec scan their int8 top halves, then re-scores the
    nearest. The cosines are float32's to within 1e-5, and the KNN's order is theirs."""
    with SearchIndex(filled) as index:
        index.catch_up()
        assert index.store.vec_loaded and not index.store.uses_vec0
        conn = index.store.conn
        n_vec = conn.execute("SELECT count(*) FROM chunks_vecplain").fetchone()[0]
        assert n_vec == conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
        dims = index.embedder.dimensions
        assert {r[0] for r in conn.execute("SELECT length(embedding) FROM chunks_vecplain")} == {
            2 * dims
        }
        q = index.embedder.embed_query("sqlite vec extension")
        texts = dict(
            conn.execute(
                "SELECT c.id, chunk_text(f.chunks_z, c.text_start, c.text_len) "
                "FROM chunks c JOIN files f ON f.path = c.path"
            )
        )
        qf = from_blob(q)
        exact = {
            cid: 1.0 - sum(a * b for a, b in zip(from_blob(index.embedder.embed([t])[0]), qf))
            for cid, t in texts.items()
        }
        knn = index.query.knn(q, 3, None)
        assert [cid for cid, _ in knn] == sorted(exact, key=lambda c: (exact[c], c))[:3]
        every = index.query.knn(q, n_vec, None)
        assert len(every) == n_vec
        assert all(abs(d - exact[cid]) < 1e-5 for cid, d in every)
        assert [d for _, d in every] == sorted(d for _, d in every)
        rescored = index.query.vec_distances(list(texts), q)
        assert all(abs(d - exact[cid]) < 1e-5 for cid, d in rescored)
        assert index.store.meta("embedder") == "offline:hash-v3:512"
        assert index.store.meta("vector_store") == "plain:i16"


class SemanticHashing(HashingEmbedder):
    """The hashing embedder declared semantic: what a neural embedder's index looks like
    (vectors in vec0, a KNN every search, the weighted merge), without a model download."""

    name = "semantic-hashing"
    lexical = False
    preferred_merge = "weighted"

    @property
    def fingerprint(self) -> str:
        return "semantic-hashing:" + super().fingerprint


def test_semantic_embedder_uses_vec0_knn(filled: MemoryRepo) -> None:
    with SearchIndex(filled, embedder=SemanticHashing()) as index:
        index.catch_up()
        assert index.store.uses_vec0
        assert index.store.meta("vector_store") == f"vec0:{dbmod.VEC_CHUNK_SIZE}"
        conn = index.store.conn
        n_vec = conn.execute("SELECT count(*) FROM chunks_vec").fetchone()[0]
        assert n_vec == conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
        q = index.embedder.embed_query("sqlite vec extension")
        rows = conn.execute(
            "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?", (q, 3)
        ).fetchall()
        assert len(rows) == 3 and rows[0][1] <= rows[-1][1]
        hits = index.search("sqlite vec extension", limit=3, explain=True)
        assert hits and hits[0].explain["merge"] == "weighted"
        assert hits[0].explain["vector_similarity"] is not None
        # re-scoring by id through vec0 gives vec0's own KNN distances
        knn = dict(index.query.knn(q, 20, None))
        for cid, d in index.query.vec_distances(list(knn), q):
            assert abs(knn[cid] - d) < 1e-5


# ── chunking ──
def test_transcript_chunks_by_turn_with_lines_and_times() -> None:
    fc = chunk_file("raw/conversations/x.md", TRANSCRIPT, "conversation")
    lines = TRANSCRIPT.split("\n")
    assert [c.kind for c in fc.chunks] == ["turn", "turn", "turn"]
    first, second, third = fc.chunks
    # each chunk is its turn in its exchange: these turns are short, so every window
    # widens to two turns each side, which here is the whole conversation
    assert lines[first.start_line - 1].startswith("## 23:58")
    assert (
        (first.start_line, first.end_line)
        == (second.start_line, second.end_line)
        == (third.start_line, third.end_line)
    )
    assert first.end_line == len(lines) - 1
    assert first.turn_time == "2026-03-01T23:58:00Z"
    assert second.turn_time == "2026-03-01T23:59:00Z"
    assert third.turn_time == "2026-03-02T00:03:00Z"  # the date prefix after midnight
    assert first.text.startswith("Alice (user), 1 March 2026:")
    assert "agent, 1 March 2026:" in first.text
    assert "Alice (user), 2 March 2026:" in third.text
    assert fc.title == "Database Choice"


def test_a_reply_streamed_a_message_a_step_is_one_turn() -> None:
    """A harness streams the agent's reply a message a step: the steps are one turn, as
    the same reply imported in one message. The user's line beside it keeps a chunk of
    its own (each short step would have joined it and buried its words), and the reply's
    chunk names the whole run as its own turn, headed once."""
    steps = [
        "Let me look at the policy code first.",
        "> [tool:codebase_search] key policy enforcement -> moto/kms/models.py L114-160",
        "The evaluation lives in `models.py`; " + "it checks each statement in turn. " * 12,
        "I'll add the deny rule now. " + "The statement is matched by action and key. " * 12,
    ]
    body = "\n\n".join(f"## 07:{18 + i:02d} \u2014 agent\n{s}" for i, s in enumerate(steps))
    text = (
        "---\nsession_id: s\nstarted: 2026-03-01T07:17:00Z\nstatus: complete\n---\n\n# T\n\n"
        "## 07:17 \u2014 user\nThe mocked key service ignores its access policy (#4600).\n\n"
        f"{body}\n"
    )
    lines = text.split("\n")
    chunks = chunk_file("raw/conversations/s.md", text, "conversation").chunks
    assert len(chunks) == 2
    user, reply = chunks
    assert (user.start_line, user.end_line) == (user.own_start, user.own_end)  # alone
    assert "ignores its access policy" in user.text and "policy code" not in user.text
    assert lines[reply.own_start - 1].startswith("## 07:18")  # the run, from its first step
    assert reply.own_end == len(lines) - 1  # ... to its last
    assert reply.text.count("agent, 1 March 2026:") == 1
    assert "## 07:19" not in reply.text and "[tool:codebase_search]" in reply.text
    assert reply.turn_time == "2026-03-01T07:18:00Z"


def test_turn_windows_widen_only_while_short() -> None:
    from autopoiesis.index.chunking import WIDE_CONTEXT_CHARS

    def transcript(bodies: list[str], first: int = 0) -> str:
        # the speakers take turns (one speaker's consecutive messages are one turn)
        roles = ("user", "agent")
        turns = "\n\n".join(
            f"## 10:{i:02d} \u2014 {roles[(i + first) % 2]}\n{b}" for i, b in enumerate(bodies)
        )
        return f"---\nsession_id: s\nstarted: 2026-03-01T10:00:00Z\nstatus: complete\n---\n\n# T\n\n{turns}\n"

    def turn_of_line(text: str, line: int) -> int:
        return sum(1 for x in text.split("\n")[:line] if x.startswith("## 10:")) - 1

    short = transcript([f"turn {i} ok" for i in range(7)])
    mid = chunk_file("raw/conversations/s.md", short, "conversation").chunks[3]
    assert (turn_of_line(short, mid.start_line), turn_of_line(short, mid.end_line)) == (
        1,
        5,
    )  # two each side
    long_body = "word " * (WIDE_CONTEXT_CHARS // 5)
    long = transcript([long_body] * 7)
    mid = chunk_file("raw/conversations/l.md", long, "conversation").chunks[3]
    assert (turn_of_line(long, mid.start_line), turn_of_line(long, mid.end_line)) == (
        3,
        3,
    )  # long neighbours of a long turn stay out: each is its own chunk
    # a one-line instruction between long agent turns is not buried under their words,
    # while the long turns' chunks still hold it beside them
    mixed = transcript([long_body, "use bun, not node", long_body], first=1)
    chunks = chunk_file("raw/conversations/m.md", mixed, "conversation").chunks
    spans = [(turn_of_line(mixed, c.start_line), turn_of_line(mixed, c.end_line)) for c in chunks]
    assert spans == [(0, 1), (1, 1), (1, 2)]
    assert len(chunks[1].text) < 60
    # a neighbour that would fit the window still stays out when it is many times the
    # turn's length (the agent's 1,100 characters beside a one-line instruction) ...
    medium = "word " * 220
    beside = transcript(["use bun, not node", medium])
    chunks = chunk_file("raw/conversations/b.md", beside, "conversation").chunks
    spans = [(turn_of_line(beside, c.start_line), turn_of_line(beside, c.end_line)) for c in chunks]
    assert spans == [(0, 0), (0, 1)]
    # ... and joins a turn of a paragraph, which it does not bury
    paragraph = "we keep the lockfile in git and pin every dependency to its exact version " * 3
    both = transcript([paragraph, medium])
    chunks = chunk_file("raw/conversations/p.md", both, "conversation").chunks
    spans = [(turn_of_line(both, c.start_line), turn_of_line(both, c.end_line)) for c in chunks]
    assert spans == [(0, 1), (0, 1)]


def test_markdown_chunks_by_section_and_tolerates_broken_frontmatter() -> None:
    fc = chunk_file("knowledge/projects/infra/context.md", KNOWLEDGE, "project")
    assert [c.heading for c in fc.chunks] == [
        "Infrastructure > Database",
        "Infrastructure > Deploys",
    ]
    assert fc.tags == ("infra",)
    lines = KNOWLEDGE.split("\n")
    deploys = fc.chunks[1]
    assert lines[deploys.start_line - 1] == "## Deploys"
    assert "blue-green" in lines[deploys.end_line - 1]
    broken = chunk_file(
        "knowledge/reference/b.md", "---\ntags: [a, b\n---\n# B\ntext body\n", "reference"
    )
    assert broken.warnings
    assert any("text body" in c.text for c in broken.chunks)
    unclosed = chunk_file("knowledge/reference/c.md", "---\ntags: x\n# C\nbody\n", "reference")
    assert unclosed.warnings
    assert unclosed.chunks


def test_a_long_sections_heading_stays_with_its_text() -> None:
    """A day's journal: its heading, a blank line, a project's sub-heading and 3,000
    characters of entries with no other blank line. Cut at the only blank line, the day's
    heading was a chunk alone, labelled with the project ("2025-09-19 > docgen"), and the
    best hit for the project's name."""
    entries = [f"- Session {n}: " + "changed the templates and the tests " * 3 for n in range(30)]
    text = "---\ntype: journal\n---\n\n## 2025-09-19\n\n### docgen\n" + "\n".join(entries) + "\n"
    chunks = chunk_file("knowledge/journal/2025-09-19.md", text, "journal").chunks
    assert len(chunks) >= 2  # long: cut in pieces
    assert all("- Session" in c.text for c in chunks)  # none of headings alone
    lines = text.split("\n")
    assert lines[chunks[0].start_line - 1] == "## 2025-09-19"
    assert sum(c.text.count("- Session") for c in chunks) == len(entries)
    # a file of a heading alone is still a chunk
    assert chunk_file("knowledge/reference/x.md", "# X\n", "reference").chunks
    # a long fenced block of lines that look like headings (shell comments) stays cut
    comments = "\n".join(
        f"# step {n}: fetch, build, test" + "\n" * (n % 3 == 0) for n in range(900)
    )
    block = chunk_file("knowledge/reference/s.md", f"# S\n\n```sh\n{comments}\n```\n", "reference")
    # (a piece's text is its lines and its heading's breadcrumb: a little over the cut)
    assert len(block.chunks) > 5 and max(len(c.text) for c in block.chunks) <= MAX_CHUNK_CHARS + 200


# ── query safety ──
@pytest.mark.slow
@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "(a OR b",
        "NOT AND OR",
        "-x:y*",
        "col:value",
        "^start",
        "a NEAR/3 b",
        "***",
        "...",
        "'';--",
        "",
        "x" * 10_000,
        "データベース 🎉 emoji",
        "  \t\n",
    ],
)
def test_user_text_is_never_fts_syntax(filled: MemoryRepo, query: str) -> None:
    with SearchIndex(filled) as index:
        results = index.search(query, limit=5)
    assert isinstance(results, list)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=200))
def test_any_text_makes_a_valid_match_expression(tmp_path: Path, text: str) -> None:
    import pysqlite3.dbapi2 as sqlite  # the same SQLite the index uses here

    conn = sqlite.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    conn.execute("INSERT INTO t VALUES ('some text here')")
    match = fts_match(query_terms(text))
    if match is not None:
        conn.execute("SELECT * FROM t WHERE t MATCH ?", (match,)).fetchall()


def test_stopwords_dropped_and_terms_ored() -> None:
    assert query_terms("When did Caroline go to the LGBTQ support group?") == [
        "caroline",
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert fts_match(["a", 'b"c']) == '"a" OR "b""c"'
    assert query_terms("what is the") == ["what", "is", "the"]  # only stopwords: keep them


# ── search ──
def test_search_points_at_lines_and_filters_category(filled: MemoryRepo) -> None:
    with SearchIndex(filled) as index:
        results = index.search("which database holds the embeddings?", limit=5)
        assert results
        assert isinstance(results[0], SearchResult)
        top = {r.path: r for r in results}
        conv = top["raw/conversations/2026/03/01/2358-ses_test01-database-choice.md"]
        assert conv.category == "conversation"
        assert conv.turn_time is not None
        assert conv.start_line <= conv.end_line
        only = index.search("database", limit=5, category="project")
        assert only
        assert all(r.category == "project" for r in only)
        assert only[0].path == "knowledge/projects/infra/context.md"
        assert only[0].heading == "Infrastructure > Database"
        weighted = index.search("blue-green deploys", limit=3, merge="weighted", explain=True)
        assert weighted[0].path == "knowledge/projects/infra/context.md"
        assert weighted[0].explain
        assert weighted[0].explain["merge"] == "weighted"
        assert weighted[0].explain["bm25"] is not None
        assert weighted[0].explain["vector_similarity"] is not None
        # auto, the default, is the weighted merge with the offline embedder too; rrf on request
        auto = index.search("blue-green deploys", limit=3, explain=True)
        assert auto[0].explain["merge"] == "weighted"
        fused = index.search("blue-green deploys", limit=3, merge="rrf", explain=True)
        assert fused[0].explain["merge"] == "rrf"
        assert fused[0].path == "knowledge/projects/infra/context.md"
        d = weighted[0].to_dict()
        assert {
            "path",
            "start_line",
            "end_line",
            "turn_time",
            "snippet",
            "score",
            "category",
        } <= set(d)


def test_archive_results_are_flagged(filled: MemoryRepo) -> None:
    write(
        filled,
        "archive/journal/2025-01-01.md",
        "# 2025-01-01\n\n## notes\nThe old mainframe migration finished.\n",
    )
    with SearchIndex(filled) as index:
        results = index.search("mainframe migration", limit=3)
    assert results[0].path == "archive/journal/2025-01-01.md"
    assert results[0].archived
    assert results[0].category == "archive"


def test_terms_in_most_chunks_leave_the_match_but_not_the_ranking(memory_repo: MemoryRepo) -> None:
    for i in range(12):
        extra = " The zebra crossing was repainted." if i in (3, 7) else ""
        tail = " Quartz clocks drift." if i % 4 == 0 else ""
        write(
            memory_repo,
            f"knowledge/reference/n{i}.md",
            f"# Weekly {i}\n\nTeam notes for week {i}.{extra}{tail}\n",
        )
    with SearchIndex(memory_repo) as index:
        index.catch_up()
        # "notes" and "team" are in every chunk: bm25() scores them ~0, so they only cost time
        assert index.query.ranking_terms(["team", "notes", "zebra", "quartz"]) == [
            "zebra",
            "quartz",
        ]
        assert index.query.ranking_terms(["team", "notes"]) == [
            "team",
            "notes",
        ]  # all common: keep all
        got = index.search("team notes about the zebra and quartz", limit=12, explain=True)
        full = [
            r[0]
            for r in index.store.conn.execute(
                "SELECT c.path FROM chunks_fts f JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ?"
                " ORDER BY bm25(chunks_fts) LIMIT 5",
                ('"team" OR "notes" OR "zebra" OR "quartz"',),
            )
        ]
        # the chunks that match a rare term come first, in the order the full OR gives them
        assert [r.path for r in got[:5]] == full
        assert {r.path for r in got[:2]} == {
            "knowledge/reference/n3.md",
            "knowledge/reference/n7.md",
        }
        assert index.search("team notes", limit=3)  # a query of only common terms still answers


def test_a_common_term_ranks_when_the_others_are_in_no_chunk(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "what did we decide about deploy" where every other note says deploy and none says
    decide: deploy is the only term that orders anything, so it ranks (by both roads)
    rather than being left out for a term that finds nothing."""
    from autopoiesis.index import postings

    monkeypatch.setattr(postings, "LISTED_MIN", 2)  # so that the arrays road has lists
    for i in range(40):
        said = " We deploy on Fridays." if i % 10 else ""
        if i == 4:
            said = " Deploy, deploy, deploy: the deploy checklist."
        write(memory_repo, f"knowledge/reference/n{i}.md", f"# Weekly {i}\n\nTeam notes.{said}\n")
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
        terms = ["decide", "deploy"]
        assert index.query.ranking_terms(terms) == terms
        deploy_chunks = {
            cid
            for (cid,) in index.store.conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'deploy'"
            )
        }
        total = index.store.count("chunks")
        assert len(deploy_chunks) > total / 2  # 36 of the notes, and the template's files
        fts = index.query.bm25.rank_fts(terms, 100)
        arrays = index.query.bm25.rank_arrays(terms, 100)
        assert set(fts.ids) == deploy_chunks
        assert arrays is not None and (arrays.ids, arrays.scores) == (fts.ids, fts.scores)
        # where a term is in no chunk and another in only a few, the common one still leaves
        assert index.query.ranking_terms(["decide", "deploy", "checklist"]) == ["checklist"]
        got = index.search("what did we decide about deploy?", limit=3, mode="bm25")
        assert got[0].path == "knowledge/reference/n4.md"


def test_binary_and_disappearing_files_never_abort_a_rebuild(
    filled: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autopoiesis.index import store

    write(filled, "knowledge/reference/blob.md", b"\x00\x01\x02binary\xff\xfe")
    for i in range(3):
        write(filled, f"knowledge/reference/note{i}.md", f"# Note {i}\nzeppelin number {i}\n")
    monkeypatch.setattr(store, "BATCH_FILES", 1)  # one file per step so we can act between steps
    with SearchIndex(filled) as index:
        victim = filled.root / "knowledge/reference/note2.md"

        def progress(done: int, total: int) -> None:
            if victim.exists():
                victim.unlink()  # vanishes after the listing, before it is read

        report = index.rebuild_full(progress=progress)
        assert any("blob.md" in w and "binary" in w for w in report.warnings)
        paths = {r[0] for r in index.store.conn.execute("SELECT path FROM files")}
    assert "knowledge/reference/blob.md" not in paths
    assert "knowledge/reference/note0.md" in paths
    assert "knowledge/reference/note2.md" not in paths


# ── freshness ──
def wait_for(predicate, timeout: float = 120.0) -> bool:
    """Whether PREDICATE came true; TIMEOUT is a hang guard (another process acts, on a
    machine that may be busy)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_post_commit_hook_updates_the_index_in_the_background(
    filled: MemoryRepo, git, commit_all
) -> None:
    with SearchIndex(filled) as index:
        index.catch_up()
    write(
        filled,
        "knowledge/people/bob.md",
        "# Bob\n\n## Context\nBob maintains the xylophone museum.\n",
    )
    commit_all(filled, "add bob")  # the installed post-commit hook runs here
    head = git(filled, "rev-parse", "HEAD").stdout.strip()

    def indexed() -> bool:
        with SearchIndex(filled) as idx:
            row = idx.store.conn.execute(
                "SELECT count(*) FROM files WHERE path = 'knowledge/people/bob.md'"
            ).fetchone()[0]
            return idx.store.meta("head") == head and row == 1

    assert wait_for(indexed), (
        (filled.state_dir / "logs" / "index-sync.log").read_text()
        if (filled.state_dir / "logs").exists()
        else "no log"
    )
    with SearchIndex(filled) as index:
        assert index.is_fresh()
        hits = index.search(
            "xylophone museum", limit=1, fresh=False
        )  # no catch-up: the hook did it
    assert hits
    assert hits[0].path == "knowledge/people/bob.md"


def paths(results: list[SearchResult]) -> list[str]:
    return [r.path for r in results]


def test_never_stale_after_edit_commit_checkout_and_reset(
    filled: MemoryRepo, git, commit_all
) -> None:
    path = "knowledge/projects/infra/context.md"
    with SearchIndex(filled) as index:
        index.catch_up()
        base = git(filled, "rev-parse", "HEAD").stdout.strip()
        # uncommitted edit
        write(filled, path, KNOWLEDGE.replace("blue-green pipeline", "quokka pipeline"))
        assert index.search("quokka", limit=1)[0].path == path
        assert path not in paths(index.search("blue-green", limit=5, category="project"))
        # untracked new file
        write(filled, "knowledge/reference/new.md", "# New\nwombat facts\n")
        assert index.search("wombat", limit=1)[0].path == "knowledge/reference/new.md"
        commit_all(filled, "quokka")
        # branch switch back to the old content
        git(filled, "checkout", "-q", "-b", "old", base)
        assert index.search("blue-green pipeline", limit=1, category="project")[0].path == path
        assert "knowledge/reference/new.md" not in paths(index.search("wombat", limit=5))
        git(filled, "checkout", "-q", "-")
        assert index.search("wombat", limit=1)[0].path == "knowledge/reference/new.md"
        # hard reset
        git(filled, "reset", "-q", "--hard", base)
        assert path not in paths(index.search("quokka", limit=5))
        # deletion and rename
        git(filled, "mv", path, "knowledge/projects/infra/renamed.md")
        hits = index.search("blue-green pipeline", limit=1)
        assert hits[0].path == "knowledge/projects/infra/renamed.md"
        assert (
            index.store.conn.execute(
                "SELECT count(*) FROM files WHERE path = ?", (path,)
            ).fetchone()[0]
            == 0
        )


def test_incremental_sync_only_touches_the_difference(filled: MemoryRepo, commit_all) -> None:
    with SearchIndex(filled) as index:
        index.catch_up()
        write(filled, "knowledge/reference/one.md", "# One\nsingle change\n")
        commit_all(filled, "one")
        report = index.catch_up()
        assert not report.full
        assert report.indexed == 1
        assert report.removed == 0
        assert index.catch_up().indexed == 0  # fresh now


# ── identity, cache, embedders ──
class SlowHashing(HashingEmbedder):
    """The hashing embedder standing for a model whose vectors cost something to compute
    (not lexical: its vectors go to the embedding cache and a vec0 table)."""

    lexical = False


def test_identity_change_rebuilds_and_cache_survives(filled: MemoryRepo) -> None:
    with SearchIndex(filled, embedder=SlowHashing(64)) as index:
        first = index.catch_up()
        assert first.full
        assert first.embedded > 0
    with SearchIndex(filled, embedder=SlowHashing(128)) as index:
        assert index.needs_rebuild()
        report = index.catch_up()
        assert report.full
        assert report.embedded > 0
        assert index.store.meta("dimensions") == "128"
        assert index.search("sqlite", limit=1)
    (filled.root / "memory.db").unlink()
    with SearchIndex(filled, embedder=SlowHashing(128)) as index:
        report = index.rebuild_full()
        assert report.indexed > 0
        assert report.embedded == 0  # every chunk came from the cache


def test_an_index_an_older_sqlite_made_is_kept_by_a_newer_one(
    filled: MemoryRepo, monkeypatch: pytest.MonkeyPatch, commit_all
) -> None:
    """chunks_fts as an SQLite before 3.43 makes it (it keeps its own copy of the text) is
    read and written by a newer one as it is: two programs with two SQLites sharing one
    memory.db (Debian 12's Python and one with pysqlite3) rebuilt it each time the other
    had. A file only the newer SQLite can use is still rebuilt by the older one."""
    from autopoiesis.index import db as dbmod

    monkeypatch.setattr(dbmod, "fts_layout", lambda version: "content")  # SQLite 3.40
    with SearchIndex(filled) as index:
        index.rebuild_full()
        assert index.store.meta("fts") == "content"
    monkeypatch.setattr(dbmod, "fts_layout", lambda version: "contentless")  # 3.43 and later
    with SearchIndex(filled) as index:
        assert not index.needs_rebuild(), index.store.outdated()
        write(filled, "knowledge/reference/okapi.md", "# Okapi\n\nThe okapi ledger moved.\n")
        commit_all(filled, "okapi")
        assert index.catch_up().full is False
        (hit,) = index.search("okapi ledger", limit=1)
        assert hit.path == "knowledge/reference/okapi.md"
        (filled.root / "knowledge/reference/okapi.md").unlink()
        commit_all(filled, "okapi gone")
        index.catch_up()
        assert index.search("okapi", limit=1, mode="bm25") == []
        assert index.store.meta("fts") == "content"
    with SearchIndex(filled) as index:
        index.store.set_meta("fts", "contentless")  # as the newer SQLite records its build
        monkeypatch.setattr(dbmod, "fts_layout", lambda version: "content")
        assert index.store.outdated() == ["fts contentless -> content"]


def test_a_large_outdated_index_is_rebuilt_in_the_background_while_grep_answers(
    filled: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index built by another chunker is rebuilt whole. A search on a large one (a
    prompt hook, with its deadline) does not wait for that: it answers with git grep and
    says so, and the rebuild runs in the background until the index answers again."""
    from autopoiesis.compiler import ContextCompiler
    from autopoiesis.index import freshness

    with SearchIndex(filled) as index:
        index.rebuild_full()
    conn, _ = connect(filled.index_path)
    conn.execute("UPDATE index_meta SET value = 'old' WHERE key = 'chunker_version'")
    conn.commit()
    conn.close()
    monkeypatch.setattr(freshness, "INLINE_REBUILD_FILES", 1)  # `filled` holds two files
    with SearchIndex(filled) as holder:
        assert holder.store.try_write_lock()  # a rebuild under way holds the lock
        outcome = search_outcome("sqlite-vec extension", 5, repo=filled)
        assert outcome.source in ("git grep", "ripgrep")
        assert any("ses_test01" in r.path for r in outcome.results)
        (notice,) = outcome.notices
        assert "chunker version old -> " in notice and "in the background" in notice
        with ContextCompiler(filled) as comp:
            result = comp.compile("sqlite-vec extension")
            (notice,) = result.notices
            assert "in the background" in notice
            assert notice.endswith(("used git grep", "used ripgrep"))
        assert any("ses_test01" in (s.path or "") for s in result.sections if s.included)
        from autopoiesis.cli import app

        r = CliRunner().invoke(app, ["-C", str(filled.root), "compile", "sqlite-vec extension"])
        assert r.exit_code == 0
        assert "sqlite-vec extension" in r.stdout
        assert "is being rebuilt in the background" in r.stderr
        holder.store.release_write_lock()
        with SearchIndex(filled) as index:
            assert index.needs_rebuild()  # nothing was rebuilt while the lock was held
    # with the lock free, the search starts the rebuild; the next searches use the index
    assert search_outcome("sqlite-vec extension", 5, repo=filled).source != "index"

    def rebuilt() -> bool:
        with SearchIndex(filled) as index:
            return not index.needs_rebuild()

    assert wait_for(rebuilt, timeout=60)
    outcome = search_outcome("sqlite-vec extension", 5, repo=filled)
    assert outcome.source == "index" and not outcome.notices
    assert any("ses_test01" in r.path for r in outcome.results)


def test_a_search_does_not_wait_out_another_process_holding_the_index(
    filled: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild or a long catch-up holds the index lock; a note written meanwhile makes a
    search catch up, and it used to wait a minute for that lock (a prompt hook has 10 s),
    then the compiler failed. It waits a moment, then answers with git grep and says why."""
    from autopoiesis.compiler import ContextCompiler
    from autopoiesis.index import freshness

    monkeypatch.setattr(freshness, "SEARCH_LOCK_WAIT", 0.2, raising=False)
    with SearchIndex(filled) as index:
        index.rebuild_full()
    # written, not committed: a commit's hook would start the background sync
    write(filled, "knowledge/reference/ocelot.md", "# Ocelot\n\nOcelotfoo is the codename.\n")
    with SearchIndex(filled) as holder:
        assert holder.store.try_write_lock()  # a rebuild under way holds the lock
        try:
            outcome = search_outcome("ocelotfoo", 5, repo=filled)
            assert outcome.source in ("git grep", "ripgrep")
            assert [r.path for r in outcome.results] == ["knowledge/reference/ocelot.md"]
            (notice,) = outcome.notices
            assert "another process is writing the search index" in notice
            with ContextCompiler(filled) as comp:
                result = comp.compile("ocelotfoo")
            (notice,) = result.notices
            assert "another process is writing the search index" in notice
            assert any(
                s.path == "knowledge/reference/ocelot.md" for s in result.sections if s.included
            )
        finally:
            holder.store.release_write_lock()
    outcome = search_outcome("ocelotfoo", 5, repo=filled)  # the lock free: the index caught up
    assert outcome.source == "index" and not outcome.notices
    assert outcome.results[0].path == "knowledge/reference/ocelot.md"


def test_a_search_does_not_wait_out_another_connection_writing_memory_db(
    filled: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program (an `sqlite3` shell, a viewer) holds a write transaction on memory.db
    without the index lock: a search's catch-up waits a moment for it, not SQLite's 30 s,
    and the compiler answers with git grep instead of failing with "database is locked"."""
    from autopoiesis.compiler import ContextCompiler
    from autopoiesis.index import freshness

    monkeypatch.setattr(freshness, "SEARCH_LOCK_WAIT", 0.2, raising=False)
    with SearchIndex(filled) as index:
        index.rebuild_full()
    write(filled, "knowledge/reference/margay.md", "# Margay\n\nMargayfoo is the codename.\n")
    other, _ = connect(filled.index_path)
    other.execute("BEGIN IMMEDIATE")
    try:
        with ContextCompiler(filled) as comp:
            result = comp.compile("margayfoo")
        (notice,) = result.notices
        assert "memory.db is locked by another process" in notice
        assert any(s.path == "knowledge/reference/margay.md" for s in result.sections if s.included)
        outcome = search_outcome("margayfoo", 5, repo=filled)
        assert outcome.source in ("git grep", "ripgrep")
        assert [r.path for r in outcome.results] == ["knowledge/reference/margay.md"]
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert search_outcome("margayfoo", 5, repo=filled).source == "index"


def test_status_calls_a_file_touched_or_copied_with_the_same_content_fresh(
    filled: MemoryRepo, cli
) -> None:
    """A copy or a restore of the memory (`cp -a`, rsync) or a touch changes a file's stat,
    not its content: git sees no change, so no search catches it up, and `index status`
    said "fresh no (the next search catches up; ...)" for good. A file whose content
    changed is still stale."""
    with SearchIndex(filled) as index:
        index.rebuild_full()
    note = filled.root / "knowledge/projects/infra/context.md"
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 5 * 10**9))
    search_outcome("sqlite", 5, repo=filled)  # a search finds nothing to catch up
    with SearchIndex(filled) as index:
        status = index.status()
        assert status.fresh and status.stale_paths == ()
    note.write_text(note.read_text() + "\nOne more line.\n")
    with SearchIndex(filled) as index:
        status = index.status()
        assert not status.fresh and status.stale_paths == ("knowledge/projects/infra/context.md",)
    out = cli("index", "status", repo=filled, check=True).stdout
    assert "1 file differs" in out


def test_lexical_vectors_are_not_cached(filled: MemoryRepo) -> None:
    """The offline embedder's vectors cost less to compute again than to keep: the cache
    holds none of them, and a rebuild computes them afresh (to the same bits)."""
    with SearchIndex(filled) as index:
        index.rebuild_full()
        conn = index.store.conn
        assert conn.execute("SELECT count(*) FROM cache.vectors").fetchone()[0] == 0
        before = dict(
            conn.execute(
                "SELECT c.content_hash, v.embedding FROM chunks c "
                "JOIN chunks_vecplain v ON v.id = c.id"
            )
        )
        again = index.rebuild_full()
        assert again.embedded == index.store.count("chunks") > 0
        after = dict(
            conn.execute(
                "SELECT c.content_hash, v.embedding FROM chunks c "
                "JOIN chunks_vecplain v ON v.id = c.id"
            )
        )
        assert after == before


def test_openai_embedder_against_loopback_server(filled: MemoryRepo, openai_server) -> None:
    emb = OpenAIEmbedder(
        "text-embedding-3-small", 64, base_url=openai_server.base_url, batch_size=4, backoff=0.01
    )
    with SearchIndex(filled, embedder=emb) as index:
        report = index.rebuild_full()
        # a text is embedded once however many chunks share it (short transcripts' windows do)
        n_texts = index.store.conn.execute(
            "SELECT count(DISTINCT chunk_text(f.chunks_z, c.text_start, c.text_len)) "
            "FROM chunks c JOIN files f ON f.path = c.path"
        ).fetchone()[0]
        assert report.embedded == n_texts > 4
        bodies = openai_server.embedding_bodies()
        assert len(bodies) >= 2
        assert all(len(b["input"]) <= 4 for b in bodies)
        assert bodies[0]["dimensions"] == 64
        hits = index.search("sqlite vec extension", limit=2, explain=True)
        assert hits
        assert hits[0].explain["merge"] == "weighted"  # auto, with a semantic embedder
        before = len(openai_server.embedding_bodies())
        again = index.rebuild_full()
        assert again.embedded == 0
        assert len(openai_server.embedding_bodies()) == before  # cached: no request at all


def test_openai_embedder_retries_then_fails_clearly(openai_server) -> None:
    from autopoiesis.errors import EmbedderError

    openai_server.enqueue_embeddings(
        {"status": 500, "message": "boom"}, {"status": 429, "headers": {"Retry-After": "0"}}
    )
    emb = OpenAIEmbedder(
        "text-embedding-3-small", 16, base_url=openai_server.base_url, backoff=0.01
    )
    assert len(emb.embed(["hello"])[0]) == 16 * 4
    openai_server.enqueue_embeddings(*[{"status": 503}] * 4)
    emb2 = OpenAIEmbedder(
        "text-embedding-3-small", 16, base_url=openai_server.base_url, max_retries=2, backoff=0.01
    )
    with pytest.raises(EmbedderError, match="did not answer"):
        emb2.embed(["x"])


def test_an_embeddings_redirect_to_another_host_is_not_followed(openai_server) -> None:
    """Like a chat call's: the texts of the memory go only to the approved endpoint."""
    from autopoiesis.errors import EmbedderError
    from autopoiesis.testing.openai_server import OpenAIServer

    with OpenAIServer() as elsewhere:
        target = elsewhere.base_url + "/embeddings"
        openai_server.enqueue_embeddings(
            {"status": 308, "raw": "", "headers": {"Location": target}}
        )
        emb = OpenAIEmbedder("m", 16, base_url=openai_server.base_url, max_retries=0)
        with pytest.raises(EmbedderError, match="redirects to"):
            emb.embed(["what the memory holds"])
        assert elsewhere.embedding_bodies() == []


def _openai_embedder_repo(repo: MemoryRepo, base_url: str, **llm: object) -> None:
    """REPO's memory-config.yaml: search.embedder openai at BASE_URL (16 dimensions), the
    LLM settings LLM, approved on this machine as its user would."""
    from autopoiesis.core.approval import approve
    from autopoiesis.core.config import load_tracked_config

    lines = ["llm:", "  provider: openai", f"  base_url: {base_url}"]
    lines += [f"  {k}: {json.dumps(v)}" for k, v in llm.items()]
    lines += ["search:", "  embedder: openai", "  embedding_model: m", "  embedding_dimensions: 16"]
    (repo.root / "memory-config.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    approve(repo.root, load_tracked_config(repo.root))


def test_a_trickling_embeddings_server_costs_the_deadline_then_search_answers_with_grep(
    filled: MemoryRepo, openai_server, cli
) -> None:
    """The openai client's timeout is per read: an embeddings reply sent one byte at a time
    held `search` (and `compile`, and the background index sync) for as long as the server
    liked. A request now ends by its deadline (llm.deadline_seconds here) and search
    answers through git grep, saying why."""
    _openai_embedder_repo(
        filled, openai_server.base_url, timeout_seconds=5, max_retries=1, deadline_seconds=0.5
    )
    cli("index", "rebuild", repo=filled, check=True)
    # the query's ~200-byte reply at 0.1 s a byte: 20 s unbounded
    openai_server.default_embeddings = lambda body: {"trickle": 0.1, **default_embeddings(body)}
    done = cli("search", "blue-green deploys", repo=filled)
    assert done.returncode == 0, done.stderr
    assert "knowledge/projects/infra/context.md" in done.stdout
    assert "deadline of 0.5 s" in done.stderr and "git grep" in done.stderr, done.stderr
    assert len(openai_server.embedding_bodies()) >= 2  # the rebuild's, then the query's


def test_an_embeddings_reply_far_larger_than_its_vectors_is_refused_unread(
    openai_server,
) -> None:
    from autopoiesis.errors import EmbedderError

    openai_server.enqueue_embeddings({"content_bytes": 50 * 1024 * 1024})
    emb = OpenAIEmbedder("text-embedding-3-small", 16, base_url=openai_server.base_url)
    with pytest.raises(EmbedderError, match="over 4 MB"):
        emb.embed(["hello"])
    assert len(openai_server.embedding_bodies()) == 1  # not retried


def test_neural_embedders_skip_cleanly_when_absent() -> None:
    from autopoiesis.errors import EmbedderError
    from autopoiesis.index.embedders import (
        FastEmbedEmbedder,
        SentenceTransformerEmbedder,
    )

    for cls, package in (
        (FastEmbedEmbedder, "fastembed"),
        (SentenceTransformerEmbedder, "sentence_transformers"),
    ):
        try:
            __import__(package)
        except ImportError:
            with pytest.raises(EmbedderError, match="pip install"):
                cls("some-model")


# ── fallback and corruption ──
def test_deleted_index_falls_back_to_git_grep(filled: MemoryRepo) -> None:
    assert not filled.index_path.exists()
    outcome = search_outcome("blue-green deploys", repo=filled)
    assert outcome.source in ("git grep", "ripgrep")
    assert outcome.notices
    assert outcome.results[0].path == "knowledge/projects/infra/context.md"
    with pytest.warns(IndexFallbackWarning):
        assert search("sqlite", repo=filled)


def test_corrupt_index_is_moved_aside_and_rebuilt(filled: MemoryRepo) -> None:
    with SearchIndex(filled) as index:
        index.catch_up()
    filled.index_path.write_bytes(b"this is not a database" * 100)
    outcome = search_outcome("blue-green deploys", repo=filled)
    assert outcome.source == "index"
    assert any("corrupt" in n for n in outcome.notices)
    assert outcome.results[0].path == "knowledge/projects/infra/context.md"
    assert list(filled.root.glob("memory.db.corrupt-*"))
    assert "memory.db.corrupt-" in (filled.root / ".gitignore").read_text() or True


def test_unreadable_index_falls_back(filled: MemoryRepo) -> None:
    with SearchIndex(filled) as index:
        index.catch_up()
    if os.geteuid() == 0:
        # root reads any file, but nobody can open a directory as a database
        filled.index_path.unlink()
        filled.index_path.mkdir()
    else:
        filled.index_path.chmod(0)
    try:
        outcome = search_outcome("blue-green", repo=filled)
        assert outcome.results
        assert outcome.notices
    finally:
        if filled.index_path.is_dir():
            filled.index_path.rmdir()
        else:
            filled.index_path.chmod(0o644)


def test_two_processes_indexing_at_once(filled: MemoryRepo) -> None:
    for i in range(30):
        write(filled, f"knowledge/reference/n{i}.md", f"# N{i}\nparallel note {i}\n")
    cmd = [sys.executable, "-m", "autopoiesis.index.sync", "--root", str(filled.root), "--rebuild"]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    with SearchIndex(filled) as index:
        files = index.store.conn.execute("SELECT count(*) FROM files").fetchone()[0]
        chunks = index.store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        vec = index.store.conn.execute(f"SELECT count(*) FROM {index.store.vec_table}").fetchone()[
            0
        ]
        fts = index.store.conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
        assert files == len(list(filled.iter_markdown()))
        assert chunks == vec == fts


# ── CLI ──
def test_cli_search_json_batch_status_doctor(filled: MemoryRepo, tmp_path: Path) -> None:
    from autopoiesis.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["-C", str(filled.root), "index", "rebuild"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app, ["-C", str(filled.root), "search", "blue-green deploys", "--json", "--limit", "2"]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data[0]["path"] == "knowledge/projects/infra/context.md"
    assert "start_line" in data[0]
    r = runner.invoke(
        app, ["-C", str(filled.root), "search", "sqlite", "--explain", "--category", "conversation"]
    )
    assert r.exit_code == 0
    assert "explain: merge=weighted" in r.stdout  # auto, with the offline embedder
    r = runner.invoke(
        app, ["-C", str(filled.root), "search", "sqlite", "--explain", "--merge", "rrf"]
    )
    assert r.exit_code == 0
    assert "explain: merge=rrf" in r.stdout
    r = runner.invoke(app, ["-C", str(filled.root), "search", "sqlite", "--merge", "best"])
    assert r.exit_code == 2
    assert "use auto, rrf or weighted" in r.output
    assert "Traceback" not in r.output
    queries = tmp_path / "q.txt"
    queries.write_text('sqlite\n"(NOT\ngardening calendar\n', encoding="utf-8")
    r = runner.invoke(app, ["-C", str(filled.root), "search", "--batch", str(queries), "--json"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.strip().split("\n")
    assert len(lines) == 3
    assert all(isinstance(json.loads(x), list) for x in lines)
    r = runner.invoke(app, ["-C", str(filled.root), "index", "status"])
    assert r.exit_code == 0
    assert "fresh" in r.stdout
    r = runner.invoke(app, ["-C", str(filled.root), "doctor", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["sqlite_vec_loaded"] is True
    assert doc["files_in_repo"] == doc["rows_in_index"]
    assert doc["sqlite_module"] in ("sqlite3", "pysqlite3")
    assert doc["embedder"]["name"] == "offline"


@pytest.mark.slow
def test_search_batch_reads_odd_bytes_and_refuses_a_missing_file(
    filled: MemoryRepo, tmp_path: Path
) -> None:
    """Bytes that are not UTF-8 cost their query a character, not the batch: one JSON line
    out for every line in, from a file and from stdin; a missing file is a clear error."""
    root = str(filled.root)
    queries = tmp_path / "q.txt"
    queries.write_bytes(b"sqlite\nsql\xffite \xfe\xfd\n\n" + b"a" * 5000 + b"\n")
    for source, stdin in ((str(queries), None), ("-", queries.read_bytes())):
        r = subprocess.run(
            [sys.executable, "-m", "autopoiesis", "-C", root, "search", "--batch", source],
            input=stdin,
            capture_output=True,
            env={**os.environ, "AUTOPOIESIS_NO_DAEMON": "1"},
        )
        assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
        lines = [json.loads(x) for x in r.stdout.decode("utf-8").splitlines()]
        assert len(lines) == 4 and lines[0] and lines[2] == []
        assert any(
            "sqlite" in hit["snippet"].lower() for hit in lines[1]
        )  # the rest of the line still searched
    for missing, said in ((tmp_path / "nope.txt", "no such file"), (tmp_path, "not a file")):
        r = subprocess.run(
            [sys.executable, "-m", "autopoiesis", "-C", root, "search", "--batch", str(missing)],
            capture_output=True,
            text=True,
            env={**os.environ, "AUTOPOIESIS_NO_DAEMON": "1"},
        )
        assert (
            r.returncode == 2
            and f"--batch {missing}: {said}." in r.stderr
            and "Traceback" not in r.stderr
        )
    closed = subprocess.run(
        ["sh", "-c", '"$0" -m autopoiesis -C "$1" search --batch - <&-', sys.executable, root],
        capture_output=True,
        text=True,
        env={**os.environ, "AUTOPOIESIS_NO_DAEMON": "1"},
    )
    assert (
        closed.returncode == 2
        and "stdin is closed; pipe the lines into it" in closed.stderr
        and "Traceback" not in closed.stderr
    )


def test_hook_path_stays_light() -> None:
    code = "import sys, autopoiesis.index.sync, autopoiesis.index; print(sorted(m for m in ('numpy','sklearn','openai') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_a_common_word_fills_the_results_its_rare_neighbour_leaves_short(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "deploy orelmorlo": orelmorlo is in two notes, deploy in more than half of them and
    left out of the ranking. Ten results asked, two found: the notes that say deploy fill
    the rest, as BM25 ranks them with it, after the two; the full KNN (the fuzzy fallback
    for a word in no chunk, 50 ms at 40,000 chunks) is not run, by either road."""
    from autopoiesis.index import postings

    monkeypatch.setattr(postings, "LISTED_MIN", 2)  # so that the arrays road has lists
    for i in range(30):
        said = " We deploy on Fridays." * (1 + i % 3) if i % 10 else " Retro notes."
        if i in (3, 7):
            said += " The orelmorlo service."
        write(memory_repo, f"knowledge/reference/n{i}.md", f"# Weekly {i}\n\nTeam notes.{said}\n")
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
        calls: list[int] = []
        real_knn = index.query.knn
        monkeypatch.setattr(
            index.query, "knn", lambda *a, **k: calls.append(1) or real_knn(*a, **k)
        )
        assert index.query.bm25.rank(["deploy", "orelmorlo"], 100).left_out == ("deploy",)
        for arrays_from in (1000, 1):  # FTS5's road, then the arrays'
            index.query.bm25.arrays_from = arrays_from
            got = index.search("deploy orelmorlo", limit=10)
            assert not calls
            paths = [r.path for r in got]
            assert set(paths[:2]) == {"knowledge/reference/n3.md", "knowledge/reference/n7.md"}
            assert len(paths) == 10
            assert all("deploy" in r.snippet for r in got[2:]), [r.snippet for r in got]
        assert index.search("orelmorlo servicx", limit=10)
        assert calls  # a word no chunk holds: still the fuzzy fallback


def test_lexical_embedder_rescores_bm25_candidates(
    filled: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hashing embedder re-scores BM25's candidates by id lookups instead of a
    full KNN scan, and keeps the KNN as its fallback when BM25 finds too little."""
    from autopoiesis.index import query

    with SearchIndex(filled) as index:
        index.catch_up()
        assert index.store.meta("vector_store") == "plain:i16"
        calls: list[int] = []
        real_knn = index.query.knn
        monkeypatch.setattr(
            index.query, "knn", lambda *a, **k: calls.append(1) or real_knn(*a, **k)
        )
        monkeypatch.setattr(query, "RERANK_MIN_CANDIDATES", 1)
        hits = index.search("sqlite embeddings", limit=3, explain=True)
        assert hits
        assert not calls
        assert hits[0].explain["vector_similarity"] is not None
        assert hits[0].explain["bm25"] is not None
        monkeypatch.setattr(query, "RERANK_MIN_CANDIDATES", 1000)
        found = len(index.query.bm25.rank(["sqlite", "embeddings"], 100).ids)
        assert 3 <= found < 1000
        assert index.search("sqlite embeddings", limit=3)
        assert not calls  # BM25 fills the three results and knows every word: no full KNN
        assert index.search("sqlite embeddings", limit=found + 1)
        assert calls  # fewer BM25 hits than results asked for: full KNN
        calls.clear()
        typo = index.search("sqlite embedingz", limit=3)
        assert calls  # a word no chunk holds: the fuzzy fallback
        assert "embeddings" in " ".join(h.snippet for h in typo) or any(
            "embedding" in h.path for h in typo
        )
        # the id lookups give the same distances as the full KNN
        q = index.embedder.embed_query("sqlite embeddings")
        knn = dict(real_knn(q, 50, None))
        for cid, d in index.query.vec_distances(list(knn), q):
            assert abs(knn[cid] - d) < 1e-5


def test_background_sync_never_replaces_the_embedder_a_program_gave(filled: MemoryRepo) -> None:
    """An index built with an embedder its program passed in is left alone by the
    background sync (which only knows the configured embedder): no rebuild with another
    fingerprint, no mixing of two kinds of vectors. The program itself keeps it fresh."""
    with SearchIndex(filled, embedder=HashingEmbedder(64)) as index:
        index.rebuild_full()
    write(filled, "knowledge/reference/later.md", "# Later\n\nThe narwhal migration note.\n")
    cmd = [sys.executable, "-m", "autopoiesis.index.sync", "--root", str(filled.root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with SearchIndex(filled, embedder=HashingEmbedder(64)) as index:
        st = index.status()
        assert (st.embedder, st.dimensions) == ("offline:hash-v3:64", 64)
        assert "knowledge/reference/later.md" in st.stale_paths  # not written by the sync
        assert "not synced" in proc.stdout
        assert "autopoiesis index rebuild" in proc.stdout
        hits = index.search("narwhal migration", limit=1)  # its own program catches it up
        assert hits
        assert hits[0].path == "knowledge/reference/later.md"
        assert (index.status().embedder, index.status().dimensions) == ("offline:hash-v3:64", 64)


def test_embedders_are_made_by_name_from_the_registry(filled: MemoryRepo) -> None:
    from autopoiesis.errors import ConfigError
    from autopoiesis.index.embedders import (
        Embedder,
        embedder_names,
        make_embedder,
        register_embedder,
    )

    assert embedder_names()[:4] == ("offline", "openai", "fastembed", "sentence-transformers")
    made = make_embedder("offline", filled.config)
    assert isinstance(made, Embedder)
    assert made.fingerprint == "offline:hash-v3:512"
    assert made.preferred_merge == "weighted"
    register_embedder("test-tiny", lambda config: HashingEmbedder(32))
    assert make_embedder("test-tiny", filled.config).dimensions == 32
    with pytest.raises(ConfigError, match="unknown search.embedder 'nope'; use offline, openai"):
        make_embedder("nope", filled.config)
