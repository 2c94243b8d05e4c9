"""The session watcher on idle session files in a temporary HOME: a file is imported once
it has been idle long enough and no process has it open; a restart never imports it
again and never misses one; a resumed session is taken again; a file no importer reads
is not retried until it changes; the daemon job raises session_ended for extraction."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.daemon.sessions import SessionWatcher, matching_files, open_files
from tests.conftest import Cli


def _session(sid: str, started: str, text: str) -> str:
    return (
        json.dumps(
            {
                "session_id": sid,
                "started": started,
                "ended": started,
                "model": "m",
                "channel": "cli",
                "messages": [
                    {"role": "user", "content": text, "timestamp": started},
                    {"role": "agent", "content": f"Noted: {text}", "timestamp": started},
                ],
            }
        )
        + "\n"
    )


def _age(path: Path, minutes: float) -> None:
    t = time.time() - minutes * 60
    os.utime(path, (t, t))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    (h / ".claude" / "projects" / "proj").mkdir(parents=True)
    (h / ".codex" / "sessions" / "2026" / "03" / "02").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    return h


def _log(repo: MemoryRepo) -> str:
    return subprocess.run(
        ["git", "log", "--format=%s"], cwd=repo.root, capture_output=True, text=True
    ).stdout


@pytest.mark.slow
def test_idle_sessions_are_imported_once_and_a_restart_imports_nothing_again(
    memory_repo: MemoryRepo, home: Path
) -> None:
    a = home / ".claude" / "projects" / "proj" / "a.jsonl"
    b = home / ".codex" / "sessions" / "2026" / "03" / "02" / "rollout-b.jsonl"
    c = home / ".claude" / "projects" / "proj" / "c.jsonl"
    a.write_text(_session("ses_wa", "2026-03-02T10:00:00Z", "We deploy with blue-green releases."))
    b.write_text(_session("ses_wb", "2026-03-02T11:00:00Z", "The staging database is Postgres 16."))
    c.write_text(_session("ses_wc", "2026-03-02T12:00:00Z", "Still talking."))
    _age(a, 30)
    _age(b, 11)
    # c was written just now: the session is still going
    assert [p.name for p in matching_files(memory_repo.config.daemon.session_globs)] == [
        "a.jsonl",
        "c.jsonl",
        "rollout-b.jsonl",
    ]
    report = SessionWatcher(memory_repo).scan()
    assert sorted(Path(src).name for src, _ in report.imported) == ["a.jsonl", "rollout-b.jsonl"]
    assert report.waiting == [str(c.resolve())]
    assert report.next_check is not None
    log = _log(memory_repo)
    assert "conversation: ses_wa-we-deploy-with-blue-green-releases" in log
    assert "conversation: ses_wb-the-staging-database-is-postgres-16" in log
    # a restart: a new watcher reads the record, imports nothing again, reads no file
    again = SessionWatcher(memory_repo).scan()
    assert again.imported == [] and again.unchanged == 2
    # touched but unchanged: hashed, not imported
    _age(a, 20)
    assert SessionWatcher(memory_repo).scan().imported == []
    # c ends later: taken then, never missed
    _age(c, 15)
    late = SessionWatcher(memory_repo).scan()
    assert [Path(s).name for s, _ in late.imported] == ["c.jsonl"]
    record = json.loads(memory_repo.state_file("session_watch").read_text())["files"]
    assert set(record) == {str(a.resolve()), str(b.resolve()), str(c.resolve())}
    assert all(r["status"] == "imported" and len(r["sha256"]) == 64 for r in record.values())
    assert len(_log(memory_repo).splitlines()) == 4  # init + three conversations


def test_a_file_some_process_has_open_is_not_imported(memory_repo: MemoryRepo, home: Path) -> None:
    a = home / ".claude" / "projects" / "proj" / "open.jsonl"
    a.write_text(_session("ses_open", "2026-03-02T10:00:00Z", "The harness still holds this file."))
    _age(a, 60)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys; f = open(sys.argv[1]); print('open', flush=True); signal.pause()",
            str(a),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        assert open_files({str(a.resolve())}) == {str(a.resolve())}
        report = SessionWatcher(memory_repo).scan()
        assert report.imported == [] and report.waiting == [str(a.resolve())]
    finally:
        holder.kill()
        holder.wait()
    assert [Path(s).name for s, _ in SessionWatcher(memory_repo).scan().imported] == ["open.jsonl"]


def test_unreadable_files_are_not_retried_until_they_change(
    memory_repo: MemoryRepo, home: Path
) -> None:
    bad = home / ".claude" / "projects" / "proj" / "bad.jsonl"
    bad.write_bytes(b"\x00\x01 not a session")
    _age(bad, 60)
    first = SessionWatcher(memory_repo).scan()
    assert [Path(s).name for s, _ in first.refused] == ["bad.jsonl"] and "binary" in first.refused[
        0
    ][1]
    assert SessionWatcher(memory_repo).scan().refused == []  # not read again
    bad.write_text(_session("ses_fixed", "2026-03-02T10:00:00Z", "Now it is a session."))
    _age(bad, 60)
    assert [Path(s).name for s, _ in SessionWatcher(memory_repo).scan().imported] == ["bad.jsonl"]


@pytest.mark.slow
def test_a_resumed_session_is_taken_again_when_it_ends_again(
    memory_repo: MemoryRepo, home: Path
) -> None:
    """What was imported is hashed; new content after a restart is new work (the importers
    decide how a continuation is filed)."""
    a = home / ".claude" / "projects" / "proj" / "a.jsonl"
    a.write_text(_session("ses_r1", "2026-03-02T10:00:00Z", "First part of the work."))
    _age(a, 30)
    assert len(SessionWatcher(memory_repo).scan().imported) == 1
    with a.open("a") as fh:
        fh.write(
            _session("ses_r2", "2026-03-02T14:00:00Z", "The session went on in the afternoon.")
        )
    _age(a, 5)
    assert SessionWatcher(memory_repo).scan().waiting == [
        str(a.resolve())
    ]  # idle only 5 of 10 minutes
    _age(a, 12)
    report = SessionWatcher(memory_repo).scan()
    assert len(report.imported) == 1
    assert any("ses_r2" in t for t in report.imported[0][1])


@pytest.mark.slow
def test_the_watch_sessions_job_raises_session_ended_and_extraction_follows(
    memory_repo: MemoryRepo, home: Path, cli: Cli
) -> None:
    a = home / ".claude" / "projects" / "proj" / "a.jsonl"
    a.write_text(
        _session(
            "ses_job", "2026-03-02T10:00:00Z", "We decided to always keep the raw transcripts."
        )
    )
    _age(a, 30)
    out = cli(
        "run-due", "--job", "watch-sessions", "--json", repo=memory_repo, env={"HOME": str(home)}
    )
    assert out.returncode == 0, out.stderr
    runs = json.loads(out.stdout)
    assert [r["job"] for r in runs] == ["watch-sessions", "extract"]  # the event started extraction
    assert runs[0]["result"] == "ok" and runs[1]["result"] == "ok"
    subjects = _log(memory_repo).splitlines()
    assert subjects[0].startswith("memory: ") and "keep the raw transcripts" in subjects[0].lower()
    assert subjects[1] == "conversation: ses_job-we-decided-to-always-keep-the-raw-transcripts"
    once = cli("watch-sessions", "--once", repo=memory_repo, env={"HOME": str(home)})
    assert once.returncode == 0 and "0 imported" in once.stdout and "1 unchanged" in once.stdout


def test_idle_time_is_read_from_the_watchers_clock(memory_repo: MemoryRepo, home: Path) -> None:
    a = home / ".claude" / "projects" / "proj" / "a.jsonl"
    a.write_text(_session("ses_clock", "2026-03-02T10:00:00Z", "Clock test."))
    now = datetime.now(UTC)
    assert SessionWatcher(memory_repo, clock=lambda: now).scan().imported == []
    later = now + timedelta(minutes=11)
    assert len(SessionWatcher(memory_repo, clock=lambda: later).scan().imported) == 1


def test_one_file_that_breaks_the_import_does_not_stop_the_others(
    memory_repo: MemoryRepo, home: Path
) -> None:
    from autopoiesis.capture.importers import import_files

    good = home / ".claude" / "projects" / "proj" / "good.jsonl"
    evil = home / ".claude" / "projects" / "proj" / "evil.jsonl"
    good.write_text(_session("ses_good", "2026-03-02T10:00:00Z", "A good session."))
    evil.write_text(
        _session("ses_evil", "2026-03-02T10:00:00Z", "A session the importer chokes on.")
    )
    _age(good, 30)
    _age(evil, 30)

    def importer(repo, paths):
        if any(Path(p).name == "evil.jsonl" for p in paths):
            raise MemoryError("the importer ran out of memory")
        return import_files(repo, paths)

    report = SessionWatcher(memory_repo, importer=importer).scan()
    assert [Path(s).name for s, _ in report.imported] == ["good.jsonl"]
    assert report.refused == [(str(evil.resolve()), "MemoryError: the importer ran out of memory")]
    assert (
        SessionWatcher(memory_repo, importer=importer).scan().refused == []
    )  # not retried until it changes


@pytest.mark.slow
def test_a_forgotten_session_is_not_imported_again_from_the_harness_log(
    memory_repo: MemoryRepo, home: Path
) -> None:
    """`forget --transcript` clears the caches under .autopoiesis/ but keeps the watcher's
    record: the session's file in ~/.claude is still there, and must not come back."""
    from autopoiesis.memory.forget import forget

    a = home / ".claude" / "projects" / "proj" / "private.jsonl"
    a.write_text(_session("ses_private", "2026-03-02T10:00:00Z", "Something private that must go."))
    _age(a, 30)
    report = SessionWatcher(memory_repo).scan()
    transcript = report.imported[0][1][0]
    forget(MemoryRepo(memory_repo.root), transcript=transcript, reason="private")
    assert not (memory_repo.root / transcript).exists()
    again = SessionWatcher(MemoryRepo(memory_repo.root)).scan()
    assert again.imported == [] and not (memory_repo.root / transcript).exists()


def test_a_session_whose_import_could_not_be_written_is_tried_again(
    memory_repo: MemoryRepo, home: Path
) -> None:
    """A write that failed (a full disk; here a file where the dated folder goes) may
    pass: the watcher records it as failed and takes the session again at the next scan."""
    a = home / ".claude" / "projects" / "proj" / "a.jsonl"
    a.write_text(_session("ses_full", "2026-03-02T10:00:00Z", "We deploy on Fridays."))
    _age(a, 30)
    blocker = memory_repo.root / "raw/conversations/2026"
    blocker.write_text("in the way\n")
    first = SessionWatcher(memory_repo).scan()
    assert first.imported == [] and len(first.refused) == 1
    record = json.loads(memory_repo.state_file("session_watch").read_text())["files"]
    assert record[str(a.resolve())]["status"] == "failed"
    blocker.unlink()
    again = SessionWatcher(memory_repo).scan()
    assert [Path(s).name for s, _ in again.imported] == ["a.jsonl"]


def test_symlink_loops_under_a_recursive_glob_are_walked_once(tmp_path: Path) -> None:
    """Two links back to their parent under a `**` glob made glob's walk take 2^40 paths:
    the watcher's scan never ended. Each folder is entered once; a folder linked from
    elsewhere is still watched; the rest matches as glob does."""
    root = tmp_path / "sessions"
    (root / "2026" / "03").mkdir(parents=True)
    (root / "2026" / "03" / "a.jsonl").write_text("{}\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "h.jsonl").write_text("{}\n")
    (root / "top.jsonl").write_text("{}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.jsonl").write_text("{}\n")
    pattern = f"{glob.escape(str(root))}/**/*.jsonl"
    as_glob = sorted(os.path.realpath(p) for p in glob.glob(pattern, recursive=True))
    assert [str(p) for p in matching_files([pattern])] == as_glob
    (root / "linked").symlink_to(elsewhere)
    for name in ("l1", "l2", "l3"):
        (root / "2026" / name).symlink_to("..")
    # in a process of its own: without the once-per-folder walk it would not return
    # (the timeout only guards the test run from that hang)
    scan = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from autopoiesis.daemon.sessions import "
            "matching_files; print(*sorted(p.name for p in matching_files(sys.argv[1:])))",
            pattern,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert scan.stdout.split() == ["a.jsonl", "b.jsonl", "top.jsonl"], scan.stderr


_SCAN_THAT_DIES_ON_BIG_FILES = """
import os, signal, sys
from pathlib import Path
from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.daemon.sessions import SessionWatcher

def importer(repo, paths):
    if any(Path(p).name.startswith("a-huge") for p in paths):
        os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does to a 2 GB import
    return import_files(repo, paths)

print(SessionWatcher(MemoryRepo(sys.argv[1]), importer=importer).scan().summary())
"""


def test_a_file_whose_import_kills_the_process_stops_being_tried_and_the_others_go_on(
    memory_repo: MemoryRepo, home: Path
) -> None:
    """A session file whose import dies with its process (a log of gigabytes read whole
    and the OOM killer, the job's timeout) came first in every scan and killed it: no
    session after it was ever imported. It is tried MAX_CUT_SHORT_IMPORTS times, then
    refused until it changes."""
    proj = home / ".claude" / "projects" / "proj"
    huge, good = proj / "a-huge.jsonl", proj / "b-good.jsonl"
    huge.write_text(_session("ses_huge", "2026-03-02T10:00:00Z", "A log that kills its reader."))
    good.write_text(_session("ses_good", "2026-03-02T11:00:00Z", "We deploy on Tuesdays."))
    _age(huge, 30)
    _age(good, 30)

    def scan() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", _SCAN_THAT_DIES_ON_BIG_FILES, str(memory_repo.root)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )

    for _ in range(2):  # MAX_CUT_SHORT_IMPORTS
        assert scan().returncode == -9
    done = scan()
    assert done.returncode == 0, done.stderr
    assert "1 imported" in done.stdout and "1 refused" in done.stdout
    record = SessionWatcher(memory_repo).record.files
    assert record[str(good.resolve())]["status"] == "imported"
    assert record[str(huge.resolve())]["status"] == "refused"
    assert "cut short 2 times" in record[str(huge.resolve())]["error"]
    # refused until it changes: the next scan does not touch it
    assert "0 imported" in scan().stdout
    huge.write_text(_session("ses_huge", "2026-03-02T10:00:00Z", "Now it is small."))
    _age(huge, 30)
    assert scan().returncode == -9  # changed: taken again
