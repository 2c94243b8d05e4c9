"""Where a folder's git repository keeps its git folder, read from the `.git` entries
without running git: the nearest `.git` folder or file from a folder up, the folder a
`.git` file's `gitdir:` line names (a linked worktree, a submodule), and the common git
folder that holds the repository's config and objects.

Standard library only: the git runner, which the git hooks import on every commit, asks
it whose repository a caller's git variables describe.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

GITDIR_LINE = re.compile(r"^gitdir:\s*(.+?)\s*$", re.MULTILINE)


def git_entry(start: Path) -> tuple[Path, Path] | None:
    """(the top-level folder, its `.git` entry) of the nearest folder from START up that
    holds a `.git` folder or file."""
    folder = start
    while True:
        dot_git = folder / ".git"
        if dot_git.exists():
            return folder, dot_git
        if folder.parent == folder:
            return None
        folder = folder.parent


# git writes one `gitdir: PATH` line; a path past this is none it wrote
GITDIR_FILE_MAX = 8192
# A git folder's small files (config, HEAD, commondir, a ref) are a few KB: past this
# much, what is read is all that is taken
GIT_FILE_MAX = 1 << 20


def read_git_file(path: Path, limit: int = GIT_FILE_MAX) -> str | None:
    """The text of PATH, a file of a git folder (or a `.git` file), up to its first LIMIT
    bytes; None when it cannot be read or is no regular file. These are read in folders
    a hook or a log names, without running git: a `config`, `HEAD` or `.git` that is
    `/dev/zero` was read to the end of memory (past the hook's deadline, whose alarm a
    read in C does not stop), a FIFO would have kept the reader waiting for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO: no wait for a writer
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="replace")


def gitdir_of(dot_git: Path) -> Path | None:
    """The folder a `.git` file's `gitdir:` line names (relative to the file's folder);
    None when the file cannot be read, is no regular file or has no such line. Only its
    first GITDIR_FILE_MAX bytes are read (read_git_file)."""
    head = read_git_file(dot_git, GITDIR_FILE_MAX)
    match = GITDIR_LINE.search(head) if head is not None else None
    if match is None:
        return None
    gitdir = Path(match.group(1))
    return gitdir if gitdir.is_absolute() else dot_git.parent / gitdir


def git_dir_at(top: Path) -> Path | None:
    """The git folder of the repository whose top-level folder is TOP: its `.git` folder,
    or the folder its `.git` file names; None when TOP holds neither."""
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git
    return gitdir_of(dot_git) if dot_git.is_file() else None


def is_sparse_checkout(top: Path) -> bool:
    """Whether the repository whose top-level folder is TOP is a sparse checkout (a
    sub-agent's, docs/subagents.md): git's sparse-checkout patterns in its git folder."""
    gitdir = git_dir_at(top)
    return gitdir is not None and (gitdir / "info" / "sparse-checkout").is_file()


def common_git_dir(dot_git: Path) -> Path | None:
    """The git folder that holds the repository's config: `.git` itself, or for a `.git`
    file the folder its `gitdir:` names, or that folder's `commondir` (a linked worktree's
    gitdir is .git/worktrees/NAME, whose `commondir` file says `../..`)."""
    if dot_git.is_dir():
        return dot_git
    gitdir = gitdir_of(dot_git)
    if gitdir is None:
        return None
    common = (read_git_file(gitdir / "commondir") or "").strip()
    if not common:
        return Path(os.path.normpath(gitdir))
    common_path = Path(common)
    if not common_path.is_absolute():
        common_path = gitdir / common_path
    return Path(os.path.normpath(common_path))


def _is_git_dir(folder: Path) -> bool:
    """Whether FOLDER is a git folder, as git itself tells one: a HEAD file beside an
    objects/ and a refs/ folder."""
    return (
        (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()
    )


_CORE_WORKTREE = re.compile(r"^\s*worktree\s*=\s*(.+?)\s*$", re.IGNORECASE)
_SECTION = re.compile(r"^\s*\[\s*([^\]\s]+)")


def _core_worktree(gitdir: Path) -> Path | None:
    """The work tree GITDIR's config names (`core.worktree`, a submodule's git folder
    under .git/modules/ has one), relative to GITDIR; None when it names none."""
    lines = (read_git_file(gitdir / "config") or "").splitlines()
    section = ""
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            continue
        match = _CORE_WORKTREE.match(line)
        if section == "core" and match:
            tree = Path(match.group(1).strip('"'))
            return Path(os.path.normpath(tree if tree.is_absolute() else gitdir / tree))
    return None


def enclosing_git_dir(folder: Path) -> tuple[Path, Path | None] | None:
    """When FOLDER is a git folder or lies inside one (a bare repository, a `.git` folder,
    its refs/): (that git folder, the work tree it belongs to, None for a bare repository).
    None when FOLDER is in no git folder. A memory's files cannot live in one: git keeps
    its own files there, and a repository made inside it would hide the outer one.

    The nearest repository from FOLDER up decides: a folder of a work tree is in none,
    even when that work tree lies in a git folder."""
    for candidate in (folder, *folder.parents):
        if _is_git_dir(candidate):
            tree = _core_worktree(candidate)
            if tree is None and candidate.name == ".git":
                tree = candidate.parent
            return candidate, tree
        if os.path.lexists(candidate / ".git"):
            return None  # a work tree's folder (the nearest repository is a work tree)
    return None


__all__ = [
    "GITDIR_LINE",
    "common_git_dir",
    "enclosing_git_dir",
    "git_dir_at",
    "git_entry",
    "gitdir_of",
    "read_git_file",
]
