"""Shared pytest fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import pytest
from hypothesis import settings

from autopoiesis.testing.openai_server import OpenAIServer

# No per-example deadline for any property test: Hypothesis's default (200 ms) is a
# wall-clock limit, and a busy machine (or an example's first import of PyYAML) exceeds it
# and fails a test whose property holds. Speed is bench/'s.
settings.register_profile("autopoiesis", deadline=None)
settings.load_profile("autopoiesis")


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A real loopback server speaking the OpenAI API (autopoiesis.testing.openai_server),
    fresh for each test. Script it with `.enqueue(...)`, point a client at `.base_url`.

    Imports `openai` first: the client imports it on its first call, inside that call's
    deadline (~1 s, 3 s and more on a busy machine), so a test's deadline would measure
    the import. Imported here, it measures the call; the speed of the import is bench/'s."""
    import openai  # noqa: F401

    server = OpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"


def _test_identity(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment every test runs git in: its own HOME, no system config, one author."""
    home = tmp_path_factory.getbasetemp() / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test Author",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }


@pytest.fixture(autouse=True)
def _git_identity(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tests never read the developer's git config (CI machines may have none)."""
    for key, value in _test_identity(tmp_path_factory).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AUTOPOIESIS_REPO", raising=False)


@pytest.fixture(scope="session")
def _memory_repo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `init_memory_repo` per session (~0.3 s each, seconds under load); tests get copies.

    A copy is the same repo: .git/config and the hooks name the python that runs them, not
    the repo's path, and nothing under .autopoiesis/ names it either. The git identity is
    set here too: a session fixture is made before the function-scoped `_git_identity`."""
    from autopoiesis.memory.initialize import init_memory_repo

    with pytest.MonkeyPatch.context() as mp:
        for key, value in _test_identity(tmp_path_factory).items():
            mp.setenv(key, value)
        mp.delenv("AUTOPOIESIS_REPO", raising=False)
        report = init_memory_repo(tmp_path_factory.mktemp("template") / "memory", build_index=False)
    return report.root


@pytest.fixture
def memory_repo(
    tmp_path: Path, _memory_repo_template: Path
):  # -> autopoiesis.core.paths.MemoryRepo
    """A real, initialised memory repo (git repo, template, hooks, initial commit) in tmp_path:
    a copy of the session's template (tests/memory/test_initialize.py checks init itself).

    Without a search index: with one, every commit in a test would start a background
    index sync. Tests of the index build theirs (test_initialize checks that init does)."""
    from autopoiesis.core.paths import MemoryRepo

    root = tmp_path / "memory"
    shutil.copytree(_memory_repo_template, root, symlinks=True)
    return MemoryRepo(root.resolve())


@pytest.fixture(scope="session")
def _built_repos() -> dict[str, tuple[Path, Any]]:
    return {}


class BuiltRepo(Protocol):
    """The callable the `built_repo` fixture returns (see there)."""

    def __call__(self, key: str, build: Callable[[Any], Any]) -> tuple[Any, Any]: ...


@pytest.fixture
def built_repo(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    _memory_repo_template: Path,
    _built_repos: dict[str, tuple[Path, Any]],
) -> BuiltRepo:
    """A memory repo in a state that takes seconds to build, built once per session and
    copied for each test: `built_repo(key, build)` -> (MemoryRepo in tmp_path/"memory",
    what `build(repo)` returned). KEY names the state (one build per key and session);
    BUILD must finish all its work before it returns (no background index sync left
    running) and return nothing that names the repo's path (relative paths are fine)."""
    from autopoiesis.core.paths import MemoryRepo

    def built(key: str, build: Callable[[Any], Any]) -> tuple[Any, Any]:
        if key not in _built_repos:
            root = tmp_path_factory.mktemp(f"built-{key}") / "memory"
            shutil.copytree(_memory_repo_template, root, symlinks=True)
            _built_repos[key] = (root, build(MemoryRepo(root.resolve())))
        root, value = _built_repos[key]
        copy = tmp_path / "memory"
        shutil.copytree(root, copy, symlinks=True)
        return MemoryRepo(copy.resolve()), value

    return built


@pytest.fixture
def shared_data() -> Path:
    """../shared/data, or a skip with the reason when this checkout has no shared/ beside it."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (an outside clone has no ../shared)")
    return SHARED_DATA


class Git(Protocol):
    """The callable the `git` fixture returns (see there)."""

    def __call__(
        self,
        where: Any,
        *args: str,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]: ...


def _run_git(
    where: Any,
    *args: str,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    root = where if isinstance(where, (str, os.PathLike)) else where.root  # a path, or a MemoryRepo
    return subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=check,
        input=input,
        env={**os.environ, **(env or {})},
    )


def all_objects(root: Path) -> bytes:
    """Every object of the repository at ROOT, reachable or not (reflogs and dangling
    objects included), as `git cat-file --batch` prints them: where a secret must not be."""
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout


@pytest.fixture
def git() -> Git:
    """Run git in a folder: `git(where, *args, check=True, env=None, input=None)`.

    `where` is a Path (or str) or a MemoryRepo (its `.root` is used). Text mode, stdout and
    stderr captured; returns the subprocess.CompletedProcess[str] — take `.stdout` for the
    text. `check=True` raises CalledProcessError on a non-zero exit; pass `check=False` to
    look at `.returncode`/`.stderr` yourself (e.g. a commit a hook rejects). `env` is laid
    over os.environ as it is at call time (so the `_git_identity` settings apply), `input`
    is fed to stdin."""
    return _run_git


@pytest.fixture
def commit_all(git: Git) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Stage everything and commit: `commit_all(where, message="test", check=True)`.

    Runs `git add -A` (always checked) then `git commit -m message` in `where` (a Path or a
    MemoryRepo), and returns the commit's CompletedProcess[str]; `check=False` lets a test
    see a commit the hooks reject."""

    def commit_all(
        where: Any, message: str = "test", *, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        git(where, "add", "-A")
        return git(where, "commit", "-m", message, check=check)

    return commit_all


class CliResult(NamedTuple):
    """What one `autopoiesis` call gave: (exit code, stdout, stderr), str or bytes as asked."""

    returncode: int
    stdout: Any
    stderr: Any


class Cli(Protocol):
    """The callable the `cli` fixture returns (see there)."""

    def __call__(
        self,
        *args: str,
        repo: Any = None,
        input: str | bytes | None = None,
        env: Mapping[str, str | None] | None = None,
        cwd: Any = None,
        text: bool = True,
        process: bool = False,
        check: bool = False,
        timeout: float = 120,
    ) -> CliResult: ...


def _exit_code(exc: SystemExit, stderr: Any) -> int:
    """The status a process gets for EXC (a message exits 1 after printing it, as Python does)."""
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=stderr)
    return 1


def _cli_in_process(
    argv: list[str], input: str | bytes | None, env: Mapping[str, str | None], cwd: Any
) -> tuple[int, bytes, bytes]:
    from click.testing import CliRunner

    from autopoiesis.cli import main

    before = os.getcwd()
    with CliRunner().isolation(input=input, env=env) as (out, err, _):
        try:
            if cwd is not None:
                os.chdir(cwd)
            main(argv)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc, sys.stderr)
        finally:
            os.chdir(before)
            sys.stdout.flush()
            sys.stderr.flush()
        return code, out.getvalue(), err.getvalue()


def _cli_process(
    argv: list[str],
    input: str | bytes | None,
    env: Mapping[str, str | None],
    cwd: Any,
    timeout: float,
) -> tuple[int, bytes, bytes]:
    # -P and PYTHONPATH: as the `autopoiesis` console script, which never imports from the
    # current folder, running this checkout (not whatever the virtualenv has installed)
    run_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])
        ),
    }
    for key, value in env.items():
        if value is None:
            run_env.pop(key, None)
        else:
            run_env[key] = value
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "autopoiesis", *argv],
        input=data,
        capture_output=True,
        env=run_env,
        cwd=cwd,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _run_cli(
    *args: str,
    repo: Any = None,
    input: str | bytes | None = None,
    env: Mapping[str, str | None] | None = None,
    cwd: Any = None,
    text: bool = True,
    process: bool = False,
    check: bool = False,
    timeout: float = 120,
) -> CliResult:
    argv = [
        *(
            ["-C", str(repo if isinstance(repo, (str, os.PathLike)) else repo.root)]
            if repo is not None
            else []
        ),
        *args,
    ]
    if process:
        code, out, err = _cli_process(argv, input, env or {}, cwd, timeout)
    else:
        code, out, err = _cli_in_process(argv, input, env or {}, cwd)
    if check and code != 0:
        raise AssertionError(
            f"autopoiesis {' '.join(argv)}: exit {code}: {err.decode(errors='replace')}"
        )
    if text:
        return CliResult(code, out.decode(errors="replace"), err.decode(errors="replace"))
    return CliResult(code, out, err)


@pytest.fixture
def cli() -> Cli:
    """Run the `autopoiesis` command: `cli(*args, repo=None, input=None, env=None, cwd=None,
    text=True, process=False, timeout=120)` -> CliResult(returncode, stdout, stderr).

    In-process by default: `autopoiesis.cli.main(args)` with stdin, stdout, stderr and the
    environment swapped for the call (click's CliRunner isolation), the exit status taken
    from its SystemExit; an exception the CLI does not turn into a message fails the test
    with its traceback. `process=True` runs `python -P -m autopoiesis` instead, for what
    needs a process: the light entry (`autopoiesis/__main__.py`: harness hooks, calls
    answered warm by the daemon), stdin streamed or closed, signals, a real exit status.
    `repo` (a Path or a MemoryRepo) adds `-C REPO`; `env` is laid over os.environ (a None
    value removes a variable); `text=False` returns bytes; `check=True` fails the test on a
    non-zero exit, with its stderr."""
    return _run_cli
