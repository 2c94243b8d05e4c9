"""Keeping the index fresh from git hooks: the light path.

`post_commit_hook(repo)` runs inside `git commit` (via autopoiesis.hooks). It must not
slow the commit, so it imports nothing heavy and does no indexing itself: it starts
`python -m autopoiesis.index.sync --root ROOT` as a detached process (its own session, so
a terminal's Ctrl-C or the hook's exit does not kill it) and returns. That process takes
the index lock, re-indexes what changed since the commit the index recorded (git's own
diff), and repeats while HEAD keeps moving (a burst of commits costs one catch-up).

Searches catch up by themselves too, so a slow or failed background run is never seen
as a stale result; it only moves work off the next search.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from autopoiesis.core.paths import MemoryRepo

LOG_NAME = "index-sync.log"


def spawn_background(repo: MemoryRepo, *, rebuild: bool = False) -> int:
    """Start the background sync of REPO; returns its pid."""
    log = repo.state_path("logs", LOG_NAME)
    args = [sys.executable, "-m", "autopoiesis.index.sync", "--root", str(repo.root)]
    if rebuild:
        args.append("--rebuild")
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            args, cwd=repo.root, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True, close_fds=True,
        )
    return proc.pid


def post_commit_hook(repo: MemoryRepo) -> None:
    """Hand the commit to a background sync, when this repo has an index to keep fresh
    (with no memory.db there is nothing to update; `autopoiesis index rebuild` makes one)."""
    if not repo.index_path.exists():
        return
    spawn_background(repo)


def run(root: Path, *, rebuild: bool = False, rounds: int = 5) -> int:
    from autopoiesis.index.searchindex import SearchIndex

    repo = MemoryRepo(root)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    with SearchIndex(repo) as index:
        if rebuild:
            report = index.rebuild_full()
            print(f"{stamp} rebuild: {report.indexed} files, {report.embedded} embedded, {report.seconds:.2f} s", flush=True)
        for _ in range(rounds):
            report = index.catch_up(timeout=300)
            if report.indexed or report.removed or report.full:
                print(f"{stamp} sync: {report.indexed} indexed, {report.removed} removed, {report.seconds:.3f} s", flush=True)
            for w in report.warnings:
                print(f"{stamp} warning: {w}", flush=True)
            if index.is_fresh():
                break
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autopoiesis.index.sync", description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.getcwd())
    parser.add_argument("--rebuild", action="store_true")
    ns = parser.parse_args(argv)
    try:
        return run(Path(ns.root), rebuild=ns.rebuild)
    except Exception as exc:  # a log line, not a traceback on someone's terminal
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} error: {type(exc).__name__}: {exc}", flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
