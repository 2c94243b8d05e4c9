"""`autopoiesis search`, `autopoiesis projects`, `autopoiesis index rebuild|status`,
`autopoiesis doctor`.

Thin: each command calls the Memory façade or autopoiesis.index. The library is imported
inside the command bodies so `autopoiesis --help` stays fast, and the search path never
imports numpy, scikit-learn or openai unless the configured embedder needs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from autopoiesis.cli._common import (
    batch_lines,
    echo_json,
    get_memory,
    get_repo,
    project_option,
    warn,
)
from autopoiesis.errors import AutopoiesisError


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.command("projects")(projects)
    index = typer.Typer(
        help="The search index (memory.db): rebuild it, see how fresh it is.", no_args_is_help=True
    )
    index.command("rebuild")(index_rebuild)
    index.command("status")(index_status)
    app.add_typer(index, name="index")
    app.command("doctor")(doctor)


def _result_line(r: Any, explain: bool) -> str:
    flag = " [archived]" if r.archived else ""
    project = f", {r.project}" if r.project else ""
    when = f"  {r.turn_time}" if r.turn_time else ""
    out = (
        f"{r.score:.4f}  {r.path}:{r.start_line}-{r.end_line}  ({r.category}{project}){flag}"
        f"{when}\n    "
        f"{r.snippet}"
    )
    if explain and r.explain:
        e = r.explain
        out += (
            f"\n    explain: merge={e['merge']} nth_in_file={e['nth_in_file']} "
            f"chunk_score={e['chunk_score']}"
            f" bm25={e['bm25']} (rank {e['bm25_rank']}) "
            f"vector_similarity={e['vector_similarity']} (rank {e['vector_rank']})"
        )
    return out


def search(
    ctx: typer.Context,
    query: str | None = typer.Argument(
        None, help="What to look for, in plain words (no query syntax needed)."
    ),
    limit: int = typer.Option(10, "--limit", "-k", min=1, max=1000, help="Most results to show."),
    category: str | None = typer.Option(
        None,
        "--category",
        "-c",
        help="Only this category (conversation, project, person, topic, archive, ...).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
    explain: bool = typer.Option(
        False, "--explain", help="Show how each score was made (BM25, vector, merge)."
    ),
    batch: Path | None = typer.Option(
        None,
        "--batch",
        help="Read one query a line from FILE ('-' for stdin); print one JSON list a line.",
    ),
    merge: str | None = typer.Option(
        None, "--merge", help="Override search.merge: auto, rrf or weighted."
    ),
    mode: str = typer.Option(
        "hybrid",
        "--mode",
        help="hybrid (BM25 and vectors, the default) or bm25 (lexical only, faster).",
    ),
    project: str | None = typer.Option(
        None,
        "--project",
        help="Rank this project's items (and global ones) before other projects'. Default: "
        "the project of the current folder (its git repository, unless that is the memory "
        "repo); '' for none.",
    ),
    all_projects: bool = typer.Option(
        False, "--all-projects", help="Rank every project's items alike (as --project '')."
    ),
) -> None:
    """Hybrid BM25 + vector search over knowledge, topics, transcripts and archive. Items
    of the current project (`autopoiesis projects`) and global ones rank first."""
    from autopoiesis.git.runner import status_ahead

    memory = get_memory(ctx)
    ctx.with_resource(status_ahead(memory.root))  # git reads the tree while the index is imported
    from autopoiesis.core.config import SEARCH_MERGES
    from autopoiesis.core.paths import CATEGORIES
    from autopoiesis.index.query import MODES

    if mode not in MODES:
        raise typer.BadParameter(f"use {' or '.join(MODES)}", param_hint="--mode")
    if merge is not None and merge not in SEARCH_MERGES:
        raise typer.BadParameter(
            f"use {', '.join(SEARCH_MERGES[:-1])} or {SEARCH_MERGES[-1]}", param_hint="--merge"
        )
    if category is not None and category not in CATEGORIES:
        raise typer.BadParameter(f"use one of {', '.join(CATEGORIES)}", param_hint="--category")
    chosen = None if all_projects else project_option(memory, project)
    if batch is not None:
        with batch_lines(batch) as lines:
            index = memory.open_index(many_searches=True)
            try:
                for q in lines:
                    outcome = memory.search_outcome(
                        q,
                        limit,
                        category,
                        merge=merge,
                        explain=explain,
                        index=index,
                        mode=mode,
                        project=chosen,
                    )
                    for n in outcome.notices:
                        warn(n)
                    typer.echo(
                        json.dumps([r.to_dict() for r in outcome.results], ensure_ascii=False)
                    )
            finally:
                if index is not None:
                    index.close()
        return
    if query is None:
        raise typer.BadParameter("give a QUERY, or --batch FILE", param_hint="QUERY")
    outcome = memory.search_outcome(
        query, limit, category, merge=merge, explain=explain, mode=mode, project=chosen
    )
    for n in outcome.notices:
        warn(n)
    if as_json:
        echo_json([r.to_dict() for r in outcome.results])
        return
    if not outcome.results:
        typer.echo("no results")
        return
    for r in outcome.results:
        typer.echo(_result_line(r, explain))


def projects(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """The projects the memory knows, each with its transcripts (their `project:`) and
    knowledge files (knowledge/projects/NAME/); `*` marks the current folder's."""
    import os

    memory = get_memory(ctx)
    found = memory.projects()
    here = memory.project_here(os.getcwd())
    if as_json:
        echo_json([dict(p.to_dict(), current=p.name == here) for p in found])
        return
    if not found:
        typer.echo(
            "no projects yet: a transcript names its project when its session ran in a git "
            "repository; knowledge about one lives under knowledge/projects/NAME/."
        )
        return
    width = max(len(p.name) for p in found)
    for p in found:
        mark = "*" if p.name == here else " "
        typer.echo(
            f"{mark} {p.name:<{width}}  {p.transcripts:>5} transcripts  "
            f"{p.knowledge_files:>4} knowledge files"
        )


def index_rebuild(ctx: typer.Context) -> None:
    """Rebuild memory.db from the files (safe at any time; the embedding cache is kept)."""
    from autopoiesis.index import SearchIndex

    repo = get_repo(ctx)
    with SearchIndex(repo) as index:
        for w in index.warnings:
            warn(w)
        total = max(1, sum(1 for _ in repo.iter_markdown()))
        with typer.progressbar(length=total, label="indexing", file=sys.stderr) as bar:
            done = [0]

            def progress(n: int, _total: int) -> None:
                bar.update(n - done[0])
                done[0] = n

            report = index.rebuild_full(progress=progress)
    for w in report.warnings:
        warn(w)
    typer.echo(
        f"indexed {report.indexed} files ({report.embedded} chunks embedded, the rest from the "
        f"cache) in {report.seconds:.2f} s"
    )


def _status_dict(repo: Any) -> dict[str, Any]:
    from autopoiesis.index import SearchIndex

    if not repo.index_path.exists():
        files = sum(1 for _ in repo.iter_markdown())
        return {
            "exists": False,
            "db_path": str(repo.index_path),
            "files_in_repo": files,
            "files_indexed": 0,
            "fresh": False,
        }
    with SearchIndex(repo) as index:
        st = index.status()
        damage = index.integrity()
    data = {
        "exists": st.exists,
        "db_path": st.db_path,
        "files_in_repo": st.files_in_repo,
        "files_indexed": st.files_indexed,
        "chunks": st.chunks,
        "fresh": st.fresh,
        "head_indexed": st.head_indexed,
        "head_now": st.head_now,
        "embedder": st.embedder,
        "dimensions": st.dimensions,
        "chunker_version": st.chunker_version,
        "stale_paths": list(st.stale_paths[:50]),
        "stale_count": len(st.stale_paths),
        "integrity": damage or "ok",
    }
    if damage:  # answers may still come, but from a file SQLite says is damaged
        data["fresh"] = False
    return data


def index_status(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """How fresh the index is: files in the repo vs rows in the index, commit indexed vs HEAD."""
    data = _status_dict(get_repo(ctx))
    if as_json:
        echo_json(data)
        return
    if not data["exists"]:
        typer.echo(
            f"no index ({data['db_path']}); {data['files_in_repo']} files to index: run "
            "`autopoiesis index rebuild`."
        )
        return
    typer.echo(f"index      {data['db_path']}")
    typer.echo(
        f"files      {data['files_indexed']} indexed / {data['files_in_repo']} in the repo "
        f"({data['chunks']} chunks)"
    )
    typer.echo(
        f"commit     {data['head_indexed'][:10] or '-'} indexed, HEAD "
        f"{data['head_now'][:10] or '-'}"
    )
    typer.echo(
        f"embedder   {data['embedder']} ({data['dimensions']} dimensions), chunker "
        f"v{data['chunker_version']}"
    )
    stale = f"no (the next search catches up; {data['stale_count']} files differ)"
    typer.echo(f"fresh      {'yes' if data['fresh'] else stale}")
    if data.get("integrity", "ok") != "ok":
        typer.echo(f"integrity  CORRUPT ({data['integrity']}): run `autopoiesis index rebuild`")


def doctor(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """Check the search machinery (SQLite module, sqlite-vec, embedder, index freshness),
    links in the memory folders, the transcript history (`autopoiesis verify`) and whether
    sync has stopped; exits 1 when a check finds a problem."""
    from autopoiesis.core.sqlite import probe_info

    memory = get_memory(ctx)
    repo = memory.repo
    info = probe_info()
    problems: list[str] = []
    if not info.sqlite_vec_loaded:
        problems.append(
            f"sqlite-vec not loaded ({info.error}); vector search uses a bounded in-memory scan"
        )
    cfg = memory.config.search
    embedder: dict[str, Any] = {
        "name": cfg.embedder,
        "model": cfg.embedding_model if cfg.embedder != "offline" else None,
    }
    try:
        from autopoiesis.index.embedders import embedder_from_config

        e = embedder_from_config(memory.config)
        embedder.update(fingerprint=e.fingerprint, dimensions=e.dimensions, ok=True)
    except AutopoiesisError as exc:
        embedder.update(ok=False, error=str(exc))
        problems.append(f"embedder: {exc}")
    try:
        index = _status_dict(repo)
    except Exception as exc:  # doctor reports, it does not crash
        index = {"exists": repo.index_path.exists(), "error": str(exc)}
        problems.append(f"index: {exc}")
    if not index.get("exists"):
        problems.append("no search index yet: run `autopoiesis index rebuild`")
    elif index.get("integrity", "ok") != "ok":
        problems.append(
            f"memory.db is corrupt (quick_check: {index['integrity']}): run `autopoiesis index "
            "rebuild`"
        )
    links = repo.links()
    if links:
        problems.append(
            f"symbolic links in the memory folders, never read: {', '.join(links[:5])}"
            + (f" and {len(links) - 5} more" if len(links) > 5 else "")
            + "; remove them with `git rm`"
        )
    history: dict[str, Any]
    try:
        result = memory.verify()
        history = result.to_dict()
        history["summary"] = result.summary()
        if not result.ok:
            problems.append(f"history: {result.summary()}; `autopoiesis verify` lists them")
    except AutopoiesisError as exc:
        history = {"ok": False, "error": str(exc), "summary": f"not verified ({exc})"}
        problems.append(f"history: {exc}")
    stopped = memory.sync_stopped()
    if stopped:
        problems.append(stopped)
    from autopoiesis.core.config import check_tracked_config

    unusable = check_tracked_config(repo.root)
    if unusable:
        problems.append(f"config: {unusable} (its last valid settings are used meanwhile)")
    data = {
        "sqlite_module": info.module,
        "sqlite_version": info.sqlite_version,
        "sqlite_vec_loaded": info.sqlite_vec_loaded,
        "sqlite_vec_version": info.sqlite_vec_version,
        "embedder": embedder,
        "index": index,
        "files_in_repo": index.get("files_in_repo"),
        "rows_in_index": index.get("files_indexed"),
        "history": history,
        "problems": problems,
        "ok": not problems,
    }
    if as_json:
        echo_json(data)
    else:
        _print_doctor(info, embedder, cfg.embedder, index, history, problems)
    if problems:  # a check that failed is an exit status too: scripts and CI read it
        raise typer.Exit(1)


def _print_doctor(
    info: Any,
    embedder: dict[str, Any],
    configured: str,
    index: dict[str, Any],
    history: dict[str, Any],
    problems: list[str],
) -> None:
    typer.echo(f"sqlite      {info.module} {info.sqlite_version}")
    typer.echo(
        "sqlite-vec  "
        f"{'loaded ' + str(info.sqlite_vec_version) if info.sqlite_vec_loaded else 'NOT loaded'}"
    )
    typer.echo(
        f"embedder    {embedder.get('fingerprint') or configured}"
        + ("" if embedder.get("ok") else "  (unavailable)")
    )
    freshness = "fresh" if index.get("fresh") else "not fresh"
    if not history.get("ok"):
        freshness += ", over a history that fails verify"
    typer.echo(
        f"index       {index.get('files_indexed', 0)} files indexed / "
        f"{index.get('files_in_repo')} in the repo; {freshness}"
    )
    typer.echo(f"history     {history['summary']}")
    for p in problems:
        typer.echo(f"problem     {p}")
