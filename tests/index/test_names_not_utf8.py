"""A file whose name is not UTF-8 (a byte like 0xC1 that another tool or a collaborator's
file system left in it) reads in Python as a lone surrogate, which SQLite, RE2 and strict
UTF-8 refuse. It is refused at commit; one that is there anyway (committed without the
hooks) is skipped by the index with a warning, and search, `index status` and `doctor`
go on; a command given such a name says what is wrong. Real repos, real git, real hooks,
real processes."""

from __future__ import annotations

import os

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index import SearchIndex

ODD = "knowledge/reference/x" + os.fsdecode(b"\xc1") + "y.md"  # "x\udcc1y.md"


def _plant(repo: MemoryRepo) -> None:
    (repo.root / ODD).write_text("# Odd\n\nthe quokka ledger\n", encoding="utf-8")
    good = repo.root / "knowledge/reference/plain.md"
    good.write_text("# Plain\n\nthe quokka register\n", encoding="utf-8")


def test_the_pre_commit_hook_refuses_a_name_that_is_not_utf8(memory_repo: MemoryRepo, git) -> None:
    _plant(memory_repo)
    git(memory_repo, "add", "-A")
    done = git(memory_repo, "commit", "-m", "odd", check=False)
    assert done.returncode != 0
    assert "x\\udcc1y.md: its name is not UTF-8" in done.stderr
    assert "git rm --cached" in done.stderr


def test_the_index_skips_it_with_a_warning_and_search_goes_on(
    memory_repo: MemoryRepo, git, cli
) -> None:
    _plant(memory_repo)
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "--no-verify", "-m", "odd, past the hooks")
    with SearchIndex(memory_repo) as index:
        report = index.rebuild_full()
        assert any("x\\udcc1y.md: its name is not UTF-8" in w for w in report.warnings)
        assert [r.path for r in index.search("quokka", limit=5)] == ["knowledge/reference/plain.md"]
        assert index.status().fresh  # not "behind" by a file it can never hold
    # a second one, only in the work tree: the catch-up of the next search meets it
    (memory_repo.root / ODD.replace("x", "z")).write_text("# Z\n\nquokka\n", encoding="utf-8")
    found = cli("search", "quokka", "--json", repo=memory_repo, process=True)
    assert found.returncode == 0, found.stderr
    assert "Traceback" not in found.stderr and "z\\udcc1y.md" in found.stderr
    doctor = cli("doctor", repo=memory_repo, process=True)
    assert "Traceback" not in doctor.stdout + doctor.stderr
    assert "the check failed" not in doctor.stdout


def test_a_command_given_such_a_name_says_what_is_wrong(memory_repo: MemoryRepo, cli) -> None:
    for args in (("links", ODD), ("blame", ODD), ("mv", ODD, "knowledge/reference/y.md")):
        done = cli(*args, repo=memory_repo, process=True)
        assert done.returncode == 1, (args, done)
        assert "is not UTF-8 text" in done.stderr and "Traceback" not in done.stderr, args
    # and a note that is not there is no note without links
    done = cli("links", "knowledge/reference/nothere.md", repo=memory_repo)
    assert done.returncode == 1 and "there is no note knowledge/reference/nothere.md" in (
        done.stderr
    )
