"""A memory repository at a team's scale (docs/scale.md): the git settings it runs with,
and the clone a new machine starts from.

**Settings** (`tune`, run by `autopoiesis init`; this clone's .git/config only):
`feature.manyFiles` (index format 4, a third smaller, and the untracked cache, so `git
status` reads only the folders that changed) and `core.splitIndex` (a command that
changes a few entries writes them to a small file beside a shared index, rather than the
whole index: the transcript commit's `update-index`, `git add` of a knowledge file) and
`checkout.workers=0` (a checkout of more than a hundred files writes them with a worker
per core: a year of transcripts, 100,000 files, took 77 s one at a time on a 2-core
machine and 8 to 13 s with two workers).

**The clone** (`partial_clone`, `autopoiesis clone`): every commit and tree, but a file's
content only when it is checked out (`--filter=blob:none`), and a sparse checkout
(cone mode) of everything but raw/conversations/ of the months before SINCE. Past
transcripts stay in the history (`git log`, `git show`, `git blame` fetch what they
read from the remote); `git sparse-checkout add raw/conversations/2025` brings a year
onto the disk, and the search index picks the new files up (index/freshness.py reads
the sparse-checkout patterns as part of the tree's state).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from autopoiesis.core.paths import CONVERSATIONS_DIR
from autopoiesis.errors import GitError
from autopoiesis.git import runner

SETTINGS = (
    ("feature.manyFiles", "true"),
    ("core.splitIndex", "true"),
    ("checkout.workers", "0"),  # 0: one worker per core
)
_MONTH = re.compile(r"^\d{4}(-(0[1-9]|1[0-2]))?$")


def tune(root: Path) -> list[str]:
    """Give ROOT's clone the settings of the module doc it lacks; what changed (in
    .git/config only)."""
    changed = []
    for key, value in SETTINGS:
        have = runner.call(root, "config", "--get", key, text=True).stdout.strip()
        if have:
            continue  # the user's own choice stays, in this clone or in their git config
        if runner.call(root, "config", "--local", key, value).returncode == 0:
            changed.append(f"{key}={value}")
    return changed


def _folders(root: Path, rev: str, path: str) -> list[str]:
    """The sub-folders of PATH in REV's tree (their names)."""
    where = ["--", path.rstrip("/") + "/"] if path else []
    out = runner.call(root, "ls-tree", "-z", "--full-tree", rev, *where)
    names = []
    for entry in runner.split_z(out.stdout):
        meta, _, name = entry.partition("\t")
        if meta.split(" ")[1:2] == ["tree"]:
            names.append(name)
    return names


def sparse_cone(root: Path, rev: str, since: str) -> list[str]:
    """The folders a checkout from SINCE ("YYYY" or "YYYY-MM") holds: every top-level
    folder, and under raw/conversations/ the years and months from SINCE on."""
    year, _, month = since.partition("-")
    cone = [f for f in _folders(root, rev, "") if f != "raw"]
    for sub in _folders(root, rev, "raw"):
        if sub != CONVERSATIONS_DIR:
            cone.append(sub)
    for y in _folders(root, rev, CONVERSATIONS_DIR):
        name = y.rsplit("/", 1)[-1]
        if name > year:
            cone.append(y)
        elif name == year:
            if not month:
                cone.append(y)
                continue
            cone += [m for m in _folders(root, rev, y) if m.rsplit("/", 1)[-1] >= month]
    return cone


def partial_clone(url: str, dest: Path, since: str | None) -> list[str]:
    """Clone URL into DEST without the content of files it does not check out, and check
    out everything but the transcripts of the months before SINCE (None: everything).
    Returns the sparse-checkout folders ([] for a full checkout)."""
    if since is not None and not _MONTH.match(since):
        raise GitError(f"--since takes a year or a month (2026 or 2026-03), not {since!r}.")
    proc = runner.call(
        None, "clone", "--quiet", "--filter=blob:none", "--no-checkout", url, str(dest), text=True
    )
    if proc.returncode != 0:
        raise GitError(
            f"could not clone {url}: {proc.stderr.strip()} Check the address and your access "
            "(`git ls-remote URL`)."
        )
    tune(dest)  # before the checkout, which writes the files and the index the first time
    cone: list[str] = []
    head = runner.call(dest, "rev-parse", "--verify", "-q", "HEAD", text=True).stdout.strip()
    if not head:
        head = _adopt_the_remote_memory(dest)
    if since is not None and head:
        cone = sparse_cone(dest, head, since)
        _git(dest, "sparse-checkout", "set", "--cone", "--", *cone)
    if head:
        _git(dest, "checkout", "--quiet")
    return cone


def _adopt_the_remote_memory(dest: Path) -> str:
    """HEAD's commit, once it names the remote's memory branch, for a remote whose HEAD
    names a branch it lacks (a plain `git init --bare` says master, the memory is on
    main): the clone then had no commit, so it checked out every transcript and gave
    verify no checkpoint. The one branch of origin that holds a memory's config becomes
    the clone's; with none or several, "" (init says what to do)."""
    from autopoiesis.core.config import CONFIG_FILENAME

    prefix = "refs/remotes/origin/"
    refs = runner.call(dest, "for-each-ref", "--format=%(refname)", prefix, text=True)
    memories = [
        ref.removeprefix(prefix)
        for ref in refs.stdout.split()
        if ref != prefix + "HEAD"
        and runner.call(dest, "cat-file", "-e", f"{ref}:{CONFIG_FILENAME}").returncode == 0
    ]
    if len(memories) != 1:
        return ""
    branch = memories[0]
    _git(dest, "branch", "--quiet", "--track", branch, prefix + branch)
    _git(dest, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    return runner.call(dest, "rev-parse", "--verify", "-q", "HEAD", text=True).stdout.strip()


def _git(root: Path, *args: str) -> None:
    proc = runner.call(root, *args, text=True)
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} failed in {root}: {proc.stderr.strip()}")


def sparse_state(root: Path) -> str:
    """What is checked out, as a digest of the sparse-checkout patterns ("" for a full
    checkout), read without running git (every search asks): the index records it, so a
    folder checked out later is indexed although no commit changed."""
    dot_git = root / ".git"
    git_dir = dot_git
    if dot_git.is_file():  # a linked worktree: its own git folder holds its patterns
        try:
            line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""
        git_dir = Path(line.removeprefix("gitdir:").strip())
        if not git_dir.is_absolute():
            git_dir = root / git_dir
    try:
        data = (git_dir / "info" / "sparse-checkout").read_bytes()
    except OSError:
        return ""
    return hashlib.blake2b(data, digest_size=12).hexdigest()
