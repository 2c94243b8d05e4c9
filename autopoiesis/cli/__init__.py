"""The `autopoiesis` command: a thin Typer layer over the library.

Each area registers its commands from its own module; command bodies import what they
need lazily so `autopoiesis --help` stays fast.
"""

from __future__ import annotations

import os
import sys

# Typer's rich help is off unless TYPER_USE_RICH=1; why:
# docs/performance.md#typer-builds-only-the-command-a-call-runs
os.environ.setdefault("TYPER_USE_RICH", "0")

import typer

from autopoiesis.errors import AutopoiesisError
from autopoiesis.fastpath.lean_cli import app_for

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
        context_cmd,
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
    )

    for module in (
        core,
        search_cmd,
        context_cmd,
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


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        app_for(app, args)(args=args, prog_name="autopoiesis")
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
