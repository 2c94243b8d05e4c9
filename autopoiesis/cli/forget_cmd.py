"""`autopoiesis forget`: remove a string or a transcript from all history (memory/forget.py)."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory, warn


def register(app: typer.Typer) -> None:
    app.command("forget")(forget)


def forget(
    ctx: typer.Context,
    secret: str | None = typer.Argument(
        None, help="The exact string to remove from every commit (a leaked secret)."
    ),
    transcript: str | None = typer.Option(
        None,
        "--transcript",
        help="Remove this transcript (path under raw/) from every commit instead.",
    ),
    reason: str = typer.Option(
        ..., "--reason", "-m", help="Why: recorded in the maintenance commit (the secret never is)."
    ),
    stdin: bool = typer.Option(
        False, "--stdin", help="Read the string from stdin (keeps it out of your shell history)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Rewrite history to forget a leaked secret or a whole transcript: the one exception to
    immutability.

    Every commit, branch and tag is rewritten with git-filter-repo, reflogs are expired,
    old objects pruned, memory.db rebuilt and the caches under .autopoiesis/ cleared; a
    maintenance commit records what (kind, length, salted hash), when and why."""
    import sys

    if stdin:
        if secret is not None:
            raise typer.BadParameter(
                "give the string as an argument or with --stdin, not both", param_hint="--stdin"
            )
        secret = sys.stdin.read().rstrip("\r\n")
    memory = get_memory(ctx)
    if not yes and not as_json:
        typer.confirm(
            "This rewrites every commit of the repository (commit ids change). Continue?",
            abort=True,
            err=True,
        )
    report = memory.forget(text=secret, transcript=transcript, reason=reason)
    advice = report.remote_advice()
    if as_json:
        echo_json(
            {
                "forgot": report.what,
                "commit": report.commit,
                "refs": report.rewritten_refs,
                "cleared": report.cleared,
                "index_rebuilt": report.index_rebuilt,
                "remotes": report.remotes,
                "remote_advice": advice,
            }
        )
    else:
        typer.echo(f"forgot {report.what}")
        typer.echo(
            f"  history rewritten; {len(report.rewritten_refs)} branches and tags re-pointed; "
            "reflogs expired; old objects pruned"
        )
        typer.echo(
            f"  memory.db {'rebuilt' if report.index_rebuilt else 'not present'}; cleared: "
            f"{', '.join(report.cleared) or 'nothing'}"
        )
        typer.echo(f"  recorded in {report.commit[:10]} maintenance: forget ...")
    if advice:
        warn(advice)
