"""python -m autopoiesis: the same as the autopoiesis command.

A harness hook (`python -m autopoiesis -C DIR hook claude-code EVENT [--budget N]`, `...
hook codex notify JSON`) runs on every prompt, so it skips the CLI framework (Typer and
the registration of every command, ~65 ms) and goes straight to the hook runner. Any
other argument list takes the ordinary CLI path.
"""

import sys

from autopoiesis.app.harness.entry import parse_hook_argv

_call = parse_hook_argv(sys.argv[1:])
if _call is not None:
    from autopoiesis.app.harness.runner import run_hook

    sys.exit(run_hook(**_call))

from autopoiesis.cli import main  # noqa: E402

main()
