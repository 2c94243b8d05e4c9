"""`autopoiesis private`: private knowledge encrypted in git by git-crypt (init, add-key,
unlock, lock, status); memory/private.py does the work."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory
from autopoiesis.core.text import counted

private = typer.Typer(
    help="Private knowledge, encrypted in git by git-crypt (knowledge/private/** by default).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(private, name="private")


@private.command("init")
def private_init(
    ctx: typer.Context,
    paths: list[str] = typer.Option(
        [], "--path", help="A private path pattern (default: private.paths of the config)."
    ),
) -> None:
    """Set git-crypt up here and encrypt the private paths in every commit from now on."""
    added, sha = get_memory(ctx).private.init(list(paths) or None)
    for p in added:
        typer.echo(f"encrypted from now on: {p}")
    if not added:
        typer.echo("the .gitattributes rules were there already")
    if sha:
        typer.echo(f"committed {sha[:10]}")
    typer.echo(
        "next: `autopoiesis private add-key --export FILE` (or --gpg-user ID) for your other clones"
    )


@private.command("add-key")
def private_add_key(
    ctx: typer.Context,
    export: str | None = typer.Option(
        None, "--export", help="Write the symmetric key to this new file (mode 600)."
    ),
    gpg_user: str | None = typer.Option(
        None, "--gpg-user", help="Add a GPG user (key id or e-mail) who can unlock."
    ),
) -> None:
    """Let another clone unlock: export the symmetric key, or add a GPG user."""
    typer.echo(get_memory(ctx).private.add_key(export_to=export, gpg_user=gpg_user))


@private.command("unlock")
def private_unlock(
    ctx: typer.Context,
    key_file: str | None = typer.Argument(
        None, help="The exported key (without it: this user's GPG key)."
    ),
) -> None:
    """Decrypt the private notes in this clone; search then finds them."""
    files = get_memory(ctx).private.unlock(key_file)
    typer.echo(f"unlocked: {counted(len(files), 'private file')} readable and indexed")


@private.command("lock")
def private_lock(ctx: typer.Context) -> None:
    """Encrypt the private notes in this clone again (the work tree must be clean)."""
    files = get_memory(ctx).private.lock()
    typer.echo(f"locked: {counted(len(files), 'private file')} encrypted and out of the index")


@private.command("status")
def private_status(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """Whether git-crypt is set up and this clone unlocked, and each private file."""
    st = get_memory(ctx).private.status()
    if as_json:
        echo_json(st.to_dict())
        return
    state = "not set up" if not st.set_up else ("unlocked" if st.unlocked else "LOCKED")
    typer.echo(f"git-crypt   {'installed' if st.installed else 'NOT installed'}; {state}")
    typer.echo(f"private     {', '.join(st.patterns)}")
    for path, encrypted in st.files:
        typer.echo(f"  {path}  {'encrypted in git' if encrypted else 'IN CLEAR in git'}")
    for p in st.problems:
        typer.echo(f"problem     {p}")
