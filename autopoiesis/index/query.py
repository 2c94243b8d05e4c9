"""Answering a query from memory.db (design §7, §9.2): BM25 and vector candidates, their
merge, and the per-file results with snippets.

1. *BM25*: the query's content terms, each quoted and OR-ed (user text is never FTS5
   syntax), against chunk text with FTS5's bm25().
2. *Vector*: the query's embedding against the chunks' with sqlite-vec's KNN
   (`embedding MATCH ? AND k = ?`), or a bounded in-memory cosine when sqlite-vec
   cannot load.
3. *Merge* per chunk: reciprocal-rank fusion (rank-based, so the two score scales never
   need calibrating) or the design's 0.4 x BM25 + 0.6 x vector; `auto` is the embedder's
   preferred merge.
4. *Results* are chunks, best first: a transcript turn with the turns around it, or a
   heading section, as `path:start-end`. A chunk overlapping one already taken from the
   same file is skipped (turn windows overlap), and one file gives at most `per_file`
   results, so a long session cannot crowd out the rest. The parts of a session that was
   continued (formats.transcript: "Parts") count as one file here.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from autopoiesis.formats.transcript import session_key
from autopoiesis.index.embedders import Embedder, from_blob
from autopoiesis.index.store import IndexStore
from autopoiesis.index.text import fts_match, query_terms

RRF_K = 60  # the constant of Cormack et al.; large enough that rank 1 does not swamp rank 5
CANDIDATES = 100  # chunks taken from each of BM25 and KNN before merging
# A lexical embedder re-scores BM25's candidates instead of searching the whole index
# when BM25 found at least this many (see QueryEngine.scored).
RERANK_MIN_CANDIDATES = 20
PLAIN_SCAN_MAX = 20000  # bound of the in-memory cosine scan without sqlite-vec


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


@dataclass
class Candidate:
    """A chunk on its way to a result: its BM25 and vector evidence, and the merged score."""

    chunk_id: int
    bm25: float | None = None
    bm25_rank: int | None = None
    distance: float | None = None
    vec_rank: int | None = None
    score: float = 0.0


@dataclass(frozen=True)
class MergeWeights:
    """The weighted merge's weights (search.bm25_weight, search.vector_weight)."""

    bm25: float = 0.4
    vector: float = 0.6


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


class QueryEngine:
    """Ranks the chunks of one IndexStore for a query."""

    def __init__(self, store: IndexStore):
        self.store = store

    @property
    def embedder(self) -> Embedder:
        return self.store.embedder

    def search(self, query: str, limit: int, category: str | None, merge: str, weights: MergeWeights,
               *, explain: bool = False, per_file: int = 3) -> list[SearchResult]:
        """Chunks for QUERY, best first (MERGE already resolved by merge_for)."""
        limit = max(1, int(limit))
        terms = query_terms(query)
        if not terms:
            return []
        cands = self.scored(query, terms, max(CANDIDATES, limit * 5), category, merge, weights)
        if not cands:
            return []
        return self.per_file(cands, terms, limit, merge, explain, per_file)

    def merge_for(self, merge: str) -> str:
        """The merge AUTO stands for with this embedder: its preferred one. Reciprocal-rank
        fusion for the lexical offline one (its similarities are word overlaps, on another
        scale than BM25), the weighted score merge for semantic ones, whose similarities
        carry meaning BM25 lacks (on LoCoMo with all-MiniLM-L6-v2: MRR 0.834 weighted vs
        0.793 RRF)."""
        return self.embedder.preferred_merge if merge == "auto" else merge

    def ranking_terms(self, terms: list[str]) -> list[str]:
        """TERMS without those in more than half of all chunks, unless every term is.

        FTS5's bm25() gives such a term an IDF of 1e-6 (it clamps log((N-n+0.5)/(n+0.5))
        when that is not positive), so it changes no chunk's score; but OR-ed into the
        MATCH it makes FTS5 score nearly every row: 20-30 ms of a query at 10,000 files.
        Counting a term's chunks stops at N/2, so the check costs ~1 ms for a common term."""
        if len(terms) < 2:
            return terms
        conn = self.store.conn
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        half = total // 2
        count = "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)"
        kept = [t for t in terms if conn.execute(count, (fts_match([t]), half + 1)).fetchone()[0] <= half]
        return kept or terms

    def scored(self, query: str, terms: list[str], n: int, category: str | None, merge: str,
               weights: MergeWeights) -> dict[int, Candidate]:
        """Candidate chunks from BM25 and KNN, each with its merged score."""
        conn = self.store.conn
        cands: dict[int, Candidate] = {}
        match = fts_match(self.ranking_terms(terms))
        if category:
            rows = conn.execute(
                "SELECT f.rowid, bm25(chunks_fts) AS r FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
                " WHERE chunks_fts MATCH ? AND c.category = ? ORDER BY r LIMIT ?", (match, category, n))
        else:
            rows = conn.execute("SELECT rowid, bm25(chunks_fts) AS r FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY r LIMIT ?", (match, n))
        for rank, (cid, score) in enumerate(rows.fetchall(), 1):
            cands[cid] = Candidate(cid, bm25=-score, bm25_rank=rank)
        embedder = self.embedder
        qvec = embedder.embed_query(" ".join(terms) if len(query) > 4000 else query)
        # a query with no embeddable features (all stopwords) has a zero vector: no KNN
        if not any(qvec):
            knn: list[tuple[int, float]] = []
        elif embedder.lexical and len(cands) >= RERANK_MIN_CANDIDATES:
            # A lexical embedder (the offline hashing one) finds what BM25 finds; over the
            # whole index its KNN was 60% of a query's time at 10k files and, on LoCoMo,
            # ranked no better than scoring only BM25's candidates. So it only re-scores
            # them, unless BM25 found too little (typos, word forms the stemmer misses):
            # then the full KNN is its fuzzy fallback.
            knn = self.vec_distances(list(cands), qvec)
        else:
            knn = self.knn(qvec, n, category)
        hits = [(cid, d) for cid, d in knn if d is not None and 1.0 - d >= embedder.min_similarity]
        for rank, (cid, dist) in enumerate(hits, 1):
            c = cands.setdefault(cid, Candidate(cid))
            c.distance, c.vec_rank = dist, rank
        if cands:
            self._merge(cands, merge, match, qvec, weights)
        return cands

    def _merge(self, cands: dict[int, Candidate], merge: str, match: str | None, qvec: bytes, weights: MergeWeights) -> None:
        if merge == "weighted":
            self._fill_missing(cands, match, qvec)
            top_bm25 = max((c.bm25 or 0.0) for c in cands.values()) or 1.0
            for c in cands.values():
                sim = max(0.0, 1.0 - c.distance) if c.distance is not None else 0.0
                c.score = weights.bm25 * ((c.bm25 or 0.0) / top_bm25) + weights.vector * sim
        else:
            # How much a vector rank counts next to a BM25 rank: 1 for semantic embedders;
            # the offline hashing embedder is lexical too, so it mostly refines BM25.
            vw = float(self.embedder.rrf_weight)
            for c in cands.values():
                c.score = (1.0 / (RRF_K + c.bm25_rank) if c.bm25_rank else 0.0) + (vw / (RRF_K + c.vec_rank) if c.vec_rank else 0.0)

    def vec_distances(self, ids: list[int], qvec: bytes) -> list[tuple[int, float]]:
        """Cosine distances of the chunks IDS to QVEC, nearest first."""
        if not ids:
            return []
        conn = self.store.conn
        if self.store.vec_loaded:
            # One point lookup per id: vec0 answers `rowid IN (...)` with a scan of the whole
            # table (~20 ms at 30k chunks), a rowid equality with a lookup (~15 us with the
            # small vec0 blobs of a re-scoring index, see db.VEC_CHUNK_SIZE_RERANK).
            sql = "SELECT vec_distance_cosine(embedding, ?) FROM chunks_vec WHERE rowid = ?"
            out = []
            for cid in ids:
                row = conn.execute(sql, (qvec, cid)).fetchone()
                if row is not None and row[0] is not None:
                    out.append((int(cid), float(row[0])))
        else:
            q = from_blob(qvec)
            marks = ",".join("?" * len(ids))
            rows = conn.execute(f"SELECT id, embedding FROM chunks_vecplain WHERE id IN ({marks})", ids)
            out = [(int(r), 1.0 - sum(a * b for a, b in zip(from_blob(v), q))) for r, v in rows]
        out.sort(key=lambda x: (x[1], x[0]))
        return out

    def knn(self, qvec: bytes, k: int, category: str | None) -> list[tuple[int, float]]:
        """The K chunks nearest to QVEC (in CATEGORY), nearest first."""
        conn = self.store.conn
        if self.store.vec_loaded:
            sql = "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?"
            args: list[Any] = [qvec, k]
            if category:
                sql += " AND category = ?"
                args.append(category)
            return [(int(r), float(d)) for r, d in conn.execute(sql + " ORDER BY distance", args) if d is not None]
        # No sqlite-vec: a bounded cosine scan in memory (numpy when it is there).
        sql = "SELECT id, embedding FROM chunks_vecplain" + (" WHERE category = ?" if category else "") + " LIMIT ?"
        rows = conn.execute(sql, ([category] if category else []) + [PLAIN_SCAN_MAX]).fetchall()
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

    def _fill_missing(self, cands: dict[int, Candidate], match: str | None, qvec: bytes) -> None:
        """For the weighted merge, each candidate needs both scores, not just the list it came from."""
        need_vec = [c.chunk_id for c in cands.values() if c.distance is None]
        for cid, d in self.vec_distances(need_vec, qvec):
            cands[cid].distance = d
        need_bm = [c.chunk_id for c in cands.values() if c.bm25 is None]
        if need_bm and match:
            marks = ",".join("?" * len(need_bm))
            for cid, s in self.store.conn.execute(
                f"SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})", [match, *need_bm]
            ):
                cands[cid].bm25 = -float(s)

    def per_file(self, cands: dict[int, Candidate], terms: list[str], limit: int, merge: str, explain: bool,
                 per_file: int = 1) -> list[SearchResult]:
        """The best chunks as results: at most PER_FILE a file, never two overlapping."""
        ids = list(cands)
        info: dict[int, tuple] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            for row in self.store.conn.execute(
                f"SELECT id, path, category, start_line, end_line, turn_time, heading, text FROM chunks WHERE id IN ({','.join('?' * len(part))})",
                part,
            ):
                info[row[0]] = row
        # Best chunks first; a chunk overlapping the lines of one already taken from the
        # same file adds nothing new (turn windows overlap), so it is skipped.
        ranked = sorted((c for c in cands.values() if c.chunk_id in info), key=lambda c: (-c.score, c.chunk_id))
        taken: list[tuple[Candidate, int]] = []
        per_path: dict[str, list[tuple[int, int]]] = {}
        per_session: dict[str, int] = {}  # results per file, the parts of one session counted together
        for c in ranked:
            _, path, _, start, end, _, _, _ = info[c.chunk_id]
            spans = per_path.setdefault(path, [])
            group = (session_key(path) if path.startswith("raw/conversations/") else None) or path
            if any(start <= e and s <= end for s, e in spans) or per_session.get(group, 0) >= per_file:
                continue
            spans.append((start, end))
            per_session[group] = per_session.get(group, 0) + 1
            taken.append((c, per_session[group]))
            if len(taken) >= limit:
                break
        return [self._result(best, nth, info[best.chunk_id], terms, merge, explain) for best, nth in taken]

    @staticmethod
    def _result(best: Candidate, nth: int, row: tuple, terms: list[str], merge: str, explain: bool) -> SearchResult:
        _, path, category, start, end, turn_time, heading, text = row
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
        # a section's first line is the label added for ranking; the snippet shows the file's text
        labelled = heading and text.startswith(heading.split(" > ")[0]) and "\n" in text and not turn_time
        return SearchResult(
            path=path, start_line=start, end_line=end, score=round(best.score, 6),
            snippet=make_snippet(text.split("\n", 1)[1] if labelled else text, terms),
            category=category, turn_time=turn_time, archived=category == "archive" or path.startswith("archive/"),
            heading=heading, explain=detail,
        )
