"""The merge driver of knowledge files (git/merge_driver.py): union by entry id, supersede
chains kept, frontmatter by key, prose conflicts surfaced — on real texts, through the
real `git merge-file`, and as git runs it in a real merge."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autopoiesis.formats import knowledge as kf
from autopoiesis.git.merge_driver import main, merge_texts

MEMORY = "knowledge/memory/MEMORY.md"


def _entry(eid: str, text: str, *, by: str | None = None) -> str:
    e = kf.Entry(eid, text, "2026-03-01", "raw/c/s.md", "2026-03-01T09:00Z")
    return (e.superseded(by) if by else e).render()


def _doc(
    *lines: str,
    sessions: str = "[]",
    updated: str = "2026-03-01T09:00:00Z",
    lessons: tuple[str, ...] = (),
) -> str:
    body = "\n".join(lines)
    extra = "\n".join(lessons)
    return (
        f"---\ntype: memory\nupdated: {updated}\nsessions: {sessions}\nentry_count: 0\n---\n\n# Core Memory\n\n"
        f"## Key Decisions\n{body}\n\n## Lessons Learned\n{extra}\n"
    )


def _ids(text: str) -> dict[str, kf.Entry]:
    return {e.id: e for _, e in kf.parse(text).entries()}


E1, E2, E3, E4, E5 = (f"20260301-0900-00000{i}" for i in range(1, 6))


def test_entries_both_sides_appended_are_united_and_counted() -> None:
    base = _doc(_entry(E1, "one"))
    ours = _doc(
        _entry(E1, "one"),
        _entry(E2, "two from ours"),
        updated="2026-03-01T10:00:00Z",
        sessions="[a]",
    )
    theirs = _doc(
        _entry(E1, "one"),
        _entry(E3, "three from theirs"),
        updated="2026-03-01T11:00:00Z",
        sessions="[b]",
        lessons=(_entry(E4, "a lesson from theirs"),),
    )
    merged = merge_texts(base, ours, theirs, MEMORY)
    assert merged.conflicts == 0
    assert list(_ids(merged.text)) == [E1, E2, E3, E4]
    meta = kf.parse(merged.text).meta()
    assert meta["entry_count"] == 4 and meta["sessions"] == ["a", "b"]
    assert str(meta["updated"]).startswith("2026-03-01") and "11:00" in str(meta["updated"])
    assert meta["line_count"] == kf.parse(merged.text).line_count()
    assert merge_texts(base, ours, base, MEMORY).text == ours  # one side changed: taken as it is


def test_an_entry_written_twice_on_one_side_merges_as_one() -> None:
    """A writer race of older versions left some files holding one entry twice; a merge
    of such a file stopped every sync with a conflict. The copy merges as its entry."""
    base = _doc(_entry(E1, "one"))
    ours = _doc(_entry(E1, "one"), _entry(E2, "two from ours"))
    theirs = _doc(_entry(E1, "one"), _entry(E3, "three"), _entry(E3, "three"), _entry(E4, "four"))
    merged = merge_texts(base, ours, theirs, MEMORY)
    assert merged.conflicts == 0, merged.text
    assert [e.id for _, e in kf.parse(merged.text).entries()] == [E1, E2, E3, E4]
    # two entries under one id that differ are not copies: a person decides
    theirs = _doc(_entry(E1, "one"), _entry(E3, "three"), _entry(E3, "three, changed"))
    assert merge_texts(base, ours, theirs, MEMORY).conflicts == 1


def test_supersede_chains_are_kept_from_either_side() -> None:
    base = _doc(_entry(E1, "keep sqlite"))
    ours = _doc(_entry(E1, "keep sqlite", by=E2), _entry(E2, "markdown files"))
    theirs = _doc(
        _entry(E1, "keep sqlite, for now"), _entry(E3, "an unrelated decision")
    )  # a hand edit of E1
    merged = _ids(merge_texts(base, ours, theirs, MEMORY).text)
    assert merged[E1].superseded_by == E2 and merged[E1].text == "keep sqlite, for now"
    assert merged[E2].active and E3 in merged
    # superseded differently on both sides: struck, both successors named
    theirs2 = _doc(_entry(E1, "keep sqlite", by=E3), _entry(E3, "postgres"))
    both = _ids(merge_texts(base, ours, theirs2, MEMORY).text)
    assert not both[E1].active and {t for t in both[E1].tags} == {
        f"superseded-by:{E2}",
        f"superseded-by:{E3}",
    }
    assert both[E2].active and both[E3].active


def test_a_removed_entry_stays_removed_unless_the_other_side_changed_it() -> None:
    base = _doc(_entry(E1, "old"), _entry(E2, "kept"))
    pruned = _doc(_entry(E2, "kept"), _entry(E4, "new on the pruning side"))
    untouched = _doc(_entry(E1, "old"), _entry(E2, "kept"), _entry(E3, "new"))
    merged = _ids(merge_texts(base, pruned, untouched, MEMORY).text)
    assert E1 not in merged and {E2, E3, E4} <= set(
        merged
    )  # the pruner's move wins over an untouched copy
    superseded = _doc(_entry(E1, "old", by=E3), _entry(E2, "kept"), _entry(E3, "new"))
    merged = _ids(merge_texts(base, pruned, superseded, MEMORY).text)
    assert E1 in merged and merged[E1].superseded_by == E3  # changed on one side: kept, not lost


def test_prose_and_field_conflicts_are_marked_never_resolved_silently() -> None:
    base = _doc(_entry(E1, "one"), "- a hand-written bullet")
    ours = _doc(_entry(E1, "one"), "- a hand-written bullet, our words")
    theirs = _doc(_entry(E1, "one"), "- a hand-written bullet, their words")
    merged = merge_texts(base, ours, theirs, MEMORY)
    assert merged.conflicts == 1
    assert (
        "<<<<<<< ours\n- a hand-written bullet, our words\n=======\n- a hand-written bullet, their words\n>>>>>>> theirs"
        in merged.text
    )
    edited = merge_texts(
        _doc(_entry(E1, "one")),
        _doc(_entry(E1, "one, said ours")),
        _doc(_entry(E1, "one, said theirs")),
        MEMORY,
    )
    assert edited.conflicts == 1 and "said ours" in edited.text and "said theirs" in edited.text
    typed = merge_texts(
        "---\ntype: a\n---\nx\n",
        "---\ntype: b\n---\nx\n",
        "---\ntype: c\n---\nx\n",
        "knowledge/reference/r.md",
    )
    assert typed.conflicts == 1 and "type: b\n=======\ntype: c" in typed.text


entry_ids = st.lists(st.integers(min_value=10, max_value=99), min_size=0, max_size=12, unique=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared=entry_ids, mine=entry_ids, others=entry_ids)
def test_no_entry_written_on_either_side_is_lost(
    shared: list[int], mine: list[int], others: list[int]
) -> None:
    def eid(n: int, side: str) -> str:
        return f"20260301-09{n:02d}-{side}{n:04x}"[:20]

    base_lines = [_entry(eid(n, "00"), f"shared {n}") for n in shared]
    ours = base_lines + [_entry(eid(n, "aa"), f"ours {n}") for n in mine]
    theirs = base_lines + [_entry(eid(n, "bb"), f"theirs {n}") for n in others]
    merged = merge_texts(_doc(*base_lines), _doc(*ours), _doc(*theirs), MEMORY)
    assert merged.conflicts == 0
    want = (
        {eid(n, "00") for n in shared}
        | {eid(n, "aa") for n in mine}
        | {eid(n, "bb") for n in others}
    )
    assert set(_ids(merged.text)) == want
    assert kf.render(kf.parse(merged.text)) == merged.text


def test_the_driver_command_writes_the_merge_and_falls_back_on_bytes_it_cannot_read(
    tmp_path: Path,
) -> None:
    base, ours, theirs = (tmp_path / n for n in ("base", "ours", "theirs"))
    base.write_text(_doc(_entry(E1, "one")))
    ours.write_text(_doc(_entry(E1, "one"), _entry(E2, "two")))
    theirs.write_text(_doc(_entry(E1, "one"), _entry(E3, "three")))
    assert main([str(base), str(ours), str(theirs), MEMORY]) == 0
    assert set(_ids(ours.read_text())) == {E1, E2, E3}
    # not UTF-8: git's own line merge, in place, conflict reported
    base.write_bytes(b"a\n\xff\n")
    ours.write_bytes(b"a\n\xff ours\n")
    theirs.write_bytes(b"a\n\xff theirs\n")
    assert main([str(base), str(ours), str(theirs), "knowledge/x.md"]) == 1
    assert b"<<<<<<< ours" in ours.read_bytes() and b"\xff theirs" in ours.read_bytes()


def test_git_runs_the_driver_in_a_real_merge(memory_repo, git) -> None:
    memory = memory_repo.root / MEMORY
    start = memory.read_text()
    git(memory_repo, "checkout", "-q", "-b", "other")
    memory.write_text(
        start.replace("## Lessons Learned\n", f"## Lessons Learned\n{_entry(E3, 'from other')}\n")
    )
    git(memory_repo, "commit", "-qam", "memory: other")
    git(memory_repo, "checkout", "-q", "main")
    memory.write_text(
        start.replace("## Lessons Learned\n", f"## Lessons Learned\n{_entry(E2, 'from main')}\n")
    )
    git(memory_repo, "commit", "-qam", "memory: main")
    done = git(memory_repo, "merge", "--no-edit", "other", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {E2, E3} <= set(_ids(memory.read_text()))
    # the driver's start-up: what git pays per file both sides changed
    started = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autopoiesis.git.merge_driver"],
        capture_output=True,
        text=True,
    )
    assert started.returncode == 2 and "usage" in started.stderr
    assert (
        "numpy" not in started.stderr and " git\n" not in started.stderr
    )  # no numpy, no GitPython


JOURNAL = "knowledge/journal/2026-03-01.md"
channels = st.lists(st.sampled_from(["cli", "slack", "webchat", "email", "atlas"]), max_size=4)


def _journal(writes: list[tuple[str, str, int]], start: str | None = None) -> str:
    """The day's journal as the knowledge writer writes it: (channel, session, hour) each
    a `### <channel>` section entry, on top of START (the text of an earlier version)."""
    import tempfile

    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.writer import KnowledgeWriter

    with tempfile.TemporaryDirectory() as tmp:
        repo = MemoryRepo(Path(tmp))
        path = repo.root / JOURNAL
        path.parent.mkdir(parents=True)
        if start is not None:
            path.write_text(start, encoding="utf-8")
        changes = [
            KnowledgeChange(
                JOURNAL,
                "append",
                channel,
                f"{channel} session {session} worked on item {session}",
                Provenance(f"raw/conversations/2026/03/01/0900-{session}-x.md", at, "j@1", session),
                dated=False,
                section_level=3,
            )
            for channel, session, at in (
                (c, s, datetime(2026, 3, 1, h, 0, tzinfo=UTC)) for c, s, h in writes
            )
        ]
        KnowledgeWriter(repo).apply(changes)
        return path.read_text(encoding="utf-8") if path.exists() else (start or "")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared=channels, mine=channels, others=channels, has_base=st.booleans())
def test_a_day_journal_written_from_other_channels_on_two_machines_merges_without_a_person(
    shared: list[str], mine: list[str], others: list[str], has_base: bool
) -> None:
    """The generated `### <channel>` headings are structure, not prose: two machines that
    wrote the same day from different channels used to stop every sync with a conflict."""
    base = _journal([(c, f"s{i}", 9) for i, c in enumerate(shared)]) if has_base else ""
    ours = _journal([(c, f"a{i}", 10) for i, c in enumerate(mine)], base if has_base else None)
    theirs = _journal([(c, f"b{i}", 11) for i, c in enumerate(others)], base if has_base else None)
    merged = merge_texts(base, ours, theirs, JOURNAL)
    assert merged.conflicts == 0, merged.text
    assert set(_ids(merged.text)) == set(_ids(ours)) | set(_ids(theirs))
    doc = kf.parse(merged.text)
    titles = [s.title for s in doc.sections if s.level == 3]
    assert sorted(titles) == sorted(set(shared + mine + others) if has_base else set(mine + others))
    for section in doc.sections:  # every entry under the channel it was written for
        for entry in section.entries():
            assert entry.text.startswith(section.title + " session ")
    assert kf.render(kf.parse(merged.text)) == merged.text
    assert doc.meta().get("entry_count", 0) == len(_ids(merged.text))


def test_git_merges_a_journal_both_branches_started_the_same_day(memory_repo, git) -> None:
    """No base (both sides created the file: git's add/add) goes through the driver too."""
    path = memory_repo.root / JOURNAL
    path.parent.mkdir(parents=True, exist_ok=True)
    git(memory_repo, "checkout", "-q", "-b", "other")
    path.write_text(_journal([("slack", "b1", 11)]))
    git(memory_repo, "add", JOURNAL)
    git(memory_repo, "commit", "-qm", "memory: slack")
    git(memory_repo, "checkout", "-q", "main")
    path.write_text(_journal([("cli", "a1", 10), ("webchat", "a2", 10)]))
    git(memory_repo, "add", JOURNAL)
    git(memory_repo, "commit", "-qm", "memory: cli")
    done = git(memory_repo, "merge", "--no-edit", "other", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    titles = [s.title for s in kf.parse(path.read_text()).sections if s.level == 3]
    assert titles == ["cli", "webchat", "slack"]
