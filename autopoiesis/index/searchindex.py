"""SearchIndex (design §7, §9.2): hybrid BM25 + vector search over the memory repo's
knowledge/, topics/, raw/ transcripts and archive/, kept fresh against git.

How a query is answered:
1. *Catch up*: one `git status` says what HEAD is and which memory files differ from it;
   if that is not what the index recorded, only the difference is re-indexed (committed
   changes from `git diff OLD NEW`, plus every path dirty then or now). So a result is
   never stale after a commit, checkout, merge, reset or uncommitted edit.
2. *BM25*: the query's content terms, each quoted and OR-ed (user text is never FTS5
   syntax), against chunk text with FTS5's bm25().
3. *Vector*: the query's embedding against the chunks' with sqlite-vec's KNN
   (`embedding MATCH ? AND k = ?`), or a bounded in-memory cosine when sqlite-vec
   cannot load.
4. *Merge* per chunk: reciprocal-rank fusion (default; rank-based, so the two score
   scales never need calibrating) or the design's 0.4 x BM25 + 0.6 x vector.
5. *Results* are chunks, best first: a transcript turn with the turns around it, or a
   heading section, as `path:start-end`. A chunk overlapping one already taken from the
   same file is skipped (turn windows overlap), and one file gives at most `per_file`
   (3) results, so a long session cannot crowd out the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from autopoiesis.errors import SearchIndexError
from autopoiesis.index import db as dbmod
from autopoiesis.index.chunking import CHUNKER_VERSION, Chunk, chunk_file, tags_json
from autopoiesis.index.embedders import Embedder, embedder_from_config, from_blob
from autopoiesis.index.gitstate import TreeState, changed_between, tree_state
from autopoiesis.index.text import fts_match, query_terms
from autopoiesis.core.paths import MemoryRepo, category_of

RRF_K = 60  # the constant of Cormack et al.; large enough that rank 1 does not swamp rank 5
CANDIDATES = 100  # chunks taken from each of BM25 and KNN before merging
# A lexical embedder re-scores BM25's candidates instead of searching the whole index
# when BM25 found at least this many (see _scored).
RERANK_MIN_CANDIDATES = 20
PLAIN_SCAN_MAX = 20000  # bound of the in-memory cosine scan without sqlite-vec
BATCH_FILES = 400  # files read, chunked and embedded per step of a rebuild (bounds memory)
MAX_FILE_BYTES = 8 * 1024 * 1024


class IndexFallbackWarning(UserWarning):
    """search() answered from git grep / ripgrep instead of the index."""


@dataclass(frozen=True)
class SearchResult:
    """One hit: a chunk of a file (its lines), and how it scored."""

    path: str  # relative to the repo root
    start_line: int
    end_line: int
    snippet: str
    score: float
    category: str
    turn_time: str | None = None  # ISO-8601 UTC of the transcript turn, when there is one
    archived: bool = False
    heading: str | None = None
    explain: dict[str, Any] | None = None

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["explain"] is None:
            del data["explain"]
        return data


@dataclass(frozen=True)
class SearchOutcome:
    results: list[SearchResult]
    source: str  # "index" | "git grep" | "ripgrep"
    notices: tuple[str, ...] = ()


@dataclass(frozen=True)
class SyncReport:
    indexed: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    full: bool = False
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexStatus:
    db_path: str
    exists: bool
    files_indexed: int
    chunks: int
    files_in_repo: int
    head_indexed: str
    head_now: str
    fresh: bool
    embedder: str
    dimensions: int
    chunker_version: str
    sqlite: dbmod.SQLiteInfo
    stale_paths: tuple[str, ...] = ()


@dataclass
class _Candidate:
    chunk_id: int
    bm25: float | None = None
    bm25_rank: int | None = None
    distance: float | None = None
    vec_rank: int | None = None
    score: float = 0.0


def _hash_bytes(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _decode(raw: bytes) -> str | None:
    """Text of a memory file, or None for binary content (a NUL in the first 8 KB)."""
    if b"\x00" in raw[:8192]:
        return None
    return raw.decode("utf-8", "replace")


class SearchIndex:
    """The search index of one memory repo (memory.db at its root)."""

    def __init__(self, repo: MemoryRepo, embedder: Embedder | None = None, *, db_path: Path | None = None):
        self.repo = repo
        self.db_path = Path(db_path) if db_path else repo.index_path
        self._embedder = embedder
        self.warnings: list[str] = []
        self._lock = repo.lock("index")
        self._lock_depth = 0
        self._watcher: Any = None
        self._watcher_tried = False
        self.conn: Any = None
        self.info: dbmod.SQLiteInfo | None = None
        self._open()

    # ── opening, identity ──
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = embedder_from_config(self.repo.config)
        return self._embedder

    def _open(self) -> None:
        try:
            self._connect_and_prepare()
        except dbmod.IndexCorruptError as exc:
            self.close()
            moved = dbmod.move_aside(self.db_path)
            self.warnings.append(f"memory.db was corrupt ({exc}); moved it to {moved.name} and started a new index")
            self._connect_and_prepare()

    def _connect_and_prepare(self) -> None:
        self.conn, self.info = dbmod.connect(self.db_path)
        self._db_error = dbmod.sqlite_module().DatabaseError
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(dbmod.BASE_SCHEMA)
            cache = self.repo.state_path("embed-cache.db")
            try:
                self.conn.execute("ATTACH DATABASE ? AS cache", (str(cache),))
                self.conn.executescript(dbmod.CACHE_SCHEMA)
            except self._db_error:
                # a broken cache only costs re-embedding: start it over
                try:
                    self.conn.execute("DETACH DATABASE cache")
                except self._db_error:
                    pass
                cache.unlink(missing_ok=True)
                self.conn.execute("ATTACH DATABASE ? AS cache", (str(cache),))
                self.conn.executescript(dbmod.CACHE_SCHEMA)
        except self._db_error as exc:
            raise dbmod.IndexCorruptError(str(exc)) from exc

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        self._watcher, self._watcher_tried = None, False
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

    def __enter__(self) -> "SearchIndex":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def vec_loaded(self) -> bool:
        return bool(self.info and self.info.sqlite_vec_loaded)

    def _meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM index_meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)", (key, value))

    def _count(self, table: str) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def identity(self) -> dict[str, str]:
        """What the vectors and chunks depend on; a change means a full rebuild."""
        return {
            "schema_version": dbmod.SCHEMA_VERSION,
            "chunker_version": CHUNKER_VERSION,
            "embedder": self.embedder.fingerprint,
            "dimensions": str(self.embedder.dimensions),
            "vector_store": f"vec0:{self._vec_chunk_size()}" if self.vec_loaded else "plain",
        }

    def _vec_chunk_size(self) -> int:
        return dbmod.VEC_CHUNK_SIZE_RERANK if getattr(self.embedder, "lexical", False) else dbmod.VEC_CHUNK_SIZE

    def needs_rebuild(self) -> bool:
        return any(self._meta(k) != v for k, v in self.identity().items())

    def _vec_table(self) -> str:
        return "chunks_vec" if self.vec_loaded else "chunks_vecplain"

    def _ensure_vec_table(self, reset: bool = False) -> None:
        if reset:
            self.conn.execute("DROP TABLE IF EXISTS chunks_vec") if self.vec_loaded else None
            self.conn.execute("DROP TABLE IF EXISTS chunks_vecplain")
        if self.vec_loaded:
            self.conn.execute(dbmod.vec_table_sql(self.embedder.dimensions, self._vec_chunk_size()))
        else:
            self.conn.execute(dbmod.PLAIN_VEC_SQL)

    # ── writing ──
    def _begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        self.conn.execute("COMMIT")

    def _rollback(self) -> None:
        try:
            self.conn.execute("ROLLBACK")
        except Exception:
            pass

    def _delete_path(self, path: str) -> None:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        if ids:
            marks = ",".join("?" * len(ids))
            self.conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", ids)
            self.conn.execute(f"DELETE FROM {self._vec_table()} WHERE {'rowid' if self.vec_loaded else 'id'} IN ({marks})", ids)
            self.conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def _embed_chunks(self, chunks: list[Chunk]) -> tuple[list[bytes], int]:
        """Vectors of CHUNKS, from the cache when (fingerprint, content hash) is known."""
        fp = self.embedder.fingerprint
        hashes = [c.content_hash for c in chunks]
        found: dict[str, bytes] = {}
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            rows = self.conn.execute(
                f"SELECT content_hash, vector FROM cache.embeddings WHERE fingerprint = ? AND content_hash IN ({','.join('?' * len(part))})",
                [fp, *part],
            )
            found.update((h, v) for h, v in rows)
        missing = [h for h in unique if h not in found]
        if missing:
            by_hash = {c.content_hash: c.text for c in chunks}
            vectors = self.embedder.embed([by_hash[h] for h in missing])
            now = time.time()
            self.conn.executemany(
                "INSERT OR REPLACE INTO cache.embeddings(fingerprint, content_hash, vector, created) VALUES (?, ?, ?, ?)",
                [(fp, h, v, now) for h, v in zip(missing, vectors)],
            )
            found.update(zip(missing, vectors))
        return [found[h] for h in hashes], len(missing)

    def _write_files(self, items: list[tuple[str, str, os.stat_result, str, str]]) -> int:
        """Replace the rows of each (path, category, stat, hash, text). Returns chunks embedded."""
        prepared = []
        all_chunks: list[Chunk] = []
        for path, category, st, digest, text in items:
            fc = chunk_file(path, text, category)
            self.warnings.extend(fc.warnings)
            prepared.append((path, category, st, digest, fc))
            all_chunks.extend(fc.chunks)
        vectors, embedded = self._embed_chunks(all_chunks) if all_chunks else ([], 0)
        now = time.time()
        pos = 0
        vec_sql = (
            "INSERT INTO chunks_vec(rowid, embedding, category) VALUES (?, ?, ?)"
            if self.vec_loaded
            else "INSERT INTO chunks_vecplain(id, category, embedding) VALUES (?, ?, ?)"
        )
        for path, category, st, digest, fc in prepared:
            self._delete_path(path)
            self.conn.execute(
                "INSERT INTO files(path, category, modified, mtime_ns, size, content_hash, token_count, line_count, tags, title, last_indexed)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (path, category, st.st_mtime, st.st_mtime_ns, st.st_size, digest, fc.token_count, fc.line_count,
                 tags_json(fc.tags), fc.title, now),
            )
            fts_rows, vec_rows = [], []
            for c in fc.chunks:
                cur = self.conn.execute(
                    "INSERT INTO chunks(path, category, kind, start_line, end_line, turn_time, heading, text, content_hash)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (path, category, c.kind, c.start_line, c.end_line, c.turn_time, c.heading, c.text, c.content_hash),
                )
                cid = cur.lastrowid
                fts_rows.append((cid, c.text))
                vec_rows.append((cid, vectors[pos], category))
                pos += 1
            self.conn.executemany("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", fts_rows)
            self.conn.executemany(vec_sql, vec_rows)
        return embedded

    def _read(self, path: str) -> tuple[str, os.stat_result, str, str] | None:
        """(category, stat, hash, text) of a memory file on disk; None when it is gone,
        not memory content, or binary (with a warning)."""
        category = category_of(path)
        if category is None:
            return None
        full = self.repo.root / path
        try:
            st = os.stat(full)
            if st.st_size > MAX_FILE_BYTES:
                self.warnings.append(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MB; skipped")
                return None
            raw = full.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None  # disappeared meanwhile: it is simply not indexed
        except OSError as exc:
            self.warnings.append(f"{path}: unreadable ({exc}); skipped")
            return None
        text = _decode(raw)
        if text is None:
            self.warnings.append(f"{path}: binary content; skipped")
            return None
        return category, st, _hash_bytes(raw), text

    def index_file(self, path: str, content: str | None = None, category: str | None = None) -> None:
        """Index (or re-index) one file. PATH is repo-relative or absolute; CONTENT, when
        given, is indexed instead of what is on disk."""
        rel = self.repo.rel(path)
        if content is None:
            got = self._read(rel)
            if got is None:
                self.remove_file(rel)
                return
            cat, st, digest, text = got
        else:
            full = self.repo.root / rel
            st = os.stat(full) if full.exists() else os.stat_result((0,) * 10)
            raw = content.encode("utf-8", "surrogatepass")
            cat, digest, text = category_of(rel) or "reference", _hash_bytes(raw), content
        with self._write_lock():
            self._begin()
            try:
                self._write_files([(rel, category or cat, st, digest, text)])
                self._commit()
            except BaseException:
                self._rollback()
                raise

    def remove_file(self, path: str) -> None:
        rel = self.repo.rel(path)
        with self._write_lock():
            self._begin()
            try:
                self._delete_path(rel)
                self._commit()
            except BaseException:
                self._rollback()
                raise

    @contextlib.contextmanager
    def _write_lock(self, timeout: float = 600.0) -> Iterator[None]:
        """The repo's 'index' flock, re-entrant within this object (catch_up holds it
        and calls rebuild_full): two processes never write the index at once."""
        if self._lock_depth == 0 and not self._lock.acquire(timeout=timeout):
            raise SearchIndexError("another process has held the index lock for too long; try again, "
                                   "or check `autopoiesis index status`.")
        self._lock_depth += 1
        try:
            yield
        finally:
            self._lock_depth -= 1
            if self._lock_depth == 0:
                self._lock.release()

    # ── rebuild and sync ──
    def rebuild_full(self, progress: Callable[[int, int], None] | None = None) -> SyncReport:
        """Re-index every memory file from scratch, in one transaction: a search running
        meanwhile sees the old index until the new one is complete. The embedding cache
        survives, so unchanged chunks are not embedded again."""
        started = time.monotonic()
        self.warnings.clear()
        with self._write_lock():
            state = tree_state(self.repo.root)
            paths = [self.repo.rel(p) for p in self.repo.iter_markdown()]
            self._begin()
            try:
                self.conn.execute("DELETE FROM chunks_fts")
                self.conn.execute("DELETE FROM chunks")
                self.conn.execute("DELETE FROM files")
                self._ensure_vec_table(reset=True)
                indexed = embedded = 0
                for i in range(0, len(paths), BATCH_FILES):
                    batch = []
                    for p in paths[i : i + BATCH_FILES]:
                        got = self._read(p)
                        if got is not None:
                            batch.append((p, *got))
                    embedded += self._write_files(batch)
                    indexed += len(batch)
                    if progress:
                        progress(min(i + BATCH_FILES, len(paths)), len(paths))
                for k, v in self.identity().items():
                    self._set_meta(k, v)
                self._record_state(state)
                self._set_meta("built", str(time.time()))
                self._commit()
            except BaseException:
                self._rollback()
                raise
        return SyncReport(indexed=indexed, embedded=embedded, full=True, seconds=time.monotonic() - started,
                          warnings=tuple(self.warnings))

    def _record_state(self, state: TreeState) -> None:
        self._set_meta("head", state.head)
        self._set_meta("dirty", json.dumps(state.dirty, sort_keys=True))
        self._set_meta("synced", str(time.time()))

    def _recorded(self) -> tuple[str | None, dict[str, Any]]:
        head = self._meta("head")
        try:
            dirty = json.loads(self._meta("dirty") or "{}")
        except ValueError:
            dirty = {}
        return head, dirty

    def is_fresh(self, state: TreeState | None = None) -> bool:
        state = state or tree_state(self.repo.root)
        head, dirty = self._recorded()
        return head is not None and not self.needs_rebuild() and state.same_as(head, dirty)

    def _change_watcher(self) -> Any:
        if not self._watcher_tried:
            from autopoiesis.index.watcher import ChangeWatcher

            self._watcher_tried = True
            self._watcher = ChangeWatcher.start(self.repo.root)
        return self._watcher

    def catch_up(self, *, timeout: float = 60.0) -> SyncReport:
        """Bring the index up to date with HEAD and the working tree, re-indexing only
        what differs from what it recorded.

        In a process that searches repeatedly, an inotify watcher (index/watcher.py)
        answers "nothing changed since the last full check" in microseconds; any event
        at all, or no watcher, means the full check below."""
        watcher = self._change_watcher()
        if watcher is not None:
            if watcher.changed():
                watcher.verified = False
            elif watcher.verified:
                return SyncReport()
        report = self._catch_up_full(timeout)
        if watcher is not None:
            watcher.verified = True  # armed before this check, so later changes are pending
        return report

    def _catch_up_full(self, timeout: float) -> SyncReport:
        started = time.monotonic()
        state = tree_state(self.repo.root)
        if state.ok and self.is_fresh(state):
            return SyncReport()
        with self._write_lock(timeout):
            state = tree_state(self.repo.root)  # again: the other holder may have moved things on
            if self.needs_rebuild() or self._meta("head") is None:
                return self.rebuild_full()
            if state.ok and self.is_fresh(state):
                return SyncReport()
            head, dirty = self._recorded()
            changed = changed_between(self.repo.root, head or "", state.head) if head != state.head else []
            if changed is None or not state.ok:
                candidates = None  # git cannot tell: compare every file by stat and hash
            else:
                candidates = set(changed) | set(dirty) | set(state.dirty)
            return self._reconcile(candidates, state, started)

    def _reconcile(self, candidates: set[str] | None, state: TreeState, started: float) -> SyncReport:
        self.warnings.clear()
        known = {p: (m, s, h) for p, m, s, h in self.conn.execute("SELECT path, mtime_ns, size, content_hash FROM files")} \
            if candidates is None else {}
        if candidates is None:
            on_disk = {self.repo.rel(p) for p in self.repo.iter_markdown()}
            candidates = on_disk | set(known)
        to_write, to_remove, unchanged = [], [], 0
        for path in sorted(candidates):
            row = known.get(path) if known else self.conn.execute(
                "SELECT mtime_ns, size, content_hash FROM files WHERE path = ?", (path,)).fetchone()
            full = self.repo.root / path
            try:
                st = os.stat(full)
            except OSError:
                st = None
            if st is None or category_of(path) is None:
                if row is not None:
                    to_remove.append(path)
                continue
            if row is not None and row[0] == st.st_mtime_ns and row[1] == st.st_size:
                unchanged += 1
                continue
            got = self._read(path)
            if got is None:
                if row is not None:
                    to_remove.append(path)
                continue
            if row is not None and row[2] == got[2]:
                unchanged += 1  # touched, not changed: refresh the stat only
                self.conn.execute("UPDATE files SET mtime_ns = ?, modified = ?, size = ? WHERE path = ?",
                                  (got[1].st_mtime_ns, got[1].st_mtime, got[1].st_size, path))
                continue
            to_write.append((path, *got))
        self._begin()
        try:
            for p in to_remove:
                self._delete_path(p)
            embedded = 0
            for i in range(0, len(to_write), BATCH_FILES):
                embedded += self._write_files(to_write[i : i + BATCH_FILES])
            self._record_state(state)
            self._commit()
        except BaseException:
            self._rollback()
            raise
        return SyncReport(indexed=len(to_write), removed=len(to_remove), unchanged=unchanged, embedded=embedded,
                          seconds=time.monotonic() - started, warnings=tuple(self.warnings))

    # ── searching ──
    def search(
        self,
        query: str,
        limit: int = 10,
        category: str | None = None,
        *,
        merge: str | None = None,
        explain: bool = False,
        fresh: bool = True,
        per_file: int = 3,
    ) -> list[SearchResult]:
        """Hybrid search, best first: chunks (a turn in its exchange, a heading section),
        at most PER_FILE from one file, never two overlapping. FRESH=False skips the catch-up."""
        if fresh:
            self.catch_up()
        limit = max(1, int(limit))
        terms = query_terms(query)
        if not terms:
            return []
        merge = self.merge_for(merge or self.repo.config.search.merge)
        cands = self._scored(query, terms, max(CANDIDATES, limit * 5), category, merge)
        if not cands:
            return []
        return self._per_file(cands, terms, limit, merge, explain, per_file)

    def merge_for(self, merge: str) -> str:
        """The merge AUTO stands for with this embedder: reciprocal-rank fusion for the
        lexical offline one (its similarities are word overlaps, on another scale than BM25),
        the weighted score merge for semantic ones, whose similarities carry meaning BM25
        lacks (on LoCoMo with all-MiniLM-L6-v2: MRR 0.834 weighted vs 0.793 RRF)."""
        if merge != "auto":
            return merge
        return "rrf" if getattr(self.embedder, "lexical", False) else "weighted"

    def _ranking_terms(self, terms: list[str]) -> list[str]:
        """TERMS without those in more than half of all chunks, unless every term is.

        FTS5's bm25() gives such a term an IDF of 1e-6 (it clamps log((N-n+0.5)/(n+0.5))
        when that is not positive), so it changes no chunk's score; but OR-ed into the
        MATCH it makes FTS5 score nearly every row: 20-30 ms of a query at 10,000 files.
        Counting a term's chunks stops at N/2, so the check costs ~1 ms for a common term."""
        if len(terms) < 2:
            return terms
        total = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        half = total // 2
        count = "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)"
        kept = [t for t in terms if self.conn.execute(count, (fts_match([t]), half + 1)).fetchone()[0] <= half]
        return kept or terms

    def _scored(self, query: str, terms: list[str], n: int, category: str | None, merge: str) -> dict[int, "_Candidate"]:
        """Candidate chunks from BM25 and KNN, each with its merged score."""
        cands: dict[int, _Candidate] = {}
        match = fts_match(self._ranking_terms(terms))
        if category:
            rows = self.conn.execute(
                "SELECT f.rowid, bm25(chunks_fts) AS r FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
                " WHERE chunks_fts MATCH ? AND c.category = ? ORDER BY r LIMIT ?", (match, category, n))
        else:
            rows = self.conn.execute("SELECT rowid, bm25(chunks_fts) AS r FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY r LIMIT ?", (match, n))
        for rank, (cid, score) in enumerate(rows.fetchall(), 1):
            cands[cid] = _Candidate(cid, bm25=-score, bm25_rank=rank)
        qvec = self.embedder.embed_query(" ".join(terms) if len(query) > 4000 else query)
        floor = float(getattr(self.embedder, "min_similarity", 0.0))
        # a query with no embeddable features (all stopwords) has a zero vector: no KNN
        if not any(qvec):
            knn: list[tuple[int, float]] = []
        elif getattr(self.embedder, "lexical", False) and len(cands) >= RERANK_MIN_CANDIDATES:
            # A lexical embedder (the offline hashing one) finds what BM25 finds; over the
            # whole index its KNN was 60% of a query's time at 10k files and, on LoCoMo,
            # ranked no better than scoring only BM25's candidates. So it only re-scores
            # them, unless BM25 found too little (typos, word forms the stemmer misses):
            # then the full KNN is its fuzzy fallback.
            knn = self._vec_distances(list(cands), qvec)
        else:
            knn = self._knn(qvec, n, category)
        hits = [(cid, d) for cid, d in knn if d is not None and 1.0 - d >= floor]
        for rank, (cid, dist) in enumerate(hits, 1):
            c = cands.setdefault(cid, _Candidate(cid))
            c.distance, c.vec_rank = dist, rank
        if cands:
            self._merge(cands, merge, match, qvec)
        return cands

    def _merge(self, cands: dict[int, _Candidate], merge: str, match: str | None, qvec: bytes) -> None:
        cfg = self.repo.config.search
        if merge == "weighted":
            self._fill_missing(cands, match, qvec)
            top_bm25 = max((c.bm25 or 0.0) for c in cands.values()) or 1.0
            for c in cands.values():
                sim = max(0.0, 1.0 - c.distance) if c.distance is not None else 0.0
                c.score = cfg.bm25_weight * ((c.bm25 or 0.0) / top_bm25) + cfg.vector_weight * sim
        else:
            # How much a vector rank counts next to a BM25 rank: 1 for semantic embedders;
            # the offline hashing embedder is lexical too, so it mostly refines BM25.
            vw = float(getattr(self.embedder, "rrf_weight", 1.0))
            for c in cands.values():
                c.score = (1.0 / (RRF_K + c.bm25_rank) if c.bm25_rank else 0.0) + (vw / (RRF_K + c.vec_rank) if c.vec_rank else 0.0)

    def _vec_distances(self, ids: list[int], qvec: bytes) -> list[tuple[int, float]]:
        """Cosine distances of the chunks IDS to QVEC, nearest first."""
        if not ids:
            return []
        if self.vec_loaded:
            # One point lookup per id: vec0 answers `rowid IN (...)` with a scan of the whole
            # table (~20 ms at 30k chunks), a rowid equality with a lookup (~15 us with the
            # small vec0 blobs of a re-scoring index, see db.VEC_CHUNK_SIZE_RERANK).
            sql = "SELECT vec_distance_cosine(embedding, ?) FROM chunks_vec WHERE rowid = ?"
            out = []
            for cid in ids:
                row = self.conn.execute(sql, (qvec, cid)).fetchone()
                if row is not None and row[0] is not None:
                    out.append((int(cid), float(row[0])))
        else:
            q = from_blob(qvec)
            marks = ",".join("?" * len(ids))
            rows = self.conn.execute(f"SELECT id, embedding FROM chunks_vecplain WHERE id IN ({marks})", ids)
            out = [(int(r), 1.0 - sum(a * b for a, b in zip(from_blob(v), q))) for r, v in rows]
        out.sort(key=lambda x: (x[1], x[0]))
        return out

    def _knn(self, qvec: bytes, k: int, category: str | None) -> list[tuple[int, float]]:
        if self.vec_loaded:
            sql = "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?"
            args: list[Any] = [qvec, k]
            if category:
                sql += " AND category = ?"
                args.append(category)
            return [(int(r), float(d)) for r, d in self.conn.execute(sql + " ORDER BY distance", args) if d is not None]
        # No sqlite-vec: a bounded cosine scan in memory (numpy when it is there).
        sql = "SELECT id, embedding FROM chunks_vecplain" + (" WHERE category = ?" if category else "") + " LIMIT ?"
        rows = self.conn.execute(sql, ([category] if category else []) + [PLAIN_SCAN_MAX]).fetchall()
        if not rows:
            return []
        try:
            import numpy as np

            mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
            sims = mat @ np.frombuffer(qvec, dtype=np.float32)
            order = np.argsort(-sims)[:k]
            return [(int(rows[i][0]), float(1.0 - sims[i])) for i in order]
        except ImportError:
            q = from_blob(qvec)
            scored = [(r[0], 1.0 - sum(a * b for a, b in zip(from_blob(r[1]), q))) for r in rows]
            return sorted(scored, key=lambda x: x[1])[:k]

    def _fill_missing(self, cands: dict[int, _Candidate], match: str | None, qvec: bytes) -> None:
        """For the weighted merge, each candidate needs both scores, not just the list it came from."""
        need_vec = [c.chunk_id for c in cands.values() if c.distance is None]
        for cid, d in self._vec_distances(need_vec, qvec):
            cands[cid].distance = d
        need_bm = [c.chunk_id for c in cands.values() if c.bm25 is None]
        if need_bm and match:
            marks = ",".join("?" * len(need_bm))
            for cid, s in self.conn.execute(
                f"SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})", [match, *need_bm]
            ):
                cands[cid].bm25 = -float(s)

    def _per_file(self, cands: dict[int, _Candidate], terms: list[str], limit: int, merge: str, explain: bool, per_file: int = 1) -> list[SearchResult]:
        ids = list(cands)
        info: dict[int, tuple] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            for row in self.conn.execute(
                f"SELECT id, path, category, start_line, end_line, turn_time, heading, text FROM chunks WHERE id IN ({','.join('?' * len(part))})",
                part,
            ):
                info[row[0]] = row
        # Best chunks first; a chunk overlapping the lines of one already taken from the
        # same file adds nothing new (turn windows overlap), so it is skipped.
        ranked = sorted((c for c in cands.values() if c.chunk_id in info), key=lambda c: (-c.score, c.chunk_id))
        taken: list[tuple[_Candidate, int]] = []
        per_path: dict[str, list[tuple[int, int]]] = {}
        for c in ranked:
            _, path, _, start, end, _, _, _ = info[c.chunk_id]
            spans = per_path.setdefault(path, [])
            if any(start <= e and s <= end for s, e in spans) or len(spans) >= per_file:
                continue
            spans.append((start, end))
            taken.append((c, len(spans)))
            if len(taken) >= limit:
                break
        results = []
        for best, nth in taken:
            _, path, category, start, end, turn_time, heading, text = info[best.chunk_id]
            total = best.score
            detail = None
            if explain:
                detail = {
                    "merge": merge,
                    "chunk_score": round(best.score, 6),
                    "nth_in_file": nth,
                    "bm25": None if best.bm25 is None else round(best.bm25, 4),
                    "bm25_rank": best.bm25_rank,
                    "vector_similarity": None if best.distance is None else round(1.0 - best.distance, 4),
                    "vector_rank": best.vec_rank,
                    "terms": terms,
                }
            results.append(
                SearchResult(
                    path=path, start_line=start, end_line=end, score=round(total, 6),
                    # a section's first line is the label added for ranking; the snippet shows the file's text
                    snippet=make_snippet(text.split("\n", 1)[1] if heading and text.startswith(heading.split(" > ")[0]) and "\n" in text and not turn_time else text, terms),
                    category=category, turn_time=turn_time, archived=category == "archive" or path.startswith("archive/"),
                    heading=heading, explain=detail,
                )
            )
        return results

    # ── status ──
    def status(self) -> IndexStatus:
        state = tree_state(self.repo.root)
        head, dirty = self._recorded()
        on_disk = {self.repo.rel(p) for p in self.repo.iter_markdown()}
        rows = {p: (m, s) for p, m, s in self.conn.execute("SELECT path, mtime_ns, size FROM files")}
        stale = sorted(p for p in on_disk ^ set(rows))
        for p in on_disk & set(rows):
            try:
                st = os.stat(self.repo.root / p)
            except OSError:
                continue
            if (st.st_mtime_ns, st.st_size) != rows[p]:
                stale.append(p)
        return IndexStatus(
            db_path=str(self.db_path), exists=self.db_path.exists(), files_indexed=len(rows), chunks=self._count("chunks"),
            files_in_repo=len(on_disk), head_indexed=head or "", head_now=state.head,
            fresh=self.is_fresh(state) and not stale, embedder=self._meta("embedder") or "",
            dimensions=int(self._meta("dimensions") or 0), chunker_version=self._meta("chunker_version") or "",
            sqlite=self.info, stale_paths=tuple(sorted(set(stale))),  # type: ignore[arg-type]
        )


def make_snippet(text: str, terms: list[str], width: int = 240) -> str:
    """About WIDTH characters of TEXT around the first query term (prefix match, so a
    stemmed hit like 'painting' for 'paint' is found)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    pos = -1
    for t in terms:
        m = re.search(r"\b" + re.escape(t[: max(4, len(t) - 2)]), flat, re.IGNORECASE)
        if m and (pos < 0 or m.start() < pos):
            pos = m.start()
    start = max(0, pos - width // 3) if pos >= 0 else 0
    piece = flat[start : start + width]
    return ("\u2026" if start > 0 else "") + piece + ("\u2026" if start + width < len(flat) else "")


# ── fallback: git grep / ripgrep ──
def grep_search(repo: MemoryRepo, query: str, limit: int = 10, category: str | None = None) -> tuple[list[SearchResult], str]:
    """Search without the index: files ranked by how many distinct query terms they
    contain, then by matching lines. Returns (results, tool used)."""
    terms = query_terms(query)[:16]
    if not terms:
        return [], "git grep"
    dirs = [d for d in ("knowledge", "topics", "raw/conversations", "archive") if (repo.root / d).is_dir()]
    if not dirs:
        return [], "git grep"
    pattern_args = [a for t in terms for a in ("-e", t)]
    if shutil.which("rg"):
        tool = "ripgrep"
        cmd = ["rg", "-n", "-i", "-F", "--no-heading", "--with-filename", "-g", "*.md", *pattern_args, "--", *dirs]
    else:
        tool = "git grep"
        cmd = ["git", "grep", "-n", "-i", "-I", "-F", "--untracked", "--no-color", *pattern_args, "--", *[f"{d}/*.md" for d in dirs]]
    proc = subprocess.run(cmd, cwd=repo.root, capture_output=True, check=False)
    hits: dict[str, list[tuple[int, str]]] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split(":", 2)
        if len(parts) < 3 or not parts[1].isdigit():
            continue
        hits.setdefault(parts[0], []).append((int(parts[1]), parts[2]))
    ranked = []
    for path, lines in hits.items():
        cat = category_of(path)
        if cat is None or (category and cat != category):
            continue
        joined = " ".join(t for _, t in lines).lower()
        distinct = sum(1 for t in terms if t in joined)
        ranked.append((distinct + min(len(lines), 20) / 100.0, path, lines, cat))
    ranked.sort(key=lambda x: (-x[0], x[1]))
    results = [
        SearchResult(path=path, start_line=lines[0][0], end_line=lines[0][0], snippet=make_snippet(lines[0][1], terms),
                     score=round(score, 4), category=cat, archived=cat == "archive")
        for score, path, lines, cat in ranked[:limit]
    ]
    return results, tool


def _spawn_rebuild(repo: MemoryRepo) -> None:
    from autopoiesis.index.sync import spawn_background

    spawn_background(repo, rebuild=True)


def search_outcome(
    query: str,
    limit: int = 10,
    category: str | None = None,
    *,
    repo: MemoryRepo | None = None,
    merge: str | None = None,
    explain: bool = False,
    index: SearchIndex | None = None,
) -> SearchOutcome:
    """search() with where the answer came from and any notices (what the CLI prints)."""
    repo = repo or MemoryRepo.locate()
    notices: list[str] = []
    if index is None:
        if not repo.index_path.exists():
            results, tool = grep_search(repo, query, limit, category)
            return SearchOutcome(results, tool, (f"no search index yet: answered with {tool}; "
                                                 "build it with `autopoiesis index rebuild`.",))
        try:
            index = SearchIndex(repo)
        except Exception as exc:  # unreadable (permissions), a locked-down filesystem, ...
            results, tool = grep_search(repo, query, limit, category)
            return SearchOutcome(results, tool, (f"the search index could not be opened ({exc}); answered with {tool}. "
                                                 "Run `autopoiesis index rebuild` (or `autopoiesis doctor`).",))
        own = True
    else:
        own = False
    try:
        notices.extend(index.warnings)
        try:
            results = index.search(query, limit, category, merge=merge, explain=explain)
        except (SearchIndexError, OSError) as exc:
            results, tool = grep_search(repo, query, limit, category)
            return SearchOutcome(results, tool, (*notices, f"index search failed ({exc}); answered with {tool}."))
        except index._db_error as exc:
            index.close()
            moved = dbmod.move_aside(index.db_path) if index.db_path.exists() else None
            _spawn_rebuild(repo)
            results, tool = grep_search(repo, query, limit, category)
            where = f" and moved it to {moved.name}" if moved else ""
            return SearchOutcome(results, tool, (*notices, f"memory.db is corrupt ({exc}){where}; answered with {tool} "
                                                 "while the index is rebuilt in the background."))
        notices.extend(w for w in index.warnings if w not in notices)
        return SearchOutcome(results, "index", tuple(notices))
    finally:
        if own:
            index.close()


def search(query: str, limit: int = 10, category: str | None = None, *, repo: MemoryRepo | None = None,
           merge: str | None = None, explain: bool = False) -> list[SearchResult]:
    """Unified hybrid search across knowledge, topics, transcripts and archive (design §9.1).
    When the index is missing or broken the answer comes from git grep, with an
    IndexFallbackWarning."""
    outcome = search_outcome(query, limit, category, repo=repo, merge=merge, explain=explain)
    for notice in outcome.notices:
        if outcome.source != "index":
            warnings.warn(notice, IndexFallbackWarning, stacklevel=2)
    return outcome.results
