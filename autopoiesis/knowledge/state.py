"""Exactly-once extraction state and the retry queue (docs/design.md#extraction-bookkeeping's
bookmarks).

One row per (transcript content hash, extractor name@version), in SQLite in the gitignored
state file `extract_state` (`repo.state_file("extract_state")`):

* `done`     the transcript's changes from that extractor version are applied;
* `pending`  an attempt failed; `next_retry_at` follows the 5/15/30/60/120-minute backoff
             of docs/design.md#extraction-bookkeeping; after the last retry fails the offline
             flavour runs instead
             (`done` with `flavour = 'offline-fallback'`): no session is ever silently lost.

Keyed on the content hash, not the path: a transcript is immutable, so its hash names it;
a new extractor version is a new key and reprocesses everything. Changes are applied
before a row turns `done`, and the writer never duplicates a fact, so a crash between
the two re-applies harmlessly: at-least-once application + idempotent writer = exactly
once in effect.

Deleting the file only costs re-running extraction (the writer dedups), in keeping with
"SQLite is a cache": a row counts as done only while the tracked record below lists its
transcript and extractor (done_keys).

What is done also travels with the repository: EXTRACTED_FILE (`knowledge/.extracted`,
tracked, committed with the extraction) holds one line `PATH<TAB>EXTRACTOR@VERSION` per
transcript and extractor version done, sorted, merged by union (`.gitattributes`). The
SQLite file is local: without this record every fresh clone, and every `autopoiesis
forget` (which deletes the caches under .autopoiesis/), extracted everything again, and a
journal pruned to archive/ came back under knowledge/. Keyed on the path: a transcript is
immutable and its path names it (forget may change its bytes, not what was learned).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.paths import MemoryRepo, atomic_write
from autopoiesis.core.sqlite import open_db

BACKOFF_MINUTES = (5, 15, 30, 60, 120)
EXTRACTED_FILE = "knowledge/.extracted"
_RECORD_HEADER = (
    "# What extraction has done: one line per transcript and extractor version, "
    "PATH<TAB>EXTRACTOR@VERSION,\n"
    "# kept by autopoiesis (knowledge/state.py), merged by union. A line deleted is extracted "
    "again.\n"
)


class ExtractedRecord:
    """EXTRACTED_FILE: the (transcript path, extractor@version) pairs done, as the
    repository has them."""

    def __init__(self, path: Path):
        self.path = path

    def pairs(self) -> set[tuple[str, str]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return set()
        out = set()
        for line in text.splitlines():
            path, tab, extractor = line.partition("\t")
            if tab and path and extractor and not line.startswith("#"):
                out.add((path, extractor.strip()))
        return out

    def _write(self, pairs: set[tuple[str, str]]) -> None:
        lines = "".join(f"{p}\t{e}\n" for p, e in sorted(pairs))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, _RECORD_HEADER + lines)

    def add(self, pairs: Iterable[tuple[str, str]]) -> None:
        have = self.pairs()
        new = have | set(pairs)
        if new != have or not self.path.exists():
            self._write(new)

    def drop(self, extractor: str | None = None) -> int:
        have = self.pairs()
        keep = {(p, e) for p, e in have if extractor is not None and e != extractor}
        if keep != have:
            self._write(keep)
        return len(have) - len(keep)


@dataclass(frozen=True)
class StateRow:
    content_hash: str
    extractor: str  # name@version
    path: str
    status: str  # done | pending
    flavour: str  # offline | llm | offline-fallback | ""
    attempts: int
    next_retry_at: str | None
    last_error: str
    updated_at: str


class ExtractionState:
    """The bookmark table. Thread-safe; one connection, short transactions."""

    def __init__(self, path: Path, record: Path | None = None):
        self.path = path
        #: the tracked record of what is done (EXTRACTED_FILE), None for a state of its own
        self.record = ExtractedRecord(record) if record is not None else None
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = open_db(path, timeout=30)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS extractions ("
            " content_hash TEXT NOT NULL, extractor TEXT NOT NULL, path TEXT NOT NULL,"
            " status TEXT NOT NULL, flavour TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL "
            "DEFAULT 0,"
            " next_retry_at TEXT, last_error TEXT NOT NULL DEFAULT '', updated_at TEXT NOT NULL,"
            " PRIMARY KEY (content_hash, extractor))"
        )

    @classmethod
    def for_repo(cls, repo: MemoryRepo) -> ExtractionState:
        return cls(repo.state_file("extract_state"), repo.root / EXTRACTED_FILE)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ExtractionState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── reading ──
    def get(self, content_hash: str, extractor: str) -> StateRow | None:
        with self._lock:
            row = self._db.execute(
                "SELECT content_hash, extractor, path, status, flavour, attempts, next_retry_at, "
                "last_error, updated_at"
                " FROM extractions WHERE content_hash=? AND extractor=?",
                (content_hash, extractor),
            ).fetchone()
        return StateRow(*row) if row else None

    def done_keys(self) -> set[tuple[str, str]]:
        """The (path, extractor) pairs the repository's record says are done (on any clone)
        and the (content hash, extractor) pairs done here that it also lists: test a
        transcript with is_done. The record decides: it is committed with the knowledge it
        stands for, so a `git reset` or checkout that takes an extraction's commit away, or
        a line deleted from the record, takes the transcript's "done" with it and the next
        extraction does it again (the local rows are a cache of it). A state of its own
        (no record) has only its rows."""
        with self._lock:
            rows = self._db.execute(
                "SELECT content_hash, extractor, path FROM extractions WHERE status='done'"
            ).fetchall()
        if self.record is None:
            return {(h, e) for h, e, _ in rows}
        recorded = self.record.pairs()
        return recorded | {(h, e) for h, e, p in rows if (p, e) in recorded}

    def rows(self, status: str | None = None) -> list[StateRow]:
        q = (
            "SELECT content_hash, extractor, path, status, flavour, attempts, next_retry_at, "
            "last_error, updated_at"
            " FROM extractions"
        )
        args: tuple[str, ...] = ()
        if status:
            q += " WHERE status=?"
            args = (status,)
        with self._lock:
            return [
                StateRow(*r)
                for r in self._db.execute(q + " ORDER BY path, extractor", args).fetchall()
            ]

    def is_due(self, row: StateRow, now: datetime) -> bool:
        return row.status == "pending" and (
            row.next_retry_at is None or row.next_retry_at <= format_ts(now)
        )

    # ── writing ──
    def mark_done(
        self, items: Iterable[tuple[str, str, str, str]], now: datetime | None = None
    ) -> None:
        """Mark (content_hash, extractor, path, flavour) done, in one transaction."""
        stamp = format_ts(now or utc_now())
        rows = [(h, e, p, f, stamp) for h, e, p, f in items]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT INTO extractions (content_hash, extractor, path, status, flavour, "
                "attempts, next_retry_at,"
                " last_error, updated_at) VALUES (?, ?, ?, 'done', ?, 0, NULL, '', ?)"
                " ON CONFLICT(content_hash, extractor) DO UPDATE SET status='done', "
                "flavour=excluded.flavour,"
                " path=excluded.path, next_retry_at=NULL, updated_at=excluded.updated_at",
                rows,
            )
            self._db.execute("COMMIT")
        if self.record is not None:
            self.record.add((p, e) for _, e, p, _, _ in rows)

    def record_failure(
        self, content_hash: str, extractor: str, path: str, error: str, now: datetime | None = None
    ) -> StateRow:
        """One more failed attempt: schedule the next retry (or none when exhausted:
        `attempts > len(BACKOFF_MINUTES)` means the caller must fall back offline)."""
        now = now or utc_now()
        prev = self.get(content_hash, extractor)
        attempts = (prev.attempts if prev and prev.status == "pending" else 0) + 1
        if attempts <= len(BACKOFF_MINUTES):
            nxt: str | None = format_ts(now + timedelta(minutes=BACKOFF_MINUTES[attempts - 1]))
        else:
            nxt = None
        with self._lock:
            self._db.execute(
                "INSERT INTO extractions (content_hash, extractor, path, status, flavour, "
                "attempts, next_retry_at,"
                " last_error, updated_at) VALUES (?, ?, ?, 'pending', '', ?, ?, ?, ?)"
                " ON CONFLICT(content_hash, extractor) DO UPDATE SET status='pending', "
                "attempts=excluded.attempts,"
                " next_retry_at=excluded.next_retry_at, last_error=excluded.last_error, "
                "path=excluded.path,"
                " updated_at=excluded.updated_at",
                (content_hash, extractor, path, attempts, nxt, error[:2000], format_ts(now)),
            )
        return StateRow(
            content_hash,
            extractor,
            path,
            "pending",
            "",
            attempts,
            nxt,
            error[:2000],
            format_ts(now),
        )

    def exhausted(self, row: StateRow) -> bool:
        return row.status == "pending" and row.attempts > len(BACKOFF_MINUTES)

    def forget(self, extractor: str | None = None) -> int:
        """Forget what EXTRACTOR (default: every one) did, here and in the record."""
        if self.record is not None:
            self.record.drop(extractor or None)
        with self._lock:
            if extractor:
                return self._db.execute(
                    "DELETE FROM extractions WHERE extractor=?", (extractor,)
                ).rowcount
            return self._db.execute("DELETE FROM extractions").rowcount


def is_done(done: set[tuple[str, str]], content_hash: str, path: str, extractor: str) -> bool:
    """Whether DONE (done_keys) holds the transcript at PATH with CONTENT_HASH for EXTRACTOR."""
    return (content_hash, extractor) in done or (path, extractor) in done


__all__ = [
    "BACKOFF_MINUTES",
    "EXTRACTED_FILE",
    "ExtractedRecord",
    "ExtractionState",
    "StateRow",
    "is_done",
]
