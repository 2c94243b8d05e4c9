"""Crash and concurrency figures of issue 10 ("Data loss").

- kill -9 trials: `autopoiesis capture` (its whole process group) is killed at a random
  point: while messages stream in, or while it commits the closed session behind a slow
  chained `pre-commit.local` hook. Then, in turn, an unrelated `autopoiesis commit` of a
  knowledge note or `autopoiesis capture --recover` runs first, and `capture --recover`
  after it. Counted: messages acknowledged (on disk before the kill: the harness sends the
  next message only once the previous one is in the transcript), messages kept in HEAD
  afterwards, transcripts swept into a non-`conversation:` commit, a stale index.lock left
  behind, `git fsck` problems.
- concurrency: N captures x M messages at once, while a loop makes manual knowledge
  commits, searches and index rebuilds. Counted: messages lost, deadlocks (a process still
  running at the timeout), wall time.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV.update(
    {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "b@x",
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
)
SLOW_HOOK = "#!/bin/sh\nsleep 0.5\n"


def _cli(
    root: Path, *args: str, input: bytes | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "autopoiesis", "-C", str(root), *args],
        input=input,
        capture_output=True,
        env=ENV,
        timeout=timeout,
    )


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=ENV)


def _line(event: dict) -> bytes:
    return json.dumps(event).encode() + b"\n"


def _repo(tmp: Path, name: str, *, index: bool = False) -> Path:
    from autopoiesis.memory.initialize import init_memory_repo

    return init_memory_repo(tmp / name, build_index=index).root


def _committed_text(root: Path) -> str:
    """Every transcript in HEAD, concatenated."""
    out = _git(root, "grep", "-h", "-e", "", "HEAD", "--", "raw/conversations/").stdout
    return out


def _swept(root: Path) -> int:
    """Transcripts that a commit other than a `conversation:` one added."""
    log = _git(root, "log", "--diff-filter=A", "--name-only", "--format=\x1e%s").stdout
    n = 0
    for record in log.split("\x1e"):
        subject, _, files = record.partition("\n")
        if subject.startswith(("conversation:", "maintenance: initialize")):
            continue
        n += sum(
            1 for f in files.split() if f.startswith("raw/conversations/") and f.endswith(".md")
        )
    return n


def _trial(root: Path, n: int, rng: random.Random, messages: int) -> tuple[int, int, bool, bool]:
    """(acknowledged, sent, killed mid-commit, died on its own before the kill) of one
    killed capture."""
    sid = f"crash{n}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", str(root), "capture"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=ENV,
        start_new_session=True,
    )
    assert proc.stdin is not None
    mid_commit = rng.random() < 0.5
    kill_after = messages if mid_commit else rng.randint(0, messages)
    acked = sent = 0
    died = False
    try:
        proc.stdin.write(_line({"event": "session_start", "session_id": sid}))
        proc.stdin.flush()
        for i in range(kill_after):
            marker = f"m-{sid}-{i}-end"
            proc.stdin.write(
                _line(
                    {
                        "event": "message",
                        "role": "user" if i % 2 == 0 else "agent",
                        "content": marker,
                    }
                )
            )
            proc.stdin.flush()
            sent += 1
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                files = list(root.glob(f"raw/conversations/*/*/*/????-{sid}*.md"))
                if files and any(
                    marker in f.read_text(encoding="utf-8", errors="replace") for f in files
                ):
                    acked += 1
                    break
                time.sleep(0.005)
        if mid_commit:
            proc.stdin.write(_line({"event": "session_end"}))
            proc.stdin.flush()
            time.sleep(rng.uniform(0.05, 0.9))  # inside the 0.5 s hook, or around it
        else:
            time.sleep(rng.uniform(0, 0.01))
    except BrokenPipeError:
        died = True  # the capture refused to run (e.g. on a stale index.lock)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return acked, sent, mid_commit, died


def bench_crash(tmp: Path, trials: int, messages: int, seed: int = 10) -> list[dict]:
    rng = random.Random(seed)
    root = _repo(tmp, "crash")
    hooks = Path(_git(root, "rev-parse", "--absolute-git-dir").stdout.strip()) / "hooks"
    (hooks / "pre-commit.local").write_text(SLOW_HOOK)  # what `hooks install --chain` keeps
    (hooks / "pre-commit.local").chmod(0o755)
    acked_total = sent_total = mid = lost = stale_locks = refused_steps = died_total = 0
    for n in range(trials):
        acked, sent, mid_commit, died = _trial(root, n, rng, messages)
        died_total += died
        acked_total += acked
        sent_total += sent
        mid += mid_commit
        if n % 2 == 0:  # the order: an unrelated knowledge commit comes first
            note = root / "knowledge" / "reference" / f"note-{n}.md"
            note.write_text(f"# Note {n}\n\nA fact learned in trial {n}.\n")
            refused_steps += _cli(root, "commit", "-m", f"memory: note {n}").returncode != 0
        refused_steps += _cli(root, "capture", "--recover").returncode != 0
        text = _committed_text(root)
        lost += sum(1 for i in range(acked) if f"m-crash{n}-{i}-end" not in text)
        stale_locks += (
            Path(_git(root, "rev-parse", "--absolute-git-dir").stdout.strip()) / "index.lock"
        ).exists()
    fsck = _git(root, "fsck", "--no-progress", "--strict")
    uncommitted = _git(root, "status", "--porcelain", "--", "raw/conversations").stdout.strip()
    return [
        {
            "metric": "kill -9 trials (process group)",
            "value": trials,
            "unit": "trials",
            "target": ">= 30",
        },
        {
            "metric": "  of them during the commit (slow pre-commit.local)",
            "value": mid,
            "unit": "trials",
            "target": "",
        },
        {
            "metric": "messages sent / acknowledged before the kill",
            "value": f"{sent_total} / {acked_total}",
            "unit": "msgs",
            "target": "",
        },
        {
            "metric": "captures that exited on their own before the kill",
            "value": died_total,
            "unit": "trials",
            "target": "0",
        },
        {
            "metric": "acknowledged messages lost after recovery",
            "value": lost,
            "unit": "msgs",
            "target": "0",
        },
        {
            "metric": "transcripts swept into a non-conversation commit",
            "value": _swept(root),
            "unit": "files",
            "target": "0",
        },
        {
            "metric": "commit/recover steps that failed",
            "value": refused_steps,
            "unit": "steps",
            "target": "0",
        },
        {
            "metric": "stale index.lock left after recovery",
            "value": stale_locks,
            "unit": "trials",
            "target": "0",
        },
        {
            "metric": "transcripts left uncommitted at the end",
            "value": len(uncommitted.splitlines()) if uncommitted else 0,
            "unit": "files",
            "target": "0",
        },
        {
            "metric": "git fsck --strict",
            "value": "clean" if fsck.returncode == 0 else fsck.stdout[-200:] + fsck.stderr[-200:],
            "unit": "",
            "target": "clean",
        },
    ]


def bench_concurrency(tmp: Path, captures: int, messages: int, timeout: float) -> list[dict]:
    root = _repo(tmp, "concurrent", index=True)
    done = threading.Event()
    counts = {"commits": 0, "searches": 0, "rebuilds": 0, "failed": 0}
    failures: list[str] = []

    def background() -> None:
        n = 0
        while not done.is_set():
            n += 1
            note = root / "knowledge" / "reference" / f"bg-{n}.md"
            note.write_text(f"# Background {n}\n\nDeploy fact number {n}.\n")
            steps = (
                [
                    ("commits", ("commit", "-m", f"memory: background note {n}")),
                    ("searches", ("search", "deploy fact")),
                    ("rebuilds", ("index", "rebuild")),
                ]
                if n % 3 == 0
                else [
                    ("commits", ("commit", "-m", f"memory: background note {n}")),
                    ("searches", ("search", "deploy fact")),
                ]
            )
            for kind, args in steps:
                try:
                    out = _cli(root, *args, timeout=timeout)
                except subprocess.TimeoutExpired:
                    counts["failed"] += 1
                    failures.append(f"{kind} timed out")
                    continue
                counts[kind] += 1
                if out.returncode != 0:
                    counts["failed"] += 1
                    failures.append(out.stderr.decode(errors="replace")[-300:])

    def stream(h: int) -> bytes:
        sid = f"conc{h}"
        lines = [_line({"event": "session_start", "session_id": sid, "topic": f"harness {h}"})]
        lines += [
            _line(
                {
                    "event": "message",
                    "role": "user" if i % 2 == 0 else "agent",
                    "content": f"c-{sid}-{i}-end",
                }
            )
            for i in range(messages)
        ]
        lines.append(_line({"event": "session_end"}))
        return b"".join(lines)

    bg = threading.Thread(target=background, daemon=True)
    started = time.perf_counter()
    bg.start()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", str(root), "capture"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ENV,
            start_new_session=True,
        )
        for _ in range(captures)
    ]
    results: list[int | None] = [None] * captures

    def feed(h: int) -> None:
        try:
            procs[h].communicate(stream(h), timeout=timeout)
            results[h] = procs[h].returncode
        except subprocess.TimeoutExpired:
            os.killpg(procs[h].pid, signal.SIGKILL)
            procs[h].wait()

    feeders = [threading.Thread(target=feed, args=(h,)) for h in range(captures)]
    for t in feeders:
        t.start()
    for t in feeders:
        t.join()
    wall = time.perf_counter() - started
    done.set()
    bg.join(timeout)
    _cli(root, "capture", "--recover")
    text = _committed_text(root)
    lost = sum(
        1 for h in range(captures) for i in range(messages) if f"c-conc{h}-{i}-end" not in text
    )
    deadlocks = sum(1 for r in results if r is None)
    return [
        {
            "metric": f"concurrent captures x messages (+ {counts['commits']} commits, "
            f"{counts['searches']} searches, "
            f"{counts['rebuilds']} rebuilds)",
            "value": f"{captures} x {messages}",
            "unit": "",
            "target": "64 x 50",
        },
        {"metric": "messages lost", "value": lost, "unit": "msgs", "target": "0"},
        {
            "metric": f"deadlocks (a capture still running after {timeout:.0f} s)",
            "value": deadlocks,
            "unit": "",
            "target": "0",
        },
        {
            "metric": "captures exiting non-zero",
            "value": sum(1 for r in results if r not in (0, None)),
            "unit": "",
            "target": "0",
        },
        {
            "metric": "background commands failed",
            "value": counts["failed"],
            "unit": "",
            "target": "0",
        },
        {"metric": "wall time", "value": wall, "unit": "s", "target": ""},
    ]


def run(quick: bool = False) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-crash-") as tmp:
        rows = bench_crash(Path(tmp), trials=6 if quick else 30, messages=6 if quick else 10)
        rows += bench_concurrency(
            Path(tmp),
            captures=8 if quick else 64,
            messages=10 if quick else 50,
            timeout=120 if quick else 900,
        )
    for row in rows:
        row["bench"] = "crash"
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(r)
