"""The standing part of a context (identity files and MEMORY.md) within the session share:
whole when it fits, by section ranked against the message when it does not, and never a
section left out without the context saying so."""

from __future__ import annotations

from datetime import UTC, datetime

from autopoiesis.compiler import ContextCompiler
from autopoiesis.compiler.standing import StandingFile, fit, sections
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.core.text import count_tokens

NOW = datetime(2026, 2, 16, 12, tzinfo=UTC)
FILLER = "We talked about it at length and agreed on the details of the plan. " * 12


def _memory(repo: MemoryRepo, notes: int = 3) -> str:
    text = (
        "# Core Memory\n\n"
        + "".join(f"## Project note {i}\n- {FILLER}\n\n" for i in range(notes))
        + "## Preferences\n- The user wants bun, not npm or node, for every script.\n"
    )
    (repo.root / MEMORY_FILE).write_text(text, encoding="utf-8")
    return text


def test_a_long_memory_enters_by_section_at_a_small_budget(memory_repo: MemoryRepo) -> None:
    _memory(memory_repo)
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("Which package manager should the scripts use, npm?", budget=2048, now=NOW)
    memory = next(s for s in res.sections if s.label == "memory")
    assert memory.included
    # the section that answers the message is in, though it is the last of the file ...
    assert "bun, not npm" in memory.content
    # ... the fixed part stays within its share, and what was left out is named
    standing = sum(s.tokens for s in res.sections if s.priority <= 1 and s.included)
    assert standing <= 2048 * 0.25 + 400  # + the system prompt, journal and labels
    assert "left out for room" in memory.content and '"Project note 2"' in memory.content
    assert f"read {MEMORY_FILE}" in memory.content


def test_everything_whole_when_it_fits(memory_repo: MemoryRepo) -> None:
    text = _memory(memory_repo)
    assert len(text.encode()) < 3 * 1024  # within memory_budget_kb
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("npm or bun?", budget=32768, now=NOW)
    memory = next(s for s in res.sections if s.label == "memory")
    assert memory.content.strip() == text.strip()
    assert "left out" not in res.prompt


def test_memory_over_its_kb_cap_keeps_the_relevant_sections(memory_repo: MemoryRepo) -> None:
    _memory(memory_repo, notes=8)  # ~7 KB, over memory_budget_kb (3)
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("npm or bun?", budget=32768, now=NOW)
    memory = next(s for s in res.sections if s.label == "memory")
    assert "bun, not npm" in memory.content and "left out for room" in memory.content
    assert len(memory.content.encode()) <= 3 * 1024 + 200  # + the line naming what is out


def test_identity_heads_are_never_dropped_and_sections_keep_file_order() -> None:
    soul = "# Soul\nI am the agent.\n\n## Style\nTerse.\n\n## Tools\nI use git every day.\n"
    memory = "# Core Memory\n\n## Git\n- we rebase, never merge\n\n## Food\n- pizza on Fridays\n"
    files = [
        StandingFile("knowledge/identity/SOUL.md", soul, 10_000, True),
        StandingFile(MEMORY_FILE, memory, 10_000, False),
    ]
    share = count_tokens("# Soul\nI am the agent.") + count_tokens("## Git\n- we rebase") + 12
    soul_out, memory_out = fit(files, "how do we merge in git?", share)
    assert soul_out.startswith("# Soul\nI am the agent.")  # the head, though nothing matches
    assert "## Git" in memory_out and "pizza" not in memory_out
    assert '"Food"' in memory_out
    # a file's sections come out in file order, whatever their rank
    both = fit(files, "git tools style", 10_000)
    assert both[0] == soul


def test_sections_ignore_headings_inside_fences() -> None:
    text = "# T\nintro\n\n## A\n```\n## not a section\n```\n\n## B\nb\n"
    assert [h for h, _ in sections(text)] == ["", "A", "B"]
