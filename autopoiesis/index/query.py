"""Answering a query from memory.db (docs/design.md#search, docs/design.md#system-api): BM25 and
vector candidates, their
merge, and the per-file results with snippets.

1. *BM25*: the query's content terms, each quoted and OR-ed (user text is never FTS5
   syntax), ranked as FTS5's bm25() ranks them (lexical.Bm25Ranker).
2. *Vector*: the query's embedding against the chunks' with sqlite-vec's KNN
   (`embedding MATCH ? AND k = ?`), or a bounded in-memory cosine when sqlite-vec
   cannot load. A lexical embedder re-scores BM25's candidates instead. Skipped in
   `bm25` mode, where BM25 alone ranks.
3. *Merge* per chunk: reciprocal-rank fusion (rank-based, so the two score scales never
   need calibrating) or the design's 0.4 x BM25 + 0.6 x vector; `auto` is the embedder's
   preferred merge.
4. *Results* are chunks, best first: a transcript turn with the turns around it, or a
   heading section, as `path:start-end`. A chunk overlapping one already taken from the
   same file is skipped (turn windows overlap), and one file gives at most `per_file`
   results, so a long session cannot crowd out the rest. The parts of a session that was
   continued (formats.transcript: "Parts") count as one file here. Only the chunks taken
   are read in full and get a snippet.
5. *Project*: given the current project, the chunks of other projects count
   projects.OTHER_PROJECT_FACTOR of their score, so the project's own and global chunks
   come first unless another project's fit much better.
6. *The user's own words*: a chunk whose central turn is the user of an agent session
   counts USER_TURN_FACTOR of its score (see there).
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

from autopoiesis.core.config import SearchConfig
from autopoiesis.core.paths import team_of
from autopoiesis.formats.transcript_names import session_key
from autopoiesis.index import plainvec
from autopoiesis.index.embedders import Embedder
from autopoiesis.index.files import shipped_hashes
from autopoiesis.index.lexical import Bm25Hits, Bm25Ranker
from autopoiesis.index.projects import (
    OTHER_PROJECT_FACTOR,
    KnownProjects,
    chunk_projects,
    owning_project,
)
from autopoiesis.index.store import IndexStore
from autopoiesis.index.text import query_terms

RRF_K = 60  # the constant of Cormack et al.; large enough that rank 1 does not swamp rank 5
# Chunks taken from each of BM25 and KNN before merging. The vector re-scores BM25's
# candidates, so this is also how deep in BM25's ranking a chunk the vector likes can come
# from (coding questions, turn recall@10: 0.715 with 100, 0.740 with 200, as --mode bm25;
# LoCoMo unchanged but for two questions of 760 at recall@5; one query costs what 100 did
# before plainvec read only the query's components).
CANDIDATES = 200
# A lexical embedder re-scores BM25's candidates instead of searching the whole index
# when BM25 found at least this many (see QueryEngine.scored).
RERANK_MIN_CANDIDATES = 20
PLAIN_SCAN_MAX = 20000  # bound of the in-memory cosine scan without sqlite-vec
WEAK_SIMILARITY = 0.5
_ID_DATE = re.compile(r"\{id: (\d{4})(\d\d)(\d\d)-")
_PATH_DATE = re.compile(r"(\d{4})[/-](\d\d)[/-](\d\d)")
# Results a file (a session) may give at most: enough for the session that holds the
# answer to show the turns around it; a coding session runs to hundreds of turns, and its
# best chunk is often not the one that answers (coding questions, bench/bench_coding.py:
# turn recall@10 0.63 with 3, 0.68 with 5; with 10, 0.764 -> 0.789 and, on the second set,
# whose questions no setting was tuned on, 0.772 -> 0.802; LoCoMo's short sessions are
# unchanged). A search of ten results has no cap then; one of more has.
PER_FILE = 10
COVERED_SHARE = 0.1
# A turn chunk whose lines are mostly shown by a result taken before it, but whose own turn
# is not, counts this much of its score (_Picker): the turn after a result's last, or
# before its first, is often the one that answers, but the turns around it are shown
# already. Coding questions (bench/bench_coding.py, in process), turn recall@10: 0.789 ->
# 0.797, streamed from elsewhere 0.764 -> 0.772, as Markdown turns 0.780 -> 0.789;
# LoCoMo's session recall@5 the same, 0.933 (0.930 with 0.7, 0.913 with 1: a session's
# short turns fill the top five). The second set, measured after: imported and streamed
# from elsewhere the same, as Markdown turns 0.748 -> 0.757.
PARTLY_SHOWN_FACTOR = 0.5
# In an agent's session the user speaks rarely and briefly, and what they say -- an
# instruction, a decision, a correction, a preference -- is what a memory is kept for;
# the agent's long turns around it repeat the same words many times over and outrank it
# on BM25. A chunk whose central turn is the session's user counts this much of its
# merged score. Only the user of an agent session (whose agent turns carry no name): a
# conversation between named people ("Caroline (user)", "Melanie (agent)") has no such
# asymmetry. Measured on the coding questions (bench/bench_coding.py): turn recall@10
# 0.68 -> 0.72 (1.1: 0.71, 1.3: 0.71);
# LoCoMo unchanged (no unnamed user there).
USER_TURN_FACTOR = 1.2
# A file still as the template ships it (an identity file nobody filled in, a starter
# topic) holds nothing the memory learned; its generic words ("memory", "review", "what
# I know") outranked the sessions that answer. Its chunks count this much of their score:
# found when nothing else fits, never in the way (LoCoMo dev session recall@5 0.926 ->
# 0.930, MRR 0.823 -> 0.825 with rrf at 0.5, the same with 0.1; coding questions
# unchanged). A quarter since the weighted merge is the default: its scores keep their
# distances, and a shipped SOUL.md matching two and a half times as well as a session at
# half its score still came first (tests/index/test_shipped_files.py); both dev sets are
# the same from 0.5 to 0.25 under either merge.
SHIPPED_FACTOR = 0.25
MODES = ("hybrid", "bm25")  # BM25 and vectors merged (the default), or BM25 alone


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
    project: str | None = None  # the project the file is about; None: global
    explain: dict[str, Any] | None = None
    # YYYY-MM-DD the hit is from: its turn's, else its entry's (the id's date), else its path's
    date: str | None = None
    # found by meaning alone, and not closely: no word of the query is in it and the vector
    # similarity is under WEAK_SIMILARITY (`search` says so rather than pass it off as a match)
    weak: bool = False
    team: str | None = None  # the team whose shared memory holds it (shared/<team>/)
    # a transcript hit's own turn (or piece of a long one): START..END hold it with the
    # turns around it (its exchange); None for a section, whose lines are all its own
    own_start: int | None = None
    own_end: int | None = None

    def describe(self, explain: bool = False) -> str:
        """The hit as `autopoiesis search` prints it (and the demo, which shows that command):
        score, `path:start-end`, (category, project, date), its flags, then the snippet on
        an indented line; with EXPLAIN and the explanation, how the score was made."""
        where = ", ".join(x for x in (self.category, self.project, self.date) if x)
        flags = (
            (" [archived]" if self.archived else "")
            + (f" [team:{self.team}]" if self.team else "")
            + ("  (weak: no word of the query in it)" if self.weak else "")
        )
        out = (
            f"{self.score:.4f}  {self.path}:{self.start_line}-{self.end_line}  ({where}){flags}"
            f"\n    {self.snippet}"
        )
        if explain and self.explain:
            e = self.explain
            out += (
                f"\n    explain: merge={e['merge']} nth_in_file={e['nth_in_file']} "
                f"chunk_score={e['chunk_score']} "
                + _evidence("bm25", e["bm25"], e["bm25_rank"], "no word of the query")
                + " "
                + _evidence(
                    "vector_similarity",
                    e["vector_similarity"],
                    e["vector_rank"],
                    "not among the nearest",
                )
            )
            # the priors that scaled the merged score (USER_TURN_FACTOR and the others say why)
            factors = [
                f"{name}={e[f'{name}_factor']}"
                for name in ("user_turn", "other_project", "shipped", "partly_shown")
                if e.get(f"{name}_factor") is not None
            ]
            if factors:
                out += " factors: " + " ".join(factors)
        return out

    def to_dict(self) -> dict[str, Any]:
        data = {
            f.name: getattr(self, f.name) for f in fields(self)
        }  # asdict() deep-copies: ~60 us a result
        if data["explain"] is None:
            del data["explain"]
        else:
            data["explain"] = dict(data["explain"], terms=list(data["explain"]["terms"]))
        return data


def _evidence(name: str, value: Any, rank: Any, missing: str) -> str:
    return f"{name}={value} (rank {rank})" if value is not None else f"{name}: {missing}"


@dataclass
class Candidate:
    """A chunk on its way to a result: its BM25 and vector evidence, and the merged score."""

    chunk_id: int
    bm25: float | None = None
    bm25_rank: int | None = None
    distance: float | None = None
    vec_rank: int | None = None
    score: float = 0.0
    other_project: bool = False  # of another project than the one asked for
    user_turn: bool = False  # centred on the user of an agent session (USER_TURN_FACTOR)
    shipped: bool = False  # of a file as the template ships it (SHIPPED_FACTOR)
    partly_shown: float | None = None  # its window shown, its own turn not (_Picker)


@dataclass(frozen=True)
class MergeWeights:
    """The weighted merge's weights (search.bm25_weight, search.vector_weight)."""

    bm25: float = SearchConfig().bm25_weight
    vector: float = SearchConfig().vector_weight


def snippet_pattern(terms: list[str]) -> re.Pattern[str] | None:
    """What make_snippet looks for: any term's first letters at a word start (a prefix, so a
    stemmed hit like 'painting' for 'paint' is found)."""
    if not terms:
        return None
    return re.compile(
        r"\b(?:" + "|".join(re.escape(t[: max(4, len(t) - 2)]) for t in terms) + ")", re.IGNORECASE
    )


def make_snippet(
    text: str, terms: list[str], width: int = 240, pattern: re.Pattern[str] | None = None
) -> str:
    """About WIDTH characters of TEXT around the first place a query term starts
    (PATTERN: snippet_pattern(TERMS), when the caller made it already)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    m = (pattern or snippet_pattern(terms) or re.compile("(?!)")).search(flat)
    start = max(0, m.start() - width // 3) if m else 0
    piece = flat[start : start + width]
    return ("\u2026" if start > 0 else "") + piece + ("\u2026" if start + width < len(flat) else "")


def mostly_covered(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    """Whether COVERED_SHARE (a tenth) or more of the lines START..END lie in SPANS (the
    line ranges of the results already taken from the same file). Turn windows overlap:
    the chunk of the turn next to one taken repeats most of it and adds little; but a long
    agent turn beside a short user turn taken before shares only that turn's lines, and
    its own are new. (From a tenth to three quarters, the coding questions' recall@10 is
    the same.)"""
    covered = 0
    for s, e in spans:
        covered += max(0, min(end, e) - max(start, s) + 1)
    return covered >= COVERED_SHARE * (end - start + 1)


class QueryEngine:
    """Ranks the chunks of one IndexStore for a query."""

    def __init__(self, store: IndexStore):
        self.store = store
        self.bm25 = Bm25Ranker(store)

    @property
    def embedder(self) -> Embedder:
        return self.store.embedder

    def search(
        self,
        query: str,
        limit: int,
        category: str | None,
        merge: str,
        weights: MergeWeights,
        *,
        explain: bool = False,
        per_file: int = PER_FILE,
        mode: str = "hybrid",
        project: str | None = None,
    ) -> list[SearchResult]:
        """Chunks for QUERY, best first (MERGE already resolved by merge_for; MODE one of
        MODES; PROJECT, when given, the current project: its chunks and global ones first)."""
        limit = max(1, int(limit))
        terms = query_terms(query)
        if not terms:
            return []
        n = max(CANDIDATES, limit * 5)
        if mode == "bm25":
            hits = self.bm25.rank(terms, n, category)
            cands = {
                cid: Candidate(cid, bm25=s, bm25_rank=rank, score=s)
                for rank, (cid, s) in enumerate(zip(hits.ids, hits.scores), 1)
            }
            merge = "bm25"
        else:
            cands = self.scored(query, terms, n, category, merge, weights, fill=limit)
        if not cands:
            return []
        return self.per_file(cands, terms, limit, merge, explain, per_file, project)

    def merge_for(self, merge: str) -> str:
        """The merge AUTO stands for with this embedder: its preferred one (the weighted
        score merge for every built-in embedder: on LoCoMo with all-MiniLM-L6-v2, MRR 0.834
        weighted vs 0.793 RRF; with the offline one see index/embedders/offline.py)."""
        return self.embedder.preferred_merge if merge == "auto" else merge

    def ranking_terms(self, terms: list[str]) -> list[str]:
        """TERMS without those in more than half of all chunks, unless no other term is in
        any chunk (see lexical)."""
        return self.bm25.kept_terms(terms)

    def scored(
        self,
        query: str,
        terms: list[str],
        n: int,
        category: str | None,
        merge: str,
        weights: MergeWeights,
        *,
        fill: int = RERANK_MIN_CANDIDATES,
    ) -> dict[int, Candidate]:
        """Candidate chunks from BM25 and KNN, each with its merged score (FILL: the results
        the caller wants, see below)."""
        hits = self.bm25.rank(terms, n, category)
        embedder = self.embedder
        if (
            embedder.lexical
            and hits.left_out
            and len(hits.ids) < fill
            and not self.bm25.unknown_terms(terms)
        ):
            # Too few chunks hold the query's rarer words, and a word in more than half of
            # all chunks was left out ("deploy" beside a name four chunks hold): the chunks
            # holding it too fill the candidates, as BM25 ranks them with it, rather than
            # a full KNN (50 ms at 40,000 chunks), the fuzzy fallback for a word no chunk
            # holds, which the lexical embedder would rank by the same words.
            hits = self.bm25.rank(terms, n, category, every_term=True)
        cands = {
            cid: Candidate(cid, bm25=s, bm25_rank=rank)
            for rank, (cid, s) in enumerate(zip(hits.ids, hits.scores), 1)
        }
        qvec = embedder.embed_query(" ".join(terms) if len(query) > 4000 else query)
        # a query with no embeddable features (all stopwords) has a zero vector: no KNN
        if not qvec.strip(b"\x00"):
            knn: list[tuple[int, float]] = []
        elif embedder.lexical and (
            len(cands) >= RERANK_MIN_CANDIDATES
            or (len(cands) >= fill and not self.bm25.unknown_terms(terms))
        ):
            # A lexical embedder (the offline hashing one) finds what BM25 finds; over the
            # whole index its KNN was 60% of a query's time at 10k files and, on LoCoMo,
            # ranked no better than scoring only BM25's candidates. So it only re-scores
            # them, unless BM25 found too little -- fewer chunks than the results asked
            # for, or few and a term is in no chunk at all (a typo, a word form the stemmer
            # misses): then the full KNN (~50 ms at 40,000 chunks) is its fuzzy fallback,
            # its character trigrams finding the near words. (LoCoMo: the same recall with
            # 38 full KNNs of 760 questions instead of 66.)
            knn = self.vec_distances(list(cands), qvec)
        else:
            knn = self.knn(qvec, n, category)
        hits_vec = [
            (cid, d) for cid, d in knn if d is not None and 1.0 - d >= embedder.min_similarity
        ]
        for rank, (cid, dist) in enumerate(hits_vec, 1):
            c = cands.setdefault(cid, Candidate(cid))
            c.distance, c.vec_rank = dist, rank
        if cands:
            self._merge(cands, merge, hits, qvec, weights, dict(knn))
        return cands

    def _merge(
        self,
        cands: dict[int, Candidate],
        merge: str,
        hits: Bm25Hits,
        qvec: bytes,
        weights: MergeWeights,
        distances: dict[int, float],
    ) -> None:
        """Each candidate's merged score (DISTANCES: those known already, the nearest and
        the re-scored, a similarity under the embedder's least too)."""
        if merge == "weighted":
            self._fill_missing(cands, hits, qvec, distances)
            top_bm25 = max((c.bm25 or 0.0) for c in cands.values()) or 1.0
            for c in cands.values():
                sim = max(0.0, 1.0 - c.distance) if c.distance is not None else 0.0
                c.score = weights.bm25 * ((c.bm25 or 0.0) / top_bm25) + weights.vector * sim
        else:
            # How much a vector rank counts next to a BM25 rank: 1 for semantic embedders;
            # the offline hashing embedder is lexical too, so it mostly refines BM25.
            vw = float(self.embedder.rrf_weight)
            for c in cands.values():
                c.score = (1.0 / (RRF_K + c.bm25_rank) if c.bm25_rank else 0.0) + (
                    vw / (RRF_K + c.vec_rank) if c.vec_rank else 0.0
                )

    def vec_distances(self, ids: list[int], qvec: bytes) -> list[tuple[int, float]]:
        """Cosine distances of the chunks IDS to QVEC, nearest first."""
        if not ids:
            return []
        conn = self.store.conn
        if self.store.uses_vec0:
            # One statement of point lookups: vec0 answers `rowid IN (...)` with a scan of the
            # whole table (~20 ms at 30k chunks), a join on rowid with a lookup per row.
            rows = conn.execute(
                "SELECT j.value, vec_distance_cosine(v.embedding, ?) FROM json_each(?) j"
                " JOIN chunks_vec v ON v.rowid = j.value",
                (qvec, json.dumps(ids)),
            )
            out = [(int(cid), float(d)) for cid, d in rows if d is not None]
        else:  # plain rows (plainvec.py): scored exactly here
            rows = conn.execute(
                "SELECT id, embedding, norm FROM chunks_vecplain WHERE id IN "
                f"({','.join('?' * len(ids))})",
                ids,
            ).fetchall()
            return plainvec.distances(rows, qvec)
        out.sort(key=lambda x: (x[1], x[0]))
        return out

    def knn(self, qvec: bytes, k: int, category: str | None) -> list[tuple[int, float]]:
        """The K chunks nearest to QVEC (in CATEGORY), nearest first."""
        conn = self.store.conn
        where, args = (" WHERE category = ?", [category]) if category else ("", [])
        if self.store.uses_vec0:
            sql = "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?" + (
                " AND category = ?" if category else ""
            )
            return [
                (int(r), float(d))
                for r, d in conn.execute(sql + " ORDER BY distance", [qvec, k, *args])
                if d is not None
            ]
        if self.store.vec_loaded:
            # plain rows (plainvec.py): sqlite-vec scans their int8 top halves, and the
            # nearest of those are re-scored exactly (no NULL distance: zero vectors get no
            # row, see IndexStore.write_files; and ORDER BY the result column itself, as any
            # expression of it would compute the distance again)
            near = [
                r
                for (r,) in conn.execute(
                    f"SELECT id FROM (SELECT id, {plainvec.COARSE} AS d FROM "
                    f"chunks_vecplain{where} ORDER BY d, id LIMIT ?)",
                    [
                        self.embedder.dimensions,
                        plainvec.coarse(qvec),
                        *args,
                        k * plainvec.OVERFETCH,
                    ],
                )
            ]
            return self.vec_distances(near, qvec)[:k]
        # No sqlite-vec: a bounded exact scan in memory.
        rows = conn.execute(
            f"SELECT id, embedding, norm FROM chunks_vecplain{where} LIMIT ?",
            [*args, PLAIN_SCAN_MAX],
        ).fetchall()
        return plainvec.distances(rows, qvec)[:k]

    def _fill_missing(
        self, cands: dict[int, Candidate], hits: Bm25Hits, qvec: bytes, known: dict[int, float]
    ) -> None:
        """For the weighted merge, each candidate needs both scores, not just the list it came
        from (KNOWN: distances computed already)."""
        need_vec = []
        for c in cands.values():
            if c.distance is None:
                if c.chunk_id in known:
                    c.distance = known[c.chunk_id]
                else:
                    need_vec.append(c.chunk_id)
        for cid, d in self.vec_distances(need_vec, qvec):
            cands[cid].distance = d
        need_bm = [c.chunk_id for c in cands.values() if c.bm25 is None]
        for cid, s in hits.score_of(need_bm).items():
            cands[cid].bm25 = s

    def per_file(
        self,
        cands: dict[int, Candidate],
        terms: list[str],
        limit: int,
        merge: str,
        explain: bool,
        per_file: int = 1,
        project: str | None = None,
        partly_shown: float = PARTLY_SHOWN_FACTOR,
    ) -> list[SearchResult]:
        """The best chunks as results: at most PER_FILE a file, never two overlapping.
        Candidates are placed in blocks, best first, reading only their lines; the text
        is read for the chunks taken. With PROJECT, another project's chunks count
        OTHER_PROJECT_FACTOR of their score. A chunk whose window is mostly shown but
        whose own turn is not counts PARTLY_SHOWN of its score (0: it is skipped)."""
        conn = self.store.conn
        self._prefer_project(cands, project)
        self._prefer_user_turns(cands)
        self._demote_shipped(cands)
        # Best chunks first; a chunk overlapping the lines of one already taken from the
        # same file adds little (turn windows overlap): skipped, or later (_Picker).
        ranked = sorted(cands.values(), key=lambda c: (-c.score, c.chunk_id))
        picker = _Picker(limit, per_file, partly_shown)
        block = max(4 * limit, 32)
        for i in range(0, len(ranked), block):
            part = ranked[i : i + block]
            where = {
                row[0]: _Placed(*row[1:])
                for row in conn.execute(
                    "SELECT id, path, start_line, end_line, body_hash, own_start, own_end "
                    f"FROM chunks WHERE id IN ({','.join('?' * len(part))})",
                    [c.chunk_id for c in part],
                )
            }
            for c in part:
                if c.chunk_id in where:
                    picker.offer(c, where[c.chunk_id])
                if picker.full:
                    break
            if picker.full:
                break
        picker.finish()
        taken = picker.taken
        ids = [c.chunk_id for c, _ in taken]
        info = (
            {
                row[0]: row
                for row in conn.execute(
                    "SELECT c.id, c.path, c.category, c.start_line, c.end_line, c.turn_time, "
                    "c.heading, chunk_text(f.chunks_z, c.text_start, c.text_len), f.project, "
                    "c.own_start, c.own_end "
                    "FROM chunks c LEFT JOIN files f ON f.path = "
                    f"c.path WHERE c.id IN ({','.join('?' * len(ids))})",
                    ids,
                )
            }
            if ids
            else {}
        )
        pattern = snippet_pattern(terms)
        known = KnownProjects(conn)
        return [
            self._result(best, nth, info[best.chunk_id], terms, merge, explain, known, pattern)
            for best, nth in taken
            if best.chunk_id in info
        ]

    def _prefer_project(self, cands: dict[int, Candidate], project: str | None) -> None:
        """Scale the score of the candidates of another project than PROJECT (if any)."""
        if project is None:
            return
        for cid, owner in chunk_projects(self.store.conn, cands, self.store.reusable()).items():
            if owner is not None and owner != project:
                cands[cid].score *= OTHER_PROJECT_FACTOR
                cands[cid].other_project = True

    def _prefer_user_turns(self, cands: dict[int, Candidate]) -> None:
        """Scale the score of the chunks centred on the user's turn of an agent session
        (chunking.Chunk.user_turn says which)."""
        for cid in self.user_turns(list(cands)):
            cands[cid].score *= USER_TURN_FACTOR
            cands[cid].user_turn = True

    def user_turns(self, ids: list[int]) -> list[int]:
        """The chunks of IDS centred on the user's turn of an agent session. A search looks
        up its candidates; the next ones of the same process, until memory.db changes, read
        all such chunks once (their partial index: a few thousand ids) and keep them: a
        process that searches many times (a batch, the daemon, an eval) pays for the lookup
        once, a one-shot one (the prompt hook) only for its own candidates."""
        if not ids:
            return []
        reusable = self.store.reusable()
        known = reusable.get("user_turns")
        if known is None and "user_turns_looked_up" not in reusable:
            reusable["user_turns_looked_up"] = True
            return [
                cid
                for (cid,) in self.store.conn.execute(
                    f"SELECT id FROM chunks WHERE id IN ({','.join('?' * len(ids))}) AND user_turn",
                    ids,
                )
            ]
        if known is None:
            known = reusable["user_turns"] = frozenset(
                cid for (cid,) in self.store.conn.execute("SELECT id FROM chunks WHERE user_turn")
            )
        return [cid for cid in ids if cid in known]

    def _demote_shipped(self, cands: dict[int, Candidate]) -> None:
        """Scale the score of the chunks of files still as the template ships them."""
        if not cands:
            return
        for cid in self._shipped_chunks() & cands.keys():
            cands[cid].score *= SHIPPED_FACTOR
            cands[cid].shipped = True

    def _shipped_chunks(self) -> frozenset[int]:
        """The chunks of files still as the template ships them (the dozen shipped files'
        chunks, whose file still has the shipped hash), kept until memory.db changes."""
        reusable = self.store.reusable()
        if "shipped" not in reusable:
            shipped = shipped_hashes()
            rows = self.store.conn.execute(
                "SELECT c.id, f.path, f.content_hash FROM files f JOIN chunks c ON c.path = "
                f"f.path WHERE f.path IN ({','.join('?' * len(shipped))})",
                list(shipped),
            )
            reusable["shipped"] = frozenset(
                cid for cid, path, digest in rows if shipped[path] == digest
            )
        return reusable["shipped"]

    @staticmethod
    def _result(
        best: Candidate,
        nth: int,
        row: tuple,
        terms: list[str],
        merge: str,
        explain: bool,
        known: Callable[[str], bool],
        pattern: re.Pattern[str] | None = None,
    ) -> SearchResult:
        _, path, category, start, end, turn_time, heading, text, project, own_start, own_end = row
        project = owning_project(path, project, known)
        detail = None
        if explain:
            detail = {
                "merge": merge,
                "chunk_score": round(best.score, 6),
                "nth_in_file": nth,
                "bm25": None if best.bm25 is None else round(best.bm25, 4),
                "bm25_rank": best.bm25_rank,
                "vector_similarity": None
                if best.distance is None
                else round(1.0 - best.distance, 4),
                "vector_rank": best.vec_rank,
                "other_project_factor": OTHER_PROJECT_FACTOR if best.other_project else None,
                "user_turn_factor": USER_TURN_FACTOR if best.user_turn else None,
                "shipped_factor": SHIPPED_FACTOR if best.shipped else None,
                "partly_shown_factor": best.partly_shown,
                "terms": terms,
            }
        # a section's first line is the label added for ranking; the snippet shows the file's text
        labelled = (
            heading and text.startswith(heading.split(" > ")[0]) and "\n" in text and not turn_time
        )
        similarity = None if best.distance is None else 1.0 - best.distance
        return SearchResult(
            path=path,
            date=_date_of(turn_time, text, path),
            weak=best.bm25 is None and (similarity is None or similarity < WEAK_SIMILARITY),
            start_line=start,
            end_line=end,
            score=round(best.score, 6),
            snippet=make_snippet(
                text.split("\n", 1)[1] if labelled else text, terms, pattern=pattern
            ),
            category=category,
            turn_time=turn_time,
            archived=category == "archive" or path.startswith("archive/"),
            heading=heading,
            project=project,
            explain=detail,
            team=team_of(path),
            own_start=own_start or None,
            own_end=own_end or None,
        )


class _Placed(NamedTuple):
    """Where a candidate chunk lies: its file, its lines, its words' hash, its own turn."""

    path: str
    start: int
    end: int
    body: str
    own_start: int
    own_end: int


class _Picker:
    """Takes the results from candidates offered best first: at most PER_FILE a session,
    the same pasted words once, and no chunk whose lines are mostly shown already
    (mostly_covered). A turn chunk whose window is, but whose own turn is not (the turn
    after the one a result ends on, with that one as its context), waits at PARTLY_SHOWN
    of its score (PARTLY_SHOWN_FACTOR; 0: skipped): what it adds is its own turn alone."""

    def __init__(self, limit: int, per_file: int, partly_shown: float) -> None:
        self.limit, self.per_file, self.partly_shown = limit, per_file, partly_shown
        self.taken: list[tuple[Candidate, int]] = []  # and its place among its file's
        self._spans: dict[str, list[tuple[int, int]]] = {}  # the lines taken, per file
        self._per_session: dict[str, int] = {}  # the parts of one session counted together
        self._bodies: set[str] = set()  # the body_hash of the turn chunks taken
        # (-score, chunk id, candidate, place): the partly shown, at their reduced score
        self._waiting: list[tuple[float, int, Candidate, _Placed]] = []

    @property
    def full(self) -> bool:
        return len(self.taken) >= self.limit

    def offer(self, c: Candidate, at: _Placed) -> None:
        """C at AT, after the waiting chunks that now score at least as well."""
        while self._waiting and -self._waiting[0][0] >= c.score and not self.full:
            _, _, w, w_at = heapq.heappop(self._waiting)
            self._take(w, w_at, waited=True)
        if not self.full:
            self._take(c, at, waited=False)

    def finish(self) -> None:
        """The waiting chunks, while there is room."""
        while self._waiting and not self.full:
            _, _, w, w_at = heapq.heappop(self._waiting)
            self._take(w, w_at, waited=True)

    def _take(self, c: Candidate, at: _Placed, waited: bool) -> None:
        if at.body and at.body in self._bodies:
            return  # the same words, pasted into another session: shown once
        group = (
            session_key(at.path) if at.path.startswith("raw/conversations/") else None
        ) or at.path
        if self._per_session.get(group, 0) >= self.per_file:
            return
        spans = self._spans.setdefault(at.path, [])
        own = at.own_start > 0 and not mostly_covered(at.own_start, at.own_end, spans)
        if waited:
            if not own:
                return  # a result taken meanwhile shows its own turn too
        elif mostly_covered(at.start, at.end, spans):
            if own and self.partly_shown > 0:
                c.score *= self.partly_shown
                c.partly_shown = self.partly_shown
                heapq.heappush(self._waiting, (-c.score, c.chunk_id, c, at))
            return
        spans.append((at.start, at.end))
        if at.body:
            self._bodies.add(at.body)
        self._per_session[group] = self._per_session.get(group, 0) + 1
        self.taken.append((c, self._per_session[group]))


def _date_of(turn_time: str | None, text: str, path: str) -> str | None:
    """The day a hit is from: its turn's time, its first entry id's date, or its path's."""
    if turn_time:
        return turn_time[:10]
    m = _ID_DATE.search(text) or _PATH_DATE.search(path)
    return f"{m[1]}-{m[2]}-{m[3]}" if m else None
