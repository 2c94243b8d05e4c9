"""`autopoiesis init`: the layout, idempotence, existing repos, packaged templates."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from autopoiesis.errors import AutopoiesisError
from autopoiesis.git.locate import locate_repo
from autopoiesis.memory.initialize import init_memory_repo


@pytest.mark.slow
def test_layout_commit_and_hooks(tmp_path: Path, git) -> None:
    report = init_memory_repo(tmp_path / "mem")
    root = report.root
    for d in (
        "raw/conversations",
        "knowledge/identity",
        "knowledge/memory",
        "knowledge/journal",
        "knowledge/projects",
        "knowledge/people",
        "knowledge/procedures",
        "knowledge/reference",
        "topics",
        "attachments",
        "archive",
        "scratch",
    ):
        assert (root / d).is_dir(), d
    for f in ("SOUL.md", "USER.md", "AGENTS.md", "TOOLS.md"):
        text = (root / "knowledge/identity" / f).read_text()
        assert text.startswith("---\ntype: identity\nrole: ")
    assert (root / "knowledge/memory/MEMORY.md").exists()
    assert (root / "knowledge/projects/_active.md").exists()
    assert (root / "knowledge/people/_index.md").exists()
    assert len(list((root / "topics").glob("*.md"))) >= 2
    assert "memory.db" in (root / ".gitignore").read_text()
    assert "scratch/" in (root / ".gitignore").read_text()
    assert "filter=lfs" in (root / ".gitattributes").read_text()
    config = (root / "memory-config.yaml").read_text()
    for key in (
        "token_budget",
        "bm25_weight",
        "similarity_threshold",
        "journal_retention_days",
        "auto_tag_daily",
        "provider",
    ):
        assert key in config
    assert "maintenance: initialize memory repository" in git(root, "log", "--format=%s").stdout
    assert git(root, "status", "--porcelain").stdout == ""
    assert (root / ".git/hooks/pre-commit").read_text().count("autopoiesis") >= 1
    assert locate_repo(root).is_initialized()
    # the search index exists from the start, so post-commit keeps it fresh from the first capture
    assert (root / "memory.db").exists()
    assert report.index
    assert "search index built" in report.index
    assert "memory.db" not in git(root, "ls-files").stdout


@pytest.mark.slow
def test_second_run_changes_nothing(tmp_path: Path, git) -> None:
    first = init_memory_repo(tmp_path / "mem")
    head = git(first.root, "rev-parse", "HEAD").stdout
    again = init_memory_repo(tmp_path / "mem")
    assert not again.changed
    assert again.commit is None
    assert git(first.root, "rev-parse", "HEAD").stdout == head


@pytest.mark.slow
def test_existing_repo_keeps_its_files(tmp_path: Path, git) -> None:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "notes.txt").write_text("mine\n")
    (root / ".gitignore").write_text("node_modules/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "user commit")
    (root / "wip.txt").write_text("uncommitted work\n")
    report = init_memory_repo(root)
    assert not report.new_git_repo
    assert (root / "notes.txt").read_text() == "mine\n"
    assert (root / "wip.txt").read_text() == "uncommitted work\n"
    ignore = (root / ".gitignore").read_text()
    assert ignore.startswith("node_modules/\n")
    assert "memory.db" in ignore
    # the uncommitted file is not swept into the init commit
    assert "wip.txt" not in git(root, "show", "--name-only", "--format=", "HEAD").stdout
    assert "?? wip.txt" in git(root, "status", "--porcelain").stdout


def test_refuses_a_subfolder_of_another_repo(tmp_path: Path, git) -> None:
    git(tmp_path, "init", "-q")
    with pytest.raises(AutopoiesisError, match="inside the git repository"):
        init_memory_repo(tmp_path / "sub")


@pytest.mark.slow
def test_locate_needs_an_initialised_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autopoiesis.errors import NotAMemoryRepo

    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotAMemoryRepo, match="autopoiesis init"):
        locate_repo()
    report = init_memory_repo(tmp_path / "m")
    monkeypatch.setenv("AUTOPOIESIS_REPO", str(report.root))
    assert locate_repo().root == report.root
    monkeypatch.delenv("AUTOPOIESIS_REPO")
    monkeypatch.chdir(report.root / "knowledge")
    assert locate_repo().root == report.root


@pytest.mark.slow
def test_wheel_ships_the_template(tmp_path: Path) -> None:
    """init must work from an installed wheel, not only from a checkout."""
    import sys
    import zipfile

    project = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            str(project),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("autopoiesis-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "autopoiesis/_template/knowledge/identity/SOUL.md",
        "autopoiesis/_template/topics/github-pr-review.md",
        "autopoiesis/_template/hooks/pre-commit",
        "autopoiesis/_files/memory-config.yaml",
        "autopoiesis/_files/demo/sessions.ndjson",
    ):
        assert needed in names, needed


@pytest.mark.slow
def test_config_cache_follows_edits(tmp_path: Path) -> None:
    import os

    from autopoiesis.core.config import check_tracked_config, load_config
    from autopoiesis.core.config_layers import CACHE_PATH

    root = init_memory_repo(tmp_path / "m").root
    assert load_config(root).search.merge == "auto"
    assert root.joinpath(*CACHE_PATH).exists()
    cfg = root / "memory-config.yaml"
    cfg.write_text(cfg.read_text().replace("merge: auto", "merge: weighted"))
    assert load_config(root).search.merge == "weighted"  # the edit is seen, cache or not
    cfg.write_text(cfg.read_text().replace("merge: weighted", "merge: bogus"))
    os.utime(cfg, ns=(1, 1))  # even with an old timestamp, the size changed
    with pytest.warns(UserWarning, match="write one of: auto, rrf, weighted"):
        assert load_config(root).search.merge == "weighted"  # its last valid settings
    assert "write one of: auto, rrf, weighted" in (check_tracked_config(root) or "")


def test_refuses_a_bare_repository_and_a_git_folder(tmp_path: Path, git, memory_repo, cli) -> None:
    """`init` of a bare repository (or of a work tree's `.git`) used to lay a memory out
    inside it, with a nested .git that hid it (`git ls-remote` answered from the new
    repository), and the "not a memory" error advised exactly that. Now both are refused
    before anything is made, with what to do instead (clone it; use the work tree), and
    nothing suggests `init` for them."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(memory_repo.root), str(bare))
    before = sorted(p.name for p in bare.iterdir())
    refs = git(tmp_path, "ls-remote", str(bare)).stdout
    for where in (bare, bare / "new-folder", bare / "refs"):
        with pytest.raises(AutopoiesisError, match="bare git repository") as exc:
            init_memory_repo(where)
        assert f"git clone {bare} DIR && autopoiesis init DIR" in str(exc.value)
    assert sorted(p.name for p in bare.iterdir()) == before
    assert git(tmp_path, "ls-remote", str(bare)).stdout == refs
    dot_git = memory_repo.root / ".git"
    with pytest.raises(AutopoiesisError, match="git folder of the memory repository") as exc:
        init_memory_repo(dot_git)
    assert f"-C {memory_repo.root}" in str(exc.value)
    assert not (dot_git / "raw").exists() and not (dot_git / ".git").exists()
    # the error of any other command says the same, and never suggests `init` of them
    r = cli("-C", str(bare), "status")
    assert r.returncode == 1
    assert "bare git repository" in r.stderr and f"autopoiesis init {bare}" not in r.stderr
    r = cli("-C", str(dot_git), "status")
    assert r.returncode == 1
    assert f"pass -C {memory_repo.root}" in r.stderr and "autopoiesis init" not in r.stderr
    r = cli("status", cwd=bare)
    assert r.returncode == 1 and "bare git repository" in r.stderr
    # a folder inside a memory is pointed at the memory, not at `init` (which refuses it)
    sub = memory_repo.root / "knowledge"
    r = cli("-C", str(sub), "status")
    assert r.returncode == 1
    assert f"a folder inside the one at {memory_repo.root}. Pass -C" in r.stderr
    assert "autopoiesis init" not in r.stderr


def test_refuses_the_home_folder_and_the_root(tmp_path: Path, monkeypatch) -> None:
    """`autopoiesis init` run in the home folder made it a git repository without a word:
    every unversioned folder under it then lay in the memory's repository (a project in
    ~/code/app reported the home folder as its git top level). The home folder and the
    file system's root are refused, nothing made; a home folder that is a git repository
    already is the user's choice, and a folder under home is fine."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(AutopoiesisError, match="your home folder"):
        init_memory_repo(home, build_index=False)
    assert list(home.iterdir()) == []
    with pytest.raises(AutopoiesisError, match="the file system's root"):
        init_memory_repo(Path("/"), build_index=False)
    assert init_memory_repo(home / "memory", build_index=False).commit
    subprocess.run(["git", "init", "-q", str(home)], check=True)
    assert init_memory_repo(home, install_hooks=False, build_index=False).commit


def test_writes_nothing_through_a_link_a_collaborator_committed(
    tmp_path: Path, git, memory_repo
) -> None:
    """A collaborator committed `.gitignore -> ~/.gitconfig` and a dangling
    `knowledge/identity/SOUL.md -> ~/planted` (hooks off), and `init` of a clone appended
    its ignore lines to the one and created the other through the link, outside the
    repository. Both are refused, named, with what to do, before any file is written;
    and `sync`'s .gitattributes merge refuses a link the same way."""
    from autopoiesis.memory.initialize import InitReport, merge_gitattributes

    outside = tmp_path / "home"
    outside.mkdir()
    gitconfig = outside / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Victim\n")
    root = memory_repo.root
    for rel, target in (
        (".gitignore", gitconfig),
        ("knowledge/identity/SOUL.md", outside / "planted"),
    ):
        (root / rel).unlink()
        (root / rel).symlink_to(target)
    git(root, "add", "-A")
    git(root, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "links")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    with pytest.raises(AutopoiesisError) as exc:
        init_memory_repo(clone, build_index=False)
    message = str(exc.value)
    assert f".gitignore -> {gitconfig}" in message
    assert f"knowledge/identity/SOUL.md -> {outside / 'planted'}" in message
    assert "rm -q -- .gitignore knowledge/identity/SOUL.md" in message
    assert gitconfig.read_text() == "[user]\n\tname = Victim\n"
    assert sorted(p.name for p in outside.iterdir()) == [".gitconfig"]
    # a link on the way, a folder: nothing is made in the folder it points to
    (clone / ".gitignore").unlink()
    (clone / "knowledge/identity/SOUL.md").unlink()
    git(clone, "rm", "-rq", "--", "knowledge/reference")
    shutil.rmtree(clone / "knowledge/reference", ignore_errors=True)
    (clone / "knowledge/reference").symlink_to(outside, target_is_directory=True)
    with pytest.raises(AutopoiesisError, match=f"knowledge/reference -> {outside}"):
        init_memory_repo(clone, build_index=False)
    assert sorted(p.name for p in outside.iterdir()) == [".gitconfig"]
    # the .gitattributes merge (sync runs it too)
    (clone / ".gitattributes").unlink()
    (clone / ".gitattributes").symlink_to(gitconfig)
    with pytest.raises(AutopoiesisError, match=".gitattributes -> "):
        merge_gitattributes(clone.resolve(), InitReport(clone))
    assert gitconfig.read_text() == "[user]\n\tname = Victim\n"


def test_a_link_where_sessions_are_filed_is_named_when_a_clone_is_set_up(
    tmp_path: Path, git, memory_repo
) -> None:
    """A collaborator committed a month's folder of transcripts as a link out of the
    memory (hooks off). init writes nothing there, so it set the clone up without a word,
    and the first session of that month was refused (capture and import refuse to write
    through it). init names the link, once, as a warning."""
    (tmp_path / "outside").mkdir()
    month = memory_repo.root / "raw/conversations/2026/12"
    month.parent.mkdir(parents=True)
    month.symlink_to(tmp_path / "outside", target_is_directory=True)
    git(memory_repo.root, "add", "-A")
    git(memory_repo.root, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "a link")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(memory_repo.root), str(clone))
    report = init_memory_repo(clone, build_index=False)
    named = [w for w in report.warnings if "symbolic link" in w]
    assert len(named) == 1 and "raw/conversations/2026/12" in named[0] and "git rm" in named[0]
    assert list((tmp_path / "outside").iterdir()) == []
