"""What every script here shares: the memory (its repo the first argument, else
$AUTOPOIESIS_REPO, else the git top level of the current folder) and errors printed
without a traceback, with a non-zero exit status cron and CI can see."""

from __future__ import annotations

import sys
from collections.abc import Callable

from autopoiesis import AutopoiesisError, Memory


def run(job: Callable[[Memory, list[str]], str]) -> None:
    """Call JOB(memory, remaining arguments), print what it returns, exit 0; or print the
    error, exit 1."""
    args = sys.argv[1:]
    try:
        memory = Memory.locate(args[0] if args and not args[0].startswith("-") else None)
        print(job(memory, args[1:] if args and not args[0].startswith("-") else args))
    except AutopoiesisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
