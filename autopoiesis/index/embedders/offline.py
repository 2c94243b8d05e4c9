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
MEMO_MAX = (
    50_000  # words remembered by HashingEmbedder._embed_many (~150 bytes each, with their stems)
)
_SUFFIXES = (
    "ational",
    "ization",
    "fulness",
    "iveness",
    "ements",
    "ement",
    "ments",
    "ment",
    "ingly",
    "ings",
    "ing",
    "edly",
    "ies",
    "ied",
    "ers",
    "est",
    "ed",
    "er",
    "ly",
    "es",
    "s",
)


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
    # The weighted merge (normalised BM25 0.4, similarity 0.6): its similarity of word,
    # pair and trigram features is a softer match than BM25's (a word's other forms, a
    # shared stem), and weighed by score rather than rank it finds more: coding questions
    # turn recall@10 0.740 -> 0.764 (paraphrased 0.567 -> 0.633, where --mode bm25 has
    # 0.567), MRR 0.488 -> 0.519; LoCoMo dev session recall@5 0.930 -> 0.933, MRR 0.825
    # -> 0.828 (turn hit@10 0.886 -> 0.878); with rank fusion its ranks counted
    # rrf_weight of BM25's and it only broke ties.
    preferred_merge = "weighted"

    def __init__(self, dimensions: int = 512):
        self.dimensions = int(dimensions)
        # _embed_many remembers words, stems and their hashed features from batch to batch
        # (a corpus's words come back), up to MEMO_MAX words
        self._forget()

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

    def _forget(self) -> None:
        """Start _embed_many's memory of words and stems over."""
        self._word_stem: dict[str, int] = {}  # word -> its stem's id, -1 for a stopword
        self._stem_ids: dict[str, int] = {}
        self._table = array(
            "i"
        )  # the signed buckets of every stem's features, one stem after another
        self._starts = array("q")  # where each stem's features start in _table
        self._sizes = array("q")
        self._roots = array("d")  # sqrt(how many trigrams), 0.0 for none
        # To hash word pairs: every stem in UTF-8, one after another (_encoded_ends[i] is where
        # stem i ends), and crc32("b:<stem> ") of each. Flat arrays, not a bytes object and an
        # int object a stem: at 30,000 stems, ~2 MB less of a build's peak memory.
        self._encoded = bytearray()
        self._encoded_ends = array("q")
        self._pair_prefix = array("I")

    def _word_ids(self, words_: list[str]) -> list[int]:
        """Each word's stem id, new words and stems given one (and their features hashed)."""
        known = self._word_stem
        for word in dict.fromkeys(w for w in words_ if w not in known):
            if word in SEARCH_STOPWORDS:
                known[word] = -1
                continue
            stem = light_stem(word)
            sid = self._stem_ids.get(stem)
            if sid is None:
                feats, root = self._stem_features(stem)
                sid = self._stem_ids[stem] = len(self._starts)
                self._starts.append(len(self._table))
                self._sizes.append(len(feats))
                self._roots.append(root)
                self._table.extend(feats)
                encoded = stem.encode("utf-8", "surrogatepass")
                self._encoded += encoded
                self._encoded_ends.append(len(self._encoded))
                self._pair_prefix.append(zlib.crc32(b"b:" + encoded + b" "))
            known[word] = sid
        return [known[w] for w in words_]

    def _embed_many(self, texts: list[str]) -> list[bytes]:
        """embed() with numpy, to the same bits as _vector. Python touches each word, and
        hashes each new stem (remembered from batch to batch) and each distinct word pair
        once; every feature then becomes a key (row * dimensions + bucket) with its signed
        weight, in _features' order, and bincount sums them per key in that order from
        0.0, as _features does."""
        import numpy as np

        if len(self._word_stem) > MEMO_MAX:
            self._forget()
        dims = self.dimensions
        tokens = [words(t) for t in texts]
        word_ids = self._word_ids([w for toks in tokens for w in toks])
        n_stems = max(1, len(self._starts))
        table = (
            np.frombuffer(self._table, dtype=np.int32)
            if len(self._table)
            else np.zeros(0, dtype=np.int32)
        )
        starts = (
            np.frombuffer(self._starts, dtype=np.int64)
            if len(self._starts)
            else np.zeros(0, dtype=np.int64)
        )
        sizes = (
            np.frombuffer(self._sizes, dtype=np.int64)
            if len(self._sizes)
            else np.zeros(0, dtype=np.int64)
        )
        roots = np.frombuffer(self._roots, dtype=np.float64) if len(self._roots) else np.zeros(0)
        sid_of = np.array(word_ids, dtype=np.int64)
        row_of = np.repeat(np.arange(len(texts), dtype=np.int64), [len(t) for t in tokens])
        content = sid_of >= 0
        sid_of, row_of = sid_of[content], row_of[content]
        # (text, stem) occurrences in first-occurrence order, with their counts
        occ_keys, first_at, counts = np.unique(
            row_of * n_stems + sid_of, return_index=True, return_counts=True
        )
        order = np.argsort(first_at, kind="stable")
        occ_keys, counts = occ_keys[order], counts[order]
        occ_row, occ_sid = occ_keys // n_stems, occ_keys % n_stems
        log_of = {
            n: 1.0 + math.log(n) for n in np.unique(counts).tolist()
        }  # math.log, as _features
        occ_w = np.array([log_of[n] for n in counts.tolist()])
        # each occurrence's features: table[starts[s] : starts[s] + sizes[s]]
        lens = sizes[occ_sid]
        which = np.repeat(np.arange(len(occ_sid)), lens)
        within = np.arange(int(lens.sum())) - (np.cumsum(lens) - lens)[which]
        signed = table[starts[occ_sid][which] + within].astype(np.int64)
        w = occ_w[which]
        root = roots[occ_sid][which]
        weight = np.where(
            within == 0, w, np.divide(0.6 * w, root, out=np.zeros_like(w), where=root > 0)
        )
        # word pairs: neighbouring content words of one text, each distinct pair hashed once
        same = row_of[:-1] == row_of[1:]
        pair_keys, pair_of = np.unique(
            sid_of[:-1][same] * n_stems + sid_of[1:][same], return_inverse=True
        )
        ends, prefix = self._encoded_ends, self._pair_prefix
        hashed = []
        with memoryview(
            self._encoded
        ) as encoded:  # released: the bytearray grows at the next batch
            for k in pair_keys.tolist():  # crc32("b:<a> <b>")
                b = k % n_stems
                hashed.append(
                    zlib.crc32(encoded[ends[b - 1] if b else 0 : ends[b]], prefix[k // n_stems])
                )
        bucket = np.array(
            [h % dims + 1 if (h >> 31) & 1 else -(h % dims + 1) for h in hashed], dtype=np.int64
        )[pair_of.reshape(-1)]
        pair_row = row_of[:-1][same]
        # the stems' features, then the pairs': per bucket of a text, the order _features adds them
        # in
        keys = np.concatenate(
            [occ_row[which] * dims + np.abs(signed) - 1, pair_row * dims + np.abs(bucket) - 1]
        )
        values = np.concatenate(
            [np.where(signed > 0, weight, -weight), np.where(bucket > 0, 0.5, -0.5)]
        )
        acc = np.bincount(keys, weights=values, minlength=len(texts) * dims).reshape(
            len(texts), dims
        )
        # each norm summed in bucket order, as _vector sums it (cumsum adds one after another)
        norms = np.sqrt(np.cumsum(acc * acc, axis=1)[:, -1])
        norms[norms == 0.0] = 1.0
        vectors = (acc / norms[:, None]).astype(np.float32)
        return [v.tobytes() for v in vectors]

    def embed(self, texts: list[str]) -> list[bytes]:
        if len(texts) > 1 and ("numpy" in sys.modules or len(texts) >= NUMPY_BATCH):
            try:
                # in slices: a feature costs ~80 bytes of arrays while its slice is embedded
                return [
                    v
                    for i in range(0, len(texts), NUMPY_SLICE)
                    for v in self._embed_many(texts[i : i + NUMPY_SLICE])
                ]
            except ImportError:
                pass
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> bytes:
        return self._vector(text)


def from_config(config: Config) -> HashingEmbedder:
    """The registry's factory: the offline embedder needs no settings."""
    return HashingEmbedder()
