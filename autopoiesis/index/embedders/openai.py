"""Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM,
LM Studio, llama.cpp server) through the `openai` package, imported only when the first
text is embedded (~1 s of import the search CLI pays only when configured)."""

from __future__ import annotations

import base64
import json
import math
import os
import random
import sys
import time
from array import array
from typing import TYPE_CHECKING, Any

from autopoiesis.core.config import LLMConfig
from autopoiesis.errors import EmbedderError
from autopoiesis.index.embedders.common import to_blob
from autopoiesis.llm.protocol import MAX_REPLY_BYTES

if TYPE_CHECKING:
    from autopoiesis.core.config import Config


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible server, batched, with retries on 429, 5xx,
    timeouts and refused connections (exponential backoff, Retry-After honoured).

    Each request keeps the bounds of an LLM call (llm/providers/openai.py `fetch_capped`,
    llm/remote.py `call_deadline`): a total DEADLINE for its attempts and the backoff
    between them (llm.deadline_seconds, else derived from the timeout and retries), so a
    server that trickles its reply costs that deadline, and a reply far larger than the
    vectors asked for is refused unread. Past them it raises EmbedderError, and search
    answers through git grep with a notice."""

    name = "openai"
    min_similarity = 0.0
    rrf_weight = 1.0
    lexical = False
    # Its similarities carry meaning BM25 lacks: the weighted score merge uses them.
    preferred_merge = "weighted"

    def __init__(
        self,
        model: str,
        dimensions: int,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        batch_size: int = 64,
        max_retries: int = LLMConfig().max_retries,
        timeout: float = LLMConfig().timeout_seconds,
        backoff: float = 0.5,
        deadline: float | None = None,
    ):
        from autopoiesis.llm.remote import RetryPolicy, call_deadline

        self.model = model
        self.dimensions = int(dimensions)
        self.base_url = base_url
        self.api_key = api_key or "not-needed"  # local servers take any key
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeout = timeout
        self.retry = RetryPolicy(max_retries, backoff_base=backoff)
        #: Seconds one request (a batch) may take in all, retries included.
        self.deadline = call_deadline(timeout, self.retry, deadline)
        self._rng = random.Random()
        self._client: Any = None
        self._send_dimensions = True

    @property
    def fingerprint(self) -> str:
        return f"openai:{self.model}:{self.dimensions}:{self.base_url or 'api.openai.com'}"

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                # lazily: ~1 s of import the search CLI only pays when configured; only its
                # absence is told here, openai_client builds the client
                import openai  # noqa: F401
            except ImportError as exc:
                raise EmbedderError(
                    "search.embedder is openai but the openai package (a dependency of "
                    "autopoiesis) is missing from this environment: reinstall autopoiesis (or "
                    "`pip install openai`), or set search.embedder: offline"
                ) from exc
            from autopoiesis.llm.providers.openai import openai_client

            self._client = openai_client(self.base_url, self.api_key, float(self.timeout))
        return self._client

    def _request(self, batch: list[str]) -> list[list[float]]:
        """The vectors of BATCH, in order: one request, retried, all of it by the deadline."""
        from autopoiesis.llm.protocol import CallFailure, set_call_deadline
        from autopoiesis.llm.providers.openai import fetch_capped

        client = self._get_client()
        where = self.base_url or "api.openai.com"
        deadline = time.monotonic() + self.deadline
        # what a reply of BATCH's vectors may take: ~32 bytes a number written as JSON
        most = max(MAX_REPLY_BYTES, len(batch) * (self.dimensions * 32 + 256))
        attempt = 0
        set_call_deadline(deadline)  # fetch_capped bounds every read by it
        try:
            while True:
                attempt += 1
                request: dict[str, Any] = {
                    "model": self.model,
                    "input": batch,
                    "encoding_format": "base64",
                }
                if self._send_dimensions:
                    request["dimensions"] = self.dimensions
                body = fetch_capped(
                    client.embeddings.with_streaming_response.create,
                    float(self.timeout),
                    max_bytes=most,
                    **request,
                )
                if not isinstance(body, CallFailure):
                    return _vectors(body, len(batch))
                failure = body
                if failure.status == 400:
                    if self._send_dimensions and "dimension" in failure.reason.lower():
                        self._send_dimensions = False  # a server/model without Matryoshka sizes
                        continue
                    raise EmbedderError(
                        f"the embeddings server refused the request ({failure.reason}). Check "
                        "search.embedding_model."
                    )
                if failure.status is not None and not failure.retryable:
                    raise EmbedderError(
                        f"embeddings request failed with {failure.reason}. Check "
                        "search.base_url, search.embedding_model and the API key."
                    )
                if not failure.retryable and not failure.late:  # a reply over the cap
                    raise EmbedderError(
                        f"the embeddings server at {where}: {failure.reason}. Check "
                        "search.embedding_model and search.embedding_dimensions."
                    )
                wait = self.retry.delay(attempt - 1, failure.retry_after, self._rng)
                if failure.late or time.monotonic() + wait >= deadline:
                    raise EmbedderError(
                        f"the embeddings server at {where} did not answer within the request's "
                        f"deadline of {self.deadline:g} s ({attempt} attempt"
                        f"{'s' if attempt > 1 else ''}; last: {failure.reason}). Check that it "
                        "is running, raise llm.deadline_seconds, or set search.embedder: offline."
                    )
                if attempt > self.max_retries:
                    raise EmbedderError(
                        f"the embeddings server at {where} did not answer after {attempt} "
                        f"attempts ({failure.reason}). Start it, or set search.embedder: offline."
                    )
                time.sleep(wait)
        finally:
            set_call_deadline(None)

    def embed(self, texts: list[str]) -> list[bytes]:
        out: list[bytes] = []
        for i in range(0, len(texts), self.batch_size):
            # servers reject empty inputs; a blank chunk embeds as a single space
            batch = [t[:8000] if t.strip() else " " for t in texts[i : i + self.batch_size]]
            for vec in self._request(batch):
                if len(vec) != self.dimensions:
                    raise EmbedderError(
                        f"{self.model} returned {len(vec)}-dimensional vectors, but "
                        "search.embedding_dimensions "
                        f"is {self.dimensions}. Set it to {len(vec)} in memory-config.yaml."
                    )
                out.append(to_blob(vec))
        return out

    def embed_query(self, text: str) -> bytes:
        return self.embed([text])[0]


def _vectors(body: bytes, count: int) -> list[list[float]]:
    """The COUNT vectors of an embeddings reply (its JSON BODY), in input order: each a
    list of numbers or base64 float32 (what the openai client asks for); EmbedderError for
    a reply of another shape, another count or a number that is not finite."""
    try:
        data = json.loads(body)
    except ValueError:
        raise EmbedderError("the embeddings server sent a reply that is not JSON.") from None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(d, dict) for d in items):
        raise EmbedderError("the embeddings server sent a reply without a list of vectors.")
    if len(items) != count:
        raise EmbedderError(
            f"the embeddings server returned {len(items)} vectors for {count} inputs."
        )
    by_index: dict[int, list[float]] = {}
    for position, item in enumerate(items):
        index = item.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise EmbedderError(f"the embeddings server sent a vector with index {index!r}.")
        by_index[index] = _numbers(item.get("embedding"))
    if len(by_index) != count:
        raise EmbedderError("the embeddings server sent two vectors for the same input.")
    return [by_index[i] for i in range(count)]


def _numbers(embedding: Any) -> list[float]:
    if isinstance(embedding, str):
        values = array("f")
        try:
            values.frombytes(base64.b64decode(embedding, validate=True))
        except ValueError:
            raise EmbedderError(
                "the embeddings server sent a vector that is not base64 float32."
            ) from None
        if sys.byteorder == "big":  # the wire's float32 are little-endian
            values.byteswap()
        numbers = list(values)
    elif isinstance(embedding, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in embedding
    ):
        numbers = [float(v) for v in embedding]
    else:
        raise EmbedderError("the embeddings server sent a vector that is not a list of numbers.")
    if not all(math.isfinite(v) for v in numbers):
        raise EmbedderError("the embeddings server sent a vector holding NaN or infinity.")
    return numbers


def from_config(config: Config) -> OpenAIEmbedder:
    """The registry's factory: model, dimensions and server from `search:`, the key,
    retries, timeout and deadline from `llm:`."""
    s = config.search
    return OpenAIEmbedder(
        model=s.embedding_model,
        dimensions=s.embedding_dimensions,
        base_url=s.base_url or config.llm.base_url,
        api_key=os.environ.get(config.llm.api_key_env),
        max_retries=config.llm.max_retries,
        timeout=float(config.llm.timeout_seconds),
        deadline=config.llm.deadline_seconds,
    )
