"""`autopoiesis llm ...`: what the LLM stages spent. A thin layer over autopoiesis.llm;
imports stay inside the commands so `autopoiesis --help` stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from autopoiesis.llm import UsageRow


def register(app: typer.Typer) -> None:
    """Add the `llm` command group to APP."""
    sub = typer.Typer(
        help="LLM calls of the memory stages: usage, tokens and estimated cost.",
        no_args_is_help=True,
    )
    sub.command("usage")(llm_usage)
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
    rows = summarize_usage(Ledger(repo.state_file("llm_ledger")).rows(), start)
    if as_json:
        echo_json([r.as_dict() for r in rows])
        return
    if not rows:
        typer.echo("No LLM calls recorded" + (f" since {start}." if start else "."))
        return
    typer.echo(format_usage_table(rows))


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
