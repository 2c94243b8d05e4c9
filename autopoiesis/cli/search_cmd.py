"""`autopoiesis search`, `autopoiesis projects`, `autopoiesis index rebuild|status`.

Thin: each command calls the Memory façade or autopoiesis.index. The library is imported
inside the command bodies so `autopoiesis --help` stays fast, and the search path never
imports numpy, scikit-learn or openai unless the configured embedder needs them.
"""

from __future__ import annotations

import json
import os
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
from autopoiesis.cli._progress import quiet_option
from autopoiesis.core.text import counted, noun


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.command("projects")(projects)
    index = typer.Typer(
        help="The search index (memory.db): rebuild it, see how fresh it is.", no_args_is_help=True
    )
    index.command("rebuild")(index_rebuild)
    index.command("status")(index_status)
    app.add_typer(index, name="index")


def _weak_notice(results: list[Any]) -> str | None:
    if results and all(r.weak for r in results):
        return (
            "no result holds a word of the query; these are only the nearest by meaning, and "
            "none is close. Try other words, or `--mode bm25` for exact words only."
        )
    return None


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
        if query is not None:  # it was dropped without a word
            raise typer.BadParameter(
                "give a QUERY or --batch FILE, not both (a batch's queries are its lines)",
                param_hint="QUERY",
            )
        _search_batch(memory, batch, limit, category, merge, explain, mode, chosen)
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
        typer.echo(r.describe(explain))
    weak = _weak_notice(outcome.results)
    if weak:
        warn(weak)


def _search_batch(
    memory: Any,
    batch: Path,
    limit: int,
    category: str | None,
    merge: str | None,
    explain: bool,
    mode: str,
    project: str | None,
) -> None:
    """`search --batch FILE`: one query a line, one JSON list a line, one open index."""
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
                    project=project,
                )
                for n in outcome.notices:
                    warn(n)
                typer.echo(json.dumps([r.to_dict() for r in outcome.results], ensure_ascii=False))
        finally:
            if index is not None:
                index.close()


def projects(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """The projects the memory knows, each with its transcripts (their `project:`),
    knowledge files (knowledge/projects/NAME/) and the folder of this machine filed under
    it; `*` marks the current folder's."""
    from autopoiesis.core.project import current_folder

    memory = get_memory(ctx)
    found = memory.projects()
    here = memory.project_here(current_folder())
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
        where = ""
        if p.checkouts:
            more = len(p.checkouts) - 1
            where = f"  {_home_short(p.checkouts[0])}" + (f" (+{more} more)" if more else "")
        typer.echo(
            f"{mark} {p.name:<{width}}  {p.transcripts:>5} "
            f"{noun(p.transcripts, 'transcript'):<11}  "
            f"{p.knowledge_files:>4} knowledge {noun(p.knowledge_files, 'file')}{where}"
        )


def _home_short(folder: str) -> str:
    """FOLDER with the home folder written `~`, on one line: a folder's name may hold a
    line break or a terminal's escape, which broke the listing into a line of its own
    (or recoloured the terminal); its control characters are written as escapes."""
    home = os.path.expanduser("~")
    short = "~" + folder[len(home) :] if home != "/" and folder.startswith(home + "/") else folder
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in short)


def index_rebuild(
    ctx: typer.Context,
    quiet: bool = quiet_option(),
) -> None:
    """Rebuild memory.db from the files (safe at any time; the embedding cache is kept)."""
    from autopoiesis.cli._progress import progress_bar
    from autopoiesis.core.text import counted
    from autopoiesis.index import SearchIndex

    repo = get_repo(ctx)
    with SearchIndex(repo) as index:
        warnings = list(index.warnings)
        with progress_bar("indexing", "files", quiet=quiet) as progress:
            report = index.rebuild_full(progress=progress)
    if not quiet:
        for w in [*warnings, *report.warnings]:
            warn(w)
    typer.echo(
        f"indexed {counted(report.indexed, 'file')} ({counted(report.embedded, 'chunk')} embedded, "
        f"the rest from the cache) in {report.seconds:.2f} s"
    )


def index_status(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")
) -> None:
    """How fresh the index is: files in the repo vs rows in the index, commit indexed vs HEAD."""
    data = get_memory(ctx).index_status(integrity=True)
    if as_json:
        echo_json(data)
        return
    if not data["exists"]:
        typer.echo(
            f"no index ({data['db_path']}); {counted(data['files_in_repo'], 'file')} to index: run "
            "`autopoiesis index rebuild`."
        )
        return
    typer.echo(f"index      {data['db_path']}")
    typer.echo(
        f"files      {data['files_indexed']} indexed / {data['files_in_repo']} in the repo "
        f"({counted(data['chunks'], 'chunk')})"
    )
    typer.echo(
        f"commit     {data['head_indexed'][:10] or '-'} indexed, HEAD "
        f"{data['head_now'][:10] or '-'}"
    )
    typer.echo(
        f"embedder   {data['embedder']} ({data['dimensions']} dimensions), chunker "
        f"v{data['chunker_version']}"
    )
    behind = data["stale_count"]
    differ = "differs" if behind == 1 else "differ"
    stale = f"no (the next search catches up; {counted(behind, 'file')} {differ})"
    typer.echo(f"fresh      {'yes' if data['fresh'] else stale}")
    if data.get("integrity", "ok") != "ok":
        typer.echo(f"integrity  CORRUPT ({data['integrity']}): run `autopoiesis index rebuild`")
