"""The one JSONL event log: one JSON object a line, appended whole, read back leniently.

Gate decisions, the LLM ledger, the lifecycle log and the index sync's log are each an
EventLog under .autopoiesis/ (MemoryRepo names the files). Each append is one write() of
one line in O_APPEND mode, so concurrent writers never interleave inside a line; a line
torn by a crash mid-write is skipped by readers, and the next append starts on a fresh
line so that it is not lost with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts_micro


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """VALUE with REDACT applied to each string in it (keys too), however deep."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {_redacted(k, redact): _redacted(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v, redact) for v in value]
    return value


class EventLog:
    """REDACT, when given, is applied to every string of a row before it is written (a log
    of what hooks were handed holds whatever a hostile payload put there)."""

    def __init__(self, path: Path, *, redact: Callable[[str], str] | None = None):
        self.path = Path(path)
        self.redact = redact

    def append(self, event: dict[str, Any], *, stamp: bool = True) -> dict[str, Any]:
        """Append EVENT (with a UTC `ts` first when STAMP and it has none); returns what was
        written."""
        row = ({"ts": format_ts_micro()} | event) if stamp and "ts" not in event else dict(event)
        if self.redact is not None:
            row = _redacted(row, self.redact)
        line = json.dumps(row, ensure_ascii=False, default=str, separators=(",", ":")) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = "\n" + line  # a crash cut the last line: start on a line of our own
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
        return row

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            fh = open(self.path, encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return
        with fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    continue  # a torn line from a crash mid-append
                if isinstance(row, dict):
                    yield row

    def rows(self) -> list[dict[str, Any]]:
        return list(self)

    def exists(self) -> bool:
        return self.path.exists()
