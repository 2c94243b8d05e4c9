"""Commits of files through git's plumbing, without the index (docs/scale.md).

`git commit` reads and writes the whole of .git/index (a hundred bytes a tracked file:
10 MB at 100,000 transcripts), twice for a commit of given paths, and the pre-commit hook
diffs the index against HEAD. A transcript commit only adds files under
raw/conversations/, so it is made from HEAD's objects instead:

1. the files are read once and checked in-process with the pre-commit hook's own checks
   (`hooks.check_changes`: a new, closed, valid transcript, no link, nothing committed
   changed), then written as blobs (`hash-object -w --stdin --path`, so a clean filter
   such as git-crypt's still applies) from the bytes that were checked;
2. the trees from the root down to each file's folder are HEAD's with the new entries
   added (`cat-file --batch` reads the few trees on those paths, `mktree --batch`
   writes the new ones; their ids are computed here first and checked against git's);
3. `commit-tree` makes the commit on HEAD; the index is given the new entries
   (`update-index --index-info`, the checked blobs: with a split index, a small file is
   written) before `update-ref HEAD NEW OLD` moves the branch, only if it still points
   where it was read (a lease): git runs the reference-transaction hook, which checks the
   transcript history as for any commit. A refusal puts HEAD's entries back in the index;
   a branch another process moved meanwhile is read again and the commit made anew;
4. the index records the files' stat data (`update-index --add`), the post-commit hook
   runs, and `git maintenance run --auto`, as after `git commit` (loose objects packed
   past gc.auto).

So no moment leaves the index older than HEAD: a process killed (SIGKILL, a harness's
SIGTERM) after the branch moved and before the index learned the change would have left
its undoing staged, and the next plain `git commit` would have deleted what was just
committed. Killed between staging and moving the branch, the index stages the new
content, which the next commit keeps. A commit made before this order, killed between
the branch and the index, left a transcript in HEAD that the index lacks (it reads as
staged for deletion); `GitCore.repair_interrupted_commits` puts it back.

This road is taken only where it commits what `git commit` would: HEAD on a commit, no
merge, cherry-pick, revert or rebase in progress, no .git/index.lock (another git command
at work, such as a `git commit` waiting for its editor, whose branch would move under it),
and a pre-commit hook that is autopoiesis's own or none (a foreign or chained one expects
to see the index), and no path that .gitignore excludes. Otherwise `commit_new_files`
returns None and the caller runs `git commit`.
"""

from __future__ import annotations

import hashlib
import os
import random
import stat
import subprocess
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autopoiesis.core.text import counted
from autopoiesis.errors import GitError
from autopoiesis.git import runner
from autopoiesis.git.hooks import check_changes, is_ours
from autopoiesis.git.runner import Change

if TYPE_CHECKING:
    from autopoiesis.git.commits import GitCore

IN_PROGRESS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply")
TREE_MODE = b"40000"
LEASE_ATTEMPTS = 10


class Refused(GitError):
    """The checks or the reference-transaction hook refused the commit."""


def _object_id(kind: bytes, data: bytes, hex_len: int) -> bytes:
    algo = hashlib.sha1 if hex_len == 40 else hashlib.sha256
    return algo(kind + b" %d\x00" % len(data) + data).digest()


def parse_tree(data: bytes, raw_len: int) -> dict[bytes, tuple[bytes, bytes]]:
    """A tree object's entries: name -> (mode, raw object id)."""
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\x00", space)
        entries[data[space + 1 : nul]] = (data[pos:space], data[nul + 1 : nul + 1 + raw_len])
        pos = nul + 1 + raw_len
    return entries


def tree_bytes(entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
    """A tree object's content, its entries in git's order (a folder's name sorts as if
    it ended with '/')."""
    order = sorted(entries, key=lambda n: n + b"/" if entries[n][0] == TREE_MODE else n)
    return b"".join(entries[n][0] + b" " + n + b"\x00" + entries[n][1] for n in order)


def _folders(path: str) -> list[str]:
    """The folders from the root down to PATH's ("" is the root)."""
    parts = path.split("/")[:-1]
    return [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]


class _Target:
    """Where the commit goes: HEAD's commit, and the git folder's paths it needs."""

    def __init__(self, head: str, hooks: Path, git_dir: Path):
        self.head, self.hooks, self.git_dir = head, hooks, git_dir


def _target(core: GitCore) -> _Target | None:
    """HEAD's commit and the hooks folder, or None when this road must not be taken."""
    proc = runner.call(
        core.root, "rev-parse", "--git-path", "hooks", "--absolute-git-dir", "HEAD", text=True
    )
    lines = proc.stdout.split("\n")
    if proc.returncode != 0 or len(lines) < 3 or len(lines[2]) not in (40, 64):
        return None  # no commit yet (an unborn branch): `git commit` makes the root commit
    hooks = Path(lines[0]) if os.path.isabs(lines[0]) else core.root / lines[0]
    git_dir = Path(lines[1])
    core._git_dir = git_dir  # where .git/index.lock is (GitCore.index_lock_path)
    if any((git_dir / name).exists() for name in IN_PROGRESS + ("index.lock",)):
        return None  # (a `git commit` holding index.lock would find its branch moved)
    pre_commit = hooks / "pre-commit"
    if (hooks / "pre-commit.local").exists() or (pre_commit.exists() and not is_ours(pre_commit)):
        return None
    return _Target(lines[2], hooks, git_dir)


def _read(root: Path, rel: str) -> tuple[str, bytes]:
    """(mode, content) of the file REL as git would record it."""
    st = os.lstat(root / rel)
    if stat.S_ISLNK(st.st_mode):
        return "120000", os.readlink(root / rel).encode("utf-8", "surrogateescape")
    with open(root / rel, "rb") as fh:
        data = fh.read()
    return ("100755" if st.st_mode & 0o111 else "100644"), data


def _checked_files(
    core: GitCore,
    paths: Sequence[str],
    trees: dict[str, dict[bytes, tuple[bytes, bytes]]],
    blobs: dict[str, bytes],
    hex_len: int,
) -> dict[str, tuple[str, bytes]]:
    """Each of PATHS with its mode and content, written as a blob (BLOBS: its id; kept
    from an attempt before), after the pre-commit hook's checks (a refusal raises
    Refused). A path HEAD holds as it is is left out (another process committed it)."""
    files = {p: _read(core.root, p) for p in paths}
    _write_blobs(core, {p: files[p][1] for p in files if p not in blobs}, blobs, hex_len)
    in_head = {}
    for p in paths:
        folder, _, name = p.rpartition("/")
        entry = trees[folder].get(name.encode("utf-8", "surrogateescape"))
        if entry is None:
            continue
        if entry == (files[p][0].encode(), blobs[p]):
            del files[p]
        else:
            in_head[p] = entry
    changes = [Change("M" if p in in_head else "A", p) for p in files]
    result = check_changes(
        core.root,
        changes,
        set(in_head),
        {p: mode for p, (mode, _) in files.items()},
        {p: data for p, (_, data) in files.items()},
    )
    if not result.ok:
        raise Refused("The commit was refused:\n" + "\n".join(result.errors))
    return files


def _write_blobs(
    core: GitCore, contents: dict[str, bytes], blobs: dict[str, bytes], hex_len: int
) -> None:
    """Write CONTENTS (path -> the bytes that were checked) as blobs into BLOBS. One
    `hash-object --stdin-paths` writes what the files hold now; a file whose blob is not
    the checked bytes' (a clean filter changed it, or the file changed since it was read)
    is written again from those bytes, through its path's filters."""
    if not contents:
        return
    paths = list(contents)
    listed = "".join(f"{p}\n" for p in paths)
    got: list[str] = []
    if "\n" not in "".join(paths):
        proc = runner.call(
            core.root,
            "hash-object",
            "-w",
            "--stdin-paths",
            input=listed.encode("utf-8", "surrogateescape"),
            env=core._environment(),
        )
        got = runner.decode(proc.stdout).split() if proc.returncode == 0 else []
    for i, path in enumerate(paths):
        oid = bytes.fromhex(got[i]) if len(got) == len(paths) else b""
        if oid != _object_id(b"blob", contents[path], hex_len):
            oid = bytes.fromhex(_hash(core, path, contents[path]))
        blobs[path] = oid


def _hash(core: GitCore, path: str, data: bytes) -> str:
    args = ["hash-object", "-w", "--stdin", f"--path={path}"]
    proc = runner.call(core.root, *args, input=data, env=core._environment())
    if proc.returncode != 0:
        raise GitError(f"git hash-object failed for {path}: {runner.decode(proc.stderr).strip()}")
    return runner.decode(proc.stdout).strip()


def _depth(folder: str) -> int:
    return folder.count("/") + 1 if folder else 0


def _new_trees(
    hex_len: int,
    trees: dict[str, dict[bytes, tuple[bytes, bytes]]],
    files: dict[str, tuple[str, bytes]],
    blobs: dict[str, bytes],
) -> tuple[str, list[tuple[str, bytes]]]:
    """(the root tree's id, the trees to write, deepest first): TREES (HEAD's, on the
    paths of FILES) with the blobs of FILES (their ids in BLOBS) added."""
    folders = sorted({f for p in files for f in _folders(p)}, key=lambda f: (-_depth(f), f))
    for path, (mode, _) in files.items():
        folder, _, name = path.rpartition("/")
        trees[folder][name.encode("utf-8", "surrogateescape")] = (mode.encode(), blobs[path])
    written: list[tuple[str, bytes]] = []
    root_id = ""
    for folder in folders:  # deepest first: each tree's id is known before its parent's
        content = tree_bytes(trees[folder])
        oid = _object_id(b"tree", content, hex_len)
        written.append((folder, content))
        if folder:
            parent, _, name = folder.rpartition("/")
            trees[parent][name.encode("utf-8", "surrogateescape")] = (TREE_MODE, oid)
        else:
            root_id = oid.hex()
    return root_id, written


def read_trees(
    root: Path, head: str, folders: Sequence[str], raw_len: int
) -> dict[str, dict[bytes, tuple[bytes, bytes]]]:
    """The entries of HEAD's tree at each of FOLDERS (empty where it has none), read in
    one `cat-file --batch`."""
    request = "".join(f"{head}:{f}\n" if f else f"{head}^{{tree}}\n" for f in folders)
    out = runner.run(root, "cat-file", "--batch", input=request.encode("utf-8", "surrogateescape"))
    trees: dict[str, dict[bytes, tuple[bytes, bytes]]] = {}
    pos = 0
    for folder in folders:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        pos = nl + 1
        if header[-1:] == [b"missing"]:
            trees[folder] = {}
            continue
        size = int(header[2])
        if header[1] != b"tree":
            raise GitError(f"{folder or 'the root'} is not a folder in commit {head}")
        trees[folder] = parse_tree(out[pos : pos + size], raw_len)
        pos += size + 1
    return trees


def _write_trees(core: GitCore, trees: list[tuple[str, bytes]], hex_len: int) -> None:
    """Write TREES (deepest first) with one `mktree --batch`, and check that git gives
    them the ids computed here."""
    records = []
    for _, content in trees:
        for name, (mode, oid) in parse_tree(content, hex_len // 2).items():
            kind = b"tree" if mode == TREE_MODE else b"commit" if mode == b"160000" else b"blob"
            records.append(mode + b" " + kind + b" " + oid.hex().encode() + b"\t" + name + b"\x00")
        records.append(b"\x00")
    proc = runner.call(core.root, "mktree", "-z", "--missing", "--batch", input=b"".join(records))
    got = runner.decode(proc.stdout).split()
    want = [_object_id(b"tree", c, hex_len).hex() for _, c in trees]
    if proc.returncode != 0 or got != want:
        raise GitError(
            f"git mktree wrote other trees than expected ({runner.decode(proc.stderr).strip()})"
        )


def commit_new_files(
    core: GitCore, paths: Sequence[str], message: str
) -> tuple[str, list[str]] | None:
    """Commit the files PATHS (repo-relative, each on disk: new, or changed but for a
    transcript) on HEAD with MESSAGE, through plumbing; the caller holds the repo's git
    lock. Returns (the commit, the paths it changed), ("", []) when HEAD already holds
    every file as it is, or None when this road cannot be taken (the caller then runs
    `git commit`). A refusal raises Refused."""
    if _any_ignored(core, paths):
        return None  # `git commit` refuses what .gitignore excludes (.env, *.key): so do we
    blobs: dict[str, bytes] = {}
    for attempt in range(LEASE_ATTEMPTS):
        if attempt:  # another program moved the branch meanwhile: let it finish
            time.sleep(random.uniform(0.01, 0.05) * attempt)
        target = _target(core)
        if target is None:
            return None
        hex_len = len(target.head)
        folders = sorted({f for p in paths for f in _folders(p)})
        trees = read_trees(core.root, target.head, folders, hex_len // 2)
        files = _checked_files(core, paths, trees, blobs, hex_len)
        if not files:
            # HEAD holds them as they are; an index an earlier commit could not update
            # (a full disk, a lock) learns them now instead of showing them deleted
            _index_learns(core, list(paths))
            return "", []
        in_head = {p: _entry(trees, p) for p in files}  # before _new_trees adds them
        root_tree, new = _new_trees(hex_len, trees, files, blobs)
        _write_trees(core, new, hex_len)
        commit = core.run(
            "commit-tree", root_tree, "-p", target.head, "-F", "-", input=message
        ).stdout.strip()
        if not _stage(
            core, {p: (mode.encode(), blobs[p]) for p, (mode, _) in files.items()}, hex_len
        ):
            return None  # the index is busy or cannot be written: `git commit` says why
        subject = message.split("\n", 1)[0]
        moved = runner.call(
            core.root,
            *("update-ref", "-m", f"commit: {subject}", "HEAD", commit, target.head),
            env={**core._environment(), "LC_ALL": "C"},  # git's messages, untranslated
        )
        if moved.returncode == 0:
            _after(core, target, sorted(files))
            return commit, sorted(files)
        why = runner.decode(moved.stderr).strip() or runner.decode(moved.stdout).strip()
        if "aborted by hook" in why:
            _stage(core, in_head, hex_len)  # HEAD did not move: the index as HEAD has them
            raise Refused("The commit was refused:\n" + why)
        if ".lock': File exists" not in why and "but expected" not in why:
            _stage(core, in_head, hex_len)
            raise GitError(f"git update-ref failed: {why}")
        # another program moved the branch, or is moving it: read it again (the index
        # keeps the new content staged meanwhile, which no commit can lose)
    raise GitError(
        f"the branch kept moving while committing {counted(len(paths), 'transcript')}; "
        "`autopoiesis capture --recover` commits them."
    )


def _entry(trees: dict[str, dict[bytes, tuple[bytes, bytes]]], path: str) -> tuple[bytes, bytes]:
    """(mode, raw id) of PATH in the trees read from HEAD, or mode b"0" where HEAD has none."""
    folder, _, name = path.rpartition("/")
    return trees[folder].get(name.encode("utf-8", "surrogateescape"), (b"0", b""))


def _stage(core: GitCore, entries: dict[str, tuple[bytes, bytes]], hex_len: int) -> bool:
    """Set the index entries of ENTRIES (path -> (mode, raw blob id); mode b"0": no entry)
    in one `update-index --index-info`. Done before the branch moves, so that no moment
    leaves the index older than HEAD: a process killed after HEAD moved but before the
    index learned the new content would leave the change's undoing staged, and the next
    plain `git commit` would delete what was just committed. Killed after this and before
    the branch moves, the index stages the new content, which a commit keeps. False when
    git could not write the index."""
    listed = "".join(
        f"{mode.decode()} {oid.hex() if mode != b'0' else '0' * hex_len}\t{path}\x00"
        for path, (mode, oid) in entries.items()
    )
    try:  # through core.run: a git killed while it writes leaves a lock a record explains
        proc = core.run("update-index", "--add", "-z", "--index-info", input=listed, check=False)
    except GitError:  # another program holds .git/index.lock
        return False
    return proc.returncode == 0


def _any_ignored(core: GitCore, paths: Sequence[str]) -> bool:
    """Whether .gitignore excludes one of PATHS that git does not track yet (or git could
    not say)."""
    listed = b"".join(p.encode("utf-8", "surrogateescape") + b"\x00" for p in paths)
    proc = runner.call(core.root, "check-ignore", "-z", "--stdin", input=listed)
    return proc.returncode != 1  # 1: none is ignored


def _index_learns(core: GitCore, paths: list[str]) -> None:
    """`update-index --add` of PATHS, committed in HEAD: the commit stands whatever it does
    (another program holding .git/index.lock, a disk too full for git's record)."""
    try:
        core.run("update-index", "--add", "--", *paths, check=False)
    except GitError as exc:
        warnings.warn(
            f"committed {', '.join(paths)}, but the git index could not be updated ({exc}); "
            "`git status` shows them as deleted and untracked until `autopoiesis capture "
            "--recover` or the next commit of them puts them back",
            stacklevel=4,
        )


def _after(core: GitCore, target: _Target, paths: list[str]) -> None:
    """The index learns the new entries; the post-commit hook runs; git's own upkeep runs,
    as after `git commit` (the commit stands whatever they do)."""
    _index_learns(core, paths)
    _run_post_commit_hook(core, target)
    _auto_maintenance(core)


def _auto_maintenance(core: GitCore) -> None:
    """What `git commit` runs after its hooks: `git maintenance run --auto`, which packs the
    loose objects once they are past gc.auto (6,700) and returns at once below it (it packs
    in a detached process; gc.auto=0 or maintenance.auto=false turn it off). A commit
    through plumbing ran none: each transcript's blob, trees and commit stayed a loose file
    for ever (13 a session with its extraction: 47,000 files a year of ten sessions a
    day) unless a fetch happened to run it."""
    wanted = runner.call(
        core.root, "config", "--type=bool", "--default=true", "maintenance.auto", text=True
    )
    if wanted.stdout.strip() == "false":
        return  # as `git commit` honours it
    ran = runner.call(core.root, "maintenance", "run", "--auto", "--quiet", stdin_devnull=True)
    if ran.returncode == 129:  # git before 2.29 has no `git maintenance`
        runner.call(core.root, "gc", "--auto", "--quiet", stdin_devnull=True)


def _run_post_commit_hook(core: GitCore, target: _Target) -> None:
    hook = target.hooks / "post-commit"
    if hook.exists() and os.access(hook, os.X_OK):
        ran = runner.call(core.root, "hook", "run", "--ignore-missing", "post-commit")
        if ran.returncode == 129:  # git before 2.36 has no `git hook`: run the file
            subprocess.run(
                [str(hook)],
                cwd=core.root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=runner.repository_env(core.root),
            )
