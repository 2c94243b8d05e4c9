"""Git plumbing, once: run a git command (`call`, `run`, `start`: every git that
autopoiesis spawns outside this module goes through them), read blobs through one
`cat-file --batch`, parse `status --porcelain=v2 -z` and `diff --name-status -z`, and list
what is not committed yet.

Standard library only, and no GitPython: the git hooks and the background index sync
run this on every commit. The records are small slotted classes rather than dataclasses
or NamedTuples for the same reason (the costs: docs/performance.md#small-imports-add-up).
Porcelain work (commits, tags,
branches, log) is MemoryGit's, in git.repo.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from autopoiesis.core.gitdirs import common_git_dir, git_dir_at, git_entry, is_sparse_checkout
from autopoiesis.core.paths import CONTENT_DIRS

ENCODING = ("utf-8", "surrogateescape")

# Every git this module runs: with core.quotePath off, git writes a path as it is, not
# quoted in C style with octal escapes ("knowledge/people/jos\303\251.md"), so a path
# read from any command's output (log --name-only, grep -l, diff --name-only) is the
# file's own name: one that matches a private pattern, opens, and links.
GIT = ("git", "-c", "core.quotePath=false")

# The git commands that talk to a remote, and what git says when their connection dropped
# midway for a reason a second try a moment later usually does not meet: the server (or
# a proxy before it) closed the connection without an answer or in the middle of one, or
# said it is briefly unavailable. A wrong address, refused credentials or a remote that
# went silent for the low-speed time are not among them: a second try would repeat them.
# Each of these commands is safe to repeat: fetch, ls-remote and clone only read (a
# failed clone removes what it made), and a push the remote already took is "up to date"
# the second time.
REMOTE_COMMANDS = frozenset({"fetch", "pull", "push", "ls-remote", "clone"})
TRANSIENT_REASONS = (
    "Empty reply from server",
    "Connection reset by peer",
    "the remote end hung up unexpectedly",
    "early EOF",
    "transfer closed with outstanding read data",
    "The requested URL returned error: 502",
    "The requested URL returned error: 503",
    "The requested URL returned error: 504",
)
REMOTE_RETRY_PAUSE = 1.0  # seconds before the second try


# The variables that tell a git command which repository it is in: git's own list (`git
# rev-parse --local-env-vars`), which git clears itself when it enters a submodule. The git
# that started this process may have set them: a hook gets GIT_INDEX_FILE (for a commit
# of some paths, a temporary index), a bare repository's or a worktree's hook GIT_DIR, and
# `git bisect run` and `git rebase --exec` export GIT_DIR. Inherited by a git that
# autopoiesis runs on the memory repo, they would send the memory's commits into that other
# repository.
LOCAL_ENV_VARS = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_CONFIG",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_DIR",
        "GIT_GRAFT_FILE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_OBJECT_DIRECTORY",
        "GIT_PREFIX",
        "GIT_REPLACE_REF_BASE",
        "GIT_SHALLOW_FILE",
        "GIT_WORK_TREE",
    }
)


def repository_env(
    root: Path | str | None, env: dict[str, str] | None = None
) -> dict[str, str] | None:
    """ENV (None: this process's) for a git command in ROOT, without LOCAL_ENV_VARS unless
    they describe ROOT's own repository: autopoiesis run from a code repository's hook
    commits to the memory repo, not to the code repository, while the memory repo's own
    pre-commit hook still reads the index git is committing. None when ENV is None and
    nothing is left out (the common case: no such variable is set)."""
    source = os.environ if env is None else env
    if not _foreign_vars(source, root):
        return env
    return {k: v for k, v in source.items() if k not in LOCAL_ENV_VARS}


def pinned_repository_vars(root: Path | str) -> dict[str, str]:
    """For a git whose environment cannot be pruned (GitPython's copies this process's
    whole): ROOT's own values of the repository variables set here that do not describe
    ROOT (those `repository_env` leaves out), so that git still finds ROOT's repository,
    objects and index. Empty in the common case."""
    if not _foreign_vars(os.environ, root):
        return {}
    top = Path(root)
    git_dir = git_dir_at(top) or top / ".git"
    common = common_git_dir(top / ".git") or git_dir
    own = {
        "GIT_DIR": git_dir,
        "GIT_WORK_TREE": top,
        "GIT_INDEX_FILE": git_dir / "index",
        "GIT_OBJECT_DIRECTORY": common / "objects",
        "GIT_COMMON_DIR": common,
    }
    return {name: str(value) for name, value in own.items() if name in os.environ}


def _foreign_vars(env: Mapping[str, str], root: Path | str | None) -> bool:
    """Whether ENV holds LOCAL_ENV_VARS that do not describe ROOT's repository."""
    if not LOCAL_ENV_VARS.intersection(env):
        return False
    return root is None or not _describes(env, Path(root))


def _describes(env: Mapping[str, str], root: Path) -> bool:
    """Whether ENV's git variables are those of ROOT's repository: the git folder GIT_DIR
    names, or else the one of the repository this process's folder is in (git runs a hook
    in its repository's top folder), is ROOT's."""
    ours = git_dir_at(root)
    try:
        here = Path.cwd()
    except OSError:  # this process's folder was removed: nobody's hook
        return False
    if env.get("GIT_DIR"):
        theirs: Path | None = here / env["GIT_DIR"]
    else:
        found = git_entry(here)
        theirs = git_dir_at(found[0]) if found else None
    return (
        ours is not None
        and theirs is not None
        and os.path.realpath(theirs) == os.path.realpath(ours)
    )


def is_transient(reason: str) -> bool:
    """Whether git's REASON for a failed remote command is a dropped connection worth one
    more try (TRANSIENT_REASONS)."""
    return any(r in reason for r in TRANSIENT_REASONS)


def _subcommand(args: Sequence[str]) -> str:
    """The git command in ARGS, after git's own options (`-c NAME=VALUE`, `-C DIR`, ...)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-c", "-C") else 1
    return args[i] if i < len(args) else ""


class GitCommandError(Exception):
    """A git command exited non-zero (internal: callers turn it into a user-facing error)."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str):
        super().__init__(f"git {' '.join(args)} exited {returncode}: {stderr.strip()}")
        self.returncode = returncode
        self.stderr = stderr


@overload
def call(
    root: Path | str | None,
    *args: str,
    input: str | None = None,
    text: Literal[True],
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    optional_locks: bool = True,
    stdin_devnull: bool = False,
) -> subprocess.CompletedProcess[str]: ...
@overload
def call(
    root: Path | str | None,
    *args: str,
    input: bytes | None = None,
    text: Literal[False] = False,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    optional_locks: bool = True,
    stdin_devnull: bool = False,
) -> subprocess.CompletedProcess[bytes]: ...
def call(
    root: Path | str | None,
    *args: str,
    input: str | bytes | None = None,
    text: bool = False,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    optional_locks: bool = True,
    stdin_devnull: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """The one place that runs `git ARGS` to completion, in ROOT (None: the current
    folder), with ENV (None: this process's) as `repository_env` leaves it: the finished
    process, whatever its exit status, output captured (TEXT: as str with universal
    newlines, UTF-8 with surrogateescape: git echoes a path or a ref the user gave, and a
    byte of it that is not UTF-8 must not raise). TIMEOUT (seconds) raises
    subprocess.TimeoutExpired; STDIN_DEVNULL gives git an empty stdin instead of this
    process's when there is no INPUT. With OPTIONAL_LOCKS False, git takes no lock it can
    do without (a background reader must never hold .git/index.lock).

    A command that talks to a remote (REMOTE_COMMANDS) whose connection dropped midway
    (`is_transient`) runs once more after REMOTE_RETRY_PAUSE, so an unattended sync does
    not fail on one hiccup of the network; TIMEOUT bounds each try."""
    cmd = [*GIT] + ([] if optional_locks else ["--no-optional-locks"]) + list(args)
    stdin = subprocess.DEVNULL if stdin_devnull and input is None else None
    env = repository_env(root, env)
    tries = 2 if _subcommand(args) in REMOTE_COMMANDS else 1
    for attempt in range(tries):
        proc = subprocess.run(
            cmd,
            cwd=root,
            capture_output=True,
            input=input,
            stdin=stdin,
            encoding=ENCODING[0] if text else None,
            errors=ENCODING[1] if text else None,
            env=env,
            timeout=timeout,
            check=False,
        )
        err = proc.stderr if text else proc.stderr.decode(*ENCODING)
        if proc.returncode == 0 or attempt + 1 == tries or not is_transient(err):
            break
        time.sleep(REMOTE_RETRY_PAUSE)
    return proc


def start(
    root: Path | str, *args: str, env: dict[str, str] | None = None, stdin_pipe: bool = False
) -> subprocess.Popen[str]:
    """Start `git ARGS` in ROOT and return it running (text mode, stdout and stderr piped;
    stdin a pipe with STDIN_PIPE, else empty): for a caller that must know git's pid
    while it runs (the record of who holds .git/index.lock)."""
    stdin = subprocess.PIPE if stdin_pipe else subprocess.DEVNULL
    env = repository_env(root, env)
    return subprocess.Popen(
        [*GIT, *args],
        cwd=root,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding=ENCODING[0],
        errors=ENCODING[1],
        env=env,
    )


def run(
    root: Path | str,
    *args: str,
    input: bytes | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
    optional_locks: bool = True,
) -> bytes:
    """Stdout of `git ARGS` in ROOT, as bytes; a non-zero exit raises GitCommandError
    unless CHECK is False. OPTIONAL_LOCKS: as for `call`."""
    proc = call(root, *args, input=input, env=env, optional_locks=optional_locks)
    if check and proc.returncode != 0:
        raise GitCommandError(args, proc.returncode, proc.stderr.decode(*ENCODING))
    return proc.stdout


def decode(data: bytes) -> str:
    return data.decode(*ENCODING)


def split_z(data: bytes) -> list[str]:
    """The NUL-separated fields of `-z` output, empty ones dropped."""
    return [p for p in decode(data).split("\x00") if p]


def cat_file_batch(root: Path | str, objects: Sequence[str]) -> dict[str, bytes | None]:
    """The content of each object name (`:path` for the staged blob, `REV:path`, a SHA),
    read in one `git cat-file --batch` call; None for a missing object."""
    if not objects:
        return {}
    request = "".join(f"{o}\n" for o in objects).encode(*ENCODING)
    out = run(root, "cat-file", "--batch", input=request)
    blobs: dict[str, bytes | None] = {}
    pos = 0
    for name in objects:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        pos = nl + 1
        if len(header) < 3 or header[-1] == b"missing" or not header[2].isdigit():
            blobs[name] = None
            continue
        size = int(header[2])
        blobs[name] = out[pos : pos + size]
        pos += size + 1
    return blobs


class Change:
    """One entry of `diff --name-status`: status letter, path, old path (renames, copies)."""

    __slots__ = ("status", "path", "old_path")

    def __init__(self, status: str, path: str, old_path: str | None = None):
        self.status, self.path, self.old_path = status, path, old_path

    def __repr__(self) -> str:
        return f"Change({self.status!r}, {self.path!r}, {self.old_path!r})"


def parse_name_status(data: bytes) -> list[Change]:
    """Parse `git diff --name-status -z` (with or without rename detection)."""
    parts = decode(data).split("\x00")
    out: list[Change] = []
    i = 0
    while i < len(parts) - 1:
        status = parts[i]
        if not status:
            i += 1
            continue
        if status[0] in "RC":
            out.append(Change(status[0], parts[i + 2], parts[i + 1]))
            i += 3
        else:
            out.append(Change(status[0], parts[i + 1]))
            i += 2
    return out


def staged_changes(root: Path | str, *, renames: bool = True) -> list[Change]:
    """What is staged against HEAD (against the empty tree before the first commit)."""
    args = ["diff", "--cached", "--name-status", "-z"] + (["-M"] if renames else ["--no-renames"])
    return parse_name_status(run(root, *args))


class StatusEntry:
    """One path of `status --porcelain=v2`: index (X) and work-tree (Y) states, or '?' for
    untracked."""

    __slots__ = ("path", "index", "worktree")

    def __init__(self, path: str, index: str, worktree: str):
        self.path, self.index, self.worktree = path, index, worktree

    @property
    def untracked(self) -> bool:
        return self.index == "?"


class Status:
    """HEAD ("" before the first commit) and the entries; OK is False when git could not
    be asked (not a repo, git missing). STARTED_NS: time.time_ns() before git looked."""

    __slots__ = ("head", "entries", "ok", "started_ns")

    def __init__(
        self, head: str, entries: tuple[StatusEntry, ...], ok: bool = True, started_ns: int = 0
    ):
        self.head, self.entries, self.ok, self.started_ns = head, entries, ok, started_ns


def _status_command(paths: Iterable[str]) -> list[str]:
    return [
        *GIT,
        "--no-optional-locks",
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=all",
        "--",
        *paths,
    ]


# `git status` runs started ahead by status_ahead, by (real root, paths): (start ns, start, process)
_prefetched: dict[tuple[str, tuple[str, ...]], tuple[int, float, subprocess.Popen[bytes]]] = {}
PREFETCH_MAX_AGE = 2.0  # seconds: an older prefetched answer is dropped and git asked again


@contextlib.contextmanager
def status_ahead(root: Path | str, paths: Iterable[str] = CONTENT_DIRS) -> Iterator[None]:
    """Start the `git status` that the next status(ROOT, PATHS) inside this block reads:
    a one-shot command (one `search`, one `compile`, a prompt hook) starts git before its
    imports, and git runs on another core meanwhile (docs/performance.md#the-git-status-prefetch).
    Its answer is what the tree was when it started, the same guarantee as asking later
    (status() records that start time); it is read at most once, within PREFETCH_MAX_AGE,
    and one nobody read is stopped when the block ends."""
    key = (os.path.realpath(root), tuple(paths))
    _drop(key)
    try:
        proc = subprocess.Popen(
            _status_command(key[1]),
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=repository_env(root),
        )
    except OSError:
        proc = None  # status() asks again, and reports what went wrong
    if proc is not None:
        _prefetched[key] = (time.time_ns(), time.monotonic(), proc)
    try:
        yield
    finally:
        _drop(key)


def _drop(key: tuple[str, tuple[str, ...]]) -> None:
    entry = _prefetched.pop(key, None)
    if entry is not None:
        entry[2].kill()
        entry[2].communicate()


def _take_prefetched(root: Path | str, paths: tuple[str, ...]) -> Status | None:
    if not _prefetched:
        return None
    key = (os.path.realpath(root), paths)
    entry = _prefetched.get(key)
    if entry is None:
        return None
    started_ns, started, proc = entry
    if time.monotonic() - started > PREFETCH_MAX_AGE:
        _drop(key)
        return None
    del _prefetched[key]
    out, _ = proc.communicate()
    if proc.returncode != 0:
        return Status("", (), ok=False, started_ns=started_ns)
    parsed = parse_status(out)
    parsed.started_ns = started_ns
    return parsed


def status(root: Path | str, paths: Iterable[str] = CONTENT_DIRS) -> Status:
    """HEAD and every path under PATHS that differs from it, from one `git status` call
    that takes no lock (`--no-optional-locks`); the one status_ahead started, if any."""
    paths = tuple(paths)
    prefetched = _take_prefetched(root, paths)
    if prefetched is not None:
        return prefetched
    started_ns = time.time_ns()
    try:
        proc = subprocess.run(
            _status_command(paths),
            cwd=root,
            capture_output=True,
            check=False,
            env=repository_env(root),
        )
    except (FileNotFoundError, NotADirectoryError):
        return Status("", (), ok=False, started_ns=started_ns)
    if proc.returncode != 0:
        return Status("", (), ok=False, started_ns=started_ns)
    parsed = parse_status(proc.stdout)
    parsed.started_ns = started_ns
    return parsed


def parse_status(data: bytes) -> Status:
    head = ""
    entries: list[StatusEntry] = []
    for entry in decode(data).split("\x00"):
        if not entry:
            continue
        kind = entry[0]
        if kind == "#":
            if entry.startswith("# branch.oid "):
                oid = entry[len("# branch.oid ") :].strip()
                head = "" if oid == "(initial)" else oid
            continue
        if kind == "1":
            fields = entry.split(" ", 8)
            entries.append(StatusEntry(fields[8], fields[1][0], fields[1][1]))
        elif kind == "u":
            fields = entry.split(" ", 10)
            entries.append(StatusEntry(fields[10], fields[1][0], fields[1][1]))
        elif kind == "?":
            entries.append(StatusEntry(entry[2:], "?", "?"))
        elif kind == "2":  # not emitted with --no-renames; parsed for safety
            fields = entry.split(" ", 9)
            entries.append(StatusEntry(fields[9].split("\t")[0], fields[1][0], fields[1][1]))
    return Status(head, tuple(entries))


def uncommitted(root: Path | str, paths: Iterable[str]) -> list[str]:
    """Files under PATHS that exist in the work tree or the index but not in a commit:
    untracked ones, ones staged as added, and ones marked intent-to-add (`git add -N`, what
    a commit killed half-way leaves). The one answer to "which transcripts were written but
    never committed" (capture recovery, commit, doctor)."""
    st = status(root, paths)
    return sorted(
        e.path
        for e in st.entries
        if e.untracked or e.index == "A" or (e.index == "." and e.worktree == "A")
    )


def changed_between(
    root: Path | str, old: str, new: str, paths: Iterable[str] = CONTENT_DIRS
) -> list[str] | None:
    """Paths that differ between two commits (renames as delete + add), or None when git
    cannot tell (an unknown commit after a gc, a shallow clone)."""
    if not old or not new:
        return None
    proc = call(root, "diff", "--name-only", "-z", "--no-renames", old, new, "--", *paths)
    if proc.returncode != 0:
        return None
    return split_z(proc.stdout)


def ls_tree(root: Path | str, rev: str, paths: Sequence[str]) -> set[str]:
    """The paths of PATHS that REV holds (empty when REV does not exist yet)."""
    if not paths:
        return set()
    proc = call(root, "ls-tree", "-r", "--name-only", "-z", rev, "--", *paths)
    if proc.returncode != 0:
        return set()
    return set(split_z(proc.stdout))


def left_out_of_checkout(root: Path | str, relpath: str) -> bytes | None:
    """What the index holds for RELPATH when ROOT is a sparse checkout (a sub-agent's) that
    leaves it out: the file is not on disk there, yet it is the memory's; None when ROOT
    is no sparse checkout or RELPATH is no file of it."""
    if not is_sparse_checkout(Path(root)):
        return None
    proc = call(root, "cat-file", "blob", f":{relpath}")
    return proc.stdout if proc.returncode == 0 else None


def toplevel(start: Path | str) -> Path | None:
    """The top folder of the git work tree holding START, or None."""
    try:
        proc = call(start, "rev-parse", "--show-toplevel", text=True)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return Path(proc.stdout.strip()) if proc.returncode == 0 else None


def git_dir(root: Path | str) -> Path:
    """The repository's git folder (absolute), also for a worktree."""
    out = decode(run(root, "rev-parse", "--absolute-git-dir")).strip()
    return Path(out)
