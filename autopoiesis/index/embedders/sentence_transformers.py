"""A local sentence-transformers model, when the user has the package *and* the model on
disk: imported lazily, never downloading (HF offline mode), a clear EmbedderError
otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autopoiesis.errors import EmbedderError
from autopoiesis.index.embedders.common import offline_hub, to_blob

if TYPE_CHECKING:
    from autopoiesis.core.config import Config


class SentenceTransformerEmbedder:
    name = "sentence-transformers"
    min_similarity = 0.0
    rrf_weight = 1.0
    lexical = False
    preferred_merge = "weighted"

    def __init__(self, model: str):
        offline_hub()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "search.embedder is sentence-transformers but the package is missing: pip install "
                "sentence-transformers"
            ) from exc
        try:
            self._model = SentenceTransformer(model, local_files_only=True)
        except Exception as exc:
            raise EmbedderError(
                f"sentence-transformers model {model!r} is not available locally ({exc})."
            ) from exc
        self.model = model
        self.dimensions = int(self._model.get_sentence_embedding_dimension())

    @property
    def fingerprint(self) -> str:
        return f"st:{self.model}:{self.dimensions}"

    def embed(self, texts: list[str]) -> list[bytes]:
        return [to_blob(v) for v in self._model.encode(texts, normalize_embeddings=True)]

    def embed_query(self, text: str) -> bytes:
        return self.embed([text])[0]


def from_config(config: Config) -> SentenceTransformerEmbedder:
    """The registry's factory: the model named by search.embedding_model."""
    return SentenceTransformerEmbedder(config.search.embedding_model)
