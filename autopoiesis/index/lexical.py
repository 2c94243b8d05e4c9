"""BM25 candidates of a query, ranked as FTS5's bm25() ranks them (best first, ties by
chunk id), by one of two roads that give the same scores, bit for bit:

* **FTS5**: one MATCH of the terms, OR-ed, `ORDER BY bm25(), rowid`. FTS5 scores every
  row that matches any term (~0.6 us a row), so a query with a common word costs ~10 ms
  at 40,000 chunks. No set-up: what a one-shot process (the CLI, the prompt hook) uses.
* **Arrays**: each term's share of the score is summed here. FTS5 scores the rare terms
  (a few hundred rows each); a common term's share comes from its postings (postings.py)
  with numpy, never through FTS5's per-row scoring. A process takes this road from its
  second search on (or when numpy is already loaded, or from the first when it said it
  will search many times): a one-shot search would pay more for importing numpy than it
  saves. A category filter keeps the chunks of that category (their ids read once until
  memory.db changes) before the best are taken, as FTS5's join on `chunks` does: a
  filtered search (the viewer's timeline, ~180 ms by FTS5 at 10,000 files) costs what an
  unfiltered one does.

Terms in more than half of all chunks are left out when another term is in some chunk:
FTS5 gives them an IDF of 1e-6, so they change no score, but OR-ed into a MATCH they make
it score nearly every row. `Bm25Hits.left_out` names them, and `every_term` ranks with
them: what search does when the other terms hold fewer chunks than it wants results.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from typing import Any

from autopoiesis.index import fts, postings
from autopoiesis.index.text import fts_match

_HAS_NUMPY = importlib.util.find_spec("numpy") is not None


@dataclass
class Bm25Hits:
    """The best chunks for a query: ids and their BM25 scores (positive, higher better)."""

    ids: list[int]
    scores: list[float]
    match: str | None  # the MATCH expression of the terms that ranked
    road: str = "fts5"  # "fts5" or "arrays": how they were ranked (the same either way)
    _lookup: Any = field(default=None, repr=False)
    # the terms left out as in more than half of all chunks (see the module's docstring)
    left_out: tuple[str, ...] = ()

    def score_of(self, ids: list[int]) -> dict[int, float]:
        """BM25 scores of any chunks IDS that match (absent: they do not)."""
        return self._lookup(ids) if self._lookup is not None and ids else {}


class Bm25Ranker:
    """Ranks the chunks of one IndexStore by BM25 (store.conn, store.reusable)."""

    def __init__(self, store: Any):
        self.store = store
        self.searches = 0
        self.arrays_from = (
            2  # the search that takes the arrays road (1: a process known to search many times)
        )
        self._acc: Any = None  # numpy buffers of _sum
        self._seen: Any = None

    # ── what may be reused until memory.db changes ──
    def _fresh_state(self) -> dict[str, Any]:
        reusable = self.store.reusable()
        state = reusable.get("bm25")
        if state is None:
            state = reusable["bm25"] = {"totals": fts.totals(self.store.conn), "postings": {}}
        return state

    def tokenizer(self) -> fts.Tokenizer:
        assert self.store.tokenizer is not None  # made with the store's connection
        return self.store.tokenizer

    def rank(
        self, terms: list[str], k: int, category: str | None = None, *, every_term: bool = False
    ) -> Bm25Hits:
        """The K best chunks for TERMS (in CATEGORY); EVERY_TERM: none left out as common."""
        self.searches += 1
        if not terms:
            return Bm25Hits([], [], None)
        if _HAS_NUMPY and (self.searches >= self.arrays_from or "numpy" in sys.modules):
            try:
                hits = self.rank_arrays(terms, k, category, every_term=every_term)
            except (
                self.store.db_error
            ):  # e.g. no room for the tokenizer's temporary table: FTS5 alone still answers
                hits = None
            if hits is not None:
                return hits
        return self.rank_fts(terms, k, category, every_term=every_term)

    # ── FTS5 ──
    def kept_terms(self, terms: list[str]) -> list[str]:
        """TERMS without those in more than half of all chunks, unless no other term is in
        any chunk (`_ranking`): FTS5 counts each term's rows, stopping at half."""
        if len(terms) < 2:
            return terms
        half = self._fresh_state()["totals"][0] // 2
        conn = self.store.conn
        count = "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)"
        rows = [conn.execute(count, (fts_match([t]), half + 1)).fetchone()[0] for t in terms]
        return [terms[i] for i in _ranking(rows, half)]

    def unknown_terms(self, terms: list[str]) -> list[str]:
        """TERMS no chunk holds (a typo, a word form the stemmer does not join): one
        `LIMIT 1` match each."""
        conn = self.store.conn
        probe = "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1"
        return [t for t in terms if conn.execute(probe, (fts_match([t]),)).fetchone() is None]

    def rank_fts(
        self, terms: list[str], k: int, category: str | None = None, *, every_term: bool = False
    ) -> Bm25Hits:
        """The K best chunks by one FTS5 MATCH of TERMS (EVERY_TERM: none left out)."""
        conn = self.store.conn
        kept = terms if every_term else self.kept_terms(terms)
        match = fts_match(kept)
        if category:
            rows = conn.execute(
                "SELECT f.rowid, bm25(chunks_fts) AS r FROM chunks_fts f JOIN chunks c ON c.id = "
                "f.rowid"
                " WHERE chunks_fts MATCH ? AND c.category = ? ORDER BY r, f.rowid LIMIT ?",
                (match, category, k),
            ).fetchall()
        else:
            rows = conn.execute(
                "SELECT rowid, bm25(chunks_fts) AS r FROM chunks_fts WHERE chunks_fts MATCH ? "
                "ORDER BY r, rowid LIMIT ?",
                (match, k),
            ).fetchall()

        def lookup(ids: list[int]) -> dict[int, float]:
            # each `rowid IN` value re-opens the MATCH (FTS5 recounts every term): fine for a few
            # ids
            marks = ",".join("?" * len(ids))
            return {
                cid: -float(s)
                for cid, s in conn.execute(
                    "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? AND "
                    f"rowid IN ({marks})",
                    [match, *ids],
                )
            }

        return Bm25Hits(
            [r[0] for r in rows],
            [-float(r[1]) for r in rows],
            match,
            "fts5",
            lookup,
            tuple(t for t in terms if t not in kept),
        )

    # ── arrays ──
    def postings_of(self, token: str) -> Any:
        """(ids, frequencies, lengths) of a listed token as numpy arrays: its build list
        without the removed chunks, with the added ones; None when it is not listed."""
        import numpy as np

        state = self._fresh_state()
        conn = self.store.conn
        if "listed" not in state:
            state["listed"] = (
                postings.listed_terms(conn) if postings.built_max_id(conn) is not None else set()
            )
            state["removed"] = np.array(
                [r for (r,) in conn.execute("SELECT chunk_id FROM term_postings_removed")],
                dtype=np.int64,
            )
        if token not in state["listed"]:
            return None
        ids, freqs, lengths = postings.decode(
            *conn.execute(
                "SELECT n, ids, freqs, lengths FROM term_postings WHERE term = ?", (token,)
            ).fetchone()
        )
        if len(state["removed"]):
            keep = ~np.isin(ids, state["removed"])
            ids, freqs, lengths = ids[keep], freqs[keep], lengths[keep]
        added = conn.execute(
            "SELECT chunk_id, freq, length FROM term_postings_added WHERE term = ?", (token,)
        ).fetchall()
        if added:
            extra = np.array(added, dtype=np.float64).reshape(-1, 3)
            ids = np.concatenate([ids, extra[:, 0].astype(np.int64)])
            freqs = np.concatenate([freqs, extra[:, 1]])
            lengths = np.concatenate([lengths, extra[:, 2]])
        return ids, freqs, lengths

    def _share(self, token: str, state: dict[str, Any]) -> Any:
        """(ids, each chunk's share of the score) of a listed token, or None: the term score
        of fts.K1's comment over its postings, once a token until memory.db changes."""
        cache = state["postings"]
        if token not in cache:
            lists = self.postings_of(token)
            if lists is not None:
                ids, freqs, lengths = lists
                n_rows, n_tokens = state["totals"]
                weight, avgdl = fts.idf(n_rows, len(ids)), n_tokens / n_rows
                lists = (
                    ids,
                    weight
                    * (
                        (freqs * (fts.K1 + 1.0))
                        / (freqs + fts.K1 * (1 - fts.B + fts.B * lengths / avgdl))
                    ),
                )
            if len(cache) > 256:
                cache.clear()
            cache[token] = lists
        return cache[token]

    def in_category(self, category: str) -> Any:
        """A numpy mask over chunk ids: True for the chunks of CATEGORY (kept until
        memory.db changes)."""
        import numpy as np

        state = self._fresh_state()
        masks = state.setdefault("categories", {})
        if category not in masks:
            rows = self.store.conn.execute(
                "SELECT id FROM chunks WHERE category = ?", (category,)
            ).fetchall()
            ids = np.fromiter((r for (r,) in rows), dtype=np.int64, count=len(rows))
            mask = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
            mask[ids] = True
            masks[category] = mask
        return masks[category]

    def rank_arrays(
        self, terms: list[str], k: int, category: str | None = None, *, every_term: bool = False
    ) -> Bm25Hits | None:
        """The K best chunks for TERMS (in CATEGORY), each term's share summed here (needs
        numpy); None when no term is listed in the postings (then one FTS5 MATCH is as
        fast)."""
        import numpy as np

        state = self._fresh_state()
        conn = self.store.conn
        n_rows = state["totals"][0]
        if not n_rows:
            return None
        tokens = self.tokenizer().tokens(terms)
        listed = [self._share(tk[0], state) if len(tk) == 1 else None for tk in tokens]
        if all(p is None for p in listed):
            return None  # only rare terms: one FTS5 MATCH is as fast
        # each term's rows and its share of their scores, in query order (FTS5's summing order)
        shares: list[tuple[str, Any, Any]] = []
        for term, share in zip(terms, listed):
            if share is None:
                rows = conn.execute(
                    "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?",
                    (fts_match([term]),),
                ).fetchall()
                ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                shares.append(
                    (
                        term,
                        ids,
                        -np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)),
                    )
                )
            else:
                shares.append((term, *share))
        if len(shares) >= 2 and not every_term:
            shares = [shares[i] for i in _ranking([len(s[1]) for s in shares], n_rows // 2)]
        kept = [term for term, _, _ in shares]
        match = fts_match(kept)
        union, scores = self._sum(shares)
        n = len(union)
        order = self._best(union, scores, k, self.in_category(category) if category else None)

        def lookup(ids: list[int]) -> dict[int, float]:
            by_id = np.argsort(union)
            pos = np.minimum(np.searchsorted(union, ids, sorter=by_id), max(0, n - 1))
            return {
                int(i): float(scores[by_id[p]])
                for i, p in zip(ids, pos)
                if n and union[by_id[p]] == i
            }

        return Bm25Hits(
            union[order].tolist(),
            scores[order].tolist(),
            match,
            "arrays",
            lookup,
            tuple(t for t in terms if t not in kept),
        )

    @staticmethod
    def _best(union: Any, scores: Any, k: int, mask: Any) -> Any:
        """The positions in UNION of its K best chunks, best first, ties by chunk id (as
        `ORDER BY bm25(), rowid`); MASK: only the chunks it holds True for."""
        import numpy as np

        among = np.arange(len(union))
        if mask is not None:
            inside = union < len(mask)
            inside[inside] = mask[union[inside]]
            among = among[inside]
        n = len(among)
        take = min(k, n)
        if take < n:
            part = scores[among]
            threshold = np.partition(part, n - take)[n - take]
            above = among[part > threshold]
            ties = among[part == threshold]
            ties = ties[np.argsort(union[ties], kind="stable")][: take - len(above)]
            chosen = np.concatenate([above, ties])
        else:
            chosen = among
        return chosen[np.lexsort((union[chosen], -scores[chosen]))]

    def _sum(self, shares: list[tuple[str, Any, Any]]) -> tuple[Any, Any]:
        """(chunk ids, scores): every chunk in any share once, its shares added in order
        from 0.0 as bm25() adds them. Two dense buffers, kept between searches and reset
        where used, do it in time proportional to the rows."""
        import numpy as np

        top = max((int(ids.max()) for _, ids, _ in shares if len(ids)), default=-1)
        if top < 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if self._acc is None or len(self._acc) <= top:
            self._acc = np.zeros(top + 1 + top // 4)
            self._seen = np.zeros(len(self._acc), dtype=bool)
        acc, seen = self._acc, self._seen
        parts = []
        for _, ids, share in shares:
            acc[ids] += share
            new = ids[~seen[ids]]
            seen[new] = True
            parts.append(new)
        union = np.concatenate(parts)
        scores = acc[union]
        acc[union] = 0.0
        seen[union] = False
        return union, scores


def _ranking(rows: list[int], half: int) -> list[int]:
    """The positions of the terms that rank, given how many chunks hold each (ROWS, counted
    up to HALF + 1): those in at most HALF chunks that are in any. A term in more than half
    of them scores next to nothing (FTS5's IDF floor) but still orders its chunks, so it is
    left out only when another term is in some chunk: "what did we decide about deploy"
    in a memory where every note says deploy and none says decide would otherwise rank
    nothing, and search would fall back to a full vector scan."""
    kept = [i for i, n in enumerate(rows) if 0 < n <= half]
    return kept or list(range(len(rows)))
