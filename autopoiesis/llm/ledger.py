"""The usage ledger: one event per call (stage, model, provider, tokens, estimated cost,
cached, fell back, ok, error, attempts, latency) in an EventLog, and the sums per day and
stage that `autopoiesis llm usage` prints.

Days are UTC days (core.clock), like every other day autopoiesis counts. The ledger is
also where the daily token budget is counted, so a budget holds across processes, not
just within one client.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from autopoiesis.core.events import EventLog
from autopoiesis.llm.protocol import UsageRow

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo


@dataclass
class DayTotals:
    """One UTC day of the ledger: every call (cached and offline ones too), the tokens paid
    for (provider answered, not cached: what the daily budget counts), the failed calls,
    and the paid tokens and calls of each daemon job."""

    day: str = ""
    calls: int = 0
    tokens: int = 0
    errors: int = 0
    jobs: dict[str, dict[str, int]] = field(default_factory=dict)


#: How much of the file one step of the backward search for today's first line reads.
_CHUNK = 64 * 1024

#: A row of an earlier day stamped this close to midnight may have been appended after a
#: row of today (two writers either side of midnight), so the search for today's first
#: line goes on past such rows, to the first row stamped earlier than this before the day.
_MIDNIGHT_GRACE = "T23:59"


class Ledger:
    """The ledger keeps months of calls (`llm usage` reports every day it holds): past
    KEEP_BYTES it is renamed ledger.jsonl.1 and started again (core/events; its bound is
    core/paths' STATE_LOG_KEEP_BYTES, `Ledger.of`). A new process checks today's spending
    before its first call: a prompt hook's gate is a process a prompt. So today's totals
    are read from the end of the file back to today's first line, never from its start
    (and on into the generation before when the file began today), then kept up by
    reading only what was appended since.

    `lines_read` counts the lines this Ledger parsed to count days: what its budget
    checks cost, which must follow today's lines, not the year's."""

    def __init__(self, path: Path, *, keep_bytes: int | None = None):
        self.events = EventLog(path, keep_bytes=keep_bytes)
        self._lock = threading.Lock()
        self._scan_offset: int | None = None  # where today's unread lines start; None: unknown
        self._scanned: tuple[int, int] | None = None  # (device, inode) of the file scanned
        self._totals = DayTotals()
        self.lines_read = 0

    @classmethod
    def of(cls, repo: MemoryRepo) -> Ledger:
        """REPO's ledger (its state file `llm_ledger`), bounded as the state logs are."""
        log = repo.state_log("llm_ledger")
        return cls(log.path, keep_bytes=log.keep_bytes)

    @property
    def path(self) -> Path:
        return self.events.path

    def append(self, row: dict[str, Any]) -> None:
        self.events.append(row)

    def rows(self) -> Iterator[dict[str, Any]]:
        return iter(self.events)

    def spent_today(self, today: str) -> int:
        """Tokens paid for on day TODAY (provider answered, not cached)."""
        return self.day_totals(today).tokens

    def day_totals(self, today: str) -> DayTotals:
        """The totals of day TODAY (a copy).

        The budget is checked before every call, so this reads only the lines appended
        since the last look (an offset into the file), and the first look reads back from
        the end only as far as today's first line, into the generation before when the
        file began today (it was rotated today); EventLog has no such reads, hence the
        direct file access."""
        with self._lock:
            if today != self._totals.day:
                self._scan_offset, self._totals = None, DayTotals(today)
            try:
                fh = open(self.path, "rb")
            except FileNotFoundError:
                # never written, or renamed .1 by a rotation that no append followed yet
                self._scan_offset, self._totals = None, DayTotals(today)
                totals = DayTotals(today)
                self._count_previous(totals, today)
                return totals
            with fh:
                st = os.fstat(fh.fileno())
                size, scanned = st.st_size, (st.st_dev, st.st_ino)
                if self._scan_offset is not None and (
                    scanned != self._scanned or size < self._scan_offset
                ):
                    # rotated, deleted or truncated since the last look: count it afresh
                    self._scan_offset, self._totals = None, DayTotals(today)
                if self._scan_offset is None:
                    self._scanned = scanned
                    self._scan_offset = self._start_of_day(fh, size, today)
                    if self._scan_offset == 0:
                        self._count_previous(self._totals, today)
                fh.seek(self._scan_offset)
                data = fh.read()
            self._scan_offset += self._count(self._totals, data, today)
            t = self._totals
            return DayTotals(
                t.day, t.calls, t.tokens, t.errors, {k: dict(v) for k, v in t.jobs.items()}
            )

    def _count_previous(self, t: DayTotals, today: str) -> None:
        """Add to T today's rows of the generation before the file (ledger.jsonl.1), from
        its today's first line: the current file began today, or is not there yet."""
        try:
            with open(self.events.previous, "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(self._start_of_day(fh, size, today))
                data = fh.read()
        except FileNotFoundError:
            return
        self._count(t, data + b"\n", today)

    def _count(self, t: DayTotals, data: bytes, today: str) -> int:
        """Add TODAY's rows of DATA to T; the bytes read (a half-written last line is left
        for next time)."""
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            row = self._parse(line)
            if row is None or row.get("day") != today:
                continue
            t.calls += 1
            t.errors += not row.get("ok", True)
            paid = row.get("provider") != "offline" and not row.get("cached")
            tokens = (
                (int(row.get("tokens_in") or 0) + int(row.get("tokens_out") or 0)) if paid else 0
            )
            t.tokens += tokens
            if row.get("job"):
                j = t.jobs.setdefault(str(row["job"]), {"calls": 0, "tokens": 0})
                j["calls"] += 1
                j["tokens"] += tokens
        return end

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        self.lines_read += 1
        try:
            row = json.loads(line)
        except ValueError:
            return None  # a torn line from a crash mid-append
        return row if isinstance(row, dict) else None

    def _start_of_day(self, fh: BinaryIO, size: int, today: str) -> int:
        """The offset of the first line that may be TODAY's: the line after the last row,
        searching back from the end of the file, that was written before TODAY began (and
        its midnight grace). Rows are appended in the order they are stamped, so every row
        of today lies after it; 0 when the whole file may be today's."""
        earlier = _day_before(today)
        cutoff = f"{earlier}{_MIDNIGHT_GRACE}" if earlier else ""
        pos, tail = size, b""  # TAIL: the piece of a line that the later chunk began inside
        while pos > 0:
            step = min(_CHUNK, pos)
            pos -= step
            fh.seek(pos)
            block = fh.read(step) + tail
            lines = block.split(b"\n")
            # the first piece may be the rest of a line that begins in an earlier chunk
            tail = lines[0] if pos > 0 else b""
            ends = len(block)  # where the line looked at ends (its newline, if it has one)
            for line in reversed(lines if pos == 0 else lines[1:]):
                start = ends - len(line)
                if line.strip():
                    row = self._parse(line)
                    if row is not None and _written_before(row, today, cutoff):
                        return min(pos + ends + 1, size)  # past its newline
                ends = start - 1  # the newline ending the line before
        return 0


def _day_before(day: str) -> str:
    """The ISO day before DAY, '' when DAY is not an ISO day."""
    try:
        return (date.fromisoformat(day) - timedelta(days=1)).isoformat()
    except ValueError:
        return ""


def _written_before(row: dict[str, Any], today: str, cutoff: str) -> bool:
    """True when ROW, of a day before TODAY, was stamped before CUTOFF (a row without a
    usable stamp is taken by its day alone)."""
    day = row.get("day")
    if not isinstance(day, str) or day >= today:
        return False
    ts = row.get("ts")
    return not (isinstance(ts, str) and cutoff and ts >= cutoff)


def summarize_usage(rows: Iterable[dict[str, Any]], since: date | None = None) -> list[UsageRow]:
    """Ledger rows -> one UsageRow per (day, stage), oldest first."""
    start = since.isoformat() if since else ""
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        day = str(row.get("day", ""))
        if day < start:
            continue
        key = (day, str(row.get("stage", "")))
        a = acc.setdefault(
            key,
            {
                "calls": 0,
                "cached": 0,
                "offline": 0,
                "errors": 0,
                "tokens_in": 0,
                "tokens_out": 0,
                "cost": 0.0,
            },
        )
        a["calls"] += 1
        a["cached"] += bool(row.get("cached"))
        a["offline"] += row.get("provider") == "offline"
        a["errors"] += not row.get("ok", True)
        a["tokens_in"] += int(row.get("tokens_in") or 0)
        a["tokens_out"] += int(row.get("tokens_out") or 0)
        a["cost"] += float(row.get("cost") or 0.0)
    return [
        UsageRow(day, stage, **{**a, "cost": round(a["cost"], 6)})
        for (day, stage), a in sorted(acc.items())
    ]
