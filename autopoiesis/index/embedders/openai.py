"""Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM,
LM Studio, llama.cpp server) through the `openai` package, imported only when the first
text is embedded (~1 s of import the search CLI pays only when configured)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from autopoiesis.core.config import LLMConfig
from autopoiesis.errors import EmbedderError
from autopoiesis.index.embedders.common import to_blob

if TYPE_CHECKING:
    from autopoiesis.core.config import Config


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible server, batched, with retries on 429, 5xx,
    timeouts and refused connections (exponential backoff, Retry-After honoured)."""

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
                raise EmbedderError(
                    "search.embedder is openai but the openai package (a dependency of "
                    "autopoiesis) is missing from this environment: reinstall autopoiesis (or "
                    "`pip install openai`), or set search.embedder: offline"
                ) from exc
            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=0
            )
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
                    raise EmbedderError(
                        f"the embeddings server returned {len(data)} vectors for {len(batch)} "
                        "inputs."
                    )
                return [list(d.embedding) for d in data]
            except openai.BadRequestError as exc:
                if self._send_dimensions and "dimension" in str(exc).lower():
                    self._send_dimensions = False  # a server/model without Matryoshka sizes
                    continue
                raise EmbedderError(
                    f"the embeddings server refused the request: {exc}. Check "
                    "search.embedding_model."
                ) from exc
            except openai.APIStatusError as exc:
                if exc.status_code != 429 and exc.status_code < 500:
                    raise EmbedderError(
                        f"embeddings request failed with HTTP {exc.status_code}: {exc.message}. "
                        "Check search.base_url, search.embedding_model and the API key."
                    ) from exc
                header = (
                    exc.response.headers.get("retry-after") if exc.response is not None else None
                )
                try:
                    wait = float(header) if header is not None else None
                except ValueError:
                    wait = None
                error = f"HTTP {exc.status_code}"
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                error = type(exc).__name__
            if attempt > self.max_retries:
                raise EmbedderError(
                    f"the embeddings server at {self.base_url or 'api.openai.com'} did not answer "
                    "after "
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
                        f"{self.model} returned {len(vec)}-dimensional vectors, but "
                        "search.embedding_dimensions "
                        f"is {self.dimensions}. Set it to {len(vec)} in memory-config.yaml."
                    )
                out.append(to_blob(vec))
        return out

    def embed_query(self, text: str) -> bytes:
        return self.embed([text])[0]


def from_config(config: Config) -> OpenAIEmbedder:
    """The registry's factory: model, dimensions and server from `search:`, the key,
    retries and timeout from `llm:`."""
    s = config.search
    return OpenAIEmbedder(
        model=s.embedding_model,
        dimensions=s.embedding_dimensions,
        base_url=s.base_url or config.llm.base_url,
        api_key=os.environ.get(config.llm.api_key_env),
        max_retries=config.llm.max_retries,
        timeout=float(config.llm.timeout_seconds),
    )
