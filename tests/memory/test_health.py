"""`autopoiesis status` and `autopoiesis doctor` (memory/health.py and the parts and checks
each package registers): what the memory holds, and every check exiting non-zero on a
problem — a git hook gone, a harness hook pointed at a memory that is not there, a
remote that does not answer."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.memory import Memory
from tests.conftest import Cli, Git


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HOME of this test's own: the settings it writes there stay out of other tests'."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)


def _claude_log(path: Path, session: str, day: str) -> Path:
    lines = [
        {
            "type": "user",
            "sessionId": session,
            "timestamp": f"{day}T10:00:00Z",
            "message": {"role": "user", "content": f"hello from {session}"},
        },
        {
            "type": "assistant",
            "sessionId": session,
            "timestamp": f"{day}T10:00:05Z",
            "message": {"role": "assistant", "content": "hi"},
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


@pytest.fixture
def filled(memory_repo: MemoryRepo, tmp_path: Path, git: Git) -> MemoryRepo:
    memory = Memory(memory_repo)
    logs = [
        _claude_log(tmp_path / "a.jsonl", "sess-a", "2026-03-01"),
        _claude_log(tmp_path / "b.jsonl", "sess-b", "2026-03-01"),
    ]
    neutral = tmp_path / "n.json"
    neutral.write_text(
        json.dumps(
            {
                "session_id": "neutral-1",
                "started": "2026-03-02T10:00:00Z",
                "messages": [{"role": "user", "content": "a neutral session"}],
            }
        )
    )
    report = memory.import_files([*logs, neutral])
    assert report.refused == [] and len(report.imported) == 3
    people = memory_repo.knowledge_dir / "people" / "ada.md"
    people.write_text(
        "# Ada\n\n"
        "- Ada leads the billing team {id: 20260301-1000-aaaaaa}\n"
        "- ~~Ada works remotely~~ {id: 20260301-1000-bbbbbb} #superseded-by:20260302-1000-cccccc\n"
        "- Ada works from Lisbon {id: 20260302-1000-cccccc}\n"
    )
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "memory: ada")
    return memory_repo


def test_status_says_what_the_memory_holds(filled: MemoryRepo, cli: Cli) -> None:
    data = json.loads(cli("status", "--json", repo=filled, check=True).stdout)
    assert data["sessions"]["transcripts"] == 3
    assert data["sessions"]["by_harness"] == {"claude-code": 2, "unknown": 1}
    assert data["sessions"]["by_day"] == {"2026-03-01": 2, "2026-03-02": 1}
    assert data["knowledge"]["by_kind"] == {"people": 2}
    assert data["knowledge"]["superseded"] == 1
    assert data["extraction"]["not_extracted"] == 3
    assert data["extraction"]["last_extraction"] is None
    assert data["index"]["exists"] is False
    assert data["remote"]["remotes"] == {}
    assert data["daemon"]["running"] is False
    assert data["repo"]["branch"] == "main"
    text = cli("status", repo=filled, check=True).stdout
    assert "sessions   3 transcripts" in text
    assert "harness  claude-code 2, unknown 1" in text
    assert "knowledge  2 live entries: people 2 (1 superseded, kept)" in text
    assert "3 transcripts not extracted yet" in text
    assert "daemon     not running" in text
    assert "1 sessions" not in text and "None" not in text


def test_status_after_extraction_counts_what_was_extracted(filled: MemoryRepo) -> None:
    memory = Memory(filled)
    memory.extract(pending=True)
    facts = memory.status(["extraction"]).parts["extraction"]
    assert facts["extracted"] == 3 and facts["not_extracted"] == 0
    assert facts["last_extraction"] is not None


def _clean(memory_repo: MemoryRepo, cli: Cli) -> None:
    assert cli("index", "rebuild", "--quiet", repo=memory_repo).returncode == 0


def test_doctor_passes_on_a_sound_memory_with_notes_only(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    _clean(memory_repo, cli)
    r = cli("doctor", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert "git hooks   6 installed" in r.stdout
    assert "daemon      not running" in r.stdout
    assert "note        daemon: `autopoiesis daemon start`" in r.stdout
    data = json.loads(cli("doctor", "--json", repo=memory_repo, cwd=tmp_path).stdout)
    assert data["ok"] is True and data["problems"] == []
    levels = {c["name"]: c["level"] for c in data["checks"]}
    assert levels["daemon"] == "note" and levels["remote"] == "note"
    assert levels["git hooks"] == "ok" and levels["history"] == "ok"


def test_doctor_finds_a_missing_git_hook(memory_repo: MemoryRepo, cli: Cli, tmp_path: Path) -> None:
    _clean(memory_repo, cli)
    (memory_repo.root / ".git" / "hooks" / "pre-commit").unlink()
    r = cli("doctor", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 1
    assert (
        "problem     git hooks: not installed: pre-commit" in r.stdout
        and "run `autopoiesis git-hooks install`" in r.stdout
    )
    cli("git-hooks", "install", repo=memory_repo, check=True)
    assert cli("doctor", repo=memory_repo, cwd=tmp_path).returncode == 0


def _hook_command(repo: str, event: str, python: str = sys.executable) -> str:
    return shlex.join([python, "-P", "-m", "autopoiesis", "-C", repo, "hook", "claude-code", event])


def _user_settings(commands: dict[str, str]) -> Path:
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hooks = {e: [{"hooks": [{"type": "command", "command": c}]}] for e, c in commands.items()}
    settings.write_text(json.dumps({"hooks": hooks}))
    return settings


EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SubagentStop", "SessionEnd")


def test_doctor_finds_a_harness_hook_pointed_at_a_memory_that_is_not_there(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    _clean(memory_repo, cli)
    gone = str(tmp_path / "old-memory")
    settings = _user_settings({e: _hook_command(gone, e) for e in EVENTS})
    r = cli("doctor", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 1
    assert f"hooks in {settings}: points at {gone}, which does not exist" in r.stdout
    assert r.stdout.count("which does not exist") == 2  # its line, and once as a problem

    _user_settings({e: _hook_command(str(memory_repo.root), e) for e in EVENTS})
    r = cli("doctor", "--json", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    found = [c for c in json.loads(r.stdout)["checks"] if c["name"] == "Claude Code"]
    assert [c["summary"] for c in found] == [f"hooks in {settings}: this memory"]


def test_doctor_run_outside_the_project_finds_what_integrate_wrote_there(
    memory_repo: MemoryRepo, cli: Cli, git: Git, tmp_path: Path
) -> None:
    # the README's order: `integrate claude-code` in a project, then `doctor` from anywhere
    _clean(memory_repo, cli)
    project = tmp_path / "code" / "billing"
    project.mkdir(parents=True)
    git(project, "init", "-q")
    cli("integrate", "claude-code", repo=memory_repo, cwd=project, check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = cli("doctor", "--check", "harnesses", repo=memory_repo, cwd=elsewhere)
    assert r.returncode == 0, r.stdout
    assert "no agent harness calls this memory" not in r.stdout
    settings = project / ".claude" / "settings.local.json"
    assert f"Claude Code hooks in {settings}: this memory" in r.stdout
    assert (
        f"Claude Code MCP server (local scope) in {Path.home() / '.claude.json'}: this memory"
        in (r.stdout)
    )

    # moved away: the project's hooks now point at nothing, and doctor says so from anywhere
    moved = tmp_path / "memory-moved"
    memory_repo.root.rename(moved)
    r = cli("doctor", "--check", "harnesses", repo=moved, cwd=elsewhere)
    assert r.returncode == 1
    assert f"hooks in {settings}: points at {memory_repo.root}, which does not exist" in r.stdout


def test_doctor_finds_a_hook_whose_python_is_gone(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    _clean(memory_repo, cli)
    python = str(tmp_path / "venv-removed" / "bin" / "python")
    _user_settings({"Stop": _hook_command(str(memory_repo.root), "Stop", python)})
    r = cli("doctor", "--check", "harnesses", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 1
    assert f"its Python {python} is gone" in r.stdout
    assert (
        "missing: SessionStart, UserPromptSubmit, PreCompact, SubagentStop, SessionEnd" in r.stdout
    )


def test_doctor_checks_codex_hooks_as_well_as_its_notify(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    _clean(memory_repo, cli)
    cli("integrate", "codex", repo=memory_repo, check=True)
    config = Path.home() / ".codex" / "config.toml"
    r = cli("doctor", "--check", "harnesses", "--json", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    found = [c["summary"] for c in json.loads(r.stdout)["checks"] if c["name"] == "Codex"]
    assert found == [f"notify in {config}: this memory", f"hooks in {config}: this memory"]

    # the user's own notify stays theirs; the hooks alone call a memory that is gone
    gone = str(tmp_path / "old-memory")
    stop = shlex.join(
        [sys.executable, "-P", "-m", "autopoiesis", "-C", gone, "hook", "codex", "Stop"]
    )
    config.write_text(
        'notify = ["notify-send", "codex"]\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\n'
        f'type = "command"\ncommand = {json.dumps(stop)}\n'
    )
    r = cli("doctor", "--check", "harnesses", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 1
    assert (
        f"hooks in {config} (missing: SessionStart, UserPromptSubmit, SessionEnd): points at "
        f"{gone}, which does not exist"
    ) in r.stdout
    assert "notify in" not in r.stdout


def test_doctor_finds_a_remote_that_does_not_answer(
    memory_repo: MemoryRepo, cli: Cli, git: Git, tmp_path: Path
) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(memory_repo, "remote", "add", "origin", str(bare))
    r = cli("doctor", "--check", "remote", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 0 and "origin answers" in r.stdout
    git(memory_repo, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    r = cli("doctor", "--check", "remote", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 1
    assert "problem     remote: origin" in r.stdout and "cannot be reached" in r.stdout


def test_a_plugin_adds_a_check_and_a_status_part_in_one_place(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    from autopoiesis import plugins
    from autopoiesis.core.health import Check, StatusPart, problem

    class Tickets:
        @plugins.hookimpl
        def register_checks(self, register):
            register(Check("tickets", lambda memory: [problem("tickets", "3 stale", "close them")]))

        @plugins.hookimpl
        def register_status_parts(self, register):
            register(
                StatusPart("tickets", lambda m: {"open": 3}, lambda f: [f"tickets    {f['open']}"])
            )

    plugin = Tickets()
    plugins.plugin_manager().register(plugin, name="tickets-test")
    try:
        r = cli("doctor", "--check", "tickets", repo=memory_repo, cwd=tmp_path)
        assert r.returncode == 1 and "problem     tickets: 3 stale; close them" in r.stdout
        assert Memory(memory_repo).status(["tickets"]).lines() == ["tickets    3"]
    finally:
        plugins.plugin_manager().unregister(name="tickets-test")


def test_a_broken_check_is_a_problem_and_the_others_still_run(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autopoiesis import plugins
    from autopoiesis.core.health import Check

    def broken(memory):
        raise OSError(2, "No such file or directory", "/gone")

    class Broken:
        @plugins.hookimpl
        def register_checks(self, register):
            register(Check("broken", broken))

    monkeypatch.chdir(tmp_path)
    plugins.plugin_manager().register(Broken(), name="broken-test")
    try:
        diagnosis = Memory(memory_repo).doctor()
    finally:
        plugins.plugin_manager().unregister(name="broken-test")
    texts = [f.summary for f in diagnosis.findings if f.name == "broken"]
    assert texts == ["the check failed: No such file or directory (/gone)"]
    assert any(f.name == "history" for f in diagnosis.findings)


def test_checks_keep_their_listed_order_whatever_was_asked_first(memory_repo: MemoryRepo) -> None:
    """daemon/health.py serves both hooks: asked for the status parts first, its check must
    still come after the memory's own checks."""
    from autopoiesis import plugins

    manager = plugins.PluginManager()
    parts = [a[0].name for a in manager.contributions("register_status_parts", installed=False)]
    checks = [a[0].name for a in manager.contributions("register_checks", installed=False)]
    assert parts[-1] == "daemon" and parts[0] == "repo"
    assert checks[:2] == ["search", "index"] and checks[-1] == "daemon"


def test_doctor_check_refuses_a_name_no_check_has(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    """`doctor --check nonsense` ran no check and reported success (nothing printed, exit
    0; `--json`: no checks, ok). A name no check answers to is a usage error that lists
    the valid ones; a check is named as doctor prints it too (`sqlite` is the search
    check's line, `git-hooks` its label with a hyphen), and one asked for by name says
    that it ran even when it has nothing to report (docs/team.md: `doctor --check sync`)."""
    for args in (["--check", "nonsense"], ["--check", "nonsense", "--json"]):
        r = cli("doctor", *args, repo=memory_repo, cwd=tmp_path)
        assert r.returncode == 2 and r.stdout == ""
        assert "no check is named 'nonsense'" in r.stderr
        assert "search (sqlite, sqlite-vec, embedder)" in r.stderr and "sync" in r.stderr
    r = cli("doctor", "--check", "sqlite", "--check", "git-hooks", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    labels = [line.split()[0] for line in r.stdout.splitlines()]
    assert labels == ["sqlite", "sqlite-vec", "embedder", "git"]
    r = cli("doctor", "--check", "sync", "--json", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 0
    checks = json.loads(r.stdout)["checks"]
    assert [(c["name"], c["level"]) for c in checks] == [("sync", "ok")]


def _conflict(repo: MemoryRepo, git: Git, operation: str) -> None:
    """Leave OPERATION ("rebase" or "merge") stopped on a conflict in a note."""
    note = repo.root / "knowledge/reference/hosts.md"
    note.write_text("# Hosts\n\n- db runs on pg-1\n", "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hosts")
    git(repo, "checkout", "-q", "-b", "other")
    note.write_text("# Hosts\n\n- db runs on pg-2\n", "utf-8")
    git(repo, "commit", "-qam", "pg-2")
    git(repo, "checkout", "-q", "main")
    note.write_text("# Hosts\n\n- db runs on pg-3\n", "utf-8")
    git(repo, "commit", "-qam", "pg-3")
    assert git(repo, operation, "other", check=False).returncode != 0


def test_a_rebase_in_progress_is_told_by_sync_doctor_and_status(
    memory_repo: MemoryRepo, cli: Cli, git: Git, tmp_path: Path
) -> None:
    """Mid-rebase, `sync` said HEAD was detached and to `git checkout main`, which does not
    end a rebase; `doctor` and `status` said nothing of it. sync now says what commit and
    extract say (GitCore.refuse_during_operation): `git rebase --continue` or `--abort`;
    doctor reports it as a problem with those commands, and status mentions it."""
    _conflict(memory_repo, git, "rebase")
    r = cli("sync", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 1
    assert "a rebase is in progress" in r.stderr and "git rebase --abort" in r.stderr
    assert "detached" not in r.stderr and "git checkout" not in r.stderr
    r = cli("doctor", "--check", "operation", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 1
    assert "problem     operation: a rebase is in progress: 1 file in conflict" in r.stdout
    assert "`git rebase --continue`" in r.stdout and "`git rebase --abort`" in r.stdout
    r = cli("status", repo=memory_repo, cwd=tmp_path)
    assert "a rebase is in progress" in r.stdout
    # the conflict "resolved" with its markers still in the note
    git(memory_repo, "add", "knowledge/reference/hosts.md")
    r = cli("doctor", "--check", "conflicts", repo=memory_repo, cwd=tmp_path)
    assert "conflict markers (<<<<<<< ... >>>>>>>) left in knowledge/reference/hosts.md" in r.stdout
    git(memory_repo, "rebase", "--abort")
    r = cli("doctor", "--check", "operation", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 0 and "in progress" not in r.stdout
    assert "in progress" not in cli("status", repo=memory_repo, cwd=tmp_path).stdout


def test_a_conflicted_merge_is_a_problem_of_doctor(
    memory_repo: MemoryRepo, cli: Cli, git: Git, tmp_path: Path
) -> None:
    """A merge stopped on a conflict: doctor names the file and what ends the merge (sync
    concludes one once its conflicts are added, so it is not said to refuse)."""
    _conflict(memory_repo, git, "merge")
    r = cli("doctor", "--json", repo=memory_repo, cwd=tmp_path)
    assert r.returncode == 1
    problems = json.loads(r.stdout)["problems"]
    found = [p for p in problems if p.startswith("operation: a merge is in progress")]
    assert found and "knowledge/reference/hosts.md" in found[0] and "git merge --abort" in found[0]
    assert "`autopoiesis sync` concludes a merge" in found[0]
