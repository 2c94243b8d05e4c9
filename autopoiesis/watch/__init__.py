"""Watchers (design §4, §5): topic files, the three activation tiers and the pipeline.

Kept empty on purpose: the pre-commit hook imports `autopoiesis.watch.topics` on every
commit, and importing this package must not pull in scikit-learn or numpy. Import
from the submodules: topics, pattern, similarity, gate, pipeline.
"""
