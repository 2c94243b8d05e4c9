"""MemoryGit: generated commit messages, tags, explore branches, recall through git."""

from __future__ import annotations

import json
import threading
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import GitError
from autopoiesis.formats.commit_message import infer_commit_type
from autopoiesis.git.commits import GitCore
from autopoiesis.git.repo import MemoryGit


def test_commit_pending_generates_type_summary_and_session(memory_repo: MemoryRepo, git) -> None:
    g = MemoryGit(memory_repo)
    assert g.commit_pending().sha is None  # nothing to commit
    mem = memory_repo.memory_file
    mem.write_text(
        mem.read_text().replace(
            "## Lessons Learned\n",
            "## Lessons Learned\n- 2026-02-16: keep raw transcripts (raw/conversations/2026/02/16/1845-s-x.md)\n- 2026-02-16: test with real data\n",
        )
    )
    journal = memory_repo.root / "knowledge/journal/2026-02-16.md"
    journal.write_text(
        "---\ntype: journal\ndate: 2026-02-16\n---\n\n## 2026-02-16\n- decided on files\n"
    )
    result = g.commit_pending()
    subject, _, rest = result.message.partition("\n")
    assert (
        subject == "memory: keep raw transcripts; test with real data; decided on files"
    )  # what was learned
    assert (
        "Learned:\n- keep raw transcripts (MEMORY.md)\n- test with real data (MEMORY.md)\n- decided on files (journal 2026-02-16)\n"
        in rest
    )
    assert "knowledge/memory/MEMORY.md: +2 -0" in rest
    assert "Session: raw/conversations/2026/02/16/1845-s-x.md" in rest
    assert git(memory_repo.root, "log", "-1", "--format=%s").stdout.strip() == subject


def test_a_note_written_by_hand_is_committed_with_its_secrets_redacted(
    memory_repo: MemoryRepo, cli, git
) -> None:
    """A token pasted into a note by hand was committed as it was (only the message was
    redacted): capture and the knowledge writer redact what they write, a person's note
    went through neither. `autopoiesis commit` redacts it in place and says so; an
    ordinary note is committed byte for byte."""
    token = "ghp_" + "YY3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    note = memory_repo.root / "knowledge/reference/ci.md"
    note.write_text(f"# CI\n\n- The CI token is {token} for now.\n", encoding="utf-8")
    plain = memory_repo.root / "knowledge/reference/plain.md"
    plain.write_text("# Plain\n\n- MAX_RETRIES = 3 and the sha is 9f86d081884c7d65.\n")
    before = plain.read_bytes()
    done = cli("commit", repo=memory_repo.root)
    assert done.returncode == 0, done.stderr
    assert "warning: knowledge/reference/ci.md: redacted what looks like a secret" in done.stderr
    assert "plain.md" not in done.stderr
    history = git(memory_repo.root, "log", "-p", "--all").stdout
    assert token not in history and "[redacted:github_token]" in history
    assert token not in note.read_text() and plain.read_bytes() == before
    # in a frontmatter, the marker stays a string (bare, `title: [redacted:...]` is a list)
    import frontmatter

    meta = memory_repo.root / "knowledge/reference/meta.md"
    meta.write_text(f"---\ntitle: {token}\ntags: [ci, {token}]\n---\n# Meta\n", "utf-8")
    assert cli("commit", repo=memory_repo.root).returncode == 0
    assert frontmatter.load(str(meta)).metadata == {
        "title": "[redacted:github_token]",
        "tags": ["ci", "[redacted:github_token]"],
    }


def test_a_note_written_to_while_commit_redacts_it_loses_no_line(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch, git
) -> None:
    """commit's in-place redaction read a note, redacted it and replaced the file: lines
    a person (or a program) appended meanwhile were lost, 21-24 of 600 in a tester's
    runs. What is appended between the check and the swap is read from the file replaced
    and kept (made here by appending at that moment), and a refused commit still says
    what it redacted."""
    import autopoiesis.git.commits as commits

    token = "ghp_" + "WW3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    note = memory_repo.root / "knowledge/reference/live.md"
    note.write_text(f"# Live\n\n- token {token}\n", encoding="utf-8")
    swap = commits.atomic_write

    def append_then_swap(path: Path, data: str | bytes, **kw: object) -> None:
        with path.open("a", encoding="utf-8") as late:
            late.write("- a line written meanwhile\n")
        swap(path, data)

    monkeypatch.setattr(commits, "atomic_write", append_then_swap)
    with pytest.warns(UserWarning, match="live.md: redacted what looks like a secret"):
        MemoryGit(memory_repo).commit_pending()
    text = note.read_text(encoding="utf-8")
    assert token not in text and "- a line written meanwhile" in text


def test_a_ref_lock_left_by_a_killed_command_is_named_with_what_to_do(
    memory_repo: MemoryRepo,
) -> None:
    """A replay killed during `git worktree add` left `refs/heads/extract/y.lock`, and every
    later run showed only git's "Another git process seems to be running". The error names
    the lock and says to remove it when no git runs."""
    from autopoiesis.errors import GitError

    lock = memory_repo.root / ".git/refs/heads/explore/try.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    with pytest.raises(GitError, match="remove that file") as refused:
        MemoryGit(memory_repo).create_explore("try")
    assert str(lock) in str(refused.value)


def test_commit_types() -> None:
    assert infer_commit_type(["knowledge/identity/SOUL.md"], "main") == "identity"
    assert (
        infer_commit_type(["knowledge/journal/a.md", "archive/journal/a.md"], "main", ["R"])
        == "maintenance"
    )
    assert infer_commit_type(["knowledge/memory/MEMORY.md"], "extract/v2") == "extract"
    assert infer_commit_type(["knowledge/memory/MEMORY.md"], "explore/what-if") == "explore"
    assert infer_commit_type(["knowledge/people/x.md"], "main") == "memory"


def test_identity_commit(memory_repo: MemoryRepo) -> None:
    soul = memory_repo.root / "knowledge/identity/SOUL.md"
    soul.write_text(soul.read_text() + "- I keep promises.\n")
    assert MemoryGit(memory_repo).commit_pending().message.startswith("identity: I keep promises")


def test_tags_only_with_changes_and_never_moved(memory_repo: MemoryRepo, git) -> None:
    g = MemoryGit(memory_repo)
    today = datetime.now(UTC).date()
    created, msg = g.tag_daily(today)
    assert created
    assert g.tag_exists(f"memory/daily/{today.isoformat()}")
    first = git(
        memory_repo.root, "rev-parse", f"memory/daily/{today.isoformat()}^{{commit}}"
    ).stdout
    (memory_repo.root / "knowledge/reference/n.md").write_text("# n\n")
    g.commit_pending()
    created, msg = g.tag_daily(today)
    assert not created
    assert "never moved" in msg
    assert (
        git(memory_repo.root, "rev-parse", f"memory/daily/{today.isoformat()}^{{commit}}").stdout
        == first
    )
    created, msg = g.tag_daily(today - timedelta(days=400))
    assert not created
    assert "no changes" in msg
    y, w, _ = today.isocalendar()
    assert g.tag_weekly(today)[0]
    assert g.tag_exists(f"memory/weekly/{y}-W{w:02d}")
    assert g.tag_named("milestone", "v1")[0]
    assert g.tag_named("before", "rewrite")[0]
    assert g.tag_named("extract", "v2")[0]
    with pytest.raises(GitError, match="not a valid tag name"):
        g.tag_named("milestone", "bad name..")


def test_explore_branches_prune_after_seven_days(memory_repo: MemoryRepo) -> None:
    g = MemoryGit(memory_repo)
    assert g.create_explore("what-if") == "explore/what-if"
    with pytest.raises(GitError, match="already exists"):
        g.create_explore("what-if")
    assert g.prune_explore(7) == []
    later = datetime.now(UTC) + timedelta(days=8)
    assert g.prune_explore(7, now=later) == ["explore/what-if"]
    assert not g.branch_exists("explore/what-if")


def test_recall_blame_learned_show_at(memory_repo: MemoryRepo, git) -> None:
    g = MemoryGit(memory_repo)
    ref = memory_repo.root / "knowledge/reference/storage.md"
    ref.write_text("# Storage\n\n- Files are the source of truth\n")
    first = g.commit_pending("memory: storage decision").sha
    g.create_tag("memory/daily/2026-02-16", "snap")
    ref.write_text("# Storage\n\n- Files are the source of truth\n- SQLite is only a cache\n")
    g.commit_pending("memory: sqlite note")
    hits = g.recall("source of truth")
    assert [c.sha for c in hits] == [first]
    assert hits[0].files == ("knowledge/reference/storage.md",)
    assert "Files are the source of truth" in g.blame("knowledge/reference/storage.md")
    assert ("knowledge/reference/storage.md", "- SQLite is only a cache") in g.learned_lines(
        "1 hour ago"
    )
    sha, old = g.show_at("daily/2026-02-16", "knowledge/reference/storage.md")
    assert sha == first
    assert "SQLite" not in old
    sha, now = g.show_at(
        (date.today() + timedelta(days=1)).isoformat(), "knowledge/reference/storage.md"
    )
    assert "SQLite" in now
    with pytest.raises(GitError):
        g.show_at("1990-01-01", "knowledge/reference/storage.md")
    # a folder is named as one, with its files: it printed git's binary tree object
    with pytest.raises(GitError, match="knowledge/reference is a folder at HEAD .*/storage.md"):
        g.show_at("HEAD", "knowledge/reference")
    # plain git answers the same question
    assert first in git(memory_repo.root, "log", "-S", "source of truth", "--format=%H").stdout


@pytest.mark.slow
def test_concurrent_commits_lose_nothing(memory_repo: MemoryRepo, git) -> None:
    errors: list[Exception] = []

    def work(i: int) -> None:
        try:
            p = memory_repo.root / f"knowledge/reference/f{i}.md"
            p.write_text(f"# f{i}\n")
            MemoryGit(memory_repo).commit_paths([f"knowledge/reference/f{i}.md"], f"memory: f{i}\n")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert git(memory_repo.root, "status", "--porcelain").stdout == ""
    files = git(memory_repo.root, "ls-files", "knowledge/reference").stdout.split()
    assert all(f"knowledge/reference/f{i}.md" in files for i in range(12))


def test_commit_waits_out_a_foreign_index_lock(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch, git
) -> None:
    """Another program's git holds .git/index.lock: the commit leaves it alone and waits,
    and commits once that program is done. The program finishes when the commit has met
    its lock and decided to wait (the commit asks clear_stale_index_lock whether the lock
    is a dead one of its own), not after a time the commit might not have waited."""
    lock = memory_repo.root / ".git/index.lock"
    lock.write_text("")
    verdicts: list[bool] = []
    clear_stale = GitCore.clear_stale_index_lock

    def other_program_finishes(core: GitCore) -> bool:
        verdict = clear_stale(core)
        verdicts.append(verdict)
        assert lock.exists()  # a lock no record explains is not autopoiesis's to remove
        lock.unlink(missing_ok=True)
        return verdict

    monkeypatch.setattr(GitCore, "clear_stale_index_lock", other_program_finishes)
    (memory_repo.root / "knowledge/reference/z.md").write_text("# z\n")
    result = MemoryGit(memory_repo).commit_paths(["knowledge/reference/z.md"], "memory: z\n")
    assert verdicts == [False]  # it met the lock once, left it, waited and retried
    assert result.sha == git(memory_repo.root, "rev-parse", "HEAD").stdout.strip()
    assert git(memory_repo.root, "ls-files", "knowledge/reference/z.md").stdout.strip()


def test_a_tag_or_branch_name_holding_a_secret_is_refused_and_a_tag_message_redacted(
    memory_repo: MemoryRepo, git
) -> None:
    """`autopoiesis tag milestone rel-ghp_...` and an explore branch named after a token
    were created as named, and a tag's message kept its secret: pushed by sync, and forget
    cannot take a secret out of a ref's name. A name holding one is refused, saying why;
    a tag's message is redacted as a commit's is."""
    g = MemoryGit(memory_repo)
    token = "ghp_" + "NN3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    with pytest.raises(GitError, match="looks like a secret"):
        g.tag_named("milestone", f"rel-{token}")
    with pytest.raises(GitError, match="looks like a secret"):
        g.create_explore(f"try-{token}")
    created, _ = g.tag_named("milestone", "v1", f"release notes {token}")
    assert created
    shown = git(memory_repo.root, "tag", "-l", "-n9", "--format=%(contents)").stdout
    assert token not in shown and "[redacted:github_token]" in shown
    refs = git(memory_repo.root, "for-each-ref", "--format=%(refname)").stdout
    assert token not in refs


def test_commit_summary_comes_from_the_commit_message_stage(
    memory_repo: MemoryRepo, openai_server, git
) -> None:
    from autopoiesis.memory.commit import commit_knowledge
    from autopoiesis.testing.openai_server import write_llm_config

    config = memory_repo.root / "memory-config.yaml"
    write_llm_config(memory_repo.root, openai_server.base_url, models={"commit_message": "small"})
    git(memory_repo.root, "commit", "-qm", "maintenance: llm config", "--", str(config))
    openai_server.enqueue(
        {"content": "memory: remember that raw transcripts are kept forever\nmore"}
    )
    mem = memory_repo.memory_file
    mem.write_text(mem.read_text() + "- 2026-02-16: keep raw transcripts\n")
    result = commit_knowledge(MemoryRepo(memory_repo.root))
    assert (
        result.message.splitlines()[0] == "memory: remember that raw transcripts are kept forever"
    )
    (body,) = openai_server.chat_bodies()
    assert body["model"] == "small"


def test_commit_summary_falls_back_when_the_model_is_down(
    memory_repo: MemoryRepo, openai_server, git
) -> None:
    from autopoiesis.memory.commit import commit_knowledge
    from autopoiesis.testing.openai_server import write_llm_config

    config = memory_repo.root / "memory-config.yaml"
    write_llm_config(memory_repo.root, openai_server.base_url, max_retries=0)
    git(memory_repo.root, "commit", "-qm", "maintenance: llm config", "--", str(config))
    openai_server.enqueue({"status": 500, "message": "boom"})
    mem = memory_repo.memory_file
    mem.write_text(mem.read_text() + "- 2026-02-16: keep raw transcripts\n")
    result = commit_knowledge(MemoryRepo(memory_repo.root))
    assert result.message.splitlines()[0] == "memory: keep raw transcripts"


def test_show_at_refuses_what_is_neither_a_ref_nor_a_date(memory_repo: MemoryRepo) -> None:
    g = MemoryGit(memory_repo)
    note = memory_repo.root / "knowledge/reference/storage.md"
    note.write_text("# Storage\nfiles\n")
    g.commit_pending("memory: storage")
    g.tag_named("milestone", "v1")
    assert "files" in g.show_at("milestone/v1", "knowledge/reference/storage.md")[1]
    for typo in ("milestone/vone", "lastweek", "--all"):
        with pytest.raises(GitError, match="neither a tag, a commit nor a date"):
            g.show_at(typo, "knowledge/reference/storage.md")


@pytest.mark.slow
@pytest.mark.parametrize(
    "reply",
    [
        "I'm sorry, as an AI language model I cannot summarize diffs.",
        "+- 2026-02-16: keep raw transcripts",
        "@@ -1,3 +1,4 @@",
        "```",
        "ok",
    ],
)
def test_a_reply_that_is_no_summary_falls_back_to_the_deterministic_subject(
    memory_repo: MemoryRepo, openai_server, reply: str, git
) -> None:
    from autopoiesis.memory.commit import commit_knowledge
    from autopoiesis.testing.openai_server import write_llm_config

    config = memory_repo.root / "memory-config.yaml"
    write_llm_config(memory_repo.root, openai_server.base_url)
    git(memory_repo.root, "commit", "-qm", "maintenance: llm config", "--", str(config))
    openai_server.enqueue({"content": reply})
    mem = memory_repo.memory_file
    mem.write_text(mem.read_text() + "- 2026-02-16: keep raw transcripts\n")
    result = commit_knowledge(MemoryRepo(memory_repo.root))
    assert result.message.splitlines()[0] == "memory: keep raw transcripts"


def test_clean_summary_cuts_a_long_line_at_a_word() -> None:
    from autopoiesis.formats.commit_message import clean_summary

    text = "memory: " + "record the storage decision and why files win over a database " * 3
    out = clean_summary(text)
    assert out is not None
    assert len(out) <= 72
    assert out.startswith("record the storage decision")
    assert not out.endswith(" ")


def test_dropping_unreachable_objects_works_with_a_transcript_on_main(
    memory_repo: MemoryRepo, git
) -> None:
    """What sync runs after a forced push brought old objects back: its `git gc` used to
    fail in every repo whose main held a transcript (the transaction hook read pack-refs
    as deleting main), silently, so the forgotten text stayed in the clone."""
    from autopoiesis.capture.stream import process_stream

    events = (
        {"event": "session_start", "session_id": "g1", "started": "2026-02-16T18:45:00Z"},
        {"event": "message", "role": "user", "content": "a transcript on main"},
        {"event": "session_end"},
    )
    process_stream(memory_repo, [json.dumps(e).encode() for e in events])
    assert (memory_repo.root / ".git/refs/heads/main").exists()
    blob = git(memory_repo.root, "hash-object", "-w", "--stdin", input="old secret 7731\n")
    sha = blob.stdout.strip()
    MemoryGit(memory_repo).drop_unreachable_objects()
    assert git(memory_repo.root, "cat-file", "-e", sha, check=False).returncode != 0


@pytest.mark.parametrize(
    ("configured", "author"),
    [
        ({"user.name": "Ada", "user.email": "ada@example.org"}, "Ada <ada@example.org>"),
        ({"user.name": "Ada"}, "autopoiesis <autopoiesis@localhost>"),  # half an identity
        ({}, "autopoiesis <autopoiesis@localhost>"),
    ],
)
def test_commits_use_the_repos_git_identity_or_the_fallback(
    memory_repo: MemoryRepo, git, monkeypatch, tmp_path, configured, author
) -> None:
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no global identity
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key in ("user.name", "user.email"):
        git(memory_repo, "config", "--unset", key, check=False)
    for key, value in configured.items():
        git(memory_repo, "config", key, value)
    (memory_repo.root / "knowledge/reference/who.md").write_text("# Who\n\nA note.\n")
    assert MemoryGit(memory_repo).commit_paths(["knowledge/reference/who.md"], "note\n").sha
    assert git(memory_repo, "log", "-1", "--format=%an <%ae>").stdout.strip() == author


def test_worktree_commands_run_one_at_a_time(memory_repo: MemoryRepo) -> None:
    """A `git worktree prune` must not run while another thread's `worktree add` is
    half-way (it removed the new worktree's admin folder: "could not open .../locked"), so
    every `git worktree` command waits for the repo's "worktrees" lock."""
    git = MemoryGit(memory_repo)
    done = threading.Event()

    def prune() -> None:
        git.run("worktree", "prune")
        done.set()

    with memory_repo.lock("worktrees"):  # another thread's worktree command, in progress
        worker = threading.Thread(target=prune)
        worker.start()
        assert not done.wait(0.5)  # it waits for the lock
        git.run("status")  # other git commands do not
    assert done.wait(60)
    worker.join()


def _commit_dated(repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch, when: str, rel: str) -> str:
    """A commit of a new knowledge file REL made with the clock at WHEN (as one pulled from a
    machine whose clock is behind)."""
    (repo.root / rel).write_text(f"# {Path(rel).stem}\n\n- {Path(rel).stem} is known\n")
    with monkeypatch.context() as m:
        m.setenv("GIT_COMMITTER_DATE", when)
        m.setenv("GIT_AUTHOR_DATE", when)
        sha = MemoryGit(repo).commit_pending(f"memory: {rel}").sha  # a new git: its own env
    assert sha
    return sha


def test_a_commit_dated_behind_hides_nothing_from_learned_and_the_daily_tag(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's --since stops its walk at the first commit dated before it: one commit made
    with a clock behind hid the whole day's history from `tag daily` and `learned`."""
    from autopoiesis.core.clock import today, utc_now

    g = MemoryGit(memory_repo)
    (memory_repo.root / "knowledge/reference/queue.md").write_text("# Queue\n\n- Kafka\n")
    kafka = g.commit_pending("memory: kafka").sha
    yesterday = (utc_now() - timedelta(days=1)).strftime("%Y-%m-%dT12:00:00Z")
    behind = _commit_dated(memory_repo, monkeypatch, yesterday, "knowledge/reference/cache.md")
    assert g.run("log", "-1", "--format=%H").stdout.strip() == behind
    assert kafka in [c.sha for c in g.learned("2 hours ago")]
    assert behind not in [c.sha for c in g.learned("2 hours ago")]
    assert ("knowledge/reference/queue.md", "- Kafka") in g.learned_lines("2 hours ago")
    created, why = g.tag_daily(today())
    assert created, why
    assert g.rev(f"memory/daily/{today().isoformat()}") == kafka


def test_learned_since_a_day_starts_at_its_midnight(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git reads a bare date as that day at the current time of day: `learned --since DAY`
    left out everything learned that day before the time it was run."""
    from autopoiesis.core.clock import today

    monkeypatch.setenv("TZ", "UTC")
    day = today().isoformat()
    early = _commit_dated(memory_repo, monkeypatch, f"{day}T00:00:00Z", "knowledge/reference/a.md")
    g = MemoryGit(memory_repo)
    assert early in [c.sha for c in g.learned(day)]
    assert ("knowledge/reference/a.md", "- a is known") in g.learned_lines(day)
    yesterday = (today() - timedelta(days=1)).isoformat()
    assert early in [c.sha for c in g.learned(yesterday)]
    assert early not in [c.sha for c in g.learned((today() + timedelta(days=1)).isoformat())]


def test_learned_lines_are_knowledge_not_extractions_bookkeeping(memory_repo: MemoryRepo) -> None:
    """`learned` shows what the memory learned: an extraction's record of what it has done
    (knowledge/.extracted, one line per transcript and extractor) is no knowledge."""
    from autopoiesis.knowledge.state import EXTRACTED_FILE

    g = MemoryGit(memory_repo)
    (memory_repo.root / "knowledge/reference/queue.md").write_text("# Queue\n\n- Kafka\n")
    (memory_repo.root / EXTRACTED_FILE).write_text("raw/conversations/x.md\tfacts@3\n")
    g.commit_pending("memory: kafka")
    lines = g.learned_lines("1 hour ago")
    assert ("knowledge/reference/queue.md", "- Kafka") in lines
    assert [path for path, _ in lines if path == EXTRACTED_FILE] == []


def test_a_ref_name_beside_an_existing_one_of_its_path_is_refused_before_anything_is_made(
    memory_repo: MemoryRepo, git
) -> None:
    """git keeps a ref as a file: with memory/milestone/x/y made, `tag milestone x` failed
    in `git tag` with git's own "cannot lock ref", and a replay onto extract/v2/sub beside
    extract/v2 failed in `git worktree add`, after writing its running record."""
    g = MemoryGit(memory_repo)
    assert g.tag_named("milestone", "x/y")[0]
    with pytest.raises(GitError, match=r"memory/milestone/x/y exists.*pick another name"):
        g.tag_named("milestone", "x")
    with pytest.raises(GitError, match=r"memory/milestone/x/y exists"):
        g.tag_named("milestone", "x/y/z")
    assert g.tag_named("milestone", "x-y")[0]  # a name that merely starts the same is fine
    g.run("branch", "extract/v2")
    with pytest.raises(GitError, match=r"extract/v2 exists"):
        g.check_ref_name("extract/v2/sub", "branch")
    g.check_ref_name("extract/v2", "branch")  # the name itself: replay --force replaces it


def test_a_milestone_name_already_on_another_commit_is_refused(
    memory_repo: MemoryRepo, cli
) -> None:
    """`autopoiesis tag milestone v1` with memory/milestone/v1 on an older commit said the
    tag exists and exited 0: a script took the milestone for made, on a commit it never
    was. A hand-made tag (milestone, before) on another commit is an error naming it."""
    g = MemoryGit(memory_repo)
    assert g.tag_named("milestone", "v1")[0]
    first = g.head()
    assert first is not None
    created, msg = g.tag_named("milestone", "v1")  # the same commit: nothing to do
    assert not created and "never moved" in msg
    (memory_repo.root / "knowledge/reference/n.md").write_text("# n\n")
    g.commit_pending()
    r = cli("tag", "milestone", "v1", repo=memory_repo)
    assert r.returncode == 1
    assert f"memory/milestone/v1 is on {first[:10]}" in r.stderr
    assert "another name" in r.stderr
    assert g.run("rev-parse", "memory/milestone/v1^{commit}").stdout.strip() == first


def test_tag_says_where_an_existing_tag_is_and_fails_when_not_where_asked(
    memory_repo: MemoryRepo, cli, git
) -> None:
    """`autopoiesis tag extract v2` or `tag daily` on a tag that exists said "already
    exists" and exited 0 even when the tag marks another commit than the one asked for:
    it now says where the tag is, exit 0 only when that is the commit asked for."""
    g = MemoryGit(memory_repo)
    assert cli("tag", "extract", "v2", repo=memory_repo).returncode == 0
    first = g.head()
    assert first is not None
    same = cli("tag", "extract", "v2", repo=memory_repo)
    assert (
        same.returncode == 0 and f"memory/extract/v2 already exists on {first[:10]}" in same.stdout
    )
    (memory_repo.root / "knowledge/reference/n.md").write_text("# n\n")
    second = g.commit_pending().sha
    moved = cli("tag", "extract", "v2", repo=memory_repo)
    assert moved.returncode == 1 and "Traceback" not in moved.stderr
    assert f"memory/extract/v2 is on {first[:10]}" in moved.stderr
    assert f"not on {second[:10]} as asked" in moved.stderr and "git tag -d" in moved.stderr
    assert g.run("rev-parse", "memory/extract/v2^{commit}").stdout.strip() == first
    # a daily tag made by hand on an earlier commit of the day, not its last
    day = datetime.now(UTC).date().isoformat()
    git(memory_repo, "tag", f"memory/daily/{day}", first)
    daily = cli("tag", "daily", "--date", day, repo=memory_repo)
    assert daily.returncode == 1 and f"memory/daily/{day} is on {first[:10]}" in daily.stderr
    # the daemon's automatic tag job is told, not failed
    created, why = g.tag_daily(datetime.now(UTC).date())
    assert not created and f"is on {first[:10]}" in why


def test_dates_git_cannot_read_past_2099_or_before_1970_are_read_exactly(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's date parser reads a year past 2099 or before 1970 as a day of 2012 or 2026:
    `learned --since 2150-01-01` listed this year's commits, `show-at 2150-01-01` showed
    a file as it was in 1970, and the weekly tag of 1970-W01 (from Monday 1969-12-29)
    found no commit though its Thursday, 1970-01-01, had one."""
    from datetime import date

    epoch = _commit_dated(
        memory_repo, monkeypatch, "1970-01-01T00:00:00Z", "knowledge/reference/a.md"
    )
    g = MemoryGit(memory_repo)
    (memory_repo.root / "knowledge/reference/a.md").write_text("# a\n\n- a is newer\n")
    latest = g.commit_pending("memory: a is newer").sha
    assert g.learned("2150-01-01") == []
    assert g.learned_lines("2150-01-01T10:00:00+14:00") == []
    sha, content = g.show_at("2150-01-01", "knowledge/reference/a.md")
    assert sha == latest and "newer" in content
    assert g.show_at("1970-01-01", "knowledge/reference/a.md")[0] == epoch
    created, why = g.tag_weekly(date(1970, 1, 1))
    assert created, why
    assert g.rev("memory/weekly/1970-W01") == epoch


def test_a_ref_name_with_a_part_too_long_for_a_file_is_refused_before_anything_is_made(
    memory_repo: MemoryRepo,
) -> None:
    """git keeps a ref as a file, whose name holds 255 bytes: `replay --branch extract/<300
    letters>` passed the name check, wrote its running record and failed in `git worktree
    add` with "File name too long ... check the free disk space"."""
    g = MemoryGit(memory_repo)
    with pytest.raises(GitError, match="too long"):
        g.check_ref_name("extract/" + "a" * 300, "branch")
    with pytest.raises(GitError, match="too long"):
        g.tag_named("milestone", "é" * 130)  # 260 bytes
    g.check_ref_name("extract/" + "a" * 200 + "/" + "b" * 200, "branch")  # parts that fit


def test_a_time_many_units_ago_is_read_exactly(memory_repo: MemoryRepo, cli) -> None:
    """git's reading of "N units ago" wraps around for a large N: "60 years ago" is a time
    past 2^63 to it, "5000 weeks ago" one in 2067 and "2300 months ago" one of this year,
    so `learned --since` said nothing was learned and `show-at` showed today's note as it
    was decades ago. Each is counted back from now here, and is older than any commit."""
    g = MemoryGit(memory_repo)
    (memory_repo.root / "knowledge/reference/a.md").write_text("# a\n\n- a is known\n")
    latest = g.commit_pending("memory: a").sha
    for long_ago in ("60 years ago", "5000 weeks ago", "2300 months ago", "99999 days ago"):
        assert latest in [c.sha for c in g.learned(long_ago)], long_ago
        with pytest.raises(GitError, match="no history before"):
            g.show_at(long_ago, "knowledge/reference/a.md")
    assert latest in [c.sha for c in g.learned("1 hour ago")]
    shown = cli("learned", "--since", "60 years ago", repo=memory_repo)  # before 1970
    assert shown.returncode == 0 and "memory: a" in shown.stdout, shown.stderr


def test_show_at_and_blame_say_what_is_wrong_with_what_they_were_given(
    memory_repo: MemoryRepo, cli, git, tmp_path: Path
) -> None:
    """show-at with a date outside 1970-2200 or HEAD in a memory with no commits said
    "neither a tag, a commit nor a date"; blame of a folder asked "is the file
    committed?". Each now says what is wrong and what to give instead."""
    for day in ("9999-12-31", "1969-12-31"):
        r = cli("show-at", day, "knowledge/memory/MEMORY.md", repo=memory_repo)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert f"'{day}' is a date outside 1970-2200" in r.stderr and "neither" not in r.stderr
    mistyped = cli("show-at", "milestone/vone", "knowledge/memory/MEMORY.md", repo=memory_repo)
    assert "neither a tag, a commit nor a date" in mistyped.stderr
    folder = cli("blame", "knowledge", repo=memory_repo)
    assert folder.returncode == 1 and "knowledge is a folder; blame takes one file" in folder.stderr
    assert "is the file committed" not in folder.stderr
    empty = tmp_path / "empty"
    (empty / "raw").mkdir(parents=True)
    (empty / "knowledge").mkdir()
    git(empty, "init", "-q")
    r = cli("show-at", "HEAD", "knowledge/memory/MEMORY.md", repo=empty)
    assert r.returncode == 1 and "no commits yet" in r.stderr and "neither" not in r.stderr


def test_commit_session_must_name_one_transcript(memory_repo: MemoryRepo, cli, git) -> None:
    """`commit --session` wrote its value as the `Session:` line as it was: a value of two
    lines added a trailer of its own (`Co-authored-by: Evil`), and one naming nothing
    linked the commit to nothing. It must be the path of a transcript of the memory."""
    from autopoiesis.testing.samples import closed_transcript

    rel = "raw/conversations/2026/03/01/2358-ses_s-hello.md"
    (memory_repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (memory_repo.root / rel).write_text(closed_transcript("ses_s", "hello"), encoding="utf-8")
    note = memory_repo.root / "knowledge/reference/plain.md"
    note.write_text("# Plain\n\n- one\n", encoding="utf-8")
    for bad in ("nope\nCo-authored-by: Evil <e@x>", "nope", "raw/conversations/.gitkeep"):
        refused = cli("commit", "--session", bad, repo=memory_repo.root)
        assert refused.returncode == 1 and "--session" in refused.stderr, refused.stderr
    assert "Co-authored-by" not in git(memory_repo.root, "log", "--format=%B").stdout
    done = cli("commit", "--session", rel, repo=memory_repo.root)
    assert done.returncode == 0, done.stderr
    assert f"Session: {rel}" in git(memory_repo.root, "log", "-1", "--format=%B").stdout
