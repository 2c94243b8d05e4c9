"""Capture and hook figures of the memory-repository issue.

- appending a message: median latency at the start of a session and at 10,000 messages
- hooks: extra time they add to a `git commit` of 3 files in a 10,000-file repo
- `autopoiesis --help` wall time
- 32 concurrent harnesses x 50 messages: nothing lost; p95 close-to-commit latency
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from corpus import make_corpus

# Hooks and CLIs are measured as a user runs them: with Python's bytecode cache in use
# (some sandboxes set PYTHONDONTWRITEBYTECODE, which would recompile every module each run).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV.update(
    {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
)


def _repo(tmp: Path, name: str):
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo

    return MemoryRepo(init_memory_repo(tmp / name, build_index=False).root)


def bench_append(tmp: Path, n: int) -> list[dict]:
    from autopoiesis.capture.session import ConversationCapture, Session

    repo = _repo(tmp, "append")
    cap = ConversationCapture(repo, auto_commit=False)
    s = Session("bench_append", started=datetime(2026, 1, 1, tzinfo=UTC))
    cap.on_session_start(s)
    times = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "agent"
        t = time.perf_counter()
        cap.on_message(
            s,
            role,
            f"Message {i}: we talked about the deploy pipeline and the rollback plan for release "
            f"{i % 97}.",
        )
        times.append(time.perf_counter() - t)
    cap.on_session_end(s)
    first = statistics.median(times[:100]) * 1000
    last = statistics.median(times[-1000:]) * 1000
    return [
        {"metric": "append median, first 100 msgs", "value": first, "unit": "ms", "target": "<= 1"},
        {
            "metric": f"append median, msgs {n - 1000}-{n}",
            "value": last,
            "unit": "ms",
            "target": "<= 1",
        },
    ]


def bench_hooks(tmp: Path, n_files: int, rounds: int, *, with_index: bool = True) -> list[dict]:
    repo = _repo(tmp, f"hooks-{with_index}")
    rels = make_corpus(repo.root, n_files)
    if with_index:
        # with a search index, post-commit really starts the background sync every time
        subprocess.run(
            [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "index", "rebuild"],
            check=True,
            env=ENV,
            capture_output=True,
        )
    with_hooks, without = [], []
    for r in range(rounds):
        for mode in ("hooks", "plain"):
            for k in range(3):
                p = repo.root / rels[(r * 7 + k * 13) % len(rels)]
                p.write_text(p.read_text() + f"- 2026-03-01: change {r} {mode} {k}\n")
            subprocess.run(["git", "add", "-A", "knowledge"], cwd=repo.root, check=True, env=ENV)
            cmd = ["git", "commit", "-qm", f"bench {r} {mode}"]
            if mode == "plain":
                cmd = [
                    "git",
                    "-c",
                    "core.hooksPath=/dev/null",
                    "commit",
                    "-qm",
                    f"bench {r} {mode}",
                ]
            t = time.perf_counter()
            subprocess.run(cmd, cwd=repo.root, check=True, env=ENV, capture_output=True)
            (with_hooks if mode == "hooks" else without).append(time.perf_counter() - t)
            time.sleep(0.05)
            _wait_for_index_sync(
                repo.root
            )  # each commit is timed without the last one's background sync
    h, p = statistics.median(with_hooks) * 1000, statistics.median(without) * 1000
    label = "with search index" if with_index else "no search index"
    return [
        {
            "metric": f"git commit of 3 files, {n_files} files, hooks ({label})",
            "value": h,
            "unit": "ms",
            "target": "",
        },
        {
            "metric": f"git commit of 3 files, {n_files} files, no hooks",
            "value": p,
            "unit": "ms",
            "target": "",
        },
        {
            "metric": f"hooks overhead, median ({label})",
            "value": h - p,
            "unit": "ms",
            "target": "<= 150",
        },
    ]


def _wait_for_index_sync(root: Path, timeout: float = 30.0) -> None:
    """Wait until no background index sync holds the index lock."""
    from autopoiesis.core.paths import FileLock

    lock = FileLock(root / ".autopoiesis" / "locks" / "index.lock")
    if lock.path.exists() and lock.acquire(timeout=timeout):
        lock.release()


def bench_help(runs: int) -> list[dict]:
    exe = Path(sys.executable).with_name("autopoiesis")
    cmd = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "autopoiesis", "--help"]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, env=ENV)
        times.append(time.perf_counter() - t)
    return [
        {
            "metric": "autopoiesis --help",
            "value": statistics.median(times) * 1000,
            "unit": "ms",
            "target": "<= 300",
        }
    ]


def bench_concurrent(tmp: Path, harnesses: int, messages: int) -> list[dict]:
    from autopoiesis.formats import transcript as tf

    repo = _repo(tmp, "concurrent")
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    ready = threading.Barrier(harnesses)

    def harness(h: int) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "capture"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ENV,
        )
        assert proc.stdin and proc.stdout
        proc.stdin.write(
            json.dumps(
                {
                    "event": "session_start",
                    "session_id": f"h{h:02d}",
                    "model": "m",
                    "channel": "bench",
                }
            ).encode()
            + b"\n"
        )
        for i in range(messages):
            event = {
                "event": "message",
                "role": "user" if i % 2 == 0 else "agent",
                "content": f"h{h} message {i}",
            }
            proc.stdin.write(json.dumps(event).encode() + b"\n")
        proc.stdin.flush()
        # Close-to-commit starts when the session ends, not when its process starts: wait
        # until every harness has its last message on disk, then all close at once.
        last = f"h{h} message {messages - 1}"
        deadline = time.time() + 120
        while time.time() < deadline:
            found = list(repo.conversations_dir.rglob(f"*-h{h:02d}*.md"))
            if found and last in found[0].read_text(encoding="utf-8"):
                break
            time.sleep(0.02)
        ready.wait()
        t = time.perf_counter()
        proc.stdin.write(b'{"event": "session_end"}\n')
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - t
        proc.stdin.close()
        proc.wait()
        with lock:
            if b'"committed"' in line:
                latencies.append(elapsed)
            else:
                errors.append(proc.stderr.read().decode()[-300:])

    threads = [threading.Thread(target=harness, args=(h,)) for h in range(harnesses)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    files = list(repo.conversations_dir.rglob("*.md"))
    complete = sum(1 for f in files if len(tf.parse(f.read_text()).turns) == messages)
    committed = subprocess.run(
        ["git", "ls-files", "raw/conversations"], cwd=repo.root, capture_output=True, text=True
    ).stdout.count(".md")
    commits = int(
        subprocess.run(
            ["git", "rev-list", "--count", "HEAD", "--", "raw"],
            cwd=repo.root,
            capture_output=True,
            text=True,
        ).stdout
    )
    latencies.sort()
    p95 = latencies[max(0, int(len(latencies) * 0.95) - 1)] * 1000 if latencies else float("nan")
    return [
        {
            "metric": f"{harnesses} harnesses: transcripts with all {messages} messages",
            "value": complete,
            "unit": f"of {harnesses}",
            "target": f"= {harnesses}",
        },
        {
            "metric": f"{harnesses} harnesses: sessions committed",
            "value": committed,
            "unit": f"of {harnesses}",
            "target": f"= {harnesses}",
        },
        {
            "metric": "commits they took (group commit)",
            "value": commits,
            "unit": "commits",
            "target": "",
        },
        {
            "metric": "close-to-commit latency p50",
            "value": statistics.median(latencies) * 1000 if latencies else float("nan"),
            "unit": "ms",
            "target": "",
        },
        {"metric": "close-to-commit latency p95", "value": p95, "unit": "ms", "target": "report"},
    ] + (
        [{"metric": "errors", "value": len(errors), "unit": errors[0][:80], "target": "0"}]
        if errors
        else []
    )


def run(quick: bool = False) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="ap-bench-") as d:
        tmp = Path(d)
        rows = bench_append(tmp, 2000 if quick else 10_000)
        rows += bench_hooks(tmp, 1000 if quick else 10_000, 5 if quick else 15, with_index=False)
        rows += bench_hooks(tmp, 1000 if quick else 10_000, 5 if quick else 15, with_index=True)
        rows += bench_help(3 if quick else 10)
        rows += bench_concurrent(tmp, 8 if quick else 32, 10 if quick else 50)
    for r in rows:
        r["bench"] = "capture"
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
