"""git-filter-repo as `autopoiesis forget` runs it: `python -m autopoiesis.git.filter_repo
ARGS`, the package's own `main()` with one repair.

The release on PyPI (2.47.0) crashes a `--sensitive-data-removal` run on a history that
holds a gitlink (a team's memory mounted at `shared/<team>/`) when `.gitattributes` names
`filter=lfs` (a memory's does, for attachments): its LFS tracker asks `git cat-file` the
size of every file a commit changes, the gitlink's commit among them, which this
repository does not hold, and it cannot read the answer ("<id> missing"): a traceback,
and the history is not rewritten. The fix upstream (8df00d8, June 2025: gitlinks are not
asked about) is in no release yet. Until one has it, the size of an object that is not a
blob here is answered as large, which the tracker takes for "no LFS pointer", as the fix
amounts to: a submodule's commit is none.
"""

from __future__ import annotations

from typing import Any

import git_filter_repo

NOT_A_POINTER = 1 << 30  # the tracker reads an object's content only under 1,024 bytes


def size_of(helper: Any, object_id: bytes) -> int:
    """The size of the blob OBJECT_ID, as `FileInfoValueHelper.get_size_by_identifier`
    answers it; NOT_A_POINTER for an object that is not a blob of this repository."""
    helper._cat_file_process.stdin.write(b"info " + object_id + b"\n")
    helper._cat_file_process.stdin.flush()
    answer = helper._cat_file_process.stdout.readline().split()
    if len(answer) != 3 or answer[1] != b"blob":
        return NOT_A_POINTER
    return int(answer[2])


def main() -> None:
    git_filter_repo.FileInfoValueHelper.get_size_by_identifier = size_of
    git_filter_repo.main()


if __name__ == "__main__":
    main()
