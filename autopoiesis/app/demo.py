"""`autopoiesis demo`: the whole pipeline, offline, on bundled sessions.

Each stage prints what it did, with the command a user would type for it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from autopoiesis.errors import AutopoiesisError

DEMO_SESSIONS = Path(__file__).parent.parent / "_files" / "demo" / "sessions.ndjson"


def _step(title: str) -> None:
    typer.secho(f"\n== {title}", bold=True)


def run_demo(directory: Path | None = None) -> Path:
    from autopoiesis.app.capture_hooks import after_commit_hook
    from autopoiesis.capture.stream import process_stream
    from autopoiesis.gitops import MemoryGit
    from autopoiesis.app.initialize import init_memory_repo
    from autopoiesis.core.paths import MemoryRepo

    if directory is None:
        directory = Path(tempfile.mkdtemp(prefix="autopoiesis-demo-"))
    elif directory.exists() and any(directory.iterdir()):
        raise AutopoiesisError(f"{directory} is not empty; give the demo a new folder (or none for a temporary one).")

    _step(f"autopoiesis init {directory}")
    report = init_memory_repo(directory)
    repo = MemoryRepo(report.root)
    git = MemoryGit(repo)
    typer.echo(f"created {len(report.created)} files: raw/, knowledge/, topics/, memory-config.yaml; hooks installed")

    _step("autopoiesis capture < sessions.ndjson   (3 sessions streamed as NDJSON events)")
    with DEMO_SESSIONS.open("rb") as fh:
        stream = process_stream(repo, fh, on_committed=after_commit_hook(repo))
    for closed in stream.closed:
        typer.echo(f"committed {closed.path}  ({closed.turns} turns)")
    if stream.refused:
        raise AutopoiesisError("demo sessions were refused: " + "; ".join(stream.refused))

    first = repo.root / stream.closed[0].path
    _step(f"cat {stream.closed[0].path}   (secrets redacted at capture)")
    typer.echo(first.read_text(encoding="utf-8"))

    for stage in _later_stages():
        stage(repo)

    _step("git log --oneline")
    typer.echo(git.run("log", "--oneline", "--decorate").stdout.rstrip())

    _step('autopoiesis recall "source of truth"   (git log -S)')
    for c in git.recall("source of truth"):
        typer.echo(f"{c.date[:16].replace('T', ' ')}  {c.sha[:10]}  {c.subject}")
        for f in c.files:
            typer.echo(f"    {f}")

    _step("autopoiesis tag milestone demo")
    typer.echo(git.tag_named("milestone", "demo", "end of the demo")[1])
    typer.echo(f"\nThe memory repo is {repo.root} — an ordinary git repository: try `git -C {repo.root} log -p`.")
    return repo.root


def _later_stages() -> list:
    """Stages contributed by the lifecycle, index and watcher packages, in pipeline order."""
    stages = []
    for module, name in (
        ("autopoiesis.lifecycle.demo_stage", "demo_stage"),
        ("autopoiesis.index.demo_stage", "demo_stage"),
        ("autopoiesis.watch.demo_stage", "demo_stage"),
    ):
        try:
            mod = __import__(module, fromlist=[name])
        except ModuleNotFoundError as exc:
            if not exc.name or not (module == exc.name or module.startswith(exc.name + ".")):
                raise  # a real import error inside a stage, not an absent stage
            continue
        stages.append(getattr(mod, name))
    return stages
