"""autopoiesis: memory for AI agents kept in a git repository.

The public API is the design's runtime classes (docs/design.md#system-api) and the types their
callers need:

    from autopoiesis import Memory, MemoryRepo, ConversationCapture, ContextCompiler, search

`Memory(root)` (or `Memory.locate()`) is the composition root: one object that reads the
config and wires the rest (capture, search, compile, extract, condense, prune, commit).

Every name below is typed for checkers (the `TYPE_CHECKING` imports) and loaded on first
use at run time: the git hooks import this package on every commit and must not pay for
the search index, scikit-learn or the LLM client.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from autopoiesis.capture.importers import (
        Importer,
        ImportReport,
        import_files,
        register_importer,
    )
    from autopoiesis.capture.session import ConversationCapture, Session
    from autopoiesis.compiler import CompiledContext, ContextCompiler, HistoryMessage
    from autopoiesis.core.config import Config, load_config
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.errors import AutopoiesisError
    from autopoiesis.formats.topic import Topic
    from autopoiesis.formats.transcript import Transcript
    from autopoiesis.git.repo import MemoryGit
    from autopoiesis.index import SearchIndex, SearchResult, search
    from autopoiesis.index.embedders import Embedder, register_embedder
    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.condense import MemoryCondenser
    from autopoiesis.knowledge.extract import KnowledgeExtractor
    from autopoiesis.knowledge.extractors import Extractor, ExtractorRegistry
    from autopoiesis.knowledge.prune import MemoryPruner
    from autopoiesis.knowledge.writer import KnowledgeWriter
    from autopoiesis.llm import LLMClient
    from autopoiesis.memory.compile_message import compile_for_message
    from autopoiesis.memory.facade import Memory
    from autopoiesis.memory.initialize import init_memory_repo
    from autopoiesis.topics.gate import GatedActivator
    from autopoiesis.topics.loader import load_topics
    from autopoiesis.topics.pattern import PatternMatcher
    from autopoiesis.topics.pipeline import WatcherPipeline
    from autopoiesis.topics.similarity import SimilarityScorer

# name -> the module that owns it (one owner per name)
_EXPORTS = {
    "AutopoiesisError": "autopoiesis.errors",
    "Memory": "autopoiesis.memory.facade",
    "MemoryRepo": "autopoiesis.core.paths",
    "Config": "autopoiesis.core.config",
    "load_config": "autopoiesis.core.config",
    "init_memory_repo": "autopoiesis.memory.initialize",
    "compile_for_message": "autopoiesis.memory.compile_message",
    "ConversationCapture": "autopoiesis.capture.session",
    "Session": "autopoiesis.capture.session",
    "import_files": "autopoiesis.capture.importers",
    "ImportReport": "autopoiesis.capture.importers",
    "Importer": "autopoiesis.capture.importers",
    "register_importer": "autopoiesis.capture.importers",
    "Transcript": "autopoiesis.formats.transcript",
    "Topic": "autopoiesis.formats.topic",
    "MemoryGit": "autopoiesis.git.repo",
    "SearchIndex": "autopoiesis.index",
    "SearchResult": "autopoiesis.index",
    "search": "autopoiesis.index",
    "Embedder": "autopoiesis.index.embedders",
    "register_embedder": "autopoiesis.index.embedders",
    "load_topics": "autopoiesis.topics.loader",
    "PatternMatcher": "autopoiesis.topics.pattern",
    "SimilarityScorer": "autopoiesis.topics.similarity",
    "GatedActivator": "autopoiesis.topics.gate",
    "WatcherPipeline": "autopoiesis.topics.pipeline",
    "ContextCompiler": "autopoiesis.compiler",
    "CompiledContext": "autopoiesis.compiler",
    "HistoryMessage": "autopoiesis.compiler",
    "KnowledgeExtractor": "autopoiesis.knowledge.extract",
    "Extractor": "autopoiesis.knowledge.extractors",
    "ExtractorRegistry": "autopoiesis.knowledge.extractors",
    "KnowledgeWriter": "autopoiesis.knowledge.writer",
    "KnowledgeChange": "autopoiesis.knowledge.changes",
    "Provenance": "autopoiesis.knowledge.changes",
    "MemoryCondenser": "autopoiesis.knowledge.condense",
    "MemoryPruner": "autopoiesis.knowledge.prune",
    "LLMClient": "autopoiesis.llm",
}

__all__ = [*sorted(_EXPORTS), "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'autopoiesis' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
