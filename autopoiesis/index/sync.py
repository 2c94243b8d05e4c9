"""`python -m autopoiesis.index.sync --root DIR [--rebuild]`: the detached process the
post-commit hook starts (background.spawn_background, the hooks/post-commit shim). It
brings DIR's memory.db up to date (background.sync_until_fresh) and logs one line a step;
it never writes an index built with an embedder its program chose (SearchIndex.embedder_conflict).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index.background import log_line, sync_until_fresh
from autopoiesis.index.searchindex import SearchIndex


def run(root: Path, *, rebuild: bool = False, build: bool = False, rounds: int = 5) -> int:
    """Sync ROOT's index; REBUILD: rebuild it first; BUILD: go on with the build in steps
    under way, if there still is one when the lock is ours (index/build.py)."""
    with SearchIndex(MemoryRepo(root)) as index:
        conflict = index.embedder_conflict()
        if conflict is not None:
            log_line(f"not synced: {conflict}")
            return 0
        if build and not rebuild:
            with index.store.write_lock():
                rebuild = index.building() is not None
        sync_until_fresh(index, rebuild=rebuild, rounds=rounds)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autopoiesis.index.sync", description="Bring memory.db up to date."
    )
    parser.add_argument("--root", default=os.getcwd())
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--build", action="store_true")
    ns = parser.parse_args(argv)
    try:
        return run(Path(ns.root), rebuild=ns.rebuild, build=ns.build)
    except Exception as exc:  # a log line, not a traceback on someone's terminal
        log_line(f"error: {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
