"""What the MCP tools give a model of a private note (knowledge/private/, git-crypt) that
private.model_paths does not name: nothing of what it says, not even by testing guesses
against it — `links` refuses it as `read` does, `search` says the same whatever the
query, and a write neither tells whether a private note holds a fact nor reaches into
one."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import UnsafePathError
from autopoiesis.mcp.tools import MemoryTools
from autopoiesis.memory.facade import Memory

HEALTH = (
    "---\ntype: reference\n---\n# Health\n\n## Facts\n"
    "- 2026-03-01: The user was diagnosed with narcolepsy in March (via ses_doc) "
    "{id: 20260301-0900-a1b2c3}\n"
    "- Offer from [[acquisition-of-zorblax-corp-for-40m]]; see [[reference/public|the "
    "zorblax term sheet]].\n"
)


def _write(repo: MemoryRepo, rel: str, text: str) -> None:
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tools(memory_repo: MemoryRepo, cli) -> Iterator[MemoryTools]:
    """The tools over a memory with a private health note (git-crypt set up, so its commit
    is encrypted) and a public note it links to; the search index built."""
    assert cli("private", "init", repo=memory_repo.root).returncode == 0
    _write(memory_repo, "knowledge/private/health.md", HEALTH)
    _write(memory_repo, "knowledge/reference/public.md", "# Public\n\n## Facts\n- widgets\n")
    memory = Memory(memory_repo)
    memory.commit("memory: notes")
    from autopoiesis.index import SearchIndex

    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    t = MemoryTools(memory)
    try:
        yield t
    finally:
        t.close()


def test_links_refuses_a_private_note_as_read_does(tools: MemoryTools) -> None:
    """`links` of a private note listed its [[links]]: a broken link's text, an alias's
    free text, the line, the public notes it names."""
    for tool in (tools.read, tools.links, tools.history):
        with pytest.raises(UnsafePathError, match="private"):
            tool("knowledge/private/health.md")
    # the public note's own links still answer, without the private note linking to it
    shown = json.dumps(tools.links("knowledge/reference/public.md"))
    assert "health" not in shown and "zorblax" not in shown
