"""`autopoiesis hook ...`: what an agent harness runs (installed by `autopoiesis integrate`),
and the background import those hooks start. A thin layer over autopoiesis.memory.harness;
`python -m autopoiesis ... hook claude-code|codex` reaches the same runner without Typer
(autopoiesis/__main__.py)."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import echo_json, get_memory


def _repo_dir(ctx: typer.Context) -> str | None:
    c = ctx
    while c is not None:
        if isinstance(c.obj, dict) and c.obj.get("repo_dir"):
            return str(c.obj["repo_dir"])
        c = c.parent  # type: ignore[assignment]
    return None


def register(app: typer.Typer) -> None:
    hook = typer.Typer(
        help="What an agent harness runs: Claude Code and Codex hooks, their background "
        "import (the git hooks are `hooks`).",
        no_args_is_help=True,
    )
    hook.command("claude-code")(hook_claude_code)
    hook.command("codex")(hook_codex)
    hook.command("import")(hook_import)
    app.add_typer(hook, name="hook")


def hook_claude_code(
    ctx: typer.Context,
    event: str = typer.Argument(
        ..., help="SessionStart, UserPromptSubmit, PreCompact, Stop, SubagentStop or SessionEnd."
    ),
    budget: int | None = typer.Option(
        None,
        "--budget",
        metavar="TOKENS",
        help="Tokens of context to add (default integrations.hook_token_budget).",
    ),
) -> None:
    """Answer one Claude Code hook event; its JSON payload comes on stdin. Always exits 0:
    a failure means no context, and its reason goes to .autopoiesis/logs/harness.jsonl."""
    from autopoiesis.integrations.runner import run_hook

    raise typer.Exit(run_hook(_repo_dir(ctx), "claude-code", event, budget=budget))


def hook_codex(
    ctx: typer.Context,
    event: str = typer.Argument(
        ..., help="SessionStart, UserPromptSubmit, Stop, SessionEnd, or notify (older Codex)."
    ),
    payload: str | None = typer.Argument(
        None, help="The notification's JSON (Codex appends it); else read on stdin."
    ),
) -> None:
    """Answer one Codex hook event (its JSON on stdin), or notify (the JSON as the last
    argument). Always exits 0: a failure means no context, logged like Claude Code's."""
    from autopoiesis.integrations.runner import run_hook

    raise typer.Exit(run_hook(_repo_dir(ctx), "codex", event, argument=payload))


def hook_import(
    ctx: typer.Context,
    keys: list[str] = typer.Argument(None, help="Sessions as HARNESS:ID (the hooks pass them)."),
    idle: bool = typer.Option(
        False, "--idle", help="Every recorded session idle past integrations.import_idle_minutes."
    ),
    all_: bool = typer.Option(False, "--all", help="Every recorded session, idle or not."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Import harness sessions seen by the hooks (their log files), as the hooks do in
    the background; run it from cron to file sessions that never ended."""
    from autopoiesis.integrations.sessions import SessionRegistry, import_sessions

    memory = get_memory(ctx)
    repo = memory.repo
    registry = SessionRegistry(repo)
    chosen = list(keys or [])
    if all_:
        chosen += [s.key for s in registry.all()]
    elif idle:
        chosen += [s.key for s in registry.idle(memory.config.integrations.import_idle_minutes)]
    outcomes = import_sessions(repo, dict.fromkeys(chosen))
    if as_json:
        echo_json([o.__dict__ for o in outcomes])
    else:
        for o in outcomes:
            for p in o.imported:
                typer.echo(f"{o.key}: imported {p}")
            for p in o.already:
                typer.echo(f"{o.key}: already imported {p}")
            for r in o.refused:
                typer.echo(f"{o.key}: refused: {r}", err=True)
        if not outcomes:
            typer.echo("no harness session to import")
    if any(o.refused for o in outcomes):
        raise typer.Exit(1)
