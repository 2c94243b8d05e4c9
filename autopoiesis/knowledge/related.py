"""The existing entries related to a transcript: what an LLM extractor is shown before it
proposes anything (docs/design.md#extraction-bookkeeping's classifier searches memory before it
appends or
supersedes, and is biased to doing nothing).

A search, entry by entry: the live entries of the current-state knowledge files go into
an in-memory SQLite FTS5 table (BM25, porter stemming), and the transcript's most
frequent content words, as the search index builds its queries (`index.text`), find the
best of them. Entries, not chunks: the model is asked to name the entry a new fact
replaces, by its id.
"""

from __future__ import annotations

from collections import Counter

from autopoiesis.core.paths import INDEX_FILES
from autopoiesis.core.private import may_reach_model
from autopoiesis.core.sqlite import sqlite_module
from autopoiesis.core.text import words
from autopoiesis.index.text import MAX_QUERY_TERMS, SEARCH_STOPWORDS, fts_match
from autopoiesis.knowledge.catalog import one_scope
from autopoiesis.knowledge.extractors.base import KnownEntry
from autopoiesis.knowledge.writer import KnowledgeWriter

RELATED_LIMIT = 15


def query_terms_of(text: str, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """The most frequent content words of TEXT (a whole transcript): its topic."""
    counts = Counter(
        w
        for w in words(text[:200_000])
        if len(w) > 2 and w not in SEARCH_STOPWORDS and not w.isdigit()
    )
    return [w for w, _ in counts.most_common(limit)]


def related_entries(
    writer: KnowledgeWriter, text: str, limit: int = RELATED_LIMIT, project: str | None = None
) -> list[KnownEntry]:
    """The live current-state entries that best match TEXT, best first (one per id: a
    derived line and its canonical entry are one fact). With PROJECT (the session ran in
    it), only its entries and global ones: another codebase's facts are not this session's
    to skip as known or to replace (the writer would not let them be its target)."""
    entries: dict[str, KnownEntry] = {}
    private = writer.repo.private_patterns()
    to_model = writer.repo.config.private.model_paths
    for path, _, e in writer.live_entries():
        if not may_reach_model(path, private, to_model):
            continue  # shown to a model: a private entry only where private.model_paths says
        if not one_scope(project, writer.entry_project(path, e)):
            continue  # another project's (a derived line of MEMORY.md too)
        seen = entries.get(e.id)
        if seen is None or (
            seen.path in INDEX_FILES and path not in INDEX_FILES
        ):  # show the canonical entry
            entries[e.id] = KnownEntry(e.id, path, e.text)
    match = fts_match(query_terms_of(text))
    if not entries or match is None:
        return []
    conn = sqlite_module().connect(":memory:")
    try:
        conn.execute(
            "CREATE VIRTUAL TABLE e USING fts5(id UNINDEXED, body, tokenize='porter unicode61')"
        )
        conn.executemany(
            "INSERT INTO e (id, body) VALUES (?, ?)", [(k.id, k.text) for k in entries.values()]
        )
        rows = conn.execute(
            "SELECT id FROM e WHERE e MATCH ? ORDER BY bm25(e) LIMIT ?", (match, limit)
        ).fetchall()
    finally:
        conn.close()
    return [entries[r[0]] for r in rows]


__all__ = ["RELATED_LIMIT", "query_terms_of", "related_entries"]
