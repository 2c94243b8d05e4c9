"""What the working tree looks like to git, cheaply: HEAD and the memory files that
differ from it (modified, added, deleted, untracked), with their mtime and size.

Stdlib only: the post-commit hook's background process and every search call use it.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

CONTENT_DIRS = ("knowledge", "topics", "raw", "archive")


@dataclass(frozen=True)
class TreeState:
    head: str  # "" before the first commit or outside git
    dirty: dict[str, list[int] | None]  # path -> [mtime_ns, size], None when deleted
    ok: bool = True  # False when git could not be asked (not a repo, git missing)

    def same_as(self, head: str, dirty: dict[str, list[int] | None]) -> bool:
        return self.ok and self.head == head and self.dirty == dirty


def _stat(root: Path, rel: str) -> list[int] | None:
    try:
        st = os.stat(root / rel)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def tree_state(root: Path) -> TreeState:
    """HEAD and the dirty memory paths, from one `git status` call."""
    try:
        proc = subprocess.run(
            # --no-optional-locks: a background sync must never hold .git/index.lock (a
            # refreshing `git status` does), or the user's own `git add` fails meanwhile
            ["git", "--no-optional-locks", "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames",
             "--ignore-submodules=all", "--", *CONTENT_DIRS],
            cwd=root, capture_output=True, check=False,
        )
    except (FileNotFoundError, NotADirectoryError):
        return TreeState("", {}, ok=False)
    if proc.returncode != 0:
        return TreeState("", {}, ok=False)
    head = ""
    dirty: dict[str, list[int] | None] = {}
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\x00"):
        if not entry:
            continue
        kind = entry[0]
        if kind == "#":
            if entry.startswith("# branch.oid "):
                oid = entry[len("# branch.oid "):].strip()
                head = "" if oid == "(initial)" else oid
            continue
        if kind == "1":
            path = entry.split(" ", 8)[8]
        elif kind == "u":
            path = entry.split(" ", 10)[10]
        elif kind == "?":
            path = entry[2:]
        elif kind == "2":  # not emitted with --no-renames; parsed for safety
            path = entry.split(" ", 9)[9]
        else:
            continue
        if path.endswith(".md"):
            dirty[path] = _stat(root, path)
    return TreeState(head, dirty)


def changed_between(root: Path, old: str, new: str) -> list[str] | None:
    """Memory paths that differ between two commits (renames as delete + add), or None
    when git cannot tell (an unknown commit after a gc, a shallow clone)."""
    if not old or not new:
        return None
    proc = subprocess.run(
        ["git", "diff", "--name-only", "-z", "--no-renames", old, new, "--", *CONTENT_DIRS],
        cwd=root, capture_output=True, check=False,
    )
    if proc.returncode != 0:
        return None
    return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\x00") if p]
