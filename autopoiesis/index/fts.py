"""What the index knows of FTS5's insides, in one place: how it cuts text into tokens, the
row count and token total it keeps, each row's length, and its bm25() formula.

Why: FTS5's bm25() costs ~0.6 us a matching row, so a query with a common word (one in
17,000 of 40,000 chunks) spends 10 ms scoring rows that never reach the top. BM25 is a
sum of one term per query phrase, each from (the phrase's frequency in the row, the
row's length, the phrase's document frequency, the table's row count and average
length), so with those numbers in hand a common term's contribution is computed with
array arithmetic instead (postings.py, lexical.py). The expressions here are FTS5's
(ext/fts5/fts5_aux.c, fts5Bm25Function), evaluated in the same order, so the scores
are FTS5's own, bit for bit: tests/test_index_lexical.py checks it.

Tokens come from FTS5 itself, never from a re-implementation: text is put into a
temporary FTS5 table with the same tokenizer and read back through fts5vocab.
"""

from __future__ import annotations

import math
from typing import Any

TOKENIZER = (
    "porter unicode61"  # memory.db's chunks_fts (db.BASE_SCHEMA) and the tokenizer table below
)
# One phrase's share of bm25() for one row (positive; bm25() returns minus the sum), as
# fts5_aux.c's fts5Bm25Function computes it, in this order, to the bit:
#     idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * length / avgdl)))
K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6  # FTS5 raises an IDF <= 0 (a phrase in more than half the rows) to this


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """SQLite's varint (FTS5 stores its counts with it): (value, next position)."""
    value = 0
    for i in range(9):
        byte = data[pos + i]
        if i == 8:
            return (value << 8) | byte, pos + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, pos + i + 1
    raise AssertionError("unreachable")


def totals(conn: Any) -> tuple[int, int]:
    """(rows, tokens) of chunks_fts: what bm25() calls nRow and nToken (its "averages" record)."""
    row = conn.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    n_rows, pos = read_varint(row[0], 0)
    n_tokens, _ = read_varint(row[0], pos)
    return n_rows, n_tokens


def pending_totals(conn: Any) -> tuple[int, int]:
    """(rows, tokens) of chunks_fts as bm25() counts them, inside a write transaction.
    FTS5 keeps its pending rows and totals in memory until the commit, so they are written
    first ('flush'), then read as totals() reads them. An SQLite without that command (3.40,
    the SQLite of Debian 12's Python) builds chunks_fts with its content, whose totals are
    its rows' lengths (FTS5 reads a deleted row's text to take it off them): they are
    counted from chunks_fts_docsize then. (A contentless table's totals keep its deleted
    rows: there only FTS5's own count is right.)"""
    from autopoiesis.index import db  # db imports this module

    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('flush')")
    except Exception as exc:  # the SQLite module's error: conn may be either module's
        if db.classify(exc) != db.OTHER:  # full, read-only, busy, corrupt: not the command
            raise
        n_rows, n_tokens = 0, 0
        for (size,) in conn.execute("SELECT sz FROM chunks_fts_docsize"):
            n_rows += 1
            n_tokens += row_length(size)
        return n_rows, n_tokens
    return totals(conn)


def row_length(size_blob: bytes) -> int:
    """A row's length in tokens from chunks_fts_docsize.sz (one column: one varint)."""
    return read_varint(size_blob, 0)[0]


def idf(n_rows: int, n_hit: int) -> float:
    value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    return value if value > 0.0 else IDF_FLOOR


class Tokenizer:
    """FTS5's tokens of any text, through a temporary FTS5 table on CONN with memory.db's
    tokenizer: exactly what chunks_fts stores and what MATCH looks up."""

    def __init__(self, conn: Any):
        self.conn = conn
        self._ready = False
        self._words: dict[str, tuple[str, ...]] = {}

    def _prepare(self) -> None:
        if not self._ready:
            self.conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.tokenizer USING fts5(text, "
                f"tokenize='{TOKENIZER}')"
            )
            self.conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.tokenizer_terms USING fts5vocab(temp, "
                "tokenizer, instance)"
            )
            self._ready = True

    def counts(
        self, texts: list[tuple[int, str]]
    ) -> tuple[dict[int, int], list[tuple[str, int, int]]]:
        """For (id, text) pairs: ({id: length in tokens}, [(token, id, frequency)])."""
        self._prepare()
        conn = self.conn
        conn.execute("DELETE FROM temp.tokenizer")
        conn.executemany("INSERT INTO temp.tokenizer(rowid, text) VALUES (?, ?)", texts)
        freqs = conn.execute(
            "SELECT term, doc, count(*) FROM temp.tokenizer_terms GROUP BY term, doc"
        ).fetchall()
        conn.execute("DELETE FROM temp.tokenizer")
        lengths: dict[int, int] = {}
        for _, doc, n in freqs:
            lengths[doc] = lengths.get(doc, 0) + n
        return lengths, freqs

    def forget(self) -> None:
        """Drop the remembered tokens of words (a build's lookups, not a search's)."""
        self._words.clear()

    def tokens(self, words: list[str]) -> list[tuple[str, ...]]:
        """The tokens FTS5 makes of each of WORDS (usually one: its stem), remembered."""
        missing = [w for w in dict.fromkeys(words) if w not in self._words]
        if missing:
            self._prepare()
            conn = self.conn
            conn.execute("DELETE FROM temp.tokenizer")
            conn.executemany(
                "INSERT INTO temp.tokenizer(rowid, text) VALUES (?, ?)", list(enumerate(missing, 1))
            )
            found: dict[int, list[str]] = {}
            for term, doc in conn.execute(
                "SELECT term, doc FROM temp.tokenizer_terms ORDER BY doc, offset"
            ):
                found.setdefault(doc, []).append(term)
            conn.execute("DELETE FROM temp.tokenizer")
            if len(self._words) > 50_000:
                self._words.clear()
            for i, w in enumerate(missing, 1):
                self._words[w] = tuple(found.get(i, ()))
        return [self._words[w] for w in words]
