"""Private knowledge with a real git-crypt: two clones of one memory through a bare
remote, one unlocked with the exported key and one locked; what the remote's objects
hold, what each clone indexes and searches, what reaches a model, and the pushes refused."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from autopoiesis.core.approval import approve
from autopoiesis.core.config import load_tracked_config
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import SyncError
from autopoiesis.memory.facade import Memory
from autopoiesis.memory.initialize import init_memory_repo
from autopoiesis.memory.sync import sync_once
from tests.conftest import all_objects

pytestmark = pytest.mark.slow

SECRET = "PAPAYA-7"
PLAN = f"# Plans\n\n## Launch\n- The zebra launch codeword is {SECRET}.\n"


@pytest.fixture
def git_crypt() -> str:
    """git-crypt, or a skip that says how to install it (a failure under CI, which must run
    these tests: `scripts/install-system-deps` installs it)."""
    found = shutil.which("git-crypt")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("git-crypt is missing on CI: scripts/install-system-deps installs it")
        pytest.skip(
            "git-crypt is not installed (apt-get install git-crypt; brew install git-crypt)"
        )
    return found


def _git(where: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(
        ["git", *args], cwd=where, capture_output=True, text=True, check=check
    ).stdout


def _clone(remote: Path, where: Path) -> MemoryRepo:
    subprocess.run(["git", "clone", "-q", remote.as_uri(), str(where)], check=True)
    return MemoryRepo(init_memory_repo(where, build_index=True).root)


def _write(repo: MemoryRepo, rel: str, text: str) -> None:
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_two_clones_one_unlocked_one_locked(
    memory_repo: MemoryRepo, tmp_path: Path, cli, git_crypt: str
) -> None:
    a = Memory(memory_repo)
    assert cli("private", "init", repo=a.root).returncode == 0
    assert "knowledge/private/**" in (a.root / ".gitattributes").read_text()
    _write(a.repo, "knowledge/private/plans.md", PLAN)
    _write(a.repo, "knowledge/reference/zebra.md", "# Zebra\n\n- The zebra project is public.\n")
    a.commit("memory: plans")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    _git(a.root, "remote", "add", "origin", remote.as_uri())
    sync_once(a.repo)
    # the remote holds the public note, and the private one only as ciphertext
    objects = all_objects(remote)
    assert b"The zebra project is public" in objects
    assert SECRET.encode() not in objects and b"zebra launch codeword" not in objects
    key = tmp_path / "memory.key"
    assert cli("private", "add-key", "--export", str(key), repo=a.root).returncode == 0
    assert key.stat().st_mode & 0o777 == 0o600

    locked = Memory(_clone(remote, tmp_path / "locked"))
    unlocked = Memory(_clone(remote, tmp_path / "unlocked"))
    assert cli("private", "unlock", str(key), repo=unlocked.root).returncode == 0

    # the locked clone: ciphertext on disk, none of it indexed, and it says what is locked
    assert (locked.root / "knowledge/private/plans.md").read_bytes().startswith(b"\x00GITCRYPT")
    outcome = locked.search_outcome("zebra launch codeword")
    assert all(r.path != "knowledge/private/plans.md" for r in outcome.results)
    assert any("locked" in n and "private unlock" in n for n in outcome.notices)
    with locked.open_index() as index:
        rows = index.store.conn.execute(
            "SELECT count(*) FROM files WHERE path LIKE 'knowledge/private/%'"
        ).fetchone()[0]
        assert rows == 0
    status = cli("private", "status", repo=locked.root).stdout
    assert "LOCKED" in status and "knowledge/private/plans.md" in status
    doctor = cli("doctor", repo=locked.root)
    assert "1 private file locked: not searched" in doctor.stdout and "decrypts it" in doctor.stdout

    # the unlocked clone searches the private note, but never gives it to a model
    assert (unlocked.root / "knowledge/private/plans.md").read_text() == PLAN
    hits = unlocked.search("zebra launch codeword")
    assert hits and hits[0].path == "knowledge/private/plans.md"
    context, _ = unlocked.compile("what is the zebra launch codeword?")
    assert SECRET not in context.prompt
    assert any(
        s.path == "knowledge/private/plans.md" and "private" in s.reason for s in context.sections
    )
    from autopoiesis.mcp.tools import MemoryTools

    tools = MemoryTools(unlocked)
    try:
        answer = tools.search("zebra launch codeword")
        assert all(r["path"] != "knowledge/private/plans.md" for r in answer["results"])
        assert any("withheld" in n for n in answer["notices"])
    finally:
        tools.close()

    # a change made in the unlocked clone travels encrypted, and the key holder reads it
    _write(unlocked.repo, "knowledge/private/plans.md", PLAN + "- The backup codeword is KIWI-3.\n")
    unlocked.commit("memory: backup codeword")
    sync_once(unlocked.repo)
    assert b"KIWI-3" not in all_objects(remote)
    sync_once(a.repo)
    assert "KIWI-3" in (a.root / "knowledge/private/plans.md").read_text()
    sync_once(locked.repo)
    assert (locked.root / "knowledge/private/plans.md").read_bytes().startswith(b"\x00GITCRYPT")
    assert locked.verify().ok and unlocked.verify().ok

    # locking again takes the note out of the index
    assert cli("private", "lock", repo=unlocked.root).returncode == 0
    assert all(r.path != "knowledge/private/plans.md" for r in unlocked.search("zebra codeword"))


def test_a_private_file_in_clear_is_never_pushed(
    memory_repo: MemoryRepo, tmp_path: Path, git_crypt: str, cli
) -> None:
    """No git-crypt rule (private init never ran): the private note would leave in clear,
    so sync (and a plain `git push`, through the pre-push hook) refuse."""
    _write(memory_repo, "knowledge/private/plans.md", PLAN)
    _git(memory_repo.root, "add", "-A")
    _git(memory_repo.root, "commit", "-qm", "memory: plans")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    _git(memory_repo.root, "remote", "add", "origin", remote.as_uri())
    with pytest.raises(SyncError, match="in clear"):
        sync_once(memory_repo)
    pushed = subprocess.run(
        ["git", "push", "origin", "main"], cwd=memory_repo.root, capture_output=True, text=True
    )
    assert pushed.returncode != 0 and "knowledge/private/plans.md" in pushed.stderr
    assert SECRET.encode() not in all_objects(remote)
    doctor = cli("doctor", repo=memory_repo.root).stdout
    assert "without a git-crypt rule" in doctor and "private init" in doctor


def test_commit_says_when_a_private_note_has_no_git_crypt_rule(memory_repo: MemoryRepo) -> None:
    """A private note committed before `private init` went into the local history in clear
    without a word (the push refuses it later, doctor names it): commit says so, with what
    to run."""
    from autopoiesis.git.repo import MemoryGit

    _write(memory_repo, "knowledge/private/plans.md", PLAN)
    with pytest.warns(UserWarning, match="private, but no git-crypt rule encrypts it"):
        MemoryGit(memory_repo).commit_pending()


def test_private_notes_reach_a_model_only_where_approved(memory_repo: MemoryRepo) -> None:
    """private.model_paths lets private notes into the compiled context, once this machine
    approved it (a pulled config cannot)."""
    _write(memory_repo, "knowledge/private/plans.md", PLAN)
    from autopoiesis.index import SearchIndex

    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    (memory_repo.root / "memory-config.yaml").write_text(
        "private:\n  model_paths:\n    - knowledge/private/plans.md\n", encoding="utf-8"
    )
    held = Memory(MemoryRepo(memory_repo.root)).compile("what is the zebra launch codeword?")[0]
    assert SECRET not in held.prompt
    approve(memory_repo.root, load_tracked_config(memory_repo.root))
    shown = Memory(MemoryRepo(memory_repo.root)).compile("what is the zebra launch codeword?")[0]
    assert SECRET in shown.prompt


def test_forget_reaches_into_encrypted_files(memory_repo: MemoryRepo, cli, git_crypt: str) -> None:
    """A string held only by a private file is found through git-crypt, removed from every
    version of it, and the file stays encrypted in git."""
    from autopoiesis.memory.forget import forget

    memory = Memory(memory_repo)
    assert cli("private", "init", repo=memory.root).returncode == 0
    _write(memory.repo, "knowledge/private/plans.md", PLAN)
    memory.commit("memory: plans")
    _write(memory.repo, "knowledge/private/plans.md", PLAN + "- Also the moon.\n")
    memory.commit("memory: moon")
    assert SECRET.encode() not in all_objects(memory.root)  # only ciphertext in git
    report = forget(memory.repo, text=SECRET, reason="a codeword in a private note")
    assert report.commit
    for rev in ("HEAD", "HEAD~2"):  # the record commit, then the two rewritten versions
        blob = subprocess.run(
            ["git", "cat-file", "blob", f"{rev}:knowledge/private/plans.md"],
            cwd=memory.root,
            capture_output=True,
            check=True,
        ).stdout
        assert blob.startswith(b"\x00GITCRYPT")
    plain = (memory.root / "knowledge/private/plans.md").read_text(encoding="utf-8")
    assert SECRET not in plain and "[redacted:forgotten]" in plain and "moon" in plain
    from autopoiesis.git.rewrite import occurrences, pattern_for

    assert occurrences(memory.root, pattern_for(SECRET)).total == 0
    assert memory.verify().ok


def test_a_private_note_reaches_no_commit_message_and_no_model_through_git(
    memory_repo: MemoryRepo, tmp_path: Path, cli, git_crypt: str
) -> None:
    """The commit message of a private note was made from `git diff`, which git-crypt's
    filter decrypts: its lines went into the message in clear (pushed with every commit),
    and into the prompt of the model that may write the summary. MCP `recall` ran `git
    log -S` through the same filter, so a model could read a private note back one
    character at a time, and `history` showed a private note's commits and blame. Now the
    message is made from what git stores (it names the file), recall searches the same
    and withholds private paths, history refuses a private note as `read` does, and the
    subjects and blame a model is shown are redacted."""
    from autopoiesis.errors import UnsafePathError
    from autopoiesis.mcp.tools import MemoryTools

    a = Memory(memory_repo)
    assert cli("private", "init", repo=a.root).returncode == 0
    _write(a.repo, "knowledge/private/plans.md", PLAN)
    assert a.commit().knowledge.sha is not None
    message = _git(a.root, "log", "-1", "--format=%B")
    assert SECRET not in message and "zebra" not in message.lower()
    assert "plans.md" in message

    tools = MemoryTools(a)
    assert tools.recall(SECRET)["commits"] == []
    assert tools.recall(SECRET[:3])["commits"] == []
    with pytest.raises(UnsafePathError, match="private"):
        tools.history("knowledge/private/plans.md", blame=True)
    for folder in ("knowledge/private", "knowledge"):  # a folder's: none of its private notes'
        assert not [c for c in tools.history(folder)["commits"] if "plans" in c["subject"]]

    token = "ghp_" + "Zq3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    _write(a.repo, "knowledge/reference/db.md", "# DB\n\n- The ledger lives in Postgres.\n")
    _git(a.root, "add", "-A")
    _git(a.root, "-c", "core.hooksPath=/dev/null", "commit", "-qm", f"db notes {token}")
    found = tools.recall("ledger lives")["commits"]
    assert [c["files"] for c in found] == [["knowledge/reference/db.md"]]
    assert token not in found[0]["subject"] and "[redacted" in found[0]["subject"]
    shown = tools.history("knowledge/reference/db.md", blame=True)
    assert token not in str(shown) and "ledger lives in Postgres" in shown["blame"]


def _pushed_private_memory(memory_repo: MemoryRepo, tmp_path: Path, cli) -> tuple[Path, Path]:
    """(its bare remote, its exported key) of MEMORY_REPO with git-crypt set up and a
    private plan committed and pushed."""
    a = Memory(memory_repo)
    assert cli("private", "init", repo=a.root).returncode == 0
    _write(a.repo, "knowledge/private/plans.md", PLAN)
    a.commit("memory: plans")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    _git(a.root, "remote", "add", "origin", remote.as_uri())
    sync_once(a.repo)
    key = tmp_path / "memory.key"
    assert cli("private", "add-key", "--export", str(key), repo=a.root).returncode == 0
    return remote, key


def test_unlock_with_another_memorys_key_changes_nothing(
    memory_repo: MemoryRepo, tmp_path: Path, cli, git_crypt: str
) -> None:
    """git-crypt installs the key it is given before it decrypts: another memory's key left
    the clone counted unlocked, its private files deleted from the work tree (a commit
    would have deleted them everywhere, and encrypted new ones with the wrong key), and
    the right key then refused as the work tree was not clean. Now the key is tried on a
    committed private file first: a wrong one changes nothing, the right one unlocks."""
    remote, key = _pushed_private_memory(memory_repo, tmp_path, cli)
    other = init_memory_repo(tmp_path / "other", build_index=False).root
    assert cli("private", "init", repo=other).returncode == 0
    wrong = tmp_path / "other.key"
    assert cli("private", "add-key", "--export", str(wrong), repo=other).returncode == 0

    clone = _clone(remote, tmp_path / "clone")
    refused = cli("private", "unlock", str(wrong), repo=clone.root)
    assert refused.returncode == 1 and "not this memory's key" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert _git(clone.root, "status", "--porcelain") == ""
    assert cli("private", "status", repo=clone.root).stdout.count("LOCKED") == 1
    missing = cli("private", "unlock", str(tmp_path / "no.key"), repo=clone.root)
    assert missing.returncode == 1 and "no key file" in missing.stderr

    assert cli("private", "unlock", str(key), repo=clone.root).returncode == 0
    assert (clone.root / "knowledge/private/plans.md").read_text(encoding="utf-8") == PLAN


def test_a_locked_clone_holds_a_new_private_note_out_of_its_commits(
    memory_repo: MemoryRepo, tmp_path: Path, cli, git_crypt: str
) -> None:
    """A clone without the key (git-crypt set up, locked) committed a new private note in
    clear (git-crypt's filter does not run without the key), and its push was refused
    with advice to run `private init`, which is wrong there. Now its commits leave the
    note out, on disk as it was, warning to unlock; once unlocked, the next commit takes
    it encrypted. A private note in clear that a plain `git commit` made is refused at
    push with the advice to unlock."""
    from autopoiesis.git.repo import MemoryGit

    remote, key = _pushed_private_memory(memory_repo, tmp_path, cli)
    locked = Memory(_clone(remote, tmp_path / "locked"))

    salary = "# Pay\n\n- The salary is 91000 KIWI.\n"
    _write(locked.repo, "knowledge/private/pay.md", salary)
    _write(locked.repo, "knowledge/reference/fruit.md", "# Fruit\n\n- Kiwis are green.\n")
    with pytest.warns(
        UserWarning,
        match=r"knowledge/private/pay.md is private and this clone is locked.*private unlock KEYFILE",
    ):
        done = locked.commit("memory: pay and fruit")
    assert done.knowledge.sha is not None
    tree = _git(locked.root, "ls-tree", "-r", "--name-only", "HEAD")
    assert "knowledge/reference/fruit.md" in tree and "knowledge/private/pay.md" not in tree
    assert (locked.root / "knowledge/private/pay.md").read_text(encoding="utf-8") == salary
    # a commit of named paths (the writer's, extraction's) leaves it out as well
    with pytest.warns(UserWarning, match="private unlock"):
        named = MemoryGit(locked.repo).commit_paths(["knowledge/private/pay.md"], "memory: pay")
    assert named.sha is None
    assert b"91000 KIWI" not in all_objects(locked.root)
    sync_once(locked.repo)  # the public note leaves; nothing private in clear

    # a plain `git commit` still commits it in clear: the push refuses, saying to unlock
    _git(locked.root, "add", "knowledge/private/pay.md")
    _git(locked.root, "commit", "-qm", "pay", "--no-verify")
    with pytest.raises(SyncError) as refused:
        sync_once(locked.repo)
    assert "knowledge/private/pay.md" in str(refused.value)
    assert "private unlock KEYFILE" in str(refused.value)
    assert "private init" not in str(refused.value)
    _git(locked.root, "reset", "-q", "HEAD~1")

    # unlocked, the next commit takes it, encrypted
    assert cli("private", "unlock", str(key), repo=locked.root).returncode == 0
    assert locked.commit("memory: pay").knowledge.sha is not None
    stored = subprocess.run(
        ["git", "cat-file", "blob", "HEAD:knowledge/private/pay.md"],
        cwd=locked.root,
        capture_output=True,
        check=True,
    ).stdout
    assert stored.startswith(b"\x00GITCRYPT")
    sync_once(locked.repo)
    assert b"91000 KIWI" not in all_objects(remote)
