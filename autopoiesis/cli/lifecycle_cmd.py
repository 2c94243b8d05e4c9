"""`autopoiesis extract | condense | prune | archive | replay`: the memory lifecycle
(design §8). A thin layer over autopoiesis.knowledge; imports stay inside the commands so
`autopoiesis --help` stays light."""

from __future__ import annotations

import typer


def _names(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def register(app: typer.Typer) -> None:
    """Add the lifecycle commands to APP."""

    @app.command("extract")
    def extract(
        ctx: typer.Context,
        transcripts: list[str] | None = typer.Argument(None, metavar="[TRANSCRIPT]...", help="Transcripts under raw/conversations/."),
        pending: bool = typer.Option(False, "--pending", help="Every transcript not yet extracted, plus due retries (for cron)."),
        extractors: str | None = typer.Option(None, "--extractors", metavar="a,b", help="Only these extractors."),
        force: bool = typer.Option(False, "--force", help="Re-run extractors that already processed the given transcripts."),
        commit: bool = typer.Option(True, "--commit/--no-commit", help="Commit what was written (memory: ...)."),
        list_: bool = typer.Option(False, "--list", help="List the extractors and exit."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """Extract knowledge from transcripts (decisions, lessons, people, procedures, facts, journal)."""
        from autopoiesis.cli._common import echo_json, fail, get_repo
        from autopoiesis.knowledge.extract import ExtractionReport, KnowledgeExtractor
        from autopoiesis.knowledge.extractors import default_registry
        from autopoiesis.memory.commit import llm_summarizer

        if list_:
            registry = default_registry()
            for e in registry.select():
                typer.echo(f"{e.key:<14} {e.description}")
            for problem in registry.load_errors:
                typer.echo(f"skipped: {problem}", err=True)
            return
        if not transcripts and not pending:
            raise fail("name transcripts to extract, or pass --pending for everything not yet extracted.", 2)
        repo = get_repo(ctx)
        with KnowledgeExtractor(repo) as ex:
            if pending:
                report = ex.extract_pending(_names(extractors))
            else:
                reports = [ex.extract_from_session(t, _names(extractors), force=force) for t in transcripts or []]
                report = _merge_reports(reports, ExtractionReport)
            sha = ex.commit(report, summarize=llm_summarizer(repo)) if commit else None
            notice = getattr(ex._llm, "notice", None)
        if as_json:
            echo_json({**report.__dict__, "commit": sha})
            return
        typer.echo(report.summary())
        for f in report.failed:
            typer.echo(f"  failed: {f.path} [{f.extractor}]: {f.error}" + (f" (retry after {f.next_retry_at})" if f.next_retry_at else ""), err=True)
        for p in report.paths:
            typer.echo(f"  wrote {p}")
        if sha:
            typer.echo(f"committed {sha[:10]}")
        if notice:
            typer.echo(f"note: {notice}", err=True)
        if report.failed:
            raise typer.Exit(1)

    @app.command("condense")
    def condense(
        ctx: typer.Context,
        period: str = typer.Argument(..., metavar="daily|weekly|monthly"),
        day: str | None = typer.Option(None, "--date", metavar="YYYY-MM-DD", help="The day (or a day of the week/month); default today."),
        commit: bool = typer.Option(True, "--commit/--no-commit"),
    ) -> None:
        """Condense episodic memory: the daily journal, the weekly MEMORY.md rollup, the monthly distillation."""
        from autopoiesis.cli._common import fail, get_repo, parse_date_option
        from autopoiesis.knowledge.condense import MemoryCondenser
        from autopoiesis.memory.usage import inclusion_counts

        if period not in ("daily", "weekly", "monthly"):
            raise fail(f"unknown period {period!r}; use daily, weekly or monthly.", 2)
        when = parse_date_option(day, "--date")
        repo = get_repo(ctx)
        with MemoryCondenser(repo, usage=inclusion_counts(repo)) as c:
            result = {"daily": c.daily_summary, "weekly": c.weekly_rollup, "monthly": c.monthly_distillation}[period](when, commit=commit)
        typer.echo(result.summary())

    @app.command("prune")
    def prune(
        ctx: typer.Context,
        commit: bool = typer.Option(True, "--commit/--no-commit"),
    ) -> None:
        """Enforce the MEMORY.md cap, archive old journals, evict stale knowledge (recency x frequency)."""
        from autopoiesis.cli._common import get_repo
        from autopoiesis.knowledge.prune import MemoryPruner
        from autopoiesis.memory.usage import inclusion_counts

        repo = get_repo(ctx)
        with MemoryPruner(repo, usage=inclusion_counts(repo)) as p:
            result = p.prune_all(commit=commit)
        typer.echo(result.summary())

    @app.command("archive")
    def archive(
        ctx: typer.Context,
        commit: bool = typer.Option(True, "--commit/--no-commit"),
    ) -> None:
        """Move journals older than lifecycle.journal_retention_days to archive/journal/."""
        from autopoiesis.cli._common import get_repo
        from autopoiesis.knowledge.prune import MemoryPruner

        repo = get_repo(ctx)
        with MemoryPruner(repo) as p:
            result = p.prune_journals(commit=commit)
        typer.echo(result.summary())

    @app.command("replay")
    def replay(
        ctx: typer.Context,
        branch: str | None = typer.Option(None, "--branch", metavar="extract/NAME", help="Replay onto this new branch."),
        extractors: str | None = typer.Option(None, "--extractors", metavar="a,b"),
        model: str | None = typer.Option(None, "--model", metavar="M", help="The model for the LLM extractors."),
        force: bool = typer.Option(False, "--force", help="Replace an existing branch of that name."),
        base: str = typer.Option("main", "--base", help="The branch to start from and compare with."),
        compare: list[str] | None = typer.Option(None, "--compare", metavar="A B", help="Compare two existing branches (give it twice, or as A B)."),
        questions: str | None = typer.Option(None, "--questions", metavar="FILE",
                                             help="With --compare: score both on this question set (`autopoiesis eval`)."),
        sample: int | None = typer.Option(None, "--sample", metavar="N", help="With --questions: LoCoMo's conversation N."),
    ) -> None:
        """Rebuild knowledge from every transcript on an extract/* branch, in its own worktree, and compare."""
        from autopoiesis.cli._common import fail, get_repo
        from autopoiesis.knowledge import replay as rp

        repo = get_repo(ctx)
        extra = list(ctx.args) if ctx.args else []
        if compare:
            refs = [*compare, *extra]
            if len(refs) != 2:
                raise fail("--compare takes two branches: autopoiesis replay --compare A B", 2)
            typer.echo(rp.format_comparison(rp.compare_refs(repo, refs[0], refs[1])))
            from autopoiesis.eval.evaluate import evaluate, format_side_by_side, load_questions

            qs = load_questions(questions) if questions else None
            a, b = (evaluate(repo, qs, ref=r, sample=sample) for r in refs)
            typer.echo("\n" + format_side_by_side(a, b))
            if qs is None:
                typer.echo("(add --questions FILE to score both on a question set)")
            return
        if questions:
            raise fail("--questions goes with --compare A B.", 2)
        if not branch:
            raise fail("give --branch extract/NAME to replay onto, or --compare A B.", 2)

        def progress(done: int, total: int, path: str) -> None:
            typer.echo(f"\r  replayed {done}/{total} transcripts", nl=False, err=True)
            if done == total:
                typer.echo("", err=True)

        result = rp.replay_branch(repo, branch, extractors=_names(extractors), model=model, force=force, base=base,
                                  progress=progress, echo=lambda m: typer.echo(m))
        typer.echo(rp.format_result(result))

    # `--compare A B`: typer options take one value, so allow the second as an extra arg
    for cmd in app.registered_commands:
        if cmd.name == "replay":
            cmd.context_settings = {"allow_extra_args": True, "ignore_unknown_options": False}


def _merge_reports(reports: list, cls: type):  # list[ExtractionReport] -> ExtractionReport
    if not reports:
        return cls()
    if len(reports) == 1:
        return reports[0]
    fields = {}
    for name in ("processed", "failed", "fell_back", "transcripts", "learned"):
        fields[name] = tuple(x for r in reports for x in getattr(r, name))
    for name in ("already_done", "waiting", "added", "superseded", "duplicates"):
        fields[name] = sum(getattr(r, name) for r in reports)
    fields["paths"] = tuple(sorted({p for r in reports for p in r.paths}))
    return cls(**fields)
