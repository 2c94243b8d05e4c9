"""The one JSONL event log: one JSON object a line, appended whole, read back leniently.

Gate decisions, the LLM ledger, the lifecycle, harness and daemon logs are each an
EventLog under .autopoiesis/ (MemoryRepo names the files, and `MemoryRepo.state_log` gives
each log its bound, STATE_LOG_KEEP_BYTES). Each append is one write() of
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


def previous_generation(path: Path) -> Path:
    """The generation of the bounded log PATH before the current one: PATH.1."""
    return path.with_name(path.name + ".1")


def open_for_append(path: Path, keep_bytes: int | None = None) -> int:
    """PATH opened to append to (made, with its folder, when missing); when it is past
    KEEP_BYTES it is first renamed PATH.1, the generation before dropped, and a new PATH
    opened.

    A process killed at any point of it loses no row already written: the rename is
    atomic, so a row is in PATH or in PATH.1 at every instant, and a reader reads both;
    killed after the rename, PATH is missing until the next append makes it. A writer
    that opened PATH just before another renamed it appends to PATH.1, still read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    if keep_bytes is None or os.fstat(fd).st_size < keep_bytes:
        return fd
    try:
        # only the file this append opened: a writer that rotated it meanwhile made a
        # new one at PATH, which is not to be moved over the generation just kept
        now, opened = os.stat(path), os.fstat(fd)
        if (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino):
            os.replace(path, previous_generation(path))
    except OSError:
        return fd  # it cannot be rotated (a read-only folder): append as before
    os.close(fd)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)


class EventLog:
    """REDACT, when given, is applied to every string of a row before it is written (a log
    of what hooks were handed holds whatever a hostile payload put there).

    KEEP_BYTES, when given, bounds a log written without end (one line per hook call): an
    append that finds the file past it first renames it PATH.1, dropping the generation
    before, so the log holds between KEEP_BYTES and twice that of its latest rows. Reading
    reads PATH.1, then PATH."""

    def __init__(
        self,
        path: Path,
        *,
        redact: Callable[[str], str] | None = None,
        keep_bytes: int | None = None,
    ):
        self.path = Path(path)
        self.redact = redact
        self.keep_bytes = keep_bytes

    @property
    def previous(self) -> Path:
        """The generation before the current file (a log with KEEP_BYTES)."""
        return previous_generation(self.path)

    def append(self, event: dict[str, Any], *, stamp: bool = True) -> dict[str, Any]:
        """Append EVENT (with a UTC `ts` first when STAMP and it has none); returns what was
        written."""
        row = ({"ts": format_ts_micro()} | event) if stamp and "ts" not in event else dict(event)
        if self.redact is not None:
            row = _redacted(row, self.redact)
        line = json.dumps(row, ensure_ascii=False, default=str, separators=(",", ":")) + "\n"
        fd = open_for_append(self.path, self.keep_bytes)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = "\n" + line  # a crash cut the last line: start on a line of our own
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
        return row

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self.keep_bytes is not None:
            yield from self._rows_of(self.previous)
        yield from self._rows_of(self.path)

    @staticmethod
    def _rows_of(path: Path) -> Iterator[dict[str, Any]]:
        try:
            fh = open(path, encoding="utf-8", errors="replace")
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
