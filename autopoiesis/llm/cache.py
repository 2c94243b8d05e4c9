"""The response cache: answers keyed on (stage, model, sha256 of the request), in SQLite
so several processes (hooks, the daemon, the CLI) share it safely. Deleting it only costs
re-asking the model.

It is bounded: every call of every stage may add an answer, for as long as the memory
lives, so past MAX_BYTES of answers (`size`: the bytes of the answer and its key) the
least recently used ones go first. `used` orders them: one more than the highest when a
row is written or hit, a sequence every process shares through the database, so the
order holds across processes and needs no clock."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.sqlite import open_db

#: The answers a cache keeps at most, in bytes (their text and keys; the file holds some
#: more for SQLite's pages and indexes). A gate's answer is a few bytes, an extraction's a
#: few KB: tens of thousands of answers.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

_NEXT_USED = "(SELECT coalesce(max(used), 0) + 1 FROM responses)"


def request_key(messages: Sequence[dict[str, str]], params: dict[str, Any]) -> str:
    """sha256 of everything that shapes the answer besides stage and model."""
    blob = json.dumps(
        {"messages": list(messages), "params": params}, sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _size(stage: str, model: str, key: str, text: str) -> int:
    return sum(len(s.encode("utf-8", "replace")) for s in (stage, model, key, text))


class ResponseCache:
    """One connection per cache, used under a lock: the calls come from many threads, and
    opening/closing a WAL database per call costs more than the lookup (the last close
    checkpoints)."""

    def __init__(self, path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES):
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._db = open_db(path, timeout=10)
        # A cache: losing the last answers to a power cut is fine, an fsync per call is not.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("BEGIN IMMEDIATE")  # one process creates or upgrades the table
        try:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (stage TEXT NOT NULL, model TEXT NOT NULL,"
                " key TEXT NOT NULL, text TEXT NOT NULL, tokens_in INTEGER NOT NULL,"
                " tokens_out INTEGER NOT NULL, created TEXT NOT NULL,"
                " used INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0,"
                " PRIMARY KEY (stage, model, key))"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
            if "used" not in columns:  # a cache of a version that kept answers unbounded
                self._db.execute("ALTER TABLE responses ADD COLUMN used INTEGER NOT NULL DEFAULT 0")
                self._db.execute("ALTER TABLE responses ADD COLUMN size INTEGER NOT NULL DEFAULT 0")
                self._db.execute(
                    "UPDATE responses SET used = rowid, size = length(CAST(stage AS BLOB))"
                    " + length(CAST(model AS BLOB)) + length(CAST(key AS BLOB))"
                    " + length(CAST(text AS BLOB))"
                )
            # the bound's sums and the eviction's order read this index, not the answers
            self._db.execute("CREATE INDEX IF NOT EXISTS responses_used ON responses (used, size)")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def get(self, stage: str, model: str, key: str) -> tuple[str, int, int] | None:
        """(text, tokens_in, tokens_out) of the cached answer, or None. A hit makes the
        answer the most recently used."""
        with self._lock:
            row = self._db.execute(
                "SELECT text, tokens_in, tokens_out FROM responses WHERE stage=? AND model=? AND "
                "key=?",
                (stage, model, key),
            ).fetchone()
            if row is not None:
                self._db.execute(
                    f"UPDATE responses SET used = {_NEXT_USED} WHERE stage=? AND model=? AND key=?",
                    (stage, model, key),
                )
        return (row[0], int(row[1]), int(row[2])) if row else None

    def put(
        self, stage: str, model: str, key: str, text: str, tokens_in: int, tokens_out: int
    ) -> None:
        """Keep the answer, then drop the least recently used ones past MAX_BYTES."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses"
                    f" VALUES (?, ?, ?, ?, ?, ?, ?, {_NEXT_USED}, ?)",
                    (
                        stage,
                        model,
                        key,
                        text,
                        tokens_in,
                        tokens_out,
                        format_ts(utc_now()),
                        _size(stage, model, key, text),
                    ),
                )
                self._evict()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _evict(self) -> None:
        """Drop the least recently used answers until those left fit in MAX_BYTES."""
        (total,) = self._db.execute("SELECT coalesce(sum(size), 0) FROM responses").fetchone()
        excess = int(total) - self.max_bytes
        if excess <= 0:
            return
        # the newest row whose removal, with every older one's, frees EXCESS bytes
        row = self._db.execute(
            "SELECT used FROM (SELECT used, sum(size) OVER (ORDER BY used) AS freed"
            " FROM responses) WHERE freed >= ? ORDER BY used LIMIT 1",
            (excess,),
        ).fetchone()
        if row is not None:
            self._db.execute("DELETE FROM responses WHERE used <= ?", (row[0],))

    def size_bytes(self) -> int:
        """The bytes of the answers kept (what MAX_BYTES bounds)."""
        with self._lock:
            (total,) = self._db.execute("SELECT coalesce(sum(size), 0) FROM responses").fetchone()
        return int(total)

    def close(self) -> None:
        with self._lock:
            self._db.close()
