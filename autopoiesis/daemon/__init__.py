"""The daemon: one process per memory repo that keeps it (docs/design.md#daemon-design).

    jobs.py       what a job is (JobSpec, triggers, JobContext, JobOutcome) and the registry
    scheduler.py  which job is due and why: schedules, catch-up, events, after-triggers, retries
    runner.py     a run in a killable child process
    service.py    the daemon's loop: lock, signals, file events, status, log; run_due()
    status.py     the instance lock, the status file, the JSON-lines log
    sessions.py   the session watcher (agent harness logs -> transcripts)
    install.py    a systemd user unit or a launchd agent
    memory_jobs.py  the memory's own jobs (extract, commit, condense, ...): one function
                  and one registration each

The daemon is an entry point: it calls the composition (autopoiesis.memory) and is given
the warm call server (autopoiesis.fastpath) by `autopoiesis daemon run`.
"""
