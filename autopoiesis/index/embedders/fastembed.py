"""A local fastembed model, when the user has the package *and* the model on disk:
imported lazily, never downloading (HF offline mode), a clear EmbedderError otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autopoiesis.errors import EmbedderError
from autopoiesis.index.embedders.common import offline_hub, to_blob

if TYPE_CHECKING:
    from autopoiesis.core.config import Config


class FastEmbedEmbedder:
    name = "fastembed"
    min_similarity = 0.0
    rrf_weight = 1.0
    lexical = False
    preferred_merge = "weighted"

    def __init__(self, model: str):
        offline_hub()
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise EmbedderError(
                "search.embedder is fastembed but the package is not installed: pip install "
                "'autopoiesis[neural]'"
            ) from exc
        try:
            self._model = TextEmbedding(model_name=model, local_files_only=True)
        except Exception as exc:
            raise EmbedderError(
                f"fastembed model {model!r} is not available locally ({exc}). Download it once, "
                "or use offline."
            ) from exc
        self.model = model
        self.dimensions = len(next(iter(self._model.embed(["probe"]))))

    @property
    def fingerprint(self) -> str:
        return f"fastembed:{self.model}:{self.dimensions}"

    def embed(self, texts: list[str]) -> list[bytes]:
        return [to_blob(v) for v in self._model.embed(texts)]

    def embed_query(self, text: str) -> bytes:
        return self.embed([text])[0]


def from_config(config: Config) -> FastEmbedEmbedder:
    """The registry's factory: the model named by search.embedding_model."""
    return FastEmbedEmbedder(config.search.embedding_model)
