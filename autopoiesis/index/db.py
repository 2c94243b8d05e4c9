"""memory.db: the SQLite connection (with sqlite-vec loaded), the schema, and the
index's identity.

Which SQLite: the standard library's `sqlite3` when it can load extensions, else
`pysqlite3` (the `pysqlite3-binary` wheel bundles a recent SQLite that can). Many Python
builds (macOS system Python, some pyenv builds, this machine) lack
`enable_load_extension`, so the fallback is the common case, not the exception.

sqlite-vec is loaded from the `sqlite_vec` package's folder *without importing the
package*: its `__init__` pulls in numpy (~100 ms), which the search CLI cannot afford.

Schema (design §7.2, by chunk rather than by file):
  index_meta(key, value)       identity (schema, chunker, embedder fingerprint, dims) and
                               sync state (commit, dirty paths)
  files(path, category, ...)   one row per indexed file (the design's knowledge_meta)
  chunks(id, path, ...)        one row per chunk: a transcript turn, a heading section
  chunks_fts                   FTS5 over chunk text, rowid = chunks.id
  chunks_vec                   sqlite-vec vec0, rowid = chunks.id, cosine distance,
                               category as a metadata column so KNN can filter on it
The embedding cache lives in a separate file, `.autopoiesis/embed-cache.db`, attached as
`cache`: deleting or replacing memory.db (rebuild, corruption) never loses it.
"""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

SCHEMA_VERSION = "1"


@dataclass(frozen=True)
class SQLiteInfo:
    """What `autopoiesis doctor` reports about the SQLite in use."""

    module: str  # "sqlite3" or "pysqlite3"
    sqlite_version: str
    sqlite_vec_loaded: bool
    sqlite_vec_version: str | None
    error: str | None = None


class IndexCorruptError(Exception):
    """memory.db is not a usable database (internal: callers move it aside)."""


def sqlite_vec_path() -> str | None:
    """Path of the sqlite-vec loadable extension (no suffix), found without importing numpy."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


def _can_load_extensions(module: ModuleType) -> bool:
    return hasattr(module.Connection, "enable_load_extension")


def sqlite_module() -> ModuleType:
    """The DB-API module to use: stdlib when it can load extensions, else pysqlite3."""
    import sqlite3

    if _can_load_extensions(sqlite3):
        return sqlite3
    try:
        import pysqlite3.dbapi2 as pysqlite3  # type: ignore[import-not-found]
    except ImportError:
        return sqlite3  # no extensions at all: search falls back to in-memory cosine
    return pysqlite3


def _load_vec(conn: Any) -> tuple[bool, str | None, str | None]:
    path = sqlite_vec_path()
    if path is None:
        return False, None, "the sqlite-vec package is not installed (pip install sqlite-vec)"
    if not hasattr(conn, "enable_load_extension"):
        return False, None, "this Python's sqlite3 cannot load extensions and pysqlite3-binary is not installed"
    try:
        conn.enable_load_extension(True)
        try:
            conn.load_extension(path)
        finally:
            conn.enable_load_extension(False)
        version = conn.execute("SELECT vec_version()").fetchone()[0]
        return True, version, None
    except Exception as exc:  # a wrong-architecture binary, a locked-down SQLite, ...
        return False, None, f"sqlite-vec did not load: {exc}"


def connect(path: str | os.PathLike[str], *, timeout: float = 30.0) -> tuple[Any, SQLiteInfo]:
    """Open PATH with sqlite-vec loaded when possible. WAL lets searches read while a
    (background) sync writes; busy_timeout makes concurrent writers wait, not fail."""
    module = sqlite_module()
    conn = module.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    loaded, version, error = _load_vec(conn)
    info = SQLiteInfo(
        module="pysqlite3" if module.__name__.startswith("pysqlite3") else "sqlite3",
        sqlite_version=module.sqlite_version,
        sqlite_vec_loaded=loaded,
        sqlite_vec_version=version,
        error=error,
    )
    return conn, info


def probe_info() -> SQLiteInfo:
    """SQLite facts for `doctor`, from an in-memory database."""
    conn, info = connect(":memory:")
    conn.close()
    return info


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


def check_integrity(conn: Any) -> None:
    """Raise IndexCorruptError unless memory.db reads as a database with our tables."""
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
        if row is None or row[0] != "ok":
            raise IndexCorruptError(f"integrity check failed: {row[0] if row else 'no answer'}")
        conn.execute("SELECT count(*) FROM index_meta").fetchone()
    except IndexCorruptError:
        raise
    except Exception as exc:
        raise IndexCorruptError(str(exc)) from exc


def move_aside(db_path: Path) -> Path:
    """Rename a corrupt memory.db (and its WAL files) to memory.db.corrupt-<time>; the
    gitignore template ignores those names. Returns the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = db_path.with_name(f"{db_path.name}.corrupt-{stamp}-{os.getpid()}")
    os.replace(db_path, target)
    for suffix in ("-wal", "-shm"):
        side = db_path.with_name(db_path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target
