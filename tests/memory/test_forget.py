"""`autopoiesis forget`: a string or a transcript leaves every commit, tag, reflog and cache."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autopoiesis.capture.session import ConversationCapture, Session
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import GitError
from autopoiesis.memory.forget import forget
from tests.conftest import Cli

SECRET = "corp-vault-unlock zebra 7731 harpoon"  # prose-shaped: redaction cannot know it is secret
OTHER = "the deploy pipeline has a rollback plan"


def _session(repo: MemoryRepo, sid: str, *lines: str) -> str:
    cap = ConversationCapture(repo)
    s = Session(sid, started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC), model="m", channel="cli")
    cap.on_session_start(s)
    for line in lines:
        cap.on_message(s, "user", line)
    closed = cap.on_session_end(s)
    assert closed is not None and closed.commit
    return closed.path


def _objects(repo: MemoryRepo) -> bytes:
    """Every object in the store, reachable or not (reflogs and dangling objects included)."""
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=repo.root,
        capture_output=True,
        check=True,
    ).stdout


@pytest.mark.slow
def test_forget_a_string_removes_it_from_every_object_and_keeps_tags(
    memory_repo: MemoryRepo, git, cli: Cli
) -> None:
    path = _session(
        memory_repo, "leak1", "hello there", f"the vault phrase is {SECRET}, keep it safe", OTHER
    )
    note = memory_repo.root / "knowledge" / "reference" / "vault.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(f"# Vault\n\nPhrase: {SECRET}\n", encoding="utf-8")
    git(memory_repo, "add", "knowledge")
    git(memory_repo, "commit", "-qm", f"memory: note the vault ({SECRET})")
    old_head = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
    git(memory_repo, "tag", "v1")
    git(memory_repo, "tag", "-a", "milestone/one", "-m", "first milestone")
    _session(memory_repo, "later1", "a later, unrelated conversation")
    # caches that quote the text
    (memory_repo.state_dir / "llm").mkdir(parents=True, exist_ok=True)
    (memory_repo.state_dir / "llm" / "cache.sqlite").write_bytes(b"prompt: " + SECRET.encode())
    (memory_repo.state_dir / "llm" / "ledger.jsonl").write_text(
        json.dumps({"prompt": SECRET}) + "\n"
    )
    (memory_repo.state_dir / "embed-cache.db").write_bytes(b"chunk " + SECRET.encode())
    assert cli("index", "rebuild", repo=memory_repo).returncode == 0
    assert SECRET.encode() in memory_repo.index_path.read_bytes()
    assert SECRET.encode() in _objects(memory_repo)

    done = cli(
        "forget",
        "--stdin",
        "--yes",
        "--reason",
        "pasted the vault phrase by mistake",
        repo=memory_repo,
        input=SECRET + "\n",
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

    # in no object at all: blobs, trees, commit messages, tags, reflogs, unreachable objects
    assert SECRET.encode() not in _objects(memory_repo)
    assert (
        git(memory_repo, "reflog", "--all").stdout.count("\n") <= 2
    )  # only the maintenance commit and the rewrite
    assert SECRET not in (memory_repo.root / path).read_text(encoding="utf-8")
    assert "[redacted:forgotten]" in (memory_repo.root / path).read_text(encoding="utf-8")
    assert OTHER in (memory_repo.root / path).read_text(encoding="utf-8")
    # tags re-pointed at the rewritten commits
    v1 = git(memory_repo, "rev-parse", "v1^{commit}").stdout.strip()
    milestone = git(memory_repo, "rev-parse", "milestone/one^{commit}").stdout.strip()
    assert v1 == milestone != old_head
    assert git(memory_repo, "merge-base", "--is-ancestor", v1, "HEAD", check=False).returncode == 0
    assert "[redacted:forgotten]" in git(memory_repo, "show", f"v1:{path}").stdout
    assert "[redacted:forgotten]" in git(memory_repo, "log", "-1", "--format=%s", "v1").stdout
    # memory.db rebuilt without it; the caches are gone
    assert (
        memory_repo.index_path.exists()
        and SECRET.encode() not in memory_repo.index_path.read_bytes()
    )
    embed = memory_repo.state_dir / "embed-cache.db"  # deleted, then refilled by the rebuild
    assert not embed.exists() or SECRET.encode() not in embed.read_bytes()
    assert not (memory_repo.state_dir / "llm" / "cache.sqlite").exists()
    assert not (memory_repo.state_dir / "llm" / "ledger.jsonl").exists()
    # recorded: what (never the secret), when, why
    record = git(memory_repo, "log", "-1", "--format=%B").stdout
    assert record.startswith("maintenance: forget a secret")
    assert f"a string of {len(SECRET)} characters" in record and "salted sha256:" in record
    assert "Why: pasted the vault phrase by mistake" in record and "When: " in record
    assert SECRET not in record
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    assert git(memory_repo, "fsck", "--no-progress").returncode == 0
    # the sanctioned rewrite is the new truth: verify accepts it, and later commits pass the hooks
    verified = cli("verify", repo=memory_repo)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    _session(memory_repo, "after1", "a conversation after the purge")


@pytest.mark.slow
def test_forget_a_transcript_removes_the_file_from_all_history(
    memory_repo: MemoryRepo, git
) -> None:
    keep = _session(memory_repo, "keep1", "this one stays", OTHER)
    gone = _session(memory_repo, "gone1", "this one goes", f"it said {SECRET}")
    git(memory_repo, "tag", "after-both")
    report = forget(memory_repo, transcript=gone, reason="the whole conversation was private")
    assert git(memory_repo, "log", "--all", "--format=%H", "--", gone).stdout.strip() == ""
    assert SECRET.encode() not in _objects(memory_repo)
    assert (memory_repo.root / keep).exists() and not (memory_repo.root / gone).exists()
    tagged = git(memory_repo, "ls-tree", "-r", "--name-only", "after-both").stdout.split()
    assert [p for p in tagged if p.startswith("raw/conversations/") and p.endswith(".md")] == [keep]
    assert "the transcript raw/conversations/2026/03/01/0900-gone1-….md" == report.what
    assert "this-one-goes" not in git(memory_repo, "log", "-1", "--format=%B").stdout


def test_forget_refuses_a_dirty_tree_and_short_strings(
    memory_repo: MemoryRepo, git, cli: Cli
) -> None:
    _session(memory_repo, "d1", f"leak {SECRET}")
    head = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
    stray = memory_repo.root / "knowledge" / "draft.md"
    stray.write_text("work in progress\n", encoding="utf-8")
    with pytest.raises(GitError, match="clean working tree"):
        forget(memory_repo, text=SECRET, reason="x")
    stray.unlink()
    with pytest.raises(GitError, match="at least"):
        forget(memory_repo, text="zebra", reason="x")
    done = cli(
        "forget", "--yes", "--reason", "r", "--transcript", "knowledge/x.md", repo=memory_repo
    )
    assert (
        done.returncode != 0
        and "not a transcript" in done.stderr
        and "Traceback" not in done.stderr
    )
    assert git(memory_repo, "rev-parse", "HEAD").stdout.strip() == head  # nothing rewritten


@pytest.mark.slow
def test_forget_tells_what_a_pushed_remote_needs(
    memory_repo: MemoryRepo, git, tmp_path: Path, cli: Cli
) -> None:
    _session(memory_repo, "p1", "hello", f"leak {SECRET}")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(memory_repo, "remote", "add", "origin", str(remote))
    git(memory_repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(memory_repo, "fetch", "-q", "origin")
    done = cli("forget", "--stdin", "--yes", "--reason", "leaked", repo=memory_repo, input=SECRET)
    assert done.returncode == 0, done.stderr
    assert "force" in done.stderr and "re-clone" in done.stderr and str(remote) in done.stderr
    assert git(memory_repo, "remote").stdout.split() == [
        "origin"
    ]  # the remote is kept for the force-push
    assert SECRET.encode() not in _objects(
        memory_repo
    )  # the remote-tracking ref no longer holds it
