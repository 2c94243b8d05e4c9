"""A new index is built in steps (index/build.py): the knowledge and the newest transcripts
first, searchable while the rest is built, continued after its process dies, and in the
end the index a build in one transaction makes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index import SearchIndex, build
from autopoiesis.index.files import markdown_paths
from autopoiesis.testing.samples import closed_transcript


def fill(repo: MemoryRepo, git, n: int) -> list[str]:
    """N transcripts on N days, one note; committed. The transcripts, newest first."""
    paths = []
    for day in range(1, n + 1):
        sid = f"ses_build{day:02d}"
        rel = f"raw/conversations/2026/03/{day:02d}/0900-{sid}-heron.md"
        text = closed_transcript(sid, f"Heron {day}", started=f"2026-03-{day:02d}T09:00:00Z")
        (repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo.root / rel).write_text(text.replace("database", f"heron{day}"), encoding="utf-8")
        paths.append(rel)
    note = repo.root / "knowledge" / "reference" / "heron.md"
    note.write_text("# Heron\n\n- the heron migration plan\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "fill")
    return sorted(paths, reverse=True)


def chunks(index: SearchIndex) -> set[tuple]:
    return set(index.store.conn.execute("SELECT path, start_line, end_line, kind FROM chunks"))


@pytest.mark.slow
def test_a_new_index_is_searchable_while_it_is_built(
    memory_repo: MemoryRepo, git, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    newest_first = fill(memory_repo, git, 20)
    monkeypatch.setattr(build, "STEP_FILES", 12)
    total = len(markdown_paths(memory_repo))  # the template's knowledge and topics too
    with SearchIndex(memory_repo) as index:
        first = index.rebuild_full(seconds=0)  # one step, then it stops
        assert not first.full
        assert index.building() == {"state": index.building()["state"], "done": 12, "total": total}
        indexed = {p for (p,) in index.store.conn.execute("SELECT path FROM files")}
        assert "knowledge/reference/heron.md" in indexed
        assert set(newest_first[:2]) <= indexed and newest_first[-1] not in indexed
        # a search while the builder holds the lock: what is indexed, a notice, no wait
        # (the build's notice comes only from the path that never waits for the lock; a
        # search that waited for it, held here, would give up with IndexBusyError)
        with index.store.write_lock(), SearchIndex(memory_repo) as other:
            hits = other.search("heron", limit=50)
            assert {h.path for h in hits} <= indexed and hits
            assert any("being built (12 of" in w for w in other.warnings)
    # the builder is gone: the next search has the build continued in the background
    with SearchIndex(memory_repo) as again:
        again.search("heron")
        deadline = time.monotonic() + 120
        while again.building() is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert again.building() is None
        assert again.is_fresh()
        with SearchIndex(memory_repo, db_path=tmp_path / "whole.db") as whole:
            whole.store.conn.execute(
                "INSERT INTO files(path, category, modified, mtime_ns, size, "
                "content_hash, last_indexed) VALUES ('x', 'x', 0, 0, 0, '', 0)"
            )
            whole.rebuild_full()  # an index that held something: one transaction
            assert whole.building() is None
            assert chunks(again) == chunks(whole)


def test_both_builds_write_without_the_memory_map(memory_repo: MemoryRepo, git) -> None:
    """A build writes every page once: with the memory map searches read through, each page
    it touched would stay in its resident memory (bench_search: a 10,000-note build went
    from 62 to 80 MiB when the build in steps kept the map). The build in steps (a new
    index) and the one-transaction rebuild (an index that holds something) both turn it
    off while they write, and give searches their map back after."""
    fill(memory_repo, git, 3)
    with SearchIndex(memory_repo) as index:
        conn = index.store.conn
        mapped = conn.execute("PRAGMA mmap_size").fetchone()[0]
        assert mapped > 0
        seen: list[int] = []

        def progress(_done: int, _total: int) -> None:
            seen.append(conn.execute("PRAGMA mmap_size").fetchone()[0])

        assert index.building() is None and index.store.count("files") == 0
        index.rebuild_full(progress)  # a new index: in steps
        assert seen and set(seen) == {0}
        assert conn.execute("PRAGMA mmap_size").fetchone()[0] == mapped
        seen.clear()
        index.rebuild_full(progress)  # it holds something: one transaction
        assert seen and set(seen) == {0}
        assert conn.execute("PRAGMA mmap_size").fetchone()[0] == mapped
        assert index.search("heron migration", limit=3)


def test_a_search_of_a_build_that_holds_nothing_yet_is_answered_by_grep(
    memory_repo: MemoryRepo, git
) -> None:
    """Right after a corrupt memory.db was moved aside, a search met the new build before
    its first step: it answered nothing (rc 0, "0 of 0 files"). While the build holds no
    file, a search is answered with `git grep`, as when the index is outdated."""
    from autopoiesis.index.searchindex import search_outcome

    fill(memory_repo, git, 2)
    with SearchIndex(memory_repo) as index:
        index.store.set_meta(build.BUILD_META, '{"state": {}, "total": 9, "done": 0}')
        index.store.conn.commit()
        assert index.store.try_write_lock()  # the builder holds it
        try:
            outcome = search_outcome("heron migration", 5, repo=memory_repo)
        finally:
            index.store.release_write_lock()
    assert outcome.results and outcome.source != "index"
    assert any("being built (0 of 9 files" in n and "answered with" in n for n in outcome.notices)
