"""The backlinks table: outgoing links, backlinks and broken links of the notes, kept
fresh with the files; `autopoiesis links`, doctor's broken-link report, and the compiler's
P3 taking a note a hit links to."""

from __future__ import annotations

import json

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.sqlite import sqlite_module
from autopoiesis.index import SearchIndex
from autopoiesis.index.db import SCHEMA_VERSION


def _note(repo: MemoryRepo, rel: str, text: str) -> None:
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _notes(repo: MemoryRepo) -> None:
    _note(repo, "knowledge/people/ann-lee.md", "# Ann Lee\n\n## Role\n- Runs the billing team.\n")
    _note(
        repo,
        "knowledge/projects/billing/context.md",
        "# billing\n\n- Retries go through the queue; ask [[ann-lee|Ann]] "
        "([[ann-lee#Role]]).\n- See [[knowledge/procedures/deploys]] and [[nowhere]].\n"
        "- `[[in-code]]` is not a link; ![[chart.png]] is an attachment.\n",
    )
    _note(repo, "knowledge/procedures/deploys.md", "# Deploys\n\n- Ship on Tuesdays.\n")


def test_outgoing_backlinks_and_broken_links(memory_repo: MemoryRepo) -> None:
    _notes(memory_repo)
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
        out, incoming = index.links("knowledge/projects/billing/context.md")
        assert [(x.target, x.heading, x.alias, x.resolved) for x in out] == [
            ("ann-lee", None, "Ann", "knowledge/people/ann-lee.md"),
            ("ann-lee", "Role", None, "knowledge/people/ann-lee.md"),
            ("knowledge/procedures/deploys", None, None, "knowledge/procedures/deploys.md"),
            ("nowhere", None, None, None),
        ]
        assert incoming == []
        _, back = index.links("knowledge/people/ann-lee.md")
        assert {x.source for x in back} == {"knowledge/projects/billing/context.md"}
        assert [x.target for x in index.broken_links()] == ["nowhere"]
        # a note written later is found by the link that was broken, without touching it
        _note(memory_repo, "knowledge/reference/nowhere.md", "# Nowhere\n")
        assert index.broken_links() == []
        # the linking file changed: its old links are gone with it
        _note(memory_repo, "knowledge/projects/billing/context.md", "# billing\n\nNo links.\n")
        _, back = index.links("knowledge/people/ann-lee.md")
        assert back == []


def test_an_index_of_the_previous_schema_is_rebuilt_with_the_links(
    memory_repo: MemoryRepo,
) -> None:
    _notes(memory_repo)
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    conn = sqlite_module().connect(memory_repo.index_path)  # the index's own SQLite
    conn.execute("DELETE FROM links")
    conn.execute("UPDATE index_meta SET value = '4' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with SearchIndex(memory_repo) as index:
        assert index.needs_rebuild()
        index.catch_up()
        assert index.store.meta("schema_version") == SCHEMA_VERSION
        assert [x.target for x in index.broken_links()] == ["nowhere"]


def test_an_index_of_schema_5_is_rebuilt_into_the_compressed_layout(
    memory_repo: MemoryRepo,
) -> None:
    """Schema 5 kept each chunk's text in chunks and in chunks_fts, and the plain vectors as
    float32 without their length: the next search rebuilds it into schema 6 (the texts in
    files.chunks_z, the FTS5 table without its copy), the links kept, and gives the space
    back."""
    _notes(memory_repo)
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    conn = sqlite_module().connect(memory_repo.index_path)  # a SQLite that reads chunks_fts
    conn.executescript(
        """
        DROP TABLE chunks_fts; DROP TABLE chunks; DROP TABLE IF EXISTS chunks_vecplain;
        ALTER TABLE files DROP COLUMN chunks_z;
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL, category TEXT NOT
          NULL, kind TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
          turn_time TEXT, heading TEXT, text TEXT NOT NULL, content_hash TEXT NOT NULL,
          body_hash TEXT NOT NULL DEFAULT '');
        CREATE VIRTUAL TABLE chunks_fts USING fts5(text);
        CREATE TABLE chunks_vecplain (id INTEGER PRIMARY KEY, category TEXT, embedding BLOB
          NOT NULL);
        INSERT INTO chunks VALUES (1, 'knowledge/procedures/deploys.md', 'procedures',
          'section', 1, 3, NULL, 'Deploys', 'Ship on Tuesdays.', 'h', '');
        INSERT INTO chunks_fts(rowid, text) VALUES (1, 'Ship on Tuesdays.');
        UPDATE index_meta SET value = '5' WHERE key = 'schema_version';
        """
    )
    conn.commit()
    conn.close()
    with SearchIndex(memory_repo) as index:
        assert index.needs_rebuild()
        hits = index.search("ship on tuesdays")
        assert hits and hits[0].path == "knowledge/procedures/deploys.md"
        assert "Tuesdays" in hits[0].snippet
        assert index.store.meta("schema_version") == SCHEMA_VERSION == "9"
        columns = {r[1] for r in index.store.conn.execute("PRAGMA table_info(chunks)")}
        assert "text" not in columns
        assert {"text_start", "text_len", "own_start", "own_end"} <= columns
        assert [x.target for x in index.broken_links()] == ["nowhere"]


def test_links_command_and_doctor_report(memory_repo: MemoryRepo, cli) -> None:
    _notes(memory_repo)
    shown = cli("links", "knowledge/people/ann-lee.md", repo=memory_repo, check=True).stdout
    assert "links to it (2)" in shown and "knowledge/projects/billing/context.md:3" in shown
    data = json.loads(
        cli("links", "knowledge/projects/billing/context.md", "--json", repo=memory_repo).stdout
    )
    assert [x["resolved"] for x in data["outgoing"]][-1] is None
    doctor = cli("doctor", repo=memory_repo)
    assert doctor.returncode == 1
    assert "broken link knowledge/projects/billing/context.md:4: [[nowhere]]" in doctor.stdout


def test_compiler_takes_a_note_a_hit_links_to(memory_repo: MemoryRepo) -> None:
    """P3: the note a hit links to is a candidate though the message shares no word with it."""
    from autopoiesis.memory.facade import Memory

    _note(
        memory_repo,
        "knowledge/projects/billing/context.md",
        "# billing\n\n- The invoice retries are handled as in [[runbook-zeta]].\n",
    )
    _note(
        memory_repo,
        "knowledge/procedures/runbook-zeta.md",
        "# Runbook zeta\n\n- Drain the spool, then restart the worker pool.\n",
    )
    memory = Memory(memory_repo)
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    context, _ = memory.compile("how are invoice retries handled?")
    included = {s.path for s in context.sections if s.included}
    assert "knowledge/projects/billing/context.md" in included
    assert "knowledge/procedures/runbook-zeta.md" in included
    item = next(s for s in context.sections if s.path == "knowledge/procedures/runbook-zeta.md")
    assert "linked from knowledge/projects/billing/context.md" in item.reason
    assert "Drain the spool" in context.prompt
