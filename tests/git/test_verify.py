"""Transcript immutability against every git command that bypasses pre-commit.

Each bypass runs twice in a real memory repo with real transcripts: once
with the hooks installed (the reference-transaction hook refuses it and the branch does
not move), once with every hook switched off (`-c core.hooksPath=/dev/null`, as in a
clone without hooks), after which `autopoiesis verify` reports it, naming the transcript
and the commit, and exits non-zero."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from autopoiesis.capture.stream import process_stream
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.git.verify import load_record, record_path, verify
from tests.conftest import BuiltRepo, Cli

NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


def capture(repo: MemoryRepo, sid: str, day: int, text: str) -> str:
    lines = [
        json.dumps(e).encode()
        for e in (
            {
                "event": "session_start",
                "session_id": sid,
                "started": f"2026-02-{day:02d}T18:45:00Z",
            },
            {"event": "message", "role": "user", "content": text},
            {"event": "message", "role": "agent", "content": f"noted: {text}"},
            {"event": "session_end"},
        )
    ]
    report = process_stream(repo, lines)
    return report.closed[0].path


@pytest.fixture
def mem(built_repo: BuiltRepo) -> tuple[MemoryRepo, list[str]]:
    """A memory repo with three captured transcripts, verified once (the record exists,
    as after any doctor, merge or push)."""

    def build(repo: MemoryRepo) -> list[str]:
        paths = [capture(repo, f"ses_{i}", 10 + i, f"we decided plan {i}") for i in range(3)]
        assert verify(repo).ok
        return paths

    return built_repo("three-verified-transcripts", build)


class Attack:
    """Runs git in the repo with the hooks on, or off (HOOKS False)."""

    def __init__(self, repo: MemoryRepo, git, hooks: bool):
        self.repo, self._git, self.hooks = repo, git, hooks

    def __call__(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        pre = () if self.hooks else NO_HOOKS
        return self._git(self.repo.root, *pre, *args, check=check, env=env)

    def head(self, rev: str = "main") -> str:
        return self._git(self.repo.root, "rev-parse", rev).stdout.strip()


def forged_remote(repo: MemoryRepo, git, tmp_path: Path, path: str, *, commits: int = 1) -> str:
    """A clone without our hooks edits PATH; its main is fetched to refs/remotes/other/main.
    Returns the sha of the forging commit."""
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(repo.root), str(other))
    f = other / path
    f.write_text(f.read_text() + "\n## 19:00 — user\n\nforged turn: the password is swordfish\n")
    git(other, "commit", "-qam", "tidy up")
    forging = git(other, "rev-parse", "HEAD").stdout.strip()
    for i in range(commits - 1):
        (other / f"knowledge/reference/extra{i}.md").write_text(f"# extra {i}\n")
        git(other, "add", "-A")
        git(other, "commit", "-qm", f"extra {i}")
    git(repo.root, "fetch", "-q", str(other), "main:refs/remotes/other/main")
    return forging


def assert_refused(
    proc: subprocess.CompletedProcess[str],
    attack: Attack,
    before: str,
    path: str,
    commit: str | None,
) -> None:
    assert proc.returncode != 0
    assert "ref updates aborted by hook" in proc.stderr or "refused" in proc.stderr
    assert path in proc.stderr
    if commit:
        assert commit[:12] in proc.stderr
    assert attack.head() == before, "the branch moved"


def assert_reported(cli: Cli, repo: MemoryRepo, path: str, commit: str | None) -> str:
    proc = cli("verify", repo=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next((x for x in proc.stdout.splitlines() if x.startswith(path + ":")), None)
    assert line is not None, proc.stdout
    if commit:
        assert commit[:12] in line, proc.stdout
    assert "FAILED" in proc.stdout
    return proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_fast_forward_merge(mem, git, tmp_path, hooks, cli: Cli) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    forging = forged_remote(repo, git, tmp_path, paths[1], commits=2)
    before = a.head()
    proc = a("merge", "-q", "--ff-only", "other/main", check=False)
    if hooks:
        assert_refused(proc, a, before, paths[1], forging)
        a("reset", "-q", "--merge")
        assert "forged" not in (repo.root / paths[1]).read_text()
    else:
        assert proc.returncode == 0 and a.head() != before
        assert_reported(cli, repo, paths[1], forging)


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_merge_commit(mem, git, tmp_path, hooks, cli: Cli) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    forging = forged_remote(repo, git, tmp_path, paths[0])
    capture(repo, "ses_new", 20, "a later session")  # main moved on: a real merge commit
    before = a.head()
    proc = a("merge", "-q", "--no-ff", "--no-edit", "other/main", check=False)
    if hooks:
        assert_refused(proc, a, before, paths[0], forging)
    else:
        assert proc.returncode == 0
        out = assert_reported(cli, repo, paths[0], forging)
        merge = a.head()
        assert merge[:12] in out  # the merge that brought it in is named too


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_cherry_pick(mem, git, tmp_path, hooks, cli: Cli) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    forging = forged_remote(repo, git, tmp_path, paths[2])
    before = a.head()
    proc = a("cherry-pick", forging, check=False)
    if hooks:
        assert_refused(proc, a, before, paths[2], None)
    else:
        assert proc.returncode == 0
        assert_reported(cli, repo, paths[2], a.head())


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_rebase_onto_a_forged_branch(mem, git, tmp_path, hooks, cli: Cli) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    forging = forged_remote(repo, git, tmp_path, paths[0])
    capture(repo, "ses_new", 20, "a later session")
    before = a.head()
    proc = a("rebase", "other/main", check=False)
    if hooks:
        assert_refused(proc, a, before, paths[0], forging)
        a("rebase", "--abort")
        assert a.head() == before
    else:
        assert proc.returncode == 0
        assert_reported(cli, repo, paths[0], forging)


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_interactive_rebase_editing_the_commit_that_added_a_transcript(
    mem, git, hooks, cli: Cli
) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    before = a.head()
    env = {"GIT_SEQUENCE_EDITOR": "sed -i '1s/^pick/edit/'"}
    a("rebase", "-q", "-i", "HEAD~3", env=env)  # stops at the commit that added paths[0]
    f = repo.root / paths[0]
    f.write_text(f.read_text().replace("we decided plan 0", "we decided plan Z"))
    a("add", paths[0])
    a(
        *NO_HOOKS, "commit", "-q", "--amend", "--no-edit"
    )  # pre-commit sees a new file here; refused later anyway
    proc = a("rebase", "--continue", check=False)
    if hooks:
        assert_refused(proc, a, before, paths[0], None)
        a("rebase", "--abort")
        assert a.head() == before
    else:
        assert proc.returncode == 0
        adder = git(
            repo.root, "log", "--format=%H", "--diff-filter=A", "-1", "--", paths[0]
        ).stdout.strip()
        assert_reported(cli, repo, paths[0], adder)


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_git_am(mem, git, tmp_path, hooks, cli: Cli) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    forging = forged_remote(repo, git, tmp_path, paths[1])
    patch = git(repo.root, "format-patch", "-1", "--stdout", forging).stdout
    (tmp_path / "p.patch").write_text(patch)
    before = a.head()
    proc = a("am", "-q", str(tmp_path / "p.patch"), check=False)
    if hooks:
        assert_refused(proc, a, before, paths[1], None)
        a("am", "--abort")
    else:
        assert proc.returncode == 0
        assert_reported(cli, repo, paths[1], a.head())


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_revert_of_a_conversation_commit(mem, git, hooks, cli: Cli) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    conversation = git(repo.root, "log", "--format=%H", "-1", "--", paths[1]).stdout.strip()
    before = a.head()
    proc = a("revert", "--no-edit", conversation, check=False)
    if hooks:
        assert_refused(proc, a, before, paths[1], None)
        a("reset", "-q", "--merge")
        assert (repo.root / paths[1]).exists()
    else:
        assert proc.returncode == 0 and not (repo.root / paths[1]).exists()
        out = assert_reported(cli, repo, paths[1], a.head())
        assert "deleted" in out


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_orphan_branch_renamed_to_main(mem, git, hooks, cli: Cli) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    before = a.head()
    a("checkout", "-q", "--orphan", "fresh")
    a("rm", "-rq", "--cached", "raw/conversations")  # a history without the transcripts...
    f = repo.root / paths[2]
    f.write_text(f.read_text().replace("plan 2", "plan 9"))
    a("add", paths[2])  # ...but one, with other content
    proc = a("commit", "-qm", "fresh start", check=False)
    if hooks:  # the orphan commit already re-adds a recorded transcript with other content
        assert proc.returncode != 0 and paths[2] in proc.stderr
        a(
            "commit", "-qm", "fresh start", "--allow-empty", "--", ":(exclude)raw"
        )  # an orphan without it passes
        proc = a("branch", "-M", "main", check=False)
        assert proc.returncode != 0
        assert paths[0] in proc.stderr and "refs/heads/main" in proc.stderr
        assert a.head("refs/heads/main") == before
    else:
        assert proc.returncode == 0
        root = a.head("HEAD")
        a("branch", "-M", "main")
        assert a.head() == root
        out = assert_reported(cli, repo, paths[2], root)
        assert f"{paths[0]}: was in the verified history of main" in out
        assert "history was replaced" in out


@pytest.mark.slow
@pytest.mark.parametrize("record", [True, False], ids=["record", "reflog"])
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_reset_soft_edit_commit(memory_repo, git, hooks, record, cli: Cli) -> None:
    repo = memory_repo
    paths = [capture(repo, f"ses_{i}", 10 + i, f"we decided plan {i}") for i in range(2)]
    if record:
        assert verify(repo).ok
    a = Attack(repo, git, hooks)
    before = a.head()
    proc = a("reset", "-q", "--soft", "HEAD~1", check=False)
    if hooks:
        assert_refused(proc, a, before, paths[1], None)
        return
    f = repo.root / paths[1]
    f.write_text(f.read_text().replace("plan 1", "plan 7"))
    a("add", paths[1])
    a("commit", "-qm", "conversation: same as before")
    assert_reported(cli, repo, paths[1], a.head())


@pytest.mark.slow
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "verify"])
def test_git_replace_of_a_transcript_blob(mem, git, hooks, cli: Cli) -> None:
    repo, paths = mem
    a = Attack(repo, git, hooks)
    blob = git(repo.root, "rev-parse", f"HEAD:{paths[0]}").stdout.strip()
    forged = git(
        repo.root, "hash-object", "-w", "--stdin", input="---\nsession_id: ses_0\n---\nforged\n"
    ).stdout.strip()
    proc = a("replace", blob, forged, check=False)
    if hooks:
        assert proc.returncode != 0 and paths[0] in proc.stderr
        assert git(repo.root, "for-each-ref", "refs/replace/").stdout == ""
    else:
        assert proc.returncode == 0
        assert git(repo.root, "show", f"HEAD:{paths[0]}").stdout.endswith(
            "forged\n"
        )  # git now lies
        out = assert_reported(cli, repo, paths[0], blob)
        assert f"git replace -d {blob}" in out


@pytest.mark.slow
def test_git_replace_of_a_commit_names_the_commit(mem, git, cli: Cli) -> None:
    repo, paths = mem
    conversation = git(repo.root, "log", "--format=%H", "-1", "--", paths[1]).stdout.strip()
    git(repo.root, *NO_HOOKS, "replace", "--graft", conversation)  # the commit without its parent
    out = cli("verify", repo=repo)
    assert out.returncode == 1
    assert conversation in out.stdout and "git replace" in out.stdout


# ── verify itself ──
@pytest.mark.slow
def test_clean_history_is_ok_and_incremental(mem, cli: Cli) -> None:
    repo, _ = mem
    proc = cli("verify", repo=repo)
    assert proc.returncode == 0
    assert proc.stdout.strip() == "ok: 3 transcripts, 0 commits checked"
    capture(repo, "ses_more", 25, "one more")
    assert cli("verify", repo=repo).stdout.strip() == "ok: 4 transcripts, 1 commit checked"
    full = cli("verify", "--full", "--json", repo=repo)
    data = json.loads(full.stdout)
    assert (
        data["ok"] and data["full"] and data["commits_checked"] == 5
    )  # the init commit and four sessions


@pytest.mark.slow
def test_record_is_read_incrementally_and_reports_until_fixed(mem, git, tmp_path, cli: Cli) -> None:
    repo, paths = mem
    forging = forged_remote(repo, git, tmp_path, paths[0])
    good = git(repo.root, "rev-parse", "HEAD").stdout.strip()
    git(repo.root, *NO_HOOKS, "merge", "-q", "--ff-only", "other/main")
    for _ in range(2):  # a finding is never recorded as verified: it is reported every time
        assert_reported(cli, repo, paths[0], forging)
    # back to the verified commit: with the hooks on, this move is allowed (it restores)
    git(repo.root, "reset", "-q", "--keep", good)
    assert cli("verify", repo=repo).returncode == 0


@pytest.mark.slow
def test_accept_records_a_sanctioned_rewrite(mem, git, cli: Cli) -> None:
    repo, paths = mem
    conversation = git(repo.root, "log", "--format=%H", "-1", "--", paths[1]).stdout.strip()
    git(repo.root, *NO_HOOKS, "revert", "--no-edit", conversation)
    assert cli("verify", repo=repo).returncode == 1
    proc = cli("verify", "--accept", repo=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cli("verify", repo=repo).returncode == 0
    assert cli("verify", "--full", repo=repo).returncode == 0


def test_verify_without_commits_and_unknown_ref(tmp_path, git, cli: Cli) -> None:
    from autopoiesis.memory.initialize import init_memory_repo

    repo = MemoryRepo(init_memory_repo(tmp_path / "m", build_index=False).root)
    proc = cli("verify", "--ref", "nope", repo=repo)
    assert (
        proc.returncode != 0
        and "no branch 'nope'" in proc.stderr
        and "Traceback" not in proc.stderr
    )


@pytest.mark.slow
def test_doctor_reports_a_forged_history(mem, git, tmp_path, cli: Cli) -> None:
    repo, paths = mem
    assert cli("index", "rebuild", repo=repo).returncode == 0
    clean = cli("doctor", repo=repo)
    out = clean.stdout
    assert clean.returncode == 0, out  # no problem, exit 0
    assert "history     ok: 3 transcripts" in out
    assert "fresh" in out and "fails verify" not in out
    forging = forged_remote(repo, git, tmp_path, paths[0])
    git(repo.root, *NO_HOOKS, "merge", "-q", "--ff-only", "other/main")
    git(repo.root, *NO_HOOKS, "-c", "gc.auto=0", "status")
    proc = cli("doctor", "--json", repo=repo)
    assert proc.returncode == 1  # a failed check is the exit status too
    data = json.loads(proc.stdout)
    assert data["history"]["ok"] is False
    assert any(
        f["path"] == paths[0] and f["commit"] == forging for f in data["history"]["findings"]
    )
    assert any(p.startswith("history:") for p in data["problems"])
    printed = cli("doctor", repo=repo)
    text = printed.stdout
    assert printed.returncode == 1 and "fails verify" in text and "FAILED" in text


# ── the history hooks ──
@pytest.mark.slow
def test_pre_push_refuses_a_forged_history(mem, git, tmp_path) -> None:
    repo, paths = mem
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo.root, "remote", "add", "origin", str(remote))
    git(repo.root, "push", "-q", "origin", "main")
    forging = forged_remote(repo, git, tmp_path, paths[2])
    git(repo.root, *NO_HOOKS, "merge", "-q", "--ff-only", "other/main")
    proc = git(repo.root, "push", "origin", "main", check=False)
    assert proc.returncode != 0
    assert paths[2] in proc.stderr and forging[:12] in proc.stderr
    assert "autopoiesis verify" in proc.stderr
    assert git(remote, "rev-parse", "main").stdout.strip() != forging


@pytest.mark.slow
def test_post_merge_warns_when_the_transaction_hook_is_missing(mem, git, tmp_path) -> None:
    repo, paths = mem
    (repo.root / ".git/hooks/reference-transaction").unlink()
    forging = forged_remote(repo, git, tmp_path, paths[1])
    proc = git(repo.root, "merge", "--ff-only", "other/main")
    assert "warning" in proc.stderr and paths[1] in proc.stderr and forging[:12] in proc.stderr


@pytest.mark.slow
def test_post_rewrite_runs_verify_after_a_rebase(mem, git, tmp_path) -> None:
    repo, paths = mem
    (repo.root / ".git/hooks/reference-transaction").unlink()
    forging = forged_remote(repo, git, tmp_path, paths[1])
    capture(repo, "ses_new", 20, "a later session")
    proc = git(repo.root, "rebase", "other/main")
    assert (
        "after this rewrite" in proc.stderr
        and paths[1] in proc.stderr
        and forging[:12] in proc.stderr
    )


@pytest.mark.slow
def test_ordinary_work_passes_the_transaction_hook(mem, git, commit_all, cli: Cli) -> None:
    """Commits, branches, explore branches, resets that drop no transcript, tags: all fine."""
    repo, _ = mem
    (repo.root / "knowledge/reference/a.md").write_text("# a\n")
    commit_all(repo.root, "memory: a")
    git(repo.root, "checkout", "-q", "-b", "explore/idea")
    (repo.root / "knowledge/reference/b.md").write_text("# b\n")
    commit_all(repo.root, "memory: b")
    git(repo.root, "checkout", "-q", "main")
    git(repo.root, "merge", "-q", "--no-edit", "explore/idea")
    git(repo.root, "reset", "-q", "--hard", "HEAD~1")  # drops a knowledge commit only
    git(repo.root, "branch", "-D", "explore/idea")
    capture(repo, "ses_new", 20, "a later session")
    git(repo.root, "tag", "memory/test")
    assert cli("verify", repo=repo).returncode == 0


def test_the_checkpoint_is_kept_in_git_and_the_record_is_small(mem, git, cli: Cli) -> None:
    """What a clean run verified is a ref (its tree is every transcript's blob), so the
    record holds no list of transcripts, and the next run reads only the commits since."""
    repo, paths = mem
    head = git(repo.root, "rev-parse", "HEAD").stdout.strip()
    assert git(repo.root, "rev-parse", "refs/autopoiesis/verified/main").stdout.strip() == head
    record = json.loads(record_path(repo).read_text())
    assert not (repo.state_dir / "verify" / "record.json").exists()  # not among the caches
    assert record["branches"]["refs/heads/main"] == {
        "commit": head,
        "reflog": record["branches"]["refs/heads/main"]["reflog"],
        "count": 3,
    }
    capture(repo, "ses_more", 25, "one more")
    assert cli("verify", repo=repo).stdout.strip() == "ok: 4 transcripts, 1 commit checked"
    # a history replaced wholesale is found against the checkpoint's tree
    git(repo.root, *NO_HOOKS, "checkout", "-q", "--orphan", "fresh")
    git(repo.root, *NO_HOOKS, "rm", "-rq", "--cached", "raw")
    git(repo.root, *NO_HOOKS, "commit", "-qm", "a new start")
    git(repo.root, *NO_HOOKS, "branch", "-M", "fresh", "main")
    assert_reported(cli, repo, paths[0], None)


def test_a_record_made_before_the_checkpoint_still_counts(mem, git, cli: Cli) -> None:
    """A record that lists the transcripts (as verify kept them before the checkpoint ref)
    is read as it is, and a clean run replaces it with the checkpoint."""
    repo, paths = mem
    git(repo.root, "update-ref", "-d", "refs/autopoiesis/verified/main")
    path = record_path(repo)
    record = json.loads(path.read_text())
    branch = record["branches"]["refs/heads/main"]
    branch.pop("count")
    branch["transcripts"] = {p: "0" * 40 for p in paths}  # none as HEAD holds it
    path.write_text(json.dumps(record))
    assert "differs from the verified record" in cli("verify", "--full", repo=repo).stdout
    branch["transcripts"] = {
        p: git(repo.root, "rev-parse", f"HEAD:{p}").stdout.strip() for p in paths
    }
    path.write_text(json.dumps(record))
    assert cli("verify", repo=repo).returncode == 0
    assert "transcripts" not in json.loads(path.read_text())["branches"]["refs/heads/main"]
    assert git(repo.root, "rev-parse", "refs/autopoiesis/verified/main").returncode == 0


def test_gc_and_maintenance_pass_the_transaction_hook_and_main_stays_guarded(
    mem, git, cli: Cli
) -> None:
    """`git pack-refs` deletes each loose ref once packed-refs holds it: the hook used to
    read that as deleting main, so `git gc`, `gc --auto` and `git maintenance` failed in
    every memory repo that held a transcript. Packing deletes nothing; a real deletion of
    the packed main is still refused."""
    repo, paths = mem
    assert (repo.root / ".git/refs/heads/main").exists()  # loose, as after any commit
    assert git(repo.root, "gc", "--quiet", check=False).returncode == 0
    assert "refs/heads/main" in (repo.root / ".git/packed-refs").read_text()
    assert not (repo.root / ".git/refs/heads/main").exists()
    capture(repo, "ses_gc", 21, "after the gc")  # main loose again, and packed at the old tip
    proc = git(repo.root, "maintenance", "run", "--task=gc", check=False)
    assert proc.returncode == 0, proc.stderr
    capture(repo, "ses_auto", 22, "before gc --auto")
    proc = git(repo.root, "-c", "gc.auto=1", "-c", "gc.autoDetach=false", "gc", "--auto")
    assert proc.returncode == 0, proc.stderr
    before = git(repo.root, "rev-parse", "main").stdout.strip()
    git(repo.root, "checkout", "-q", "-b", "side", "HEAD~1")
    git(repo.root, "pack-refs", "--all")
    git(repo.root, "commit", "-q", "--allow-empty", "-m", "main loose and packed")
    git(repo.root, "checkout", "-q", "main")
    git(repo.root, "commit", "-q", "--allow-empty", "-m", "main loose and packed")
    git(repo.root, "checkout", "-q", "side")
    proc = git(repo.root, "branch", "-D", "main", check=False)
    assert proc.returncode != 0 and "refused to delete" in proc.stderr
    assert git(repo.root, "rev-parse", "main").stdout.strip() != before  # still there, moved
    assert cli("verify", repo=repo).returncode == 0


def test_a_tip_the_branch_has_since_moved_past_is_no_rewrite(mem, git) -> None:
    """A push sends the tip of the moment; a capture that commits while the pre-push hook
    verifies it moves main past that tip. The newer commit's transcript used to be
    reported as gone ('the branch was reset or rewritten') and the push refused: found by
    bench/bench_team.py, a daemon's sync refused by its own pre-push hook."""
    repo, _ = mem
    pushed = git(repo.root, "rev-parse", "HEAD").stdout.strip()
    assert verify(repo).ok  # the record at the tip being pushed
    capture(repo, "ses_meanwhile", 20, "committed during the push")
    during = verify(repo, ref="refs/heads/main", tip=pushed)
    assert during.ok, during.findings
    assert verify(repo).ok  # the record now at the newer commit
    after = verify(repo, ref="refs/heads/main", tip=pushed)
    assert after.ok, after.findings
    record = load_record(repo)
    assert record["branches"]["refs/heads/main"]["commit"] != pushed  # not moved back
    assert verify(repo).summary().endswith("0 commits checked")


def test_a_transcript_edited_in_the_working_tree_is_named(mem, git, cli: Cli) -> None:
    """A committed transcript edited on disk and never committed: the history is intact,
    so `verify` said ok and `doctor` too, while search and the compiled context read the
    edited text ("approved wiping the database"). Both name it, with how to restore it;
    a deleted one too; once restored, verify is ok."""
    repo, paths = mem
    edited, deleted = repo.root / paths[0], repo.root / paths[1]
    edited.write_text(edited.read_text().replace("noted:", "approved wiping the database:"))
    deleted.unlink()
    proc = cli("verify", repo=repo)
    assert proc.returncode == 1
    assert f"{paths[0]}: changed in the working tree since its commit" in proc.stdout
    assert f"{paths[1]}: deleted in the working tree since its commit" in proc.stdout
    assert f"git checkout HEAD -- {paths[0]}" in proc.stdout
    assert "Transcripts under raw/ are immutable" not in proc.stderr  # no rewrite to undo
    doctor = cli("doctor", "--json", repo=repo)
    assert paths[0] in doctor.stdout
    git(repo.root, "checkout", "HEAD", "--", "raw")
    assert cli("verify", repo=repo).returncode == 0
