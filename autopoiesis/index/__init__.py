"""The search index (docs/design.md#search): `SearchIndex`, `search`, `SearchResult`.

Modules: searchindex (the facade), store (memory.db's rows and the embedding cache),
freshness (catch-up against git), query (ranking), lexical (BM25, by FTS5 or by the term
postings), postings (each common token's chunks), fts (FTS5's tokens, counts and bm25
formula), fallback (git grep / ripgrep), background (the post-commit sync and the inotify
watcher), sync (the sync's entry point), chunking, text (query terms), db (the schema),
embedders (the Embedder plugins).
"""

from __future__ import annotations

from autopoiesis.index.fallback import IndexFallbackWarning
from autopoiesis.index.query import SearchResult
from autopoiesis.index.searchindex import (
    SearchIndex,
    SearchOutcome,
    search,
    search_outcome,
)

__all__ = [
    "IndexFallbackWarning",
    "SearchIndex",
    "SearchOutcome",
    "SearchResult",
    "search",
    "search_outcome",
]
