"""What sync says of the team mounts a pulled `.gitmodules` names (TeamMemory.awaiting):
the file came with a pull, so it is read as whoever could push wrote it."""

from __future__ import annotations

import subprocess

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.memory.teams import MAX_AWAITING_SHOWN, TeamMemory


def _mounts_committed(repo: MemoryRepo, *paths: str) -> None:
    """A gitlink at each of PATHS in the index, as a mount committed on another clone
    leaves it (no checkout of it here)."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo.root, capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(
        ["git", "update-index", "--index-info"],
        cwd=repo.root,
        input="".join(f"160000 {head}\t{p}\n" for p in paths),
        text=True,
        check=True,
    )


def test_a_gitmodules_of_thousands_of_teams_is_read_once_and_summed_up(
    memory_repo: MemoryRepo,
) -> None:
    """2,000 entries ran a git process for each URL (10 s of every sync) and printed 2,000
    warnings; now one read, each of the first few named with its URL, the rest counted."""
    (memory_repo.root / ".gitmodules").write_text(
        "".join(
            f'[submodule "t{i}"]\n\tpath = shared/t{i}\n\turl = https://x.example/t{i}.git\n'
            for i in range(2000)
        )
        + '[submodule "a.b"]\n\tpath = shared/ab\n',
        encoding="utf-8",
    )
    _mounts_committed(memory_repo, *(f"shared/t{i}" for i in range(2000)), "shared/ab")
    said = TeamMemory(memory_repo).awaiting()
    assert len(said) == MAX_AWAITING_SHOWN + 1
    assert said[0].startswith("shared/t0 is mounted in this memory's history (from ")
    assert "`autopoiesis team add t0 https://x.example/t0.git` mounts it" in said[0]
    assert said[-1].startswith(
        f"and {2001 - MAX_AWAITING_SHOWN} more team mounts .gitmodules names"
    )


def test_an_entry_with_no_url_is_named_as_such(memory_repo: MemoryRepo) -> None:
    (memory_repo.root / ".gitmodules").write_text(
        '[submodule "a.b"]\n\tpath = shared/ab\n', encoding="utf-8"
    )
    _mounts_committed(memory_repo, "shared/ab")
    assert TeamMemory(memory_repo).awaiting() == [
        "shared/ab is mounted in this memory's history, with no usable URL, but not on this "
        "machine: sync checks out no team memory this machine did not add; `autopoiesis team "
        "add ab URL` with the team's URL mounts it"
    ]


def test_an_entry_with_no_mount_under_it_is_said_as_such(memory_repo: MemoryRepo) -> None:
    """A .gitmodules entry alone (a collaborator's, with no gitlink committed under it) was
    called a mount of the memory's history, with `team add` as its remedy: nothing is
    mounted there, and removing the entry is what to do if no team is meant."""
    (memory_repo.root / ".gitmodules").write_text(
        '[submodule "x"]\n\tpath = shared/x\n\turl = /nowhere.git\n', encoding="utf-8"
    )
    assert TeamMemory(memory_repo).awaiting() == [
        ".gitmodules names shared/x, but the memory mounts nothing there, so nothing is "
        "checked out; if no team of yours is meant, remove the entry (`git config -f "
        ".gitmodules --remove-section 'submodule.x'`, then commit)"
    ]
