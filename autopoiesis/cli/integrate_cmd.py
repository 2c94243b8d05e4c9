"""`autopoiesis integrate claude-code|codex`: install (or `--uninstall`) autopoiesis's hooks
and MCP server in an agent harness's own settings. A thin layer over
autopoiesis.integrations (claude_code/install.py, claude_code/mcp_config.py, codex/install.py)
and memory/identity.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from autopoiesis.cli._common import echo_json, fail, get_memory, get_repo


def _report_dict(report: Any) -> dict[str, Any]:
    return {
        "path": str(report.path),
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "removed": report.removed,
    }


def _print_all(reports: list[Any], as_json: bool) -> None:
    if as_json:
        echo_json({"changes": [_report_dict(r) for r in reports]})
        return
    for r in reports:
        _print(r, False, "hooks " if r.path.name.startswith("settings") else "")


def _print(report: Any, as_json: bool, what: str) -> None:
    if as_json:
        echo_json(_report_dict(report))
        return
    for name, items in (
        ("added", report.added),
        ("updated", report.updated),
        ("removed", report.removed),
    ):
        if items:
            typer.echo(f"{name} {what}{', '.join(dict.fromkeys(items))} in {report.path}")
    if not report.changed:
        typer.echo(f"{report.path}: nothing to change")


def register(app: typer.Typer) -> None:
    integrate = typer.Typer(
        help="Plug autopoiesis into an agent harness (Claude Code and Codex hooks).",
        no_args_is_help=True,
    )
    integrate.command("claude-code")(integrate_claude_code)
    integrate.command("codex")(integrate_codex)
    app.add_typer(integrate, name="integrate")


def integrate_claude_code(
    ctx: typer.Context,
    project: Path | None = typer.Option(
        None,
        "--project",
        metavar="DIR",
        help="The project whose Claude Code gets the hooks (default: this folder).",
    ),
    shared: bool = typer.Option(
        False,
        "--shared",
        help="The project's .claude/settings.json and .mcp.json, which its git shares with "
        "everyone (default: your own .claude/settings.local.json and local MCP scope).",
    ),
    user: bool = typer.Option(
        False,
        "--user",
        help="Your user settings ($CLAUDE_CONFIG_DIR or ~/.claude) and ~/.claude.json: every "
        "project of yours.",
    ),
    local: bool = typer.Option(
        False, "--local", hidden=True, help="The default: settings.local.json (kept for scripts)."
    ),
    mcp: bool = typer.Option(
        True, "--mcp/--no-mcp", help="Register the MCP server too (search, read, remember, ...)."
    ),
    uninstall: bool = typer.Option(
        False, "--uninstall", help="Remove autopoiesis's hooks and MCP server, and nothing else."
    ),
    budget: int | None = typer.Option(
        None,
        "--budget",
        metavar="TOKENS",
        min=256,
        max=1_000_000,
        help="Tokens of memory per prompt (default integrations.hook_token_budget).",
    ),
    name: str | None = typer.Option(None, "--name", help="Your name, for identity/USER.md."),
    role: str | None = typer.Option(None, "--role", help="Your role, for USER.md."),
    timezone: str | None = typer.Option(None, "--timezone", help="Your time zone, for USER.md."),
    preferences: str | None = typer.Option(
        None, "--preferences", help="How you like answers, for USER.md."
    ),
    no_input: bool = typer.Option(
        False, "--no-input", help="Never ask (on a terminal it offers to fill USER.md)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Give Claude Code this memory: hooks that give each session and prompt its compiled
    memory, flush notes before compaction and import each finished session with its
    subagents (SessionStart, UserPromptSubmit, PreCompact, Stop, SubagentStop, SessionEnd),
    and the MCP server. They name this
    machine's paths, so by default they go to your own .claude/settings.local.json (not the
    settings.json the project's git shares). Your own hooks are kept; running it again
    changes nothing. Offers to fill knowledge/identity/USER.md (or give --name, --role,
    --timezone, --preferences)."""
    from autopoiesis.integrations.claude_code.install import integrate_claude_code as integrate

    if user and (project is not None or shared or local):
        raise fail("--user is the user's settings; leave out --project and --shared with it.", 2)
    if shared and local:
        raise fail("--shared and --local name two different files; give one.", 2)
    scope = "user" if user else "shared" if shared else "local"
    if uninstall:
        reports = integrate(None, project=project, scope=scope, mcp=mcp, uninstall=True)
        _print_all(reports, as_json)
        return
    memory = get_memory(ctx)
    reports = integrate(memory.repo, project=project, scope=scope, mcp=mcp, budget=budget)
    identity = _identity(memory, name, role, timezone, preferences, ask=not (no_input or as_json))
    if as_json:
        echo_json(
            {
                "changes": [_report_dict(r) for r in reports],
                "identity": list(identity.changed) if identity else [],
                "daemon_running": _daemon_running(memory),
            }
        )
        return
    _print_all(reports, False)
    if identity and identity.changed:
        typer.echo(f"wrote {', '.join(identity.changed)} into knowledge/identity/USER.md")
    if not _daemon_running(memory):
        typer.echo(
            "The daemon is not running: it extracts knowledge, condenses journals and imports "
            "sessions in the background, and answers the hooks warm. Start it with "
            "`autopoiesis daemon start` (or at login: `autopoiesis daemon install`)."
        )


def _daemon_running(memory: Any) -> bool:
    return bool(memory.status(["daemon"]).parts.get("daemon", {}).get("running"))


def _identity(
    memory: Any,
    name: str | None,
    role: str | None,
    timezone: str | None,
    preferences: str | None,
    *,
    ask: bool,
) -> Any:
    """USER.md filled from the flags; on a terminal, with none given and USER.md still the
    template, the questions asked (Enter skips one)."""
    import sys

    from autopoiesis.core.streams import is_terminal

    values: dict[str, str | None] = {
        "name": name,
        "role": role,
        "timezone": timezone,
        "preferences": preferences,
    }
    if not any(values.values()):
        if not (ask and is_terminal(sys.stdin) and memory.identity_is_template()):
            return None
        typer.echo("knowledge/identity/USER.md tells the agent who you are (Enter skips):")
        values = {
            "name": typer.prompt("  your name", default="", show_default=False),
            "role": typer.prompt("  your role", default="", show_default=False),
            "timezone": typer.prompt("  your time zone", default=_local_zone(), show_default=True),
            "preferences": typer.prompt("  how you like answers", default="", show_default=False),
        }
    return memory.fill_identity(values)


def _local_zone() -> str:
    """This machine's time zone name (TZ, /etc/localtime), or ''."""
    import os

    zone = os.environ.get("TZ", "").lstrip(":")
    if zone:
        return zone
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return ""
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else ""


def integrate_codex(
    ctx: typer.Context,
    uninstall: bool = typer.Option(
        False, "--uninstall", help="Remove autopoiesis's hooks and notify, and nothing else."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Add Codex's hooks ($CODEX_HOME/config.toml, default ~/.codex): context at session
    start and for each prompt, the rollout imported when the session ends; and its notify,
    for Codex versions before hooks. Codex asks you to trust new hooks once (/hooks)."""
    from autopoiesis.integrations.codex.install import (
        codex_config_path,
        install_codex,
        uninstall_codex,
    )

    path = codex_config_path()
    if uninstall:
        _print(uninstall_codex(path), as_json, "")
        return
    _print(install_codex(get_repo(ctx), path), as_json, "")
