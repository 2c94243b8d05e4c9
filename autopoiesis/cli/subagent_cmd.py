"""`autopoiesis subagent`: a sub-agent's sparse checkout of the memory (its project,
procedures, identity), on its own branch, merged back for review; memory/subagents.py
does the work."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory
from autopoiesis.core.text import counted

subagent = typer.Typer(
    help="Sub-agents' checkouts: only the folders a sub-agent needs, on its own branch.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(subagent, name="subagent")


@subagent.command("checkout")
def subagent_checkout(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="The sub-agent's name (its branch: subagent/NAME)."),
    project: str | None = typer.Option(
        None, "--project", help="Its project: knowledge/projects/PROJECT/ comes along."
    ),
    paths: list[str] = typer.Option(
        [], "--paths", help="A further folder of the memory it needs (repeat the option)."
    ),
    into: str | None = typer.Option(
        None, "--into", help="Where to make it (default: .autopoiesis/subagents/AGENT)."
    ),
) -> None:
    """Make a sparse worktree of the memory for a sub-agent: identity, MEMORY.md, procedures,
    topics, its project and the folders asked for, on the branch subagent/AGENT."""
    memory = get_memory(ctx)
    c = memory.subagents.checkout(agent, project=project, paths=list(paths), into=into)
    typer.echo(f"checked out {c.branch} at {c.path}")
    typer.echo(f"  folders: {', '.join(c.folders)}")
    typer.echo(f"  run the sub-agent there (its project: {c.project or 'none'}); then")
    typer.echo(f"  `autopoiesis subagent merge {agent}` brings its work back")


@subagent.command("list")
def subagent_list(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """The sub-agents' checkouts, with the commits each has that the memory lacks."""
    found = get_memory(ctx).subagents.list()
    if as_json:
        echo_json([c.to_dict() for c in found])
        return
    for c in found:
        typer.echo(
            f"{c.agent}  {c.path}  project {c.project or '-'}  {counted(c.ahead, 'commit')} ahead"
        )
    if not found:
        typer.echo("no sub-agent checkout")


@subagent.command("merge")
def subagent_merge(
    ctx: typer.Context, agent: str = typer.Argument(..., help="The sub-agent.")
) -> None:
    """Commit what the sub-agent left in its checkout and merge its branch into the memory."""
    kind, head = get_memory(ctx).subagents.merge(agent)
    typer.echo(f"merged subagent/{agent}: {kind}" + (f" ({head[:10]})" if head else ""))


@subagent.command("remove")
def subagent_remove(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="The sub-agent."),
    force: bool = typer.Option(False, "--force", help="Drop commits not merged yet."),
) -> None:
    """Delete a sub-agent's checkout and its branch (merge it first, or --force)."""
    get_memory(ctx).subagents.remove(agent, force=force)
    typer.echo(f"removed the checkout of {agent}")
