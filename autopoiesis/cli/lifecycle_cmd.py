"""`autopoiesis extract | condense | prune | archive | replay`: the memory lifecycle
(docs/design.md#lifecycle). A thin layer over the Memory façade (autopoiesis.memory.facade), which
wires
autopoiesis.knowledge; imports stay inside the commands so `autopoiesis --help` stays light."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import (
    echo_json,
    fail,
    get_memory,
    parse_date_option,
    warn_of_scoring,
)
from autopoiesis.cli._progress import progress_bar, quiet_option


def _names(value: str | None) -> list[str] | None:
    """The extractors --extractors names; None when it is not given (every extractor). One
    given that names none (`--extractors ,` or "") is refused: it ran every extractor, and a
    replay's branch said "with all extractors" where one was meant."""
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise fail(
            f"--extractors {value!r} names no extractor; give them as a,b "
            "(`autopoiesis extract --list` lists them), or leave it out for every one.",
            2,
        )
    return names


def register(app: typer.Typer) -> None:
    """Add the lifecycle commands to APP."""
    app.command("extract")(extract)
    app.command("condense")(condense)
    app.command("prune")(prune)
    app.command("archive")(archive)
    # `--compare A B`: typer options take one value, so allow the second as an extra arg
    extra_args = {"allow_extra_args": True, "ignore_unknown_options": False}
    app.command("replay", context_settings=extra_args)(replay)


def extract(
    ctx: typer.Context,
    transcripts: list[str] | None = typer.Argument(
        None, metavar="[TRANSCRIPT]...", help="Transcripts under raw/conversations/."
    ),
    pending: bool = typer.Option(
        False, "--pending", help="Every transcript not yet extracted, plus due retries (for cron)."
    ),
    extractors: str | None = typer.Option(
        None, "--extractors", metavar="a,b", help="Only these extractors."
    ),
    force: bool = typer.Option(
        False, "--force", help="Re-run extractors that already processed the given transcripts."
    ),
    commit: bool = typer.Option(
        True, "--commit/--no-commit", help="Commit what was written (memory: ...)."
    ),
    list_: bool = typer.Option(False, "--list", help="List the extractors and exit."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    quiet: bool = quiet_option(),
) -> None:
    """Extract knowledge from transcripts (decisions, lessons, people, procedures, facts,
    journal)."""
    if list_:
        from autopoiesis.knowledge.extractors import default_registry

        registry = default_registry()
        for problem in registry.load_errors:
            typer.echo(f"skipped: {problem}", err=True)
        if as_json:  # --json is asked of --list as of the report
            echo_json(
                [
                    {
                        "name": e.name,
                        "key": e.key,
                        "description": e.description,
                        "llm": e.has_llm_flavour,
                    }
                    for e in registry.select()
                ]
            )
            return
        for e in registry.select():
            typer.echo(f"{e.key:<14} {e.description}")
        return
    if not transcripts and not pending:
        raise fail(
            "name transcripts to extract, or pass --pending for everything not yet extracted.", 2
        )
    names = _names(extractors)
    memory = get_memory(ctx)
    transcripts = [memory.repo.typed(t) for t in transcripts or ()]
    with progress_bar("extracting", "transcripts", quiet=quiet, bar=not as_json) as progress:
        report, sha, notice, _ = memory.extract(
            transcripts,
            pending=pending,
            force=force,
            extractors=names,
            commit=commit,
            progress=progress,
        )
    if as_json:
        echo_json({**report.__dict__, "commit": sha})
        return
    typer.echo(report.summary())
    for f in report.failed:
        typer.echo(
            f"  failed: {f.path} [{f.extractor}]: {f.error}"
            + (f" (retry after {f.next_retry_at})" if f.next_retry_at else ""),
            err=True,
        )
    if not quiet:  # the result is the summary and the commit; the files are detail
        for p in report.paths:
            typer.echo(f"  wrote {p}")
    if sha:
        typer.echo(f"committed {sha[:10]}")
    if notice and not quiet:
        typer.echo(f"note: {notice}", err=True)
    if report.failed:
        raise typer.Exit(1)


def condense(
    ctx: typer.Context,
    period: str = typer.Argument(..., metavar="daily|weekly|monthly"),
    day: str | None = typer.Option(
        None,
        "--date",
        metavar="YYYY-MM-DD",
        help="The day (or a day of the week/month); default today.",
    ),
    commit: bool = typer.Option(True, "--commit/--no-commit"),
) -> None:
    """Condense episodic memory: the daily journal, the weekly MEMORY.md rollup, the monthly
    distillation."""
    from autopoiesis.memory.facade import PERIODS

    if period not in PERIODS:
        raise fail(f"unknown period {period!r}; use daily, weekly or monthly.", 2)
    when = parse_date_option(day, "--date", past=True)
    typer.echo(get_memory(ctx).condense(period, when, commit=commit).summary())


def prune(
    ctx: typer.Context,
    commit: bool = typer.Option(True, "--commit/--no-commit"),
) -> None:
    """Enforce the MEMORY.md cap, archive old journals, evict stale knowledge (recency x
    frequency)."""
    typer.echo(get_memory(ctx).prune(commit=commit).summary())


def archive(
    ctx: typer.Context,
    commit: bool = typer.Option(True, "--commit/--no-commit"),
) -> None:
    """Move journals older than lifecycle.journal_retention_days to archive/journal/."""
    typer.echo(get_memory(ctx).archive_journals(commit=commit).summary())


def replay(
    ctx: typer.Context,
    branch: str | None = typer.Option(
        None, "--branch", metavar="extract/NAME", help="Replay onto this new branch."
    ),
    extractors: str | None = typer.Option(None, "--extractors", metavar="a,b"),
    model: str | None = typer.Option(
        None, "--model", metavar="M", help="The model for the LLM extractors."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing branch of that name."),
    base: str = typer.Option("main", "--base", help="The branch to start from and compare with."),
    compare: list[str] | None = typer.Option(
        None,
        "--compare",
        metavar="A B",
        help="Compare two existing branches (give it twice, or as A B).",
    ),
    questions: str | None = typer.Option(
        None,
        "--questions",
        metavar="FILE",
        help="With --compare: score both on this question set (`autopoiesis eval`).",
    ),
    sample: int | None = typer.Option(
        None, "--sample", metavar="N", help="With --questions: LoCoMo's conversation N."
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Rebuild knowledge from every transcript on an extract/* branch, in its own worktree, and
    compare."""
    from autopoiesis.knowledge import replay as rp

    if sample is not None and not questions:  # it was ignored, the score taken for N's
        raise fail("--sample goes with --questions FILE (LoCoMo's conversation N).", 2)
    memory = get_memory(ctx)
    extra = list(ctx.args) if ctx.args else []
    if compare:
        refs = [*compare, *extra]
        if len(refs) != 2:
            raise fail("--compare takes two branches: autopoiesis replay --compare A B", 2)
        from autopoiesis.eval.evaluate import evaluate, format_side_by_side, load_questions

        # read first: a question set that cannot be read stops the command before the
        # whole comparison runs, not after it
        qs = load_questions(questions) if questions else None
        typer.echo(rp.format_comparison(memory.compare(refs[0], refs[1])))
        a, b = (evaluate(memory.repo, qs, ref=r, sample=sample) for r in refs)
        if not quiet:  # as `eval` says them
            warn_of_scoring(a, b)
        typer.echo("\n" + format_side_by_side(a, b))
        if qs is None:
            typer.echo("(add --questions FILE to score both on a question set)")
        return
    if questions:
        raise fail("--questions goes with --compare A B.", 2)
    if not branch:
        raise fail("give --branch extract/NAME to replay onto, or --compare A B.", 2)
    names = _names(extractors)

    with progress_bar("replaying", "transcripts", quiet=quiet) as progress:
        result = memory.replay(
            branch,
            extractors=names,
            model=model,
            force=force,
            base=base,
            progress=progress,
            echo=(lambda m: None) if quiet else (lambda m: typer.echo(m)),
        )
    typer.echo(rp.format_result(result))
