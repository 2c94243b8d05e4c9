"""Replay onto extract/* branches in a separate worktree; compare; resume; bad situations."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import ReplayError
from autopoiesis.git.repo import MemoryGit
from autopoiesis.knowledge import replay as rp
from tests.knowledge.helpers import DEMO, import_sessions, session, use_llm

pytestmark = pytest.mark.slow


def many(n: int) -> list[dict]:
    return [
        session(
            f"ses_{i:03d}",
            f"2026-02-{1 + i % 27:02d}T{8 + i % 10:02d}:{i % 60:02d}:00Z",
            (
                "user",
                f"We decided to use tool{i} for the task {i}. Lesson learned: check item{i} twice.",
            ),
            ("agent", f"Noted about tool{i}."),
        )
        for i in range(n)
    ]


def test_replay_in_worktree_leaves_the_user_tree_alone(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    import_sessions(memory_repo, tmp_path, DEMO)
    git = MemoryGit(memory_repo)
    root = memory_repo.root
    mem = root / "knowledge/memory/MEMORY.md"
    mem.write_text(mem.read_text() + "- my uncommitted edit\n")  # a dirty working tree
    stray = root / "raw/conversations/2026/03/01/0900-ses_z-wip.md"
    stray.parent.mkdir(parents=True)
    stray.write_text("work in progress")
    status_before, head_before = git.run("status", "--porcelain").stdout, git.head()
    res = rp.replay_branch(memory_repo, "extract/v2")
    assert git.current_branch() == "main"
    assert git.head() == head_before
    assert git.run("status", "--porcelain").stdout == status_before
    assert "my uncommitted edit" in mem.read_text()
    assert res.not_included == ("raw/conversations/2026/03/01/0900-ses_z-wip.md",)
    assert git.run("log", "-1", "--format=%s", "extract/v2").stdout.startswith(
        "extract: replay 2 transcripts"
    )
    assert git.tag_exists("memory/extract/v2")
    assert (
        "maria-lopez.md"
        in git.run("ls-tree", "-r", "--name-only", "extract/v2", "--", "knowledge/people").stdout
    )
    assert (
        "knowledge/identity/SOUL.md" in git.run("ls-tree", "-r", "--name-only", "extract/v2").stdout
    )
    assert not Path(res.worktree).exists()
    assert "worktrees" not in git.run("worktree", "list").stdout.split("\n", 1)[-1]
    c = res.comparison
    assert c is not None
    assert dict((k, a) for k, a, _ in c.per_category)["person"] >= 2
    assert c.only_b
    assert not c.only_a
    out = rp.format_result(res)
    assert "git diff main..extract/v2 --stat -- knowledge/" in out
    assert "knowledge/people/maria-lopez.md" in out
    with pytest.raises(ReplayError, match="already exists.*--force"):
        rp.replay_branch(memory_repo, "extract/v2")
    res2 = rp.replay_branch(memory_repo, "v2", extractors=["decisions"], force=True)
    assert (
        "maria-lopez.md"
        not in git.run(
            "ls-tree", "-r", "--name-only", "extract/v2", "--", "knowledge/people"
        ).stdout
    )
    assert any("is on" in n and "never moved" in n for n in res2.notes)  # the tag is never moved


def test_replay_clear_messages(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="no committed transcripts"):
        rp.replay_branch(memory_repo, "extract/empty")
    assert not MemoryGit(memory_repo).branch_exists("extract/empty")
    with pytest.raises(ReplayError, match="no branch 'trunk'"):
        rp.replay_branch(memory_repo, "extract/x", base="trunk")
    import_sessions(memory_repo, tmp_path, DEMO[:1])
    git = MemoryGit(memory_repo)
    git.run("checkout", "-q", "--detach")
    res = rp.replay_branch(memory_repo, "extract/d")
    assert any("detached HEAD" in n for n in res.notes)
    assert git.current_branch() is None
    with pytest.raises(ReplayError, match="not a branch or commit"):
        rp.compare_refs(memory_repo, "main", "extract/nope")
    # an unknown extractor is refused before a branch, a worktree or a record exists (it
    # left all three, and the name could then be used only with --force)
    from autopoiesis.errors import UnknownExtractorError

    with pytest.raises(UnknownExtractorError, match=r"the versions: .*decisions@3"):
        rp.replay_branch(memory_repo, "extract/m2", extractors=["bogus"])
    assert not git.branch_exists("extract/m2")
    assert not (memory_repo.state_file("worktrees_dir") / "m2").exists()


def test_replay_resumes_after_a_crash(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    import_sessions(memory_repo, tmp_path, many(40))
    seen: list[int] = []
    partial = rp.replay_branch(
        memory_repo, "extract/r", stop_after=20, progress=lambda d, t, p: seen.append(d), llm=None
    )
    assert partial.commit is None
    assert seen[-1] >= 20  # "crashed" half way
    res = rp.replay_branch(memory_repo, "extract/r")
    assert res.resumed_from >= 20
    assert res.commit
    rp.replay_branch(memory_repo, "extract/clean")
    c = rp.compare_refs(memory_repo, "extract/r", "extract/clean")
    assert not c.only_a
    assert not c.only_b
    assert c.stat == ""


def test_llm_replay_is_concurrent_and_cached(
    memory_repo: MemoryRepo, tmp_path: Path, openai_server
) -> None:
    import_sessions(memory_repo, tmp_path, many(12))
    repo = use_llm(memory_repo, openai_server.base_url, concurrency=4)
    MemoryGit(repo).commit_paths(["memory-config.yaml"], "maintenance: use the loopback LLM\n")
    openai_server.latency = 0.05
    openai_server.default_chat = lambda body: {
        "content": json.dumps({"lessons": [{"lesson": "Check items twice"}]})
    }
    res = rp.replay_branch(repo, "extract/llm", extractors=["lessons"])
    assert len(openai_server.chat_bodies()) == 12
    assert openai_server.max_in_flight > 1
    assert {f for _, _, f in res.report.processed} == {"llm"}
    openai_server.reset()
    rp.replay_branch(repo, "extract/llm2", extractors=["lessons"])
    assert openai_server.chat_bodies() == []  # unchanged inputs: every answer from the cache


def test_cli_replay_and_compare(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from autopoiesis.cli import app

    import_sessions(memory_repo, tmp_path, DEMO)
    runner = CliRunner()
    base = ["-C", str(memory_repo.root), "replay"]
    r = runner.invoke(app, base + ["--branch", "extract/a", "--extractors", "decisions"])
    assert r.exit_code == 0, r.output
    assert "tag memory/extract/a" in r.output, r.output
    r = runner.invoke(app, base + ["--branch", "extract/b"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, base + ["--compare", "extract/a", "extract/b"])
    assert r.exit_code == 0, r.output
    assert "facts only on extract/b" in r.output, r.output
    r = runner.invoke(app, base + ["--branch", "extract/a"])
    assert r.exit_code != 0
    assert "already exists" in str(r.exception)


def test_a_replay_interrupted_before_its_base_moved_starts_afresh(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A killed replay resumed on the old base after main had moved: the new transcripts
    were left out, and its commit named main's new commit as its base."""
    import_sessions(memory_repo, tmp_path, many(6))
    git = MemoryGit(memory_repo)
    old_base = git.run("rev-parse", "main").stdout.strip()
    partial = rp.replay_branch(memory_repo, "extract/moved", stop_after=2)
    assert partial.commit is None
    import_sessions(memory_repo, tmp_path, many(7)[6:])  # main moves meanwhile
    new_base = git.run("rev-parse", "main").stdout.strip()
    assert new_base != old_base
    said: list[str] = []
    res = rp.replay_branch(memory_repo, "extract/moved", echo=said.append)
    assert res.transcripts == 7
    assert res.resumed_from == 0
    assert any(f"main has moved since it started ({old_base[:10]}" in n for n in res.notes)
    assert any("afresh" in s for s in said)
    message = git.run("log", "-1", "--format=%B", "extract/moved").stdout
    assert f"Base: main {new_base[:10]}" in message
    assert git.run("rev-parse", "extract/moved^").stdout.strip() == new_base


def test_a_second_replay_onto_a_running_ones_branch_is_refused(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Two replays onto one branch worked in one worktree at once, and one of them failed
    with a traceback when the other removed it."""
    import_sessions(memory_repo, tmp_path, many(4))
    refused: list[str] = []

    def meanwhile(message: str) -> None:  # said by the first one once its worktree is made
        if message.startswith("replaying") and not refused:
            with pytest.raises(ReplayError) as second:
                rp.replay_branch(memory_repo, "extract/twice")
            refused.append(str(second.value))

    res = rp.replay_branch(memory_repo, "extract/twice", echo=meanwhile)
    assert res.commit  # the first one finished, undisturbed
    assert len(refused) == 1
    assert refused[0].startswith(f"a replay onto extract/twice is running (pid {os.getpid()})")
    assert "wait for it" in refused[0]
    # the lock went with the replay: the name is free again
    again = rp.replay_branch(memory_repo, "extract/twice", force=True)
    assert again.commit


def test_a_replay_killed_right_after_its_worktree_was_made_resumes(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The running record was written after `git worktree add`: a replay killed in between
    left a branch no re-run would take without --force ("already exists")."""
    import_sessions(memory_repo, tmp_path, many(3))
    start = rp._start

    def killed(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt  # the process dies here

    monkeypatch.setattr(rp, "_start", killed)
    with pytest.raises(KeyboardInterrupt):
        rp.replay_branch(memory_repo, "extract/early")
    monkeypatch.setattr(rp, "_start", start)
    wt = memory_repo.state_file("worktrees_dir") / "early"
    assert wt.is_dir()
    res = rp.replay_branch(memory_repo, "extract/early")
    assert res.commit
    assert res.transcripts == 3
    assert not any("afresh" in n for n in res.notes)  # resumed in its worktree
    # a worktree half made (killed during `git worktree add`) is made again, not resumed
    monkeypatch.setattr(rp, "_start", killed)
    with pytest.raises(KeyboardInterrupt):
        rp.replay_branch(memory_repo, "extract/half")
    monkeypatch.setattr(rp, "_start", start)
    half = memory_repo.state_file("worktrees_dir") / "half"
    next(iter(sorted((half / "raw/conversations").rglob("*.md")))).unlink()
    res = rp.replay_branch(memory_repo, "extract/half")
    assert res.transcripts == 3
    assert any("worktree is incomplete" in n for n in res.notes)


def test_a_replay_branch_named_with_a_secret_is_refused_before_anything_is_made(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """extract/AKIA... ran the whole replay, then failed at its tag, and left a branch, a
    worktree and a running record that no re-run (even --force) could finish."""
    import_sessions(memory_repo, tmp_path, many(2))
    for force in (False, True):
        with pytest.raises(ReplayError, match="looks like a secret"):
            rp.replay_branch(memory_repo, "extract/AKIAIOSFODNN7EXAMPLE", force=force)
    git = MemoryGit(memory_repo)
    assert not git.branch_exists("extract/AKIAIOSFODNN7EXAMPLE")
    assert not (memory_repo.state_file("worktrees_dir") / "AKIAIOSFODNN7EXAMPLE").exists()
    assert not list(memory_repo.state_file("replay_dir").glob("AKIA*"))


def test_a_replay_killed_before_clearing_main_s_knowledge_replays_every_transcript(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay killed after its worktree was made, before it cleared the knowledge it
    came with, resumed on main's committed record of extractions: it took every transcript
    for done, extracted nothing, committed nothing and reported main's own knowledge as the
    replay (the comparison: no differences)."""
    from autopoiesis.memory.facade import Memory

    import_sessions(memory_repo, tmp_path, many(3))
    Memory(memory_repo).extract(pending=True)  # main's record lists every transcript
    start = rp._start

    def killed(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt  # the process dies before the knowledge is cleared

    monkeypatch.setattr(rp, "_start", killed)
    with pytest.raises(KeyboardInterrupt):
        rp.replay_branch(memory_repo, "extract/early", extractors=["decisions"])
    monkeypatch.setattr(rp, "_start", start)
    res = rp.replay_branch(memory_repo, "extract/early", extractors=["decisions"])
    assert res.resumed_from == 0
    assert len(res.report.processed) == 3  # each transcript, by the one extractor
    assert res.commit
    # only decisions were replayed: what main's other extractors learned is main's alone
    assert res.comparison is not None and res.comparison.only_a


def test_a_replay_compares_with_the_commit_it_replayed_when_main_moves_meanwhile(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A session committed on main while a replay ran (a capture does not wait for it)
    was compared as a loss of the replay: its facts were listed "only on main", though
    the replay never had its transcript."""
    from autopoiesis.memory.facade import Memory

    import_sessions(memory_repo, tmp_path, many(2))
    git = MemoryGit(memory_repo)
    started_from = git.run("rev-parse", "main").stdout.strip()

    def meanwhile(message: str) -> None:  # said once the worktree is made
        if message.startswith("replaying"):
            late = session(
                "ses_late",
                "2026-03-01T09:00:00Z",
                ("user", "We decided to use zebratool for the late task."),
            )
            import_sessions(memory_repo, tmp_path, [late])
            Memory(memory_repo).extract(pending=True)

    res = rp.replay_branch(memory_repo, "extract/moving", echo=meanwhile)
    assert git.run("rev-parse", "main").stdout.strip() != started_from
    c = res.comparison
    assert c is not None
    assert not any("zebratool" in fact for _, fact in c.only_a)
    assert git.run("rev-parse", c.a).stdout.strip() == started_from
    assert any("main moved during the replay" in n for n in res.notes)


def test_a_replay_killed_after_its_commit_is_tidied_when_run_again(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay killed after it committed, before it tagged and removed its worktree: the
    worktree stayed for good (`git branch -D` refused the branch, checked out there), the
    tag was never made, and a run again said only "already exists"."""
    import_sessions(memory_repo, tmp_path, many(2))
    commit = rp._commit

    def killed_after_commit(r: object, wrepo: MemoryRepo, *args: object) -> None:
        MemoryGit(wrepo).commit_pending("extract: replay", tops=("knowledge", "archive"))
        raise KeyboardInterrupt  # the process dies before the tag and the record

    monkeypatch.setattr(rp, "_commit", killed_after_commit)
    with pytest.raises(KeyboardInterrupt):
        rp.replay_branch(memory_repo, "extract/cut")
    monkeypatch.setattr(rp, "_commit", commit)
    git = MemoryGit(memory_repo)
    replayed = git.run("rev-parse", "extract/cut").stdout.strip()
    with pytest.raises(ReplayError, match="already exists"):
        rp.replay_branch(memory_repo, "extract/cut")
    assert not (memory_repo.state_file("worktrees_dir") / "cut").exists()
    assert "worktrees/cut" not in git.run("worktree", "list").stdout
    assert git.run("rev-parse", "extract/cut").stdout.strip() == replayed  # kept
    assert git.run("rev-parse", "memory/extract/cut^{commit}").stdout.strip() == replayed
    git.run("branch", "-D", "extract/cut")  # the user can drop it


def test_replays_named_a_slash_b_and_a__b_keep_records_of_their_own(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """extract/a/b and extract/a__b shared one progress record (and one lock): the one
    replay's record overwrote the other's, so the interrupted extract/a__b could not be
    resumed, only replaced with --force ("already exists")."""
    import_sessions(memory_repo, tmp_path, many(3))
    partial = rp.replay_branch(memory_repo, "extract/a__b", stop_after=1)
    assert partial.commit is None
    assert rp.replay_branch(memory_repo, "extract/a/b").commit
    res = rp.replay_branch(memory_repo, "extract/a__b")
    assert res.commit
    assert res.resumed_from >= 1
