"""Bulk import figures (issues 12 and 23).

- sessions/s of `import_files` for N Claude Code session files (one session each, ten
  turns with a tool call) into an empty memory repo
- the same into a repo that already holds 5,000 transcripts spread over two years of
  day folders (the existing ones are written by the transcript renderer and committed
  in one commit, as years of use would leave them)
- a re-import of the same files (every session already there: the no-op path)
- MB/s of log for large sessions (1.6 MB each: long prompts, replies and tool output)
- the peak memory of `autopoiesis import` given one log of 100 MB (20 MB with --quick),
  as a multiple of the log's size: a log is read whole, so this says how large a log a
  machine can take

Each figure is given by the wall clock and by CPU time (this process and its git
children): the machine may be busy, CPU time says what the import costs. The figures are
measured with redaction on (as always) and off (the import path alone: the redactor is
core/redact's and measured by bench_secrets).

Target: >= 100 sessions/s, no slower with 5,000 transcripts, >= 10 MB/s of log.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import bench_search as bs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _repo(tmp: Path, name: str):
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo

    return MemoryRepo(init_memory_repo(tmp / name, build_index=False).root)


def claude_code_session(sid: str, start: datetime, rng: random.Random) -> str:
    """One Claude Code JSONL session: five user prompts, five replies, a Bash call each."""
    lines = []
    t = start
    for i in range(5):
        words = " ".join(
            rng.choice(("deploy", "rollback", "schema", "index", "cache", "review", "release"))
            for _ in range(12)
        )
        lines.append(
            {
                "type": "user",
                "sessionId": sid,
                "uuid": f"{sid}-u{i}",
                "timestamp": t.isoformat(),
                "message": {"role": "user", "content": f"Question {i}: {words}"},
            }
        )
        t += timedelta(seconds=20)
        lines.append(
            {
                "type": "assistant",
                "sessionId": sid,
                "uuid": f"{sid}-a{i}",
                "timestamp": t.isoformat(),
                "message": {
                    "id": f"msg_{sid}_{i}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "usage": {"input_tokens": 100, "output_tokens": 40},
                    "content": [
                        {"type": "text", "text": f"Answer {i}: {words}"},
                        {
                            "type": "tool_use",
                            "id": f"{sid}-t{i}",
                            "name": "Bash",
                            "input": {"command": f"grep -rn {words.split()[0]} ."},
                        },
                    ],
                },
            }
        )
        t += timedelta(seconds=5)
        lines.append(
            {
                "type": "user",
                "sessionId": sid,
                "uuid": f"{sid}-r{i}",
                "timestamp": t.isoformat(),
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"{sid}-t{i}",
                            "content": "3 matches",
                        }
                    ],
                },
            }
        )
        t += timedelta(seconds=40)
    return "".join(json.dumps(line) + "\n" for line in lines)


def write_sources(folder: Path, n: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    base = datetime(2026, 3, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        sid = f"bench-{seed}-{i:05d}"
        p = folder / f"{sid}.jsonl"
        p.write_text(claude_code_session(sid, base + timedelta(minutes=17 * i), rng))
        out.append(p)
    return out


def fill_repo(repo, n: int) -> None:
    """N closed transcripts over two years of day folders, committed in one commit."""
    from autopoiesis.core.clock import parse_ts
    from autopoiesis.formats import transcript as tf

    base = parse_ts("2024-01-01T08:00:00Z")
    for i in range(n):
        started = base + timedelta(hours=3.5 * i)
        meta = tf.TranscriptMeta(
            session_id=f"old-{i:05d}",
            started=started,
            ended=started + timedelta(minutes=5),
            channel="bench",
            status="closed",
        )
        turns = (
            tf.Turn(started, "user", (tf.Text(f"old question {i} about the release"),)),
            tf.Turn(started + timedelta(minutes=1), "agent", (tf.Text(f"old answer {i}"),)),
        )
        rel = tf.transcript_relpath(meta.session_id, started, f"old-question-{i}")
        path = repo.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(tf.encode(tf.render(tf.Transcript(meta, f"Old Question {i}", turns))))
    subprocess.run(["git", "add", "-A", "raw"], cwd=repo.root, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "core.hooksPath=/dev/null",
            "commit",
            "-qm",
            f"conversation: import {n} sessions",
        ],
        cwd=repo.root,
        check=True,
    )


def large_session(sid: str, target_bytes: int, rng: random.Random) -> str:
    """A Claude Code session of about TARGET_BYTES: long prompts, replies and greps."""
    words = "deploy rollback schema index cache review release database migration queue".split()

    def say(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    lines, t, i, size = [], datetime(2026, 3, 1, tzinfo=UTC), 0, 0
    while size < target_bytes:
        output = "\n".join(
            f"src/{rng.choice(words)}.py:{rng.randint(1, 900)}: {say(10)}" for _ in range(40)
        )
        for row in (
            {
                "type": "user",
                "sessionId": sid,
                "uuid": f"{sid}-u{i}",
                "timestamp": t.isoformat(),
                "message": {"role": "user", "content": f"Question {i}: {say(40)}"},
            },
            {
                "type": "assistant",
                "sessionId": sid,
                "uuid": f"{sid}-a{i}",
                "timestamp": (t + timedelta(seconds=20)).isoformat(),
                "message": {
                    "id": f"msg_{sid}_{i}",
                    "role": "assistant",
                    "model": "claude-opus-4-1",
                    "usage": {"input_tokens": 1000, "output_tokens": 300},
                    "content": [
                        {"type": "text", "text": say(120)},
                        {
                            "type": "tool_use",
                            "id": f"{sid}-t{i}",
                            "name": "Bash",
                            "input": {"command": f"grep -rn {rng.choice(words)} src/"},
                        },
                    ],
                },
            },
            {
                "type": "user",
                "sessionId": sid,
                "uuid": f"{sid}-r{i}",
                "timestamp": (t + timedelta(seconds=25)).isoformat(),
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"{sid}-t{i}", "content": output}
                    ],
                },
            },
        ):
            line = json.dumps(row)
            lines.append(line)
            size += len(line) + 1
        t += timedelta(minutes=1)
        i += 1
    return "\n".join(lines) + "\n"


def _cpu() -> float:
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed_import(repo, files: list[Path], *, redact: bool = True) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of this process and its git, report) of importing FILES."""
    from autopoiesis.capture.importers import import_files
    from autopoiesis.core.redact import Redactor

    original = type(repo).redactor
    if not redact:
        type(repo).redactor = lambda self: Redactor(enabled=False)
    try:
        cpu, t = _cpu(), time.perf_counter()
        report = import_files(repo, files)
        return time.perf_counter() - t, _cpu() - cpu, report
    finally:
        type(repo).redactor = original


def _rate(rows: list[dict], what: str, amount: float, unit: str, target: str, took: tuple) -> None:
    wall, cpu, report = took
    short = "" if not report.refused else f" ({len(report.refused)} refused)"
    rows.append(
        {"metric": f"{what} (wall)", "value": amount / wall, "unit": unit + short, "target": target}
    )
    rows.append(
        {"metric": f"{what} (CPU)", "value": amount / cpu, "unit": unit + short, "target": target}
    )


def peak_memory(tmp: Path, megabytes: int) -> list[dict]:
    """The peak resident memory of `autopoiesis import` (its own process) given one
    Claude Code log of MEGABYTES."""
    from autopoiesis.memory.initialize import init_memory_repo

    log = tmp / "huge" / "huge.jsonl"
    log.parent.mkdir()
    log.write_text(large_session("huge", megabytes * 1_000_000, random.Random(7)))
    repo = init_memory_repo(tmp / "huge-memory", build_index=False).root
    probe = bs.CHILD_PEAK + (
        "import runpy, sys\n"
        "sys.argv = ['autopoiesis', '-C', sys.argv[1], 'import', sys.argv[2]]\n"
        "try:\n"
        "    runpy.run_module('autopoiesis', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print(peak_mib())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(repo), str(log)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    peak_mib = float(out.split()[-1])
    size_mib = log.stat().st_size / 2**20
    return [
        {
            "metric": f"import one {megabytes} MB Claude Code log: peak memory",
            "value": peak_mib,
            "unit": "MiB",
            "target": "",
        },
        {
            "metric": f"import one {megabytes} MB Claude Code log: peak memory / log size",
            "value": peak_mib / size_mib,
            "unit": "x",
            "target": "",
        },
    ]


def run(quick: bool = False) -> list[dict]:
    n = 100 if quick else 300
    existing = 1000 if quick else 5000
    big = 2 if quick else 5
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="ap-bench-import-") as d:
        tmp = Path(d)
        empty = _repo(tmp, "empty")
        timed_import(empty, write_sources(tmp / "warm", 5, seed=9))  # imports, redactor rules
        files = write_sources(tmp / "src-a", n, seed=1)
        _rate(
            rows,
            f"import {n} Claude Code sessions into an empty repo",
            n,
            "sessions/s",
            ">= 100",
            timed_import(empty, files),
        )
        _rate(
            rows,
            f"re-import the same {n} (all already there)",
            n,
            "sessions/s",
            "",
            timed_import(empty, files),
        )
        _rate(
            rows,
            f"import {n} sessions, redaction off",
            n,
            "sessions/s",
            "",
            timed_import(empty, write_sources(tmp / "src-c", n, seed=3), redact=False),
        )
        rng = random.Random(5)
        large = []
        for i in range(big * 2):
            p = tmp / "large" / f"large-{i}.jsonl"
            p.parent.mkdir(exist_ok=True)
            p.write_text(large_session(f"large-{i}", 1_600_000, rng))
            large.append(p)
        mb = sum(p.stat().st_size for p in large[:big]) / 1e6
        _rate(
            rows,
            f"import {big} sessions of 1.6 MB",
            mb,
            "MB/s",
            ">= 10",
            timed_import(empty, large[:big]),
        )
        _rate(
            rows,
            f"import {big} sessions of 1.6 MB, redaction off",
            mb,
            "MB/s",
            "",
            timed_import(empty, large[big:], redact=False),
        )
        full = _repo(tmp, "full")
        fill_repo(full, existing)
        timed_import(full, write_sources(tmp / "warm-b", 5, seed=8))
        files = write_sources(tmp / "src-b", n, seed=2)
        _rate(
            rows,
            f"import {n} sessions into a repo holding {existing} transcripts",
            n,
            "sessions/s",
            ">= 100",
            timed_import(full, files),
        )
        rows += peak_memory(tmp, 20 if quick else 100)
    for r in rows:
        r["bench"] = "import"
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['metric']:70} {row['value']:10.1f} {row['unit']:15} {row['target']}")
