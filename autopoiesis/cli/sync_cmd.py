"""`autopoiesis sync`: pull from and push to a git remote (memory/sync.py)."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory, warn


def register(app: typer.Typer) -> None:
    app.command("sync")(sync)


def sync(
    ctx: typer.Context,
    remote: str | None = typer.Option(
        None, "--remote", help="The git remote (default: the branch's upstream, else origin)."
    ),
    pull_only: bool = typer.Option(False, "--pull-only", help="Fetch and merge; do not push."),
    push_only: bool = typer.Option(
        False, "--push-only", help="Push; do not fetch or merge (refused if the remote moved)."
    ),
    force_after_forget: bool = typer.Option(
        False,
        "--force-after-forget",
        help="After `autopoiesis forget`: replace the remote's old history with the rewritten one "
        "(only refs that hold "
        "nothing but the old history).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Sync the memory with a git remote: commit pending work, pull (knowledge merges entry by
    entry), push.

    Conflicts in text both sides changed stop the sync with the files and the commands to
    finish; a history rewritten by `forget` is never pulled back nor force-pushed silently."""
    if pull_only and push_only:
        raise typer.BadParameter(
            "--pull-only and --push-only exclude each other; give neither to do both."
        )
    report = get_memory(ctx).sync(
        pull=not push_only, push=not pull_only, remote=remote, force_after_forget=force_after_forget
    )
    if as_json:
        echo_json(report.to_dict())
        return
    for line in report.lines():
        typer.echo(line)
    for w in report.warnings:
        warn(w)
