"""The checks of `autopoiesis doctor` (core.health.Check) for linked notes and private
knowledge: each `[[link]]` that finds no note (index/links.py), and the private notes
(memory/private.py): locked in this clone, committed in clear, a private path without its
git-crypt rule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from autopoiesis.core.health import Check, Finding, ok, problem
from autopoiesis.core.text import counted
from autopoiesis.errors import AutopoiesisError
from autopoiesis.plugins import hookimpl


def check_wikilinks(memory: Any) -> Iterator[Finding]:
    """Each [[link]] of the notes finds a note (reads the index; none yet: no check)."""
    if not memory.repo.index_path.exists():
        return
    try:
        broken = memory.broken_links()
    except AutopoiesisError as exc:
        yield problem("wikilinks", f"not checked ({exc})", "`autopoiesis index rebuild`")
        return
    for x in broken:
        yield problem(
            "wikilinks",
            f"broken link {x.source}:{x.line}: [[{x.target}]] finds no note",
            "fix the link, or `autopoiesis mv` the note back",
        )
    if not broken:
        yield ok("wikilinks", "every [[link]] finds its note")


def check_private(memory: Any) -> Iterator[Finding]:
    """Private knowledge: nothing to say unless some (or git-crypt) is there."""
    from autopoiesis.core.private import uses_git_crypt

    repo = memory.repo
    if not uses_git_crypt(repo.root) and not (repo.knowledge_dir / "private").is_dir():
        return  # nothing private here: no git call
    try:
        status = memory.private.status()
    except AutopoiesisError as exc:
        yield problem("private", f"not checked ({exc})")
        return
    for p in status.problems:
        yield problem("private", p)
    in_clear = [p for p, encrypted in status.files if not encrypted]
    if in_clear and status.set_up:
        yield problem(
            "private",
            f"private files committed in clear: {', '.join(in_clear[:5])}",
            "`git add --renormalize` them (the next commit is encrypted); "
            "`autopoiesis forget` takes the old versions out",
        )
    if not status.problems and not (in_clear and status.set_up):
        state = "unlocked" if status.unlocked else "not set up"
        yield ok("private", f"{counted(len(status.files), 'private file')}, {state}")


CHECKS = (Check("wikilinks", check_wikilinks), Check("private", check_private))


@hookimpl
def register_checks(register: Any) -> None:
    for check in CHECKS:
        register(check)
