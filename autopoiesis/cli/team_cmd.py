"""Team memory: `autopoiesis team add|remove|list` (a team's repository mounted at
shared/<team>/) and `autopoiesis share ENTRY` (the one way a note gets into it);
memory/teams.py does the work."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory

team = typer.Typer(
    help="Team memory: a team's shared knowledge, mounted at shared/<team>/.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(team, name="team")
    app.command("share")(share)


@team.command("add")
def team_add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The team's name (its folder under shared/)."),
    url: str = typer.Argument(..., help="The team repository's URL (any git remote)."),
) -> None:
    """Mount a team's repository at shared/NAME (a git submodule) and commit it."""
    sha = get_memory(ctx).teams.add(name, url)
    typer.echo(f"mounted {url} at shared/{name}" + (f"; committed {sha[:10]}" if sha else ""))


@team.command("remove")
def team_remove(
    ctx: typer.Context, name: str = typer.Argument(..., help="The team to unmount.")
) -> None:
    """Unmount a team: its checkout, its git objects and its record here are removed."""
    sha = get_memory(ctx).teams.remove(name)
    typer.echo(f"unmounted shared/{name}" + (f"; committed {sha[:10]}" if sha else ""))


@team.command("list")
def team_list(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """The teams mounted here."""
    teams = get_memory(ctx).teams.mounts()
    if as_json:
        echo_json(teams)
        return
    for name in teams:
        typer.echo(f"shared/{name}")
    if not teams:
        typer.echo("no team memory mounted (`autopoiesis team add NAME URL`)")


def share(
    ctx: typer.Context,
    entry: str = typer.Argument(
        ..., help="A note under knowledge/, or PATH#ENTRY_ID for one of its entries."
    ),
    team_name: str = typer.Option(..., "--team", help="The team to share it with."),
    branch: str | None = typer.Option(
        None,
        "--branch",
        help="Commit on this new branch of the team's repository (a pull request).",
    ),
    no_push: bool = typer.Option(False, "--no-push", help="Commit only; `sync` pushes it later."),
) -> None:
    """Share a note (or one entry) with a team: written into its repository at the same
    path and committed there, reviewable as a commit or a branch. Never automatic; never a
    transcript or a private note."""
    memory = get_memory(ctx)
    path, hash_, entry_id = entry.partition("#")  # the path as typed, the entry's id as it is
    typed = memory.repo.typed(path) + hash_ + entry_id
    done = memory.teams.share(typed, team_name, branch=branch, push=not no_push)
    if done.commit is None:
        typer.echo(f"nothing to share: {done.notice}")
        return
    where = f"branch {done.branch}" + (
        " (pushed: open a pull request)" if branch and done.pushed else ""
    )
    typer.echo(f"shared {done.path} with {done.team}: commit {done.commit[:10]} on {where}")
    if done.notice:
        typer.echo(f"  {done.notice}")
