"""The offline default embedder: signed feature hashing of word unigrams, word bigrams
and character trigrams (so "paint"/"painting"/"painted" share features and typos still
overlap). Deterministic, no download, no fitting, pure stdlib: the search CLI embeds a
query without importing numpy. A build embeds its chunks in batches with numpy instead,
to the same bits (`_embed_many`): a per-feature Python loop was most of a build's time."""

from __future__ import annotations

import math
import sys
import zlib
from array import array
from typing import TYPE_CHECKING

from autopoiesis.core.text import words
from autopoiesis.index.text import SEARCH_STOPWORDS

if TYPE_CHECKING:
    from autopoiesis.core.config import Config

# A batch this large is embedded with numpy even when numpy is not loaded yet: importing
# it costs less than the per-feature loop would.
NUMPY_BATCH = 256
NUMPY_SLICE = 32  # texts embedded at once by _embed_many
MEMO_MAX = 30_000  # words and stems remembered by HashingEmbedder._embed_many (~250 bytes each)
_SUFFIXES = ("ational", "ization", "fulness", "iveness", "ements", "ement", "ments", "ment", "ingly", "ings",
             "ing", "edly", "ies", "ied", "ers", "est", "ed", "er", "ly", "es", "s")


def light_stem(word: str) -> str:
    """A cheap suffix stripper: enough to make 'painting', 'paints', 'painted' one feature.
    Not Porter: the exact forms are kept by the character trigrams anyway."""
    if len(word) <= 4 or not word.isascii():
        return word
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            stem = word[: -len(suf)]
            if suf in ("ies", "ied"):
                stem += "y"
            elif len(stem) >= 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # running -> run, planned -> plan
            return stem
    return word


class HashingEmbedder:
    """Signed feature hashing (the "hashing trick") of words, word pairs and character
    trigrams into `dimensions` buckets, sublinear term frequency, unit length.

    Why this and not a fitted model: it is the same function on every machine and after
    every commit, so vectors never go stale when the corpus changes, incremental updates
    stay exact, and a query is embedded in microseconds with the standard library."""

    name = "offline"
    # v3: the stopwords are index.text's SEARCH_STOPWORDS (core.text's list: it adds yet,
    # onto, per, via, vs, etc, within, without), so the features differ from v2's.
    VERSION = "hash-v3"
    # Unrelated texts share no features: their cosine is ~0 ± collision noise.
    min_similarity = 0.05
    # In reciprocal-rank fusion its ranks count this much next to BM25's: the features
    # are words, as BM25's are, so it is a fuzzy-matching tie-breaker, not a second opinion.
    rrf_weight = 0.3
    # Its features are words, so its nearest neighbours are mostly BM25's hits: search
    # re-scores BM25's candidates with it rather than scanning every vector.
    lexical = True
    # Its similarities are word overlaps, on another scale than BM25's: rank fusion.
    preferred_merge = "rrf"

    def __init__(self, dimensions: int = 512):
        self.dimensions = int(dimensions)
        # stem -> _stem_features(stem), for _embed_many: hashing trigrams is most of what is
        # left of a batch, and a corpus's stems come back batch after batch
        self._memo: dict[str, tuple[array, float]] = {}
        self._stems_of: dict[str, str] = {}  # word -> light_stem(word), for _embed_many

    @property
    def fingerprint(self) -> str:
        return f"offline:{self.VERSION}:{self.dimensions}"

    def _stems(self, text: str) -> list[str]:
        return [light_stem(w) for w in words(text) if w not in SEARCH_STOPWORDS]

    def _hashed(self, key: str) -> int:
        """A feature's bucket, signed: bucket + 1 when it adds, -(bucket + 1) when it subtracts."""
        h = zlib.crc32(key.encode("utf-8", "surrogatepass"))
        return h % self.dimensions + 1 if (h >> 31) & 1 else -(h % self.dimensions + 1)

    def _stem_features(self, stem: str) -> tuple[list[int], float]:
        """The signed buckets of STEM's features, its word first, then its character
        trigrams (none under 5 letters) in sorted order; and sqrt(how many trigrams)."""
        feats = [self._hashed("w:" + stem)]
        if len(stem) < 5:
            return feats, 0.0
        padded = f"<{stem}>"
        grams = sorted({padded[i : i + 3] for i in range(len(padded) - 2)})
        feats.extend(self._hashed("c:" + g) for g in grams)
        return feats, math.sqrt(len(grams))

    def _features(self, text: str) -> dict[int, float]:
        feats: dict[int, float] = {}

        def add(signed: int, weight: float) -> None:
            idx = abs(signed) - 1
            feats[idx] = feats.get(idx, 0.0) + (weight if signed > 0 else -weight)

        stems = self._stems(text)
        counts: dict[str, int] = {}
        for s in stems:
            counts[s] = counts.get(s, 0) + 1
        for s, n in counts.items():
            w = 1.0 + math.log(n)
            signed, root = self._stem_features(s)
            add(signed[0], w)
            if root:
                gw = 0.6 * w / root
                for g in signed[1:]:
                    add(g, gw)
        for a, b in zip(stems, stems[1:]):
            add(self._hashed(f"b:{a} {b}"), 0.5)
        return feats

    def _vector(self, text: str) -> bytes:
        feats = self._features(text)
        vec = array("f", bytes(4 * self.dimensions))
        norm = 0.0
        for i in sorted(feats):  # in bucket order, one after another (as _embed_many sums)
            norm += feats[i] * feats[i]
        norm = math.sqrt(norm) or 1.0
        for i, v in feats.items():
            vec[i] = v / norm
        return vec.tobytes()

    def _embed_many(self, texts: list[str]) -> list[bytes]:
        """embed() with numpy, to the same bits as _vector. Python touches each distinct
        word, stem and word pair of the batch once; every feature then becomes a key
        (row * dimensions + bucket) with its signed weight, in _features' order, and
        bincount sums them per key in that order from 0.0, as _features does."""
        import numpy as np

        dims = self.dimensions
        tokens = [words(t) for t in texts]
        vocabulary: dict[str, int] = {}
        word_ids = [vocabulary.setdefault(w, len(vocabulary)) for toks in tokens for w in toks]
        # each distinct word's stem (-1: a stopword), each stem's features
        stem_ids: dict[str, int] = {}
        table: list[int] = []  # the signed buckets of every stem, one stem after another
        starts: list[int] = []
        sizes: list[int] = []
        roots: list[float] = []
        encoded: list[bytes] = []
        of_word = []
        memo = self._memo
        if len(memo) > MEMO_MAX:
            memo.clear()
        stems = self._stems_of
        if len(stems) > MEMO_MAX:
            stems.clear()
        for word in vocabulary:
            if word in SEARCH_STOPWORDS:
                of_word.append(-1)
                continue
            stem = stems.get(word)
            if stem is None:
                stem = stems[word] = light_stem(word)
            sid = stem_ids.get(stem)
            if sid is None:
                got = memo.get(stem)
                if got is None:
                    feats, root = self._stem_features(stem)
                    got = memo[stem] = (array("i", feats), root)
                signed, root = got
                sid = stem_ids[stem] = len(starts)
                starts.append(len(table))
                sizes.append(len(signed))
                roots.append(root)
                table.extend(signed)
                encoded.append(stem.encode("utf-8", "surrogatepass"))
            of_word.append(sid)
        n_stems = max(1, len(starts))
        sid_of = np.array(of_word, dtype=np.int64)[np.array(word_ids, dtype=np.int64)] if word_ids else np.zeros(0, dtype=np.int64)
        row_of = np.repeat(np.arange(len(texts), dtype=np.int64), [len(t) for t in tokens])
        content = sid_of >= 0
        sid_of, row_of = sid_of[content], row_of[content]
        # (text, stem) occurrences in first-occurrence order, with their counts
        occ_keys, first_at, counts = np.unique(row_of * n_stems + sid_of, return_index=True, return_counts=True)
        order = np.argsort(first_at, kind="stable")
        occ_keys, counts = occ_keys[order], counts[order]
        occ_row, occ_sid = occ_keys // n_stems, occ_keys % n_stems
        log_of = {n: 1.0 + math.log(n) for n in np.unique(counts).tolist()}  # math.log, as _features
        occ_w = np.array([log_of[n] for n in counts.tolist()])
        # each occurrence's features: table[starts[s] : starts[s] + sizes[s]]
        lens = np.array(sizes, dtype=np.int64)[occ_sid]
        which = np.repeat(np.arange(len(occ_sid)), lens)
        within = np.arange(int(lens.sum())) - (np.cumsum(lens) - lens)[which]
        signed = np.array(table, dtype=np.int64)[np.array(starts, dtype=np.int64)[occ_sid][which] + within]
        w = occ_w[which]
        root = np.array(roots)[occ_sid][which]
        weight = np.where(within == 0, w, np.divide(0.6 * w, root, out=np.zeros_like(w), where=root > 0))
        # word pairs: neighbouring content words of one text, each distinct pair hashed once
        same = row_of[:-1] == row_of[1:]
        pair_keys, pair_of = np.unique(sid_of[:-1][same] * n_stems + sid_of[1:][same], return_inverse=True)
        prefix = [zlib.crc32(b"b:" + e + b" ") for e in encoded]
        hashed = [zlib.crc32(encoded[k % n_stems], prefix[k // n_stems]) for k in pair_keys.tolist()]  # == crc32("b:<a> <b>")
        bucket = np.array([h % dims + 1 if (h >> 31) & 1 else -(h % dims + 1) for h in hashed], dtype=np.int64)[pair_of.reshape(-1)]
        pair_row = row_of[:-1][same]
        # the stems' features, then the pairs': per bucket of a text, the order _features adds them in
        keys = np.concatenate([occ_row[which] * dims + np.abs(signed) - 1, pair_row * dims + np.abs(bucket) - 1])
        values = np.concatenate([np.where(signed > 0, weight, -weight), np.where(bucket > 0, 0.5, -0.5)])
        acc = np.bincount(keys, weights=values, minlength=len(texts) * dims).reshape(len(texts), dims)
        # each norm summed in bucket order, as _vector sums it (cumsum adds one after another)
        norms = np.sqrt(np.cumsum(acc * acc, axis=1)[:, -1])
        norms[norms == 0.0] = 1.0
        vectors = (acc / norms[:, None]).astype(np.float32)
        return [v.tobytes() for v in vectors]

    def embed(self, texts: list[str]) -> list[bytes]:
        if len(texts) > 1 and ("numpy" in sys.modules or len(texts) >= NUMPY_BATCH):
            try:
                # in slices: a feature costs ~80 bytes of arrays while its slice is embedded
                return [v for i in range(0, len(texts), NUMPY_SLICE) for v in self._embed_many(texts[i : i + NUMPY_SLICE])]
            except ImportError:
                pass
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> bytes:
        return self._vector(text)


def from_config(config: Config) -> HashingEmbedder:
    """The registry's factory: the offline embedder needs no settings."""
    return HashingEmbedder()
