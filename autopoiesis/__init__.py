"""autopoiesis: memory for AI agents kept in a git repository.

The public API is the design's runtime classes (§9.2), importable from here:

    from autopoiesis import MemoryRepo, ConversationCapture, Session, ContextCompiler, search

Names are resolved lazily: the git hooks import this package on every commit, and must
not pay for search, scikit-learn or the LLM client.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "MemoryRepo": "autopoiesis.core.paths",
    "Config": "autopoiesis.core.config",
    "load_config": "autopoiesis.core.config",
    "ConversationCapture": "autopoiesis.capture.session",
    "Session": "autopoiesis.capture.session",
    "import_files": "autopoiesis.capture.importers",
    "Transcript": "autopoiesis.formats.transcript",
    "MemoryGit": "autopoiesis.gitops",
    "SearchIndex": "autopoiesis.index",
    "SearchResult": "autopoiesis.index",
    "search": "autopoiesis.index",
    "Topic": "autopoiesis.watch.topics",
    "load_topics": "autopoiesis.watch.topics",
    "PatternMatcher": "autopoiesis.watch.pattern",
    "SimilarityScorer": "autopoiesis.watch.similarity",
    "GatedActivator": "autopoiesis.watch.gate",
    "WatcherPipeline": "autopoiesis.watch.pipeline",
    "ContextCompiler": "autopoiesis.compiler",
    "KnowledgeExtractor": "autopoiesis.lifecycle.extract",
    "MemoryCondenser": "autopoiesis.lifecycle.condense",
    "MemoryPruner": "autopoiesis.lifecycle.prune",
    "LLMClient": "autopoiesis.llm",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'autopoiesis' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
