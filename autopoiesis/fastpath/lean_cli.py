"""The CLI trimmed to the one command a call runs: Typer builds every registered command
on each run, and a call uses one (docs/performance.md#typer-builds-only-the-command-a-call-runs).

Standard library only, like the rest of fastpath/: `cli` hands its app in.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from autopoiesis.fastpath.rules import split_repo_dir

if TYPE_CHECKING:
    import typer


def invoked_command(argv: list[str]) -> str | None:
    """The name of the top-level command ARGV runs, after the global `-C DIR`; None when
    the first word is another option (`--version`, `--help`) or there is none."""
    rest = split_repo_dir(list(argv))[1]
    return rest[0] if rest and not rest[0].startswith("-") else None


def app_for(app: typer.Typer, argv: list[str]) -> typer.Typer:
    """The CLI that answers ARGV: APP, trimmed to the one command (or command group) ARGV
    names. Help for that command, its options, errors and exit codes are the same; the
    top-level help and an unknown command (with click's suggestions) get the whole APP."""
    name = invoked_command(argv)
    commands = [c for c in app.registered_commands if c.name == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if name is None or not (commands or groups):
        return app
    lean = copy.copy(app)  # APP's settings and global callback, its own lists of commands
    lean.registered_commands = commands
    lean.registered_groups = groups
    return lean
