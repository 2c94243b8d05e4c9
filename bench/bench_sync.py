"""Two-clone sync figures of issue 13 ("sync with a remote").

Two clones of one memory (real init: hooks and merge driver) and a bare remote over
file://. Each round, both clones capture sessions and write knowledge entries through the
writer (MEMORY.md, a shared project file, the day's journal) — the same files on both
sides, so every round merges — then sync A, B, A. Reported: entries written against
entries present on both sides afterwards (knowledge/ and archive/: the MEMORY.md cap moves
overflow to the archive), transcripts likewise, and the time of one sync round: one that
pulls and merges, one that only pushes, one with nothing to do.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@x",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@x",
    "GIT_CONFIG_NOSYSTEM": "1",
}
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PROJECT = "knowledge/projects/atlas/context.md"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def _capture(repo, sid: str, text: str, when: datetime) -> str:
    from autopoiesis.capture.session import ConversationCapture, Session

    cap = ConversationCapture(repo)
    s = Session(sid, started=when, model="m", channel="cli")
    cap.on_session_start(s)
    cap.on_message(s, "user", text, {"timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ")})
    closed = cap.on_session_end(s, ended=when + timedelta(minutes=1))
    return closed.path


def _write(
    repo, source: str, session: str, when: datetime, side: str, n: int, round_: int
) -> set[str]:
    from autopoiesis.core.paths import MEMORY_FILE
    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.writer import KnowledgeWriter

    changes = []
    for i in range(n):
        prov = Provenance(source, when + timedelta(seconds=i), "bench@1", session)
        if i < n // 3:  # MEMORY.md fills up over the rounds; the rest goes to the project file
            changes.append(
                KnowledgeChange(
                    MEMORY_FILE,
                    "append",
                    "Lessons Learned" if side == "b" else "Key Decisions",
                    f"Round {round_} session {session} fact {i} learned on clone {side}",
                    prov,
                )
            )
        changes.append(
            KnowledgeChange(
                PROJECT,
                "append",
                "Key Decisions",
                f"Atlas round {round_} session {session} choice {i} on {side}",
                prov,
            )
        )
    changes.append(
        KnowledgeChange(
            f"knowledge/journal/{when.date().isoformat()}.md",
            "append",
            when.date().isoformat(),
            f"{side} worked in round {round_}",
            Provenance(source, when, "bench@1", session),
        )
    )
    report = KnowledgeWriter(repo).apply(changes)
    return {eid for _, eid in report.added}


def _present(repo) -> set[str]:
    from autopoiesis.formats import knowledge as kf

    ids: set[str] = set()
    for top in ("knowledge", "archive"):
        for path in (repo.root / top).rglob("*.md"):
            ids |= {e.id for _, e in kf.parse(path.read_text(encoding="utf-8")).entries()}
    return ids


def run(quick: bool = False) -> list[dict]:
    for k, v in ENV.items():
        os.environ.setdefault(k, v)
    import logging

    logging.getLogger("autopoiesis.knowledge.writer").setLevel(
        logging.ERROR
    )  # entries a full MEMORY.md refuses
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.commit import commit_knowledge
    from autopoiesis.memory.initialize import init_memory_repo
    from autopoiesis.memory.sync import sync_once

    rounds, sessions, entries = (2, 2, 10) if quick else (6, 3, 25)
    with tempfile.TemporaryDirectory(prefix="ap-sync-") as d:
        tmp = Path(d)
        a = MemoryRepo(init_memory_repo(tmp / "a", build_index=False).root)
        remote = tmp / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        _git(a.root, "remote", "add", "origin", remote.as_uri())
        sync_once(a)
        subprocess.run(
            ["git", "clone", "-q", remote.as_uri(), str(tmp / "b")], check=True, capture_output=True
        )
        b = MemoryRepo(init_memory_repo(tmp / "b", build_index=False).root)
        written: set[str] = set()
        transcripts: set[str] = set()
        merging: list[float] = []
        pushing: list[float] = []
        idle: list[float] = []
        capped = 0
        for r in range(rounds):
            for side, repo in (("a", a), ("b", b)):
                for s in range(sessions):
                    when = T0 + timedelta(days=r, hours=s, minutes=1 if side == "b" else 0)
                    sid = f"ses_{side}{r}x{s}"
                    path = _capture(repo, sid, f"round {r} session {s} on {side}", when)
                    transcripts.add(path)
                    written |= _write(repo, path, sid, when, side, entries, r)
                commit_knowledge(repo)
            for repo in (a, b, a):
                t = time.perf_counter()
                report = sync_once(repo)
                took = time.perf_counter() - t
                (
                    merging
                    if report.merge in ("merged", "fast-forward")
                    else pushing
                    if report.pushed
                    else idle
                ).append(took)
                capped += len(report.capped)
        for repo in (a, b, a, b):
            t = time.perf_counter()
            report = sync_once(repo)
            assert not report.pushed and report.merge == "up-to-date"
            idle.append(time.perf_counter() - t)
        present_a, present_b = _present(a), _present(b)
        same_head = _git(a.root, "rev-parse", "HEAD") == _git(b.root, "rev-parse", "HEAD")
        files_a = {
            p for p in _git(a.root, "ls-files", "raw/conversations").split() if p.endswith(".md")
        }
        files_b = {
            p for p in _git(b.root, "ls-files", "raw/conversations").split() if p.endswith(".md")
        }
        rows = [
            {
                "metric": f"entries written on two clones ({rounds} rounds) / present on both "
                "after sync",
                "value": f"{len(written)} / {len(written & present_a & present_b)}",
                "unit": "entries",
                "target": "all",
            },
            {
                "metric": "entries present on A / on B (knowledge/ + archive/)",
                "value": f"{len(present_a)} / {len(present_b)}",
                "unit": "entries",
                "target": "equal",
            },
            {
                "metric": "transcripts captured / present on both after sync",
                "value": f"{len(transcripts)} / {len(transcripts & files_a & files_b)}",
                "unit": "files",
                "target": "all",
            },
            {
                "metric": "clones at the same commit after the last sync",
                "value": "yes" if same_head else "NO",
                "unit": "",
                "target": "yes",
            },
            {
                "metric": "merges that re-applied the MEMORY.md cap (overflow archived)",
                "value": capped,
                "unit": "",
                "target": "",
            },
            {
                "metric": f"sync round that pulls and merges, median (max) of {len(merging)}",
                "value": f"{statistics.median(merging) * 1000:.0f} ({max(merging) * 1000:.0f})",
                "unit": "ms",
                "target": "",
            },
            {
                "metric": "sync round that only pushes (commits, fetch, verify, push), median of "
                f"{len(pushing)}",
                "value": statistics.median(pushing) * 1000,
                "unit": "ms",
                "target": "",
            },
            {
                "metric": f"sync round with nothing new, median of {len(idle)}",
                "value": statistics.median(idle) * 1000,
                "unit": "ms",
                "target": "",
            },
        ]
    for row in rows:
        row["bench"] = "sync"
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
