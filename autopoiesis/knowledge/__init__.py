"""Who writes knowledge, and how it lives: the writer (the one writer of knowledge files),
extractors/, extract (+ retries), condense, prune, replay onto extract/* branches, flush.

Light on purpose: import the submodules you need (`autopoiesis.knowledge.extract` for
KnowledgeExtractor, `.condense` for MemoryCondenser, `.prune` for MemoryPruner).
"""
