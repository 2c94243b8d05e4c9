"""The CLI imports the module of the command a call runs, alone: the table that says which
module registers which command must match what each module registers."""

from __future__ import annotations

import importlib
import subprocess
import sys

import typer

from autopoiesis.cli import COMMAND_MODULES


def test_each_module_registers_exactly_the_commands_the_table_gives_it() -> None:
    for module, names in COMMAND_MODULES.items():
        app = typer.Typer()
        importlib.import_module(f"autopoiesis.cli.{module}").register(app)
        registered = [c.name for c in app.registered_commands] + [
            g.name for g in app.registered_groups
        ]
        assert sorted(registered) == sorted(names), module


def test_no_command_name_belongs_to_two_modules() -> None:
    names = [n for ns in COMMAND_MODULES.values() for n in ns]
    assert len(names) == len(set(names))


def test_a_call_imports_only_its_commands_module_and_help_lists_every_command() -> None:
    code = (
        "import sys\n"
        "from autopoiesis.cli import register\n"
        "register(['-C', '/nowhere', 'search', 'x'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('autopoiesis.cli.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "autopoiesis.cli.search_cmd" in out
    for other in ("context_cmd", "lifecycle_cmd", "forget_cmd", "daemon_cmd", "sync_cmd"):
        assert f"autopoiesis.cli.{other}" not in out
    from autopoiesis.cli import register

    register(["search", "x"])
    names = [c.name for c in register().registered_commands]  # all, after one
    assert names[:3] == ["init", "capture", "import"]  # the order of the table, not of the calls
    assert {"search", "compile", "forget", "eval"} <= set(names)
