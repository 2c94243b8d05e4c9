"""What sync says of the team mounts a pulled `.gitmodules` names (TeamMemory.awaiting):
the file came with a pull, so it is read as whoever could push wrote it."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.memory.teams import MAX_AWAITING_SHOWN, TeamMemory


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
    assert TeamMemory(memory_repo).awaiting() == [
        "shared/ab is mounted in this memory's history, with no usable URL, but not on this "
        "machine: sync checks out no team memory this machine did not add; `autopoiesis team "
        "add ab URL` with the team's URL mounts it"
    ]
