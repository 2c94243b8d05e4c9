"""Building memory.db from nothing, in steps (docs/scale.md): the first search of a new
clone does not wait for an index of every transcript.

An index that holds nothing yet (a new clone, a memory.db deleted or moved aside) is built
a batch of files at a time, each batch its own transaction: the knowledge, topics and
archive first, then the transcripts newest first. index_meta `build` records the tree
state the build started from and how far it got. Meanwhile a search answers from what is
indexed, with a notice saying how much (freshness.Freshness.catch_up), instead of waiting
for the index lock; a build whose process died is continued by the next one, from where
it stopped (the files already indexed are not read again). When the last batch is in,
the term postings are built and the tree state recorded: from then on the index is
caught up like any other, and the files that changed during the build with it.

Rebuilding an index that holds something is one transaction (IndexStore.rebuild):
searches keep the old index until the new one is complete.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from autopoiesis.core.paths import CONVERSATIONS_DIR
from autopoiesis.index.files import markdown_paths
from autopoiesis.index.store import IndexStore, IndexUpdate

BUILD_META = "build"  # index_meta key: {"state": sync meta at the start, "total", "done"}
STEP_FILES = 200  # files a transaction of a build writes (a few seconds' work)


def pending(store: IndexStore) -> dict[str, Any] | None:
    """The build in progress (its record), or None."""
    raw = store.meta(BUILD_META)
    if not raw:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def builds_in_steps(store: IndexStore) -> bool:
    """Whether the next build of STORE goes in steps: one is under way, or the index holds
    nothing a search could still use."""
    if pending(store) is not None:
        return True
    return store.meta("head") is None and store.count("files") == 0


def order(paths: list[str]) -> list[str]:
    """PATHS in the order a build indexes them: everything but transcripts (by path),
    then transcripts newest first (their paths begin with the date)."""
    transcripts = CONVERSATIONS_DIR + "/"
    rest = sorted(p for p in paths if not p.startswith(transcripts))
    return rest + sorted((p for p in paths if p.startswith(transcripts)), reverse=True)


def notice(record: Mapping[str, Any]) -> str:
    done, total = int(record.get("done", 0)), int(record.get("total", 0))
    return (
        f"the search index is being built ({done:,} of {total:,} files, the knowledge first, "
        "then the newest transcripts): older transcripts are not searched yet"
    )


def build_in_steps(
    store: IndexStore,
    sync_meta: Mapping[str, str],
    progress: Callable[[int, int], None] | None = None,
    *,
    seconds: float | None = None,
) -> IndexUpdate:
    """Build (or go on building) STORE a step at a time; SYNC_META is the tree state to
    record at the end (a build under way keeps the one it started from). With SECONDS,
    stop after the step that passes them and leave the build pending. The caller holds
    the write lock."""
    started = time.monotonic()
    store.warnings.clear()
    record = pending(store)
    if record is None:
        record = {"state": dict(sync_meta), "done": 0, "total": 0}
        with store.transaction():
            store.reset_tables()
            store.set_meta(BUILD_META, json.dumps(record))
    with store.building():  # no memory map while every page is written
        on_disk = markdown_paths(store.repo)
        store.note_links()
        done = {p for (p,) in store.conn.execute("SELECT path FROM files")}
        todo = [p for p in order(on_disk) if p not in done]
        record["total"] = len(done) + len(todo)
        indexed = embedded = 0
        for i in range(0, len(todo), STEP_FILES):

            def within(n: int, _of: int, before: int = len(done) + i) -> None:
                if progress:
                    progress(before + n, record["total"])

            with store.transaction():
                got = store.write_paths(todo[i : i + STEP_FILES], within)
                indexed, embedded = indexed + got[0], embedded + got[1]
                record["done"] = len(done) + min(i + STEP_FILES, len(todo))
                store.set_meta(BUILD_META, json.dumps(record))
            if seconds is not None and time.monotonic() - started > seconds:
                if i + STEP_FILES < len(todo):
                    return IndexUpdate(
                        indexed, embedded=embedded, seconds=time.monotonic() - started
                    )
        with store.transaction():
            for gone in done - set(on_disk):
                store.delete_path(gone)
            store.finish_build(record["state"])
            store.conn.execute("DELETE FROM index_meta WHERE key = ?", (BUILD_META,))
    return IndexUpdate(
        indexed,
        embedded=embedded,
        full=True,
        seconds=time.monotonic() - started,
        warnings=tuple(store.warnings),
    )
