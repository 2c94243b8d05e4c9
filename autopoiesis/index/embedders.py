"""Embedders behind one Protocol. A vector travels as float32 bytes (what sqlite-vec
stores), unit length, so no caller needs numpy.

* `HashingEmbedder` — the offline default: signed feature hashing of word unigrams,
  word bigrams and character trigrams (so "paint"/"painting"/"painted" share features and
  typos still overlap). Deterministic, no download, no fitting, pure stdlib — the search
  CLI can embed a query without importing numpy.
* `OpenAIEmbedder` — any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama,
  vLLM, LM Studio, llama.cpp server) through the `openai` package: batched, with retries.
* `FastEmbedEmbedder`, `SentenceTransformerEmbedder` — local neural models when the user
  has the package *and* the model on disk; imported lazily, never downloading (HF offline
  mode), a clear EmbedderError otherwise.

`fingerprint` names everything that changes the vectors: the embedding cache is keyed by
it, and the index rebuilds when it changes.
"""

from __future__ import annotations

import math
import os
import time
import zlib
from array import array
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from autopoiesis.errors import EmbedderError
from autopoiesis.index.text import STOPWORDS, words

if TYPE_CHECKING:
    from autopoiesis.core.config import Config


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit float32 vectors of `dimensions` values."""

    name: str
    dimensions: int
    # Vector hits below this cosine similarity are noise for this embedder, not evidence.
    min_similarity: float

    @property
    def fingerprint(self) -> str: ...

    def embed(self, texts: list[str]) -> list[bytes]:
        """One float32 blob per text, in order."""
        ...

    def embed_query(self, text: str) -> bytes: ...


def to_blob(values: Any) -> bytes:
    """Unit-normalised float32 bytes of a sequence of numbers (a zero vector stays zero)."""
    vals = [float(v) for v in values]
    norm = math.sqrt(sum(v * v for v in vals))
    if norm > 0:
        vals = [v / norm for v in vals]
    return array("f", vals).tobytes()


def from_blob(blob: bytes) -> array:
    out = array("f")
    out.frombytes(blob)
    return out


# ── offline ──
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
    VERSION = "hash-v2"
    # Unrelated texts share no features: their cosine is ~0 ± collision noise.
    min_similarity = 0.05
    # In reciprocal-rank fusion its ranks count this much next to BM25's: the features
    # are words, as BM25's are, so it is a fuzzy-matching tie-breaker, not a second opinion.
    rrf_weight = 0.3
    # Its features are words, so its nearest neighbours are mostly BM25's hits: search
    # re-scores BM25's candidates with it rather than scanning every vector.
    lexical = True

    def __init__(self, dimensions: int = 512):
        self.dimensions = int(dimensions)

    @property
    def fingerprint(self) -> str:
        return f"offline:{self.VERSION}:{self.dimensions}"

    def _features(self, text: str) -> dict[int, float]:
        dims = self.dimensions
        feats: dict[int, float] = {}
        toks = [w for w in words(text) if w not in STOPWORDS]
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


# ── OpenAI-compatible ──
class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible server, batched, with retries on 429, 5xx,
    timeouts and refused connections (exponential backoff, Retry-After honoured)."""

    name = "openai"
    min_similarity = 0.0

    def __init__(
        self,
        model: str,
        dimensions: int,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        batch_size: int = 64,
        max_retries: int = 3,
        timeout: float = 30.0,
        backoff: float = 0.5,
    ):
        self.model = model
        self.dimensions = int(dimensions)
        self.base_url = base_url
        self.api_key = api_key or "not-needed"  # local servers take any key
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = backoff
        self._client: Any = None
        self._send_dimensions = True

    @property
    def fingerprint(self) -> str:
        return f"openai:{self.model}:{self.dimensions}:{self.base_url or 'api.openai.com'}"

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai  # lazily: ~1 s of import the search CLI only pays when configured
            except ImportError as exc:
                raise EmbedderError("search.embedder is openai but the openai package is missing: pip install openai") from exc
            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=0)
        return self._client

    def _request(self, batch: list[str]) -> list[list[float]]:
        import openai

        client = self._get_client()
        attempt = 0
        while True:
            attempt += 1
            wait: float | None = None
            try:
                kwargs: dict[str, Any] = {"model": self.model, "input": batch}
                if self._send_dimensions:
                    kwargs["dimensions"] = self.dimensions
                resp = client.embeddings.create(**kwargs)
                data = sorted(resp.data, key=lambda d: d.index)
                if len(data) != len(batch):
                    raise EmbedderError(f"the embeddings server returned {len(data)} vectors for {len(batch)} inputs.")
                return [list(d.embedding) for d in data]
            except openai.BadRequestError as exc:
                if self._send_dimensions and "dimension" in str(exc).lower():
                    self._send_dimensions = False  # a server/model without Matryoshka sizes
                    continue
                raise EmbedderError(f"the embeddings server refused the request: {exc}. Check search.embedding_model.") from exc
            except openai.APIStatusError as exc:
                if exc.status_code != 429 and exc.status_code < 500:
                    raise EmbedderError(
                        f"embeddings request failed with HTTP {exc.status_code}: {exc.message}. "
                        "Check search.base_url, search.embedding_model and the API key."
                    ) from exc
                header = exc.response.headers.get("retry-after") if exc.response is not None else None
                try:
                    wait = float(header) if header is not None else None
                except ValueError:
                    wait = None
                error = f"HTTP {exc.status_code}"
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                error = type(exc).__name__
            if attempt > self.max_retries:
                raise EmbedderError(
                    f"the embeddings server at {self.base_url or 'api.openai.com'} did not answer after "
                    f"{attempt} attempts ({error}). Start it, or set search.embedder: offline."
                )
            time.sleep(min(wait if wait is not None else self.backoff * 2 ** (attempt - 1), 30.0))

    def embed(self, texts: list[str]) -> list[bytes]:
        out: list[bytes] = []
        for i in range(0, len(texts), self.batch_size):
            # servers reject empty inputs; a blank chunk embeds as a single space
            batch = [t[:8000] if t.strip() else " " for t in texts[i : i + self.batch_size]]
            for vec in self._request(batch):
                if len(vec) != self.dimensions:
                    raise EmbedderError(
                        f"{self.model} returned {len(vec)}-dimensional vectors, but search.embedding_dimensions "
                        f"is {self.dimensions}. Set it to {len(vec)} in memory-config.yaml."
                    )
                out.append(to_blob(vec))
        return out

    def embed_query(self, text: str) -> bytes:
        return self.embed([text])[0]


# ── local neural models (optional) ──
def _offline_hub() -> None:
    # Never download at run time: the model must already be on disk.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class FastEmbedEmbedder:
    name = "fastembed"
    min_similarity = 0.0

    def __init__(self, model: str):
        _offline_hub()
        try:
            from fastembed import TextEmbedding  # type: ignore[import-not-found]
        except ImportError as exc:
            raise EmbedderError("search.embedder is fastembed but the package is missing: pip install fastembed") from exc
        try:
            self._model = TextEmbedding(model_name=model, local_files_only=True)
        except Exception as exc:
            raise EmbedderError(f"fastembed model {model!r} is not available locally ({exc}). Download it once, or use offline.") from exc
        self.model = model
        self.dimensions = len(next(iter(self._model.embed(["probe"]))))

    @property
    def fingerprint(self) -> str:
        return f"fastembed:{self.model}:{self.dimensions}"

    def embed(self, texts: list[str]) -> list[bytes]:
        return [to_blob(v) for v in self._model.embed(texts)]

    def embed_query(self, text: str) -> bytes:
        return self.embed([text])[0]


class SentenceTransformerEmbedder:
    name = "sentence-transformers"
    min_similarity = 0.0

    def __init__(self, model: str):
        _offline_hub()
        try:
            from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]
        except ImportError as exc:
            raise EmbedderError(
                "search.embedder is sentence-transformers but the package is missing: pip install sentence-transformers"
            ) from exc
        try:
            self._model = SentenceTransformer(model, local_files_only=True)
        except Exception as exc:
            raise EmbedderError(f"sentence-transformers model {model!r} is not available locally ({exc}).") from exc
        self.model = model
        self.dimensions = int(self._model.get_sentence_embedding_dimension())

    @property
    def fingerprint(self) -> str:
        return f"st:{self.model}:{self.dimensions}"

    def embed(self, texts: list[str]) -> list[bytes]:
        return [to_blob(v) for v in self._model.encode(texts, normalize_embeddings=True)]

    def embed_query(self, text: str) -> bytes:
        return self.embed([text])[0]


def embedder_from_config(config: "Config") -> Embedder:
    """The embedder that memory-config.yaml's `search:` section names."""
    s = config.search
    if s.embedder == "offline":
        return HashingEmbedder()
    if s.embedder == "openai":
        return OpenAIEmbedder(
            model=s.embedding_model,
            dimensions=s.embedding_dimensions,
            base_url=s.base_url or config.llm.base_url,
            api_key=os.environ.get(config.llm.api_key_env),
            max_retries=config.llm.max_retries,
            timeout=float(config.llm.timeout_seconds),
        )
    if s.embedder == "fastembed":
        return FastEmbedEmbedder(s.embedding_model)
    if s.embedder == "sentence-transformers":
        return SentenceTransformerEmbedder(s.embedding_model)
    raise EmbedderError(f"unknown search.embedder {s.embedder!r}; use offline, openai, fastembed or sentence-transformers.")
