"""Which `autopoiesis` argument lists are harness hook calls (autopoiesis/__main__.py sends
those to the daemon, or straight to the runner, without the CLI framework), which ones the
running daemon may answer (warm_call), which one is the MCP server the daemon starts warm
(mcp_call), and the limits of a hook's payload. Standard
library only: every `autopoiesis` call imports it."""

from __future__ import annotations

from typing import Any

from autopoiesis.integrations import HOOK_HARNESSES


def split_repo_dir(argv: list[str]) -> tuple[str | None, list[str]]:
    """(DIR, the arguments after it) of ARGV's leading global option, `-C DIR` or `-CDIR`
    as click reads it; (None, ARGV) without one. The one reading of it: the light entry,
    the daemon's log and the CLI's command lookup all go through here."""
    if argv[:1] == ["-C"] and len(argv) > 1:
        return argv[1], argv[2:]
    if argv[:1] and argv[0].startswith("-C") and len(argv[0]) > 2:
        return argv[0][2:], argv[1:]
    return None, argv


def parse_hook_argv(argv: list[str]) -> dict[str, Any] | None:
    """The run_hook arguments of `[-C DIR] hook claude-code EVENT [--budget N]` or
    `[-C DIR] hook codex EVENT [--budget N] [PAYLOAD]`; None for anything else (help
    included), which the ordinary CLI then answers."""
    if "-h" in argv or "--help" in argv:
        return None
    repo_dir, argv = split_repo_dir(argv)
    if len(argv) < 3 or argv[0] != "hook" or argv[1] not in HOOK_HARNESSES:
        return None
    harness, event, rest = argv[1], argv[2], argv[3:]
    budget = None
    if rest[:1] == ["--budget"] and len(rest) > 1:
        budget, rest = rest[1], rest[2:]
    if len(rest) > (1 if harness == "codex" else 0):
        return None
    return {
        "repo_dir": repo_dir,
        "harness": harness,
        "event": event,
        "budget": budget,
        "argument": rest[0] if rest else None,
    }


WARM_COMMANDS = ("search", "compile")


def mcp_call(argv: list[str]) -> bool:
    """Whether ARGV is `[-C DIR] mcp`, the MCP server, which the running daemon starts warm
    (fastpath/relay.py); with any other argument (help) it is the CLI's."""
    return split_repo_dir(argv)[1] == ["mcp"]


def warm_call(argv: list[str]) -> bool:
    """Whether the running daemon may answer ARGV (core/warm.py): a hook call, or
    `[-C DIR] search|compile ...` that neither asks for help nor reads a batch (which may
    come from the terminal, and gains nothing from a warm start). Nothing else: the
    daemon answers one call at a time, and a command that runs on (watch, mcp) or asks
    the terminal would hold it."""
    if parse_hook_argv(argv) is not None:
        return True
    rest = split_repo_dir(argv)[1]
    return (
        bool(rest)
        and rest[0] in WARM_COMMANDS
        and not any(a in ("-h", "--help") or a.startswith("--batch") for a in rest)
    )
