"""Forged additions: a transcript that enters the history by a road the pre-commit hook
does not guard (a commit without hooks, a collaborator's push) is held to what the hook
asks (git/admission.py), and what verification needs outlives `.autopoiesis/`. Real
repos, real git, real hooks; the remote a bare repository over file://."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from autopoiesis.capture.stream import process_stream
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import SyncError
from autopoiesis.git.verify import verify
from autopoiesis.memory.initialize import init_memory_repo
from autopoiesis.memory.sync import sync_once
from tests.conftest import Cli

NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
BACKDATED = "raw/conversations/2019/05/05/1845-ses_forged-we-agreed-to-wire-the-money.md"


def _capture(repo: MemoryRepo, sid: str, started: str, text: str) -> str:
    lines = [
        json.dumps(e).encode()
        for e in (
            {"event": "session_start", "session_id": sid, "started": started},
            {"event": "message", "role": "user", "content": text},
            {"event": "session_end"},
        )
    ]
    return process_stream(repo, lines).closed[0].path


def _forgery(repo: MemoryRepo, *, status: str = "closed", started: str | None = "") -> str:
    """A transcript a forger writes: a real one's text, another session id, `status` and
    `started` as asked ("" keeps it, None leaves it out)."""
    source = next((repo.root / "raw/conversations").rglob("*.md")).read_text(encoding="utf-8")
    out = []
    for line in source.splitlines(keepends=True):
        if line.startswith("session_id:"):
            line = "session_id: ses_forged\n"
        elif line.startswith("status:"):
            line = f"status: {status}\n"
        elif line.startswith("started:") and started != "":
            line = f"started: {started}\n" if started else ""
        out.append(line)
    return "".join(out)


def _plant(
    repo: MemoryRepo, git, path: str, text: str, *, hooks: bool
) -> subprocess.CompletedProcess:
    (repo.root / path).parent.mkdir(parents=True, exist_ok=True)
    (repo.root / path).write_text(text, encoding="utf-8")
    git(repo, "add", path)
    return git(repo, *(() if hooks else NO_HOOKS), "commit", "-m", "add notes", check=False)


@pytest.fixture
def repo(memory_repo: MemoryRepo) -> MemoryRepo:
    _capture(memory_repo, "ses_real", "2026-02-16T18:45:00Z", "we agreed to ship on friday")
    assert verify(memory_repo).ok
    return memory_repo


def test_a_backdated_path_is_refused_at_commit_and_reported_without_hooks(
    repo: MemoryRepo, git, cli: Cli
) -> None:
    text = _forgery(repo)  # says 2026-02-16 18:45 inside, filed under 2019-05-05
    refused = _plant(repo, git, BACKDATED, text, hooks=True)
    assert refused.returncode != 0
    assert f"{BACKDATED}: its name does not match its frontmatter" in refused.stderr
    assert "raw/conversations/2026/02/16/1845-ses_forged-SLUG.md" in refused.stderr
    assert _plant(repo, git, BACKDATED, text, hooks=False).returncode == 0
    found = cli("verify", "--json", repo=repo)
    assert found.returncode == 1
    (finding,) = json.loads(found.stdout)["findings"]
    assert finding["path"] == BACKDATED and finding["kind"] == "misnamed"


@pytest.mark.parametrize(
    ("status", "started", "kind", "says"),
    [
        ("open", "2026-02-16T18:45:00Z", "open", "still open"),
        ("closed", None, "unreadable", "lacks started"),
        ("closed", "'not: [a date'", "unreadable", "started"),
    ],
    ids=["open", "no-started", "malformed"],
)
def test_a_transcript_the_hook_refuses_is_reported_when_committed_without_hooks(
    repo: MemoryRepo, git, cli: Cli, status: str, started: str | None, kind: str, says: str
) -> None:
    path = "raw/conversations/2026/02/16/1845-ses_forged-notes.md"
    text = _forgery(repo, status=status, started=started)
    assert _plant(repo, git, path, text, hooks=True).returncode != 0
    assert _plant(repo, git, path, text, hooks=False).returncode == 0
    found = cli("verify", "--json", repo=repo)
    assert found.returncode == 1
    findings = json.loads(found.stdout)["findings"]
    assert [(f["path"], f["kind"]) for f in findings] == [(path, kind)]
    assert says in findings[0]["detail"]
    # an addition, not a rewrite: the advice is to take it out, never to accept it
    told = cli("verify", repo=repo)
    assert "do not accept it" in told.stderr and "git rm PATH" in told.stderr
    assert "verify --accept" not in told.stderr


@pytest.mark.parametrize("kind", ["symlink", "gitlink"])
def test_a_link_committed_as_a_transcript_is_reported_once(
    repo: MemoryRepo, git, cli: Cli, tmp_path: Path, kind: str
) -> None:
    path = "raw/conversations/2026/02/16/1845-ses_link-notes.md"
    (repo.root / path).parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        (tmp_path / "outside.md").write_text("aws_secret_access_key = x\n")
        os.symlink(tmp_path / "outside.md", repo.root / path)
        git(repo, "add", path)
    else:
        head = git(repo, "rev-parse", "HEAD").stdout.strip()
        git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},{path}")
    git(repo, *NO_HOOKS, "commit", "-qm", "notes")
    found = cli("verify", "--json", repo=repo)
    assert found.returncode == 1
    findings = json.loads(found.stdout)["findings"]
    assert [(f["path"], f["kind"]) for f in findings] == [(path, "link")]


def test_a_history_replaced_wholesale_is_reported_after_the_caches_are_deleted(
    repo: MemoryRepo, git, cli: Cli
) -> None:
    _capture(repo, "ses_second", "2026-02-17T09:00:00Z", "the budget is 40k")
    assert verify(repo).ok
    # another history with none of these transcripts, put in place of main without hooks
    git(repo, *NO_HOOKS, "checkout", "-q", "--orphan", "other")
    git(repo, "rm", "-rq", "--cached", "raw")
    git(repo, *NO_HOOKS, "commit", "-qm", "maintenance: initialize memory repository")
    git(repo, *NO_HOOKS, "branch", "-M", "main")
    shutil.rmtree(repo.root / ".git" / "logs")  # no reflog to tell either
    shutil.rmtree(repo.state_dir)  # "rebuildable": every cache gone
    found = cli("verify", "--json", repo=repo)
    assert found.returncode == 1
    kinds = {
        (f["kind"], f["path"].split("/")[-1][5:13]) for f in json.loads(found.stdout)["findings"]
    }
    assert {("vanished", "ses_real"), ("vanished", "ses_seco")} <= kinds


def test_an_import_of_old_sessions_is_not_a_forgery(
    repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    log = tmp_path / "old.jsonl"
    log.write_text(
        json.dumps(
            {
                "session_id": "ses_2019",
                "messages": [
                    {
                        "role": "user",
                        "content": "plan the 2019 offsite",
                        "timestamp": "2019-05-05T10:00:00Z",
                    },
                    {"role": "assistant", "content": "booked", "timestamp": "2019-05-05T10:01:00Z"},
                ],
            }
        )
        + "\n"
    )
    done = cli("import", str(log), repo=repo)
    assert done.returncode == 0, done.stderr
    assert "raw/conversations/2019/05/05/1000-ses_2019-" in done.stdout + done.stderr
    assert cli("verify", repo=repo).returncode == 0


def _remote_pair(tmp_path: Path) -> tuple[MemoryRepo, MemoryRepo]:
    """Clone A (ours, verified) and clone B (a collaborator without hooks), one bare remote."""
    a = MemoryRepo(init_memory_repo(tmp_path / "a", build_index=False).root)
    _capture(a, "ses_real", "2026-02-16T18:45:00Z", "we agreed to ship on friday")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    subprocess.run(["git", "remote", "add", "origin", remote.as_uri()], cwd=a.root, check=True)
    sync_once(a)
    b = tmp_path / "b"
    subprocess.run(["git", "clone", "-q", remote.as_uri(), str(b)], check=True)
    return a, MemoryRepo(b)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "status", "started", "says"),
    [
        (BACKDATED, "closed", "2026-02-16T18:45:00Z", "does not match its frontmatter"),
        (
            "raw/conversations/2026/02/16/1845-ses_forged-x.md",
            "open",
            "2026-02-16T18:45:00Z",
            "still open",
        ),
        ("raw/conversations/2026/02/16/1845-ses_forged-x.md", "closed", None, "lacks started"),
    ],
    ids=["backdated", "open", "no-started"],
)
def test_sync_refuses_a_transcript_the_hook_would_refuse(
    tmp_path: Path, git, cli: Cli, path: str, status: str, started: str | None, says: str
) -> None:
    a, b = _remote_pair(tmp_path)
    text = _forgery(a, status=status, started=started).replace(
        "we agreed to ship on friday", "we agreed to wire the money to account 4471"
    )
    assert _plant(b, git, path, text, hooks=False).returncode == 0
    git(b, "push", "-q", "origin", "main")
    before = git(a, "rev-parse", "HEAD").stdout.strip()
    with pytest.raises(SyncError) as refused:
        sync_once(a)
    assert path in str(refused.value) and says in str(refused.value)
    assert "Nothing was merged" in str(refused.value)
    assert git(a, "rev-parse", "HEAD").stdout.strip() == before
    assert not (a.root / path).exists()
    found = cli("search", "wire the money", "--json", repo=a, check=True)
    assert "account 4471" not in found.stdout


def test_a_second_file_of_a_session_is_refused_at_commit_by_verify_and_by_sync(
    tmp_path: Path, git, cli: Cli
) -> None:
    """A forger files a transcript under the victim's own session id with another slug
    (`1845-ses_real-other-slug.md`): its name matches its frontmatter, no transcript is
    changed, and extraction cited the forged decision as the victim's session. A session
    is one file a part: the second is refused by the hook, reported by verify and refused
    by sync before it merges; a session whose id starts with the other's is its own."""
    a, b = _remote_pair(tmp_path)
    (real,) = [p for p in (a.root / "raw/conversations").rglob("*.md")]
    second = real.parent.relative_to(a.root) / "1845-ses_real-other-slug.md"
    text = real.read_text(encoding="utf-8").replace(
        "we agreed to ship on friday", "we agreed to wire the money to account 4471"
    )
    refused = _plant(a, git, str(second), text, hooks=True)
    assert refused.returncode != 0
    assert f"{second}: it holds session ses_real, which {real.relative_to(a.root)}" in (
        refused.stderr
    )
    git(a, "restore", "--staged", str(second))
    (a.root / second).unlink()
    # a collaborator's push of it
    assert _plant(b, git, str(second), text, hooks=False).returncode == 0
    found = cli("verify", "--json", repo=b)
    assert [(f["path"], f["kind"]) for f in json.loads(found.stdout)["findings"]] == [
        (str(second), "duplicate")
    ]
    git(b, "push", "-q", "origin", "main")
    before = git(a, "rev-parse", "HEAD").stdout.strip()
    with pytest.raises(SyncError, match="ses_real") as sync_refused:
        sync_once(a)
    assert str(second) in str(sync_refused.value)
    assert git(a, "rev-parse", "HEAD").stdout.strip() == before
    # a session whose id starts like another's (`ses_real-2`) is its own
    _capture(a, "ses_real-2", "2026-02-16T18:45:00Z", "a session of its own")
    assert verify(a).ok
