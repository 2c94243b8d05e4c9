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
from datetime import date
from pathlib import Path
from typing import Any

from autopoiesis.core.events import EventLog
from autopoiesis.llm.protocol import UsageRow


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


class Ledger:
    def __init__(self, path: Path):
        self.events = EventLog(path)
        self._lock = threading.Lock()
        self._scan_offset = 0
        self._totals = DayTotals()

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
        since the last look (an offset into the file) instead of the whole log each time;
        EventLog has no such tail read, hence the direct file access."""
        with self._lock:
            if today != self._totals.day:
                self._scan_offset, self._totals = 0, DayTotals(today)
            try:
                with open(self.path, "rb") as fh:
                    fh.seek(0, os.SEEK_END)
                    if fh.tell() < self._scan_offset:  # the ledger was deleted or truncated
                        self._scan_offset, self._totals = 0, DayTotals(today)
                    fh.seek(self._scan_offset)
                    data = fh.read()
            except FileNotFoundError:
                self._scan_offset, self._totals = 0, DayTotals(today)
                return DayTotals(today)
            end = data.rfind(b"\n") + 1  # leave a half-written last line for next time
            t = self._totals
            for line in data[:end].splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(row, dict) or row.get("day") != today:
                    continue
                t.calls += 1
                t.errors += not row.get("ok", True)
                paid = row.get("provider") != "offline" and not row.get("cached")
                tokens = (
                    (int(row.get("tokens_in") or 0) + int(row.get("tokens_out") or 0))
                    if paid
                    else 0
                )
                t.tokens += tokens
                if row.get("job"):
                    j = t.jobs.setdefault(str(row["job"]), {"calls": 0, "tokens": 0})
                    j["calls"] += 1
                    j["tokens"] += tokens
            self._scan_offset += end
            return DayTotals(
                t.day, t.calls, t.tokens, t.errors, {k: dict(v) for k, v in t.jobs.items()}
            )


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
