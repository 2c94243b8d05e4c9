"""memory.db's schema and identity: the tables, the vector table's layout, what to do
with a file that is not a database. The connection itself (SQLite with sqlite-vec loaded)
is core.sqlite's.

Schema (docs/design.md#index-schema, by chunk rather than by file):
  index_meta(key, value)       identity (schema, chunker, embedder fingerprint, dims) and
                               sync state (commit, dirty paths)
  files(path, category, ...)   one row per indexed file (the design's knowledge_meta),
                               with the project it is about (projects.py)
  chunks(id, path, ...)        one row per chunk: a transcript turn, a heading section;
                               its text is bytes text_start.. of its file's chunk texts,
                               read with the SQL function
                               chunk_text(files.chunks_z, text_start, text_len)
  chunks_fts                   FTS5 over chunk text, rowid = chunks.id; contentless (it
                               keeps no copy of the text) where SQLite can delete from a
                               contentless table (3.43+)
  chunks_vec                   sqlite-vec vec0, rowid = chunks.id, cosine distance,
                               category as a metadata column so KNN can filter on it
  chunks_vecplain              the same as plain rows (id = chunks.id), for a lexical
                               embedder or without sqlite-vec: 16-bit whole numbers as
                               two int8 halves, with their length (plainvec.py)
  term_postings*               each common token's chunks, frequencies and lengths
                               (postings.py: exact BM25 without FTS5's per-row scoring)
  links                        each `[[wikilink]]` of a note: its file, line, target and the
                               target's name (links.py: outgoing, backlinks, broken ones);
                               files.link_name is the name a link resolves a file by
The embedding cache lives in a separate file (the state file `embed_cache`), attached as
`cache`: deleting or replacing memory.db (rebuild, corruption) never loses it. A lexical
embedder's vectors are not cached: computing one costs less than the 2 KB it would keep.

What the text costs (docs/scale.md): chunks overlap (a turn's chunk holds its neighbours),
so their text is about twice the files'; a file's chunk texts are compressed together
(files.chunks_z, zlib), which takes the overlap out: under half the file's bytes. Before
schema 5 the chunk text was kept twice (chunks, the FTS5 content) and the vectors twice as
float32 (the table and the cache): 15 times the files.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import utc_now
from autopoiesis.index.fts import TOKENIZER
from autopoiesis.index.postings import SCHEMA as POSTINGS_SCHEMA

# 2: term postings (postings.py); a lexical embedder's vectors in plain rows; ctime.
# 3: files.project (projects.py): an index made before it is rebuilt, which fills it in.
# 4: chunks.body_hash (chunking.Chunk): the same pasted text is one search result.
# 5: links and files.link_name (links.py): the backlinks of [[wikilinks]].
# 6: chunk text compressed, chunks_fts contentless, plain vectors 16-bit (plainvec.py).
# 7: chunks.own_start/own_end (chunking.Chunk): a turn chunk's own turn.
# 8: chunks.user_turn (chunking.Chunk) and its partial index.
# 9: chunks.project, its file's files.project (projects.chunk_projects).
SCHEMA_VERSION = "9"


class IndexCorruptError(Exception):
    """memory.db could not be opened (internal: the store diagnoses why)."""


class ForeignTablesError(IndexCorruptError):
    """memory.db opened as a database, but the index's tables could not be made in it: it
    holds tables of the same names and another shape (another program's file, or one a
    far older or newer autopoiesis made). Internal: the store decides what it is."""


# ── what went wrong: corruption is proven, never guessed ──
# An error from SQLite is only a symptom: "database or disk is full" and "attempt to
# write a readonly database" leave a healthy file, and the file is never moved aside for
# them. A file is called corrupt only when SQLite cannot read it as a database at all or
# `PRAGMA quick_check` (every page of every b-tree) says so.
CORRUPT, FULL, READONLY, BUSY, OTHER = "corrupt", "full", "readonly", "busy", "other"
# An intact database whose tables are not the index's (ForeignTablesError): a cache all
# the same, so it is moved aside like a corrupt one, never written into or deleted.
FOREIGN = "foreign"
_PRIMARY = {11: CORRUPT, 26: CORRUPT, 13: FULL, 8: READONLY, 3: READONLY, 5: BUSY, 6: BUSY}
_BY_TEXT = (
    ("malformed", CORRUPT),
    ("not a database", CORRUPT),
    ("disk is full", FULL),
    ("readonly", READONLY),
    ("read-only", READONLY),
    ("database is locked", BUSY),
)


def classify(exc: BaseException) -> str:
    """What an SQLite error says happened: corrupt, full, readonly, busy or other."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _PRIMARY:
        return _PRIMARY[code & 0xFF]
    text = str(exc).lower()
    for needle, kind in _BY_TEXT:
        if needle in text:
            return kind
    if isinstance(exc, OSError):
        import errno

        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return FULL
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return READONLY
    return OTHER


def disk_state(db_path: Path) -> str | None:
    """FULL when the file system holding DB_PATH has (almost) no space left, READONLY when
    it or the folder cannot be written, else None."""
    folder = db_path.parent
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY or not os.access(folder, os.W_OK):
        return READONLY
    if st.f_bavail * st.f_frsize < 256 * 1024:
        return FULL
    return None


def quick_check(db_path: Path) -> tuple[bool | None, str]:
    """(True, "ok") for a file SQLite reads as an intact database, (False, why) for a
    corrupt one, (None, why) when it cannot tell (the file is missing, cannot be opened)."""
    from autopoiesis.core.sqlite import sqlite_module

    if not db_path.is_file():
        return None, "no such file"
    from urllib.parse import quote

    module = sqlite_module()
    try:
        conn = module.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True, timeout=5.0)
    except module.Error as exc:
        return None, str(exc)
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
    except module.Error as exc:
        kind = classify(exc)
        return (False, str(exc)) if kind == CORRUPT else (None, str(exc))
    finally:
        conn.close()
    if rows == ["ok"]:
        return True, "ok"
    return False, "; ".join(str(r) for r in rows)


BASE_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    category TEXT NOT NULL,
    modified REAL NOT NULL,          -- mtime (s)
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL DEFAULT 0,
    size INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    token_count INTEGER,
    line_count INTEGER,
    tags TEXT,                       -- JSON array
    title TEXT,
    last_indexed REAL NOT NULL,      -- when the stat above was taken (store.racy)
    project TEXT,                    -- the project's slug; NULL: global (projects.py)
    link_name TEXT,                  -- the name a [[link]] finds it by (links.py)
    chunks_z BLOB                    -- its chunks' texts, one after another (pack_texts)
);
CREATE INDEX IF NOT EXISTS idx_files_category ON files(category);
CREATE INDEX IF NOT EXISTS idx_files_modified ON files(modified);
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,            -- the file the link is written in
    line INTEGER NOT NULL,
    target TEXT NOT NULL,            -- as written: `maria-lopez`, `knowledge/people/ann`
    name TEXT NOT NULL,              -- the target's last part, as files.link_name
    heading TEXT,
    alias TEXT
);
CREATE INDEX IF NOT EXISTS idx_links_source ON links(source);
CREATE INDEX IF NOT EXISTS idx_links_name ON links(name);
"""
    + POSTINGS_SCHEMA
)
# The tables a rebuild drops and makes again (a schema change may change their columns).
CHUNKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    category TEXT NOT NULL,
    kind TEXT NOT NULL,              -- turn | section
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    turn_time TEXT,                  -- ISO-8601 UTC, transcripts only
    heading TEXT,
    text_start INTEGER NOT NULL,     -- where its text is in files.chunks_z (bytes)
    text_len INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    body_hash TEXT NOT NULL DEFAULT '',  -- a turn chunk's words said again elsewhere
    own_start INTEGER NOT NULL DEFAULT 0,  -- a turn chunk's own turn (0: a section)
    own_end INTEGER NOT NULL DEFAULT 0,
    user_turn INTEGER NOT NULL DEFAULT 0,  -- the user's turn of an agent session
    project TEXT                     -- its file's files.project, read without the file's row
);
CREATE INDEX IF NOT EXISTS idx_chunks_path ON chunks(path);
"""
# Made once the chunks have their columns (a table of an older schema gets them first, see
# create_chunk_tables): the user's turns of agent sessions, which search reads all at once
# (query.QueryEngine: a few thousand ids of an index entry each, not the candidates' rows).
CHUNK_INDEXES = ("CREATE INDEX IF NOT EXISTS idx_chunks_user_turn ON chunks(id) WHERE user_turn",)
CHUNK_TABLES = ("chunks", "chunks_fts")

# SQLite 3.43 deletes rows of a contentless FTS5 table by rowid (contentless_delete):
# then chunks_fts keeps only its index, not a second copy of every chunk's text.
CONTENTLESS_DELETE = (3, 43, 0)


def fts_layout(sqlite_version: str) -> str:
    """ "contentless" when this SQLite can delete from a contentless FTS5 table, else
    "content" (FTS5 keeps its own copy of the text)."""
    try:
        version = tuple(int(p) for p in sqlite_version.split(".")[:3])
    except ValueError:
        return "content"
    return "contentless" if version >= CONTENTLESS_DELETE else "content"


def fts_layout_serves(built: str | None, sqlite_version: str) -> bool:
    """Whether a chunks_fts made with layout BUILT serves this SQLite as it is: "content"
    serves every SQLite, "contentless" one that can delete from it. An index an older
    SQLite made is kept rather than rebuilt to save room: two programs with two SQLites
    sharing one memory.db (a server and the CLI) rebuilt it each time the other had."""
    return built == "content" or built == fts_layout(sqlite_version)


def fts_table_sql(layout: str) -> str:
    options = ", content='', contentless_delete=1" if layout == "contentless" else ""
    return (
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, "
        f"tokenize='{TOKENIZER}'{options})"
    )


def create_chunk_tables(conn: Any, layout: str, *, drop: bool = False) -> None:
    """The chunks and their FTS5 table (with the SQL function chunk_text). DROP: drop
    them first, in the caller's transaction (a rebuild, which may follow a change of their
    columns or options)."""
    conn.create_function("chunk_text", 3, ChunkTexts(), deterministic=True)
    if drop:
        for table in reversed(CHUNK_TABLES):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    for statement in CHUNKS_SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    _add_columns(conn, "chunks")
    for statement in CHUNK_INDEXES:
        conn.execute(statement)
    conn.execute(fts_table_sql(layout))


RECLAIM_SHARE = 8  # free pages over an eighth of a file are given back to the disk


def shrink(conn: Any, lexical_fingerprint: str | None) -> None:
    """After a rebuild: drop a lexical embedder's vectors (LEXICAL_FINGERPRINT) from the
    cache, where an older version kept them, and give the disk back the pages the rebuild
    freed (`reclaim`)."""
    if lexical_fingerprint:
        conn.execute("DELETE FROM cache.vectors WHERE fingerprint = ?", (lexical_fingerprint,))
    for schema in ("main", "cache"):
        reclaim(conn, schema)


def reclaim(conn: Any, schema: str = "main", share: int = RECLAIM_SHARE) -> int:
    """Give the disk back SCHEMA's free pages when they are over 1/SHARE of its file;
    how many there were (0: left as they are). Outside a transaction, under the write lock.

    Free pages are what a big catch-up leaves: FTS5 merges its segments and the postings
    are rebuilt, each freeing the pages of what it replaced. SQLite reuses them for later
    writes, but after a catch-up of 38,000 transcripts they were 38% of a 1.1 GB file.
    VACUUM rewrites the file without them (7 s for that file; it needs room for a copy
    meanwhile). `auto_vacuum=INCREMENTAL` would give them back for less, but it made every
    write of a build ~10% slower; a rewrite after the rare big catch-up costs less."""
    free = conn.execute(f"PRAGMA {schema}.freelist_count").fetchone()[0]
    if free <= conn.execute(f"PRAGMA {schema}.page_count").fetchone()[0] // share:
        return 0
    conn.execute(f"VACUUM {schema}")
    # in WAL mode the rewrite went through the WAL: fold it back and cut it now
    conn.execute(f"PRAGMA {schema}.wal_checkpoint(TRUNCATE)").fetchall()
    return int(free)


def pack_texts(texts: list[str]) -> tuple[bytes, list[tuple[int, int]]]:
    """A file's chunk texts as files.chunks_z keeps them (one zlib stream, UTF-8), and
    where each one is in it: (start, length) in bytes."""
    parts = [t.encode("utf-8", "surrogatepass") for t in texts]
    spans, start = [], 0
    for part in parts:
        spans.append((start, len(part)))
        start += len(part)
    return zlib.compress(b"".join(parts), 6), spans


class ChunkTexts:
    """The SQL function chunk_text(chunks_z, start, length): one chunk's text. The last
    few streams are kept decompressed (a search reads several chunks of one file)."""

    def __init__(self, keep: int = 8):
        self.keep = keep
        self.recent: dict[bytes, bytes] = {}

    def __call__(self, blob: bytes | None, start: int, length: int) -> str | None:
        if blob is None:
            return None
        data = self.recent.get(blob)
        if data is None:
            data = zlib.decompress(blob)
            if len(self.recent) >= self.keep:
                self.recent.pop(next(iter(self.recent)))
            self.recent[blob] = data
        return data[start : start + length].decode("utf-8", "surrogatepass")


# Columns added since schema 1, for a memory.db made before them (its rebuild fills them).
ADDED_COLUMNS = (
    ("files", "ctime_ns", "INTEGER NOT NULL DEFAULT 0"),
    ("files", "project", "TEXT"),
    ("files", "link_name", "TEXT"),
    ("files", "chunks_z", "BLOB"),
    ("chunks", "user_turn", "INTEGER NOT NULL DEFAULT 0"),
    ("chunks", "project", "TEXT"),
)
# Indexes on added columns: made once the columns are there. A file's row is large (its
# chunks' texts), so a search that asks whether a name is a project's (projects.py: a
# journal's sections) scanned 10,000 rows in 6 ms without its index.
ADDED_INDEXES = """
CREATE INDEX IF NOT EXISTS idx_files_link_name ON files(link_name);
CREATE INDEX IF NOT EXISTS idx_files_project ON files(project);
"""


def add_missing_columns(conn: Any) -> None:
    for table in dict.fromkeys(table for table, _, _ in ADDED_COLUMNS):
        _add_columns(conn, table)
    conn.executescript(ADDED_INDEXES)


def _add_columns(conn: Any, table: str) -> None:
    """The ADDED_COLUMNS of TABLE that it lacks (a memory.db made before them)."""
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    for name, column, decl in ADDED_COLUMNS:
        if name == table and column not in have:
            conn.execute(f"ALTER TABLE {name} ADD COLUMN {column} {decl}")


# The embedding cache: vectors appended in rowid order, found through a small index on
# (fingerprint, content hash). Its first form keyed the vectors themselves by hash (WITHOUT
# ROWID): every insert landed at a random place of a table of 2 KB rows, a third of a
# 10,000-note build and 60 s of a 100,000-note one. A cache file of that form is started over.
CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS cache.vectors (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    created REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS cache.idx_vectors_key ON vectors(fingerprint, content_hash);
"""
OLD_CACHE_TABLE = "embeddings"


# vec0 keeps vectors in blobs of `chunk_size` rows: a KNN scan is fastest with big blobs.
VEC_CHUNK_SIZE = 1024


def vec_table_sql(dimensions: int, chunk_size: int = VEC_CHUNK_SIZE) -> str:
    return (
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0("
        f"embedding float[{int(dimensions)}] distance_metric=cosine, category text, "
        f"chunk_size={int(chunk_size)})"
    )


# Pages of a new memory.db. A plain vector row (2 KB at 512 dimensions) is more than half
# of a 4 KB page, so 4 KB pages would hold one row each, half empty; 16 KB pages hold 7.
PAGE_SIZE = 16384

# Vectors as plain rows: a lexical embedder's (search re-scores BM25's candidates by rowid,
# with sqlite-vec's vec_distance_cosine), and any embedder's without sqlite-vec (then a
# bounded in-memory cosine scan).
PLAIN_VEC_SQL = (
    "CREATE TABLE IF NOT EXISTS chunks_vecplain (id INTEGER PRIMARY KEY, category "
    "TEXT, embedding BLOB NOT NULL, norm REAL NOT NULL)"
)


def corrupt_copies(db_path: Path) -> list[Path]:
    return sorted(db_path.parent.glob(f"{db_path.name}.corrupt-*"))


def side_files(db_path: Path) -> tuple[Path, Path]:
    """The WAL files SQLite keeps beside DB_PATH: -wal and -shm."""
    return db_path.with_name(db_path.name + "-wal"), db_path.with_name(db_path.name + "-shm")


def remove_db(db_path: Path) -> None:
    """Delete memory.db and its WAL files (a rebuild starts a new one)."""
    for side in (db_path, *side_files(db_path)):
        side.unlink(missing_ok=True)


def move_aside(db_path: Path) -> Path:
    """Rename a corrupt memory.db (and its WAL files) to memory.db.corrupt-<time>; the
    gitignore template ignores those names. At most one such copy is kept: an older one is
    deleted first (it is a cache; the copy is only for a post-mortem). Returns the new name."""
    for old in corrupt_copies(db_path):
        old.unlink(missing_ok=True)
    stamp = utc_now().strftime("%Y%m%d-%H%M%S")
    target = db_path.with_name(f"{db_path.name}.corrupt-{stamp}-{os.getpid()}")
    os.replace(db_path, target)
    for suffix in ("-wal", "-shm"):
        side = db_path.with_name(db_path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target
