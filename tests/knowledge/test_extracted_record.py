"""What extraction has done travels with the repository (knowledge/.extracted,
knowledge/state.py): a fresh clone, or a repo whose .autopoiesis/ caches were deleted (as
`autopoiesis forget` does), extracts nothing again, and a journal pruned to archive/ does
not come back. Real git, real extraction, a bare remote over file://."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.knowledge.extract import KnowledgeExtractor
from autopoiesis.knowledge.extractors import BUILTIN_EXTRACTORS
from autopoiesis.knowledge.state import EXTRACTED_FILE, ExtractedRecord
from autopoiesis.memory.initialize import init_memory_repo
from autopoiesis.memory.sync import sync_once
from tests.knowledge.helpers import DEMO, import_sessions, session

pytestmark = pytest.mark.slow


def _git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=where, capture_output=True, text=True, check=True
    ).stdout.strip()


def _extract(repo: MemoryRepo):
    with KnowledgeExtractor(repo) as ex:
        report = ex.extract_pending()
        ex.commit(report)
    return report


def _archive_the_journal(root: Path) -> str:
    """What the pruner does to an old journal: knowledge/journal/D.md -> archive/journal/D.md."""
    journals = sorted((root / "knowledge" / "journal").glob("2026-*.md"))
    assert journals, "the demo sessions write a journal"
    rel = journals[0].relative_to(root).as_posix()
    (root / "archive" / "journal").mkdir(parents=True, exist_ok=True)
    _git(root, "mv", rel, "archive/journal/" + journals[0].name)
    _git(root, "commit", "-qm", "maintenance: archive an old journal")
    return rel


def test_a_clone_and_a_cleared_cache_extract_nothing_again(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    import_sessions(memory_repo, tmp_path, DEMO)
    first = _extract(memory_repo)
    every = 2 * len(BUILTIN_EXTRACTORS)  # two demo sessions, each through every extractor
    assert len(first.processed) == every and not first.failed
    assert _git(memory_repo.root, "ls-files", EXTRACTED_FILE) == EXTRACTED_FILE
    assert _git(memory_repo.root, "status", "--porcelain", "--", "knowledge") == ""
    record = ExtractedRecord(memory_repo.root / EXTRACTED_FILE).pairs()
    assert {(p, e) for p, e, _ in first.processed} == record
    journal = _archive_the_journal(memory_repo.root)

    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(memory_repo.root), str(clone))
    again = _extract(MemoryRepo(clone))
    assert again.processed == () and again.already_done == every
    assert not (clone / journal).exists()
    assert _git(clone, "status", "--porcelain") == ""

    shutil.rmtree(memory_repo.root / ".autopoiesis")  # what forget does to the caches
    assert _extract(MemoryRepo(memory_repo.root)).processed == ()
    assert not (memory_repo.root / journal).exists()


def test_two_clones_records_merge_without_a_conflict(tmp_path: Path) -> None:
    a = MemoryRepo(init_memory_repo(tmp_path / "a", build_index=False).root)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    _git(a.root, "remote", "add", "origin", remote.as_uri())
    sync_once(a)
    _git(tmp_path, "clone", "-q", remote.as_uri(), str(tmp_path / "b"))
    b = MemoryRepo(init_memory_repo(tmp_path / "b", build_index=False).root)

    (tmp_path / "in-a").mkdir()
    (tmp_path / "in-b").mkdir()
    import_sessions(a, tmp_path / "in-a", DEMO)
    # another day: each clone writes its own day's journal (a day both write is the
    # journal's merge, not the record's)
    said = ("user", "We decided: ship on Fridays. Maria Lopez owns the release notes.")
    import_sessions(b, tmp_path / "in-b", [session("ses_c", "2026-02-17T09:00:00Z", said)])
    done_a, done_b = _extract(a).processed, _extract(b).processed
    sync_once(a)
    sync_once(b)  # merges a's record into b's
    sync_once(a)
    both = {(p, e) for p, e, _ in done_a + done_b}
    for repo in (a, b):
        assert ExtractedRecord(repo.root / EXTRACTED_FILE).pairs() == both
        assert "<<<<<<<" not in (repo.root / EXTRACTED_FILE).read_text()
        assert _extract(MemoryRepo(repo.root)).processed == ()


def test_an_extraction_reset_away_is_done_again(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    """The record decides what is done, not the local cache: `git reset --hard` to before
    the extraction's commit (the knowledge and the record gone, the cache still saying
    done) and a line deleted from the record are both extracted again."""
    import_sessions(memory_repo, tmp_path, DEMO)
    root = memory_repo.root
    before = _git(root, "rev-parse", "HEAD")
    first = _extract(memory_repo)
    every = 2 * len(BUILTIN_EXTRACTORS)
    assert len(first.processed) == every
    knowledge = set(_git(root, "ls-files", "knowledge").splitlines())

    _git(root, "reset", "-q", "--hard", before)
    assert not (root / EXTRACTED_FILE).exists()
    again = _extract(memory_repo)
    assert len(again.processed) == every and again.already_done == 0
    assert set(_git(root, "ls-files", "knowledge").splitlines()) == knowledge

    record = root / EXTRACTED_FILE
    lines = record.read_text(encoding="utf-8").splitlines(keepends=True)
    gone = next(line for line in lines if "\t" in line and not line.startswith("#"))
    record.write_text("".join(line for line in lines if line != gone), encoding="utf-8")
    _git(root, "commit", "-qam", "a person deletes a line of the record")
    path, extractor = gone.rstrip("\n").split("\t")
    third = _extract(memory_repo)
    assert [(p, e) for p, e, _ in third.processed] == [(path, extractor)]
    assert third.already_done == every - 1
    assert gone in record.read_text(encoding="utf-8")
