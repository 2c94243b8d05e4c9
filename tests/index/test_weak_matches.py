"""`search` says when a match is weak (no word of the query in it, and not close by
meaning), and shows the project and the date of each hit; --json carries both."""

from __future__ import annotations

import json

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import Cli


def _filled(memory_repo: MemoryRepo, cli: Cli, commit_all) -> MemoryRepo:
    folder = memory_repo.knowledge_dir / "projects" / "billing"
    folder.mkdir(parents=True)
    (folder / "context.md").write_text(
        "---\ntype: project_context\nproject: billing\n---\n\n# Billing\n\n## Facts\n"
        "- The billing database runs Postgres 17 on pg-billing-2 {id: 20260302-0912-4be1a0}\n"
    )
    commit_all(memory_repo, "memory: billing")
    cli("index", "rebuild", "--quiet", repo=memory_repo, check=True)
    return memory_repo


def test_a_hit_shows_its_project_and_date_and_a_miss_is_weak(
    memory_repo: MemoryRepo, cli: Cli, commit_all, tmp_path
) -> None:
    repo = _filled(memory_repo, cli, commit_all)
    r = cli("search", "postgres billing database", "--all-projects", repo=repo, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert "knowledge/projects/billing/context.md" in first
    assert "(project, billing, 2026-03-02)" in first and "weak" not in first
    hits = json.loads(
        cli("search", "postgres", "--json", "--all-projects", repo=repo, cwd=tmp_path).stdout
    )
    assert hits[0]["project"] == "billing" and hits[0]["date"] == "2026-03-02"
    assert hits[0]["weak"] is False

    r = cli("search", "zygomorphic xylophones", "--all-projects", repo=repo, cwd=tmp_path)
    assert r.returncode == 0
    lines = [l for l in r.stdout.splitlines() if l and not l.startswith("    ")]
    assert lines and all("(weak: no word of the query in it)" in l for l in lines)
    assert "no result holds a word of the query" in r.stderr
    weak = json.loads(
        cli("search", "zygomorphic xylophones", "--json", repo=repo, cwd=tmp_path).stdout
    )
    assert weak and all(h["weak"] for h in weak)
    explained = cli("search", "zygomorphic", "--explain", repo=repo, cwd=tmp_path).stdout
    assert "bm25: no word of the query" in explained and "None" not in explained
