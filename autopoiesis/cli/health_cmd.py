"""`autopoiesis status` and `autopoiesis doctor`: what the memory holds and whether
everything around it works. Thin: Memory.status() and Memory.doctor() run the parts and
checks every package registers (core.health, memory/health.py); this prints them."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory
from autopoiesis.errors import InvalidArgumentError


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("doctor")(doctor)


def status(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """What the memory holds: sessions per harness, project and day, knowledge entries per
    kind, the last extraction and the work pending, the index, the daemon, the remote (and a
    sync that stopped)."""
    report = get_memory(ctx).status()
    if as_json:
        echo_json(report.to_dict())
        return
    for line in report.lines():
        typer.echo(line)


def doctor(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
    only: list[str] | None = typer.Option(
        None,
        "--check",
        metavar="NAME",
        help="Run only this check, by its name or a name it prints (repeat it for several).",
    ),
) -> None:
    """Check everything: the search machinery (SQLite, sqlite-vec, the embedder), the index,
    the transcript history (`verify`), the git hooks, the harness hooks and MCP server
    (pointing at an existing memory, with their Python), the daemon, the remote, whether
    sync has stopped and whether memory-config.yaml can be used as written. Exits 1 when a
    check finds a problem; notes (the daemon is not running) do not count."""
    try:
        diagnosis = get_memory(ctx).doctor(only)
    except InvalidArgumentError as exc:  # a name no check has: a usage error, as any bad value
        raise typer.BadParameter(str(exc), param_hint="--check") from None
    if as_json:
        echo_json(diagnosis.to_dict())
    else:
        for line in diagnosis.lines():
            typer.echo(line)
        for f in diagnosis.findings:
            if f.level == "note" and f.fix:
                typer.echo(f"note        {f.name}: {f.fix}")
    if not diagnosis.ok:  # a failed check is an exit status too: scripts and CI read it
        raise typer.Exit(1)
