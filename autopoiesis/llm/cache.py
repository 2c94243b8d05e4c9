"""The response cache: answers keyed on (stage, model, sha256 of the request), in SQLite
so several processes (hooks, the daemon, the CLI) share it safely. Deleting it only costs
re-asking the model."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.sqlite import open_db


def request_key(messages: Sequence[dict[str, str]], params: dict[str, Any]) -> str:
    """sha256 of everything that shapes the answer besides stage and model."""
    blob = json.dumps(
        {"messages": list(messages), "params": params}, sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """One connection per cache, used under a lock: the calls come from many threads, and
    opening/closing a WAL database per call costs more than the lookup (the last close
    checkpoints)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._db = open_db(path, timeout=10)
        # A cache: losing the last answers to a power cut is fine, an fsync per call is not.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (stage TEXT NOT NULL, model TEXT NOT NULL, key "
            "TEXT NOT NULL,"
            " text TEXT NOT NULL, tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, "
            "created TEXT NOT NULL,"
            " PRIMARY KEY (stage, model, key))"
        )

    def get(self, stage: str, model: str, key: str) -> tuple[str, int, int] | None:
        """(text, tokens_in, tokens_out) of the cached answer, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT text, tokens_in, tokens_out FROM responses WHERE stage=? AND model=? AND "
                "key=?",
                (stage, model, key),
            ).fetchone()
        return (row[0], int(row[1]), int(row[2])) if row else None

    def put(
        self, stage: str, model: str, key: str, text: str, tokens_in: int, tokens_out: int
    ) -> None:
        with self._lock:  # autocommit: one statement, one transaction
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (stage, model, key, text, tokens_in, tokens_out, format_ts(utc_now())),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
