"""What every CLI command module shares: the memory from the global -C option,
JSON output, and printing errors without a traceback."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import date

    from autopoiesis.eval.report import EvalReport

import typer

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.streams import is_terminal, stdin_bytes
from autopoiesis.errors import AutopoiesisError
from autopoiesis.memory import Memory


def get_memory(ctx: typer.Context, *, must_exist: bool = True) -> Memory:
    """The memory named by `-C DIR`, $AUTOPOIESIS_REPO or the current git top level."""
    root = None
    c: Any = ctx  # typer's Context, then its parents (typer's vendored click contexts)
    while c is not None:
        if c.obj and isinstance(c.obj, dict) and c.obj.get("repo_dir"):
            root = c.obj["repo_dir"]
            break
        c = c.parent
    return Memory.locate(root, must_exist=must_exist)


def get_repo(ctx: typer.Context, *, must_exist: bool = True) -> MemoryRepo:
    """The repo of get_memory, for a command that asks one service (git, the index)."""
    return get_memory(ctx, must_exist=must_exist).repo


def echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def warn(message: str) -> None:
    typer.echo(f"warning: {message}", err=True)


def warn_of_scoring(*reports: EvalReport) -> None:
    """The warnings of the scores of one question set (`eval`'s, `replay --compare`'s two):
    the question set's, and what in it names nothing of the memory scored. Each is said
    once; one that only a report has names the ref it was scored on."""
    said: dict[str, None] = {}
    for report in reports:
        for warning in report.warnings:
            of_all = all(warning in other.warnings for other in reports)
            said.setdefault(warning if of_all else f"{report.target}: {warning}")
    for warning in said:
        warn(warning)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print MESSAGE on stderr and return an Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def is_tty() -> bool:
    return is_terminal(sys.stderr)


def parse_date_option(value: str | None, option: str, *, past: bool = False) -> date | None:
    """The YYYY-MM-DD value of OPTION, None when not given; a usage error (exit 2) for one
    that is no date, one outside the years a memory's days lie in (1970-2200, as a
    transcript's times), and with PAST one after today (a day's tag or condensing of a
    day to come: the day is taken for today, and a monthly condensing of 9999-12-31
    archived every journal)."""
    if not value:
        return None
    from datetime import date

    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise fail(f"{option} {value!r} is not a date; write it as YYYY-MM-DD.", 2) from None
    if not 1970 <= day.year <= 2200:
        raise fail(f"{option} {value} is outside the years 1970-2200 a memory's days are in.", 2)
    if past and day > date.today():
        raise fail(f"{option} {value} is after today; give a day that has happened.", 2)
    return day


def existing_file(value: str | Path, option: str) -> Path:
    """VALUE of OPTION as a Path to a file there is, or an Exit (2) that says what it is instead."""
    path = Path(value)
    if not path.is_file():
        raise fail(f"{option} {value}: {'not a file' if path.exists() else 'no such file'}.", 2)
    return path


@contextlib.contextmanager
def batch_lines(batch: str | Path) -> Iterator[Iterator[str]]:
    """The lines of a `--batch FILE` ('-': stdin), without their newlines, for every command
    that reads one. Bytes that are not UTF-8 read as U+FFFD: a stray byte costs its line a
    character, never the batch (each line still gets its one line of output)."""
    if str(batch) == "-":
        buffer = stdin_bytes("the lines", otherwise="give --batch FILE", exit_code=2)
        wrapper = io.TextIOWrapper(buffer, encoding="utf-8", errors="replace")
        try:
            yield (line.rstrip("\n") for line in wrapper)
        finally:
            wrapper.detach()  # stdin itself stays open
        return
    path = existing_file(batch, "--batch")
    try:
        fh = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise fail(f"--batch {batch}: cannot read it ({exc.strerror or exc}).", 2) from None
    with fh:
        yield (line.rstrip("\n") for line in fh)


def project_option(memory: Any, project: str | None) -> str | None:
    """The project --project names ('' for none), or, without it, the current folder's; a
    name the memory does not know is refused with the names it does."""
    from autopoiesis.core.project import current_folder

    if project is None:
        return memory.project_here(current_folder())
    if not project.strip():
        return None
    try:
        return memory.known_project(project)
    except AutopoiesisError as exc:
        raise typer.BadParameter(
            f"{exc} --all-projects searches all alike.", param_hint="--project"
        ) from None
