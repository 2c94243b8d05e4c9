"""The memory lifecycle (design §8): extract, condense, prune, archive, reconstruct.

Light on purpose: import the submodules you need (`autopoiesis.lifecycle.replay` for
KnowledgeExtractor, `.condense` for MemoryCondenser, `.prune` for MemoryPruner).
"""
