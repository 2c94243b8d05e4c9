"""`autopoiesis integrate claude-code|codex`: install (or `--uninstall`) autopoiesis's hooks
in an agent harness's own settings. A thin layer over autopoiesis.integrations.install."""

from __future__ import annotations

from pathlib import Path

import typer

from autopoiesis.cli._common import echo_json, fail, get_repo


def _print(report: object, as_json: bool, what: str) -> None:
    from autopoiesis.integrations.install import IntegrationReport

    assert isinstance(report, IntegrationReport)
    if as_json:
        echo_json(
            {
                "path": str(report.path),
                "added": report.added,
                "updated": report.updated,
                "unchanged": report.unchanged,
                "removed": report.removed,
            }
        )
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
        help="The project whose .claude/settings.json gets the hooks (default: this folder).",
    ),
    user: bool = typer.Option(
        False, "--user", help="~/.claude/settings.json instead: every project of this user."
    ),
    local: bool = typer.Option(
        False, "--local", help="The project's .claude/settings.local.json (kept out of its git)."
    ),
    uninstall: bool = typer.Option(
        False, "--uninstall", help="Remove autopoiesis's hooks, and nothing else."
    ),
    budget: int | None = typer.Option(
        None,
        "--budget",
        metavar="TOKENS",
        min=256,
        max=1_000_000,
        help="Tokens of memory per prompt (default integrations.hook_token_budget).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Write Claude Code hooks that give each session and prompt its compiled memory,
    flush notes before compaction and import each finished session (SessionStart,
    UserPromptSubmit, PreCompact, Stop, SessionEnd). Your own hooks are kept; running
    it again changes nothing."""
    from autopoiesis.integrations.claude_code.install import (
        claude_settings_path,
        install_claude_code,
        uninstall_claude_code,
    )

    if user and (project is not None or local):
        raise fail("--user is the user's settings; leave out --project and --local with it.", 2)
    path = claude_settings_path(project=project, user=user, local=local)
    if uninstall:
        _print(uninstall_claude_code(path), as_json, "hooks ")
        return
    repo = get_repo(ctx)
    _print(install_claude_code(repo, path, budget=budget), as_json, "hooks ")


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
