"""The `autopoiesis` command: a thin Typer layer over the library.

Each area registers its commands from its own module; command bodies import what they
need lazily so `autopoiesis --help` stays fast.
"""

from __future__ import annotations

import os
import sys

# Typer's rich help pulls in rich and markdown-it (~190 ms), which would make every
# `autopoiesis --help` miss its 300 ms budget; plain click help says the same thing.
# A user who prefers the boxes can set TYPER_USE_RICH=1.
os.environ.setdefault("TYPER_USE_RICH", "0")

import typer

from autopoiesis.errors import AutopoiesisError

_APP_SETTINGS: dict = {
    "name": "autopoiesis",
    "help": "Memory for AI agents, kept in a git repository.",
    "no_args_is_help": True,
    "pretty_exceptions_enable": False,
    "add_completion": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}
app = typer.Typer(**_APP_SETTINGS)


def _print_version(value: bool) -> None:
    if value:
        from autopoiesis import __version__

        typer.echo(f"autopoiesis {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    repo_dir: str | None = typer.Option(
        None,
        "-C",
        help="The memory repo (default: $AUTOPOIESIS_REPO, else the git top level of the current "
        "folder).",
        metavar="DIR",
    ),
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    ctx.obj = {"repo_dir": repo_dir}


def _register() -> None:
    from autopoiesis.cli import (
        core,
        daemon_cmd,
        eval_cmd,
        forget_cmd,
        hook_cmd,
        integrate_cmd,
        lifecycle_cmd,
        llm_cmd,
        mcp_cmd,
        search_cmd,
        sync_cmd,
        verify_cmd,
        watch_cmd,
    )

    for module in (
        core,
        search_cmd,
        watch_cmd,
        lifecycle_cmd,
        llm_cmd,
        verify_cmd,
        forget_cmd,
        sync_cmd,
        daemon_cmd,
        integrate_cmd,
        hook_cmd,
        mcp_cmd,
        eval_cmd,
    ):
        module.register(app)


_register()


def invoked_command(argv: list[str]) -> str | None:
    """The name of the top-level command ARGV runs, after the global `-C DIR`; None when
    the first word is another option (`--version`, `--help`) or there is none."""
    from autopoiesis.fastpath.rules import split_repo_dir

    rest = split_repo_dir(list(argv))[1]
    return rest[0] if rest and not rest[0].startswith("-") else None


def app_for(argv: list[str]) -> typer.Typer:
    """The CLI that answers ARGV: the whole app, trimmed to the one command (or command
    group) ARGV names. Typer turns every registered command into a click command on each
    call, reading each signature and type hints (~40 ms for ~55 commands, on every run);
    a call uses one. Help for that command, its options, errors and exit codes are the
    same; the top-level help and an unknown command (with click's suggestions) get the
    whole app."""
    name = invoked_command(argv)
    commands = [c for c in app.registered_commands if c.name == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if name is None or not (commands or groups):
        return app
    lean = typer.Typer(**_APP_SETTINGS)
    lean.registered_callback = app.registered_callback
    lean.registered_commands = commands
    lean.registered_groups = groups
    return lean


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        app_for(args)(args=args, prog_name="autopoiesis")
    except AutopoiesisError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        # the file system refused (a path that cannot exist, no permission, a full disk):
        # the user's environment, not a bug, so a message rather than a traceback
        where = f" ({exc.filename})" if exc.filename else ""
        typer.echo(
            f"error: {exc.strerror or exc}{where}. Check the path and its permissions, and the "
            "free disk space.",
            err=True,
        )
        sys.exit(1)
