"""`autopoiesis serve`: the local web viewer of the memory (autopoiesis.viewer)."""

from __future__ import annotations

from pathlib import Path

import typer

from autopoiesis.cli._common import get_memory


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    ctx: typer.Context,
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="The address to listen on (loopback only, unless --allow-remote).",
    ),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="The port (0: a free one)."),
    write: bool = typer.Option(
        False, "--write", help="Allow the write actions (rebuilding the search index)."
    ),
    allow_remote: bool = typer.Option(
        False,
        "--allow-remote",
        help="Allow a --host that is not loopback (the token is then all that guards it).",
    ),
    questions: list[Path] | None = typer.Option(
        None,
        "--questions",
        metavar="FILE",
        help="A question set of `autopoiesis eval` for the Compare page (repeat it).",
    ),
) -> None:
    """Browse the memory in a web browser: sessions by day, knowledge with where each entry
    came from, the history of a fact, search, the compiler's view, two extractions
    compared, health. Read-only and on this machine only by default; open the URL it
    prints (it carries the token every request needs)."""
    from autopoiesis.viewer.server import serve as run

    run(
        get_memory(ctx),
        host=host,
        port=port,
        write=write,
        allow_remote=allow_remote,
        questions=list(questions or []),
        echo=typer.echo,
    )
