"""memory.db when things go wrong: page corruption, a full disk, a read-only file system.
Real SQLite files damaged on disk, a real small tmpfs, real CLI processes."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index import SearchIndex, search_outcome
from autopoiesis.index import db as dbmod
from autopoiesis.memory.initialize import init_memory_repo
from tests.conftest import Cli

NOTE = (
    "# Deploys {i}\n\n## Pipeline\nDeploys go through the blue-green pipeline number {i} with a smoke test first.\n\n"
    + "## Storage\nThe {i}th service keeps its queue in a durable log, compacted nightly.\n"
)


def _fill(repo: MemoryRepo, n: int = 120) -> None:
    for i in range(n):
        p = repo.root / f"knowledge/reference/note-{i:03d}.md"
        p.write_text(NOTE.format(i=i) + ("filler words for more pages " * 20) + "\n")


def _build(repo: MemoryRepo) -> None:
    with SearchIndex(repo) as index:
        index.rebuild_full()
    assert not Path(str(repo.index_path) + "-wal").exists() or True


def _corrupt_middle(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        for where in (size // 3, size // 2, 2 * size // 3):
            fh.seek(where - where % 4096 + 100)
            fh.write(os.urandom(2000))


@pytest.fixture
def built(memory_repo: MemoryRepo) -> MemoryRepo:
    _fill(memory_repo)
    _build(memory_repo)
    return memory_repo


def test_page_corruption_is_found_by_doctor_and_rebuild_recreates_the_file(
    built: MemoryRepo, cli: Cli
) -> None:
    _corrupt_middle(built.index_path)
    assert dbmod.quick_check(built.index_path)[0] is False

    doctor = cli("doctor", "--json", repo=built)
    report = json.loads(doctor.stdout)
    assert report["ok"] is False
    assert report["index"]["fresh"] is False
    assert any("corrupt" in p for p in report["problems"]), report["problems"]

    rebuilt = cli("index", "rebuild", repo=built)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "Traceback" not in rebuilt.stderr
    assert dbmod.quick_check(built.index_path) == (True, "ok")
    assert len(dbmod.corrupt_copies(built.index_path)) <= 1
    outcome = search_outcome("blue-green pipeline number 7", repo=built)
    assert outcome.source == "index"
    assert outcome.results[0].path == "knowledge/reference/note-007.md"
    assert json.loads(cli("doctor", "--json", repo=built).stdout)["index"]["integrity"] == "ok"


def test_corrupt_copies_never_pile_up(built: MemoryRepo) -> None:
    for _ in range(3):
        built.index_path.write_bytes(b"this is not a database" * 500)
        outcome = search_outcome("blue-green", repo=built)
        assert outcome.results
        assert any("corrupt" in n for n in outcome.notices)
    assert len(dbmod.corrupt_copies(built.index_path)) == 1


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MB tmpfs (root only): room for the index of the notes below and the WAL of its rebuild, little more."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("needs root to mount a small tmpfs")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill_disk(where: Path) -> Path:
    filler = where / "filler"
    with open(filler, "wb", buffering=0) as fh:  # unbuffered: nothing left to flush at close
        for block in (65536, 512):
            try:
                while True:
                    fh.write(b"\0" * block)
            except OSError:
                pass
    return filler


def test_a_full_disk_is_not_corruption(small_disk: Path, cli: Cli) -> None:
    repo = MemoryRepo(init_memory_repo(small_disk / "memory", build_index=False).root)
    _fill(repo, 20)
    _build(repo)
    before = repo.index_path.read_bytes()
    for i in range(40):  # changes the next search must index
        (repo.root / f"knowledge/reference/new-{i}.md").write_text(NOTE.format(i=1000 + i) * 20)
    filler = _fill_disk(small_disk)

    outcome = search_outcome("blue-green pipeline number 3", repo=repo)
    assert outcome.source in ("git grep", "ripgrep")
    assert any("full" in n for n in outcome.notices), outcome.notices
    assert repo.index_path.exists() and not dbmod.corrupt_copies(repo.index_path)

    rebuilt = cli("index", "rebuild", repo=repo)
    assert rebuilt.returncode == 1
    assert "Traceback" not in rebuilt.stderr and "full" in rebuilt.stderr
    assert not dbmod.corrupt_copies(repo.index_path)
    assert repo.index_path.read_bytes() == before  # the old index, untouched

    filler.unlink()
    assert dbmod.quick_check(repo.index_path) == (True, "ok")
    assert cli("index", "rebuild", repo=repo).returncode == 0
    assert search_outcome("blue-green pipeline number 1003", repo=repo).source == "index"


def test_a_read_only_index_falls_back_to_git_grep(small_disk: Path, cli: Cli) -> None:
    repo = MemoryRepo(init_memory_repo(small_disk / "memory", build_index=False).root)
    _fill(repo, 20)
    _build(repo)
    (repo.root / "knowledge/reference/late.md").write_text(
        "# Late\nA late note about the blue-green pipeline.\n"
    )
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        outcome = search_outcome("blue-green pipeline number 4", repo=repo)
        assert outcome.source in ("git grep", "ripgrep")
        assert outcome.results and outcome.notices
        assert any("read-only" in n or "cannot be written" in n for n in outcome.notices), (
            outcome.notices
        )
        searched = cli("search", "blue-green pipeline", repo=repo)
        assert searched.returncode == 0 and "Traceback" not in searched.stderr
        assert repo.index_path.exists() and not dbmod.corrupt_copies(repo.index_path)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)


def test_a_folder_where_the_index_goes_is_a_clear_error_and_left_alone(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    folder = memory_repo.index_path
    folder.mkdir()
    (folder / "keep.txt").write_text("someone's file\n")
    rebuilt = cli("index", "rebuild", repo=memory_repo)
    assert rebuilt.returncode == 1 and "Traceback" not in rebuilt.stderr
    assert "is not a file" in rebuilt.stderr and f"mv {folder} {folder}.aside" in rebuilt.stderr
    found = cli("search", "memory", repo=memory_repo)
    assert found.returncode == 0 and "answered with git grep" in found.stderr
    assert (folder / "keep.txt").read_text() == "someone's file\n"


@pytest.mark.parametrize("where", ["memory.db-wal", "memory.db-shm", "embed cache"])
def test_a_folder_where_a_wal_file_or_the_embedding_cache_goes_is_named_and_left_alone(
    memory_repo: MemoryRepo, cli: Cli, where: str
) -> None:
    """A folder in place of memory.db's WAL files or of the embedding cache: the error names
    it and says to move it (it said `memory.db failed (unable to open database file)` or
    called memory.db read-only, and told to run `index rebuild`, which failed the same way)."""
    _fill(memory_repo, 3)
    _build(memory_repo)
    if where == "embed cache":
        folder = memory_repo.state_file("embed_cache")
        folder.unlink()
    else:
        folder = memory_repo.root / where
        folder.unlink(missing_ok=True)
    folder.mkdir()
    (folder / "keep.txt").write_text("someone's file\n")
    rebuilt = cli("index", "rebuild", repo=memory_repo)
    assert rebuilt.returncode == 1 and "Traceback" not in rebuilt.stderr
    assert f"{folder} is not a file" in rebuilt.stderr, rebuilt.stderr
    assert f"mv {folder} {folder}.aside" in rebuilt.stderr
    found = cli("search", "blue-green pipeline", repo=memory_repo)
    assert found.returncode == 0 and f"{folder} is not a file" in found.stderr
    assert (folder / "keep.txt").read_text() == "someone's file\n"


def test_a_wal_file_sqlite_removes_while_it_is_checked_is_no_folder(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite removes memory.db-shm as the last connection closes: one gone between the
    check that it exists and the check that it is a file was reported as "not a file (a
    folder or a device stands where the search index keeps one)", and search fell back
    to git grep. A file that is not there is SQLite's to make, whenever it went."""
    _fill(memory_repo, 3)
    _build(memory_repo)
    shm = memory_repo.root / "memory.db-shm"
    shm.unlink(missing_ok=True)
    seen = Path.exists

    def exists_then_gone(self: Path, *args: object, **kwargs: object) -> bool:
        return True if self == shm else seen(self)

    monkeypatch.setattr(Path, "exists", exists_then_gone)  # there when asked, gone after
    with SearchIndex(memory_repo) as idx:
        assert idx.search("blue-green pipeline")


def test_a_database_whose_tables_are_not_the_index_s_is_moved_aside_and_rebuilt(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    """An intact SQLite file with tables of the index's names and another shape (another
    program's, a far older build's) is neither a dead end nor written into: `index
    rebuild` and search start a new index and keep the file as the one `.corrupt-*` copy."""
    _fill(memory_repo, 5)
    from autopoiesis.core.sqlite import sqlite_module

    conn = sqlite_module().connect(memory_repo.index_path)
    conn.execute("CREATE TABLE files (name TEXT, owner TEXT)")
    conn.execute("INSERT INTO files VALUES ('someone', 'else')")
    conn.commit()
    conn.close()
    assert dbmod.quick_check(memory_repo.index_path)[0] is True

    rebuilt = cli("index", "rebuild", repo=memory_repo)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "tables are not the search index's" in rebuilt.stderr
    (kept,) = [
        p
        for p in dbmod.corrupt_copies(memory_repo.index_path)
        if not p.name.endswith(("-wal", "-shm"))
    ]
    conn = sqlite_module().connect(kept)
    assert conn.execute("SELECT * FROM files").fetchall() == [("someone", "else")]
    conn.close()
    found = cli("search", "blue-green pipeline", "--json", repo=memory_repo)
    assert found.returncode == 0 and "git grep" not in found.stderr, found.stderr
    assert json.loads(found.stdout)[0]["path"].startswith("knowledge/reference/note-")


def _big_notes(repo: MemoryRepo, n: int) -> list[Path]:
    """N notes of ~12 KB of words that do not compress away (their chunk texts fill
    pages of their own, which their removal frees)."""
    import random

    rng = random.Random(7)
    words = [f"{w}{k}" for k in range(400) for w in ("queue", "deploy", "ledger", "shard")]
    paths = []
    for i in range(n):
        p = repo.root / f"knowledge/reference/big-{i:03d}.md"
        body = "\n\n".join(" ".join(rng.choices(words, k=120)) for _ in range(14))
        p.write_text(NOTE.format(i=i) + "\n## Notes\n" + body + "\n")
        paths.append(p)
    return paths


def _pages(path: Path) -> tuple[int, int]:
    from autopoiesis.core.sqlite import sqlite_module  # the index's own SQLite

    conn = sqlite_module().connect(path)
    try:
        return (
            conn.execute("PRAGMA page_count").fetchone()[0],
            conn.execute("PRAGMA freelist_count").fetchone()[0],
        )
    finally:
        conn.close()


def _freed(repo: MemoryRepo, notes: int, removed: int) -> tuple[int, int]:
    """Index NOTES big notes, remove the first REMOVED and catch the index up: (pages,
    free pages) of memory.db then, the free ones over what the upkeep leaves."""
    paths = _big_notes(repo, notes)
    _build(repo)
    for p in paths[:removed]:
        p.unlink()
    with SearchIndex(repo) as index:
        index.catch_up()
    pages, free = _pages(repo.index_path)
    assert free > pages // dbmod.RECLAIM_SHARE  # what a big removal or catch-up leaves
    return pages, free


def test_the_pages_a_big_removal_freed_are_given_back_by_the_background_upkeep(
    memory_repo: MemoryRepo,
) -> None:
    from autopoiesis.index.background import sync_until_fresh

    _, free = _freed(memory_repo, 120, 100)
    size = memory_repo.index_path.stat().st_size
    with SearchIndex(memory_repo) as index:
        said: list[str] = []
        sync_until_fresh(index, log=said.append)
        assert f"gave the disk back {free} free pages" in said, said
        assert _pages(memory_repo.index_path)[1] == 0
        assert memory_repo.index_path.stat().st_size < size - free * dbmod.PAGE_SIZE // 2
        hits = index.search("blue-green pipeline number 110", 3)
        assert hits and hits[0].path == "knowledge/reference/big-110.md"
        assert index.compact() == []  # nothing left to give back: no second rewrite
    assert dbmod.quick_check(memory_repo.index_path) == (True, "ok")


def test_free_pages_are_kept_when_the_disk_has_no_room_for_the_rewrite(
    small_disk: Path,
) -> None:
    """The background sync (the real detached process) on a full disk that holds its
    temporary files too: the rewrite fails, the sync says so and goes on, memory.db is
    as it was; with room again the next sync gives the pages back."""
    import sys

    repo = MemoryRepo(init_memory_repo(small_disk / "memory", build_index=False).root)
    pages, free = _freed(repo, 60, 50)

    def background_sync() -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "SQLITE_TMPDIR": str(small_disk)}  # VACUUM's copy goes there
        cmd = [sys.executable, "-m", "autopoiesis.index.sync", "--root", str(repo.root)]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)

    filler = _fill_disk(small_disk)
    # room for a sync's small writes, not for a copy of the file
    os.truncate(filler, filler.stat().st_size - 256 * 1024)
    assert pages * dbmod.PAGE_SIZE > 4 * 256 * 1024
    done = background_sync()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: free pages kept: " in done.stdout and "full" in done.stdout, done.stdout
    filler.unlink()
    assert dbmod.quick_check(repo.index_path) == (True, "ok")
    assert _pages(repo.index_path) == (pages, free)  # as it was
    assert search_outcome("blue-green pipeline number 55", repo=repo).source == "index"

    done = background_sync()  # room again
    assert f"gave the disk back {free} free pages" in done.stdout, done.stdout
    assert _pages(repo.index_path)[1] == 0
