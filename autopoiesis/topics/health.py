"""The check of `autopoiesis doctor` (core.health.Check) for the topics: every file under
topics/ that is not loaded (a frontmatter that does not parse, a regex RE2 refuses, a
name another topic holds, a link, a file past the size cap), with what to fix. `compile`
and the prompt hooks leave such a file out without a word, so a topic pulled from a
collaborator, or edited by hand, could stop firing and nothing said so."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from autopoiesis.core.health import Check, Finding, ok, problem
from autopoiesis.core.text import counted
from autopoiesis.plugins import hookimpl


def check_topics(memory: Any) -> Iterator[Finding]:
    """Each topic file the loader leaves out is a problem, its reason the summary."""
    from autopoiesis.topics.loader import load_topics

    topics = load_topics(memory.repo)
    for error in topics.errors:
        yield problem(
            "topics",
            error,
            "edit the file as said (`autopoiesis topics check` lists every problem)",
        )
    if not topics.errors:
        yield ok("topics", f"{counted(len(topics.topics), 'topic')}, each valid")


CHECKS = (Check("topics", check_topics),)


@hookimpl
def register_checks(register: Any) -> None:
    for check in CHECKS:
        register(check)
