"""WordLlama's static embeddings (MIT), whose weights ship inside the `wordllama` wheel
(`pip install autopoiesis[static]`): a token's vector is a row of a 32,000 x 256 table
taken from a large language model's token embeddings and trained for sentence
similarity; a text's vector is the mean of its (first 128) tokens' rows. No download, no
torch: a tokenizer, a table lookup and a mean.

Only the package's files are used, not its code: `WordLlama.load()` looks for the
bundled tokenizer under a folder name the wheel does not have and then fetches it from
Hugging Face (0.4.0), and importing the package costs ~0.5 s (requests, pydantic, its
config); the same vectors come from `tokenizers`, `safetensors` and numpy directly.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autopoiesis.errors import EmbedderError

if TYPE_CHECKING:
    from autopoiesis.core.config import Config

# The configuration the wheel bundles (weights/l2_supercat_256.safetensors and
# tokenizers/l2_supercat_tokenizer_config.json); the other sizes are downloads.
CONFIG = "l2_supercat"
DIMENSIONS = 256
# Texts tokenized at once (the tokenizer spreads a batch over the cores).
BATCH = 1024
# Tokens of a text that count: a chunk's vector is the mean of its first MAX_TOKENS
# tokens' rows. Its opening says what a chunk is about; a longer mean blurs into the
# corpus's average. On the coding questions (bench_embedders) caps of 64-192 found 43-50%
# of the paraphrased ones, 512 found 37%; on LoCoMo it changes little (MRR 0.830 vs 0.832).
MAX_TOKENS = 128


def bundled_files() -> tuple[Path, Path]:
    """The wheel's weights and tokenizer files, found without importing the package."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            "search.embedder is wordllama but the package is missing: pip install "
            "'autopoiesis[static]' (or wordllama)"
        )
    base = Path(next(iter(spec.submodule_search_locations)))
    weights = base / "weights" / f"{CONFIG}_{DIMENSIONS}.safetensors"
    tokenizer = base / "tokenizers" / f"{CONFIG}_tokenizer_config.json"
    for path in (weights, tokenizer):
        if not path.is_file():
            raise EmbedderError(f"wordllama's bundled file {path} is missing; reinstall wordllama")
    return weights, tokenizer


class WordLlamaEmbedder:
    """Mean of the texts' token vectors from WordLlama's bundled table, unit length."""

    name = "wordllama"
    # Unrelated texts still share common tokens' directions: below this cosine a vector
    # hit is noise (measured: unrelated sentences on one subject ~0.1, paraphrases 0.3-0.5).
    min_similarity = 0.2
    rrf_weight = 1.0
    # Its neighbours are not BM25's hits (subwords and meaning, not words): a full KNN.
    lexical = False
    # LoCoMo dev: MRR 0.832 with the weighted merge (0.4 BM25 / 0.6 vector) vs 0.792 rrf.
    preferred_merge = "weighted"

    def __init__(self) -> None:
        weights, tokenizer = bundled_files()
        try:
            import numpy as np
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderError(
                f"search.embedder is wordllama but {exc.name} is missing: pip install "
                "'autopoiesis[static]'"
            ) from exc
        self._np = np
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self.max_tokens = MAX_TOKENS
        self._tokenizer.enable_truncation(self.max_tokens)
        with safe_open(str(weights), framework="np") as f:
            table = f.get_tensor("embedding.weight")
        # kept as shipped (float16, 16 MB); a mean is taken in float32
        self._table: Any = table
        self.dimensions = int(self._table.shape[1])

    @property
    def fingerprint(self) -> str:
        return f"wordllama:{CONFIG}:{self.dimensions}:{self.max_tokens}"

    def _vectors(self, texts: list[str]) -> Any:
        """The unit vectors of TEXTS as a float32 matrix (a text without tokens: zeros)."""
        np = self._np
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        rows = self._table.shape[0]
        for start in range(0, len(texts), BATCH):
            encoded = self._tokenizer.encode_batch(
                texts[start : start + BATCH], add_special_tokens=False
            )
            for i, enc in enumerate(encoded, start):
                ids = np.asarray(enc.ids, dtype=np.int64)
                ids = ids[(ids >= 0) & (ids < rows)]
                if ids.size:
                    out[i] = self._table[ids].mean(axis=0, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed(self, texts: list[str]) -> list[bytes]:
        return [row.tobytes() for row in self._vectors(texts)]

    def embed_query(self, text: str) -> bytes:
        return self.embed([text])[0]


def from_config(config: Config) -> WordLlamaEmbedder:
    """The registry's factory: WordLlama's bundled model takes no settings."""
    return WordLlamaEmbedder()
