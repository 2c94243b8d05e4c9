"""Commands of the memory repository: init, capture, import, commit, tag, explore,
hooks, recall, blame, learned, show-at, demo."""

from __future__ import annotations

import re
import sys
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import typer

from autopoiesis.cli._common import echo_json, fail, get_memory, get_repo, parse_date_option, warn
from autopoiesis.cli._progress import quiet_option
from autopoiesis.core.streams import stdin_bytes
from autopoiesis.core.text import counted


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("capture")(capture)
    app.command("import")(import_)
    app.command("commit")(commit)
    app.command("tag")(tag)
    explore = typer.Typer(
        help="explore/* branches: what-if scenarios, pruned after 7 days.", no_args_is_help=True
    )
    explore.command("create")(explore_create)
    explore.command("prune")(explore_prune)
    explore.command("list")(explore_list)
    app.add_typer(explore, name="explore")
    hooks = typer.Typer(
        help="The git hooks of the memory repo (`hook` is what an agent harness runs).",
        no_args_is_help=True,
    )
    hooks.command("install")(hooks_install)
    hooks.command("run")(hooks_run)
    app.add_typer(hooks, name="git-hooks")
    # The group's name before it was told apart from `hook`: the shims that versions before
    # it installed fall back to `autopoiesis hooks run NAME`. Not listed in --help.
    app.add_typer(hooks, name="hooks", hidden=True)
    app.command("recall")(recall)
    app.command("blame")(blame)
    app.command("learned")(learned)
    app.command("show-at")(show_at)
    app.command("demo")(demo)


def init(
    ctx: typer.Context,
    directory: Path | None = typer.Argument(
        None, help="Folder of the memory repo (default: -C, else the current folder)."
    ),
    no_hooks: bool = typer.Option(False, "--no-hooks", help="Do not install the git hooks."),
) -> None:
    """Create a memory repository (or add the layout to an existing git repo)."""
    from autopoiesis.memory.initialize import init_memory_repo

    target = directory or Path((ctx.obj or {}).get("repo_dir") or ".")
    report = init_memory_repo(target, install_hooks=not no_hooks)
    for w in report.warnings:
        warn(w)
    if not report.changed:
        if not (report.hooks or report.merge_driver or report.git_settings or report.index):
            typer.echo(f"{report.root} is already a memory repository; nothing changed.")
            return
        typer.echo(f"{report.root} is already a memory repository (a clone?); set up its git:")
        for h in report.hooks:
            typer.echo(f"  hook {h}")
        for m in report.merge_driver:
            typer.echo(f"  {m}")
        for g in report.git_settings:
            typer.echo(f"  git setting {g}")
        if report.index:
            typer.echo(f"  {report.index}")
        return
    what = "Initialized a new" if report.new_git_repo else "Added the memory layout to the existing"
    typer.echo(f"{what} memory repository in {report.root}")
    updated = (
        f", {len(report.updated)} updated ({', '.join(report.updated)})" if report.updated else ""
    )
    typer.echo(f"  {counted(len(report.created), 'file')} created{updated}")
    for h in report.hooks:
        typer.echo(f"  hook {h}")
    for m in report.merge_driver:
        typer.echo(f"  {m}")
    for g in report.git_settings:
        typer.echo(f"  git setting {g}")
    if report.commit:
        typer.echo(f"  committed {report.commit[:10]} maintenance: initialize memory repository")
    if report.index:
        typer.echo(f"  {report.index}")


def capture(
    ctx: typer.Context,
    recover: bool = typer.Option(
        False, "--recover", help="Only close and commit transcripts left open by a killed harness."
    ),
) -> None:
    """Read newline-delimited JSON events on stdin and append each to its transcript."""
    import warnings

    memory = get_memory(ctx)
    if recover:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            recovered = memory.recover()
        for notice in caught:
            warn(str(notice.message))
        for r in recovered:
            done = f"commit {r.commit[:10]}" if r.commit else f"not committed: {r.not_committed}"
            typer.echo(f"recovered {r.path} ({r.status}, {done})")
        if not recovered:
            typer.echo("no abandoned transcripts")
        if any(not r.commit for r in recovered) and memory.config.git.auto_commit:
            raise typer.Exit(1)
        return
    events = stdin_bytes("the events (`harness | autopoiesis capture`)")
    report = memory.capture_stream(events, out=sys.stdout)
    for r in report.recovered:
        warn(
            f"recovered abandoned transcript {r.path}"
            + ("" if r.commit else f" (not committed: {r.not_committed})")
        )
    for w in report.warnings:
        warn(w)
    for reason in report.refused:
        typer.echo(f"refused: {reason}", err=True)
    for path in report.left_open:
        warn(
            f"{path} is still open (no session_end); it will be recovered by `autopoiesis capture "
            "--recover`."
        )
    committed = sum(1 for c in report.closed if c.commit)
    uncommitted = len(report.closed) - committed
    closed_note = ""
    if uncommitted:
        hint = (
            "git.auto_commit is false; `autopoiesis commit` commits them"
            if not memory.config.git.auto_commit
            else "`autopoiesis capture --recover` commits them"
        )
        closed_note = f", {uncommitted} closed but not committed ({hint})"
    typer.echo(
        f"captured {report.events - len(report.refused)} of {counted(report.events, 'event')}; "
        f"{counted(committed, 'session')} committed{closed_note}, "
        f"{len(report.left_open) + len(report.not_closed)} left open, "
        f"{len(report.refused)} refused",
        err=True,
    )
    # a refused event, or a session git was asked to commit and did not: the caller (a
    # harness, a script) must learn it from the status, not only from stderr
    if report.refused or (uncommitted and memory.config.git.auto_commit):
        raise typer.Exit(1)


def import_(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(
        None,
        help="Session logs or folders of them (Claude Code, Cline, OpenCode storage, Aider, ...).",
    ),
    all_: bool = typer.Option(
        False,
        "--all",
        help="Every harness's history on this machine (where each keeps its sessions, under "
        "HOME; a second run files nothing new).",
    ),
    # The choices are the importers' registry; listing them here would import every
    # importer on each CLI start, so an unknown name is answered with the list instead.
    format: str = typer.Option(
        "auto",
        "--format",
        "-f",
        help="auto (detected per file) or a format name (a wrong one lists them).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    quiet: bool = quiet_option(),
) -> None:
    """File finished sessions as transcripts, each under its own date."""
    from autopoiesis.capture.importers import format_names
    from autopoiesis.capture.importers.summary import summarize
    from autopoiesis.cli._progress import progress_bar

    if format not in format_names():
        raise fail(f"unknown format {format!r}; use one of {', '.join(format_names())}.", 2)
    if all_:
        from autopoiesis.integrations.locations import history_files

        files = [*(files or []), *history_files()]
        if not files:
            typer.echo("no harness history found on this machine (docs: harnesses.md)")
            return
    elif not files:
        raise fail("name the session logs to import, or pass --all for every harness's.", 2)
    memory = get_memory(ctx)
    with progress_bar("importing", "files", quiet=quiet, bar=not json_out) as progress:
        report = memory.import_files(files, format, progress=progress)
    if json_out:
        echo_json({**report.__dict__, "summary": summarize(report.warnings)})
    else:
        if not quiet:
            for w in summarize(report.warnings):
                warn(w)
        for p in report.imported:
            typer.echo(f"imported {p}")
        for p in report.skipped_duplicates:
            typer.echo(f"already imported: {p}")
        for r in report.refused:
            typer.echo(f"refused: {r}", err=True)
        if report.commit:
            typer.echo(f"committed {report.commit[:10]}")
    if report.refused:
        raise typer.Exit(1)


def commit(
    ctx: typer.Context,
    message: str | None = typer.Option(
        None, "-m", "--message", help="Use this message instead of a generated one."
    ),
    session: str | None = typer.Option(
        None, "--session", help="Transcript path for the Session: line."
    ),
) -> None:
    """Commit finished transcripts (as conversation: commits), then pending knowledge/,
    topics/ and archive/ changes with a generated message."""
    import warnings

    memory = get_memory(ctx)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            conversations, result = memory.commit(
                message, session=memory.repo.typed(session) if session else None
            )
        finally:  # a commit refused still says what it changed on disk (a note redacted)
            for notice in caught:
                warn(str(notice.message))
    if conversations and conversations.sha:
        typer.echo(f"[{conversations.sha[:10]}] {conversations.message.splitlines()[0]}")
        typer.echo(f"  {counted(len(conversations.files), 'transcript')}")
    if result.sha is None:
        if not (conversations and conversations.sha):
            typer.echo(
                "nothing to commit: no finished transcript waits, knowledge/, topics/ and "
                "archive/ are unchanged"
            )
            return
    else:
        typer.echo(f"[{result.sha[:10]}] {result.message.splitlines()[0]}")
        typer.echo(f"  {counted(len(result.files), 'file')}")
    # git.auto_push: sync after committing (memory/sync.py says why capture does not)
    pushed, problem = memory.push_after_commit()
    if pushed is not None:
        for line in pushed.lines():
            typer.echo(line)
        for w in pushed.warnings:
            warn(w)
    if problem:
        warn(problem)


def tag(
    ctx: typer.Context,
    kind: str = typer.Argument(..., help="daily | weekly | milestone | before | extract"),
    name: str | None = typer.Argument(
        None, help="NAME (milestone), EVENT (before) or VERSION (extract)."
    ),
    on: str | None = typer.Option(
        None,
        "--date",
        help="The day (daily) or a day of the week (weekly), YYYY-MM-DD; default today.",
    ),
    message: str | None = typer.Option(None, "-m", "--message", help="Tag message."),
) -> None:
    """Tag a snapshot: memory/daily/DATE, memory/weekly/YYYY-Www, memory/milestone/NAME, ..."""
    from autopoiesis.git.repo import MemoryGit

    repo = get_repo(ctx)
    git = MemoryGit(repo)
    day = parse_date_option(on, "--date", past=True)
    if kind in ("daily", "weekly") and name:
        raise fail(f"a {kind} tag is named by its day (--date), not {name!r}.", 2)
    if kind == "daily":
        created, msg = git.tag_daily(day, refuse_elsewhere=True)
    elif kind == "weekly":
        created, msg = git.tag_weekly(day, refuse_elsewhere=True)
    elif kind in ("milestone", "before", "extract"):
        if not name:
            raise fail(
                f"`autopoiesis tag {kind}` needs a name, e.g. `autopoiesis tag {kind} v2`.", 2
            )
        created, msg = git.tag_named(kind, name, message, refuse_elsewhere=True)
    else:
        raise fail(
            f"unknown tag kind {kind!r}; use daily, weekly, milestone NAME, before EVENT or "
            "extract VERSION.",
            2,
        )
    typer.echo(msg)


def explore_create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Branch name (explore/ is added)."),
    checkout: bool = typer.Option(False, "--checkout", help="Switch to the new branch."),
) -> None:
    """Create an explore/NAME branch from HEAD."""
    from autopoiesis.git.repo import MemoryGit

    branch = MemoryGit(get_repo(ctx)).create_explore(name, checkout=checkout)
    typer.echo(f"created {branch}" + (" and switched to it" if checkout else ""))


def explore_prune(
    ctx: typer.Context,
    days: int = typer.Option(
        7, "--days", min=1, max=36_500, help="Delete explore/* branches older than this."
    ),
) -> None:
    """Delete explore/* branches older than 7 days (never the current branch)."""
    from autopoiesis.git.repo import MemoryGit

    pruned = MemoryGit(get_repo(ctx)).prune_explore(days)
    typer.echo(
        "\n".join(f"deleted {b}" for b in pruned)
        if pruned
        else f"no explore/* branch older than {days} days"
    )


def explore_list(ctx: typer.Context) -> None:
    """List explore/* branches with their age."""
    from datetime import datetime

    from autopoiesis.git.repo import MemoryGit

    now = datetime.now(UTC)
    branches = MemoryGit(get_repo(ctx)).explore_branches()
    for name, when in branches:
        typer.echo(f"{name}  {(now - when).days} days old")
    if not branches:
        typer.echo("no explore/* branches")


def hooks_install(
    ctx: typer.Context,
    chain: bool = typer.Option(
        False, "--chain", help="Keep an existing foreign hook as <hook>.local and run it first."
    ),
) -> None:
    """Install the git hooks: pre-commit, post-commit and the history hooks (honours the
    repository's own core.hooksPath; a global one is not the memory's, see docs/security.md)."""
    from autopoiesis.git.hooks import install_hooks

    repo = get_repo(ctx)
    for line in install_hooks(repo.root, chain=chain):
        typer.echo(line)


def hooks_run(
    ctx: typer.Context,
    name: str = typer.Argument(
        ...,
        help="pre-commit | post-commit | reference-transaction | pre-push | post-merge | "
        "post-rewrite",
    ),
    args: list[str] | None = typer.Argument(None, help="The arguments git passes to the hook."),
) -> None:
    """Run a hook by hand (this is what the pre-commit framework calls)."""
    from autopoiesis.git.hooks import run

    code = run(name, get_repo(ctx).root, args=list(args or []))
    raise typer.Exit(code)


def recall(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="What to look for in the history (git log -S)."),
    limit: int = typer.Option(20, "--limit", "-n", min=1, max=10_000),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """When did the memory learn or drop TEXT? (git log -S, with dates and files)"""
    if not text.strip():
        raise fail("recall needs the text to look for; `autopoiesis search` finds by meaning.", 2)
    from autopoiesis.git.repo import MemoryGit

    commits = MemoryGit(get_repo(ctx)).recall(text, limit)
    if json_out:
        echo_json([c.__dict__ for c in commits])
        return
    if not commits:
        typer.echo(f"no commit added or removed {text!r}")
        return
    for c in commits:
        typer.echo(f"{c.date[:16].replace('T', ' ')}  {c.sha[:10]}  {c.subject}")
        for f in c.files:
            typer.echo(f"    {f}")


def blame(
    ctx: typer.Context, path: str = typer.Argument(..., help="A file of the memory repo.")
) -> None:
    """Where did each line of PATH come from? (git blame)"""
    from autopoiesis.git.repo import MemoryGit

    repo = get_repo(ctx)
    typer.echo(MemoryGit(repo).blame(repo.typed(path)), nl=False)


def _since(git: Any, value: str) -> str:
    """VALUE as `learned --since` gives it to git: a YYYY-MM-DD day checked as every date
    option is, else any date git understands ("1 week ago"); a usage error for what git
    reads as no date at all (it takes that for now, and nothing was learned since)."""
    if re.fullmatch(r"\d{1,4}-\d{1,2}-\d{1,2}", value.strip()):
        day = parse_date_option(value.strip(), "--since")
        return str(day)
    if value.strip().lower() in ("now", "today"):
        return value
    stamp = git.git_time(value)
    if stamp is None or abs(stamp - time.time()) < 5:
        raise fail(
            f"--since {value!r} is no date git understands; give YYYY-MM-DD or one such as "
            "yesterday or '1 week ago'.",
            2,
        )
    return value


def learned(
    ctx: typer.Context,
    since: str = typer.Option(
        "yesterday",
        "--since",
        help="Any date git understands: yesterday, '1 week ago', 2026-02-01 (from its 00:00 UTC).",
    ),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """What changed in knowledge/ since a date."""
    from autopoiesis.git.repo import MemoryGit

    git = MemoryGit(get_repo(ctx))
    since = _since(git, since)
    commits = git.learned(since)
    lines = git.learned_lines(since)
    if json_out:
        echo_json(
            {
                "commits": [c.__dict__ for c in commits],
                "added": [{"path": p, "line": l} for p, l in lines],
            }
        )
        return
    if not commits:
        typer.echo(f"nothing learned since {since}")
        return
    typer.echo(f"{counted(len(commits), 'commit')} changed knowledge/ since {since}:")
    for c in commits:
        typer.echo(f"  {c.date[:16].replace('T', ' ')}  {c.subject}")
    current = None
    for path, line in lines:
        if path != current:
            typer.echo(f"\n{path}")
            current = path
        typer.echo(f"  + {line}")


def show_at(
    ctx: typer.Context,
    ref: str = typer.Argument(
        ..., help="A tag (memory/daily/2026-02-01 or daily/2026-02-01), a commit, or a date."
    ),
    path: str = typer.Argument(..., help="A file of the memory repo."),
) -> None:
    """Show PATH as it was at a tag, commit or date (git show REF:PATH)."""
    from autopoiesis.git.repo import MemoryGit

    repo = get_repo(ctx)
    path = repo.typed(path)
    sha, content = MemoryGit(repo).show_at(ref, path)
    typer.echo(f"# {path} at {ref} ({sha[:10]})", err=True)
    typer.echo(content, nl=False)


def demo(
    directory: Path | None = typer.Argument(
        None, help="Where to create the demo memory repo (default: a new temp folder)."
    ),
) -> None:
    """Run the whole pipeline offline on bundled sessions and show what happened."""
    from autopoiesis.memory.demo import run_demo

    run_demo(directory, echo=typer.echo)
