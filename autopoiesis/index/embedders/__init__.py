"""Embedders as plugins: the `Embedder` Protocol, and a registry of factories by name.

An embedder turns texts into unit-length float32 vectors (bytes, what sqlite-vec stores).
Everything the index needs from one is in the Protocol; nothing is read with getattr.
`fingerprint` names everything that changes the vectors: the embedding cache is keyed by
it, and an index rebuilds when it changes.

`search.embedder` in memory-config.yaml names a registered factory. The built-ins:
`offline` (feature hashing, the default), `openai` (any OpenAI-compatible server),
`wordllama` (static embeddings whose weights ship in the wheel: the `static` extra),
`fastembed` and `sentence-transformers` (local models already on disk); this package is
the plugin that registers them (autopoiesis.plugins, the hook `register_embedders`). To
add one, implement that hook in a plugin, or:

    from autopoiesis.index.embedders import register_embedder
    register_embedder("mine", lambda config: MyEmbedder(config.search.embedding_model))

Every built-in module imports its heavy package (openai, fastembed, ...) only when an
embedder is made or first used, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from autopoiesis import plugins
from autopoiesis.core.config import CONFIG_FILENAME
from autopoiesis.errors import ConfigError
from autopoiesis.index.embedders.common import from_blob, to_blob

if TYPE_CHECKING:
    from autopoiesis.core.config import Config
    from autopoiesis.index.embedders.fastembed import FastEmbedEmbedder
    from autopoiesis.index.embedders.offline import HashingEmbedder
    from autopoiesis.index.embedders.openai import OpenAIEmbedder
    from autopoiesis.index.embedders.sentence_transformers import (
        SentenceTransformerEmbedder,
    )
    from autopoiesis.index.embedders.wordllama import WordLlamaEmbedder

# The built-in embedders: each registry name, its module, and the class the package
# exports. A module is imported when its embedder is made or its class is asked for,
# not with the package: a search or a compile imports the one it uses (the openai
# module alone pulls in the LLM protocol, base64 and random).
_BUILTINS: tuple[tuple[str, str, str], ...] = (
    ("offline", "offline", "HashingEmbedder"),
    ("openai", "openai", "OpenAIEmbedder"),
    ("fastembed", "fastembed", "FastEmbedEmbedder"),
    ("sentence-transformers", "sentence_transformers", "SentenceTransformerEmbedder"),
    ("wordllama", "wordllama", "WordLlamaEmbedder"),
)
_CLASS_MODULES = {cls: module for _, module, cls in _BUILTINS}

__all__ = [
    "Embedder",
    "EmbedderFactory",
    "FastEmbedEmbedder",
    "HashingEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "WordLlamaEmbedder",
    "embedder_from_config",
    "embedder_names",
    "from_blob",
    "make_embedder",
    "register_embedder",
    "to_blob",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit float32 vectors of `dimensions` values."""

    name: str  # the registry name it is made under ("offline", "openai", ...)
    dimensions: int
    # Vector hits below this cosine similarity are noise for this embedder, not evidence.
    min_similarity: float
    # True when its features are words, as BM25's are (the offline hashing embedder): its
    # nearest neighbours are mostly BM25's hits, so search re-scores BM25's candidates
    # with it instead of scanning every vector.
    lexical: bool
    # How much a vector rank counts next to a BM25 rank in reciprocal-rank fusion.
    rrf_weight: float
    # What search.merge `auto` means with it: "rrf" when its similarities are on another
    # scale than BM25's, "weighted" when they carry meaning BM25 lacks.
    preferred_merge: str  # "rrf" | "weighted"

    @property
    def fingerprint(self) -> str:
        """Everything that changes the vectors, e.g. "offline:hash-v3:512"."""
        ...

    def embed(self, texts: list[str]) -> list[bytes]:
        """One float32 blob per text, in order."""
        ...

    def embed_query(self, text: str) -> bytes:
        """The vector of a search query."""
        ...


EmbedderFactory = Callable[["Config"], Embedder]


def _module(name: str) -> Any:
    return importlib.import_module(f"{__name__}.{name}")


def _builtin_factory(module: str) -> EmbedderFactory:
    """The `from_config` of the built-in module MODULE, imported when it makes one."""

    def from_config(config: Config) -> Embedder:
        made: Embedder = _module(module).from_config(config)
        return made

    return from_config


@plugins.hookimpl
def register_embedders(register: Callable[[str, EmbedderFactory], None]) -> None:
    for name, module, _ in _BUILTINS:
        register(name, _builtin_factory(module))


def __getattr__(name: str) -> Any:
    """The built-in embedder classes (`HashingEmbedder`, ...), each imported when first
    asked for (_BUILTINS)."""
    module = _CLASS_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_module(module), name)


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Make `search.embedder: NAME` build its embedder with FACTORY(config): a plugin of
    the process's plugin manager. Registering a name again replaces its factory."""
    if not name or not isinstance(name, str):
        raise ValueError("an embedder needs a non-empty name")
    plugins.plugin_manager().contribute("register_embedders", name, factory)


def embedder_names() -> tuple[str, ...]:
    """The registered embedder names, built-ins first."""
    return tuple(plugins.embedders())


def make_embedder(name: str, config: Config) -> Embedder:
    """The embedder registered as NAME, made for CONFIG (the installed plugins are looked
    at only for a name the built-ins and registered ones lack)."""
    factory: EmbedderFactory | None = plugins.lookup(plugins.embedders, name)
    if factory is None:
        names = embedder_names()
        raise ConfigError(
            f"{CONFIG_FILENAME}: unknown search.embedder {name!r}; use {', '.join(names[:-1])} or "
            f"{names[-1]}."
        )
    return factory(config)


def embedder_from_config(config: Config) -> Embedder:
    """The embedder that memory-config.yaml's `search.embedder` names."""
    return make_embedder(config.search.embedder, config)
