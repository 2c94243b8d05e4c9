"""What every script here shares: the memory repo (first argument, else
$AUTOPOIESIS_REPO, else the git top level of the current folder) and errors printed
without a traceback, with a non-zero exit status cron and CI can see."""

from __future__ import annotations

import sys
from collections.abc import Callable

from autopoiesis import AutopoiesisError, MemoryRepo
from autopoiesis.git.runner import locate_repo


def run(job: Callable[[MemoryRepo, list[str]], str]) -> None:
    """Call JOB(repo, remaining arguments), print what it returns, exit 0; or print the error, exit 1."""
    args = sys.argv[1:]
    try:
        repo = locate_repo(args[0] if args and not args[0].startswith("-") else None)
        print(job(repo, args[1:] if args and not args[0].startswith("-") else args))
    except AutopoiesisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
