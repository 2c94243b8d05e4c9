"""memory.db's schema and identity: the tables, the vector table's layout, what to do
with a file that is not a database. The connection itself (SQLite with sqlite-vec loaded)
is core.sqlite's.

Schema (design §7.2, by chunk rather than by file):
  index_meta(key, value)       identity (schema, chunker, embedder fingerprint, dims) and
                               sync state (commit, dirty paths)
  files(path, category, ...)   one row per indexed file (the design's knowledge_meta)
  chunks(id, path, ...)        one row per chunk: a transcript turn, a heading section
  chunks_fts                   FTS5 over chunk text, rowid = chunks.id
  chunks_vec                   sqlite-vec vec0, rowid = chunks.id, cosine distance,
                               category as a metadata column so KNN can filter on it
The embedding cache lives in a separate file (the state file `embed_cache`), attached as
`cache`: deleting or replacing memory.db (rebuild, corruption) never loses it.
"""

from __future__ import annotations

import os
from pathlib import Path

from autopoiesis.core.clock import utc_now

SCHEMA_VERSION = "1"


class IndexCorruptError(Exception):
    """memory.db is not a usable database (internal: callers move it aside)."""


BASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    category TEXT NOT NULL,
    modified REAL NOT NULL,          -- mtime (s)
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    token_count INTEGER,
    line_count INTEGER,
    tags TEXT,                       -- JSON array
    title TEXT,
    last_indexed REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_files_category ON files(category);
CREATE INDEX IF NOT EXISTS idx_files_modified ON files(modified);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    category TEXT NOT NULL,
    kind TEXT NOT NULL,              -- turn | section | file
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    turn_time TEXT,                  -- ISO-8601 UTC, transcripts only
    heading TEXT,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_chunks_path ON chunks(path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, tokenize='porter unicode61');
"""

CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS cache.embeddings (
    fingerprint TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (fingerprint, content_hash)
) WITHOUT ROWID;
"""


# vec0 keeps vectors in blobs of `chunk_size` rows. A KNN scan is fastest with big blobs
# (the default 1024), but reading one row's vector walks its blob's overflow pages: ~0.3 ms
# each at 512 dimensions, 30 ms to re-score 100 candidates. An index that re-scores
# candidates (a lexical embedder) uses small blobs: 100 lookups in ~4 ms, KNN ~30% slower.
VEC_CHUNK_SIZE = 1024
VEC_CHUNK_SIZE_RERANK = 64


def vec_table_sql(dimensions: int, chunk_size: int = VEC_CHUNK_SIZE) -> str:
    return (
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0("
        f"embedding float[{int(dimensions)}] distance_metric=cosine, category text, chunk_size={int(chunk_size)})"
    )


# Without sqlite-vec the vectors still have to live somewhere: a plain table, read by a
# bounded in-memory cosine scan.
PLAIN_VEC_SQL = "CREATE TABLE IF NOT EXISTS chunks_vecplain (id INTEGER PRIMARY KEY, category TEXT, embedding BLOB NOT NULL)"


def move_aside(db_path: Path) -> Path:
    """Rename a corrupt memory.db (and its WAL files) to memory.db.corrupt-<time>; the
    gitignore template ignores those names. Returns the new name."""
    stamp = utc_now().strftime("%Y%m%d-%H%M%S")
    target = db_path.with_name(f"{db_path.name}.corrupt-{stamp}-{os.getpid()}")
    os.replace(db_path, target)
    for suffix in ("-wal", "-shm"):
        side = db_path.with_name(db_path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target
