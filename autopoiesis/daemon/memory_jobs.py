"""The memory's daemon jobs, and which config key drives each (README, "Configuration").

`memory_jobs(repo)` builds the registry the daemon and `run-due` run, from the repo's
memory-config.yaml (SIGHUP builds it again): this module is the plugin of the memory's
own jobs (autopoiesis.plugins, the hook `register_jobs`), and any other plugin may add
jobs the same way. Each job is one function here over the library, and one registration
in `register_jobs`; adding a job is one more of each.

    job             triggers                                   config keys it reads
    watch-sessions  every minute                               daemon.session_globs,
    daemon.session_idle_minutes
    extract         on_session_end: a session ended or a       lifecycle.extraction_trigger
                    transcript was written, and 23:55;
                    hourly: every hour; manual: none
    commit          every commit_interval_minutes              lifecycle.commit_interval_minutes,
    git.auto_commit,
                    (none when git.auto_commit is false)       llm.models.commit_message
    condense        condensation_schedule                      lifecycle.condensation_schedule
    prune           pruning_schedule                           lifecycle.pruning_schedule (+
    journal_retention_days,
                                                               memory_line_cap)
    tag             23:55 daily (only with auto_tag_daily)     git.auto_tag_daily
    explore-prune   03:30 daily                                daemon.explore_max_age_days
    index           health_schedule                            daemon.health_schedule
    sync            after commit or extract changed something, git.auto_push (the job exists only
    then)
                    and every commit_interval_minutes (pull)

Every job: daemon.job_timeout_minutes, daemon.job_retries, daemon.job_token_budget.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta

from autopoiesis import plugins
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.daemon.jobs import (
    SESSION_ENDED,
    TRANSCRIPTS_CHANGED,
    After,
    Cron,
    Every,
    JobContext,
    JobFunction,
    JobOutcome,
    JobRegistry,
    JobSpec,
    OnEvent,
    Trigger,
)
from autopoiesis.memory import Memory

# docs/design.md#extraction-bookkeeping's 23:55 safety net: whatever is still owed that day
SAFETY_NET = "55 23 * * *"
MAX_CATCH_UP_DAYS = 14  # a catch-up condenses or tags at most this many missed days


def _days(ctx: JobContext, *, first_back: int = 1) -> list[date]:
    """The days a run owes: from its last run's day (the tail after that run) to today;
    a first run covers every day since the scheduler first saw the job (a daemon that
    slept past midnight on its first day owes that day), and FIRST_BACK days before today
    at least."""
    today = ctx.now.date()
    if ctx.last_run:
        start = ctx.last_run.date()
    else:
        start = today - timedelta(days=first_back)
        if ctx.first_seen:
            start = min(start, ctx.first_seen.date())
    start = max(start, today - timedelta(days=MAX_CATCH_UP_DAYS - 1))
    return [start + timedelta(days=i) for i in range((today - start).days + 1)]


# ── the jobs ──
def run_watch_sessions(ctx: JobContext) -> JobOutcome:
    from autopoiesis.daemon.sessions import SessionWatcher

    report = SessionWatcher(ctx.repo).scan()
    events = tuple(
        f"{SESSION_ENDED}:{t}" for _, transcripts in report.imported for t in transcripts
    )
    wake = ctx.now if report.more else report.next_check
    return JobOutcome(
        bool(report.imported),
        report.summary(),
        events,
        wake,
        {
            "imported": len(report.imported),
            "waiting": len(report.waiting),
            "refused": len(report.refused),
        },
    )


def run_extract(ctx: JobContext) -> JobOutcome:
    """Every transcript not yet extracted (imported and recovered ones too) and the due
    retries (5/15/30/60/120 min, then the offline flavour); commits what was learned."""
    from autopoiesis.core.clock import parse_ts

    memory = Memory(ctx.repo)
    with ctx.llm() as client:
        report, sha, _, next_retry_at = memory.extract(pending=True, llm=client)
    wake: datetime | None = None
    if next_retry_at and memory.config.lifecycle.extraction_trigger != "manual":
        wake = parse_ts(next_retry_at, "next_retry_at")  # the retry queue's next due time
    message = report.summary() + (f"; committed {sha[:10]}" if sha else "")
    return JobOutcome(
        bool(sha),
        message,
        (),
        wake,
        {"added": report.added, "failed": len(report.failed), "commit": sha},
    )


def run_commit(ctx: JobContext) -> JobOutcome:
    """Finished transcripts that wait for a commit, then the knowledge changes, with a
    message naming what was learned (the commit model's, when one is configured)."""
    with ctx.llm() as client:
        conversations, result = Memory(ctx.repo).commit(llm=client)
    made = [r for r in (conversations, result) if r is not None and r.sha]
    lines = [r.message.splitlines()[0] for r in made]
    return JobOutcome(
        bool(lines),
        "; ".join(lines) or "nothing to commit",
        (),
        None,
        {"commits": [r.sha for r in made]},
    )


def run_condense(ctx: JobContext) -> JobOutcome:
    """The daily journal of each day owed (a catch-up covers the missed days), and the
    weekly rollup of each week whose Sunday is among them (or is today)."""
    days = _days(ctx)
    lines: list[str] = []
    commits: list[str] = []
    with ctx.llm() as client, Memory(ctx.repo).condenser(client) as c:
        for day in days:
            result = c.daily_summary(day)
            lines.append(result.summary().splitlines()[0])
            if result.commit:
                commits.append(result.commit)
        for day in days:
            if day.isoweekday() == 7:
                result = c.weekly_rollup(day)
                lines.append(result.summary().splitlines()[0])
                if result.commit:
                    commits.append(result.commit)
    return JobOutcome(
        bool(commits),
        "; ".join(lines),
        (),
        None,
        {"days": [d.isoformat() for d in days], "commits": commits},
    )


def run_prune(ctx: JobContext) -> JobOutcome:
    with ctx.llm() as client:
        result = Memory(ctx.repo).prune(llm=client)
    return JobOutcome(
        bool(result.commit),
        result.summary().replace("\n", "; "),
        (),
        None,
        {"commit": result.commit},
    )


def run_tag(ctx: JobContext) -> JobOutcome:
    """memory/daily/DAY for each day owed that had changes, memory/weekly/YYYY-Www on
    its Sundays (existing tags are never moved)."""
    from autopoiesis.git.repo import MemoryGit

    git = MemoryGit(ctx.repo)
    made: list[str] = []
    for day in _days(ctx):
        created, line = git.tag_daily(day)
        if created:
            made.append(line)
        if day.isoweekday() == 7:
            created, line = git.tag_weekly(day)
            if created:
                made.append(line)
    return JobOutcome(
        bool(made),
        "; ".join(made) or "no new tags (no changes, or tagged already)",
        (),
        None,
        {"tags": made},
    )


def run_explore_prune(ctx: JobContext) -> JobOutcome:
    from autopoiesis.git.repo import MemoryGit

    max_age = Memory(ctx.repo).config.daemon.explore_max_age_days
    pruned = MemoryGit(ctx.repo).prune_explore(max_age, now=ctx.now)
    return JobOutcome(
        bool(pruned),
        f"deleted {', '.join(pruned)}" if pruned else "no explore/* branch is old enough",
        (),
        None,
        {"pruned": pruned},
    )


def run_sync(ctx: JobContext) -> JobOutcome:
    """Pull and push (memory/sync.py). A conflict needs a person: the merge is undone
    (abort_on_conflict, so capture's commits go on) and the run fails, saying so, as an
    unreachable remote does (the scheduler retries both with backoff): a clone that
    stopped syncing never looks idle. The sync's health record keeps since when, for
    `daemon status` and `doctor`."""
    report = Memory(ctx.repo).sync(abort_on_conflict=True)
    changed = bool(report.incoming or report.pushed or report.committed)
    return JobOutcome(
        changed,
        "; ".join(line.strip() for line in report.lines()[1:]) or "up to date",
        (),
        None,
        report.to_dict(),
    )


def run_index_health(ctx: JobContext) -> JobOutcome:
    """memory.db: rebuilt when missing, damaged (quick_check) or built for another
    embedder; caught up when it lags the files; else left alone."""
    from autopoiesis.index import SearchIndex

    repo = ctx.repo
    missing = not repo.index_path.exists()
    with SearchIndex(repo) as index:
        damage = None if missing else index.integrity()
        if missing or damage or index.needs_rebuild():
            why = (
                "missing"
                if missing
                else (f"damaged ({damage})" if damage else "built for another embedder or chunker")
            )
            report = index.rebuild_full()
            return JobOutcome(
                True,
                f"memory.db {why}: rebuilt, {report.indexed} files in {report.seconds:.1f} s",
                (),
                None,
                {"rebuilt": True, "indexed": report.indexed},
            )
        if not index.is_fresh():
            report = index.catch_up(timeout=ctx_timeout(ctx))
            return JobOutcome(
                True,
                f"caught up: {report.indexed} indexed, {report.removed} removed",
                (),
                None,
                {"indexed": report.indexed, "removed": report.removed},
            )
    return JobOutcome(False, "memory.db is intact and fresh")


def ctx_timeout(ctx: JobContext) -> float:
    return max(60.0, Memory(ctx.repo).config.daemon.job_timeout_minutes * 60.0 - 30.0)


# ── the registry ──
def extraction_triggers(trigger: str) -> tuple[Trigger, ...]:
    """lifecycle.extraction_trigger as the extract job's triggers."""
    if trigger == "hourly":
        return (Cron("0 * * * *"),)
    if trigger == "manual":
        return ()
    return (OnEvent(SESSION_ENDED), OnEvent(TRANSCRIPTS_CHANGED), Cron(SAFETY_NET))


def memory_jobs(repo: MemoryRepo) -> JobRegistry:
    """The daemon's jobs for REPO, from its memory-config.yaml: the memory's own, then
    those of the other plugins."""
    return JobRegistry(plugins.jobs(repo))


@plugins.hookimpl
def register_jobs(register: Callable[[JobSpec], None], repo: MemoryRepo) -> None:
    """The memory's own jobs for REPO."""
    cfg = Memory(repo).config
    d = cfg.daemon
    knowledge = frozenset({"knowledge"})  # the jobs that write knowledge/ or commit it take turns

    def job(
        name: str,
        run: JobFunction,
        triggers: tuple[Trigger, ...],
        description: str,
        resources: frozenset[str] = frozenset(),
        quiet: bool = False,
    ) -> None:
        register(
            JobSpec(
                name,
                run,
                triggers,
                timeout=d.job_timeout_minutes * 60.0,
                retries=d.job_retries,
                resources=resources,
                token_budget=d.job_token_budget,
                description=description,
                quiet=quiet,
            )
        )

    if d.session_globs:
        job(
            "watch-sessions",
            run_watch_sessions,
            (Every(1),),
            "import finished agent sessions (daemon.session_globs)",
            frozenset({"sessions"}),
            quiet=True,
        )
    job(
        "extract",
        run_extract,
        extraction_triggers(cfg.lifecycle.extraction_trigger),
        "extract knowledge from new transcripts, retry failed extractions",
        knowledge,
    )
    job(
        "commit",
        run_commit,
        (Every(cfg.lifecycle.commit_interval_minutes),) if cfg.git.auto_commit else (),
        "batch-commit knowledge changes",
        knowledge,
    )
    job(
        "condense",
        run_condense,
        (Cron(cfg.lifecycle.condensation_schedule),),
        "daily journal and weekly rollup",
        knowledge,
    )
    job(
        "prune",
        run_prune,
        (Cron(cfg.lifecycle.pruning_schedule),),
        "MEMORY.md cap, old journals to archive/, stale knowledge",
        knowledge,
    )
    if cfg.git.auto_tag_daily:
        job("tag", run_tag, (Cron(SAFETY_NET),), "daily and weekly snapshot tags")
    job("explore-prune", run_explore_prune, (Cron("30 3 * * *"),), "delete old explore/* branches")
    job(
        "index",
        run_index_health,
        (Cron(d.health_schedule),),
        "search index integrity and freshness",
        frozenset({"index"}),
    )
    if cfg.git.auto_push:
        job(
            "sync",
            run_sync,
            (
                After("commit", only_if_changed=True),
                After("extract", only_if_changed=True),
                Every(cfg.lifecycle.commit_interval_minutes),
            ),
            "pull from and push to the remote (git.auto_push)",
            knowledge,
        )
    # jobs of other memory modules register here too, one line each
