"""core/project.py against real git repositories: a remote's name, a folder's name, a
subfolder, a linked worktree, a folder outside any repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from autopoiesis.core.project import (
    Project,
    project_name,
    project_of,
    project_slug,
    session_project,
)
from autopoiesis.formats.transcript import TranscriptMeta, parse_meta, render_frontmatter


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _repo(path: Path, remote: str | None = None) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hi\n")
    _git(path, "add", "README.md")
    _git(path, "commit", "-q", "-m", "first")
    if remote:
        _git(path, "remote", "add", "origin", remote)
    return path


def test_a_repository_is_named_by_its_origin_remote(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "checkout", remote="git@github.com:acme/Widget_Factory.git")
    assert project_of(repo) == Project(
        name="widget-factory",
        root=str(repo),
        remote="git@github.com:acme/Widget_Factory.git",
    )
    # A path remote, with a trailing slash and no .git.
    _git(repo, "remote", "set-url", "origin", "/srv/git/tools/")
    project = project_of(repo)
    assert project is not None and project.name == "tools"


def test_without_a_remote_the_top_folder_names_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "My Notes")
    (repo / "src" / "deep").mkdir(parents=True)
    project = project_of(repo / "src" / "deep")
    assert project == Project(name="my-notes", root=str(repo), remote=None)
    assert project_of(repo / "README.md") == project


def test_a_linked_worktree_belongs_to_its_main_repository(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "main-repo", remote="https://example.org/team/alpha.git")
    linked = tmp_path / "elsewhere" / "alpha-feature"
    _git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    (linked / "pkg").mkdir()
    project = project_of(linked / "pkg")
    assert project is not None
    assert project.name == "alpha"
    assert project.root == str(repo)
    # Without a remote the main repository's folder name counts, not the worktree's.
    _git(repo, "remote", "remove", "origin")
    project = project_of(linked)
    assert project is not None and project.name == "main-repo"


def test_a_folder_in_no_repository_is_global(tmp_path: Path) -> None:
    plain = tmp_path / "just-a-folder"
    plain.mkdir()
    # tmp_path is under no git repository in the test environment; guard that assumption.
    if project_of(tmp_path) is not None:  # pragma: no cover - depends on the machine
        return
    assert project_of(plain) is None
    assert project_of(plain / "missing" / "file.txt") is None


@pytest.mark.parametrize(
    ("folder", "name"),
    [
        # the first folder under the home folder and the places that hold checkouts
        ("/Users/ed/Projects/minsky", "minsky"),
        ("/Users/ed/Projects/minsky/src/domain", "minsky"),  # a subfolder: its repository's
        ("/home/ci/work/monorepo/packages/ui", "monorepo"),
        ("/Users/al/code/billing-api/.worktrees/feat-x", "billing-api"),  # a worktree in it
        ("/Users/al/.cursor/worktrees/polychrome/k3x9", "polychrome"),
        ("/home/u/go/src/github.com/acme/Widget/cmd", "widget"),  # Go's host/owner/name
        ("/root/mitmproxy", "mitmproxy"),
        ("/workspaces/dvc", "dvc"),
        ("/project", "project"),  # a container's mount alone at the root is the checkout
        ("/app/src", "app"),
        ("/opt/gadget/bin", "gadget"),
        ("/Users/ed/private/diary-app", "diary-app"),
        # recorded on Windows, or in WSL
        ("C:\\Users\\bob\\source\\repos\\Web_App\\src", "web-app"),
        ("c:/Users/bob/Documents/GitHub/Roo-Cline", "roo-cline"),
        ("\\\\server\\share\\proj1", "proj1"),
        ("/mnt/c/Users/bob/code/App1", "app1"),
        # no project: a home folder, a place of checkouts, a temporary or an application's
        # folder, a path that climbs, a relative one
        ("/Users/ed", None),
        ("/home/ci/Projects", None),
        ("/tmp/pytest-1/x", None),
        ("/private/var/folders/xy/T/abc", None),
        ("/Users/ed/Library/Application Support/Code", None),
        ("C:\\Users\\bob\\AppData\\Local\\Temp\\x", None),
        ("/home/u/../../etc/passwd", None),
        ("/etc/no-such-service/conf.d", None),
        ("C:\\Windows\\Temp\\build", None),
        ("src/app", None),
        ("", None),
    ],
)
def test_a_folder_of_another_machine_is_named_by_its_path(folder: str, name: str | None) -> None:
    # None of these folders is on this machine (the test checks it): a log recorded
    # elsewhere, or a checkout since removed, still files its session under its project.
    assert not folder or not Path(folder).exists()
    assert project_name(folder) == name


def test_a_folder_of_this_machine_is_asked_not_guessed(tmp_path: Path) -> None:
    # On this machine the folder itself answers: in no repository it is global, whatever
    # its path looks like; in one, the repository names it, not the path.
    plain = tmp_path / "code" / "looks-like-a-project"
    plain.mkdir(parents=True)
    if project_of(tmp_path) is not None:  # pragma: no cover - depends on the machine
        return
    assert project_name(str(plain)) is None
    (plain / "notes.txt").write_text("x")
    assert project_name(str(plain / "notes.txt")) is None  # a file of this machine too
    repo = _repo(tmp_path / "code" / "checkout", remote="https://example.org/acme/real-name.git")
    assert project_name(str(repo / "gone" / "deeper")) == "real-name"


def test_no_project_is_named_after_a_secret() -> None:
    # A project's name becomes a folder under knowledge/projects/ and a `project:` line,
    # lower case, where the redactor would no longer know the secret: it reads the name
    # and the folder first, as it reads every field of a transcript.
    from autopoiesis.core.redact import Redactor

    redact = Redactor().redact
    key = "AKIAIOSFODNN7EXAMPL3"
    assert redact(key) != key
    assert session_project(key, None, redact) is None
    assert session_project(f"/Users/me/Projects/{key}/src", None, redact) is None
    assert session_project(key, "/Users/me/code/gadget", redact) == "gadget"  # the folder's
    assert session_project("???", "/Users/me/code/gadget", redact) == "gadget"
    assert session_project(None, f"/Users/me/Projects/{key}/src", redact) is None
    assert session_project(None, f"C:\\Users\\me\\{key}\\app", redact) is None
    # a secret below the project's folder leaves its name; nothing secret, nothing changes
    assert session_project(None, f"/Users/me/Projects/minsky/{key}", redact) == "minsky"
    assert session_project("Tool_Box", "/Users/me/code/other", redact) == "tool-box"
    assert session_project(None, "/Users/me/code/gadget", redact) == "gadget"
    assert session_project(None, None, redact) is None


def test_project_of_reads_files_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No git process: the prompt hook asks for every prompt (its speed is bench/'s)."""
    repo = _repo(tmp_path / "fast", remote="git@host:x/fast.git")
    sub = repo / "a" / "b" / "c"
    sub.mkdir(parents=True)

    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"project_of started a process: {args!r}")

    monkeypatch.setattr(subprocess.Popen, "__init__", no_process)
    assert project_of(sub) == project_of(repo)
    assert project_of(sub) is not None


def test_project_slug() -> None:
    assert project_slug("My_Repo.v2") == "my-repo-v2"
    assert project_slug("???") == ""


def test_the_frontmatter_keeps_project_and_cwd() -> None:
    from datetime import UTC, datetime

    meta = TranscriptMeta(
        session_id="ses_1",
        started=datetime(2026, 1, 2, 3, 4, tzinfo=UTC),
        project="Widget_Factory",
        cwd="/home/me/widget factory/src",
    )
    assert meta.project == "widget-factory"
    text = render_frontmatter(meta)
    assert "project: widget-factory\n" in text
    assert 'cwd: "/home/me/widget factory/src"\n' in text
    assert parse_meta(text + "\n# t\n") == meta
    # Absent: not written, reads back as None (older transcripts are global).
    plain = TranscriptMeta(session_id="ses_2", started=meta.started)
    assert "project:" not in render_frontmatter(plain)
    assert parse_meta(render_frontmatter(plain) + "\n# t\n").project is None


def test_read_head_reads_what_git_says_without_running_it(tmp_path: Path) -> None:
    from autopoiesis.core.project import read_head

    def rev(where: Path) -> str:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True
        ).stdout.strip()

    repo = _repo(tmp_path / "r")
    assert read_head(repo) == rev(repo)  # a loose ref
    _git(repo, "pack-refs", "--all")
    assert read_head(repo) == rev(repo)  # a packed one
    linked = tmp_path / "wt"
    _git(repo, "worktree", "add", "-q", "--detach", str(linked))
    _git(linked, "commit", "-q", "--allow-empty", "-m", "second")
    assert read_head(linked) == rev(linked) != rev(repo)  # a detached worktree's own
    assert read_head(tmp_path) is None


def test_a_checkout_this_machine_lacks_is_named_by_its_path_not_by_a_repository_around_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A home folder kept in git (dotfiles): a log's ~/code/billing, gone or never here,
    # is billing's, not the dotfiles'; a gone subfolder of a checkout that is here is
    # still the checkout's. (Paths are read as if tmp_path were the root: a temporary
    # folder names no project.)
    import autopoiesis.core.project as project_module

    real = project_module.foreign_project
    monkeypatch.setattr(
        project_module, "foreign_project", lambda f: real(f.removeprefix(str(tmp_path)))
    )
    home = _repo(tmp_path / "home" / "me")
    assert project_name(str(home / "code" / "billing")) == "billing"
    assert project_name(str(home / "code" / "billing" / "src")) == "billing"
    checkout = _repo(home / "code" / "shop", remote="git@github.com:acme/shop-api.git")
    assert project_name(str(checkout / "gone")) == "shop-api"
    assert project_name(str(home)) == "me"


def test_a_repository_reached_through_a_link_is_the_same_project(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "shop")
    (tmp_path / "current").symlink_to(repo)
    assert project_of(tmp_path / "current") == project_of(repo)
    assert project_name(str(tmp_path / "current")) == "shop"


def test_a_worktree_of_a_bare_repository_is_named_after_it(tmp_path: Path) -> None:
    seed = _repo(tmp_path / "seed")
    _git(tmp_path, "clone", "-q", "--bare", str(seed), "tool.git")
    bare = tmp_path / "tool.git"
    _git(bare, "worktree", "add", "-q", str(tmp_path / "tool-main"), "main")
    _git(bare, "worktree", "add", "-q", "-b", "login", str(tmp_path / "tool-login"), "main")
    # a clone --bare keeps the seed as origin; without it the bare folder names it
    assert project_name(str(tmp_path / "tool-main")) == "seed"
    _git(bare, "remote", "remove", "origin")
    assert project_name(str(tmp_path / "tool-main")) == "tool"
    assert project_name(str(tmp_path / "tool-login")) == "tool"


def test_a_name_in_another_script_is_transliterated() -> None:
    assert project_slug("проект") == "proekt"
    assert project_slug("项目") == "xiangmu"
    assert project_slug("проект-2") == "proekt-2"  # not "2"
    assert project_slug("bjørn-tools") == "bjorn-tools"
    assert project_slug("My_Repo") == "my-repo"  # ASCII as before


def test_a_session_run_in_the_memory_itself_names_no_project(tmp_path: Path) -> None:
    memory = _repo(tmp_path / "memory")
    other = _repo(tmp_path / "app")
    redact = str
    assert session_project(None, str(memory), redact, memory) is None
    assert session_project(None, str(memory / "knowledge"), redact, memory) is None
    assert session_project(None, str(other), redact, memory) == "app"
    assert session_project(None, str(memory), redact) == "memory"  # no memory to compare


def test_a_dot_git_that_is_no_regular_file_is_not_read(tmp_path) -> None:
    """A project's `.git -> /dev/zero` was read without end by the prompt hook; a FIFO
    would have kept it waiting for a writer."""
    from autopoiesis.core.gitdirs import gitdir_of

    zero = tmp_path / "zero" / ".git"
    zero.parent.mkdir()
    zero.symlink_to("/dev/zero")
    assert gitdir_of(zero) is None
    fifo = tmp_path / "fifo" / ".git"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert gitdir_of(fifo) is None
    linked = tmp_path / "wt" / ".git"
    linked.parent.mkdir()
    linked.write_text("gitdir: ../main/.git/worktrees/wt\n")
    assert gitdir_of(linked) == linked.parent / "../main/.git/worktrees/wt"


def test_a_git_folders_files_that_are_no_regular_files_are_not_read(tmp_path: Path) -> None:
    """A project whose `.git/config` (or a worktree's `commondir`, or HEAD) is
    `/dev/zero` was read to the end of memory by the prompt hook, past its deadline: its
    alarm does not stop a read in C. Run in a process of bounded memory, where that read
    ends in a MemoryError rather than in the machine's."""
    import resource
    import sys

    app = _repo(tmp_path / "app")
    (app / ".git/config").unlink()
    (app / ".git/config").symlink_to("/dev/zero")
    main = _repo(tmp_path / "main")
    _git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    (gitdir,) = (main / ".git/worktrees").iterdir()
    (gitdir / "commondir").unlink()
    (gitdir / "commondir").symlink_to("/dev/zero")
    (gitdir / "HEAD").unlink()
    (gitdir / "HEAD").symlink_to("/dev/zero")
    code = (
        "import sys; from pathlib import Path\n"
        "from autopoiesis.core.project import project_of, read_head\n"
        "for folder in sys.argv[1:]:\n"
        "    found = project_of(folder)\n"
        "    print(found and found.name, read_head(Path(folder)))\n"
    )

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run(
        [sys.executable, "-c", code, str(app), str(tmp_path / "wt")],
        capture_output=True,
        text=True,
        preexec_fn=bounded,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # the config unread: named by its folder; the worktree's git folder is taken as common
    assert done.stdout.splitlines()[0].startswith("app ")
    assert done.stdout.splitlines()[1] == "wt None"


@pytest.mark.parametrize(
    "folder",
    ["/tmp/a\ud800b", "/tmp/" + "a" * 5000],
    ids=["lone-surrogate", "too-long"],
)
def test_a_folder_no_file_system_can_hold_is_in_no_project(tmp_path: Path, folder: str) -> None:
    """A hook's `cwd` holding a lone surrogate (a JSON `\\ud800` escape) raised
    UnicodeEncodeError where its repository was looked for, one too long for a path
    "OSError: File name too long": the prompt hook and the MCP server, which ask
    Memory.project_here, lost the whole context to it. No folder has such a path."""
    from autopoiesis.memory import Memory

    assert project_of(folder) is None
    memory = tmp_path / "memory"
    _repo(memory)
    assert Memory(memory).project_here(folder) is None
    assert project_name(folder, memory) is None


def test_a_remote_urls_query_names_no_project() -> None:
    """`https://host/acme/app.git?token=SECRET`: the query (a credential, often) was read
    as the repository's name, `app-git-token-secret`, a folder under knowledge/projects/."""
    from autopoiesis.core.project import remote_project_name, remote_repository_name

    assert remote_repository_name("https://git.example.org/acme/App.git?token=s3cr3t") == "App"
    assert remote_project_name("https://u:p@git.example.org/acme/app/#readme") == "app"
    # an scp-like path is a path: `?` and `#` are characters of it
    assert remote_repository_name("git@host:acme/what?.git") == "what?"
