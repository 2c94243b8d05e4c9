"""The offline default embedder: signed feature hashing of word unigrams, word bigrams
and character trigrams (so "paint"/"painting"/"painted" share features and typos still
overlap). Deterministic, no download, no fitting, pure stdlib: the search CLI embeds a
query without importing numpy."""

from __future__ import annotations

import math
import zlib
from array import array
from typing import TYPE_CHECKING

from autopoiesis.core.text import words
from autopoiesis.index.text import SEARCH_STOPWORDS

if TYPE_CHECKING:
    from autopoiesis.core.config import Config

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

    @property
    def fingerprint(self) -> str:
        return f"offline:{self.VERSION}:{self.dimensions}"

    def _features(self, text: str) -> dict[int, float]:
        dims = self.dimensions
        feats: dict[int, float] = {}
        toks = [w for w in words(text) if w not in SEARCH_STOPWORDS]
        stems = [light_stem(w) for w in toks]

        def add(key: str, weight: float) -> None:
            h = zlib.crc32(key.encode("utf-8", "surrogatepass"))
            idx = h % dims
            feats[idx] = feats.get(idx, 0.0) + (weight if (h >> 31) & 1 else -weight)

        counts: dict[str, int] = {}
        for s in stems:
            counts[s] = counts.get(s, 0) + 1
        for s, n in counts.items():
            w = 1.0 + math.log(n)
            add("w:" + s, w)
            if len(s) >= 5:
                padded = f"<{s}>"
                grams = {padded[i : i + 3] for i in range(len(padded) - 2)}
                gw = 0.6 * w / math.sqrt(len(grams))
                for g in grams:
                    add("c:" + g, gw)
        for a, b in zip(stems, stems[1:]):
            add(f"b:{a} {b}", 0.5)
        return feats

    def _vector(self, text: str) -> bytes:
        feats = self._features(text)
        vec = array("f", bytes(4 * self.dimensions))
        norm = math.sqrt(sum(v * v for v in feats.values())) or 1.0
        for i, v in feats.items():
            vec[i] = v / norm
        return vec.tobytes()

    def embed(self, texts: list[str]) -> list[bytes]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> bytes:
        return self._vector(text)


def from_config(config: Config) -> HashingEmbedder:
    """The registry's factory: the offline embedder needs no settings."""
    return HashingEmbedder()
