"""What memory.db holds, and the only code that writes it: files and their chunks, the
FTS5 and vector rows, the index's identity, and the embedding cache.

A write is one transaction under the repo's "index" lock, so two processes never write
at once and a search running meanwhile sees the old rows until the new ones are complete.
The embedding cache (a separate file, attached as `cache`) is keyed by (embedder
fingerprint, chunk content hash): a rebuild re-embeds only chunks it has never seen.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo, category_of
from autopoiesis.core.sqlite import SQLiteInfo, connect, sqlite_module
from autopoiesis.errors import SearchIndexError
from autopoiesis.index import db, fts, plainvec, postings
from autopoiesis.index.chunking import CHUNKER_VERSION, Chunk, chunk_file
from autopoiesis.index.connection import attach_cache, set_wal
from autopoiesis.index.embedders import Embedder, embedder_from_config
from autopoiesis.index.files import FileItem, hash_bytes, markdown_paths, read_memory_file
from autopoiesis.index.rows import BatchRows, batch_rows

BATCH_FILES = 100  # files read, chunked and embedded per step of a rebuild (bounds memory)
# Searches read memory.db through a memory map: a query touches ~100 vectors and chunks at
# random places, and mapped pages cost no read() call and no copy (100 vector lookups at
# 40,000 chunks: ~2 ms mapped, ~5-25 ms read). A full rebuild turns it off, or every page it
# touched would count in its resident memory.
MMAP_BYTES = 1 << 30
# A rebuild's page cache (KiB; SQLite's default is 2000): it writes every page once, so a
# bigger cache buys little and counts in its resident memory.
REBUILD_CACHE_KIB = 500


@dataclass(frozen=True)
class IndexUpdate:
    """What one update of the index did (a rebuild or a catch-up with git)."""

    indexed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    full: bool = False
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()


class IndexStore:
    """memory.db of one memory repo, opened. A file `PRAGMA quick_check` proves corrupt is
    moved aside (one `.corrupt-*` copy kept) and started over; a full disk or a read-only
    file is an error that says so (SearchIndexError), and the file is left alone."""

    def __init__(self, repo: MemoryRepo, db_path: Path, embedder: Embedder | None = None):
        self.repo = repo
        self.db_path = db_path
        # Whether the embedder was given by the program rather than named by the config:
        # recorded at a rebuild, so the background sync never replaces it (see
        # SearchIndex.embedder_conflict).
        self.embedder_given = embedder is not None
        self._embedder = embedder
        self.warnings: list[str] = []
        self._lock = repo.lock("index")
        self._lock_depth = 0
        # Counts this object's commits and connections: with `PRAGMA data_version` (other
        # connections' commits) it tells a reader's caches that memory.db changed (reusable).
        self.generation = 0
        self._reusable: tuple[tuple[int, int] | None, dict[str, Any]] = (None, {})
        # Term postings are kept up to date with each write, except inside a full rebuild,
        # which builds them once at its end.
        self._postings_live = True
        self.conn: Any = None
        self._file: tuple[int, int] | None = None  # (device, inode) of the file conn opened
        self.tokenizer: fts.Tokenizer | None = None
        self.info: SQLiteInfo | None = None
        self.db_error: type[Exception] = sqlite_module().DatabaseError
        try:
            self._connect_and_prepare()
        except db.IndexCorruptError as exc:
            self.close()
            tables = isinstance(exc, db.ForeignTablesError)
            kind = self.diagnose(exc.__cause__ or exc, tables_failed=tables)
            if kind not in (db.CORRUPT, db.FOREIGN):
                raise SearchIndexError(self.explain(kind, exc)) from None
            self.warnings.append(self.recreate(corrupt=True, why=str(exc), kind=kind))

    # ── what went wrong, and starting over ──
    def diagnose(self, exc: BaseException, *, tables_failed: bool = False) -> str:
        """db.CORRUPT only when quick_check proves memory.db corrupt; db.FOREIGN when
        TABLES_FAILED (EXC came from making the index's tables) and quick_check proves it
        intact; else what EXC says (db.FULL, db.READONLY, db.BUSY, db.OTHER): the file
        is then left as it is."""
        kind = db.classify(exc)
        if (
            kind == db.OTHER
        ):  # "disk I/O error", "unable to open": often the disk's state, not the file's
            kind = db.disk_state(self.db_path) or kind
        if kind in (db.FULL, db.READONLY, db.BUSY):
            return kind
        intact, _ = db.quick_check(self.db_path)
        if intact is False:
            return db.CORRUPT
        if intact and tables_failed:
            return db.FOREIGN
        return db.OTHER

    def explain(self, kind: str, exc: BaseException) -> str:
        """One line for the user: what happened to memory.db and what to do."""
        name = self.db_path.name
        if kind == db.FULL:
            return (
                f"the disk holding {name} is full ({exc}); {name} is unchanged. Free some space, "
                "then run "
                "`autopoiesis index rebuild` (searches catch up by themselves)"
            )
        if kind == db.READONLY:
            return (
                f"{name} cannot be written ({exc}): the file or its folder is read-only. Make "
                "both writable "
                "(the index catches up on the next search), or search with git grep meanwhile"
            )
        if kind == db.BUSY:
            return f"{name} is locked by another process ({exc}); try again in a moment"
        if kind == db.CORRUPT:
            return f"{name} is corrupt ({exc}); run `autopoiesis index rebuild`"
        return f"{name} failed ({exc}); run `autopoiesis doctor`, then `autopoiesis index rebuild`"

    def recreate(self, *, corrupt: bool, why: str, kind: str = db.CORRUPT) -> str:
        """Start memory.db over: a corrupt file, or one whose tables are not the index's
        (KIND db.FOREIGN), is moved aside (one copy kept), any other is deleted (the
        caller is rebuilding it). Returns the warning to show."""
        self.close()
        if corrupt:
            moved = db.move_aside(self.db_path)
            state = (
                "a database whose tables are not the search index's"
                if kind == db.FOREIGN
                else "corrupt"
            )
            note = (
                f"memory.db was {state} ({why}); moved it to {moved.name} and started a new index"
            )
        else:
            db.remove_db(self.db_path)
            note = f"memory.db could not be rebuilt in place ({why}); started a new file"
        self._connect_and_prepare()
        return note

    def integrity(self) -> str | None:
        """None when quick_check finds memory.db intact (or it does not exist), else why not."""
        intact, detail = db.quick_check(self.db_path)
        return None if intact is not False else detail

    def _connect_and_prepare(self) -> None:
        # memory.db, its WAL files and the embedding cache: SQLite cannot open any of them
        # as a folder, and a rebuild would fail the same way, so the error names the path.
        cache = self.repo.state_file("embed_cache", create=False)
        for path in (self.db_path, *db.side_files(self.db_path), cache):
            # one stat: SQLite removes the -wal and -shm files as the last connection
            # closes, and one gone between two checks ("exists", then "not a file") was
            # taken for a folder standing there
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue  # not there (or gone meanwhile): SQLite makes it
            if not stat.S_ISREG(mode):
                raise SearchIndexError(
                    f"{path} is not a file (a folder or a device stands where the search "
                    "index keeps one), so it is neither read nor replaced: move it away (`mv "
                    f"{path} {path}.aside`), then run `autopoiesis index rebuild`"
                )
        try:
            self.conn, self.info = connect(self.db_path)
        except (self.db_error, OSError) as exc:
            raise db.IndexCorruptError(str(exc)) from exc
        self.generation += 1  # another file's data_version may equal the last one's
        self._file = _file_id(self.db_path)
        self.tokenizer = fts.Tokenizer(self.conn)
        try:
            self.conn.execute(
                f"PRAGMA page_size={db.PAGE_SIZE}"
            )  # a new file only: before WAL, before any table
            set_wal(self.conn, self.db_error)
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        except (self.db_error, OSError) as exc:
            raise db.IndexCorruptError(str(exc)) from exc
        try:
            # The file is a database: a failure here is its tables (diagnose tells a full
            # disk, a read-only file or page corruption from tables of another shape).
            self.conn.executescript(db.BASE_SCHEMA)
            db.create_chunk_tables(self.conn, self.fts_layout)
            db.add_missing_columns(self.conn)
        except (self.db_error, OSError) as exc:
            raise db.ForeignTablesError(str(exc)) from exc
        try:
            cache = self.repo.state_file("embed_cache")
            try:
                attach_cache(self.conn, cache)
            except self.db_error:
                # a broken cache only costs re-embedding: start it over
                with contextlib.suppress(self.db_error):
                    self.conn.execute("DETACH DATABASE cache")
                cache.unlink(missing_ok=True)
                attach_cache(self.conn, cache)
        except (self.db_error, OSError) as exc:
            raise db.IndexCorruptError(str(exc)) from exc

    @property
    def fts_layout(self) -> str:
        """How chunks_fts keeps its rows (db.fts_layout): "contentless" or "content"."""
        return db.fts_layout(self.info.sqlite_version if self.info else "")

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None

    def is_current(self) -> bool:
        """Open, and on the file at db_path still (not one moved aside or deleted since)."""
        return self.conn is not None and _file_id(self.db_path) == self._file

    # ── identity ──
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = embedder_from_config(self.repo.config)
        return self._embedder

    @property
    def vec_loaded(self) -> bool:
        return bool(self.info and self.info.sqlite_vec_loaded)

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM index_meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)", (key, value)
        )

    def count(self, table: str) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def identity(self) -> dict[str, str]:
        """What the vectors and chunks depend on; a change means a full rebuild."""
        return {
            "schema_version": db.SCHEMA_VERSION,
            "chunker_version": CHUNKER_VERSION,
            "embedder": self.embedder.fingerprint,
            "dimensions": str(self.embedder.dimensions),
            "vector_store": f"vec0:{db.VEC_CHUNK_SIZE}" if self.uses_vec0 else "plain:i16",
            "fts": self.fts_layout,
        }

    def reusable(self) -> dict[str, Any]:
        """What a reader of memory.db may keep until it changes (lexical.Bm25Ranker's totals
        and postings, query.QueryEngine's user turns): a new, empty dict after a commit of
        this object's or of another connection's (`PRAGMA data_version`), ~3 us a call."""
        key = (self.generation, self.conn.execute("PRAGMA data_version").fetchone()[0])
        if key != self._reusable[0]:
            self._reusable = (key, {})
        return self._reusable[1]

    def needs_rebuild(self) -> bool:
        return bool(self.outdated())

    def outdated(self) -> list[str]:
        """What memory.db was built with that this program builds otherwise and cannot
        use, one "name: built -> now" each (none: the index is current)."""
        version = self.info.sqlite_version if self.info else ""
        return [
            f"{k.replace('_', ' ')} {self.meta(k) or 'none'} -> {v}"
            for k, v in self.identity().items()
            if self.meta(k) != v
            and not (k == "fts" and db.fts_layout_serves(self.meta(k), version))
        ]

    @property
    def uses_vec0(self) -> bool:
        """Whether the vectors live in a vec0 table (for KNN), not in plain rows. A lexical
        embedder's vectors are plain rows: search re-scores BM25's candidates with them,
        and a point lookup in a plain table costs ~2 us against ~13 us in vec0, whose
        KNN it needs only as a fallback (see query.QueryEngine.scored)."""
        return self.vec_loaded and not self.embedder.lexical

    @property
    def vec_table(self) -> str:
        return "chunks_vec" if self.uses_vec0 else "chunks_vecplain"

    def _reset_vec_table(self) -> None:
        if self.vec_loaded:
            self.conn.execute("DROP TABLE IF EXISTS chunks_vec")
        self.conn.execute("DROP TABLE IF EXISTS chunks_vecplain")
        if self.uses_vec0:
            self.conn.execute(db.vec_table_sql(self.embedder.dimensions, db.VEC_CHUNK_SIZE))
        else:
            self.conn.execute(db.PLAIN_VEC_SQL)

    # ── transactions and the lock ──
    @contextlib.contextmanager
    def building(self) -> Iterator[None]:
        """Pages as a build writes every file (the one-transaction rebuild and the build in
        steps alike): no memory map and a small page cache (MMAP_BYTES, REBUILD_CACHE_KIB
        say why), a search's settings again after it."""
        self.conn.execute("PRAGMA mmap_size=0")
        for schema in ("main", "cache", "temp"):
            self.conn.execute(f"PRAGMA {schema}.cache_size=-{REBUILD_CACHE_KIB}")
        try:
            yield
        finally:
            with contextlib.suppress(Exception):  # a connection the failure closed needs nothing
                self.conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
                for schema in ("main", "cache", "temp"):
                    self.conn.execute(f"PRAGMA {schema}.cache_size=-2000")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.conn.execute("COMMIT")
            self.generation += 1
        except BaseException:
            with contextlib.suppress(Exception):
                self.conn.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def write_lock(
        self, timeout: float = 600.0, *, busy: type[SearchIndexError] = SearchIndexError
    ) -> Iterator[None]:
        """The repo's 'index' flock, re-entrant within this object (a catch-up holds it
        and may rebuild): two processes never write the index at once. Not free within
        TIMEOUT: BUSY, whose message says the lock is held. While it is held, SQLite too
        waits at most TIMEOUT for another connection's write (`PRAGMA busy_timeout`), so
        that a short wait (a search's) is short whichever of the two is held."""
        if self._lock_depth == 0 and not self._lock.acquire(timeout=timeout):
            raise busy(
                "another process is writing the search index (a rebuild or a catch-up) and "
                f"has held its lock for more than {timeout:g} s; try again in a moment, or "
                "check `autopoiesis index status`"
            )
        self._lock_depth += 1
        outer = self._lock_depth == 1 and self.conn is not None
        waits = int(self.conn.execute("PRAGMA busy_timeout").fetchone()[0]) if outer else 0
        if outer:
            self.conn.execute(f"PRAGMA busy_timeout={int(min(timeout * 1000, waits))}")
        try:
            yield
        finally:
            if outer and self.conn is not None:
                self.conn.execute(f"PRAGMA busy_timeout={waits}")
            self.release_write_lock()

    def try_write_lock(self) -> bool:
        """Take the write lock if it is free now (release it with release_write_lock)."""
        if self._lock_depth == 0 and not self._lock.acquire(timeout=0):
            return False
        self._lock_depth += 1
        return True

    def release_write_lock(self) -> None:
        self._lock_depth -= 1
        if self._lock_depth == 0:
            self._lock.release()

    # ── writing rows (inside a transaction) ──
    def delete_path(self, path: str) -> None:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        if ids:
            if self._postings_live:
                postings.chunks_removed(self.conn, ids)
            marks = ",".join("?" * len(ids))
            self.conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", ids)
            self.conn.execute(
                f"DELETE FROM {self.vec_table} WHERE {'rowid' if self.uses_vec0 else 'id'} IN "
                f"({marks})",
                ids,
            )
            self.conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        self.conn.execute("DELETE FROM links WHERE source = ?", (path,))
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def refresh_stat(self, path: str, st: os.stat_result) -> None:
        """A touched, unchanged file: only its recorded stat (and when it was taken) moves."""
        self.conn.execute(
            "UPDATE files SET mtime_ns = ?, ctime_ns = ?, modified = ?, size = ?, last_indexed = "
            "? WHERE path = ?",
            (st.st_mtime_ns, st.st_ctime_ns, st.st_mtime, st.st_size, time.time(), path),
        )

    def _embed_chunks(self, chunks: list[Chunk]) -> tuple[list[bytes], int]:
        """Vectors of CHUNKS, from the cache when (fingerprint, content hash) is known. A
        lexical embedder's are computed again rather than cached (db's docstring)."""
        if self.embedder.lexical:
            return self.embedder.embed([c.text for c in chunks]), len(chunks)
        fp = self.embedder.fingerprint
        hashes = [c.content_hash for c in chunks]
        found: dict[str, bytes] = {}
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            rows = self.conn.execute(
                "SELECT content_hash, vector FROM cache.vectors WHERE fingerprint = ? AND "
                f"content_hash IN ({','.join('?' * len(part))})",
                [fp, *part],
            )
            found.update((h, v) for h, v in rows)
        missing = [h for h in unique if h not in found]
        if missing:
            by_hash = {c.content_hash: c.text for c in chunks}
            vectors = self.embedder.embed([by_hash[h] for h in missing])
            now = time.time()
            self.conn.executemany(
                "INSERT OR REPLACE INTO cache.vectors(fingerprint, content_hash, vector, created) "
                "VALUES (?, ?, ?, ?)",
                [(fp, h, v, now) for h, v in zip(missing, vectors)],
            )
            found.update(zip(missing, vectors))
        return [found[h] for h in hashes], len(missing)

    def write_files(self, items: list[FileItem], *, replace: bool = True) -> int:
        """Replace the rows of each (path, category, stat, hash, text); REPLACE=False when
        they have none yet (a rebuild emptied the tables). Returns chunks embedded. The
        rows of the batch go in with one statement a table: the chunks get their ids here
        (the next free ones: the caller's transaction holds the write lock)."""
        items = list({item[0]: item for item in items}.values())  # a path twice: its last version
        prepared = []
        all_chunks: list[Chunk] = []
        text_of = {item[0]: item[4] for item in items}
        for path, category, st, digest, text in items:
            fc = chunk_file(path, text, category)
            self.warnings.extend(fc.warnings)
            prepared.append((path, category, st, digest, fc))
            all_chunks.extend(fc.chunks)
        vectors, embedded = self._embed_chunks(all_chunks) if all_chunks else ([], 0)
        if replace:
            for path, *_ in prepared:
                self.delete_path(path)
        next_id = (self.conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0) + 1
        rows = batch_rows(prepared, text_of, vectors, next_id)
        self._insert_rows(rows)
        return embedded

    def _insert_rows(self, rows: BatchRows) -> None:
        """write_files' rows, one statement a table."""
        file_rows, link_rows, chunk_rows, fts_rows, vec_rows = rows
        conn = self.conn
        conn.executemany(
            "INSERT INTO files(path, category, modified, mtime_ns, ctime_ns, size, content_hash, "
            "token_count, line_count, tags, title, last_indexed, project, link_name, chunks_z)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            file_rows,
        )
        conn.executemany(
            "INSERT INTO links(source, line, target, name, heading, alias)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            link_rows,
        )
        conn.executemany(
            "INSERT INTO chunks(id, path, category, kind, start_line, end_line, turn_time, "
            "heading, text_start, text_len, content_hash, body_hash, own_start, own_end, "
            "user_turn, project) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            chunk_rows,
        )
        conn.executemany("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", fts_rows)
        if self.uses_vec0:
            conn.executemany(
                "INSERT INTO chunks_vec(rowid, embedding, category) VALUES (?, ?, ?)", vec_rows
            )
        else:
            # a zero vector (a chunk with no word the embedder keeps) has no distance to
            # anything: no row, so the KNN scan orders distances without NULLs
            kept = [r for r in vec_rows if r[1].strip(b"\x00")]
            conn.executemany(
                "INSERT INTO chunks_vecplain(id, embedding, norm, category) VALUES (?, ?, ?, ?)",
                [
                    (r[0], v, n, r[2])
                    for r, (v, n) in zip(kept, plainvec.pack([r[1] for r in kept]))
                ],
            )
        if self._postings_live and fts_rows:
            assert self.tokenizer is not None
            postings.chunks_added(conn, self.tokenizer, fts_rows)

    # ── whole operations (each one transaction under the lock) ──
    def index_file(
        self, path: str, content: str | None = None, category: str | None = None
    ) -> None:
        """Index (or re-index) one file. PATH is repo-relative or absolute; CONTENT, when
        given, is indexed instead of what is on disk."""
        rel = self.repo.rel(path)
        if content is None:
            got = read_memory_file(self.repo, rel, self.warnings)
            if got is None:
                self.remove_file(rel)
                return
            cat, st, digest, text = got
        else:
            full = self.repo.root / rel
            st = os.stat(full) if full.exists() else os.stat_result((0,) * 10)
            raw = content.encode("utf-8", "surrogatepass")
            cat, digest, text = category_of(rel) or "reference", hash_bytes(raw), content
        with self.write_lock(), self.transaction():
            self.write_files([(rel, category or cat, st, digest, text)])

    def remove_file(self, path: str) -> None:
        rel = self.repo.rel(path)
        with self.write_lock(), self.transaction():
            self.delete_path(rel)

    def rebuild(
        self, sync_meta: Mapping[str, str], progress: Callable[[int, int], None] | None = None
    ) -> IndexUpdate:
        """Re-index every memory file from scratch in one transaction, and record the
        identity and SYNC_META (the tree state the rebuild started from) with it. The
        caller holds the write lock.

        It always works when the disk can take it: a file SQLite cannot rebuild in place
        (a corrupt page under a table it must drop) is started over and the rebuild run
        again. A full disk or a read-only file raises SearchIndexError, the old index kept."""
        self.warnings.clear()
        try:
            return self._rebuild(sync_meta, progress)
        except self.db_error as exc:
            kind = self.diagnose(exc)
            if kind in (db.FULL, db.READONLY, db.BUSY):
                raise SearchIndexError(self.explain(kind, exc)) from None
            note = self.recreate(corrupt=kind == db.CORRUPT, why=str(exc))
        try:
            report = self._rebuild(sync_meta, progress)
        except self.db_error as exc:
            raise SearchIndexError(self.explain(self.diagnose(exc), exc)) from None
        self.warnings.insert(0, note)
        return replace(report, warnings=(note, *report.warnings))

    def _rebuild(
        self, sync_meta: Mapping[str, str], progress: Callable[[int, int], None] | None
    ) -> IndexUpdate:
        started = time.monotonic()
        paths = markdown_paths(self.repo)
        self.note_links()
        with self.building():
            with self.transaction():
                self.reset_tables()
                indexed, embedded = self.write_paths(paths, progress)
                self.finish_build(sync_meta)
            db.shrink(self.conn, self.embedder.fingerprint if self.embedder.lexical else None)
        return IndexUpdate(
            indexed=indexed,
            embedded=embedded,
            full=True,
            seconds=time.monotonic() - started,
            warnings=tuple(self.warnings),
        )

    def note_links(self) -> None:
        """Warn of the symbolic links a build leaves out."""
        self.warnings.extend(
            f"{link}: a symbolic link; not indexed (memory files are regular files; `git rm` it)"
            for link in self.repo.links()
        )

    def reset_tables(self) -> None:
        """Empty every table of the index and record its identity (in the caller's
        transaction): the start of a rebuild."""
        db.create_chunk_tables(self.conn, self.fts_layout, drop=True)
        self.conn.execute("DELETE FROM files")
        self.conn.execute("DELETE FROM links")
        postings.clear(self.conn)
        self._reset_vec_table()
        for k, v in self.identity().items():
            self.set_meta(k, v)
        self.set_meta("embedder_source", "given" if self.embedder_given else "config")

    def finish_build(self, sync_meta: Mapping[str, str]) -> None:
        """The end of a rebuild (in the caller's transaction): the term postings built from
        the finished chunks_fts, and the tree state SYNC_META recorded."""
        assert self.tokenizer is not None
        postings.build(self.conn, self.tokenizer)
        for k, v in sync_meta.items():
            self.set_meta(k, v)
        self.set_meta("built", str(time.time()))

    def write_paths(
        self, paths: list[str], progress: Callable[[int, int], None] | None = None
    ) -> tuple[int, int]:
        """Write every file of PATHS, in batches (files, chunks embedded). The term postings
        are left alone: the rebuild builds them once, from the finished chunks_fts."""
        indexed = embedded = 0
        self._postings_live = False
        try:
            for i in range(0, len(paths), BATCH_FILES):
                batch = []
                for p in paths[i : i + BATCH_FILES]:
                    got = read_memory_file(self.repo, p, self.warnings)
                    if got is not None:
                        batch.append((p, *got))
                embedded += self.write_files(batch, replace=False)
                indexed += len(batch)
                if progress:
                    progress(min(i + BATCH_FILES, len(paths)), len(paths))
        finally:
            self._postings_live = True
        return indexed, embedded

    def compact_postings(self) -> bool:
        """Rebuild the term postings when the chunks written since the last build have grown
        large (the background sync calls it). True when it did."""
        if not postings.needs_compaction(self.conn):
            return False
        assert self.tokenizer is not None
        with self.write_lock(), self.transaction():
            postings.build(self.conn, self.tokenizer)
        return True

    def reclaim_free_pages(self) -> tuple[int, str | None]:
        """Give the disk back the pages writes left free when they are many (db.reclaim;
        the background sync calls it after a catch-up): (pages given back, None), or (0,
        why) when SQLite could not (a full disk has no room for the copy VACUUM writes);
        the index is as it was then."""
        with self.write_lock():
            try:
                return sum(db.reclaim(self.conn, schema) for schema in ("main", "cache")), None
            except self.db_error as exc:
                return 0, self.explain(self.diagnose(exc), exc)

    def apply(
        self, to_write: list[FileItem], to_remove: list[str], sync_meta: Mapping[str, str]
    ) -> int:
        """Remove TO_REMOVE, write TO_WRITE and record SYNC_META in one transaction.
        Returns chunks embedded. The caller holds the write lock."""
        with self.transaction():
            for p in to_remove:
                self.delete_path(p)
            embedded = 0
            for i in range(0, len(to_write), BATCH_FILES):
                embedded += self.write_files(to_write[i : i + BATCH_FILES])
            for k, v in sync_meta.items():
                self.set_meta(k, v)
        return embedded


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino
