"""The knowledge writer links an entry that names a known person, project or procedure."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats.wikilinks import parse_links
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
from autopoiesis.knowledge.writer import KnowledgeWriter
from tests.knowledge.helpers import import_sessions, session

PROV = Provenance("raw/conversations/x.md", datetime(2026, 3, 1, 12, 0, tzinfo=UTC), "test@1")


def _seed(repo: MemoryRepo) -> None:
    k = repo.knowledge_dir
    (k / "people" / "maria-lopez.md").write_text("# Maria Lopez\n", encoding="utf-8")
    (k / "procedures" / "releases.md").write_text("# Releases\n", encoding="utf-8")
    (k / "projects" / "billing").mkdir(parents=True)
    (k / "projects" / "billing" / "context.md").write_text("# billing\n", encoding="utf-8")


def _change(path: str, text: str, **kw: object) -> KnowledgeChange:
    return KnowledgeChange(path, "append", "Context", text, PROV, **kw)  # type: ignore[arg-type]


def test_an_entry_naming_a_person_project_and_procedure_links_them(memory_repo: MemoryRepo) -> None:
    _seed(memory_repo)
    writer = KnowledgeWriter(memory_repo)
    writer.apply(
        [
            _change(
                "knowledge/memory/MEMORY.md",
                "maria lopez moves the Billing retries to the releases checklist",
            )
        ]
    )
    text = memory_repo.memory_file.read_text(encoding="utf-8")
    assert "[[maria-lopez|maria lopez]]" in text
    assert "[[billing/context|Billing]]" in text
    assert "[[releases]]" in text
    targets = {link.target for link in parse_links(text)}
    assert "maria-lopez" in targets and "releases" in targets


def test_the_same_fact_without_the_link_is_a_duplicate(memory_repo: MemoryRepo) -> None:
    _seed(memory_repo)
    writer = KnowledgeWriter(memory_repo)
    first = writer.apply([_change("knowledge/memory/MEMORY.md", "Maria Lopez reviews deploys")])
    again = writer.apply([_change("knowledge/memory/MEMORY.md", "Maria Lopez reviews deploys")])
    assert len(first.added) == 1 and not again.added and again.duplicates == 1


def test_no_link_to_the_file_itself_nor_in_code_nor_in_a_keyed_line(
    memory_repo: MemoryRepo,
) -> None:
    _seed(memory_repo)
    writer = KnowledgeWriter(memory_repo)
    writer.apply(
        [
            _change("knowledge/people/maria-lopez.md", "Maria Lopez prefers `releases` in chat"),
            _change(
                "knowledge/people/_index.md",
                "**Maria Lopez** — owns capture",
                key="**Maria Lopez**",
            ),
        ]
    )
    own = (memory_repo.knowledge_dir / "people" / "maria-lopez.md").read_text(encoding="utf-8")
    assert "[[" not in own
    index = (memory_repo.knowledge_dir / "people" / "_index.md").read_text(encoding="utf-8")
    assert "[[" not in index


def test_extraction_links_a_person_met_before(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    """End to end: the offline extractors file Maria Lopez, and a later session's decision
    that names her links her note."""
    from autopoiesis.memory.facade import Memory

    memory = Memory(memory_repo)
    first = import_sessions(
        memory_repo,
        tmp_path,
        [
            session(
                "ses_m1", "2026-03-01T10:00:00Z", ("user", "Maria Lopez owns the capture module.")
            )
        ],
    )
    memory.extract(first)
    assert (memory_repo.knowledge_dir / "people" / "maria-lopez.md").is_file()
    later = import_sessions(
        memory_repo,
        tmp_path,
        [
            session(
                "ses_m2",
                "2026-03-02T10:00:00Z",
                ("user", "We decided: Maria Lopez reviews every change to the capture module."),
            )
        ],
    )
    memory.extract(later)
    linked = [
        p
        for p in memory_repo.knowledge_dir.rglob("*.md")
        if "[[maria-lopez" in p.read_text(encoding="utf-8")
    ]
    assert linked, "no knowledge file links Maria Lopez's note"


def test_a_one_word_name_that_is_a_common_word_is_not_linked(memory_repo: MemoryRepo) -> None:
    (memory_repo.knowledge_dir / "projects" / "about").mkdir(parents=True)
    (memory_repo.knowledge_dir / "projects" / "about" / "context.md").write_text("# about\n")
    KnowledgeWriter(memory_repo).apply(
        [_change("knowledge/memory/MEMORY.md", "Talked about the invoice retries")]
    )
    assert "[[" not in memory_repo.memory_file.read_text(encoding="utf-8")


def test_a_project_link_stays_its_own_when_a_second_project_arrives(
    memory_repo: MemoryRepo,
) -> None:
    """Every project has a context.md: a bare [[context]] written while billing was the only
    project would resolve to whichever project sorts first once another exists."""
    from autopoiesis.formats.wikilinks import resolve

    _seed(memory_repo)
    writer = KnowledgeWriter(memory_repo)
    writer.apply([_change("knowledge/memory/MEMORY.md", "billing retries moved to Fridays")])
    (memory_repo.knowledge_dir / "projects" / "atlas").mkdir()
    (memory_repo.knowledge_dir / "projects" / "atlas" / "context.md").write_text("# atlas\n")
    text = memory_repo.memory_file.read_text(encoding="utf-8")
    (link,) = [x for x in parse_links(text) if x.alias == "billing"]
    by_name = {
        "context": [
            "knowledge/projects/atlas/context.md",
            "knowledge/projects/billing/context.md",
        ]
    }
    assert resolve(link.key, by_name) == "knowledge/projects/billing/context.md"
