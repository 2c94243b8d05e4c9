"""`autopoiesis llm ...`: what the LLM stages spent, and this machine's approval of where
they send data. A thin layer over autopoiesis.llm and core/approval.py; imports stay
inside the commands so `autopoiesis --help` stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from autopoiesis.llm import UsageRow


def register(app: typer.Typer) -> None:
    """Add the `llm` command group to APP."""
    sub = typer.Typer(
        help="LLM calls of the memory stages: usage, tokens and estimated cost; approving "
        "their endpoint on this machine.",
        no_args_is_help=True,
    )
    sub.command("usage")(llm_usage)
    sub.command("approve")(llm_approve)
    app.add_typer(sub, name="llm")


def llm_usage(
    ctx: typer.Context,
    since: str | None = typer.Option(
        None, "--since", metavar="DATE", help="Only days from DATE (YYYY-MM-DD) on."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON rows instead of a table."),
) -> None:
    """Calls, cached answers, tokens and estimated cost per day and stage, from the ledger."""
    from autopoiesis.cli._common import echo_json, get_repo, parse_date_option
    from autopoiesis.llm import Ledger, summarize_usage

    start = parse_date_option(since, "--since")
    repo = get_repo(ctx)
    # Read the ledger directly: no client (and no config validation of llm:) needed to report.
    rows = summarize_usage(Ledger.of(repo).rows(), start)
    if as_json:
        echo_json([r.as_dict() for r in rows])
        return
    if not rows:
        typer.echo("No LLM calls recorded" + (f" since {start}." if start else "."))
        return
    typer.echo(format_usage_table(rows))


def llm_approve(
    ctx: typer.Context,
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve without asking."),
) -> None:
    """Let this machine use the endpoints, API key variable, session globs, redaction
    switch and message cap that memory-config.yaml sets (llm.provider, llm.base_url,
    llm.api_key_env, search.embedder, search.base_url, daemon.session_globs,
    capture.redaction.enabled, capture.max_message_bytes below 1 MiB,
    private.model_paths). The file travels with the repository, so until you approve its
    current values they are not used: the LLM stages run offline, messages are kept up to 1
    MiB. A later change of any of them, by you or by a pull, waits for another approval."""
    from autopoiesis.cli._common import get_repo
    from autopoiesis.core.approval import (
        approval_path,
        approve,
        approved_settings,
        describe,
        unapproved,
    )
    from autopoiesis.core.config import CONFIG_FILENAME, check_tracked_config, load_tracked_config
    from autopoiesis.errors import ConfigError

    repo = get_repo(ctx)
    unusable = check_tracked_config(repo.root)
    if unusable:  # approve what the file says, never the last valid settings used meanwhile
        raise ConfigError(f"{unusable} Nothing was approved.")
    config = load_tracked_config(repo.root)
    pending = unapproved(repo.root, config)
    if not pending:
        what = "are approved" if approved_settings(repo.root) else "send nothing off this machine"
        typer.echo(f"Nothing to approve: the settings of {CONFIG_FILENAME} {what}.")
        return
    typer.echo(f"{repo.root / CONFIG_FILENAME} asks this machine to use:")
    for name_value in describe(pending).split("; "):
        typer.echo(f"  {name_value}")
    if not yes and not typer.confirm(
        "Use these settings on this machine (memory content, and the value of a named key "
        "variable, go where they say)?",
        default=False,
    ):
        typer.echo("Not approved; the LLM stages keep running offline.")
        raise typer.Exit(1)
    approve(repo.root, config)
    typer.echo(f"Approved on this machine (recorded in {approval_path(repo.root)}).")


def format_usage_table(rows: list[UsageRow]) -> str:
    """Aligned text table of usage rows with a total line."""
    header = (
        "day",
        "stage",
        "calls",
        "cached",
        "offline",
        "errors",
        "tokens in",
        "tokens out",
        "est. cost",
    )
    body = [
        (
            r.day,
            r.stage,
            str(r.calls),
            str(r.cached),
            str(r.offline),
            str(r.errors),
            f"{r.tokens_in:,}",
            f"{r.tokens_out:,}",
            f"${r.cost:.6f}",
        )
        for r in rows
    ]
    total = (
        "total",
        "",
        str(sum(r.calls for r in rows)),
        str(sum(r.cached for r in rows)),
        str(sum(r.offline for r in rows)),
        str(sum(r.errors for r in rows)),
        f"{sum(r.tokens_in for r in rows):,}",
        f"{sum(r.tokens_out for r in rows):,}",
        f"${sum(r.cost for r in rows):.6f}",
    )
    table = [header, *body, total]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in body), rule, line(total)])
