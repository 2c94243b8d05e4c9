"""Tier 2 (docs/design.md#watcher-algorithms): local similarity of a message to each topic's profile
(its name,
description, keyword-trigger words and instructions).

Signals, all in 0..1, for every scored topic:

* ``tfidf`` — cosine of TF-IDF vectors. Fitted with scikit-learn's TfidfVectorizer
  (English stop words, sublinear tf, l2 norm) on the topic profiles. **This is the
  tier-2 score**: the per-topic ``similarity_threshold`` (default: the config's
  ``watchers.similarity_threshold``) and the gate's bypass table (docs/design.md#gate-bypass) are
  calibrated
  on it, as in docs/design.md#flow-topic.
* ``bm25`` — Okapi BM25 (k1=1.5, b=0.75) of the message's terms in the profile, divided
  by the most those terms could score, so it reads as "the share of the message's
  vocabulary the topic covers, weighted by rarity".
* ``jaccard`` — |A∩B| / |A∪B| of the word sets (words of three letters or more).
* ``minhash`` — approximate Jaccard of character (UTF-8 byte) 3-gram sets from 64-permutation
  MinHash signatures: catches inflections and typos that whole words miss.

BM25, Jaccard and MinHash are reported next to the score (``autopoiesis topics test``,
the gate log) for tuning; they order topics with equal scores.

Fitting needs scikit-learn (about 1.5 s to import); scoring needs only numpy. The fitted
vocabulary, idf weights, postings and MinHash signatures are cached on disk under
``.autopoiesis/cache/similarity/`` keyed by a hash of the topics' contents, so a new
process loads them and never imports scikit-learn while the topics are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from autopoiesis.core.paths import atomic_write
from autopoiesis.core.text import utf8_safe
from autopoiesis.formats.topic import Topic

SCORER_VERSION = "1"
SIMILARITY_SCAN_CHARS = 20_000  # tier 2 looks at the head of very long messages
MINHASH_SCAN_CHARS = 4_000
MINHASH_PERMUTATIONS = 64
BM25_K1 = 1.5
BM25_B = 0.75
_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token_pattern
_MERSENNE = (1 << 31) - 1


@dataclass(frozen=True)
class TopicScores:
    """Tier-2 signals of one topic for one message. `score` is the TF-IDF cosine."""

    topic: str
    score: float
    bm25: float
    jaccard: float
    minhash: float
    threshold: float

    @property
    def passed(self) -> bool:
        return self.score >= self.threshold

    def as_dict(self) -> dict[str, float]:
        return {
            "tfidf": round(self.score, 4),
            "bm25": round(self.bm25, 4),
            "jaccard": round(self.jaccard, 4),
            "minhash": round(self.minhash, 4),
            "threshold": self.threshold,
        }


def topics_fingerprint(topics: Sequence[Topic]) -> str:
    h = hashlib.sha256(f"similarity v{SCORER_VERSION}\0".encode())
    for t in topics:
        h.update(f"{t.name}\0{t.profile_text}\0".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _minhash_params():
    import numpy as np

    rng = np.random.default_rng(20240216)  # fixed: signatures must agree across processes
    a = rng.integers(1, _MERSENNE, size=MINHASH_PERMUTATIONS, dtype=np.uint64)
    b = rng.integers(0, _MERSENNE, size=MINHASH_PERMUTATIONS, dtype=np.uint64)
    return a, b


def minhash_signature(text: str, params=None):
    """64 uint64 minima of (a*g + b) mod p over the byte 3-grams g of TEXT (lower-cased,
    whitespace collapsed). Empty text -> all p (matches nothing)."""
    import numpy as np

    a, b = params if params is not None else _minhash_params()
    # a lone surrogate (a JSON `\udcc1` escape) hashes as U+FFFD: strict UTF-8 refuses it
    norm = utf8_safe(" ".join(text[:MINHASH_SCAN_CHARS].lower().split())).encode("utf-8")
    if len(norm) < 3:
        return np.full(MINHASH_PERMUTATIONS, _MERSENNE, dtype=np.uint64)
    arr = np.frombuffer(norm, dtype=np.uint8).astype(np.uint64)
    grams = np.unique((arr[:-2] << np.uint64(16)) | (arr[1:-1] << np.uint64(8)) | arr[2:])
    # grams < 2^24 and a < 2^31: the product fits in 64 bits.
    hashed = (grams[:, None] * a[None, :] + b[None, :]) % np.uint64(_MERSENNE)
    return hashed.min(axis=0)


class SimilarityScorer:
    """Tier 2: local similarity scoring against topic profiles (docs/design.md#system-api).

    ``SimilarityScorer(topics, cache_dir=repo.state_file("similarity_cache"))``
    """

    def __init__(self, topics: Sequence[Topic], cache_dir: Path | None = None):
        import numpy as np

        self.topics = tuple(topics)
        self.names = [t.name for t in self.topics]
        self._index = {n: i for i, n in enumerate(self.names)}
        self.thresholds = np.array([t.similarity_threshold for t in self.topics], dtype=np.float64)
        self.fingerprint = topics_fingerprint(self.topics)
        self.loaded_from_cache = False
        self._mh_params = _minhash_params()
        cache_file = (
            Path(cache_dir) / f"{self.fingerprint[:32]}.npz" if cache_dir is not None else None
        )
        data = self._load(cache_file) if cache_file is not None else None
        if data is None:
            data = self._fit()
            if cache_file is not None:
                self._save(cache_file, data)
        else:
            self.loaded_from_cache = True
        self.vocab: dict[str, int] = data["vocab"]
        self.idf = data["idf"]
        self.t_indptr, self.t_topic, self.t_weight, self.t_count = (
            data["t_indptr"],
            data["t_topic"],
            data["t_weight"],
            data["t_count"],
        )
        self.doc_len = data["doc_len"]
        self.avg_len = float(self.doc_len.mean()) if len(self.doc_len) else 1.0
        self.topic_words = data["topic_words"]
        self.signatures = data["signatures"]
        n = max(1, len(self.topics))
        df = np.diff(self.t_indptr).astype(np.float64)
        self.bm25_idf = np.log((n - df + 0.5) / (df + 0.5) + 1.0)

    # ── fitting and the disk cache ──
    def _fit(self) -> dict:
        import numpy as np

        texts = [t.profile_text for t in self.topics]
        vocab: dict[str, int] = {}
        idf = np.zeros(0)
        weights = None
        counts = None
        if texts:
            from sklearn.feature_extraction.text import TfidfVectorizer

            vec = TfidfVectorizer(
                stop_words="english", sublinear_tf=True, token_pattern=_TOKEN.pattern
            )
            try:
                weights = vec.fit_transform(texts).tocsc()
                vocab = {k: int(v) for k, v in vec.vocabulary_.items()}
                idf = vec.idf_.astype(np.float64)
                analyzer = vec.build_analyzer()
                from scipy.sparse import csr_matrix

                rows, cols, vals = [], [], []
                for i, text in enumerate(texts):
                    tf: dict[int, int] = {}
                    for tok in analyzer(text):
                        j = vocab.get(tok)
                        if j is not None:
                            tf[j] = tf.get(j, 0) + 1
                    for j, c in tf.items():
                        rows.append(i)
                        cols.append(j)
                        vals.append(c)
                counts = csr_matrix(
                    (vals, (rows, cols)), shape=(len(texts), len(vocab)), dtype=np.float64
                ).tocsc()
            except ValueError:  # every profile empty or stop words only
                vocab, weights = {}, None
        if weights is not None and counts is not None:
            weights.sort_indices()
            counts.sort_indices()
            t_indptr = weights.indptr.astype(np.int64)
            t_topic = weights.indices.astype(np.int64)
            t_weight = weights.data.astype(np.float64)
            t_count = counts.data.astype(np.float64)
            doc_len = np.asarray(counts.sum(axis=1)).ravel().astype(np.float64)
        else:
            t_indptr = np.zeros(1, dtype=np.int64)
            t_topic = np.zeros(0, dtype=np.int64)
            t_weight = np.zeros(0)
            t_count = np.zeros(0)
            doc_len = np.zeros(len(texts))
        topic_words = [sorted(_words(t)) for t in texts]
        sigs = (
            np.stack([minhash_signature(t, self._mh_params) for t in texts])
            if texts
            else np.zeros((0, MINHASH_PERMUTATIONS), dtype=np.uint64)
        )
        return {
            "vocab": vocab,
            "idf": idf,
            "t_indptr": t_indptr,
            "t_topic": t_topic,
            "t_weight": t_weight,
            "t_count": t_count,
            "doc_len": doc_len,
            "topic_words": [frozenset(w) for w in topic_words],
            "signatures": sigs,
            "_topic_words_list": topic_words,
        }

    def _save(self, path: Path, data: dict) -> None:
        import io

        import numpy as np

        buf = io.BytesIO()
        np.savez(
            buf,
            idf=data["idf"],
            t_indptr=data["t_indptr"],
            t_topic=data["t_topic"],
            t_weight=data["t_weight"],
            t_count=data["t_count"],
            doc_len=data["doc_len"],
            signatures=data["signatures"],
            meta=np.array(
                json.dumps(
                    {
                        "vocab": data["vocab"],
                        "topic_words": data["_topic_words_list"],
                        "names": self.names,
                    }
                )
            ),
        )
        atomic_write(path, buf.getvalue())
        # Keep the folder small: only the newest few fingerprints survive.
        olds = sorted(path.parent.glob("*.npz"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in olds[4:]:
            old.unlink(missing_ok=True)

    def _load(self, path: Path) -> dict | None:
        import numpy as np

        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if meta.get("names") != self.names:
                    return None
                return {
                    "vocab": meta["vocab"],
                    "idf": z["idf"],
                    "t_indptr": z["t_indptr"],
                    "t_topic": z["t_topic"],
                    "t_weight": z["t_weight"],
                    "t_count": z["t_count"],
                    "doc_len": z["doc_len"],
                    "signatures": z["signatures"],
                    "topic_words": [frozenset(w) for w in meta["topic_words"]],
                }
        except (OSError, ValueError, KeyError):  # a damaged cache is refitted, never trusted
            return None

    # ── scoring ──
    def scores(self, text: str, candidates: set[str] | None = None) -> list[TopicScores]:
        """Every signal for every topic (or only CANDIDATES), in topic order."""
        import numpy as np

        idx = [i for i, n in enumerate(self.names) if candidates is None or n in candidates]
        if not idx:
            return []
        head = text[:SIMILARITY_SCAN_CHARS]
        tf: dict[int, int] = {}
        for tok in _TOKEN.findall(head.lower()):
            j = self.vocab.get(tok)
            if j is not None:
                tf[j] = tf.get(j, 0) + 1
        n = len(self.names)
        cos = np.zeros(n)
        bm = np.zeros(n)
        bm_max = 0.0
        if tf:
            terms = np.fromiter(tf.keys(), dtype=np.int64, count=len(tf))
            q = (
                1.0 + np.log(np.fromiter(tf.values(), dtype=np.float64, count=len(tf)))
            ) * self.idf[terms]
            q /= np.linalg.norm(q) or 1.0
            norm_len = 1.0 - BM25_B + BM25_B * self.doc_len / (self.avg_len or 1.0)
            for k, j in enumerate(terms):
                lo, hi = self.t_indptr[j], self.t_indptr[j + 1]
                tops = self.t_topic[lo:hi]
                cos[tops] += q[k] * self.t_weight[lo:hi]
                c = self.t_count[lo:hi]
                bm[tops] += self.bm25_idf[j] * c * (BM25_K1 + 1) / (c + BM25_K1 * norm_len[tops])
                bm_max += self.bm25_idf[j] * (BM25_K1 + 1)
        bm_norm = bm / bm_max if bm_max else bm
        words = _words(head)
        sig = minhash_signature(head, self._mh_params)
        sel = np.array(idx)
        mh = (
            (self.signatures[sel] == sig[None, :]).mean(axis=1)
            if len(self.signatures)
            else np.zeros(len(idx))
        )
        out = []
        for k, i in enumerate(idx):
            tw = self.topic_words[i]
            union = len(words | tw)
            jac = len(words & tw) / union if union else 0.0
            out.append(
                TopicScores(
                    self.names[i],
                    float(min(1.0, cos[i])),
                    float(min(1.0, bm_norm[i])),
                    jac,
                    float(mh[k]),
                    float(self.thresholds[i]),
                )
            )
        return out

    def score(self, text: str, candidates: set[str] | None = None) -> list[tuple[str, float]]:
        """[(topic, tfidf score)] of the topics at or above their threshold, best first
        (docs/design.md#system-api); ties are ordered by BM25, then by name."""
        passed = [s for s in self.scores(text, candidates) if s.passed]
        passed.sort(key=lambda s: (-s.score, -s.bm25, s.topic))
        return [(s.topic, s.score) for s in passed]


def _words(text: str) -> set[str]:
    return {w for w in _TOKEN.findall(text.lower()) if len(w) >= 3}
