"""Setting up a connection to memory.db (IndexStore opens it): WAL mode, and the
embedding cache attached as `cache`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from autopoiesis.index import db


def set_wal(conn: Any, db_error: type[Exception]) -> None:
    """WAL mode. Two processes making memory.db at once can both hold a read lock and
    want the file to themselves to switch it: SQLite answers one "locked" at once
    (waiting could deadlock), so that one tries again; the other has switched it by then."""
    for attempt in range(40):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except db_error as exc:
            if db.classify(exc) != db.BUSY or attempt == 39:
                raise
            time.sleep(0.01 * (attempt + 1))


def attach_cache(conn: Any, cache: Path) -> None:
    conn.execute("ATTACH DATABASE ? AS cache", (str(cache),))
    tables = {
        t for (t,) in conn.execute("SELECT name FROM cache.sqlite_master WHERE type = 'table'")
    }
    if db.OLD_CACHE_TABLE in tables:  # the first form of the cache: started over (a cache)
        conn.execute("DETACH DATABASE cache")
        cache.unlink(missing_ok=True)
        conn.execute("ATTACH DATABASE ? AS cache", (str(cache),))
    conn.execute(f"PRAGMA cache.page_size={db.PAGE_SIZE}")  # a new file only
    conn.executescript(db.CACHE_SCHEMA)
