"""`autopoiesis sync`: two clones of a memory and a bare remote over file://, with the real
hooks (init installs them), real captures, the real knowledge writer and real git."""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autopoiesis.capture.session import ConversationCapture, Session
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.errors import AutopoiesisError, SyncConflictError, SyncError
from autopoiesis.formats import knowledge as kf
from autopoiesis.git.repo import MemoryGit
from autopoiesis.git.verify import verify
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
from autopoiesis.knowledge.writer import KnowledgeWriter
from autopoiesis.memory.commit import commit_knowledge
from autopoiesis.memory.initialize import init_memory_repo
from autopoiesis.memory.sync import sync_once
from tests.conftest import Cli

pytestmark = pytest.mark.slow

CAP = 60  # lifecycle.memory_line_cap of these repos: two clones' entries together cross it
PROJECT = "knowledge/projects/atlas/context.md"
JOURNAL = "knowledge/journal/2026-03-01.md"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _git(where: Path | MemoryRepo, *args: str, check: bool = True) -> str:
    root = where.root if isinstance(where, MemoryRepo) else where
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=check
    ).stdout


def _first_clone(tmp: Path, *, cap: int = CAP) -> tuple[MemoryRepo, Path]:
    """Clone A (a real init, hooks and merge driver installed) and a bare remote holding it."""
    a = MemoryRepo(init_memory_repo(tmp / "a", build_index=False).root)
    config = a.root / "memory-config.yaml"
    config.write_text(config.read_text().replace("memory_line_cap: 200", f"memory_line_cap: {cap}"))
    _git(a, "commit", "-qam", "maintenance: a smaller MEMORY.md cap")
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    _git(a, "remote", "add", "origin", remote.as_uri())
    sync_once(MemoryRepo(a.root))
    return MemoryRepo(a.root), remote


def _clone(remote: Path, where: Path) -> MemoryRepo:
    """Another machine: `git clone URL` then `autopoiesis init` (hooks, merge driver; no file changes)."""
    subprocess.run(
        ["git", "clone", "-q", remote.as_uri(), str(where)], check=True, capture_output=True
    )
    report = init_memory_repo(where, build_index=False)
    assert not report.changed and report.merge_driver and report.hooks
    return MemoryRepo(where)


def _capture(repo: MemoryRepo, sid: str, text: str, when: datetime = T0) -> str:
    cap = ConversationCapture(repo)
    s = Session(sid, started=when, model="m", channel="cli")
    cap.on_session_start(s)
    cap.on_message(s, "user", text, {"timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ")})
    closed = cap.on_session_end(s, ended=when + timedelta(minutes=1))
    assert closed is not None and closed.commit
    return closed.path


def _write(
    repo: MemoryRepo,
    source: str,
    path: str,
    section: str,
    texts: list[str],
    *,
    when: datetime = T0,
    session: str | None = None,
) -> list[str]:
    """Entries through the one writer; returns the ids it added (a cap may refuse some)."""
    changes = [
        KnowledgeChange(
            path,
            "append",
            section,
            t,
            Provenance(source, when + timedelta(minutes=i), "test@1", session),
        )
        for i, t in enumerate(texts)
    ]
    return [eid for _, eid in KnowledgeWriter(repo).apply(changes).added]


def _entries(repo: MemoryRepo) -> dict[str, kf.Entry]:
    """Every entry of knowledge/ and archive/, by id."""
    found: dict[str, kf.Entry] = {}
    for top in ("knowledge", "archive"):
        for path in sorted((repo.root / top).rglob("*.md")):
            for _, entry in kf.parse(path.read_text(encoding="utf-8")).entries():
                assert entry.id not in found or found[entry.id] == entry, (
                    f"{entry.id} twice, differently"
                )
                found[entry.id] = entry
    return found


def _memory_lines(repo: MemoryRepo) -> int:
    return kf.parse((repo.root / MEMORY_FILE).read_text(encoding="utf-8")).line_count()


def _transcripts(repo: MemoryRepo) -> set[str]:
    return {p for p in _git(repo, "ls-files", "raw/conversations").split() if p.endswith(".md")}


def test_two_clones_write_concurrently_and_sync_both_ways_without_losing_an_entry(
    tmp_path: Path,
) -> None:
    a, remote = _first_clone(tmp_path)
    src0 = _capture(a, "ses_a0", "we keep sqlite as the store")
    x = _write(a, src0, MEMORY_FILE, "Key Decisions", ["We keep SQLite as the store"])
    commit_knowledge(a)
    sync_once(a)
    b = _clone(remote, tmp_path / "b")
    written = set(x)

    # round 1, interleaved: both capture, both write MEMORY.md, the project file and the day's journal
    sa1 = _capture(a, "ses_a1", "markdown files are the store now", T0 + timedelta(hours=1))
    y = KnowledgeWriter(a).apply(
        [
            KnowledgeChange(
                MEMORY_FILE,
                "supersede",
                "Key Decisions",
                "Markdown files are the store",
                Provenance(sa1, T0 + timedelta(hours=1), "test@1"),
                target=x[0],
            )
        ]
    )
    assert y.superseded == [(MEMORY_FILE, x[0])]
    written |= {eid for _, eid in y.added}
    sb1 = _capture(b, "ses_b1", "lessons from the other machine", T0 + timedelta(hours=2))
    memory_b = b.root / MEMORY_FILE  # B edits the same entry by hand, keeping its id
    memory_b.write_text(
        memory_b.read_text().replace(
            "We keep SQLite as the store", "We keep SQLite as the only store"
        )
    )
    written |= set(
        _write(
            a,
            sa1,
            MEMORY_FILE,
            "Key Decisions",
            [f"Decision {i} taken on clone A" for i in range(30)],
        )
    )
    written |= set(
        _write(
            b,
            sb1,
            MEMORY_FILE,
            "Lessons Learned",
            [f"Lesson {i} learned on clone B" for i in range(30)],
        )
    )
    written |= set(
        _write(a, sa1, PROJECT, "Key Decisions", [f"Atlas choice {i} from A" for i in range(5)])
    )
    written |= set(
        _write(b, sb1, PROJECT, "Key Decisions", [f"Atlas choice {i} from B" for i in range(5)])
    )
    written |= set(
        _write(a, sa1, JOURNAL, "2026-03-01", ["A worked on the store"], session="ses_a1")
    )
    written |= set(_write(b, sb1, JOURNAL, "2026-03-01", ["B collected lessons"], session="ses_b1"))
    assert _memory_lines(a) <= CAP and _memory_lines(b) <= CAP  # each side alone fits

    ra = sync_once(a)  # A pushes its commits first
    assert ra.pushed == ["refs/heads/main"] and ra.committed
    rb = sync_once(b)  # B commits its pending edits, merges A's, re-caps, pushes
    assert rb.merge == "merged" and rb.incoming_transcripts == 1
    assert rb.capped and "archive/memory/MEMORY.md" in rb.capped[0]  # the union crossed the cap
    ra = sync_once(a)
    assert ra.merge == "fast-forward"

    # round 2: more on both, then sync in the other order
    sa2 = _capture(a, "ses_a2", "atlas review", T0 + timedelta(hours=3))
    sb2 = _capture(b, "ses_b2", "atlas planning", T0 + timedelta(hours=3))
    written |= set(
        _write(a, sa2, PROJECT, "Current State", [f"Atlas state {i} seen on A" for i in range(4)])
    )
    written |= set(
        _write(b, sb2, PROJECT, "Current State", [f"Atlas state {i} seen on B" for i in range(4)])
    )
    written |= set(
        _write(b, sb2, "knowledge/people/maria.md", "Context", ["Maria owns the capture module"])
    )
    sync_once(b)
    sync_once(a)
    sync_once(b)

    head = _git(a, "rev-parse", "HEAD").strip()
    assert _git(b, "rev-parse", "HEAD").strip() == head
    assert _git(remote, "rev-parse", "main").strip() == head
    ea, eb = _entries(a), _entries(b)
    assert set(ea) == set(eb) and written <= set(ea), f"lost: {written - set(ea)}"
    assert len(written) == 1 + 1 + 30 + 30 + 10 + 2 + 8 + 1
    assert ea == eb
    # the entry superseded on A and edited on B: superseded, with B's text, on both sides
    old = ea[x[0]]
    assert old.superseded_by == y.added[0][1] and old.text == "We keep SQLite as the only store"
    assert ea[y.added[0][1]].active
    # the caps hold after the merge, and what did not fit is archived, not dropped
    assert _memory_lines(a) <= CAP and _memory_lines(b) <= CAP
    assert (a.root / "archive/memory/MEMORY.md").exists()
    # the journal's frontmatter lists both sessions; the counts are the merged file's
    journal = kf.parse((a.root / JOURNAL).read_text())
    assert set(journal.meta()["sessions"]) == {"ses_a1", "ses_b1"}
    project = kf.parse((a.root / PROJECT).read_text())
    assert project.meta()["entry_count"] == sum(1 for _ in project.entries()) == 18
    # raw/ never conflicts: every transcript of both clones on both, byte for byte
    assert _transcripts(a) == _transcripts(b) == {src0, sa1, sb1, sa2, sb2}
    for path in _transcripts(a):
        assert (a.root / path).read_bytes() == (b.root / path).read_bytes()
    # state under .autopoiesis/ and memory.db are never tracked; the history verifies on both
    assert _git(a, "ls-files", ".autopoiesis", "memory.db") == ""
    assert _git(a, "check-ignore", "-q", ".autopoiesis/verify/record.json", check=False) == ""
    assert verify(a).ok and verify(b).ok
    assert _git(a, "status", "--porcelain") == _git(b, "status", "--porcelain") == ""


def test_a_prose_conflict_stops_the_sync_with_the_command_and_is_never_resolved_silently(
    tmp_path: Path, cli: Cli
) -> None:
    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    user = "knowledge/identity/USER.md"
    for repo, words in ((a, "prefers short answers"), (b, "prefers long answers")):
        f = repo.root / user
        f.write_text(f.read_text() + f"\nThe user {words}.\n")
    src = _capture(b, "ses_b", "a lesson")
    written = set(_write(a, src, MEMORY_FILE, "Lessons Learned", ["Entries from A merge fine"]))
    written |= set(_write(b, src, MEMORY_FILE, "Lessons Learned", ["Entries from B merge fine"]))
    sync_once(a)
    b_head = _git(b, "rev-parse", "HEAD").strip()

    # unattended (the daemon, auto_push): the merge is undone, the clone is as it was
    with pytest.raises(SyncConflictError) as undone:
        sync_once(b, abort_on_conflict=True)
    assert undone.value.paths == [user] and "undone" in str(undone.value)
    assert not (b.root / ".git/MERGE_HEAD").exists()
    assert "<<<<<<<" not in (b.root / user).read_text()
    committed_b = _git(
        b, "rev-parse", "HEAD"
    ).strip()  # B's pending edits were committed first, nothing else moved
    assert _git(b, "merge-base", "--is-ancestor", b_head, committed_b, check=False) == ""

    # by hand: the conflict stays for the person, with the commands to finish
    done = cli("sync", repo=b)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        f"git add {user}" in done.stderr
        and "autopoiesis sync" in done.stderr
        and "git merge --abort" in done.stderr
    )
    text = (b.root / user).read_text()
    assert (
        "<<<<<<< ours" in text
        and "prefers short answers" in text
        and "prefers long answers" in text
    )
    memory = (b.root / MEMORY_FILE).read_text()  # the entry file merged cleanly beside it
    assert (
        "Entries from A merge fine" in memory
        and "Entries from B merge fine" in memory
        and "<<<<<<<" not in memory
    )
    with pytest.raises(SyncConflictError, match="still has conflicts"):
        sync_once(b)  # resolving is a person's job: a second sync does not paper over it
    _git(b, "add", user)  # added as it was left, markers and all: not resolved either
    with pytest.raises(AutopoiesisError, match=f"{user}: line .* merge conflict marker"):
        sync_once(b)
    assert _git(b, "rev-parse", "HEAD").strip() == committed_b and "<<<<<<<" not in _git(
        remote, "show", "main:" + user
    )
    (b.root / user).write_text(
        text.split("<<<<<<<")[0] + "The user prefers short answers, with details on request.\n"
    )
    _git(b, "add", user)
    report = sync_once(b)
    assert report.merge == "merged" and report.pushed == ["refs/heads/main"]
    sync_once(a)
    assert "with details on request" in (a.root / user).read_text()
    assert written <= set(_entries(a)) and set(_entries(a)) == set(_entries(b))


def test_a_history_rewritten_by_forget_is_refused_with_instructions_never_force_pushed_silently(
    tmp_path: Path, cli: Cli
) -> None:
    from autopoiesis.memory.forget import forget

    secret = "vault-phrase orchid 4471 lantern"
    a, remote = _first_clone(tmp_path)
    note = a.root / "knowledge/reference/vault.md"
    note.write_text(f"# Vault\n\nPhrase: {secret}\n")
    commit_knowledge(a)
    sync_once(a)
    b = _clone(remote, tmp_path / "b")
    forget(a, text=secret, reason="leaked")
    remote_main = _git(remote, "rev-parse", "main").strip()

    with pytest.raises(SyncError, match="--force-after-forget") as refused:
        sync_once(a)
    assert "forget" in str(refused.value) and "re-clone" in str(refused.value)
    assert _git(remote, "rev-parse", "main").strip() == remote_main  # nothing pushed
    assert secret not in _git(a, "log", "--all", "-p")  # nothing pulled back

    # another clone built on the old history meanwhile: forcing would drop its work
    late = _capture(b, "ses_b_late", "work on the old history")
    sync_once(b)
    late_commit = _git(b, "rev-parse", "HEAD").strip()
    with pytest.raises(SyncError, match="Forcing would drop them") as carry:
        sync_once(a, force_after_forget=True)
    assert f"git cherry-pick {late_commit}" in str(carry.value)
    assert _git(remote, "rev-parse", "main").strip() == late_commit

    # the way the message gives: carry the commit over, then force
    _git(a, "cherry-pick", late_commit)
    forced = cli("sync", "--force-after-forget", repo=a)
    assert forced.returncode == 0, forced.stderr
    assert "force-pushed after forget: refs/heads/main" in forced.stdout
    assert _git(remote, "rev-parse", "main").strip() == _git(a, "rev-parse", "HEAD").strip()
    assert secret not in _git(remote, "log", "main", "-p")
    assert late in _git(
        remote, "ls-tree", "-r", "--name-only", "main"
    )  # B's work survived the force
    assert secret not in _git(a, "log", "--all", "-p")  # the fetched old history went again
    assert sync_once(a).merge == "up-to-date"  # once pushed, the record lets ordinary syncs go on

    # the stale clone: refused, told to re-clone, its history untouched
    b_head = _git(b, "rev-parse", "HEAD").strip()
    stale = cli("sync", repo=b)
    assert (
        stale.returncode == 1
        and "rewritten by `autopoiesis forget` on another clone" in stale.stderr
    )
    assert "git clone" in stale.stderr and "Traceback" not in stale.stderr
    assert _git(b, "rev-parse", "HEAD").strip() == b_head
    assert _git(remote, "rev-parse", "main").strip() == _git(a, "rev-parse", "HEAD").strip()


def test_a_plain_git_merge_of_the_old_history_cannot_bring_a_forgotten_string_back(
    tmp_path: Path, cli: Cli
) -> None:
    """After a forget was pushed, a clone that still had the old history merged it with
    plain `git pull` and pushed: its hooks let it through (that clone knew of no rewrite),
    and the forgetting clone's next sync fast-forwarded to it, the secret back in its
    files and history. Now forget's record commit names the tips it replaced: the other
    clone's pre-push hook refuses the merge, and sync refuses it before merging, on the
    forgetting clone (whose own record lists the old commits) and on a fresh clone (which
    knows them only from the record commit)."""
    from autopoiesis.memory.forget import forget

    secret = "office wifi PURPLE-Otter-5521-zz"
    a, remote = _first_clone(tmp_path)
    (a.root / "knowledge/reference/wifi.md").write_text(f"# Wifi\n\n- The code: {secret}\n")
    commit_knowledge(a)
    sync_once(a)
    b = _clone(remote, tmp_path / "b")
    forget(a, text=secret, reason="leaked")
    assert "Old-tip: " in _git(a, "log", "-1", "--format=%B")
    assert cli("sync", "--force-after-forget", repo=a).returncode == 0
    fresh = _clone(remote, tmp_path / "fresh")
    pushed = _git(remote, "rev-parse", "main").strip()

    ident = ["-c", "user.name=b", "-c", "user.email=b@example.invalid"]
    _git(b, *ident, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main", check=False)
    _git(b, "checkout", "-q", "--ours", "knowledge/reference/wifi.md")  # the conflict: theirs
    _git(b, "add", "-A")
    _git(b, *ident, "commit", "-q", "--no-edit")
    refused = subprocess.run(
        ["git", "push", "origin", "main"], cwd=b.root, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "history `autopoiesis forget` removed" in refused.stderr
    assert _git(remote, "rev-parse", "main").strip() == pushed
    # a tag or a branch of the old history alone carries no record: refused all the same
    _git(b, *ident, "tag", "-a", "keep", "-m", "keep", "HEAD^1")
    for ref in ("keep", "HEAD^1:refs/heads/oldstuff"):
        kept = subprocess.run(
            ["git", "push", "origin", ref], cwd=b.root, capture_output=True, text=True
        )
        assert kept.returncode != 0 and "forget` removed" in kept.stderr, (ref, kept.stderr)
    _git(b, "push", "-q", "--no-verify", "origin", "main")  # pushed past the hook anyway

    for clone in (a, fresh):
        before = _git(clone, "rev-parse", "HEAD").strip()
        with pytest.raises(SyncError, match="brings back history `autopoiesis forget` removed"):
            sync_once(clone)
        assert _git(clone, "rev-parse", "HEAD").strip() == before
        assert secret not in _git(clone, "log", "-p", "HEAD")
        assert secret not in (clone.root / "knowledge/reference/wifi.md").read_text()


def test_a_remote_added_empty_after_a_forget_takes_the_rewritten_history(
    tmp_path: Path,
) -> None:
    """After a forget, a new empty remote was refused as if it held the old history
    ("origin still holds the old history"), and only --force-after-forget pushed to it.
    An empty remote has nothing to replace: sync pushes the rewritten history, notes the
    rewrite as pushed there, and the next round is an ordinary one."""
    from autopoiesis.memory.forget import forget

    secret = "vault-phrase orchid 4471 lantern"
    a = MemoryRepo(init_memory_repo(tmp_path / "a", build_index=False).root)
    (a.root / "knowledge/reference/vault.md").write_text(f"# Vault\n\nPhrase: {secret}\n")
    commit_knowledge(a)
    forget(a, text=secret, reason="leaked")
    remote = tmp_path / "new.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    _git(a, "remote", "add", "origin", remote.as_uri())
    sync_once(a)
    assert _git(remote, "rev-parse", "main").strip() == _git(a, "rev-parse", "HEAD").strip()
    assert secret not in _git(remote, "log", "--all", "-p")
    assert sync_once(a).merge == "up-to-date"


def test_a_clone_behind_the_old_tips_cannot_bring_a_forgotten_string_back_either(
    tmp_path: Path, cli: Cli
) -> None:
    """A clone that stopped before the forgetting clone's last commits holds old commits
    that are no old tip: its merge of them passed its own hook, and a fresh clone's sync
    took it, since the others knew only the tips. Forget's record lists the commits it
    replaced (`Old-commit:` lines): the behind clone's push is refused, and a fresh clone's
    sync refuses the merge pushed past the hook."""
    from autopoiesis.memory.forget import forget

    secret = "staging db password QUUXPASS-fake-4242"
    a, remote = _first_clone(tmp_path)
    (a.root / "knowledge/reference/db.md").write_text(f"# DB\n\n- {secret} stored here\n")
    commit_knowledge(a)
    sync_once(a)
    b = _clone(remote, tmp_path / "b")  # stops here
    _capture(a, "ses_after", "We decided to keep the ledger in Postgres.")
    sync_once(a)
    forget(a, text=secret, reason="leaked")
    assert "Old-commit: " in _git(a, "log", "-1", "--format=%B")
    assert cli("sync", "--force-after-forget", repo=a).returncode == 0
    fresh = _clone(remote, tmp_path / "fresh")
    ident = ["-c", "user.name=b", "-c", "user.email=b@example.invalid"]
    _git(b, *ident, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main", check=False)
    _git(b, "checkout", "-q", "--theirs", "knowledge/reference/db.md", check=False)
    _git(b, "add", "-A")
    _git(b, *ident, "commit", "-q", "--no-edit", check=False)
    refused = subprocess.run(
        ["git", "push", "origin", "main"], cwd=b.root, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "forget` removed" in refused.stderr
    _git(b, "push", "-q", "--no-verify", "origin", "main")
    with pytest.raises(SyncError, match="brings back history `autopoiesis forget` removed"):
        sync_once(fresh)
    assert "QUUXPASS" not in _git(fresh, "log", "-p", "HEAD")


def test_force_after_forget_needs_the_record_of_a_sanctioned_forget(tmp_path: Path) -> None:
    from autopoiesis.memory.forget import forget

    a, remote = _first_clone(tmp_path)
    (a.root / "knowledge/reference/x.md").write_text("# X\n\nsecret-ish value qwerty-1234-zz\n")
    commit_knowledge(a)
    sync_once(a)
    with pytest.raises(SyncError, match="no sanctioned forget"):
        sync_once(a, force_after_forget=True)
    pushed = _git(remote, "rev-parse", "main").strip()
    forget(a, text="qwerty-1234-zz", reason="test")
    a.state_file(
        "verify_rewrites"
    ).unlink()  # the record is gone (a copied clone, a wiped .autopoiesis/)
    with pytest.raises(SyncError, match="no record of a sanctioned forget") as refused:
        sync_once(a)
    assert "git push --force-with-lease origin main" in str(refused.value)
    with pytest.raises(SyncError, match="no sanctioned forget"):
        sync_once(a, force_after_forget=True)
    assert _git(remote, "rev-parse", "main").strip() == pushed  # never forced without the record


def test_an_unreachable_or_missing_remote_is_a_clear_error_and_nothing_is_lost(
    tmp_path: Path, cli: Cli
) -> None:
    a, remote = _first_clone(tmp_path)
    src = _capture(a, "ses_net", "offline work")
    ids = _write(a, src, MEMORY_FILE, "Lessons Learned", ["Written while offline"])
    # an open session: its transcript is untracked and must stay as it is
    cap = ConversationCapture(a)
    live = Session("ses_open", started=T0, model="m", channel="cli")
    open_path = cap.on_session_start(live)
    cap.on_message(live, "user", "still talking")
    before = open_path.read_bytes()

    _git(a, "remote", "set-url", "origin", (tmp_path / "gone.git").as_uri())
    done = cli("sync", repo=a)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        "could not fetch from origin" in done.stderr and "git remote set-url origin" in done.stderr
    )
    assert "Nothing was lost" in done.stderr
    assert ids[0] in _git(a, "show", f"HEAD:{MEMORY_FILE}")  # the pending entry was committed first
    _git(a, "remote", "set-url", "origin", "http://127.0.0.1:9/memory.git")  # nothing listens there
    with pytest.raises(SyncError, match="could not fetch from origin"):
        sync_once(a, timeout=30)
    _git(a, "remote", "set-url", "origin", "http://me:s3cretPassw0rd@127.0.0.1:9/memory.git")
    with pytest.raises(SyncError, match="could not fetch from origin") as leaky:
        sync_once(a, timeout=30)
    assert "s3cretPassw0rd" not in str(leaky.value)  # a token in the URL is never shown
    with pytest.raises(SyncError, match="no remote named 'upstream'"):
        sync_once(a, remote="upstream")

    _git(a, "remote", "set-url", "origin", remote.as_uri())
    report = sync_once(a)
    assert report.pushed == ["refs/heads/main"]
    assert ids[0] in _git(remote, "show", f"main:{MEMORY_FILE}")
    assert (
        open_path.read_bytes() == before
        and _git(a, "ls-files", str(open_path.relative_to(a.root))) == ""
    )
    cap.on_session_end(live)
    assert sync_once(a).pushed == ["refs/heads/main"]


def test_push_only_refuses_to_overwrite_newer_remote_work(tmp_path: Path) -> None:
    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    _capture(a, "ses_first", "first")
    sync_once(a)
    _capture(b, "ses_second", "second")
    with pytest.raises(SyncError, match="without --push-only"):
        sync_once(b, pull=False)
    pulled = sync_once(b, push=False)
    assert pulled.merge == "merged" and not pulled.pushed
    assert sync_once(b, pull=False).pushed == ["refs/heads/main"]
    assert sync_once(b).pushed == []  # nothing new: no push at all
    MemoryGit(b).tag_named("milestone", "v1")  # an annotated tag alone is something to push
    assert sync_once(b).pushed == ["refs/tags/memory/milestone/v1"]
    assert "refs/tags/memory/milestone/v1" in _git(remote, "for-each-ref", "refs/tags")


def test_the_same_session_imported_on_both_clones_is_one_file_and_no_conflict(
    tmp_path: Path,
) -> None:
    import json

    from autopoiesis.capture.importers import import_files

    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    log = tmp_path / "session.json"
    log.write_text(
        json.dumps(
            {
                "session_id": "ses_shared",
                "started": "2026-03-02T10:00:00Z",
                "ended": "2026-03-02T10:05:00Z",
                "model": "m",
                "channel": "cli",
                "messages": [
                    {
                        "role": "user",
                        "content": "one conversation, imported twice",
                        "timestamp": "2026-03-02T10:00:00Z",
                    },
                    {"role": "agent", "content": "noted", "timestamp": "2026-03-02T10:01:00Z"},
                ],
            }
        )
    )
    paths = [import_files(repo, [log], "neutral").imported for repo in (a, b)]
    assert paths[0] == paths[1] and len(paths[0]) == 1
    sync_once(a)
    report = sync_once(b)
    # (the two commits may even be one: same tree, parent, author and second)
    assert report.merge in ("merged", "up-to-date") and report.incoming_transcripts == 0
    assert _transcripts(b) == _transcripts(a) == set(paths[0])


def test_sync_upgrades_a_repo_made_before_the_merge_driver(tmp_path: Path) -> None:
    a, remote = _first_clone(tmp_path)
    attributes = a.root / ".gitattributes"
    attributes.write_text(
        "".join(l + "\n" for l in attributes.read_text().splitlines() if "merge" not in l)
    )
    _git(a, "commit", "-qam", "maintenance: an old repo")
    _git(a, "config", "--unset", "merge.autopoiesis.driver")
    report = sync_once(a)
    assert any("merge driver" in s for s in report.setup)
    assert any("entry by entry" in c for c in report.committed)
    assert "knowledge/**/*.md merge=autopoiesis" in _git(remote, "show", "main:.gitattributes")
    assert "autopoiesis.git.merge_driver" in _git(a, "config", "merge.autopoiesis.driver")
    assert _git(a, "check-attr", "merge", "--", MEMORY_FILE).strip().endswith("autopoiesis")


def test_commit_pushes_when_auto_push_is_set(tmp_path: Path, cli: Cli) -> None:
    a, remote = _first_clone(tmp_path)
    (a.root / "knowledge/reference/tools.md").write_text("# Tools\n\nripgrep is installed\n")
    quiet = cli("commit", repo=a)  # auto_push is off by default: the commit stays local
    assert quiet.returncode == 0 and "pushed" not in quiet.stdout
    assert _git(remote, "rev-parse", "main").strip() != _git(a, "rev-parse", "HEAD").strip()
    config = a.root / "memory-config.yaml"
    config.write_text(config.read_text().replace("auto_push: false", "auto_push: true"))
    (a.root / "knowledge/reference/tools.md").write_text(
        "# Tools\n\nripgrep and fd are installed\n"
    )
    done = cli("commit", repo=a)
    assert done.returncode == 0, done.stderr
    assert "pushed: refs/heads/main" in done.stdout
    assert _git(remote, "rev-parse", "main").strip() == _git(a, "rev-parse", "HEAD").strip()
    _git(a, "remote", "set-url", "origin", (tmp_path / "gone.git").as_uri())
    (a.root / "knowledge/reference/tools.md").write_text(
        "# Tools\n\nripgrep, fd and jq are installed\n"
    )
    offline = cli("commit", repo=a)
    assert offline.returncode == 0 and "the commit stands, but it was not pushed" in offline.stderr
    assert "jq" in _git(a, "show", "HEAD:knowledge/reference/tools.md")


def test_a_history_that_fails_verify_is_not_pushed_even_without_hooks(tmp_path: Path) -> None:
    a, remote = _first_clone(tmp_path)
    path = _capture(a, "ses_t", "an honest conversation")
    sync_once(a)
    pushed = _git(remote, "rev-parse", "main").strip()
    _git(a, "config", "core.hooksPath", "/dev/null")  # a clone without the hooks
    (a.root / path).write_text((a.root / path).read_text() + "\nforged turn\n")
    _git(a, "commit", "-qam", "tidy up")
    with pytest.raises(SyncError, match="fails verification") as refused:
        sync_once(a)
    assert path in str(refused.value)
    assert _git(remote, "rev-parse", "main").strip() == pushed


def test_the_daemons_sync_job_exists_with_auto_push_and_carries_entries_both_ways(
    tmp_path: Path,
) -> None:
    from autopoiesis.daemon.jobs import After, JobContext
    from autopoiesis.daemon.memory_jobs import memory_jobs, run_sync

    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    assert "sync" not in memory_jobs(MemoryRepo(a.root))  # auto_push is off by default
    for repo in (a, b):
        config = repo.root / "memory-config.yaml"
        config.write_text(config.read_text().replace("auto_push: false", "auto_push: true"))
        _git(repo, "commit", "-qam", "maintenance: auto_push")
    spec = memory_jobs(MemoryRepo(a.root)).get("sync")
    assert After("commit", only_if_changed=True) in spec.triggers
    ids_a = _write(
        a,
        "raw/conversations/2026/03/01/0900-s1.md",
        PROJECT,
        "Key Decisions",
        ["Atlas ships on Thursdays"],
    )
    ids_b = _write(
        b,
        "raw/conversations/2026/03/01/0910-s2.md",
        PROJECT,
        "Key Decisions",
        ["Atlas uses Postgres 17"],
    )
    now = datetime.now(UTC)
    first = run_sync(JobContext(MemoryRepo(a.root), "sync", "test", now, None))
    assert first.changed and "pushed" in first.message
    second = run_sync(JobContext(MemoryRepo(b.root), "sync", "test", now, None))
    assert second.changed, second.message
    run_sync(JobContext(MemoryRepo(a.root), "sync", "test", now, None))
    for repo in (a, b):
        assert set(ids_a + ids_b) <= set(_entries(MemoryRepo(repo.root)))


def test_a_link_or_an_odd_name_pulled_from_a_collaborator_is_refused_before_the_merge(
    tmp_path: Path,
) -> None:
    """A collaborator's commit made without the hooks that adds a symbolic link
    (`knowledge/reference/p.md -> /etc/passwd`) or a name with a line break was merged, and
    only then did sync fail, for good: every later sync, extraction and MCP write failed
    on the link. Now sync refuses such commits before it merges anything, as it refuses a
    forged transcript; and a link that is there anyway (pulled by plain git) is passed
    over by the knowledge writer, so extraction goes on."""
    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    _git(b, "config", "core.hooksPath", "/dev/null")  # the collaborator's clone, no hooks
    (b.root / "knowledge/reference/p.md").symlink_to("/etc/passwd")
    _git(b, "add", "-A")
    _git(b, "commit", "-qm", "notes")
    _git(b, "push", "-q", "origin", "main")
    before = _git(a, "rev-parse", "HEAD").strip()
    with pytest.raises(SyncError, match="symbolic link") as refused:
        sync_once(a)
    assert "knowledge/reference/p.md" in str(refused.value)
    assert "Nothing was merged" in str(refused.value)
    assert _git(a, "rev-parse", "HEAD").strip() == before
    assert not (a.root / "knowledge/reference/p.md").is_symlink()
    # a name with a line break, the same
    _git(b, "rm", "-q", "knowledge/reference/p.md")
    (b.root / "knowledge/reference/z\n<!-- system -->.md").write_text("# Z\n", encoding="utf-8")
    _git(b, "add", "-A")
    _git(b, "commit", "-qm", "odd name")
    _git(b, "push", "-q", "origin", "main")
    with pytest.raises(SyncError, match="control character"):
        sync_once(a)
    assert _git(a, "rev-parse", "HEAD").strip() == before
    # pulled past sync (plain git): the writer and extraction pass the link over
    _git(a, "config", "core.hooksPath", "/dev/null")
    _git(a, "pull", "-q", "--no-rebase", "origin", "main")
    (a.root / "knowledge/reference/q.md").symlink_to("/etc/hostname")
    _capture(a, "ses_after_link", "We decided to keep the billing ledger in Postgres.")
    writer = KnowledgeWriter(a)
    assert "knowledge/reference/q.md" not in writer.files_with_entries("knowledge/")


def test_a_pulled_gitattributes_rule_autopoiesis_does_not_write_is_refused_before_the_merge(
    tmp_path: Path,
) -> None:
    """A collaborator's `.gitattributes` was merged as it came: a rule that merges
    transcripts line by line, one that turns the knowledge merge driver off (in a folder's
    own `.gitattributes` too), or one of ours taken away changed how this clone's git
    treats its files. Now sync refuses them before it merges and says how to merge by hand;
    the git-crypt rule `autopoiesis private init` writes on the other clone comes in."""
    from autopoiesis.memory.private import RULE_SUFFIX

    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    _git(b, "config", "core.hooksPath", "/dev/null")  # the collaborator's clone, no hooks
    top = b.root / ".gitattributes"
    original = top.read_text(encoding="utf-8")
    hostile = {
        ".gitattributes": original.replace(
            "raw/conversations/** -merge", "raw/conversations/** merge=union"
        ),
        "knowledge/.gitattributes": "*.md merge=binary\n",
        # git-crypt's attributes over every note: the merge driver off, every note private
        ".gitattributes ": f"knowledge/**/*.md {RULE_SUFFIX}\n",
    }
    before = _git(a, "rev-parse", "HEAD").strip()
    for key, text in hostile.items():
        path = key.strip()
        if key != path:  # a rule added at the end of the top-level file
            text = original + text
        (b.root / path).write_text(text, encoding="utf-8")
        _git(b, "add", "-A")
        _git(b, "commit", "-qm", "attributes")
        _git(b, "push", "-q", "origin", "main")
        with pytest.raises(SyncError, match="changes how git treats") as refused:
            sync_once(a)
        message = str(refused.value)
        assert "Nothing was merged" in message and "git merge origin/main" in message
        assert _git(a, "rev-parse", "HEAD").strip() == before
        if key == ".gitattributes ":
            assert f"+knowledge/**/*.md {RULE_SUFFIX}" in message
        elif path == ".gitattributes":
            assert "+raw/conversations/** merge=union" in message
            assert "-raw/conversations/** -merge" in message
        else:
            assert "knowledge/.gitattributes: +*.md merge=binary" in message
            # the command the message gives to read the change shows a nested file's too
            told = re.search(r"`git log -p (\S+) -- '\*\.gitattributes'`", message)
            assert told is not None, message
            shown = _git(a, "log", "-p", told.group(1), "--", "*.gitattributes")
            assert "+*.md merge=binary" in shown
        if path == ".gitattributes":
            top.write_text(original, encoding="utf-8")
        else:
            (b.root / path).unlink()
        _git(b, "add", "-A")
        _git(b, "commit", "-qm", "attributes back")
        _git(b, "push", "-q", "origin", "main")
    # a rule as `autopoiesis private init` writes it, and the template's own: merged
    top.write_text(original + f"knowledge/private/** {RULE_SUFFIX}\n", encoding="utf-8")
    _git(b, "commit", "-qam", "maintenance: private knowledge")
    _git(b, "push", "-q", "origin", "main")
    sync_once(a)
    assert f"knowledge/private/** {RULE_SUFFIX}" in (a.root / ".gitattributes").read_text()


def test_a_pulled_note_that_is_not_utf8_is_a_warning_not_a_traceback(tmp_path: Path) -> None:
    """A collaborator's note with a byte that is not UTF-8 (committed without the hooks)
    crashed sync after its merge with a UnicodeDecodeError, and every write to that note
    (MCP `remember`) with a bare one. Now sync finishes and names the file, a write to it
    says what is wrong, and a pass over every note (pruning) passes it over."""
    from autopoiesis.errors import KnowledgeFileError
    from autopoiesis.knowledge.prune import MemoryPruner

    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    _git(b, "config", "core.hooksPath", "/dev/null")
    bad = "knowledge/reference/x.md"
    (b.root / bad).write_bytes(
        b"---\ntype: reference\n---\n# X\n- bad \xff byte {id: 20260301-0900-aaaaaa}\n"
    )
    _git(b, "add", "-A")
    _git(b, "commit", "-qm", "x")
    _git(b, "push", "-q", "origin", "main")
    report = sync_once(a)
    assert (a.root / bad).exists()  # merged: it is the collaborator's to fix
    said = f"{bad}: line 5, column 7 holds the byte 0xFF, which is not UTF-8"
    assert any(w.startswith(said) for w in report.warnings)
    with pytest.raises(KnowledgeFileError, match=r"retype that character"):
        KnowledgeWriter(a).read(bad)
    assert MemoryPruner(a).score_and_evict(commit=False) is not None
