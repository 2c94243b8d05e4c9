"""A team's sync left unattended: the properties of issue 26's three-clone scenario at a
small scale (bench/bench_team.py runs the whole scenario). Real clones, a real bare
remote, the real hooks, merge driver and knowledge writer."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import knowledge as kf
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
from autopoiesis.knowledge.writer import KnowledgeWriter
from autopoiesis.memory.sync import sync_once
from tests.memory.test_sync import T0, _capture, _clone, _entries, _first_clone, _git

pytestmark = pytest.mark.slow

DATES = "knowledge/reference/atlas.md"


def _say(repo: MemoryRepo, sid: str, text: str, hours: int) -> str:
    """A session that states the date of the atlas launch, and its fact (what the facts
    extractor hands the writer: the `atlas launch date` subject)."""
    when = T0 + timedelta(hours=hours)
    src = _capture(repo, sid, text, when)
    change = KnowledgeChange(
        DATES,
        "append",
        "Dates",
        text,
        Provenance(src, when, "facts@2", sid),
        subject="atlas launch date",
    )
    added = KnowledgeWriter(repo).apply([change]).added
    assert len(added) == 1
    return added[0][1]


def _live(repo: MemoryRepo, subject: str) -> list[kf.Entry]:
    return [e for e in _entries(repo).values() if e.subject == subject and e.active]


def test_two_clones_that_set_one_subject_unaware_of_each_other_end_with_the_later_value(
    tmp_path: Path,
) -> None:
    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    early = _say(a, "ses_a", "The atlas launch is planned for June 3", 1)
    late = _say(b, "ses_b", "The atlas launch moved to June 17", 2)
    sync_once(a)
    report = sync_once(b)  # B merges A's earlier value: its own later one wins
    assert report.merge == "merged" and report.settled
    sync_once(a)
    for repo in (a, b):
        live = _live(repo, "atlas-launch-date")
        assert [e.id for e in live] == [late], [e.render() for e in live]
        assert _entries(repo)[early].superseded_by == late  # history kept, struck through
        current = kf.current_text((repo.root / DATES).read_text())
        assert "June 17" in current and "June 3" not in current
    assert _git(a, "rev-parse", "HEAD") == _git(b, "rev-parse", "HEAD")

    # the other order: the later value is merged into the clone that holds the earlier one
    later = _say(a, "ses_a2", "The atlas launch moved to June 24", 4)
    earlier = _say(b, "ses_b2", "The atlas launch moved to June 20", 3)
    sync_once(b)
    sync_once(a)
    sync_once(b)
    for repo in (a, b):
        assert [e.id for e in _live(repo, "atlas-launch-date")] == [later]
        assert _entries(repo)[earlier].superseded_by == later
    assert _git(a, "status", "--porcelain") == _git(b, "status", "--porcelain") == ""
