"""Linked notes: `autopoiesis links FILE` (its [[links]] and backlinks) and `autopoiesis mv
OLD NEW` (a move that rewrites every link to the note, in one commit)."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory
from autopoiesis.core.text import counted


def register(app: typer.Typer) -> None:
    app.command("links")(links)
    app.command("mv")(mv)


def links(
    ctx: typer.Context,
    path: str = typer.Argument(
        ..., help="The note (a path from the current folder, or in the memory repo with -C)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """The [[links]] a note makes (each with the note it finds, or BROKEN) and the notes
    that link to it."""
    memory = get_memory(ctx)
    outgoing, incoming = memory.links(memory.repo.typed(path))
    if as_json:
        echo_json(
            {
                "outgoing": [x.to_dict() for x in outgoing],
                "incoming": [x.to_dict() for x in incoming],
            }
        )
        return
    typer.echo(f"links from it ({len(outgoing)})")
    for x in outgoing:
        where = x.resolved or "BROKEN: no such note"
        shown = x.target + (f"#{x.heading}" if x.heading else "")
        typer.echo(f"  line {x.line}: [[{shown}]] -> {where}")
    typer.echo(f"links to it ({len(incoming)})")
    for x in incoming:
        typer.echo(f"  {x.source}:{x.line}" + (f" ({x.alias})" if x.alias else ""))


def mv(
    ctx: typer.Context,
    old: str = typer.Argument(..., help="The note to move."),
    new: str = typer.Argument(..., help="Its new path (`.md` added when left out)."),
    no_commit: bool = typer.Option(False, "--no-commit", help="Move and rewrite, do not commit."),
    make_public: bool = typer.Option(
        False,
        "--make-public",
        help="Let a private note move out of the private paths (committed in clear from then on).",
    ),
) -> None:
    """Move a note under knowledge/, topics/ or archive/ and rewrite every [[link]] to it,
    in one commit."""
    memory = get_memory(ctx)
    typed = memory.repo.typed  # both paths as typed: from the current folder inside the repo
    done = memory.move(typed(old), typed(new), commit=not no_commit, make_public=make_public)
    typer.echo(f"moved {done.old} -> {done.new}")
    typer.echo(
        f"  {counted(done.links, 'link')} rewritten in {counted(len(done.rewritten), 'file')}"
    )
    for path in done.rewritten:
        typer.echo(f"    {path}")
    if done.commit:
        typer.echo(f"  committed {done.commit[:10]}")
