"""`autopoiesis sync`: pull from and push to a git remote (memory/sync.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from autopoiesis.cli._common import echo_json, get_memory, warn


def register(app: typer.Typer) -> None:
    app.command("sync")(sync)
    app.command("clone")(clone)


def clone(
    url: str = typer.Argument(..., help="The memory's git remote (any address git clones)."),
    directory: Path | None = typer.Argument(
        None, help="Where to put it (default: the remote's name, as git clone does)."
    ),
    since: str | None = typer.Option(
        None,
        "--since",
        help="Check out the transcripts from this year or month on (2026, 2026-03); older "
        "ones stay in the history, fetched when read. Default: the current year.",
    ),
    all_: bool = typer.Option(False, "--all", help="Check out every transcript."),
) -> None:
    """Clone a team's memory onto this machine, searchable within a minute: every commit,
    the files of the recent transcripts only, the search index built newest first."""
    from autopoiesis.core.clock import utc_now
    from autopoiesis.memory.clone import clone_memory

    if all_ and since:
        raise typer.BadParameter("--all and --since exclude each other; give one.")
    target = directory or Path(url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))
    window = None if all_ else since or str(utc_now().year)
    report = clone_memory(url, target, since=window)
    typer.echo(f"cloned {url} into {report.root}")
    if report.sparse:
        typer.echo(
            f"  transcripts checked out from {window} on; an older year or month: "
            "`git sparse-checkout add raw/conversations/YYYY[/MM]`"
        )
    if report.checkpoint:
        typer.echo(f"  verify starts from the cloned history ({report.checkpoint[:10]})")
    if report.index:
        typer.echo(f"  {report.index}")
    for w in report.warnings:
        warn(w)


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
