"""`autopoiesis verify`: check that no transcript was modified, renamed or deleted in the
history, whatever git command did it (autopoiesis.git.verify)."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory, warn
from autopoiesis.git.admission import ADMISSION_KINDS

# Findings whose own line says what to do (remove the link, the oddly named file; fix the
# team's repository): the hint about rewritten transcripts is not theirs.
OWN_REMEDY = frozenset({"link", "name", "team-link", "team-name", "team-transcript", "worktree"})


def register(app: typer.Typer) -> None:
    app.command("verify")(verify)


def verify(
    ctx: typer.Context,
    full: bool = typer.Option(
        False,
        "--full",
        help="Walk the whole history, not only the commits since the last verified one.",
    ),
    ref: str | None = typer.Option(
        None, "--ref", help="The branch to check (default: the one checked out)."
    ),
    accept: bool = typer.Option(
        False,
        "--accept",
        help="Trust the history as it is now (after a sanctioned rewrite such as "
        "`autopoiesis forget`): record it and stop reporting today's findings.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Report every commit that modified, renamed or deleted a transcript after it was
    added, a history replaced wholesale, and a committed transcript the working tree
    holds otherwise (edited or deleted, not committed); exit 1 when there is any."""
    result = get_memory(ctx).verify(branch=ref, full=full or accept, accept=accept)
    if result.unsaved:  # the check ran; only its bookmark is missing
        warn(
            f"the history was checked, but its bookmark could not be saved ({result.unsaved}): "
            "the next verify reads these commits again."
        )
    if as_json:
        echo_json(result.to_dict())
    else:
        for f in result.findings:
            typer.echo(str(f))
        typer.echo(result.summary())
        if accept:
            typer.echo(
                f"accepted: the record now trusts {result.ref.removeprefix('refs/heads/')} at "
                f"{result.tip[:12]}"
            )
        elif any(f.kind in ADMISSION_KINDS for f in result.findings):
            typer.echo(
                "A transcript in a form no capture or import writes was added by a commit "
                "made without the hooks (or pulled from a collaborator): do not accept it. "
                "`git log --diff-filter=A -- PATH` shows who added it; `git rm PATH` and a "
                "commit take it out of the memory.",
                err=True,
            )
        if not accept and any(
            f.kind not in OWN_REMEDY and f.kind not in ADMISSION_KINDS for f in result.findings
        ):
            typer.echo(
                "Transcripts under raw/ are immutable. `git reflog` shows where the branch was "
                "before; "
                "`git reset --keep <commit>` returns it there. If this rewrite was sanctioned, "
                "`autopoiesis verify --accept` records the history as it is.",
                err=True,
            )
    if not result.ok:
        raise typer.Exit(1)
