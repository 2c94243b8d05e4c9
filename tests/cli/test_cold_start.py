"""The cold path of one CLI call: `git status` started ahead of the imports
answers like a status asked later and is never read stale or twice; the CLI builds only
the command it runs, with the same help, errors and exit codes as the whole app; splitting
a frontmatter loads no YAML library."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from autopoiesis.cli import app
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.fastpath.lean_cli import app_for, invoked_command
from autopoiesis.git import runner as git


def _entries(status: git.Status) -> list[tuple[str, str, str]]:
    return sorted((e.path, e.index, e.worktree) for e in status.entries)


def test_a_status_started_ahead_is_the_status_asked_then(
    memory_repo: MemoryRepo, commit_all
) -> None:
    root = memory_repo.root
    (root / "knowledge" / "reference" / "a.md").write_text("# A\n\nfirst\n", encoding="utf-8")
    commit_all(root, "a")
    (root / "knowledge" / "reference" / "a.md").write_text("# A\n\nchanged\n", encoding="utf-8")
    (root / "knowledge" / "reference" / "new.md").write_text("# New\n", encoding="utf-8")
    plain = git.status(root)
    before = time.time_ns()
    with git.status_ahead(root):
        ahead = git.status(root)
        assert not git._prefetched, "a prefetched status is read once"
        (root / "knowledge" / "reference" / "later.md").write_text("# Later\n", encoding="utf-8")
        again = git.status(root)  # asks git anew: sees the file written after the first answer
    assert ahead.ok and ahead.head == plain.head and _entries(ahead) == _entries(plain)
    assert before <= ahead.started_ns <= again.started_ns
    assert "knowledge/reference/later.md" in {e.path for e in again.entries}
    assert "knowledge/reference/later.md" not in {e.path for e in ahead.entries}


def test_an_old_or_unread_status_started_ahead_is_dropped(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = memory_repo.root
    with git.status_ahead(root):
        (root / "knowledge" / "reference" / "late.md").write_text("# Late\n", encoding="utf-8")
        monkeypatch.setattr(git, "PREFETCH_MAX_AGE", 0.0)
        seen = git.status(root)  # too old to trust: git is asked again
    assert "knowledge/reference/late.md" in {e.path for e in seen.entries}
    with git.status_ahead(root):
        (proc,) = [entry[2] for entry in git._prefetched.values()]
    assert not git._prefetched and proc.returncode is not None, (
        "an unread status is stopped and reaped at the block's end"
    )
    with git.status_ahead(
        root / "no-such-folder"
    ):  # git cannot start there: status() says not ok, no traceback
        assert not git.status(root / "no-such-folder").ok


def test_status_ahead_keys_by_the_real_path(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(memory_repo.root)
    with git.status_ahead(link):
        git.status(memory_repo.root)
        assert not git._prefetched


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["search", "x"], "search"),
        (["-C", "/r", "compile", "m"], "compile"),
        (["-C/r", "index", "status"], "index"),
        (["--version"], None),
        (["-h"], None),
        ([], None),
        (["-C", "/r"], None),
    ],
)
def test_the_invoked_command_is_read_after_the_global_options(
    argv: list[str], name: str | None
) -> None:
    assert invoked_command(argv) == name


def _help(cli: typer.Typer, args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, prog_name="autopoiesis")
    return result.exit_code, result.output


@pytest.mark.slow
def test_a_lean_app_answers_as_the_whole_app() -> None:
    whole = typer.main.get_command(app)
    names = sorted(whole.commands)  # type: ignore[attr-defined]
    assert {"search", "compile", "index", "daemon", "hook"} <= set(names)
    for name in names:
        lean = app_for(app, ["-C", "/r", name, "--help"])
        assert lean is not app and [c.name for c in lean.registered_commands] + [
            g.name for g in lean.registered_groups
        ] == [name]
        assert _help(lean, [name, "--help"]) == _help(app, [name, "--help"]), name
    sub = typer.main.get_command(app).commands["index"]  # type: ignore[attr-defined]
    for child in sub.commands:  # a group's subcommands too
        assert _help(app_for(app, ["index", child, "-h"]), ["index", child, "-h"]) == _help(
            app, ["index", child, "-h"]
        )
    # mistakes: the same message and exit code
    for args in (
        ["search", "--mode", "fuzzy", "q"],
        ["search", "--limit", "0", "q"],
        ["compile"],
        ["index", "nope"],
    ):
        assert _help(app_for(app, args), args) == _help(app, args), args
    # the whole app answers what names no command
    assert (
        app_for(app, ["serch", "x"]) is app
        and app_for(app, ["--help"]) is app
        and app_for(app, []) is app
    )


def _one_call(
    memory_repo: MemoryRepo, args: list[str], *, before: str = "", after: str = ""
) -> subprocess.CompletedProcess[str]:
    """One CLI call in a process of its own (no daemon), on a memory holding a note about
    the kiwi protocol, the code BEFORE run ahead of the CLI's import and AFTER once it
    returned; fails the test on a non-zero exit."""
    (memory_repo.root / "knowledge" / "reference" / "kiwi.md").write_text(
        "# Kiwi\n\nThe kiwi protocol.\n", encoding="utf-8"
    )
    code = (
        "import sys\n" + before + "from autopoiesis.cli import main\n"
        "try:\n    main(sys.argv[1:])\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n" + after
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "-C", str(memory_repo.root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "AUTOPOIESIS_NO_DAEMON": "1"},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out


def test_one_cli_call_builds_one_command_and_searches(memory_repo: MemoryRepo) -> None:
    out = _one_call(
        memory_repo,
        ["search", "kiwi protocol"],
        before="import typer.main\n"
        "built = []\n"
        "real = typer.main.get_command_from_info\n"
        "typer.main.get_command_from_info = lambda *a, **kw: built.append(a) or real(*a, **kw)\n",
        after="print('built', len(built), 'yaml' in sys.modules, file=sys.stderr)\n",
    )
    assert "knowledge/reference/kiwi.md" in out.stdout
    assert "built 1 " in out.stderr, out.stderr  # one command converted, not ~55


def test_splitting_a_frontmatter_loads_no_yaml_library() -> None:
    code = (
        "import sys\nfrom autopoiesis.core import frontmatter\n"
        "print(frontmatter.split('---\\na: 1\\n---\\nbody\\n'), 'yaml' in sys.modules, 'frontmatter' in sys.modules)\n"
        "print(frontmatter.load('---\\nt: 1:30\\n---\\nb\\n'), frontmatter.scalar('1:30'), 'yaml' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first == "('a: 1\\n', 'body\\n') False False"
    assert second == "({'t': '1:30'}, 'b\\n') \"1:30\" True"


def _loaded_by_a_cold_compile(memory_repo: MemoryRepo) -> set[str]:
    """The modules a cold `compile` of a message that the kiwi note answers has loaded."""
    out = _one_call(
        memory_repo,
        ["compile", "kiwi protocol?"],
        after="print(sorted(sys.modules), file=sys.stderr)\n",
    )
    assert "kiwi protocol" in out.stdout.lower()
    return set(ast.literal_eval(out.stderr.strip().splitlines()[-1]))


def test_a_cold_compile_loads_no_module_only_a_report_or_an_import_needs(
    memory_repo: MemoryRepo,
) -> None:
    """The prompt hook's path (a cold `compile`) is within its budget only without the
    modules that the gate's report (statistics), a gate decision's id (secrets) and an
    export's markup (html) need: each is a few ms of every call."""
    assert not _loaded_by_a_cold_compile(memory_repo) & {"statistics", "secrets", "html"}


def test_a_cold_compile_whose_hits_are_knowledge_loads_no_transcript_format(
    memory_repo: MemoryRepo,
) -> None:
    """The transcript format (its patterns and classes, ~8 ms) is loaded when a transcript
    is packed or a session read, not by every compile."""
    formats = [
        m
        for m in _loaded_by_a_cold_compile(memory_repo)
        if m.startswith("autopoiesis.formats.")
        and ("transcript" in m or "specstory" in m)
        and m != "autopoiesis.formats.transcript_names"
    ]
    assert formats == []


def test_a_cold_compile_loads_only_the_embedder_it_uses(memory_repo: MemoryRepo) -> None:
    """The built-in embedders are imported one at a time, when made: the offline one does
    not bring the OpenAI-compatible one's (and with it the LLM protocol's) imports."""
    loaded = {
        m
        for m in _loaded_by_a_cold_compile(memory_repo)
        if m.startswith(("autopoiesis.index.embedders.", "autopoiesis.llm"))
    }
    assert loaded <= {"autopoiesis.index.embedders.common", "autopoiesis.index.embedders.offline"}
