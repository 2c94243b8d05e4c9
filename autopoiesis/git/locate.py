"""Finding the memory repo: -C DIR, else $AUTOPOIESIS_REPO, else the git top level of the
current folder. Every `autopoiesis` call that may go to the daemon asks first, so git
(and the subprocess module) is started only when the current folder decides."""

from __future__ import annotations

import os
from pathlib import Path

from autopoiesis.core.paths import FIND_A_MEMORY, MemoryRepo, in_git_folder
from autopoiesis.errors import NotAMemoryRepo


def locate_repo(
    explicit: str | os.PathLike[str] | None = None, *, must_exist: bool = True
) -> MemoryRepo:
    """The memory repo: -C DIR (EXPLICIT), else $AUTOPOIESIS_REPO, else the git top level
    of the current folder."""
    if explicit:
        return MemoryRepo.checked(explicit, f"-C {explicit}", must_exist=must_exist)
    if os.environ.get("AUTOPOIESIS_REPO"):
        root = Path(os.environ["AUTOPOIESIS_REPO"]).expanduser()
        return MemoryRepo.checked(root, f"$AUTOPOIESIS_REPO={root}", must_exist=must_exist)
    from autopoiesis.git.runner import toplevel  # subprocess (~4 ms): only when the folder decides

    top = toplevel(Path.cwd())
    if top is None:
        git_folder = in_git_folder(Path.cwd())
        if git_folder is not None:
            raise NotAMemoryRepo(f"No memory repository here: {git_folder}")
        raise NotAMemoryRepo(
            "No memory repository here: this folder is not inside a git repository. "
            + FIND_A_MEMORY
        )
    return MemoryRepo.checked(top, "the git repository of this folder", must_exist=must_exist)
