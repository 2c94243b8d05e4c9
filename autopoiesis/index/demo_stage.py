"""The demo's search stage: build the index of the demo repo, then search it."""

from __future__ import annotations

import typer

from autopoiesis.core.paths import MemoryRepo


def demo_stage(repo: MemoryRepo) -> None:
    from autopoiesis.app.demo import _step
    from autopoiesis.index.searchindex import SearchIndex

    _step("autopoiesis index rebuild   (memory.db: FTS5 + sqlite-vec, chunks by turn and by section)")
    with SearchIndex(repo) as index:
        report = index.rebuild_full()
        st = index.status()
        typer.echo(
            f"indexed {report.indexed} files as {st.chunks} chunks in {report.seconds:.2f} s "
            f"({st.sqlite.module} {st.sqlite.sqlite_version}, sqlite-vec {st.sqlite.sqlite_vec_version or 'not loaded'}, "
            f"embedder {st.embedder})"
        )
        for query in ("why did the deploy fail?", "where is the source of truth kept"):
            _step(f'autopoiesis search "{query}" --limit 3')
            results = index.search(query, limit=3)
            if not results:
                typer.echo("no results")
            for r in results:
                when = f"  {r.turn_time}" if r.turn_time else ""
                typer.echo(f"{r.score:.4f}  {r.path}:{r.start_line}-{r.end_line}  ({r.category}){when}\n    {r.snippet}")
