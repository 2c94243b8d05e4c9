"""`autopoiesis forget`: remove a string or a transcript from all history (memory/forget.py)."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, fail, get_memory, warn
from autopoiesis.cli._progress import quiet_option
from autopoiesis.core.streams import stdin_bytes
from autopoiesis.core.text import counted

TERMINAL = "/dev/tty"  # where the confirmation is asked: stdin may be the secret itself


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
        help="Remove this transcript (path under raw/) from every commit instead, and every "
        "knowledge entry extracted from it.",
    ),
    reason: str = typer.Option(
        ..., "--reason", "-m", help="Why: recorded in the maintenance commit (the secret never is)."
    ),
    stdin: bool = typer.Option(
        False, "--stdin", help="Read the string from stdin (keeps it out of your shell history)."
    ),
    ignore_case: bool = typer.Option(
        False, "--ignore-case", "-i", help="Match the string in any case (ASCII letters)."
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Forget the string even though it is part of the repository's structure (a "
        "frontmatter key, a folder, a config key).",
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Do not ask for confirmation (needed when there is no terminal)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    quiet: bool = quiet_option(),
) -> None:
    """Rewrite history to forget a leaked secret or a whole transcript: the one exception to
    immutability.

    It first says how many times the string is in the history and where, and refuses a
    string that is part of the repository's structure unless --force. Every commit, branch
    and tag is rewritten with git-filter-repo, reflogs are expired, old objects pruned,
    memory.db rebuilt and the caches under .autopoiesis/ cleared; a maintenance commit
    records what (kind, length, salted hash), when and why. The confirmation is asked on
    the terminal, never read from stdin."""
    from autopoiesis.memory.forget import forget as run_forget
    from autopoiesis.memory.forget import plan_forget

    if stdin:
        if secret is not None:
            raise typer.BadParameter(
                "give the string as an argument or with --stdin, not both", param_hint="--stdin"
            )
        # as bytes, read as an argument is (surrogate escapes for bytes that are not
        # UTF-8): the string is matched as the bytes the user gave (git/rewrite.py)
        data = stdin_bytes("the string to forget").read()
        secret = data.decode("utf-8", "surrogateescape").rstrip("\r\n")
    memory = get_memory(ctx)
    if transcript is not None:
        transcript = memory.repo.typed(transcript)
    plan = plan_forget(
        memory.repo, text=secret, transcript=transcript, ignore_case=ignore_case, force=force
    )
    if not as_json and not (quiet and yes):  # the confirmation needs it
        typer.echo(f"to forget: {plan.summary()}", err=True)
    if not yes and not as_json:
        _confirm("This rewrites every commit of the repository (commit ids change). Continue?")
    from autopoiesis.cli._progress import progress_bar

    with progress_bar("forgetting", "steps", quiet=quiet, bar=not as_json) as progress:
        report = run_forget(memory.repo, reason=reason, plan=plan, progress=progress)
    advice = report.remote_advice()
    teams = report.team_advice()
    if as_json:
        echo_json(
            {
                "forgot": report.what,
                "found": plan.summary(),
                "commit": report.commit,
                "refs": report.rewritten_refs,
                "cleared": report.cleared,
                "index_rebuilt": report.index_rebuilt,
                "remotes": report.remotes,
                "remote_advice": advice,
                "teams": report.teams,
                "team_advice": teams,
            }
        )
    else:
        typer.echo(f"forgot {report.what}")
        typer.echo(
            "  history rewritten; "
            f"{counted(len(report.rewritten_refs), 'branch or tag', 'branches and tags')} "
            "re-pointed; "
            "reflogs expired; old objects pruned"
        )
        typer.echo(
            f"  memory.db {'rebuilt' if report.index_rebuilt else 'not present'}; cleared: "
            f"{', '.join(report.cleared) or 'nothing'}"
        )
        typer.echo(f"  recorded in {report.commit[:10]} maintenance: forget ...")
    if advice:
        warn(advice)
    if teams:
        warn(teams)


def _confirm(question: str) -> None:
    """Ask QUESTION on the terminal (/dev/tty, not stdin: `forget --stdin < secret.txt`
    has its stdin used up); stop unless the answer is yes, and when there is no terminal,
    stop and say to pass --yes."""
    try:
        ask = open(TERMINAL, "w", encoding="utf-8")  # closed by the with below
        answer_from = open(TERMINAL, encoding="utf-8")  # (a tty cannot be opened "r+")
    except OSError:
        raise fail(
            "forget needs a confirmation and there is no terminal to ask it on: pass --yes "
            "(nothing was changed)."
        ) from None
    with ask, answer_from:
        ask.write(f"{question} [y/N]: ")
        ask.flush()
        answer = answer_from.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise fail("aborted; nothing was changed.")
