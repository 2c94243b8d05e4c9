"""Bulk import figures of the harness issue (issue 12).

- sessions/s of `import_files` for N Claude Code session files (one session each, ten
  turns with a tool call) into an empty memory repo
- the same into a repo that already holds 5,000 transcripts spread over two years of
  day folders (the existing ones are written by the transcript renderer and committed
  in one commit, as years of use would leave them)
- a re-import of the same files (every session already there: the no-op path)

Target: >= 100 sessions/s, and no slower with 5,000 transcripts.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

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


def timed_import(repo, files: list[Path]) -> tuple[float, object]:
    from autopoiesis.capture.importers import import_files

    t = time.perf_counter()
    report = import_files(repo, files)
    return time.perf_counter() - t, report


def run(quick: bool = False) -> list[dict]:
    n = 100 if quick else 300
    existing = 1000 if quick else 5000
    rows = []
    with tempfile.TemporaryDirectory(prefix="ap-bench-import-") as d:
        tmp = Path(d)
        empty = _repo(tmp, "empty")
        files = write_sources(tmp / "src-a", n, seed=1)
        elapsed, report = timed_import(empty, files)
        ok = len(report.imported) == n and not report.refused
        rows.append(
            {
                "metric": f"import {n} Claude Code sessions into an empty repo",
                "value": n / elapsed,
                "unit": "sessions/s" + ("" if ok else f" (only {len(report.imported)} imported)"),
                "target": ">= 100",
            }
        )
        elapsed, report = timed_import(empty, files)
        rows.append(
            {
                "metric": f"re-import the same {n} (all already there)",
                "value": n / elapsed,
                "unit": "sessions/s",
                "target": "",
            }
        )
        full = _repo(tmp, "full")
        fill_repo(full, existing)
        files = write_sources(tmp / "src-b", n, seed=2)
        elapsed, report = timed_import(full, files)
        ok = len(report.imported) == n and not report.refused
        rows.append(
            {
                "metric": f"import {n} sessions into a repo holding {existing} transcripts",
                "value": n / elapsed,
                "unit": "sessions/s" + ("" if ok else f" (only {len(report.imported)} imported)"),
                "target": ">= 100",
            }
        )
    for r in rows:
        r["bench"] = "import"
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
