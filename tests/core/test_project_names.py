"""The name each checkout goes by in a memory (core/project_names.py): real git repositories
in tmp_path, the record in the memory repository's git folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from autopoiesis.core.paths import MemoryRepo, git_state_path
from autopoiesis.core.project import project_name, session_project
from tests.core.test_project import _git
from tests.core.test_project import _repo as _make_repo


def _repo(path: Path, remote: str | None = None) -> str:
    return str(_make_repo(path, remote))


def _record(memory: MemoryRepo) -> dict:
    return json.loads(git_state_path(memory.root, "project_names").read_text())["checkouts"]


def test_two_codebases_of_one_name_are_two_projects(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Both derived `app`: their decisions were pooled in one knowledge/projects/app/."""
    mine = _repo(tmp_path / "work" / "app", "git@github.com:acme/app.git")
    theirs = _repo(tmp_path / "oss" / "app", "https://github.com/foo/app")
    plain = _repo(tmp_path / "scratch" / "app")
    assert project_name(mine, memory_repo.root) == "app"
    assert project_name(theirs, memory_repo.root) == "foo-app"  # the remote's owner
    assert project_name(plain, memory_repo.root) == "scratch-app"  # no remote: its parent
    # each keeps its name, whichever is asked first from now on
    assert project_name(plain, memory_repo.root) == "scratch-app"
    assert project_name(theirs + "/src", memory_repo.root) == "foo-app"
    assert project_name(mine, memory_repo.root) == "app"
    # without a memory to ask, the name is derived as before
    assert project_name(theirs) == "app"


def test_a_remote_added_later_renames_no_project(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "shop")
    assert project_name(repo, memory_repo.root) == "shop"
    _git(Path(repo), "remote", "add", "origin", "https://user:tok3n@github.com/acme/storefront.git")
    assert project_name(repo, memory_repo.root) == "shop"  # derived: storefront
    entry = _record(memory_repo)[repo]
    # what the record keeps of the remote has no credentials
    assert entry == {"name": "shop", "remote": "url:github.com/acme/storefront"}
    # another clone of that remote, written another way, is the same project
    clone = _repo(tmp_path / "elsewhere" / "storefront", "git@github.com:acme/storefront.git")
    assert project_name(clone, memory_repo.root) == "shop"


def test_a_clone_of_a_checkout_is_its_project_and_a_moved_checkout_keeps_its_name(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    tool = _repo(tmp_path / "a" / "tool")
    assert project_name(tool, memory_repo.root) == "tool"
    subprocess.run(
        ["git", "clone", "-q", tool, str(tmp_path / "b" / "tool-copy")],
        check=True,
        capture_output=True,
    )
    assert project_name(str(tmp_path / "b" / "tool-copy"), memory_repo.root) == "tool"
    # moved to another folder: the old one is gone and nothing says it was another one
    Path(tool).rename(tmp_path / "a" / "moved")
    (tmp_path / "c").mkdir()
    moved = str((tmp_path / "a" / "moved").rename(tmp_path / "c" / "tool"))
    # (the clone's remote still names the old folder, so the clone no longer says which)
    assert project_name(moved, memory_repo.root) == "tool"
    # while a checkout of another repository of that name, found while the first is here,
    # gets its own
    other = _repo(tmp_path / "d" / "tool", "git@example.org:x/tool.git")
    assert project_name(other, memory_repo.root) == "x-tool"


def test_a_damaged_or_unwritable_record_names_as_derived_and_says_nothing(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    record = git_state_path(memory_repo.root, "project_names")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_bytes(b"\xff\x00 not json")
    repo = _repo(tmp_path / "svc")
    assert project_name(repo, memory_repo.root) == "svc"
    assert _record(memory_repo)[repo]["name"] == "svc"  # rewritten whole
    # a name in the record is read as a project's name is written: a hand edit that
    # climbs out of knowledge/projects/ names the slug of it
    record.write_text(json.dumps({"checkouts": {repo: {"name": "../../etc", "remote": None}}}))
    assert project_name(repo, memory_repo.root) == "etc"
    # a record that cannot be written (its folder is a file): the derived name, no error
    import shutil

    shutil.rmtree(record.parent)  # the record and its lock
    record.parent.write_text("in the way")
    other = _repo(tmp_path / "other" / "svc")
    assert project_name(other, memory_repo.root) == "svc"


def test_an_import_files_sessions_of_two_codebases_of_one_name_apart(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Through the capture stream, the path every harness's sessions take."""
    from autopoiesis.capture.stream import process_stream

    first = _repo(tmp_path / "work" / "api", "git@github.com:acme/api.git")
    second = _repo(tmp_path / "side" / "api", "git@github.com:me/api.git")
    lines = []
    for n, cwd in enumerate((first, second)):
        sid = f"s{n}"
        lines += [
            json.dumps(
                {
                    "event": "session_start",
                    "session_id": sid,
                    "timestamp": f"2026-03-0{n + 1}T10:00:00Z",
                    "cwd": cwd,
                }
            ),
            json.dumps(
                {
                    "event": "message",
                    "session_id": sid,
                    "role": "user",
                    "content": "We use uv, not pip, in this repo.",
                    "timestamp": f"2026-03-0{n + 1}T10:01:00Z",
                }
            ),
            json.dumps(
                {
                    "event": "session_end",
                    "session_id": sid,
                    "timestamp": f"2026-03-0{n + 1}T10:02:00Z",
                }
            ),
        ]
    report = process_stream(memory_repo, [line.encode() for line in lines])
    assert not report.refused, report.refused
    projects = {
        path.read_text().split("project: ", 1)[1].split("\n", 1)[0]
        for path in (memory_repo.root / "raw").rglob("*.md")
    }
    assert projects == {"api", "me-api"}
    # and a hook asked from the second checkout compiles for its own project
    assert session_project(None, second, str, memory_repo.root) == "me-api"


def test_two_codebases_whose_remote_is_one_relative_path_are_two_projects(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`git remote add origin ../upstream` in two folders names two repositories, each
    read from its checkout's folder as git reads it; the record took `../upstream` as
    written for one identity, and filed the second codebase under the first's name."""
    firsts_upstream = Path(_repo(tmp_path / "a" / "upstream"))
    _repo(tmp_path / "b" / "upstream")
    first = _repo(tmp_path / "a" / "app", "../upstream")
    second = _repo(tmp_path / "b" / "app", "../upstream")
    assert project_name(first, memory_repo.root) == "upstream"
    assert project_name(second, memory_repo.root) == "b-upstream"
    assert _record(memory_repo)[first]["remote"] == f"path:{firsts_upstream.resolve()}"
    # a checkout of the first's upstream is the first's project
    clone = _repo(tmp_path / "c" / "elsewhere", str(firsts_upstream))
    assert project_name(clone, memory_repo.root) == "upstream"


def test_a_remote_urls_query_is_no_part_of_what_the_record_keeps(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """The record kept `url:host/acme/app?token=s3cr3t`: a credential in a file, and the
    same repository fetched with another token was another one."""
    repo = _repo(tmp_path / "app", "https://git.example.org/acme/app.git?token=s3cr3t")
    assert project_name(repo, memory_repo.root) == "app"
    assert _record(memory_repo)[repo]["remote"] == "url:git.example.org/acme/app"
    other = _repo(tmp_path / "x" / "app", "https://git.example.org/acme/app?token=0ther#x")
    assert project_name(other, memory_repo.root) == "app"
