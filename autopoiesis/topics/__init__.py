"""Topics and their watcher: loading topic files, the three activation tiers (pattern,
similarity, gate) and the pipeline that runs them for each message.

Kept empty on purpose: the pre-commit hook imports `autopoiesis.topics.loader` on every
commit, and importing this package must not pull in scikit-learn or numpy. Import
from the submodules: loader, pattern, similarity, gate, pipeline.
"""
