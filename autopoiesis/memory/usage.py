"""Usage counts: how often each knowledge file was included in a compiled context.

The compiler's P3 frequency boost reads them and the pruner takes them as evidence that
a file is still in use; both receive them from here as plain data, so neither the
compiler nor the lifecycle imports the other. Stored as JSON under .autopoiesis/ (a
cache like any other: deleting it only forgets the counts).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from autopoiesis.core.paths import STATE_FILES, MemoryRepo, atomic_write


def inclusion_counts(repo: MemoryRepo) -> dict[str, int]:
    """{repo-relative path: times included}; {} when nothing was recorded or the file is
    unreadable."""
    path = repo.state_dir.joinpath(*STATE_FILES["inclusions"])  # reading must not create folders
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): int(v) for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool)
    }


def record_inclusions(repo: MemoryRepo, paths: Iterable[str]) -> None:
    """Add one use to each of PATHS (under a lock: compiles may run concurrently)."""
    paths = [p for p in paths if p]
    if not paths:
        return
    with repo.lock("compiler-inclusions"):
        counts = inclusion_counts(repo)
        for p in paths:
            counts[p] = counts.get(p, 0) + 1
        atomic_write(
            repo.state_file("inclusions"),
            json.dumps(counts, sort_keys=True, indent=0),
            durable=False,  # counts, written on every prompt: a power cut may forget them
        )
