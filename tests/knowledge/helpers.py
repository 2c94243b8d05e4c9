"""Helpers shared by the knowledge tests (no tests here): sessions in the neutral import format, LLM config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.testing.openai_server import write_llm_config


def session(sid: str, started: str, *messages: tuple[str, str], **meta: Any) -> dict[str, Any]:
    """A neutral-format session; messages are (role, content), one minute apart."""
    from datetime import datetime, timedelta

    t0 = datetime.fromisoformat(started.replace("Z", "+00:00"))
    msgs = [
        {
            "role": r,
            "content": c,
            "timestamp": (t0 + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for i, (r, c) in enumerate(messages)
    ]
    return {"session_id": sid, "started": started, "messages": msgs, **meta}


def import_sessions(repo: MemoryRepo, tmp: Path, sessions: list[dict[str, Any]]) -> list[str]:
    from autopoiesis.capture.importers import import_files

    f = tmp / f"sessions-{sessions[0]['session_id']}.json"
    f.write_text(json.dumps(sessions), encoding="utf-8")
    report = import_files(repo, [f], "neutral")
    assert not report.refused, report.refused
    return report.imported


def use_llm(repo: MemoryRepo, base_url: str, **extra: Any) -> MemoryRepo:
    """The repo configured for the OpenAI provider at BASE_URL (fast failures for tests)."""
    write_llm_config(repo.root, base_url, **{"max_retries": 0, "timeout_seconds": 5, **extra})
    return MemoryRepo(repo.root)  # config is cached per instance


DEMO = [
    session(
        "ses_a",
        "2026-02-16T18:45:00Z",
        (
            "user",
            "Let's decide how memory is stored. Read knowledge/projects/autopoiesis/context.md first.",
        ),
        ("agent", "Two options: SQLite or Markdown files in git."),
        (
            "user",
            "We decided: files are the source of truth, SQLite is only a cache. Lesson learned: always keep the raw transcripts.",
        ),
    ),
    session(
        "ses_b",
        "2026-02-16T21:10:00Z",
        (
            "user",
            "Maria Lopez owns the capture module. Procedure for releases: run the tests, tag the version, then push the tag.",
        ),
        ("agent", "Noted. FYI the staging server runs on port 8443."),
    ),
]


class Waits:
    """Which of a test's writer threads found a lock taken and waits for it: the moments a
    race between two writers turns on, observed as they happen (no sleeps). Each thread
    takes its locks through its own descriptors, so two threads contend for a lock exactly
    as two processes do (flock).

    A thread that would wait for a lock it holds itself (flock does not know it is the
    same thread, and it would wait for ever) fails instead, naming the lock; and a thread
    that ends without waiting ends `until_waiting` too: no test of a race can hang."""

    def __init__(self, monkeypatch: Any):
        import threading

        from autopoiesis.core.paths import FileLock

        self.events: dict[str, threading.Event] = {}
        self.lock_names: dict[str, str | None] = {}
        self.held: dict[tuple[int, Any], int] = {}  # (thread, lock file) -> takes
        acquire, release = FileLock.acquire, FileLock.release

        def waiting_acquire(lock: FileLock, timeout: float | None = None, poll: float = 0.005):
            me = threading.get_ident()
            if acquire(lock, 0):
                self.held[(me, lock.path)] = self.held.get((me, lock.path), 0) + 1
                return True
            if (me, lock.path) in self.held:
                raise AssertionError(f"a thread waits for the {lock.path.stem} lock it holds")
            who = threading.current_thread().name
            if who in self.events:
                self.lock_names[who] = lock.path.stem
                self.events[who].set()
            if not acquire(lock, timeout, poll):
                return False
            self.held[(me, lock.path)] = self.held.get((me, lock.path), 0) + 1
            return True

        def counted_release(lock: FileLock) -> None:
            key = (threading.get_ident(), lock.path)
            if lock.held and key in self.held:
                self.held[key] -= 1
                if not self.held[key]:
                    del self.held[key]
            release(lock)

        monkeypatch.setattr(FileLock, "acquire", waiting_acquire)
        monkeypatch.setattr(FileLock, "release", counted_release)

    def start(self, name: str, target: Any, *args: Any) -> Any:
        import threading

        self.events[name] = threading.Event()
        self.lock_names[name] = None

        def run() -> None:
            try:
                target(*args)
            finally:
                self.events[name].set()  # ended: nothing to wait for any more

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        return thread

    def until_waiting(self, name: str) -> str | None:
        """NAME's thread waits for a lock: which one (None: it ended without waiting)."""
        self.events[name].wait()
        return self.lock_names[name]
