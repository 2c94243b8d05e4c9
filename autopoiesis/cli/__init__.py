"""The `autopoiesis` command: a thin Typer layer over the library.

Each area registers its commands from its own module; command bodies import what they
need lazily so `autopoiesis --help` stays fast.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

# Typer's rich help is off unless TYPER_USE_RICH=1; why:
# docs/performance.md#typer-builds-only-the-command-a-call-runs
os.environ.setdefault("TYPER_USE_RICH", "0")

import typer

from autopoiesis.errors import AutopoiesisError, ProgramNotFoundError
from autopoiesis.fastpath.lean_cli import app_for, invoked_command

_APP_SETTINGS: dict = {
    "name": "autopoiesis",
    "help": "Memory for AI agents, kept in a git repository.",
    "no_args_is_help": True,
    "pretty_exceptions_enable": False,
    "add_completion": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}
_app = typer.Typer(**_APP_SETTINGS)


def _print_version(value: bool) -> None:
    if value:
        from autopoiesis import __version__

        typer.echo(f"autopoiesis {__version__}")
        raise typer.Exit()


@_app.callback()
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


# The module that registers each top-level command or group: a call imports the module of
# its command alone, help and an unknown command import them all
# (docs/performance.md#typer-builds-only-the-command-a-call-runs).
# tests/cli/test_registration.py holds this table to what the modules register.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "core": (
        "init", "capture", "import", "commit", "tag", "recall", "blame", "learned", "show-at",
        "demo", "explore", "git-hooks", "hooks",
    ),
    "search_cmd": ("search", "projects", "index"),
    "health_cmd": ("status", "doctor"),
    "context_cmd": ("compile", "watch", "flush", "topics", "gate"),
    "lifecycle_cmd": ("extract", "condense", "prune", "archive", "replay"),
    "llm_cmd": ("llm",),
    "verify_cmd": ("verify",),
    "forget_cmd": ("forget",),
    "sync_cmd": ("sync", "clone"),
    "daemon_cmd": ("run-due", "watch-sessions", "daemon"),
    "integrate_cmd": ("integrate",),
    "hook_cmd": ("hook",),
    "mcp_cmd": ("mcp",),
    "serve_cmd": ("serve",),
    "eval_cmd": ("eval",),
    "notes_cmd": ("links", "mv"),
    "private_cmd": ("private",),
    "team_cmd": ("team", "share"),
    "subagent_cmd": ("subagent",),
}  # fmt: skip


def register(argv: list[str] | None = None) -> typer.Typer:
    """The app with the commands ARGV can run registered: the module of the command ARGV
    names, or every module (no command, help, a name no module has, or ARGV None)."""
    import importlib

    name = invoked_command(argv) if argv is not None else None
    wanted = [m for m, names in COMMAND_MODULES.items() if name in names] or list(COMMAND_MODULES)
    have = {c.name for c in _app.registered_commands} | {g.name for g in _app.registered_groups}
    missing = [m for m in wanted if not have.intersection(COMMAND_MODULES[m])]
    if missing and len(wanted) > 1 and have:  # all, after one: again, so help lists them in order
        _app.registered_commands.clear()
        _app.registered_groups.clear()
        missing = wanted
    for module in missing:
        importlib.import_module(f"autopoiesis.cli.{module}").register(_app)
    return _app


def __getattr__(name: str) -> typer.Typer:
    """`autopoiesis.cli.app`: the app with every command registered (the docs, tests, a
    caller that runs any command)."""
    if name == "app":
        return register()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A warning as the CLI says everything else: `warning: MESSAGE` on stderr, not
    Python's `FILE:LINE: UserWarning: ...` with the line of code that raised it."""
    typer.echo(f"warning: {message}", err=True)


def _show_what_the_output_can_hold() -> None:
    """An output whose encoding cannot hold every character (PYTHONIOENCODING=latin-1, a
    legacy 8-bit locale) shows the ones it cannot as `?`: memory content and messages are
    Unicode (an arrow, a dash, a name), and one character the terminal lacks must not stop
    a command half-way through its output with a UnicodeEncodeError. A UTF-8 output holds
    them all and is left as it is."""
    import codecs
    import io

    for stream in (sys.stdout, sys.stderr):
        if not isinstance(stream, io.TextIOWrapper):
            continue  # closed (None), or replaced by a caller: written as it is
        try:
            if codecs.lookup(stream.encoding).name != "utf-8" and stream.errors == "strict":
                stream.reconfigure(errors="replace")
        except (AttributeError, LookupError, TypeError, ValueError):
            continue  # an encoding Python does not know, a stream closed meanwhile


def _while_handling(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether EXC was raised while a KIND was being handled."""
    seen = exc.__context__
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__context__
    return False


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    warnings.showwarning = _show_warning
    _show_what_the_output_can_hold()
    try:
        try:
            app_for(register(args), args)(args=args, prog_name="autopoiesis")
        except SystemExit as exc:
            # click ends a command Ctrl-C stopped with a silent exit 130, and one whose
            # reader went away (`| head`) with a silent exit 1: raised again as what they
            # were, for the handlers below
            if exc.code == 130 and _while_handling(exc, KeyboardInterrupt):
                raise KeyboardInterrupt from None
            if exc.code == 1 and _while_handling(exc, BrokenPipeError):
                raise BrokenPipeError from None
            raise
    except AutopoiesisError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        missing = ProgramNotFoundError.behind(exc)
        if missing is not None:
            typer.echo(f"error: {missing}", err=True)
            sys.exit(1)
        # the file system refused (a path that cannot exist, no permission, a full disk):
        # the user's environment, not a bug, so a message rather than a traceback
        where = f" ({exc.filename})" if exc.filename else ""
        typer.echo(
            f"error: {exc.strerror or exc}{where}. Check the path and its permissions, and the "
            "free disk space.",
            err=True,
        )
        sys.exit(1)
