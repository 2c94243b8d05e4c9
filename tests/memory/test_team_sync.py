"""A team's sync left unattended: the properties of issue 26's three-clone scenario at a
small scale (bench/bench_team.py runs the whole scenario). Real clones, a real bare
remote, the real hooks, merge driver and knowledge writer."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import SyncError
from autopoiesis.formats import knowledge as kf
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
from autopoiesis.knowledge.writer import KnowledgeWriter
from autopoiesis.memory.sync import sync_once
from tests.conftest import Cli
from tests.memory.test_sync import T0, _capture, _clone, _entries, _first_clone, _git

pytestmark = pytest.mark.slow

DATES = "knowledge/reference/atlas.md"


def _say(repo: MemoryRepo, sid: str, text: str, hours: int) -> str:
    """A session that states the date of the atlas launch, and its fact (what the facts
    extractor hands the writer: the `atlas launch date` subject)."""
    when = T0 + timedelta(hours=hours)
    src = _capture(repo, sid, text, when)
    change = KnowledgeChange(
        DATES,
        "append",
        "Dates",
        text,
        Provenance(src, when, "facts@2", sid),
        subject="atlas launch date",
    )
    added = KnowledgeWriter(repo).apply([change]).added
    assert len(added) == 1
    return added[0][1]


def _live(repo: MemoryRepo, subject: str) -> list[kf.Entry]:
    return [e for e in _entries(repo).values() if e.subject == subject and e.active]


def test_two_clones_that_set_one_subject_unaware_of_each_other_end_with_the_later_value(
    tmp_path: Path,
) -> None:
    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    early = _say(a, "ses_a", "The atlas launch is planned for June 3", 1)
    late = _say(b, "ses_b", "The atlas launch moved to June 17", 2)
    sync_once(a)
    report = sync_once(b)  # B merges A's earlier value: its own later one wins
    assert report.merge == "merged" and report.settled
    sync_once(a)
    for repo in (a, b):
        live = _live(repo, "atlas-launch-date")
        assert [e.id for e in live] == [late], [e.render() for e in live]
        assert _entries(repo)[early].superseded_by == late  # history kept, struck through
        current = kf.current_text((repo.root / DATES).read_text())
        assert "June 17" in current and "June 3" not in current
    assert _git(a, "rev-parse", "HEAD") == _git(b, "rev-parse", "HEAD")

    # the other order: the later value is merged into the clone that holds the earlier one
    later = _say(a, "ses_a2", "The atlas launch moved to June 24", 4)
    earlier = _say(b, "ses_b2", "The atlas launch moved to June 20", 3)
    sync_once(b)
    sync_once(a)
    sync_once(b)
    for repo in (a, b):
        assert [e.id for e in _live(repo, "atlas-launch-date")] == [later]
        assert _entries(repo)[earlier].superseded_by == later
    assert _git(a, "status", "--porcelain") == _git(b, "status", "--porcelain") == ""


def _race_once(remote: Path, winner: str) -> None:
    """The next push to REMOTE loses a race: between receiving it and moving main, the
    remote's update hook moves main to WINNER (what another clone's push that landed in
    between does), so git answers `[remote rejected] (failed to update ref)`."""
    hook = remote / "hooks" / "update"
    flag = remote / "race-once"
    flag.write_text(winner)
    hook.write_text(
        "#!/bin/sh\n"
        f'if [ -f "{flag}" ]; then git update-ref refs/heads/main "$(cat "{flag}")" || exit 1; '
        f'rm -f "{flag}"; fi\nexit 0\n'
    )
    hook.chmod(0o755)


@pytest.mark.parametrize("transport", ["file", "http"])
def test_a_push_that_loses_a_race_is_fetched_merged_and_pushed_again(
    tmp_path: Path, transport: str
) -> None:
    from autopoiesis.testing.git_http import GitHTTPServer

    a, remote = _first_clone(tmp_path)
    server = GitHTTPServer(remote.parent).start()
    if transport == "http":  # git over HTTP says "failed to update ref" too, or "failed to lock"
        _git(a, "remote", "set-url", "origin", server.url(remote.name))
    b = _clone(remote, tmp_path / "b")
    if transport == "http":
        _git(b, "remote", "set-url", "origin", server.url(remote.name))
    src_a = _capture(a, "ses_race_a", "clone A's session", T0 + timedelta(hours=1))
    _git(a, "push", "-q", "origin", "main:refs/heads/staging")  # A's push, about to land
    _race_once(remote, _git(a, "rev-parse", "main").strip())
    src_b = _capture(b, "ses_race_b", "clone B's session", T0 + timedelta(hours=2))

    report = sync_once(b)
    assert report.push_retries == 1 and report.pushed == ["refs/heads/main"]
    assert "after 1 retry" in "\n".join(report.lines())
    assert not (remote / "race-once").exists()  # the race happened
    main = _git(remote, "rev-parse", "main").strip()
    assert main == _git(b, "rev-parse", "HEAD").strip()
    for path in (src_a, src_b):  # both sessions on the remote: A's winner, B's retried
        assert _git(remote, "cat-file", "-t", f"main:{path}").strip() == "blob"
    server.stop()


def test_a_remote_that_refuses_for_another_reason_is_not_retried(tmp_path: Path) -> None:
    a, remote = _first_clone(tmp_path)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'main is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    _capture(a, "ses_refused", "a session the remote refuses", T0 + timedelta(hours=1))
    with pytest.raises(SyncError, match="protected branch") as refused:
        sync_once(a)
    assert "tries" not in str(refused.value)


def test_a_sync_stopped_by_a_conflict_is_shown_never_taken_for_idle(
    tmp_path: Path, cli: Cli
) -> None:
    """The daemon's sync that hits a conflict undoes the merge: it used to record `idle`,
    exit 0, 0 failures, and `daemon status` hid that the clone had stopped syncing."""
    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    for repo in (a, b):  # the daemon's sync job exists with auto_push
        config = repo.root / "memory-config.yaml"
        config.write_text(config.read_text().replace("auto_push: false", "auto_push: true"))
        _git(repo, "commit", "-qam", "maintenance: auto_push")
    user = "knowledge/identity/USER.md"
    for repo, words in ((a, "prefers short answers"), (b, "prefers long answers")):
        f = repo.root / user
        f.write_text(f.read_text() + f"\nThe user {words}.\n")
    sync_once(a)
    assert cli("daemon", "status", repo=b).returncode == 0

    ran = cli("run-due", "--job", "sync", repo=b)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "sync" in ran.stdout and "failed" in ran.stdout and user in ran.stdout
    status = cli("daemon", "status", repo=b)
    assert status.returncode == 1 and "sync       STOPPED" in status.stdout, status.stdout
    assert user in status.stdout and "autopoiesis sync" in status.stdout
    shown = json.loads(cli("daemon", "status", "--json", repo=b).stdout)
    assert shown["sync"]["failing"]["kind"] == "conflict"
    assert shown["sync"]["failing"]["paths"] == [user]
    assert shown["jobs"]["sync"]["last_result"] == "failed"
    doctor = cli("doctor", "--check", "sync", repo=b)
    assert doctor.returncode == 1 and "sync stopped since" in doctor.stdout
    assert "sync       STOPPED" in cli("status", repo=b).stdout
    with pytest.raises(SyncError):  # still stopped (as the job's retry finds): counted
        sync_once(b, abort_on_conflict=True)
    attempts = json.loads(cli("daemon", "status", "--json", repo=b).stdout)["sync"]["failing"]
    assert attempts["attempts"] == 2 and attempts["since"] == shown["sync"]["failing"]["since"]

    # a person resolves it; the next sync works and the clone says so
    assert cli("sync", repo=b).returncode == 1
    text = (b.root / user).read_text()
    (b.root / user).write_text(text.split("<<<<<<<")[0] + "The user prefers short answers.\n")
    _git(b, "add", user)
    assert cli("sync", repo=b).returncode == 0
    status = cli("daemon", "status", repo=b)
    assert status.returncode == 0 and "sync       working" in status.stdout, status.stdout
    assert cli("doctor", "--check", "sync", repo=b).returncode == 0
    assert "STOPPED" not in cli("status", repo=b).stdout


def test_the_index_is_brought_up_to_date_after_a_sync_without_waiting_for_a_search(
    tmp_path: Path,
) -> None:
    """A fast-forward runs no post-commit hook: the index stayed stale until the next
    search paid the catch-up (35 s at 60k transcripts)."""
    from autopoiesis.index import SearchIndex
    from tests.daemon.helpers import wait_for

    a, remote = _first_clone(tmp_path)
    b = _clone(remote, tmp_path / "b")
    with SearchIndex(b) as index:
        index.rebuild_full()
    path = _capture(a, "ses_index", "the atlas index arrives by sync", T0 + timedelta(hours=1))
    sync_once(a)
    report = sync_once(b)
    assert report.merge == "fast-forward" and path in report.incoming

    def fresh() -> bool:
        with SearchIndex(b) as index:
            return index.is_fresh()

    wait_for(fresh, timeout=120, what="the background index sync after the pull")


def test_a_remote_that_stops_answering_is_given_up_on_when_it_stalls(
    tmp_path: Path, cli: Cli
) -> None:
    """An HTTP remote that accepts the connection and never answers used to hold a sync
    (and the commit or extraction waiting for it) for the whole 120 s timeout, per try:
    git's low-speed limit now ends a stalled transfer after STALL_SECONDS."""
    import socket
    import threading

    from autopoiesis.git.remote import STALL_SECONDS

    a, _ = _first_clone(tmp_path)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)  # read nothing, answer nothing

    threading.Thread(target=accept, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}/memory.git"
        _git(a, "remote", "set-url", "origin", url)
        config = a.root / "memory-config.yaml"
        config.write_text(config.read_text().replace("auto_push: false", "auto_push: true"))
        (a.root / "knowledge/reference/hang.md").write_text("# Written while the remote hangs\n")
        done = cli("commit", repo=a)  # commits, then the auto_push sync meets the hang
        assert done.returncode == 0, done.stderr
        assert "the commit stands, but it was not pushed" in done.stderr
        assert f"the last {STALL_SECONDS} seconds" in done.stderr, done.stderr
        assert "did not finish within" not in done.stderr
    finally:
        server.close()
        for conn in held:
            conn.close()


def test_three_clones_syncing_at_once_over_http_lose_nothing_and_need_nobody(
    tmp_path: Path, git
) -> None:
    """Three machines, one remote served by git's http-backend; each captures sessions
    from its own channel the same day and all three sync at the same moment, round after
    round: every push that loses the race is retried, nothing conflicts, nothing is lost."""
    import subprocess
    import sys

    from autopoiesis.git.verify import verify
    from autopoiesis.testing.git_http import GitHTTPServer

    a, remote = _first_clone(tmp_path)
    with GitHTTPServer(remote.parent) as server:
        url = server.url(remote.name)
        _git(a, "remote", "set-url", "origin", url)
        clones = [a]
        for name in ("b", "c"):
            subprocess.run(["git", "clone", "-q", url, str(tmp_path / name)], check=True)
            clones.append(_clone_init(tmp_path / name))
        captured: set[str] = set()
        for round_ in range(3):
            for n, repo in enumerate(clones):
                for s in range(2):
                    when = T0 + timedelta(hours=round_, minutes=10 * n + s)
                    path = _capture(repo, f"ses_{n}_{round_}_{s}", f"round {round_}", when)
                    captured.add(path)
                    _journal(repo, ("cli", "slack", "webchat")[n], path, when)
            procs = [
                subprocess.Popen(
                    [sys.executable, "-m", "autopoiesis", "-C", str(r.root), "sync"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for r in clones
            ]
            for proc in procs:
                out, err = proc.communicate(timeout=600)
                assert proc.returncode == 0, out + err + "".join(server.errors)
        assert server.errors == []
        for repo in clones + clones:  # the last ones pull what the others pushed last
            sync_once(repo)
    heads = {_git(r, "rev-parse", "HEAD").strip() for r in clones}
    assert len(heads) == 1 and heads == {_git(remote, "rev-parse", "main").strip()}
    for repo in clones:
        have = {p for p in _git(repo, "ls-files", "raw/conversations").split() if p.endswith(".md")}
        assert have == captured
        journal = kf.parse((repo.root / "knowledge/journal/2026-03-01.md").read_text())
        assert {s.title for s in journal.sections if s.level == 3} == {"cli", "slack", "webchat"}
        assert "<<<<<<<" not in kf.render(journal)
        assert verify(repo).ok
        assert git(repo, "gc", "--quiet", check=False).returncode == 0
        assert git(repo, "maintenance", "run", check=False).returncode == 0


def _clone_init(where: Path) -> MemoryRepo:
    from autopoiesis.memory.initialize import init_memory_repo

    init_memory_repo(where, build_index=False)
    return MemoryRepo(where)


def _journal(repo: MemoryRepo, channel: str, source: str, when: datetime) -> None:
    change = KnowledgeChange(
        "knowledge/journal/2026-03-01.md",
        "append",
        channel,
        f"{channel} work at {when:%H:%M}",
        Provenance(source, when, "journal@1", source.rsplit("/", 1)[-1][5:-3]),
        dated=False,
        section_level=3,
    )
    KnowledgeWriter(repo).apply([change])
