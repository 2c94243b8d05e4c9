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
from autopoiesis.errors import ChangeRejectedError, UnsafePathError
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


def test_search_says_the_same_of_private_notes_whatever_the_query(tools: MemoryTools) -> None:
    """`search` said "1 private result(s) withheld" only when a private note held the
    words: a model could test guesses ("narcolepsy"? "diabetes"?) against it. And a
    private hit took the place of a public one, so fewer results told the same."""
    _write(
        tools.repo,
        "knowledge/reference/sleep.md",
        "# Sleep\n\n## Facts\n- A leaflet on sleep disorders, insomnia, apnoea and "
        "narcolepsy among them, lies in the office kitchen next to the coffee machine.\n",
    )
    Memory(tools.repo).commit("memory: sleep")
    from autopoiesis.index import SearchIndex

    with SearchIndex(tools.repo) as index:
        index.rebuild_full()
    first = Memory(tools.repo).search("diagnosed narcolepsy March", 1)
    assert [r.path for r in first] == ["knowledge/private/health.md"]  # what a model is not shown
    hit = tools.search("diagnosed narcolepsy March", limit=1)
    miss = tools.search("diagnosed diabetes March", limit=1)
    assert hit["notices"] == miss["notices"]
    assert [r["path"] for r in hit["results"]] == ["knowledge/reference/sleep.md"]
    assert "narcolepsy" not in json.dumps(hit["notices"])


def test_a_write_tells_nothing_of_a_private_note_and_never_reaches_into_one(
    tools: MemoryTools,
) -> None:
    """`remember` into a public file said "duplicate" when a private note held the fact,
    and `supersede` on a private note found (and struck) the entry a guessed phrase
    matched: both answered what the note says."""
    guess = "The user was diagnosed with narcolepsy in March"
    answer = tools.remember("knowledge/reference/probe.md", guess)
    assert answer["status"] == "added"
    private = (tools.repo.root / "knowledge/private/health.md").read_text(encoding="utf-8")
    assert private == HEALTH  # the public entry struck nothing there
    for target in ("narcolepsy", "diabetes", "20260301-0900-a1b2c3"):
        with pytest.raises(ChangeRejectedError, match="private") as refused:
            tools.supersede("knowledge/private/health.md", target, "The user is healthy")
        assert target not in str(refused.value)
    with pytest.raises(ChangeRejectedError, match="private"):
        tools.remember("knowledge/private/health.md", guess)
    with pytest.raises(ChangeRejectedError, match="private"):
        tools.remember("knowledge/private/new.md", "The user is tired")
    assert (tools.repo.root / "knowledge/private/health.md").read_text(encoding="utf-8") == HEALTH
    assert not (tools.repo.root / "knowledge/private/new.md").exists()


def test_private_model_paths_let_a_model_write_a_private_note(memory_repo: MemoryRepo, cli) -> None:
    """A private note private.model_paths names (approved on this machine) is the model's
    to read and to write, as before."""
    from autopoiesis.core.approval import approve
    from autopoiesis.core.config import load_tracked_config

    assert cli("private", "init", repo=memory_repo.root).returncode == 0
    _write(memory_repo, "knowledge/private/health.md", HEALTH)
    (memory_repo.root / "memory-config.yaml").write_text(
        "private:\n  model_paths:\n    - knowledge/private/health.md\n", encoding="utf-8"
    )
    approve(memory_repo.root, load_tracked_config(memory_repo.root))
    Memory(memory_repo).commit("memory: notes")
    tools = MemoryTools(Memory(MemoryRepo(memory_repo.root)))
    try:
        assert "narcolepsy" in tools.read("knowledge/private/health.md")
        answer = tools.supersede("knowledge/private/health.md", "narcolepsy", "The user is well")
        assert answer["status"] == "superseded"
        # the live value, said again, is known (the note is read): the superseded one, said
        # again in a later minute, would be a newer statement of it (writer._repeats), and
        # this was flaky when the minute turned between the two calls
        again = tools.remember("knowledge/private/health.md", "The user is well")
        assert again["status"] == "duplicate"
    finally:
        tools.close()


def test_a_writer_for_a_model_refuses_a_file_its_caller_may_not_read(tools: MemoryTools) -> None:
    """The writer's own rule, under MCP's check: told what its caller sees, it writes no
    file outside it (all or nothing)."""
    from autopoiesis.core.clock import utc_now
    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.writer import KnowledgeWriter

    prov = Provenance(source="mcp:remember", at=utc_now().replace(microsecond=0), producer="t")
    changes = [
        KnowledgeChange("knowledge/reference/public.md", "append", "Facts", "gadgets", prov),
        KnowledgeChange("knowledge/private/health.md", "append", "Facts", "tired", prov),
    ]
    writer = KnowledgeWriter(tools.repo, sees=tools.repo.may_reach_model)
    with pytest.raises(ChangeRejectedError, match="may not read"):
        writer.apply(changes)
    assert "gadgets" not in (tools.repo.root / "knowledge/reference/public.md").read_text()


def test_history_names_no_private_note_whatever_its_name(tools: MemoryTools, git) -> None:
    """git quoted a name with a non-ASCII character in `log --name-only`
    ("knowledge/private/gehalt-m\\303\\274ller.md"), which matched no private pattern:
    the commit of that private note alone was shown in a folder's history."""
    _write(tools.repo, "knowledge/private/gehalt-müller.md", "# Gehalt\n\n- 90000 EUR\n")
    git(tools.repo, "add", "-A")
    git(tools.repo, "commit", "-qm", "memory: gehalt of müller")
    for folder in ("knowledge/private", "knowledge"):
        assert not [c for c in tools.history(folder)["commits"] if "müller" in c["subject"]]
    assert tools.recall("90000")["commits"] == []
