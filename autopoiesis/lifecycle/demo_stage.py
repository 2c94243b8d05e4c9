"""The lifecycle's part of `autopoiesis demo`: extract knowledge from the demo sessions,
show what was derived, roll the week up into MEMORY.md."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo


def demo_stage(repo: MemoryRepo) -> None:
    import typer

    from autopoiesis.lifecycle.condense import MemoryCondenser
    from autopoiesis.lifecycle.extract import KnowledgeExtractor, list_transcripts

    typer.secho("\n== autopoiesis extract --pending   (offline extractors: decisions, lessons, people, procedures, facts, journal)", bold=True)
    with KnowledgeExtractor(repo) as ex:
        report = ex.extract_pending()
        sha = ex.commit(report)
    typer.echo(report.summary())
    if sha:
        typer.echo(f"committed {sha[:10]}")
    paths = list(report.paths)
    if not paths:
        # capture already extracted each session as it ended (extraction_trigger:
        # on_session_end): show what those `memory: extract` commits wrote
        from autopoiesis.gitops import MemoryGit

        out = MemoryGit(repo).run("log", "--format=", "--name-only", "--grep=^memory: extract", "--", "knowledge").stdout
        paths = sorted({p for p in out.split() if p})
        typer.echo(f"(each session was extracted when it ended; {len(paths)} knowledge files were written)")
    for rel in paths:
        text = (repo.root / rel).read_text(encoding="utf-8")
        body = text.split("\n---\n", 1)[-1].strip()
        typer.secho(f"\n-- {rel}", fg="cyan")
        typer.echo(body)
    transcripts = list_transcripts(repo)
    if transcripts:
        typer.secho("\n== autopoiesis condense weekly   (journals -> MEMORY.md Active Context)", bold=True)
        with MemoryCondenser(repo) as c:
            typer.echo(c.weekly_rollup(transcripts[-1][0].date()).summary())
