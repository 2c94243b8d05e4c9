"""The Memory façade end to end on a real memory repo: capture a session, extract, search,
compile (which counts usage), prune and condense with those counts, commit; and a Memory
that costs nothing to construct."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from autopoiesis import Memory
from autopoiesis.capture.session import Session
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import GitError, NotAMemoryRepo

SESSION = [
    ("user", "Let's settle where the billing service keeps its data."),
    ("agent", "Two options: Postgres 16 or the old MySQL cluster."),
    (
        "user",
        "We decided: the billing service stays on Postgres 16. "
        "Lesson learned: always run the migrations in a transaction.",
    ),
]


def _manual(root: Path) -> None:
    """Extraction on request only, so the test runs each step itself."""
    config = root / "memory-config.yaml"
    text = config.read_text().replace(
        "extraction_trigger: on_session_end", "extraction_trigger: manual"
    )
    config.write_text(text)


def _capture(memory: Memory, sid: str) -> str:
    cap = memory.capture()
    s = Session(sid, started=datetime(2026, 2, 16, 18, 45, tzinfo=UTC), model="m", channel="cli")
    cap.on_session_start(s)
    for n, (role, text) in enumerate(SESSION):  # a minute apart, in the session's time
        cap.on_message(s, role, text, {"timestamp": f"2026-02-16T18:{46 + n:02d}:00Z"})
    closed = cap.on_session_end(s, ended="2026-02-16T18:59:00Z")
    assert closed is not None and closed.commit
    return closed.path


def _subjects(root: Path, n: int) -> list[str]:
    out = subprocess.run(
        ["git", "log", f"-{n}", "--format=%s"], cwd=root, capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()


def test_capture_extract_search_compile_prune_condense_commit(memory_repo: MemoryRepo) -> None:
    _manual(memory_repo.root)
    memory = Memory(memory_repo.root)
    assert memory.config.lifecycle.extraction_trigger == "manual"
    assert memory.config is memory.config  # read once
    transcript = _capture(memory, "fac1")
    assert _subjects(memory.root, 1)[0].startswith("conversation:")  # nothing extracted yet

    extraction = memory.extract(pending=True)
    assert transcript in extraction.report.transcripts
    assert extraction.report.added >= 1 and extraction.commit
    assert extraction.next_retry_at is None
    assert _subjects(memory.root, 1)[0].startswith("memory:")
    assert not memory.extract(pending=True).commit  # exactly once

    outcome = memory.search_outcome("Postgres billing", limit=20)
    paths = {r.path for r in outcome.results}
    assert any(p.startswith("knowledge/") for p in paths), paths
    assert transcript in paths

    assert memory.usage() == {}
    result, _ = memory.compile("Where does the billing service keep its data? Postgres?")
    assert "Postgres 16" in result.prompt
    usage = memory.usage()
    assert usage and set(usage) == set(result.knowledge_paths)
    memory.compile("And the migrations?", record=False)
    assert memory.usage() == usage  # RECORD=False counts nothing

    # prune and condense are given the usage counts, here and nowhere else
    with memory.pruner() as p:
        assert dict(p.usage) == usage
    with memory.condenser() as c:
        assert dict(c.pruner.usage) == usage
    condensed = memory.condense("daily", date(2026, 2, 16))  # the extraction wrote that journal
    assert "3 already there" in condensed.summary() and condensed.commit is None
    with pytest.raises(ValueError, match="unknown period"):
        memory.condense("hourly")
    pruned = memory.prune()  # the journal is past lifecycle.journal_retention_days
    assert pruned.commit and (memory.root / "archive/journal/2026-02-16.md").exists()

    (memory.root / "knowledge/reference/notes.md").write_text(
        "# Notes\n\n- the invoice run is on the 3rd\n"
    )
    conversations, knowledge = memory.commit("memory: the invoice run")
    assert conversations is not None and conversations.sha is None  # all committed already
    assert knowledge.sha and _subjects(memory.root, 1) == ["memory: the invoice run"]
    assert memory.commit().knowledge.sha is None
    assert memory.push_after_commit() == (None, None)  # git.auto_push is off
    assert memory.verify().ok


def test_capture_extracts_after_the_commit_when_the_config_says_so(memory_repo: MemoryRepo) -> None:
    memory = Memory(memory_repo)
    assert memory.repo is memory_repo and memory.after_commit() is not None
    _capture(memory, "fac2")
    subjects = _subjects(memory.root, 2)
    assert subjects[0].startswith("memory:") and subjects[1].startswith("conversation:")


def test_extracting_named_transcripts_gives_one_report(memory_repo: MemoryRepo) -> None:
    _manual(memory_repo.root)
    memory = Memory(memory_repo.root)
    first, second = _capture(memory, "fac3"), _capture(memory, "fac4")
    one = memory.extract([first], commit=False)
    assert one.commit is None and one.report.transcripts == (first,)
    both = memory.extract([first, second], commit=False, force=True).report
    assert set(both.transcripts) == {first, second}
    assert len(both.processed) == 2 * len(one.report.processed)
    assert list(both.paths) == sorted(set(both.paths))
    assert memory.extract(commit=False).report.transcripts == ()  # nothing named: nothing done


def test_locate_finds_the_memory_as_the_cli_does(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Memory.locate(memory_repo.root).repo == memory_repo
    monkeypatch.setenv("AUTOPOIESIS_REPO", str(memory_repo.root))
    assert Memory.locate().root == memory_repo.root
    with pytest.raises(NotAMemoryRepo, match="autopoiesis init"):
        Memory.locate(tmp_path)
    with pytest.raises(GitError, match="There is no branch 'nope'"):
        Memory(memory_repo).verify(branch="nope")


def test_constructing_a_memory_loads_no_service(memory_repo: MemoryRepo) -> None:
    root = str(memory_repo.root)
    code = (
        "import sys\nfrom autopoiesis import Memory\n"
        f"m = Memory({root!r})\nm = Memory.locate({root!r})\n"
        "heavy = ('numpy', 'sklearn', 'openai', 'typer', 'yaml', 'autopoiesis.index',\n"
        "         'autopoiesis.knowledge', 'autopoiesis.compiler', 'autopoiesis.capture',\n"
        "         'autopoiesis.topics', 'autopoiesis.llm')\n"
        "print(','.join(h for h in heavy if h in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
