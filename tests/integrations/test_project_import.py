"""Every importer whose log knows the working folder writes it as `cwd:` and the folder's
git project as `project:` (core/project.py), against real git repositories in tmp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import jsonl, transcripts
from tests.integrations.opencode.test_importer import opencode_storage

T0 = "2026-03-01T10:00:00Z"
T1 = "2026-03-01T10:01:00Z"


@pytest.fixture
def project_repo(tmp_path: Path, git) -> Path:
    """A git repository `checkout` whose origin remote names the project `widget`, with a
    subfolder src/ (the sessions run there)."""
    repo = tmp_path / "checkout"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", "git@example.org:acme/Widget.git")
    return repo


def _only(memory_repo: MemoryRepo, files: list[Path], fmt: str = "auto") -> tf.TranscriptMeta:
    report = import_files(memory_repo, files, fmt)
    assert report.refused == [], report.refused
    found = transcripts(memory_repo, report.imported)
    assert len(found) == 1, found
    return next(iter(found.values())).meta


def test_claude_code_cwd(memory_repo: MemoryRepo, tmp_path: Path, project_repo: Path) -> None:
    cwd = str(project_repo / "src")
    log = jsonl(
        tmp_path / "s.jsonl",
        [
            {
                "type": "user",
                "sessionId": "cc1",
                "uuid": "u1",
                "timestamp": T0,
                "cwd": cwd,
                "message": {"role": "user", "content": "where are the widgets built?"},
            },
            {
                "type": "assistant",
                "sessionId": "cc1",
                "uuid": "u2",
                "parentUuid": "u1",
                "timestamp": T1,
                "cwd": cwd,
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "In src/."}],
                },
            },
        ],
    )
    meta = _only(memory_repo, [log])
    assert (meta.project, meta.cwd) == ("widget", cwd)
    text = (memory_repo.root / import_files(memory_repo, [log]).skipped_duplicates[0]).read_text()
    assert "\nproject: widget\n" in text


def _codex_log(folder: Path, sid: str, cwd: str, remote: str) -> Path:
    """A Codex rollout whose session_meta gives CWD and the REMOTE of its repository."""
    return jsonl(
        folder / f"rollout-2026-03-01T10-00-00-{sid}.jsonl",
        [
            {
                "type": "session_meta",
                "timestamp": T0,
                "payload": {
                    "id": sid,
                    "timestamp": T0,
                    "cwd": cwd,
                    "git": {"repository_url": remote},
                },
            },
            {
                "type": "response_item",
                "timestamp": T0,
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "run the tests"}],
                },
            },
            {
                "type": "response_item",
                "timestamp": T1,
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "All green."}],
                },
            },
        ],
    )


def test_codex_session_meta(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    # The folder is not on this machine: the remote Codex recorded names the project.
    log = _codex_log(tmp_path, "cx1", "/nowhere/gadget", "https://github.com/acme/gadget.git")
    meta = _only(memory_repo, [log], "codex")
    assert (meta.project, meta.cwd) == ("gadget", "/nowhere/gadget")


def test_a_codex_session_in_a_checkout_here_takes_the_name_the_memory_filed_it_under(
    memory_repo: MemoryRepo, tmp_path: Path, git
) -> None:
    """Two codebases called `app` are two projects (core/project_names): the second
    checkout met, of foo/app, is `foo-app`. Codex's log names the repository, and that
    name won over the folder's, which is on this machine: foo/app's sessions were filed
    under `app`, acme's, while its hooks said `foo-app`. A folder that is here is asked;
    the repository a log names, only where it is not."""
    from autopoiesis.core.project import project_name

    acme = tmp_path / "work" / "app"
    foo = tmp_path / "oss" / "app"
    for repo, remote in (
        (acme, "git@github.com:acme/app.git"),
        (foo, "https://github.com/foo/app"),
    ):
        repo.mkdir(parents=True)
        git(repo, "init", "-q")
        git(repo, "remote", "add", "origin", remote)
    assert project_name(str(acme), memory_repo.root) == "app"
    assert project_name(str(foo), memory_repo.root) == "foo-app"
    log = _codex_log(tmp_path, "cx2", str(foo), "https://github.com/foo/app.git")
    assert _only(memory_repo, [log], "codex").project == "foo-app"


def test_a_remote_named_after_a_secret_names_no_project(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    # The repository's name is read for secrets before it becomes a lower-case slug (which
    # no key pattern finds): the folder names the project instead.
    key = "AKIAIOSFODNN7EXAMPL3"
    remote = f"https://github.com/acme/{key}.git"
    log = _codex_log(tmp_path, "cx9", "/Users/someone/code/gadget", remote)
    meta = _only(memory_repo, [log], "codex")
    assert meta.project == "gadget"
    files = [p for p in memory_repo.root.rglob("*") if ".git" not in p.parts and p.is_file()]
    assert not any(key.lower() in str(p).lower() for p in files)
    assert not any(key.lower().encode() in p.read_bytes().lower() for p in files)


def test_gemini_project_root(memory_repo: MemoryRepo, tmp_path: Path, project_repo: Path) -> None:
    folder = tmp_path / ".gemini" / "tmp" / "checkout"
    (folder / "chats").mkdir(parents=True)
    (folder / ".project_root").write_text(str(project_repo) + "\n")
    chat = folder / "chats" / "session-2026-03-01T10-00-g1.json"
    chat.write_text(
        json.dumps(
            {
                "sessionId": "g1",
                "projectHash": "abc",
                "startTime": T0,
                "messages": [
                    {"id": "1", "type": "user", "timestamp": T0, "content": "hello"},
                    {"id": "2", "type": "gemini", "timestamp": T1, "content": "hi there"},
                ],
            }
        )
    )
    meta = _only(memory_repo, [chat])
    assert (meta.project, meta.cwd) == ("widget", str(project_repo))


def test_cursor_project_folder(memory_repo: MemoryRepo, tmp_path: Path, git) -> None:
    # A '-' of the path's own (my-app) reads back as the folder that exists.
    repo = tmp_path / "code" / "my-app"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    encoded = str(repo).strip("/").replace("/", "-")
    folder = tmp_path / ".cursor" / "projects" / encoded / "agent-transcripts"
    folder.mkdir(parents=True)
    log = jsonl(
        folder / "c1.jsonl",
        [
            {"role": "user", "message": {"content": [{"type": "text", "text": "rename it"}]}},
            {"role": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}},
        ],
    )
    meta = _only(memory_repo, [log])
    assert (meta.project, meta.cwd) == ("my-app", str(repo))


def test_copilot_context(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    log = jsonl(
        tmp_path / "events.jsonl",
        [
            {
                "type": "session.start",
                "id": "e1",
                "timestamp": T0,
                "data": {
                    "sessionId": "cp1",
                    "startTime": T0,
                    "context": {"cwd": "/elsewhere/sprocket", "repository": "acme/Sprocket"},
                },
            },
            {"type": "user.message", "id": "e2", "timestamp": T0, "data": {"content": "hi"}},
            {
                "type": "assistant.message",
                "id": "e3",
                "timestamp": T1,
                "data": {"content": "hello"},
            },
        ],
    )
    meta = _only(memory_repo, [log])
    assert (meta.project, meta.cwd) == ("sprocket", "/elsewhere/sprocket")


def test_cline_environment_details(
    memory_repo: MemoryRepo, tmp_path: Path, project_repo: Path
) -> None:
    task = tmp_path / "saoudrizwan.claude-dev" / "tasks" / "1772359200000"
    task.mkdir(parents=True)
    env = f"<environment_details>\n# Current Working Directory ({project_repo}) Files\n"
    history = task / "api_conversation_history.json"
    history.write_text(
        json.dumps(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "<task>list files</task>"},
                        {"type": "text", "text": env + "README.md\n</environment_details>"},
                    ],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "One: README.md"}]},
            ]
        )
    )
    meta = _only(memory_repo, [history])
    assert (meta.project, meta.cwd) == ("widget", str(project_repo))


def test_opencode_directory_outside_any_repo_is_global(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    # A folder of this machine in no git repository: no project, whatever its name.
    plain = tmp_path / "just-a-folder"
    plain.mkdir()
    storage = opencode_storage(tmp_path / "storage", directory=str(plain))
    report = import_files(memory_repo, [storage])
    assert report.refused == []
    metas = [t.meta for t in transcripts(memory_repo, report.imported).values()]
    assert metas and all(m.cwd == str(plain) and m.project is None for m in metas)


def test_aider_history_in_its_project(
    memory_repo: MemoryRepo, project_repo: Path, tmp_path: Path
) -> None:
    history = project_repo / ".aider.chat.history.md"
    history.write_text(
        "\n# aider chat started at 2026-03-01 10:00:00\n\n#### add a test\n\nAdded one.\n"
    )
    meta = _only(memory_repo, [history], "aider")
    assert (meta.project, meta.cwd) == ("widget", str(project_repo))
    copy = tmp_path / "copied.md"
    copy.write_text(history.read_text())
    report = import_files(memory_repo, [copy], "aider")
    assert report.skipped_duplicates  # the same session: filed once, from its folder


def test_continue_workspace_directory(
    memory_repo: MemoryRepo, tmp_path: Path, project_repo: Path
) -> None:
    session = tmp_path / "sessions" / "c0ffee.json"
    session.parent.mkdir()
    uri = "file://" + str(project_repo).replace(" ", "%20")
    session.write_text(
        json.dumps(
            {
                "sessionId": "c0ffee",
                "title": "Tests",
                "workspaceDirectory": uri,
                "history": [
                    {"message": {"role": "user", "content": "add a test"}, "contextItems": []},
                    {"message": {"role": "assistant", "content": "Added."}, "contextItems": []},
                ],
            }
        )
    )
    meta = _only(memory_repo, [session], "continue")
    assert (meta.project, meta.cwd) == ("widget", str(project_repo))
