"""The memory's jobs and the config keys that drive them: batch commits whose messages name
what was learned (the commit model's when one is configured), extraction of imported
and recovered sessions with its retry queue, condensation and tags owed after downtime,
explore/* pruning, index health; and a bad schedule refused when the config loads."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autopoiesis.core.config import parse_config
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.daemon.jobs import (
    SESSION_ENDED,
    TRANSCRIPTS_CHANGED,
    Cron,
    Every,
    JobContext,
    OnEvent,
)
from autopoiesis.daemon.memory_jobs import (
    memory_jobs,
    run_commit,
    run_condense,
    run_explore_prune,
    run_extract,
    run_index_health,
    run_tag,
)
from autopoiesis.errors import ConfigError
from autopoiesis.testing.openai_server import OpenAIServer, write_llm_config
from tests.conftest import Cli


def _ctx(
    repo: MemoryRepo, job: str, now: datetime | None = None, last_run: datetime | None = None
) -> JobContext:
    return JobContext(MemoryRepo(repo.root), job, "test", now or datetime.now(UTC), last_run)


def _subjects(repo: MemoryRepo) -> list[str]:
    return subprocess.run(
        ["git", "log", "--format=%s"], cwd=repo.root, capture_output=True, text=True
    ).stdout.splitlines()


def _body(repo: MemoryRepo) -> str:
    return subprocess.run(
        ["git", "log", "-1", "--format=%B"], cwd=repo.root, capture_output=True, text=True
    ).stdout


def _transcript(
    repo: MemoryRepo, sid: str, day: str, lines: list[tuple[str, str]], status: str = "closed"
) -> str:
    """Write a finished transcript through the format's renderer; its repo-relative path."""
    from autopoiesis.core.clock import parse_ts
    from autopoiesis.formats import transcript as tf

    start = parse_ts(f"{day}T09:00:00Z")
    turns = tuple(
        tf.Turn(time=start + timedelta(minutes=i), role=role, items=(tf.Text(text),))
        for i, (role, text) in enumerate(lines)
    )
    meta = tf.TranscriptMeta(
        session_id=sid, started=start, ended=start + timedelta(minutes=len(lines)), status=status
    )
    slug = tf.slug_from_turns(turns, None)
    rel = tf.transcript_relpath(sid, start, slug)
    (repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (repo.root / rel).write_text(
        tf.render(tf.Transcript(meta, tf.title_from_slug(slug, sid), turns))
    )
    return rel


# ── config ──
def test_a_schedule_that_is_no_cron_expression_is_refused_with_what_to_write() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config('lifecycle:\n  condensation_schedule: "every day"\n')
    assert "'lifecycle.condensation_schedule' is 'every day'" in str(err.value)
    assert 'e.g. "0 23 * * *" for every day at 23:00' in str(err.value)
    for bad in ('"61 * * * *"', '"0 0 31 2 *"', '"0 23 * * * *"', "''", "5"):
        with pytest.raises(ConfigError, match="pruning_schedule"):
            parse_config(f"lifecycle:\n  pruning_schedule: {bad}\n")
    with pytest.raises(ConfigError, match="health_schedule"):
        parse_config('daemon:\n  health_schedule: "hourly"\n')
    assert (
        parse_config('lifecycle:\n  pruning_schedule: "@weekly"\n').lifecycle.pruning_schedule
        == "@weekly"
    )
    with pytest.raises(ConfigError, match="session_globs' must be a list of glob patterns"):
        parse_config("daemon:\n  session_globs: ['']\n")


def test_every_schedule_key_becomes_its_jobs_trigger(memory_repo: MemoryRepo) -> None:
    config = memory_repo.root / "memory-config.yaml"
    text = config.read_text()
    jobs = memory_jobs(MemoryRepo(memory_repo.root))
    assert jobs.get("commit").triggers == (Every(30),)
    assert jobs.get("condense").triggers == (Cron("0 23 * * *"),)
    assert jobs.get("prune").triggers == (Cron("0 0 * * 0"),)
    assert jobs.get("index").triggers == (Cron("30 * * * *"),)
    assert jobs.get("extract").triggers == (
        OnEvent(SESSION_ENDED),
        OnEvent(TRANSCRIPTS_CHANGED),
        Cron("55 23 * * *"),
    )
    assert "tag" in jobs and "watch-sessions" in jobs
    assert (
        jobs.get("extract").timeout == 1800
        and jobs.get("extract").retries == 2
        and jobs.get("extract").token_budget == 100000
    )
    config.write_text(
        text.replace("commit_interval_minutes: 30", "commit_interval_minutes: 45")
        .replace("extraction_trigger: on_session_end", "extraction_trigger: hourly")
        .replace('condensation_schedule: "0 23 * * *"', 'condensation_schedule: "30 22 * * *"')
        .replace("auto_tag_daily: true", "auto_tag_daily: false")
        .replace("job_timeout_minutes: 30", "job_timeout_minutes: 5")
    )
    jobs = memory_jobs(MemoryRepo(memory_repo.root))
    assert jobs.get("commit").triggers == (Every(45),)
    assert jobs.get("extract").triggers == (Cron("0 * * * *"),)
    assert jobs.get("condense").triggers == (Cron("30 22 * * *"),)
    assert "tag" not in jobs
    assert jobs.get("prune").timeout == 300
    no_globs = re.sub(  # the template's list of every harness's session files, emptied
        r"  session_globs: .*?\n(?=  session_idle_minutes)",
        "  session_globs: []\n",
        text,
        flags=re.S,
    )
    assert no_globs != text
    config.write_text(
        no_globs.replace(
            "extraction_trigger: on_session_end", "extraction_trigger: manual"
        ).replace("auto_commit: true", "auto_commit: false")
    )
    jobs = memory_jobs(MemoryRepo(memory_repo.root))
    assert jobs.get("extract").triggers == () and jobs.get("commit").triggers == ()
    assert "watch-sessions" not in jobs


# ── commit ──
def test_batch_commits_name_what_was_learned(memory_repo: MemoryRepo) -> None:
    mem = memory_repo.memory_file
    mem.write_text(
        mem.read_text().replace(
            "## Lessons Learned\n",
            "## Lessons Learned\n- 2026-03-02: Never deploy on Fridays after 15:00\n",
        )
    )
    people = memory_repo.root / "knowledge/people/maria.md"
    people.write_text(
        "# Maria\n\n- Maria Lopez owns the capture module and reviews every change to it\n"
    )
    out = run_commit(_ctx(memory_repo, "commit"))
    assert out.changed
    subject = _subjects(memory_repo)[0]
    assert subject == "memory: Never deploy on Fridays after 15:00 (+1 more)"
    body = _body(memory_repo)
    assert (
        "Learned:\n- Never deploy on Fridays after 15:00 (MEMORY.md)\n- Maria Lopez owns the capture module and reviews every… (maria.md)\n"
        in body
    )
    assert out.message == subject
    assert not run_commit(_ctx(memory_repo, "commit")).changed


@pytest.mark.slow
def test_the_commit_model_writes_the_batch_message_when_configured(
    memory_repo: MemoryRepo, openai_server: OpenAIServer
) -> None:
    write_llm_config(memory_repo.root, openai_server.base_url)
    subprocess.run(
        ["git", "commit", "-qm", "maintenance: llm", "--", "memory-config.yaml"],
        cwd=memory_repo.root,
        check=True,
    )
    openai_server.enqueue({"content": "record the Friday deploy freeze"})
    mem = memory_repo.memory_file
    mem.write_text(mem.read_text() + "- 2026-03-02: Never deploy on Fridays after 15:00\n")
    run_commit(_ctx(memory_repo, "commit"))
    assert _subjects(memory_repo)[0] == "memory: record the Friday deploy freeze"
    assert "Learned:\n- Never deploy on Fridays after 15:00 (MEMORY.md)" in _body(memory_repo)
    ledger = [json.loads(l) for l in memory_repo.state_file("llm_ledger").read_text().splitlines()]
    assert [(r["stage"], r["job"]) for r in ledger] == [("commit_message", "commit")]


# ── extract ──
@pytest.mark.slow
def test_extract_takes_imported_and_recovered_sessions_and_names_what_it_learned(
    memory_repo: MemoryRepo,
) -> None:
    """Transcripts that capture never extracted (an import, a recovery) are extracted by the
    job; its commit message says what was learned, not '3 entries from <slug>'."""
    _transcript(
        memory_repo,
        "ses_imp",
        "2026-03-02",
        [("user", "Lesson: always run the migrations in a transaction."), ("agent", "Noted.")],
    )
    _transcript(
        memory_repo,
        "ses_rec",
        "2026-03-02",
        [
            ("user", "We decided to use Postgres for the billing service."),
            ("agent", "Decision recorded."),
        ],
        status="recovered",
    )
    subprocess.run(["git", "add", "raw"], cwd=memory_repo.root, check=True)
    subprocess.run(["git", "commit", "-qm", "conversation: two"], cwd=memory_repo.root, check=True)
    out = run_extract(_ctx(memory_repo, "extract"))
    assert out.changed and out.data["commit"]
    subject = _subjects(memory_repo)[0]
    assert subject.startswith("memory: ") and "extract" not in subject
    assert (
        "always run the migrations in a transaction" in subject.lower()
        or "postgres" in subject.lower()
    )
    body = _body(memory_repo)
    assert "Learned:\n" in body and "Session: raw/conversations/2026/03/02/" in body
    assert not run_extract(_ctx(memory_repo, "extract")).changed  # exactly once


def test_extract_failures_wake_the_job_at_the_retry_queues_next_time(
    memory_repo: MemoryRepo, openai_server: OpenAIServer
) -> None:
    write_llm_config(memory_repo.root, openai_server.base_url, max_retries=0)
    openai_server.default_chat = lambda body: {"status": 500, "message": "down"}
    _transcript(
        memory_repo,
        "ses_fail",
        "2026-03-02",
        [("user", "Lesson: keep backups off-site."), ("agent", "Yes.")],
    )
    before = datetime.now(UTC)
    out = run_extract(_ctx(memory_repo, "extract"))
    assert out.data["failed"] >= 1
    assert out.wake_at is not None and before + timedelta(minutes=4) < out.wake_at <= datetime.now(
        UTC
    ) + timedelta(minutes=5)


# ── condense, tags, explore, index ──
@pytest.mark.slow
def test_condensation_after_downtime_covers_each_missed_day_and_the_week(
    memory_repo: MemoryRepo,
) -> None:
    for day in ("2026-03-06", "2026-03-07", "2026-03-08"):  # Friday .. Sunday
        _transcript(
            memory_repo,
            f"ses_{day[-2:]}",
            day,
            [("user", f"Lesson: on {day} we learned to pin versions."), ("agent", "Pinned.")],
        )
    subprocess.run(["git", "add", "raw"], cwd=memory_repo.root, check=True)
    subprocess.run(
        ["git", "commit", "-qm", "conversation: three days"], cwd=memory_repo.root, check=True
    )
    # last run Thursday 23:00, the daemon was down until Monday 09:00: one run
    out = run_condense(
        _ctx(
            memory_repo,
            "condense",
            datetime(2026, 3, 9, 9, 0, tzinfo=UTC),
            datetime(2026, 3, 5, 23, 0, tzinfo=UTC),
        )
    )
    assert out.data["days"] == [
        "2026-03-05",
        "2026-03-06",
        "2026-03-07",
        "2026-03-08",
        "2026-03-09",
    ]
    for day in ("2026-03-06", "2026-03-07", "2026-03-08"):
        assert (memory_repo.root / f"knowledge/journal/{day}.md").exists()
    subjects = _subjects(memory_repo)
    assert "memory: weekly rollup 2026-W10 into MEMORY.md" in subjects
    assert sum(s.startswith("memory: daily journal") for s in subjects) == 3


@pytest.mark.slow
def test_tags_owed_after_downtime_and_explore_branches_pruned(memory_repo: MemoryRepo, git) -> None:
    today = datetime.now(UTC)
    out = run_tag(_ctx(memory_repo, "tag", today, today - timedelta(days=3)))
    init_day = today.date().isoformat()
    assert f"tagged memory/daily/{init_day}" in out.message
    assert git(memory_repo.root, "tag", "-l", "memory/daily/*").stdout.split() == [
        f"memory/daily/{init_day}"
    ]
    assert not run_tag(
        _ctx(memory_repo, "tag", today, today - timedelta(days=3))
    ).changed  # never moved, never twice
    git(memory_repo.root, "branch", "explore/old-idea")
    assert not run_explore_prune(_ctx(memory_repo, "explore-prune", today)).changed
    out = run_explore_prune(_ctx(memory_repo, "explore-prune", today + timedelta(days=8)))
    assert out.data["pruned"] == ["explore/old-idea"]


def test_index_health_rebuilds_a_missing_or_damaged_index_and_catches_up_a_stale_one(
    memory_repo: MemoryRepo,
) -> None:
    out = run_index_health(_ctx(memory_repo, "index"))
    assert out.changed and out.message.startswith("memory.db missing: rebuilt")
    assert run_index_health(_ctx(memory_repo, "index")).message == "memory.db is intact and fresh"
    (memory_repo.root / "knowledge/reference/new.md").write_text(
        "# New\n\n- a fact the index has not seen\n"
    )
    assert run_index_health(_ctx(memory_repo, "index")).message.startswith("caught up: 1 indexed")
    db = memory_repo.index_path
    data = bytearray(db.read_bytes())
    for i in range(4096, min(len(data), 4096 * 6)):
        data[i] = 0xA5
    db.write_bytes(bytes(data))
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    out = run_index_health(_ctx(memory_repo, "index"))
    assert out.changed and "rebuilt" in out.message
    assert run_index_health(_ctx(memory_repo, "index")).message == "memory.db is intact and fresh"


@pytest.mark.slow
def test_run_due_runs_the_owed_commit_with_the_cli(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli
) -> None:
    from autopoiesis.daemon.scheduler import Scheduler, StateStore

    repo = MemoryRepo(memory_repo.root)
    store = StateStore(repo.state_file("daemon_state"))
    Scheduler(memory_jobs(repo), store)
    store.jobs["commit"].first_seen -= timedelta(minutes=31)
    store.save()
    (repo.root / "knowledge/reference/db.md").write_text("# DB\n\n- Production runs Postgres 16\n")
    out = cli("run-due", repo=repo, env={"HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "commit           ok       memory: Production runs Postgres 16"
    ]
    assert _subjects(repo)[0] == "memory: Production runs Postgres 16"


def test_a_daemon_asleep_past_midnight_on_its_first_day_still_tags_that_day(
    memory_repo: MemoryRepo, git
) -> None:
    """The daemon first saw the tag job on day D at 10:00; the machine slept until D+2. The
    first run of a job used to owe only yesterday and today, so D was never tagged."""
    from autopoiesis.daemon.jobs import JobRegistry
    from autopoiesis.daemon.service import run_due

    day = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    stamp = {
        "GIT_AUTHOR_DATE": "2026-03-02T12:00:00Z",
        "GIT_COMMITTER_DATE": "2026-03-02T12:00:00Z",
    }
    git(memory_repo.root, "commit", "-q", "--allow-empty", "-m", "memory: work on D", env=stamp)
    clock = {"now": day}

    def tag_only(repo: MemoryRepo) -> JobRegistry:
        return JobRegistry([memory_jobs(repo).get("tag")])

    assert run_due(memory_repo, tag_only, clock=lambda: clock["now"]) == []  # 23:55 not yet
    clock["now"] = day + timedelta(days=2, hours=-2)  # D+2 08:00: the machine woke up
    runs = run_due(memory_repo, tag_only, clock=lambda: clock["now"])
    assert [(name, result) for name, result, _ in runs] == [("tag", "ok")], runs
    assert "memory/daily/2026-03-02" in git(memory_repo.root, "tag", "-l").stdout.split()
