"""`autopoiesis eval`: score a memory repo, a branch or a tag on a question set (a thin
layer over autopoiesis.eval.evaluate)."""

from __future__ import annotations

import typer

from autopoiesis.cli._progress import quiet_option


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)


def eval_cmd(
    ctx: typer.Context,
    questions: str = typer.Argument(
        ...,
        metavar="QUESTIONS",
        help="LoCoMo's JSON, or JSONL of {question, answer?, answer_pattern?, evidence?, "
        "kind?, project?, stale?}.",
    ),
    ref: str | None = typer.Option(
        None,
        "--ref",
        metavar="REF",
        help="Score this branch, tag or commit (read from a worktree; your checkout is untouched).",
    ),
    budgets: list[int] | None = typer.Option(
        None,
        "--budget",
        metavar="TOKENS",
        help="A context budget to measure (repeat it; default 2048, 4096, 8192).",
    ),
    sample: int | None = typer.Option(
        None,
        "--sample",
        metavar="N",
        help="LoCoMo: the conversation N of the file (default: the one the repo holds).",
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N questions."),
    archive: bool = typer.Option(
        False, "--archive", help="Let the compiled context take from archive/ too."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    quiet: bool = quiet_option(),
) -> None:
    """Score memory on a question set: evidence and answer in the compiled context at
    2K/4K/8K beside BM25-packed turns (per kind and per project too), answer recall in
    knowledge/, knowledge size, stale facts still live."""
    from autopoiesis.cli._common import echo_json, fail, get_repo, warn_of_scoring
    from autopoiesis.cli._progress import progress_bar
    from autopoiesis.eval.evaluate import DEFAULT_BUDGETS, evaluate, format_report, load_questions

    if budgets and any(b < 1 for b in budgets):
        raise fail("--budget takes a positive number of tokens, e.g. --budget 8192.", 2)
    repo = get_repo(ctx)
    qs = load_questions(questions)
    with progress_bar("scoring", "questions", quiet=quiet) as progress:
        report = evaluate(
            repo,
            qs,
            ref=ref,
            budgets=tuple(budgets or DEFAULT_BUDGETS),
            sample=sample,
            limit=limit,
            include_archive=archive,
            progress=progress,
        )
    if not quiet:
        warn_of_scoring(report)
    if as_json:
        echo_json(report.as_dict())
        return
    typer.echo(format_report(report))
