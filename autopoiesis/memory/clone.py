"""`autopoiesis clone`: a memory on a new machine, searching in under a minute whatever
the size of the team's history (docs/scale.md).

git clones every commit and tree but only the files it checks out (git/scale.py:
`--filter=blob:none`, and a sparse checkout without the transcripts of the months before
SINCE); `init` sets the clone up (hooks, merge driver, settings) and indexes the
knowledge and the newest transcripts before it returns, the rest in the background
(index/build.py); and verify's checkpoint is the history as cloned (git/verify.py:
`trust_clone`), so the first `verify`, push or sync reads only what came after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autopoiesis.errors import AutopoiesisError


@dataclass
class CloneReport:
    root: Path
    sparse: list[str] = field(default_factory=list)  # the folders checked out ([]: all)
    index: str | None = None
    checkpoint: str | None = None  # the commit verify starts from
    warnings: list[str] = field(default_factory=list)


def clone_memory(url: str, dest: Path, *, since: str | None) -> CloneReport:
    """Clone the memory at URL into DEST (see the module doc)."""
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.git.scale import partial_clone
    from autopoiesis.git.verify import trust_clone
    from autopoiesis.memory.initialize import init_memory_repo

    dest = Path(dest).expanduser()
    if dest.exists() and any(dest.iterdir()):
        raise AutopoiesisError(f"{dest} exists and is not empty; pick a new folder to clone into.")
    sparse = partial_clone(url, dest, since)
    report = CloneReport(dest.resolve(), sparse)
    report.checkpoint = trust_clone(MemoryRepo(report.root))
    try:
        init = init_memory_repo(report.root, commit=False)
    except AutopoiesisError as exc:  # what was cloned stays, for a person to look at
        raise AutopoiesisError(
            f"cloned {url} into {report.root}, but did not set it up: {exc}"
        ) from None
    report.index = init.index
    report.warnings += init.warnings
    return report
