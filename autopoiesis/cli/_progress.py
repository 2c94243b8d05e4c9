"""The progress bar of the long commands (import, extract, replay, index rebuild, eval,
forget): the library reports `progress(done, total, ...)` through a callback, this draws it.

A bar (tqdm: counts, rate, time left) only when stderr is a terminal and the command was
not given --quiet; otherwise the callback does nothing and tqdm is never imported (~50 ms,
which a script, a hook or a pipe should not pay). Only the long commands import this
module, never search, compile or the hooks (docs/performance.md).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import typer

from autopoiesis.core.streams import is_terminal

Progress = Callable[..., None]

QUIET_HELP = "No progress bar and no warnings: only errors and the result."


def quiet_option() -> Any:
    """The `--quiet` / `-q` option every long command takes."""
    return typer.Option(False, "--quiet", "-q", help=QUIET_HELP)


def draws(quiet: bool) -> bool:
    """Whether a bar is drawn: stderr is a terminal, and the user did not ask for quiet."""
    return not quiet and is_terminal(sys.stderr)


@contextlib.contextmanager
def progress_bar(
    label: str, unit: str, *, quiet: bool = False, bar: bool = True
) -> Iterator[Progress]:
    """A callback `progress(done, total, *rest)` for the library (extra arguments, such as
    the path just finished, are ignored) that draws LABEL's bar in UNITs; the bar is
    taken off the terminal when the block ends, so the command's own report follows.
    QUIET: no bar and none of the library's warnings within the block (`silenced`); BAR
    False: no bar (a command printing JSON), its warnings still on stderr."""
    with silenced(quiet):
        if not bar or not draws(quiet):
            yield _nothing
            return
        with _bar(label, unit) as update:
            yield update


@contextlib.contextmanager
def silenced(quiet: bool) -> Iterator[None]:
    """When QUIET, the library's warnings are not shown within the block: its log records
    below errors (the writer's "entry not added" for each of hundreds of transcripts a
    replay reads, an unreadable transcript skipped) and Python's warnings. --quiet
    promises only errors and the result."""
    if not quiet:
        yield
        return
    import logging
    import warnings

    log = logging.getLogger("autopoiesis")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(level)


@contextlib.contextmanager
def _bar(label: str, unit: str) -> Iterator[Progress]:
    """The drawn bar's callback (tqdm)."""
    from tqdm import tqdm  # only on a terminal, when a bar is drawn

    bar: Any = None

    def update(done: int, total: int, *_: Any) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(
                total=total,
                desc=label,
                unit=f" {unit}",
                file=sys.stderr,
                leave=False,
                mininterval=0.2,
                **_width(),
            )
        if total != bar.total:
            bar.total = total
        bar.update(max(0, done - bar.n))

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


def _width() -> dict[str, Any]:
    """Follow the terminal's size as it changes; a terminal that reports none (a bare
    pseudo-terminal) gets $COLUMNS/$LINES or 80x24, not a bar of no width or height."""
    import os
    import shutil

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
        if size.columns > 0 and size.lines > 0:
            return {"dynamic_ncols": True}
    except (OSError, ValueError):
        pass
    size = shutil.get_terminal_size((80, 24))
    return {"ncols": size.columns or 80, "nrows": size.lines or 24}


def _nothing(*_: Any, **__: Any) -> None:
    return None
