"""MemoryRepo: the one place that knows a memory repository's layout — its folders,
its special files, the category of every path and the name of every state file under
`.autopoiesis/` — how to write a file atomically, and how processes take turns.

Kept light on purpose (stdlib only): the git hooks import it on every commit.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import posixpath
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from autopoiesis.core.text import is_utf8
from autopoiesis.errors import NotAMemoryRepo, UnsafePathError

if TYPE_CHECKING:
    from autopoiesis.core.config import Config
    from autopoiesis.core.events import EventLog
    from autopoiesis.core.redact import Redactor

KNOWLEDGE_DIRS = ("identity", "memory", "journal", "projects", "people", "procedures", "reference")
CONVERSATIONS_DIR = "raw/conversations"
# The folders whose Markdown is memory content: searched, indexed, watched for freshness.
CONTENT_DIRS = ("knowledge", "topics", "raw", "archive")
# The same, narrowed to the files the index holds and search reads: of raw/, only its
# conversations (category_of names nothing else there).
INDEXED_DIRS = tuple(CONVERSATIONS_DIR if top == "raw" else top for top in CONTENT_DIRS)
# Team memory: a team's shared knowledge, a git submodule mounted at shared/<team>/ (its
# notes under shared/<team>/knowledge/, read by search and the compiler as the team's; the
# memory folders above never hold a submodule). memory/teams.py mounts and shares.
SHARED_DIR = "shared"
_GITMODULES_PATH = re.compile(r"^\s*path\s*=\s*(shared/[^/\s]+)\s*$", re.MULTILINE)
# The folders `autopoiesis commit` batches (raw/ is committed per session by capture).
KNOWLEDGE_COMMIT_DIRS = ("knowledge", "topics", "archive")
STATE_DIR = ".autopoiesis"  # gitignored: locks, logs, caches, ledgers
INDEX_DB = "memory.db"
MEMORY_FILE = "knowledge/memory/MEMORY.md"
ACTIVE_PROJECTS_FILE = "knowledge/projects/_active.md"


def project_context_file(slug: str) -> str:
    """The knowledge file of project SLUG: its decisions, conventions, commands, fixes."""
    return f"knowledge/projects/{slug}/context.md"


# knowledge/projects/<slug>/..., also as archived (archive/knowledge/projects/<slug>/...)
_PROJECT_KNOWLEDGE = re.compile(r"^(?:archive/)?knowledge/projects/([a-z0-9][a-z0-9-]*)/")


def knowledge_project(relpath: str) -> str | None:
    """The project whose knowledge RELPATH is (knowledge/projects/<slug>/..., also
    archived), or None: global knowledge (preferences, identity, people, reference, the
    projects' index) holds in every project."""
    m = _PROJECT_KNOWLEDGE.match(relpath)
    return m.group(1) if m else None


PEOPLE_INDEX_FILE = "knowledge/people/_index.md"
IDENTITY_DIR = "knowledge/identity"
IDENTITY_FILES = ("SOUL.md", "USER.md", "AGENTS.md", "TOOLS.md")
JOURNAL_DIR = "knowledge/journal"  # one file a day: YYYY-MM-DD.md
# Index files that list other files; they are kept by the writer, never archived.
INDEX_FILES = (MEMORY_FILE, ACTIVE_PROJECTS_FILE, PEOPLE_INDEX_FILE)

# Every state file under .autopoiesis/, by what it is (all gitignored, all rebuildable).
STATE_FILES = {
    "config_cache": ("cache", "config.json"),
    "local_config_cache": ("cache", "config-local.json"),
    "similarity_cache": ("cache", "similarity"),
    "topics_cache": ("cache", "topics.json"),
    "embed_cache": ("embed-cache.db",),
    "gate_log": ("watch", "gate-decisions.jsonl"),
    "watch_pending": ("watch", "pending.json"),
    "llm_dir": ("llm",),
    "llm_cache": ("llm", "cache.sqlite"),
    "llm_ledger": ("llm", "ledger.jsonl"),
    "llm_backoff": ("llm", "backoff.json"),
    "inclusions": ("compiler", "inclusions.json"),
    "lifecycle_log": ("logs", "lifecycle.jsonl"),
    "extract_state": ("lifecycle", "extract.sqlite"),
    "index_sync_log": ("logs", "index-sync.log"),
    "replay_dir": ("replay",),
    "worktrees_dir": ("worktrees",),
    "locks_dir": ("locks",),
    "session_index": ("cache", "session-index.json"),
    "verify_rewrites": ("verify", "rewrites.json"),
    "harness_log": ("logs", "harness.jsonl"),
    "harness_sessions": ("harness", "sessions.json"),
    "daemon_state": ("daemon", "state.json"),
    "daemon_status": ("daemon", "status.json"),
    "daemon_log": ("logs", "daemon.jsonl"),
    # the background daemon's own output (`daemon start`, launchd), and the detached
    # harness import's (integrations/sessions.py)
    "daemon_out": ("logs", "daemon.out"),
    "harness_import_log": ("logs", "harness-import.log"),
    # the running daemon's Unix socket, where it answers CLI calls warm (core/warm.py)
    "daemon_socket": ("daemon", "serve.sock"),
    "mcp_socket": ("daemon", "mcp.sock"),
    "session_watch": ("daemon", "sessions.json"),
    # transcripts waiting for the git lock to be committed (git/transcripts.py)
    "commit_queue": ("queue", "transcripts"),
    # the knowledge files the writer wrote and no commit has carried yet (knowledge/documents)
    "knowledge_written": ("lifecycle", "written.txt"),
    "sync_health": ("sync", "health.json"),  # the last sync that worked, and what stops one
}

_MiB = 1024 * 1024

# The state files that are logs appended to on every event, and how much of their latest
# rows each keeps: past that the file is renamed NAME.1 (the generation before dropped) by
# the next append, so a log holds between its cap and twice it, and its readers read both
# generations (core/events). Every writer takes its log from `MemoryRepo.state_log`, so a
# cap is decided here and nowhere else. Each keeps months of normal use, a row's size
# measured, and bounds what a reader that parses a whole log reads (`gate report`).
STATE_LOG_KEEP_BYTES = {
    # a GateDecision per candidate topic of a message (~420 bytes measured): some 40,000
    # decisions, two months of 600 a day (a heavy day with a dozen gated topics), twice
    # that with gate-decisions.jsonl.1; `gate report` and `gate feedback` read what is kept
    "gate_log": 16 * _MiB,
    # extraction's left-out changes, fall-backs and failures, prune's rejected compactions
    # (200 bytes to 2 KB a row, tens a day): well over half a year
    "lifecycle_log": 8 * _MiB,
    # a line a hook call (~207 bytes measured over 935 calls), thousands a week: some 50 MB
    # a year when it was never cut; 10 MiB is some 50,000 calls, weeks of them
    "harness_log": 10 * _MiB,
    # a line a job's start, end or failure (~200 bytes), a few thousand a day: two months
    "daemon_log": 20 * _MiB,
    # a line an LLM call (~250 bytes): some 130,000 calls, months of a gate asked on every
    # prompt; the daily budget reads today's rows across both generations (llm/ledger.py)
    "llm_ledger": 32 * _MiB,
    # the background index sync's output, appended by each sync it starts (a few lines a
    # commit): rotated when a sync is started past it (`MemoryRepo.open_state_log`)
    "index_sync_log": 4 * _MiB,
    # a daemon's start-up and its errors on stderr, a detached import's failures: rotated
    # when the next one is started past it
    "daemon_out": 4 * _MiB,
    "harness_import_log": 4 * _MiB,
}

# What this machine keeps about the repository in its git folder (`.git/autopoiesis/`,
# shared by linked worktrees), by what it is: no cache (nothing rebuilds it from the files,
# so deleting .autopoiesis/ keeps it), and nothing a clone, fetch, pull or commit carries.
GIT_STATE_FILES = {
    "approval": ("autopoiesis", "approved.json"),  # core/approval.py
    "verify_record": ("autopoiesis", "verify.json"),  # git/verify.py: what was verified
    # this machine's own settings, laid over memory-config.yaml (core/config_layers.py)
    "local_config": ("autopoiesis", "config.yaml"),
    # the name each checkout of this machine is filed under (core/project_names.py)
    "project_names": ("autopoiesis", "projects.json"),
    # a forget under way: what the history was before its rewrite (git/rewrite.py)
    "forget_under_way": ("autopoiesis", "forget.json"),
    # a forget's rule files for git-filter-repo, which hold the text forgotten: here, not
    # in the shared temporary folder, so that a forget killed mid-way leaves no copy of
    # it outside the repository and the next forget clears them (git/rewrite.py)
    "forget_rules": ("autopoiesis", "forget-rules"),
}


def git_state_path(root: str | os.PathLike[str], name: str) -> Path:
    """Where the repository at ROOT keeps GIT_STATE_FILES[NAME] (under .autopoiesis/ when
    its .git cannot be read)."""
    from autopoiesis.core.gitdirs import common_git_dir  # only when such a file is read

    gitdir = common_git_dir(Path(root) / ".git")
    return (gitdir if gitdir is not None else Path(root) / STATE_DIR).joinpath(
        *GIT_STATE_FILES[name]
    )


# Category of a repo-relative path, as search and the compiler name them
# (docs/design.md#index-schema).
_KNOWLEDGE_CATEGORY = {
    "identity": "identity",
    "memory": "memory",
    "journal": "journal",
    "projects": "project",
    "people": "person",
    "procedures": "procedure",
    "reference": "reference",
}
CATEGORIES = (
    "identity",
    "memory",
    "journal",
    "project",
    "person",
    "procedure",
    "reference",
    "conversation",
    "topic",
    "archive",
)


def category_of(relpath: str) -> str | None:
    """The category of a repo-relative POSIX path, or None when it is not memory content.
    A team's note (shared/<team>/knowledge/...) has the category its path in the team's
    repository has; nothing else of a team's repository is memory content."""
    parts = PurePosixPath(relpath).parts
    if not parts or not relpath.endswith(".md"):
        return None
    if parts[0] == SHARED_DIR:
        if len(parts) > 3 and parts[2] == "knowledge":
            return category_of("/".join(parts[2:]))
        return None
    if parts[0] == "raw" and len(parts) > 1 and parts[1] == "conversations":
        return "conversation"
    if parts[0] == "topics":
        return "topic"
    if parts[0] == "archive":
        return "archive"
    if parts[0] == "knowledge":
        if len(parts) > 2:
            return _KNOWLEDGE_CATEGORY.get(parts[1], "reference")
        return "reference"
    return None


def team_of(relpath: str) -> str | None:
    """The team whose shared memory holds RELPATH (`shared/<team>/...`), or None."""
    if relpath.startswith(SHARED_DIR + "/"):
        parts = relpath.split("/", 2)
        return parts[1] if len(parts) > 2 and parts[1] else None
    return None


def shared_mounts(root: Path) -> list[str]:
    """The teams mounted on this machine in the repository at ROOT (`shared/<team>`, as
    .gitmodules names them): those `is_mount` accepts."""
    try:
        text = (root / ".gitmodules").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return sorted(m for m in set(_GITMODULES_PATH.findall(text)) if is_mount(root, m))


def is_mount(root: Path, where: str) -> bool:
    """Whether WHERE (`shared/<team>`) is a team's memory checked out on this machine by
    `team add`: a folder reached through no link, whose `.git` file names this
    repository's own `modules/shared/<team>`. Nothing else is one: sync fetches, merges
    and pushes in each mount, and a pulled commit can put at shared/ a link to any
    repository of this machine (`shared/x -> ..`, the memory itself), or a .gitmodules
    entry for a folder git never checked out."""
    from autopoiesis.core.gitdirs import git_dir_at, gitdir_of

    mount = root / where
    try:
        for folder in (root / SHARED_DIR, mount):
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return False
        if not stat.S_ISREG(os.lstat(mount / ".git").st_mode):
            return False
    except OSError:
        return False
    ours, its = git_dir_at(root), gitdir_of(mount / ".git")
    if ours is None or its is None:
        return False
    return os.path.realpath(its) == os.path.realpath(ours / "modules" / where) and (
        os.path.isdir(its)
    )


# The most of a file's name its temporary file's name repeats (`.NAME.XXXXXXXX.tmp`): a
# name may be as long as the file system allows (NAME_MAX, 255 bytes), its temporary not.
_TEMP_NAME_CHARS = 64


def _temp_for(path: Path) -> tuple[int, str]:
    """A new temporary file beside PATH (its descriptor, its path)."""
    import tempfile

    return tempfile.mkstemp(
        prefix=f".{path.name[:_TEMP_NAME_CHARS]}.", suffix=".tmp", dir=path.parent
    )


NEW_FILE_MODE = 0o644


def _mode_for(path: Path, mode: int | None) -> int:
    """The mode a rewrite of PATH gets: MODE when given, else the mode PATH has now (a
    harness's private settings file stays 0600), else NEW_FILE_MODE for a new file."""
    if mode is not None:
        return mode
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return NEW_FILE_MODE


def links_on_the_way(root: Path, rels: Iterable[str]) -> list[str]:
    """Of RELS (paths relative to ROOT), each symbolic link on the way to one, a folder of
    it or the file itself, as "PATH -> TARGET": what writing the file would go through. A
    memory holds no links (docs/security.md#what-a-collaborator-can-change), and one a
    collaborator pushed may name any file of this machine (`.gitignore -> ~/.gitconfig`,
    a month's folder of transcripts -> a folder outside, or a dangling `SOUL.md ->
    ~/.bashrc`): every writer of a file a clone may hold asks this before it writes."""
    found: dict[str, str] = {}
    for rel in rels:
        path = root
        for part in PurePosixPath(rel).parts:
            path = path / part
            if path.is_symlink():
                found[path.relative_to(root).as_posix()] = os.readlink(path)
                break
            if not path.exists():
                break
    return [f"{rel} -> {target}" for rel, target in sorted(found.items())]


def link_in_the_way(root: Path, rel: str) -> str | None:
    """Why REL (relative to ROOT) may not be written: the symbolic link on the way to it
    (links_on_the_way), said for an error; None when there is none."""
    links = links_on_the_way(root, [rel])
    if not links:
        return None
    return (
        f"{'; '.join(links)} is a symbolic link, and a memory holds none (one pulled from a "
        "collaborator may name any folder of this machine); remove it (`git rm`; "
        "`autopoiesis verify` lists them)"
    )


def atomic_write(
    path: Path, data: str | bytes, *, mode: int | None = None, durable: bool = True
) -> None:
    """Write a whole file so a reader sees the old or the new content, never half of it.
    An existing file keeps its mode (unless MODE says otherwise), a new one gets 0644.
    DURABLE flushes it to the disk before it replaces the old one, so a power cut leaves
    one of the two as well. A cache rewritten on every prompt passes False: the flush
    waits for whatever else the disk is writing (1 ms on a quiet disk, 57 ms of a prompt
    hook while the index was written beside it), and after a power cut the cache may be
    empty, which its reader takes for "nothing recorded"."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = _temp_for(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path, mode))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_remedy(exc: OSError) -> str:
    """What to do about EXC, a write the file system refused, as a clause: free disk space
    for a full disk, make the folder writable for a read-only file system or a permission
    denied (where "free disk space" sent a person looking at a disk with room)."""
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        where = os.path.dirname(exc.filename) if isinstance(exc.filename, str) else ""
        return f"make {where or 'the memory folder'} writable (mounted read-write, yours to write)"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free disk space"
    return "check the path and its permissions, and the free disk space"


def unwritable(path: str | os.PathLike[str]) -> OSError | None:
    """Why PATH (a file, or one to be made in an existing folder) cannot be written: an
    OSError naming a read-only file system or a permission denied, as the CLI says any
    file it cannot write; None when it is neither. For a tool that says only that it
    failed (SQLite's "unable to open database file", git's "cannot lock ref")."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    try:
        if os.statvfs(target if os.path.exists(target) else folder).f_flag & os.ST_RDONLY:
            return OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
    except OSError as exc:  # the folder itself cannot be reached: that is the reason
        return exc
    for where in (folder, target):
        if os.path.exists(where) and not os.access(where, os.W_OK):
            return OSError(errno.EACCES, os.strerror(errno.EACCES), where)
    return None


def atomic_write_many(
    files: Sequence[tuple[Path, bytes]], *, mode: int | None = None
) -> list[OSError | None]:
    """atomic_write for many files at once, each whole or not at all: all are written to
    temporary files, flushed to disk together (fsyncs from a few threads, which the file
    system commits in shared journal transactions: a bulk import of hundreds of files
    does not pay one disk flush per file), then renamed into place. Returns, for each
    file, None or the OSError that kept it from being written (its temporary file gone)."""
    from concurrent.futures import ThreadPoolExecutor

    temps: list[str | None] = []
    errors: list[OSError | None] = []
    for path, data in files:
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = _temp_for(path)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, _mode_for(path, mode))
            temps.append(tmp)
            errors.append(None)
        except OSError as exc:  # a full disk: no temporary file is left behind
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            temps.append(None)
            errors.append(exc)

    def flush(tmp: str) -> None:
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    with ThreadPoolExecutor(max_workers=8) as pool:
        flushed = {tmp: pool.submit(flush, tmp) for tmp in temps if tmp is not None}
    for n, ((path, _), written) in enumerate(zip(files, temps)):
        if written is None:
            continue
        try:
            flushed[written].result()
            os.replace(written, path)
        except OSError as exc:
            errors[n] = exc
            with contextlib.suppress(FileNotFoundError):
                os.unlink(written)
    return errors


class FileLock:
    """An advisory flock on a file. Released by the kernel if the holder dies, which is
    what lets crash recovery tell a live capture from a dead one.

    A TRANSIENT lock's file is removed by the holder that releases it: a lock named for
    each session would otherwise leave a file behind for every session ever captured. Its
    taker checks, once the flock is its, that the file it locked is still the one at PATH
    (a holder that released it meanwhile removed it), and takes the new one otherwise."""

    def __init__(self, path: Path, *, transient: bool = False):
        self.path = path
        self.transient = transient
        self._fd: int | None = None

    def _open(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # never through a symlink: a holder writes its pid into the file and empties it
            # when it leaves, which would overwrite whatever file the link points to
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(
                    exc.errno,
                    "the lock file is a symbolic link, and a lock is never taken through "
                    "one; remove the link (a new file is made in its place)",
                    str(self.path),
                ) from exc
            raise

    def _still_at_path(self, fd: int) -> bool:
        """Whether the file FD locks is the one at PATH (a transient lock's file is removed
        by the holder that releases it, and a waiter may have locked the removed one)."""
        try:
            now = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)

    def acquire(self, timeout: float | None = None, poll: float = 0.005) -> bool:
        fd = self._open()
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = poll
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
            else:
                if not self.transient or self._still_at_path(fd):
                    self._fd = fd
                    return True
                os.close(fd)  # its holder removed it on release: the lock is free, take it
                fd = self._open()
                continue
            if deadline is not None and time.monotonic() >= deadline:
                os.close(fd)
                return False
            time.sleep(delay)
            delay = min(delay * 1.5, 0.05)

    def release(self) -> None:
        if self._fd is not None:
            # removed while still held, so that no taker locks it after this (and only when
            # it is still ours: one that replaced a file deleted by hand is its taker's)
            if self.transient and self._still_at_path(self._fd):
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def write_holder(self) -> None:
        """Write this process's id into the held lock's file, so that one refused the lock
        can say who holds it (holder())."""
        assert self._fd is not None, "the lock is not held"
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, str(os.getpid()).encode(), 0)

    def holder(self) -> int | None:
        """The process id the lock's holder wrote (write_holder); None when it wrote none."""
        try:
            return int(self.path.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return None

    @property
    def fd(self) -> int | None:
        """The descriptor of the held lock (None when not held): a holder may write who it is
        into the file, and a forked child must close (never unlock) it."""
        return self._fd

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class ReentrantFileLock:
    """A FileLock that the thread holding it may take again (a count, released when the
    outermost holder lets go). Threads and processes contend for it as for a FileLock.

    A FileLock is not reentrant: each take opens a descriptor of its own, and flock
    refuses a second descriptor of one process as it refuses another process, so a
    thread that took it again waited on itself for ever. The knowledge writer's lock is
    taken at several depths of one call (a sync's merge holds it while the pruner
    writes; `autopoiesis mv` holds it from its writes through its commit to the undo of
    a refused commit), and each depth would otherwise have to know whether a caller
    holds it already."""

    # (lock file, thread) -> [the FileLock held, how many takes hold it]
    _held: dict[tuple[Path, int], list] = {}

    def __init__(self, path: Path):
        self.path = path
        self._taken = 0  # the takes of this object not released yet

    def acquire(self, timeout: float | None = None, poll: float = 0.005) -> bool:
        key = (self.path, threading.get_ident())
        held = self._held.get(key)
        if held is None:
            lock = FileLock(self.path)
            if not lock.acquire(timeout, poll):
                return False
            held = self._held[key] = [lock, 0]
        held[1] += 1
        self._taken += 1
        return True

    def release(self) -> None:
        if not self._taken:
            return
        self._taken -= 1
        key = (self.path, threading.get_ident())
        held = self._held[key]
        held[1] -= 1
        if held[1] == 0:
            del self._held[key]
            held[0].release()

    @property
    def held(self) -> bool:
        """Whether this thread holds the lock (through this object or another)."""
        return (self.path, threading.get_ident()) in self._held

    def __enter__(self) -> ReentrantFileLock:
        if not self.acquire():  # pragma: no cover - acquire without a timeout waits
            raise OSError(f"could not take {self.path}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# a forked child holds none of its parent's takes (its thread may have the id of the
# parent's that held one): it takes the lock as any other process does
os.register_at_fork(after_in_child=ReentrantFileLock._held.clear)


PACKAGE_DIR = Path(__file__).resolve().parent.parent


def template_dir(name: str) -> Path:
    """A folder of the memory-repo template (raw, knowledge, topics, hooks): inside the
    wheel, else this checkout's top level."""
    packaged = PACKAGE_DIR / "_template" / name
    if packaged.is_dir():
        return packaged
    return PACKAGE_DIR.parent / name


# The template folders whose files `init` copies into a new memory as they are: knowledge a
# user or the extractors will write over (identity, MEMORY.md, the active projects) and the
# starter topics.
SHIPPED_DIRS = ("knowledge", "topics")


@functools.cache
def shipped_files() -> dict[str, bytes]:
    """Every Markdown file a new memory gets from the template, by its path in the memory
    ("knowledge/identity/SOUL.md"): its bytes as shipped. A file still equal to them holds
    nothing the memory learned (the compiler puts it last, search ranks it low)."""
    out: dict[str, bytes] = {}
    for name in SHIPPED_DIRS:
        top = template_dir(name)
        for src in sorted(top.rglob("*.md")):
            with contextlib.suppress(OSError):
                out[f"{name}/{src.relative_to(top).as_posix()}"] = src.read_bytes()
    return out


# What no name of a memory's file holds: a control character (C0 and C1, DEL: an escape
# sequence in a name sets the title of the terminal that lists it) or a line or paragraph
# separator (a line break in a name ends a line of every listing that shows it: a search
# result, a context's label, git's own). And how long one part may be.
ODD_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
NAME_MAX = 255


# What to do when no memory repository was found where a command looked.
FIND_A_MEMORY = (
    "Pass -C with your memory repository, set AUTOPOIESIS_REPO, or create one in a folder of "
    "its own: `autopoiesis init ~/memory`."
)


def in_git_folder(folder: Path) -> str | None:
    """Why FOLDER can hold no memory when it is a git folder or lies in one (a bare
    repository, a work tree's `.git`), and what to do instead; None when it is in none.
    A repository made there would hide the one git keeps there (`git ls-remote` of a
    bare repository would answer from the new one), so `init` refuses it and nothing
    suggests it."""
    from autopoiesis.core.gitdirs import enclosing_git_dir  # only when a folder was refused

    existing = Path(os.path.abspath(folder))  # a folder still to be made: its nearest one
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    found = enclosing_git_dir(existing.resolve())
    if found is None:
        return None
    gitdir, tree = found
    itself = existing == Path(os.path.abspath(folder)) and existing.resolve() == gitdir
    where = f"{folder} is" if itself else f"{folder} lies in"
    if tree is None:
        where = f"{folder} is" if itself else f"{folder} lies in {gitdir},"
        return (
            f"{where} a bare git repository: it has no work tree to hold a "
            "memory's files. Clone it and make the clone your memory: "
            f"`git clone {gitdir} DIR && autopoiesis init DIR`."
        )
    if MemoryRepo(tree).is_initialized():
        return (
            f"{where} the git folder of the memory repository at {tree}, not its work tree. "
            f"Use {tree}: pass -C {tree}."
        )
    return (
        f"{where} the git folder of the repository at {tree}, not its work tree; {tree} is "
        f"not a memory repository either. {FIND_A_MEMORY}"
    )


def _not_a_memory(root: Path, source: str) -> str:
    """Why ROOT (named by SOURCE) is no memory repository, and what to do: a folder that
    is not there is said to be missing; a git repository of other content (a code
    repository) is never offered `init`, which would add the memory's folders to it."""
    elsewhere = FIND_A_MEMORY
    if not root.exists():
        return f"{source}: no such folder ({root}). {elsewhere}"
    if not root.is_dir():
        return f"{source}: {root} is a file, not a folder. {elsewhere}"
    if (root / ".git").exists():
        return (
            f"{root} ({source}) is a git repository but not a memory repository (no raw/ and "
            f"knowledge/). {elsewhere}"
        )
    git_folder = in_git_folder(root)
    if git_folder is not None:
        return f"{source}: {git_folder}"
    from autopoiesis.core.gitdirs import git_entry

    holder = git_entry(root)
    if holder is not None:  # a folder of a work tree: init refuses it, so name the top
        top = holder[0]
        if MemoryRepo(top).is_initialized():
            return (
                f"{root} ({source}) is not a memory repository but a folder inside the one at "
                f"{top}. Pass -C {top}."
            )
        return (
            f"{root} ({source}) is a folder inside the git repository at {top}, which is not "
            f"a memory repository. {elsewhere}"
        )
    return (
        f"{root} ({source}) is not a memory repository (no raw/ and knowledge/). Run "
        f"`autopoiesis init {root}` to make it one, or pass -C with your memory repository."
    )


def is_git_name(name: str) -> bool:
    """Whether NAME is one git refuses as a part of a path in its trees: `.git` in any case,
    also as Windows and macOS read it (trailing dots or spaces, the short name `git~1`).
    Written through plumbing, a file under one made a commit that `git fsck` flags
    (hasDotgit), a remote refuses and no clone checks out."""
    return name.rstrip(". ").lower() in (".git", "git~1")


def is_inside(path: Path, root: Path) -> bool:
    """Whether the resolved PATH is ROOT or under it."""
    return path == root or root in path.parents


class MemoryRepo:
    """A memory repository on disk. `root` is its top folder.

    A plain class rather than a dataclass: the git hooks import this module on every
    commit, and `dataclasses` (with `inspect`) is a tenth of their start-up time."""

    def __init__(self, root: str | os.PathLike[str]):
        try:
            self.root = Path(root).expanduser().resolve()
        except RuntimeError:  # Python's "Symlink loop": a user's -C, not a fault of ours
            raise NotAMemoryRepo(
                f"{root} is a symbolic link that leads back to itself (a loop), so no folder "
                "is there; name the memory's folder itself (`ls -l` shows where each link "
                "points)."
            ) from None
        # is_link's folders: (device, inode) when last seen -> whether it resolved to itself
        self._real_folders: dict[Path, tuple[tuple[int, int], bool]] = {}

    def __repr__(self) -> str:
        return f"MemoryRepo({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryRepo) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    # ── finding the repo ──
    @classmethod
    def checked(
        cls, root: str | os.PathLike[str], source: str, *, must_exist: bool = True
    ) -> MemoryRepo:
        """The repo at ROOT (named by SOURCE in the error: "-C DIR", ...); with MUST_EXIST,
        NotAMemoryRepo when ROOT holds no memory repository. git.locate.locate_repo finds ROOT."""
        repo = cls(Path(root).expanduser())
        if must_exist and not repo.is_initialized():
            raise NotAMemoryRepo(_not_a_memory(repo.root, source))
        return repo

    def is_initialized(self) -> bool:
        """Whether ROOT holds a memory: raw/ and knowledge/, or knowledge/ and the config in
        a sparse checkout that leaves raw/ out (a sub-agent's checkout, docs/subagents.md:
        no transcripts, and yet its harness and the CLI run there)."""
        if not (self.root / "knowledge").is_dir():
            return False
        if (self.root / "raw").is_dir():
            return True
        from autopoiesis.core.config import CONFIG_FILENAME
        from autopoiesis.core.gitdirs import is_sparse_checkout

        return (self.root / CONFIG_FILENAME).is_file() and is_sparse_checkout(self.root)

    # ── paths ──
    @property
    def conversations_dir(self) -> Path:
        return self.root / "raw" / "conversations"

    @property
    def knowledge_dir(self) -> Path:
        return self.root / "knowledge"

    @property
    def topics_dir(self) -> Path:
        return self.root / "topics"

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_DB

    @property
    def memory_file(self) -> Path:
        return self.root / MEMORY_FILE

    def rel(self, path: str | os.PathLike[str]) -> str:
        """Repo-relative POSIX form of PATH (absolute or relative to the root)."""
        p = Path(path)
        if p.is_absolute():
            try:
                p = p.resolve().relative_to(self.root)
            except ValueError:
                if is_inside(Path(os.path.abspath(p)), self.root):
                    raise UnsafePathError(
                        f"{path} is, or lies under, a symbolic link out of the memory "
                        "repository: nothing is read or written through one (`autopoiesis "
                        "verify` names them; remove it with `git rm`)."
                    ) from None
                raise UnsafePathError(
                    f"{path} is outside the memory repository {self.root}."
                ) from None
        return p.as_posix()

    def typed(self, path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> str:
        """PATH as a person typed it on the command line, repo-relative: an absolute path
        as `rel` says; a relative one from the current folder CWD (default the process's)
        when that is a folder inside the repository, as git reads paths; from the root
        otherwise (a command run elsewhere with -C names repo paths)."""
        p = Path(path)
        if p.is_absolute():
            # as named when it lies in the repository as written: `rel` resolves it, and
            # a symbolic link named there became the file it points at (`mv` of a link
            # moved the note it points at); a relative path is not resolved either
            named = Path(os.path.normpath(p))
            if is_inside(named, self.root):
                return named.relative_to(self.root).as_posix()
            return self.rel(p)
        here = Path(cwd if cwd is not None else os.getcwd())
        try:
            inside = here.resolve().relative_to(self.root.resolve())
        except (OSError, ValueError):
            return p.as_posix()
        if not inside.parts:
            return p.as_posix()
        return posixpath.normpath((inside / p).as_posix())

    def resolve_inside(self, relpath: str | os.PathLike[str], *, under: str | None = None) -> Path:
        """The absolute path of RELPATH, refusing anything that escapes the repo (or UNDER),
        and a name no file of a memory can have: a control character (a line break would
        make a file named on two lines), or a part longer than the file system allows."""
        text = os.fspath(relpath)
        if "\x00" in text:
            raise UnsafePathError(f"Path {text!r} contains a NUL byte; use a plain relative path.")
        control = ODD_NAME.search(text)
        if control:
            raise UnsafePathError(
                f"Path {text!r} contains a control character ({control.group()!r}); a file name "
                "is one line of printable characters."
            )
        if not is_utf8(text):
            raise UnsafePathError(
                f"Path {ascii(text)[1:-1]} is not UTF-8 text; a memory's file names are UTF-8."
            )
        for part in text.split("/"):
            size = len(part.encode("utf-8"))
            if size > NAME_MAX:
                raise UnsafePathError(
                    f"The name {part[:40]}… is {size} bytes; a file name is at most {NAME_MAX} "
                    "bytes (UTF-8). Use a shorter one."
                )
        p = Path(text)
        full = (p if p.is_absolute() else self.root / p).resolve()
        base = (self.root / under).resolve() if under else self.root
        if not is_inside(full, base):
            where = f"{under}/ of the memory repository" if under else "the memory repository"
            named = Path(os.path.normpath(p if p.is_absolute() else self.root / p))
            links = (
                links_on_the_way(self.root, [named.relative_to(self.root).as_posix()])
                if is_inside(named, base)  # as written it is inside: a link leads out
                else []
            )
            if links:
                raise UnsafePathError(
                    f"{relpath} lies through a symbolic link ({'; '.join(links)}), and nothing "
                    "is read or written through one: remove it with `git rm` (`autopoiesis "
                    "verify` lists them)."
                )
            raise UnsafePathError(f"{relpath} is outside {where} ({base}); use a path inside it.")
        named_git = [part for part in full.relative_to(self.root).parts if is_git_name(part)]
        if named_git:
            raise UnsafePathError(
                f"{relpath} names a folder or file {named_git[0]!r}: git keeps its own files "
                "under that name and stores no other there (a commit that held one could not "
                "be pushed or checked out). Use another name."
            )
        return full

    def category(self, path: str | os.PathLike[str]) -> str | None:
        return category_of(self.rel(path))

    # ── state and locks ──
    def state_path(self, *parts: str) -> Path:
        """A path under .autopoiesis/ (its parent folder created)."""
        path = self.state_dir.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def state_file(self, name: str, *, create: bool = True) -> Path:
        """The state file NAME of STATE_FILES (its parent folder created, unless CREATE is
        False: a reader that only looks must not make folders)."""
        if not create:
            return self.state_dir.joinpath(*STATE_FILES[name])
        return self.state_path(*STATE_FILES[name])

    def state_log(self, name: str, *, redact: Callable[[str], str] | None = None) -> EventLog:
        """The JSON-lines log NAME of STATE_FILES, bounded by its STATE_LOG_KEEP_BYTES (REDACT,
        when given, applied to every string written)."""
        from autopoiesis.core.events import EventLog  # not on the git hooks' light path

        return EventLog(self.state_file(name), redact=redact, keep_bytes=STATE_LOG_KEEP_BYTES[name])

    def open_state_log(self, name: str) -> BinaryIO:
        """The plain-text log NAME of STATE_FILES opened to append a process's output to,
        renamed NAME.1 first when past its STATE_LOG_KEEP_BYTES (as `state_log` rotates)."""
        from autopoiesis.core.events import open_for_append

        return os.fdopen(open_for_append(self.state_file(name), STATE_LOG_KEEP_BYTES[name]), "ab")

    def session_lock_path(self, session_id: str) -> Path:
        return self.state_path("locks", f"session-{session_id}.lock")

    def lock(self, name: str) -> FileLock:
        """A named lock of this memory repo (e.g. 'git' serialises commits)."""
        return FileLock(self.state_path("locks", f"{name}.lock"))

    def writer_lock(self) -> ReentrantFileLock:
        """The knowledge writer's lock: whoever writes knowledge files holds it from its
        first write to its commit (`KnowledgeWriter.batch`, `KnowledgeWriter.commit`), and
        a merge holds it while git rewrites them. Reentrant in its thread."""
        return ReentrantFileLock(self.state_path("locks", "knowledge-writer.lock"))

    @cached_property
    def config(self) -> Config:
        from autopoiesis.core.config import load_config

        return load_config(self.root)

    def private_patterns(self) -> list[str]:
        """The patterns of this memory's private paths (core/private.py)."""
        from autopoiesis.core.private import private_patterns

        return private_patterns(self.root, self.config.private.paths)

    def may_reach_model(self, relpath: str) -> bool:
        """Whether RELPATH may be shown to a model: not private, or let through by
        `private.model_paths` (core/private.py)."""
        from autopoiesis.core.private import may_reach_model

        return may_reach_model(relpath, self.private_patterns(), self.config.private.model_paths)

    def redactor(self) -> Redactor:
        """A fresh Redactor for this repo's settings (its counts start at zero): what every
        path to disk, git, memory.db and a remote model redacts through."""
        from autopoiesis.core.redact import redactor_from_config

        return redactor_from_config(self.config)

    def iter_markdown(self, *tops: str, below: bool = True) -> Iterator[Path]:
        """Markdown files under the given top-level folders (BELOW False: in them, not in
        their subfolders), in a stable order. Never a symbolic link, nor a file of a linked
        folder: a memory pulled from a collaborator may hold `knowledge/x.md ->
        ~/.aws/credentials`, and nothing reads through a link (`links` lists them)."""
        for top in tops or self.indexed_dirs():
            base = self.root / top
            if base.is_dir() and not base.is_symlink() and is_inside(base.resolve(), self.root):
                # rglob does not enter linked folders
                found = base.rglob("*.md") if below else base.glob("*.md")
                yield from sorted(p for p in found if not p.is_symlink() and p.is_file())

    def indexed_dirs(self) -> tuple[str, ...]:
        """INDEXED_DIRS and each team's notes (`shared/<team>/knowledge`)."""
        return INDEXED_DIRS + tuple(f"{m}/knowledge" for m in shared_mounts(self.root))

    def links(self, *tops: str) -> list[str]:
        """The symbolic links under the memory folders (repo-relative): never read, and
        refused at commit (git/hooks.py) and by `verify`."""
        out: list[str] = []
        for top in tops or CONTENT_DIRS:
            base = self.root / top
            if base.is_symlink():
                out.append(top)
            elif base.is_dir():
                out += [
                    p.relative_to(self.root).as_posix() for p in base.rglob("*") if p.is_symlink()
                ]
        return sorted(out)

    def is_link(self, relpath: str) -> bool:
        """Whether RELPATH is, or lies under, a symbolic link (or resolves outside the repo):
        such a file is not read."""
        full = self.root / relpath
        try:
            if full.is_symlink():
                return True
            # one resolve a folder, not a file (10,000 files, ~50 folders), again when the
            # folder is another one (a folder on the way replaced by a link changes it)
            folder = full.parent
            while not os.path.lexists(folder) and folder != self.root:
                folder = folder.parent  # a folder still to be made: its nearest existing one
            st = os.stat(folder)
            key = (st.st_dev, st.st_ino)
            seen = self._real_folders.get(folder)
            if seen is None or seen[0] != key:
                seen = self._real_folders[folder] = (key, folder.resolve() == folder)
            return not seen[1]
        except OSError:
            return True
