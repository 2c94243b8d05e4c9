"""Term postings: for each common token of chunks_fts, the chunks that hold it, how often,
and each chunk's length in tokens; what BM25 needs to score the token without FTS5
(fts.py says why, lexical.py uses them).

A token is *listed* when a full build finds it in at least LISTED_MIN chunks. Its lists
live in three tables of memory.db, written in the same transactions as the chunks:

  term_postings(term, n, ids, freqs, lengths)  the N postings at the last full build, as
                                             blobs of little-endian unsigned integers, each
                                             list as narrow as its values allow (`encode`)
  term_postings_added(term, chunk_id, ...)   chunks written since, for the listed tokens
  term_postings_removed(chunk_id)            chunks of the build deleted since

A listed token's chunks are its build list without the removed ones, plus the added ones.
Every number is FTS5's own: a build reads each token's rows and their bm25() values back
from chunks_fts and keeps a token only when its frequencies reproduce those values
exactly; a written chunk is cut into tokens by FTS5's tokenizer (fts.Tokenizer).
When the added and removed rows have grown, the background sync builds the lists again
(IndexStore.compact_postings); a full build always does.
"""

from __future__ import annotations

from array import array
from typing import Any

from autopoiesis.core.text import words
from autopoiesis.index import fts

LISTED_MIN = 300  # a token in fewer chunks is scored by FTS5 itself: at most ~0.3 ms
MAX_ID = 2**32 - 1  # ids, frequencies and lengths fit in little-endian uint32
SCHEMA = """
CREATE TABLE IF NOT EXISTS term_postings (
    term TEXT PRIMARY KEY, n INTEGER NOT NULL,
    ids BLOB NOT NULL, freqs BLOB NOT NULL, lengths BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS term_postings_added (
    term TEXT NOT NULL, chunk_id INTEGER NOT NULL, freq INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (term, chunk_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_term_postings_added_chunk ON term_postings_added(chunk_id);
CREATE TABLE IF NOT EXISTS term_postings_removed (chunk_id INTEGER PRIMARY KEY);
"""
# index_meta key: the highest chunk id at the last build of the lists ("" before one)
META_BUILT_MAX_ID = "postings_max_id"


# ── the lists' bytes ──
# Most postings are a frequency of 1 or 2 in a chunk of a few hundred tokens, a few chunks
# after the one before: 1, 2 and 2 bytes rather than three uint32 (12 bytes), which at
# 10,000 transcripts was 43 MB, more than the text. The width of each list is its byte
# length over N; ids are either N uint32, or (2N + 2 bytes) the first as uint32 and then
# the gaps from the id before as uint16.
def encode(ids: Any, freqs: Any, lengths: Any) -> tuple[bytes, bytes, bytes]:
    """The blobs of one token's postings (numpy arrays, ids ascending)."""
    gaps = ids[1:] - ids[:-1]
    if len(ids) > 1 and int(gaps.max()) <= 0xFFFF:
        ids_b = ids[:1].astype("<u4").tobytes() + gaps.astype("<u2").tobytes()
    else:
        ids_b = ids.astype("<u4").tobytes()
    return ids_b, _narrow(freqs).tobytes(), _narrow(lengths).tobytes()


def _narrow(values: Any) -> Any:
    top = int(values.max()) if len(values) else 0
    return values.astype("<u1" if top <= 0xFF else "<u2" if top <= 0xFFFF else "<u4")


_WIDTH = {1: "<u1", 2: "<u2", 4: "<u4"}


def decode(n: int, ids_b: bytes, freqs_b: bytes, lengths_b: bytes) -> tuple[Any, Any, Any]:
    """(ids as int64, frequencies and lengths as float64) of blobs `encode` made."""
    import numpy as np

    if not n:
        empty = np.zeros(0)
        return empty.astype(np.int64), empty, empty
    if len(ids_b) == 4 * n:
        ids = np.frombuffer(ids_b, dtype="<u4").astype(np.int64)
    else:
        ids = np.empty(n, dtype=np.int64)
        ids[0] = int.from_bytes(ids_b[:4], "little")
        ids[1:] = np.frombuffer(ids_b, dtype="<u2", offset=4)
        np.cumsum(ids, out=ids)
    freqs = np.frombuffer(freqs_b, dtype=_WIDTH[len(freqs_b) // n]).astype(np.float64)
    lengths = np.frombuffer(lengths_b, dtype=_WIDTH[len(lengths_b) // n]).astype(np.float64)
    return ids, freqs, lengths


def _set_meta(conn: Any, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)", (key, value))


def built_max_id(conn: Any) -> int | None:
    """The highest chunk id when the lists were built; None when there are none."""
    row = conn.execute(
        "SELECT value FROM index_meta WHERE key = ?", (META_BUILT_MAX_ID,)
    ).fetchone()
    return int(row[0]) if row and row[0] else None


def listed_terms(conn: Any) -> set[str]:
    return {t for (t,) in conn.execute("SELECT term FROM term_postings")}


def clear(conn: Any) -> None:
    conn.execute("DELETE FROM term_postings")
    conn.execute("DELETE FROM term_postings_added")
    conn.execute("DELETE FROM term_postings_removed")
    _set_meta(conn, META_BUILT_MAX_ID, "")


# ── writing, inside the store's transactions ──
def chunks_added(conn: Any, tokenizer: fts.Tokenizer, chunks: list[tuple[int, str]]) -> None:
    """Record the listed tokens of CHUNKS, (chunk id, text) just written to chunks_fts."""
    if not chunks or built_max_id(conn) is None:
        return
    listed = listed_terms(conn)
    if not listed:
        return
    lengths, freqs = tokenizer.counts(chunks)
    rows = [(term, doc, n, lengths[doc]) for term, doc, n in freqs if term in listed]
    conn.executemany(
        "INSERT OR REPLACE INTO term_postings_added(term, chunk_id, freq, length) VALUES (?, ?, "
        "?, ?)",
        rows,
    )


def chunks_removed(conn: Any, ids: list[int]) -> None:
    """Forget the chunks IDS (about to leave chunks_fts)."""
    built = built_max_id(conn)
    if not ids or built is None:
        return
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        conn.execute(
            f"DELETE FROM term_postings_added WHERE chunk_id IN ({','.join('?' * len(part))})", part
        )
    conn.executemany(
        "INSERT OR IGNORE INTO term_postings_removed(chunk_id) VALUES (?)",
        [(i,) for i in ids if i <= built],
    )


def needs_compaction(conn: Any, at_least: int = 1000) -> bool:
    """True when the rows added or removed since the build are a quarter of the lists' size
    (and AT_LEAST rows)."""
    if built_max_id(conn) is None:
        return False
    listed = conn.execute("SELECT coalesce(sum(n), 0) FROM term_postings").fetchone()[0]
    added = conn.execute("SELECT count(*) FROM term_postings_added").fetchone()[0]
    removed = conn.execute("SELECT count(*) FROM term_postings_removed").fetchone()[0]
    return added + removed > max(at_least, listed // 4)


# ── building the lists from chunks_fts ──
def _row_lengths(conn: Any) -> array:
    """Length in tokens of every row of chunks_fts, indexed by rowid."""
    top = conn.execute("SELECT max(id) FROM chunks_fts_docsize").fetchone()[0] or 0
    lengths = array("I", bytes(4 * (top + 1)))
    for rowid, size in conn.execute("SELECT id, sz FROM chunks_fts_docsize"):
        lengths[rowid] = fts.row_length(size)
    return lengths


def _representatives(conn: Any, tokenizer: fts.Tokenizer, tokens: set[str]) -> dict[str, str]:
    """For each of TOKENS, a word that FTS5 turns into exactly that token (a MATCH string
    is tokenized, and stemming a stem can change it: "databas" would become "databa").
    Most tokens are their own word; the others are looked for in the chunks' text."""
    ordered = sorted(tokens)
    found = {tok: tok for tok, got in zip(ordered, tokenizer.tokens(ordered)) if got == (tok,)}
    tried: set[str] = set(ordered)
    cursor = conn.execute(
        "SELECT chunk_text(f.chunks_z, c.text_start, c.text_len) FROM chunks c "
        "JOIN files f ON f.path = c.path ORDER BY c.id"
    )
    while len(found) < len(tokens):
        texts = cursor.fetchmany(200)
        if not texts:
            break
        batch = [w for (text,) in texts for w in dict.fromkeys(words(text)) if w not in tried]
        batch = list(dict.fromkeys(batch))
        tried.update(batch)
        for word, toks in zip(batch, tokenizer.tokens(batch)):
            if len(toks) == 1 and toks[0] in tokens and toks[0] not in found:
                found[toks[0]] = word
    tokenizer.forget()
    return found


def _token_list(
    conn: Any, word: str, n_hit: int, lengths: Any, n_rows: int, avgdl: float
) -> tuple[bytes, bytes, bytes] | None:
    """The blobs (`encode`: ids, frequencies, lengths) of the N_HIT rows holding WORD's token, each
    frequency solved from FTS5's own bm25() value and checked to give that value back bit
    for bit (the term score of fts.K1's comment, in its order); None when one does not (then the
    token is left to FTS5). Rows are read a slice at a time: a common token of a large
    index has hundreds of thousands."""
    import numpy as np  # a build has it loaded already (the offline embedder's batches)

    cursor = conn.execute(
        "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid",
        ('"' + word.replace('"', '""') + '"',),
    )
    weight = fts.idf(n_rows, n_hit)
    k1_plus = fts.K1 + 1.0
    parts: list[tuple[Any, Any, Any]] = []
    while rows := cursor.fetchmany(8192):
        pairs = np.array(rows, dtype=np.float64)
        ids = pairs[:, 0].astype(np.int64)
        score = -pairs[:, 1]
        dl = lengths[ids].astype(np.float64)
        k = fts.K1 * (1 - fts.B + fts.B * dl / avgdl)
        freq = np.rint(
            score * k / (weight * k1_plus - score)
        )  # score = idf * f * (k1 + 1) / (f + k): solve for f
        if (freq < 1).any() or not np.array_equal(weight * ((freq * k1_plus) / (freq + k)), score):
            return None
        parts.append((ids, freq, dl))
    if sum(len(p[0]) for p in parts) != n_hit:
        return None
    ids, freqs, dls = (np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(3))
    return encode(ids, freqs, dls)


def build(conn: Any, tokenizer: fts.Tokenizer) -> int:
    """Replace the lists with those of every token now in at least LISTED_MIN chunks.
    Returns how many tokens are listed."""
    clear(conn)
    n_rows, n_tokens = fts.pending_totals(conn)
    top = conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0
    listed = 0
    if n_rows >= LISTED_MIN and top <= MAX_ID:
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_fts_terms USING fts5vocab(main, "
            "chunks_fts, row)"
        )
        common = dict(
            conn.execute(
                "SELECT term, doc FROM temp.chunks_fts_terms WHERE doc >= ?", (LISTED_MIN,)
            )
        )
        if common:
            import numpy as np

            lengths = np.frombuffer(_row_lengths(conn), dtype=np.uint32)
            for token, word in sorted(_representatives(conn, tokenizer, set(common)).items()):
                got = _token_list(conn, word, common[token], lengths, n_rows, n_tokens / n_rows)
                if got is not None:
                    conn.execute(
                        "INSERT INTO term_postings(term, n, ids, freqs, lengths) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (token, common[token], *got),
                    )
                    listed += 1
    _set_meta(conn, META_BUILT_MAX_ID, str(top))
    return listed
