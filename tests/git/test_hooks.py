"""The git hooks, exercised through plain `git commit` in real repositories."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from autopoiesis.capture.stream import process_stream
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import HookInstallError
from autopoiesis.git.hooks import install_hooks
from tests.conftest import Cli


@pytest.fixture
def with_transcript(memory_repo: MemoryRepo) -> tuple[MemoryRepo, Path]:
    lines = [
        json.dumps(e).encode()
        for e in (
            {"event": "session_start", "session_id": "h1", "started": "2026-02-16T18:45:00Z"},
            {"event": "message", "role": "user", "content": "hello hooks"},
            {"event": "session_end"},
        )
    ]
    report = process_stream(memory_repo, lines)
    return memory_repo, memory_repo.root / report.closed[0].path


def test_modifying_a_committed_transcript_is_rejected(with_transcript, commit_all) -> None:
    repo, path = with_transcript
    path.write_text(path.read_text() + "tampered\n")
    proc = commit_all(repo.root, check=False)
    assert proc.returncode != 0
    rel = repo.rel(path)
    assert f"{rel}: transcripts under raw/ are immutable; it may not be modified" in proc.stderr


def test_deleting_and_renaming_are_rejected(with_transcript, git) -> None:
    repo, path = with_transcript
    rel = repo.rel(path)
    git(repo.root, "mv", rel, rel.replace(".md", "-renamed.md"))
    proc = git(repo.root, "commit", "-m", "rename", check=False)
    assert proc.returncode != 0
    assert "may not be renamed" in proc.stderr
    assert rel in proc.stderr
    git(repo.root, "reset", "-q", "--hard")
    git(repo.root, "rm", "-q", rel)
    proc = git(repo.root, "commit", "-m", "delete", check=False)
    assert proc.returncode != 0
    assert "may not be deleted" in proc.stderr


def test_new_transcript_needs_valid_frontmatter(memory_repo: MemoryRepo, commit_all) -> None:
    bad = memory_repo.root / "raw/conversations/2026/01/01/0000-x-bad.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("# no frontmatter\n")
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode != 0
    assert "0000-x-bad.md" in proc.stderr
    assert "missing frontmatter" in proc.stderr
    bad.write_text("---\nsession_id: x\nstarted: 2026-01-01T00:00:00Z\nstatus: open\n---\n\n# t\n")
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode != 0
    assert "still open" in proc.stderr


def test_memory_cap_warns_then_rejects(memory_repo: MemoryRepo, commit_all) -> None:
    mem = memory_repo.memory_file
    head = mem.read_text()
    mem.write_text(
        head + "".join(f"- 2026-01-01: fact {i}\n" for i in range(185 - head.count("\n")))
    )
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode == 0
    assert "warning" in proc.stderr
    assert "185 lines" in proc.stderr
    # at the cap prune does nothing (the writer makes room for each new entry): no advice
    # to prune until it is over
    assert "move to archive/ as new ones arrive" in proc.stderr and "prun" not in proc.stderr
    mem.write_text(
        head + "".join(f"- 2026-01-01: fact {i}\n" for i in range(210 - head.count("\n")))
    )
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode == 0
    assert "210 lines, over its cap of 200; `autopoiesis prune`" in proc.stderr
    mem.write_text(head + "".join(f"- 2026-01-01: fact {i}\n" for i in range(230)))
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode != 0
    assert "over the limit of 220" in proc.stderr


def test_topic_with_invalid_regex_is_rejected_and_missing_triggers_warned(
    memory_repo: MemoryRepo, commit_all
) -> None:
    t = memory_repo.root / "topics/broken.md"
    t.write_text(
        '---\ntype: topic\ntriggers:\n  - type: pattern\n    match: "(unclosed"\n    scope: input\n---\n\n# Broken\n'
    )
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode != 0
    assert "topics/broken.md" in proc.stderr
    assert "(unclosed" in proc.stderr
    t.write_text(
        "---\ntype: topic\ndescription: nothing triggers me\n---\n\n# Quiet\n\n## Instructions\n\nDo things.\n"
    )
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode == 0
    assert "topics/broken.md" in proc.stderr
    assert "trigger" in proc.stderr


def test_knowledge_frontmatter_must_parse(memory_repo: MemoryRepo, commit_all) -> None:
    f = memory_repo.root / "knowledge/reference/bad.md"
    f.write_text("---\ntitle: [unclosed\n---\nbody\n")
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode != 0
    assert "knowledge/reference/bad.md" in proc.stderr
    assert "frontmatter" in proc.stderr
    f.write_text("---\ntitle: fine\n---\nbody\n")
    assert commit_all(memory_repo.root, check=False).returncode == 0


def test_a_conflict_staged_with_its_markers_is_refused_and_a_fenced_example_is_not(
    memory_repo: MemoryRepo, git, commit_all
) -> None:
    """Two branches changed one hand-written line of MEMORY.md: the merge leaves conflict
    markers, and `git add` of the file as it was left must not commit them (a sync would
    push them to every clone)."""
    mem = memory_repo.memory_file
    base = mem.read_text()
    git(memory_repo.root, "checkout", "-q", "-b", "other")
    mem.write_text(base + "- ship v2 by Monday\n")
    commit_all(memory_repo.root, "other side")
    git(memory_repo.root, "checkout", "-q", "-")
    mem.write_text(base + "- ship v2 by Tuesday\n")
    commit_all(memory_repo.root, "this side")
    assert git(memory_repo.root, "merge", "-q", "other", check=False).returncode != 0
    assert "<<<<<<<" in mem.read_text()

    proc = commit_all(memory_repo.root, "merge", check=False)
    assert proc.returncode != 0
    assert "knowledge/memory/MEMORY.md: line" in proc.stderr
    assert "merge conflict marker" in proc.stderr and "git add knowledge/memory/MEMORY.md" in (
        proc.stderr
    )
    assert git(memory_repo.root, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False).stdout

    mem.write_text(base + "- ship v2 by Tuesday (Monday on the other branch)\n")
    assert commit_all(memory_repo.root, "merge").returncode == 0
    note = memory_repo.root / "knowledge/procedures/resolve-a-conflict.md"
    note.write_text(
        "# Resolve a conflict\n\n```\n<<<<<<< ours\nmine\n=======\ntheirs\n>>>>>>> theirs\n```\n"
    )
    assert commit_all(memory_repo.root, "a note about conflicts").returncode == 0


def test_foreign_hook_is_never_overwritten_silently(memory_repo: MemoryRepo, commit_all) -> None:
    hook = memory_repo.root / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho foreign-hook-ran >&2\n")
    hook.chmod(0o755)
    with pytest.raises(HookInstallError, match="--chain"):
        install_hooks(memory_repo.root)
    assert "foreign-hook-ran" in hook.read_text()
    messages = install_hooks(memory_repo.root, chain=True)
    assert any("pre-commit.local" in m for m in messages)
    (memory_repo.root / "knowledge/reference/x.md").write_text("# x\n")
    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode == 0
    assert "foreign-hook-ran" in proc.stderr


def test_core_hooks_path_is_honoured(memory_repo: MemoryRepo, git) -> None:
    git(memory_repo.root, "config", "core.hooksPath", ".githooks")
    install_hooks(memory_repo.root)
    assert (memory_repo.root / ".githooks/pre-commit").exists()


def test_a_global_hooks_path_is_not_where_the_memory_hooks_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git, commit_all
) -> None:
    """A core.hooksPath in the global git config is every repository's hooks folder: the
    memory's hooks go in its own, and a repository that is no memory commits as before."""
    from autopoiesis.memory.initialize import init_memory_repo

    shared = tmp_path / "githooks"
    shared.mkdir()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    git(tmp_path, "config", "--global", "core.hooksPath", str(shared))
    root = tmp_path / "mem"
    report = init_memory_repo(root, build_index=False)
    assert list(shared.iterdir()) == []
    own = (root / ".git/hooks").resolve()
    assert (own / "pre-commit").exists()
    assert any(str(shared) in m for m in report.hooks)
    local = git(root, "config", "--local", "core.hooksPath").stdout.strip()
    assert Path(local) == own
    # the memory's hooks still hold its transcripts
    (root / "knowledge/memory/MEMORY.md").write_text("x\n" * 300)
    assert commit_all(root, check=False).returncode != 0
    # another repository, files under raw/conversations/ and a memory.db of its own
    other = tmp_path / "app"
    (other / "raw/conversations").mkdir(parents=True)
    git(other, "init", "-q")
    (other / "raw/conversations/notes.md").write_text("hi\n")
    (other / "memory.db").write_bytes(b"")
    assert commit_all(other, check=False).returncode == 0
    assert not (other / ".autopoiesis").exists()


def test_a_shim_does_nothing_in_a_repository_that_is_no_memory(
    memory_repo: MemoryRepo, tmp_path: Path, git, commit_all
) -> None:
    """The shims of a hooks folder shared with other repositories (installed there by an
    older version) check nothing and index nothing outside a memory."""
    other = tmp_path / "app"
    (other / "raw/conversations").mkdir(parents=True)
    (other / "knowledge").mkdir()
    git(other, "init", "-q")
    git(other, "config", "core.hooksPath", str(memory_repo.root / ".git/hooks"))
    (other / "raw/conversations/notes.md").write_text("hi\n")
    (other / "memory.db").write_bytes(b"")
    proc = commit_all(other, check=False)
    assert proc.returncode == 0, proc.stderr
    assert not (other / ".autopoiesis").exists()
    from autopoiesis.git.hooks import run

    assert run("pre-commit", other) == 0


def test_a_memory_without_its_settings_file_is_still_checked(memory_repo: MemoryRepo, git) -> None:
    """A commit pulled from a collaborator may delete memory-config.yaml (the defaults
    then hold): the hooks still know the memory by its state folder, and check its
    commits."""
    git(memory_repo.root, "rm", "-q", "memory-config.yaml")
    git(memory_repo.root, "commit", "-q", "-m", "maintenance: settings to defaults")
    (memory_repo.root / "raw/conversations/forged.md").write_text("no frontmatter\n")
    git(memory_repo.root, "add", "raw/conversations/forged.md")
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", "conversation: forged"],
        cwd=memory_repo.root, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0 and "frontmatter" in proc.stderr, proc.stderr


def test_hook_path_stays_light(memory_repo: MemoryRepo, git) -> None:
    """The hooks run on every commit: they must not import numpy, sklearn, openai or git."""
    import sys

    code = (
        "import sys, runpy; sys.argv=['x','pre-commit']\n"
        "from autopoiesis.git import hooks; hooks.run('pre-commit')\nhooks.run('post-commit')\n"
        "bad=[m for m in ('numpy','sklearn','openai','git','typer') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    (memory_repo.root / "knowledge/reference/y.md").write_text("# y\n")
    git(memory_repo.root, "add", "-A")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=memory_repo.root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_hooks_run_post_commit_updates_the_index_in_the_background(
    tmp_path: Path, git, cli: Cli
) -> None:
    """`autopoiesis hooks run post-commit` (the pre-commit framework's entry) hands off to
    the same detached index sync as the shell shim."""
    import time

    from autopoiesis.index import SearchIndex
    from autopoiesis.memory.initialize import init_memory_repo

    repo = MemoryRepo(init_memory_repo(tmp_path / "m").root)
    (repo.root / "knowledge/reference/zither.md").write_text(
        "# Zither\n\nThe zither workshop opens on Fridays.\n"
    )
    git(repo.root, "add", "-A")
    git(repo.root, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "no hooks ran")
    proc = cli("hooks", "run", "post-commit", cwd=repo.root)
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 120  # a hang guard: the sync runs in another process
    hits: list = []
    while time.monotonic() < deadline and not hits:
        time.sleep(0.05)
        with SearchIndex(repo) as index:
            hits = index.search(
                "zither workshop", limit=1, fresh=False
            )  # no catch-up: only the hook's sync
    assert hits, repo.state_file("index_sync_log").read_text()
    assert hits[0].path == "knowledge/reference/zither.md"


def test_install_puts_every_history_hook_in_place(memory_repo: MemoryRepo) -> None:
    from autopoiesis.git.hooks import HOOK_NAMES

    for name in (
        "pre-commit",
        "post-commit",
        "reference-transaction",
        "pre-push",
        "post-merge",
        "post-rewrite",
    ):
        assert name in HOOK_NAMES
        hook = memory_repo.root / ".git/hooks" / name
        assert hook.exists() and hook.stat().st_mode & 0o111, name
    assert all(m.endswith("already installed") for m in install_hooks(memory_repo.root))


def test_chained_transaction_and_push_hooks_both_see_stdin(
    with_transcript, git, tmp_path: Path
) -> None:
    """A foreign reference-transaction hook kept by --chain still gets git's stdin, and ours
    still refuses after it: `git revert` of the conversation commit does not move main."""
    repo, path = with_transcript
    seen = tmp_path / "seen.txt"
    hook = repo.root / ".git/hooks/reference-transaction"
    hook.unlink()
    hook.write_text(f"#!/bin/sh\ncat >> {seen}\n")
    hook.chmod(0o755)
    install_hooks(repo.root, chain=True)
    assert (repo.root / ".git/hooks/reference-transaction.local").exists()
    head = git(repo.root, "rev-parse", "HEAD").stdout.strip()
    conversation = git(repo.root, "log", "--format=%H", "-1", "--", repo.rel(path)).stdout.strip()
    proc = git(repo.root, "revert", "--no-edit", conversation, check=False)
    assert proc.returncode != 0 and repo.rel(path) in proc.stderr
    assert git(repo.root, "rev-parse", "HEAD").stdout.strip() == head
    assert "refs/heads/main" in seen.read_text()


def test_transaction_hook_python_path_stays_light(with_transcript, git) -> None:
    """The reference-transaction hook's Python side (a refusal) imports nothing heavy."""
    import sys

    repo, path = with_transcript
    head = git(repo.root, "rev-parse", "HEAD").stdout.strip()
    parent = git(repo.root, "rev-parse", "HEAD~1").stdout.strip()
    code = (
        "import io, sys\n"
        f"sys.stdin = io.StringIO('{head} {parent} refs/heads/main\\n')\n"
        "from autopoiesis.git import hooks\nrc = hooks.run('reference-transaction', args=['prepared'])\n"
        "bad=[m for m in ('numpy','sklearn','openai','git','typer') if m in sys.modules]\n"
        "print(rc, ','.join(bad))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=repo.root, capture_output=True, text=True
    )
    assert proc.stdout.strip() == "1", (
        proc.stdout + proc.stderr
    )  # refused (the transcript would vanish), nothing heavy
    assert repo.rel(path) in proc.stderr


def test_the_git_hooks_group_and_its_old_name_run_the_same_hook(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    """`git-hooks` is the group's name; `hooks` (hidden from --help) still answers, for the
    shims older versions installed, whose fallback runs `autopoiesis hooks run NAME`."""
    tampered = memory_repo.root / "knowledge" / "memory" / "MEMORY.md"
    tampered.write_text(tampered.read_text(encoding="utf-8") + "- x\n" * 300, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=memory_repo.root, check=True)
    new = cli("git-hooks", "run", "pre-commit", cwd=memory_repo.root)
    old = cli("hooks", "run", "pre-commit", cwd=memory_repo.root)
    assert new.returncode == old.returncode == 1
    assert "MEMORY.md" in new.stderr and new.stderr == old.stderr
    # a command's name, then its help after two spaces or more (plain or rich help alike)
    top = cli("--help").stdout
    listed = re.findall(r"^[\s│|]*([a-z][a-z-]*) {2,}\S", top, flags=re.M)
    assert "git-hooks" in listed and "hooks" not in listed, top


ENTRY = "- 2026-02-16: Files are the source of truth (via ses_b2) {id: 20260216-1850-a1b2c3}"


def test_an_entry_pasted_twice_in_one_file_is_refused_saying_what_to_do(
    memory_repo: MemoryRepo, git, commit_all
) -> None:
    """A person copy-pasted an entry: one `{id: ...}` on two live entries, which the
    compiler showed twice. The commit is refused naming the file, both lines and what to do."""
    note = memory_repo.root / "knowledge/projects/alpha.md"
    head = "# Alpha\n\n## Key Decisions\n"
    note.write_text(f"{head}{ENTRY}\n")
    commit_all(memory_repo.root, "alpha")

    note.write_text(f"{head}{ENTRY}\n- an unrelated hand-written line\n{ENTRY}\n")
    proc = commit_all(memory_repo.root, "pasted", check=False)
    assert proc.returncode != 0
    assert "knowledge/projects/alpha.md: lines 4 and 6" in proc.stderr
    assert "{id: 20260216-1850-a1b2c3}" in proc.stderr
    assert "delete it" in proc.stderr and "remove its" in proc.stderr

    # a reworded copy carries the id all the same; a struck one is history, not a copy
    reworded = ENTRY.replace("Files are", "Plain files are")
    note.write_text(f"{head}{ENTRY}\n{reworded}\n")
    assert commit_all(memory_repo.root, "reworded", check=False).returncode != 0
    struck = "- ~~2026-02-16: Files are the source of truth (via ses_b2)~~ {id: 20260216-1850-a1b2c3} #superseded-by:20260217-0900-b2c3d4"
    note.write_text(f"{head}{struck}\n{ENTRY}\n")
    assert commit_all(memory_repo.root, "struck", check=False).returncode == 0


def test_a_file_committed_with_a_repeated_id_is_not_locked_out(
    memory_repo: MemoryRepo, git, commit_all
) -> None:
    """A repeat an older version committed is left for a person to clean up: every later
    commit to that file (the writer's too) is not refused for it."""
    mem = memory_repo.memory_file
    mem.write_text(mem.read_text() + f"{ENTRY}\n{ENTRY}\n")
    git(memory_repo.root, "add", "-A")
    git(memory_repo.root, "commit", "-q", "--no-verify", "-m", "an older version")
    mem.write_text(mem.read_text() + "- another line\n")
    assert commit_all(memory_repo.root, "later", check=False).returncode == 0
