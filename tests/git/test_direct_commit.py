"""Transcript commits through git's plumbing (git/direct_commit.py, git/transcripts.py):
the same commit `git commit` would make, the pre-commit hook's checks run in-process, the
reference-transaction and post-commit hooks run as for any commit, and `git commit` is
used where the plumbing road would commit something else."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import GitError
from autopoiesis.git.repo import MemoryGit
from autopoiesis.testing.samples import closed_transcript

DAY = "raw/conversations/2026/03/01"


def write(repo: MemoryRepo, rel: str, text: str) -> str:
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return rel


def transcript(repo: MemoryRepo, n: int, folder: str = DAY) -> str:
    """A closed transcript in FOLDER (a day folder), its frontmatter's started that day."""
    sid = f"ses_direct{n:03d}"
    y, m, d = folder.split("/")[-3:]
    text = closed_transcript(
        sid, "T", started=f"{y}-{m}-{d}T23:58:00Z", ended=f"{y}-{m}-{d}T23:59:00Z"
    )
    return write(repo, f"{folder}/2358-{sid}-database-choice.md", text)


def marker_hook(repo: MemoryRepo, git, name: str, body: str) -> Path:
    hooks = Path(git(repo, "rev-parse", "--git-path", "hooks").stdout.strip())
    hook = (hooks if hooks.is_absolute() else repo.root / hooks) / name
    hook.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    hook.chmod(0o755)
    return hook


def test_a_transcript_commit_is_the_commit_git_commit_makes(memory_repo: MemoryRepo, git) -> None:
    first = transcript(memory_repo, 1, "raw/conversations/2025/12/31")
    second = transcript(memory_repo, 2)
    before = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
    sha = MemoryGit(memory_repo).commit_transcript(first, "database-choice")
    assert sha and git(memory_repo, "rev-parse", "HEAD^").stdout.strip() == before
    assert git(memory_repo, "show", "-s", "--format=%B", sha).stdout.strip() == (
        f"conversation: database-choice\n\nSession: {first}"
    )
    # the tree is HEAD's with the file added: git's own fsck and diff agree
    assert git(memory_repo, "fsck", "--strict").returncode == 0
    assert git(memory_repo, "diff-tree", "-r", "--name-status", before, sha).stdout.split() == [
        "A",
        first,
    ]
    assert (
        git(memory_repo, "show", f"{sha}:{first}").stdout == (memory_repo.root / first).read_text()
    )
    # the index knows it (nothing to commit, nothing deleted), and the reflog says commit
    status = git(memory_repo, "status", "--porcelain", "-uall", "--", "raw").stdout
    assert status == f"?? {second}\n"
    assert "commit: conversation: database-choice" in git(memory_repo, "reflog", "-1").stdout
    # a second one in another folder keeps the first (trees are HEAD's, not rebuilt)
    MemoryGit(memory_repo).commit_transcript(second, "database-choice")
    listed = git(memory_repo, "ls-tree", "-r", "--name-only", "HEAD", "--", "raw").stdout.split()
    assert first in listed and second in listed
    assert git(memory_repo, "status", "--porcelain", "--", "raw").stdout == ""
    # asked again, it is already committed: the commit that added it
    assert MemoryGit(memory_repo).commit_transcript(first, "database-choice") == sha


@pytest.mark.parametrize(
    "text, why",
    [
        (closed_transcript("ses_open01", "T").replace("status: closed", "status: open"), "open"),
        ("---\nsession_id: [broken\n---\n\n# T\n", "frontmatter"),
        ("no frontmatter at all\n", "frontmatter"),
    ],
)
def test_what_pre_commit_refuses_is_refused(
    memory_repo: MemoryRepo, git, text: str, why: str
) -> None:
    rel = write(memory_repo, f"{DAY}/2358-ses_open01-x.md", text)
    head = git(memory_repo, "rev-parse", "HEAD").stdout
    with pytest.raises(GitError, match="refused") as refused:
        MemoryGit(memory_repo).commit_transcript(rel, "x")
    assert rel in str(refused.value)
    assert git(memory_repo, "rev-parse", "HEAD").stdout == head


def test_a_link_and_a_changed_transcript_are_refused(memory_repo: MemoryRepo, git) -> None:
    rel = transcript(memory_repo, 3)
    g = MemoryGit(memory_repo)
    g.commit_transcript(rel, "database-choice")
    head = git(memory_repo, "rev-parse", "HEAD").stdout
    # a committed transcript changed on disk: not a new file, the commit is refused
    (memory_repo.root / rel).write_text(closed_transcript("ses_direct003", "Other"), "utf-8")
    with pytest.raises(GitError, match="immutable"):
        g.commit_new_transcripts([rel], "conversation: again")
    link = f"{DAY}/2359-ses_link01-x.md"
    os.symlink(memory_repo.root / rel, memory_repo.root / link)
    with pytest.raises(GitError, match="symbolic link"):
        g.commit_new_transcripts([link], "conversation: link")
    assert git(memory_repo, "rev-parse", "HEAD").stdout == head


def test_the_reference_transaction_hook_guards_it(memory_repo: MemoryRepo, git) -> None:
    """The branch moves through a ref transaction: a chained reference-transaction hook
    that refuses stops the commit, and nothing moves."""
    marker_hook(memory_repo, git, "reference-transaction.local", "exit 1")
    rel = transcript(memory_repo, 4)
    head = git(memory_repo, "rev-parse", "HEAD").stdout
    with pytest.raises(GitError, match="refused"):
        MemoryGit(memory_repo).commit_transcript(rel, "database-choice")
    assert git(memory_repo, "rev-parse", "HEAD").stdout == head


def test_post_commit_runs_and_a_foreign_pre_commit_gets_git_commit(
    memory_repo: MemoryRepo, git, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    marker_hook(memory_repo, git, "post-commit.local", f"echo post >> {ran}")
    rel = transcript(memory_repo, 5)
    MemoryGit(memory_repo).commit_transcript(rel, "database-choice")
    assert ran.read_text() == "post\n"
    # a chained pre-commit hook reads the index: the transcript goes through `git commit`
    staged = tmp_path / "staged"
    marker_hook(memory_repo, git, "pre-commit.local", f"git diff --cached --name-only >> {staged}")
    other = transcript(memory_repo, 6)
    MemoryGit(memory_repo).commit_transcript(other, "database-choice")
    assert staged.read_text().split() == [other]
    assert ran.read_text() == "post\npost\n"


def test_an_interrupted_commit_is_repaired(memory_repo: MemoryRepo, git) -> None:
    """Killed after the branch moved and before the index learned the file: the file reads
    as deleted and untracked until the repair, which no plain commit can get past."""
    rel = transcript(memory_repo, 7)
    MemoryGit(memory_repo).commit_transcript(rel, "database-choice")
    git(memory_repo, "rm", "-q", "--cached", rel)  # the index as the kill left it
    assert git(memory_repo, "status", "--porcelain", "-uall", "--", "raw").stdout.split() == [
        "D",
        rel,
        "??",
        rel,
    ]
    refused = git(memory_repo, "commit", "-qm", "a plain commit", check=False)
    assert refused.returncode != 0 and "immutable" in refused.stderr
    assert MemoryGit(memory_repo).repair_interrupted_commits() == [rel]
    assert git(memory_repo, "status", "--porcelain", "--", "raw").stdout == ""


@pytest.mark.slow
def test_commits_racing_a_foreign_writer_lose_nothing(memory_repo: MemoryRepo, git) -> None:
    """Capture's commits while another program commits on the same branch (hooks off, no
    lock of ours): the lease makes a moved branch be read again, so neither side's commits
    are lost."""
    stop = threading.Event()
    foreign: list[str] = []

    def writer() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            note = f"knowledge/reference/foreign-{n}.md"
            write(memory_repo, note, f"# Foreign {n}\n")
            env = {"GIT_INDEX_FILE": str(memory_repo.root / ".git" / "foreign-index")}
            git(memory_repo, "read-tree", "HEAD", env=env)
            git(memory_repo, "update-index", "--add", note, env=env)
            tree = git(memory_repo, "write-tree", env=env).stdout.strip()
            head = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
            commit = git(memory_repo, "commit-tree", tree, "-p", head, "-m", note).stdout.strip()
            if git(memory_repo, "update-ref", "HEAD", commit, head, check=False).returncode == 0:
                foreign.append(note)
            stop.wait(0.05)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        script = (
            "import sys; from autopoiesis.core.paths import MemoryRepo; "
            "from autopoiesis.git.repo import MemoryGit; "
            "g = MemoryGit(MemoryRepo(sys.argv[1])); "
            "[g.commit_transcript(p, 'database-choice') for p in sys.argv[2:]]"
        )
        rels = [transcript(memory_repo, 100 + i) for i in range(12)]
        procs = [
            subprocess.Popen([sys.executable, "-c", script, str(memory_repo.root), *rels[i::3]])
            for i in range(3)
        ]
        assert all(p.wait(timeout=300) == 0 for p in procs)
    finally:
        stop.set()
        thread.join()
    listed = set(git(memory_repo, "ls-tree", "-r", "--name-only", "HEAD").stdout.split())
    assert set(rels) <= listed
    assert set(foreign) <= listed and foreign
    assert git(memory_repo, "fsck").returncode == 0


def test_the_lock_holder_commits_what_the_queue_names(memory_repo: MemoryRepo, git) -> None:
    """A capture waiting for the git lock has put its transcript in the commit queue: the
    holder commits it too (one commit, `(+1 more)`), and the waiter then finds it done."""
    g = MemoryGit(memory_repo)
    waiting = transcript(memory_repo, 8)
    g._queue_entry(waiting).write_text(waiting, encoding="utf-8")  # as commit_transcript does
    stray = transcript(memory_repo, 9)  # finished but queued by nobody: left to recovery
    mine = transcript(memory_repo, 10)
    sha = g.commit_transcript(mine, "database-choice")
    assert git(memory_repo, "show", "-s", "--format=%s", sha).stdout.strip() == (
        "conversation: database-choice (+1 more)"
    )
    changed = git(memory_repo, "diff-tree", "-r", "--name-only", "--no-commit-id", sha).stdout
    assert sorted(changed.split()) == sorted([waiting, mine])
    assert g.commit_transcript(waiting, "database-choice") == sha
    assert not list(memory_repo.state_file("commit_queue").iterdir())
    assert git(memory_repo, "status", "--porcelain", "-uall", "--", "raw").stdout == f"?? {stray}\n"


def test_knowledge_commits_take_the_plumbing_road_too(
    memory_repo: MemoryRepo, git, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """commit_paths of files on disk (a changed note and a new one) is made without `git
    commit`, commits exactly those paths (another staged file stays staged), and the index
    then matches HEAD for them."""
    g = MemoryGit(memory_repo)
    note = write(memory_repo, "knowledge/reference/db.md", "# Databases\n\nPostgres.\n")
    g.commit_paths([note], "knowledge: databases")
    staged = write(memory_repo, "knowledge/reference/staged.md", "# Staged\n")
    git(memory_repo, "add", staged)
    write(memory_repo, note, "# Databases\n\nPostgres 16.\n")
    new = write(memory_repo, "knowledge/reference/cache.md", "# Cache\n\nRedis.\n")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    done = g.commit_paths([note, new], "knowledge: databases and cache")
    monkeypatch.delenv("GIT_TRACE")
    assert "built-in: git commit" not in trace.read_text()
    assert sorted(done.files) == sorted([note, new])
    changed = git(memory_repo, "diff-tree", "-r", "--name-status", "--no-commit-id", done.sha)
    assert changed.stdout.split() == ["A", new, "M", note]
    status = git(memory_repo, "status", "--porcelain", "-uall", "--", "knowledge").stdout
    assert status == f"A  {staged}\n"


def test_a_path_gitignore_excludes_is_not_committed(memory_repo: MemoryRepo, git) -> None:
    """`git commit` refuses a file .gitignore excludes (a key, an .env): the plumbing road
    leaves it to `git commit`, which refuses it, and nothing is committed."""
    key = write(memory_repo, "knowledge/reference/deploy.key", "-----BEGIN KEY-----\n")
    head = git(memory_repo, "rev-parse", "HEAD").stdout
    with pytest.raises(GitError, match="ignored"):
        MemoryGit(memory_repo).commit_paths([key], "knowledge: a key")
    assert git(memory_repo, "rev-parse", "HEAD").stdout == head
    assert key not in git(memory_repo, "ls-tree", "-r", "--name-only", "HEAD").stdout


def test_nothing_commits_while_a_merge_has_conflicts(memory_repo: MemoryRepo, git, cli) -> None:
    """`autopoiesis commit` during a merge with conflicts failed ("cannot do a partial
    commit during a merge"), but its path reset had already marked the conflict resolved
    with this side's text: the merge's commit then dropped the other side's change. Every
    writing command now refuses before it touches the index or the tree."""
    memory = "knowledge/memory/MEMORY.md"
    git(memory_repo, "checkout", "-qb", "side")
    with open(memory_repo.root / memory, "a", encoding="utf-8") as fh:
        fh.write("- side line\n")
    git(memory_repo, "commit", "-qam", "side", "--no-verify")
    git(memory_repo, "checkout", "-q", "main")
    with open(memory_repo.root / memory, "a", encoding="utf-8") as fh:
        fh.write("- main line\n")
    git(memory_repo, "commit", "-qam", "main", "--no-verify")
    assert git(memory_repo, "merge", "side", check=False).returncode != 0
    stages = git(memory_repo, "ls-files", "-s", memory).stdout
    for command in (("commit",), ("prune",), ("extract", "--pending")):
        done = cli(*command, repo=memory_repo)
        assert done.returncode == 1 and "a merge is in progress" in done.stderr, command
        assert "git merge --abort" in done.stderr
        assert git(memory_repo, "ls-files", "-s", memory).stdout == stages  # still 3 stages
    assert git(memory_repo, "status", "--porcelain").stdout.startswith("UU ")


def test_a_commit_on_a_detached_head_says_no_branch_holds_it(memory_repo: MemoryRepo, git) -> None:
    """On a detached HEAD capture, prune and tag committed without a word, and checking
    a branch out left those commits behind. The commit is made, with a warning that says
    how to keep it."""
    git(memory_repo, "checkout", "-q", "--detach", "HEAD")
    write(memory_repo, "knowledge/reference/note.md", "# Note\n\n- kept on no branch\n")
    with pytest.warns(UserWarning, match=r"made on a detached HEAD.*git branch NAME"):
        done = MemoryGit(memory_repo).commit_paths(["knowledge/reference/note.md"], "memory: note")
    assert done.sha and git(memory_repo, "rev-parse", "HEAD").stdout.strip() == done.sha
    git(memory_repo, "checkout", "-q", "main")
    write(memory_repo, "knowledge/reference/other.md", "# Other\n\n- on main\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # on a branch: no warning
        MemoryGit(memory_repo).commit_paths(["knowledge/reference/other.md"], "memory: other")


def test_a_commit_stopped_after_the_branch_moved_stages_no_removal(
    memory_repo: MemoryRepo, git, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process stopped (SIGTERM, SIGKILL) right after `update-ref` moved the branch: the
    index already holds the new content, so it stages nothing, and the user's next plain
    `git commit` of another file does not delete the fact just committed."""
    from autopoiesis.git import direct_commit

    g = MemoryGit(memory_repo)
    note = write(memory_repo, "knowledge/reference/otters.md", "# Otters\n\n- They swim.\n")
    g.commit_paths([note], "knowledge: otters")
    write(memory_repo, note, "# Otters\n\n- They swim.\n- They hold hands asleep.\n")

    def stopped(*_: object) -> None:
        raise KeyboardInterrupt  # the signal that ended the process here

    monkeypatch.setattr(direct_commit, "_after", stopped)
    with pytest.raises(KeyboardInterrupt):
        g.commit_paths([note], "knowledge: otters hold hands")
    assert "hold hands" in git(memory_repo, "show", f"HEAD:{note}").stdout
    assert git(memory_repo, "diff", "--cached", "--name-only").stdout == ""
    mine = write(memory_repo, "knowledge/reference/mine.md", "# Mine\n")
    git(memory_repo, "add", mine)
    git(memory_repo, "commit", "-qm", "my own note")
    assert "hold hands" in git(memory_repo, "show", f"HEAD:{note}").stdout


def test_a_refused_knowledge_commit_leaves_the_index_as_head_has_it(
    memory_repo: MemoryRepo, git
) -> None:
    """The index is given the new content before the branch moves: a refusal of the
    reference-transaction hook puts HEAD's entries back (the change stays in the work
    tree, unstaged; a new file untracked)."""
    g = MemoryGit(memory_repo)
    note = write(memory_repo, "knowledge/reference/otters.md", "# Otters\n\n- They swim.\n")
    g.commit_paths([note], "knowledge: otters")
    marker_hook(memory_repo, git, "reference-transaction.local", "exit 1")
    write(memory_repo, note, "# Otters\n\n- They swim.\n- They hold hands asleep.\n")
    new = write(memory_repo, "knowledge/reference/seals.md", "# Seals\n")
    with pytest.raises(GitError, match="refused"):
        g.commit_paths([note, new], "knowledge: otters and seals")
    status = git(memory_repo, "status", "--porcelain", "-uall", "--", "knowledge").stdout
    assert status == f" M {note}\n?? {new}\n"


def _loose_objects(git, repo: MemoryRepo) -> dict[str, int]:
    counted = git(repo, "count-objects", "-v").stdout.split("\n")
    return {k: int(v) for k, v in (line.split(": ") for line in counted if ": " in line)}


def test_a_commit_through_plumbing_packs_loose_objects_past_gc_auto(
    memory_repo: MemoryRepo, git
) -> None:
    """`git commit` ends with `git maintenance run --auto`, which packs the loose objects
    past gc.auto; a commit through plumbing ran none, so every transcript's blob, trees
    and commit stayed a loose file for ever (13 a session with its extraction: 6,500 after
    500 sessions, in a memory that never fetches). gc.auto is set low here and loose objects put where git
    counts them (objects/17/), so that the next transcript commit is past it."""
    import hashlib

    git(memory_repo, "config", "gc.auto", "1")  # past it: more than one object in objects/17
    git(memory_repo, "config", "gc.autoDetach", "false")  # packed before the commit returns
    found = 0
    for n in range(100_000):
        data = f"filler {n}\n".encode()
        if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest().startswith("17"):
            git(memory_repo, "hash-object", "-w", "--stdin", input=data.decode())
            found += 1
            if found == 2:
                break
    before = _loose_objects(git, memory_repo)
    assert before["count"] > 2 and before["in-pack"] == 0, before
    rel = transcript(memory_repo, 7)
    sha = MemoryGit(memory_repo).commit_transcript(rel, "database-choice")
    after = _loose_objects(git, memory_repo)
    # every reachable object is packed; the two fillers nothing reaches wait for the prune
    assert after["count"] <= 2 and after["in-pack"] >= before["count"], after
    assert not (memory_repo.root / ".git" / "objects" / sha[:2] / sha[2:]).exists()
    # and maintenance.auto=false is honoured as `git commit` honours it
    git(memory_repo, "config", "maintenance.auto", "false")
    for n in range(3):
        MemoryGit(memory_repo).commit_transcript(transcript(memory_repo, 8 + n), "d")
    assert _loose_objects(git, memory_repo)["count"] > after["count"]
