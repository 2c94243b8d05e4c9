"""Hangs, runaway replies and a damaged index (issue 10):

- `autopoiesis commit` against an LLM that trickles its answer one byte every 5 s
  (timeout_seconds 10, max_retries 1): worst wall time, which the call's deadline bounds;
  and the worst wall time of a capture's transcript commit made meanwhile by another
  process (it must not wait on the model);
- a 3,000-item extraction reply: entries written, MEMORY.md lines, later commits accepted;
- memory.db with corrupt pages, on a full disk, on a read-only file system: what doctor,
  search and `index rebuild` do (the tmpfs cases need root);
- a captured message that is one long token (a hex dump), 40 KB and 1 MiB: the capture's
  wall time, its extraction included.

Quick mode trickles every 0.5 s with timeout_seconds 1, and runs one trial.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV.update(
    {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
)
for _k, _v in ENV.items():
    if _k.startswith("GIT_"):
        os.environ.setdefault(_k, _v)


def transcript(session_id: str) -> str:
    from autopoiesis.testing.samples import DATABASE_CHOICE, closed_transcript

    ask = (
        "2026-03-01T23:58:00Z",
        "user",
        "Alice",
        "Should we keep the embeddings in PostgreSQL or in SQLite? Lesson learned: keep the index "
        "a cache.",
    )
    return closed_transcript(session_id, "Database Choice", (ask, DATABASE_CHOICE[1]))


CAPTURE_COMMIT = (
    "import sys; from autopoiesis.core.paths import MemoryRepo; from autopoiesis.git.repo import "
    "MemoryGit; "
    "MemoryGit(MemoryRepo(sys.argv[1])).commit_transcript(sys.argv[2], 'database-choice')"
)


def _repo(tmp: Path, name: str):
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo

    return MemoryRepo(init_memory_repo(tmp / name, build_index=False).root)


def _cli(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autopoiesis", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
    )


# ── a trickling LLM ──
def bench_trickle(tmp: Path, quick: bool) -> list[dict]:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.llm import LLMClient
    from autopoiesis.testing.openai_server import OpenAIServer, write_llm_config

    every, timeout, trials = (0.5, 1, 1) if quick else (5.0, 10, 3)
    worst_commit = worst_capture = 0.0
    subjects: list[str] = []
    with OpenAIServer() as server:
        server.default_chat = lambda body: {
            "trickle": every,
            "content": "remember that the index is a cache",
        }
        for trial in range(trials):
            repo = _repo(tmp, f"trickle{trial}")
            write_llm_config(repo.root, server.base_url, timeout_seconds=timeout, max_retries=1)
            subprocess.run(
                ["git", "commit", "-qm", "maintenance: llm", "--", "memory-config.yaml"],
                cwd=repo.root,
                env=ENV,
                check=True,
            )
            deadline = LLMClient(MemoryRepo(repo.root)).deadline
            mem = repo.memory_file
            mem.write_text(mem.read_text() + f"- 2026-03-02: the index is a cache ({trial})\n")
            rel = f"raw/conversations/2026/03/01/2358-ses_b{trial}-database-choice.md"
            (repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo.root / rel).write_text(transcript(f"ses_b{trial}"))
            asked = len(server.chat_bodies())
            t0 = time.monotonic()
            commit = subprocess.Popen(
                [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "commit"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=ENV,
            )
            while len(server.chat_bodies()) == asked and commit.poll() is None:
                time.sleep(0.02)
            t1 = time.monotonic()
            subprocess.run(
                [sys.executable, "-c", CAPTURE_COMMIT, str(repo.root), rel],
                env=ENV,
                check=True,
                capture_output=True,
                timeout=600,
            )
            worst_capture = max(worst_capture, time.monotonic() - t1)
            commit.communicate(timeout=900)
            worst_commit = max(worst_commit, time.monotonic() - t0)
            subjects.append(
                subprocess.run(
                    ["git", "log", "-1", "--format=%s", "--", "knowledge"],
                    cwd=repo.root,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
            )
    setting = f"trickle 1 B/{every:g} s, timeout {timeout} s, max_retries 1"
    return [
        {
            "metric": f"`autopoiesis commit` worst wall time ({setting}, {trials} trial(s))",
            "value": round(worst_commit, 2),
            "unit": "s",
            "target": f"<= deadline {deadline:g} s + start-up (was 150 s)",
        },
        {
            "metric": "concurrent capture transcript commit, worst wall time",
            "value": round(worst_capture, 2),
            "unit": "s",
            "target": "< 1 s: never waits on the LLM",
        },
        {
            "metric": "commit subject when the model never answered",
            "value": subjects[-1],
            "unit": "",
            "target": "deterministic",
        },
    ]


# ── a runaway reply ──
def bench_reply_cap(tmp: Path) -> list[dict]:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.knowledge.extract import KnowledgeExtractor
    from autopoiesis.memory.commit import commit_knowledge
    from autopoiesis.testing.openai_server import OpenAIServer, write_llm_config

    repo = _repo(tmp, "runaway")
    with OpenAIServer() as server:
        write_llm_config(repo.root, server.base_url, max_retries=0, timeout_seconds=10)
        rel = "raw/conversations/2026/03/01/2358-ses_run-database-choice.md"
        (repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo.root / rel).write_text(transcript("ses_run"))
        subprocess.run(
            ["git", "add", "memory-config.yaml", rel], cwd=repo.root, env=ENV, check=True
        )
        subprocess.run(
            ["git", "commit", "-qm", "conversation: database-choice"],
            cwd=repo.root,
            env=ENV,
            check=True,
        )
        reply = json.dumps(
            {
                "lessons": [
                    {"lesson": f"Lesson {i}: check item {i} twice before a release"}
                    for i in range(3000)
                ]
            }
        )
        server.default_chat = lambda body: {"content": reply}
        repo = MemoryRepo(repo.root)
        with KnowledgeExtractor(repo) as ex:
            report = ex.extract_from_session(rel, ["lessons"])
            try:
                ok = bool(ex.commit(report))
            except Exception:
                ok = False
    lines = repo.memory_file.read_text().count("\n")
    (repo.root / "knowledge/reference/later.md").write_text("# Later\n- still committing\n")
    try:
        later = bool(commit_knowledge(repo, "memory: later").sha)
    except Exception:
        later = False
    cap = repo.config.lifecycle.memory_line_cap
    return [
        {
            "metric": "3,000-item reply: entries written",
            "value": report.added,
            "unit": "entries",
            "target": "<= 100 (reply item cap), MEMORY.md within its cap",
        },
        {
            "metric": "3,000-item reply: MEMORY.md lines",
            "value": lines,
            "unit": "lines",
            "target": f"<= {cap} (was 6,015)",
        },
        {
            "metric": "3,000-item reply: its commit and a later one accepted",
            "value": "yes" if ok and later else "NO",
            "unit": "",
            "target": "yes",
        },
    ]


# ── a damaged index ──
NOTE = (
    "# Deploys {i}\n\n## Pipeline\nDeploys go through the blue-green pipeline number {i}.\n"
    + "filler words " * 60
    + "\n"
)


def _fill(repo, n: int) -> None:
    for i in range(n):
        (repo.root / f"knowledge/reference/note-{i:03d}.md").write_text(NOTE.format(i=i))


def bench_index(tmp: Path) -> list[dict]:
    from autopoiesis.index import SearchIndex, db, search_outcome

    rows = []
    repo = _repo(tmp, "corrupt")
    _fill(repo, 120)
    with SearchIndex(repo) as index:
        index.rebuild_full()
    size = repo.index_path.stat().st_size
    with open(repo.index_path, "r+b") as fh:
        for where in (size // 3, size // 2, 2 * size // 3):
            fh.seek(where - where % 4096 + 100)
            fh.write(os.urandom(2000))
    doctor = json.loads(_cli(repo.root, "doctor", "--json").stdout)
    rebuild = _cli(repo.root, "index", "rebuild")
    after = search_outcome("blue-green pipeline number 7", repo=repo)
    rows.append(
        {
            "metric": "page corruption: doctor reports it",
            "value": "yes" if not doctor["ok"] else "NO",
            "unit": "",
            "target": "yes",
        }
    )
    rows.append(
        {
            "metric": "page corruption: `index rebuild` exit status / search source after",
            "value": f"{rebuild.returncode} / {after.source}",
            "unit": "",
            "target": "0 / index",
        }
    )
    for _ in range(3):
        repo.index_path.write_bytes(b"not a database" * 500)
        search_outcome("blue-green", repo=repo)
    rows.append(
        {
            "metric": "3 corruptions in a row: .corrupt-* copies kept",
            "value": len(db.corrupt_copies(repo.index_path)),
            "unit": "files",
            "target": "<= 1",
        }
    )

    mnt = tmp / "disk"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        rows.append(
            {
                "metric": "disk full / read-only",
                "value": "skipped (needs root)",
                "unit": "",
                "target": "",
            }
        )
        return rows
    try:
        repo = _repo(mnt, "full")
        _fill(repo, 20)
        with SearchIndex(repo) as index:
            index.rebuild_full()
        for i in range(40):
            (repo.root / f"knowledge/reference/new-{i}.md").write_text(NOTE.format(i=1000 + i) * 20)
        filler = mnt / "filler"
        with open(filler, "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 4096)
                    fh.flush()
            except OSError:
                pass
        out = search_outcome("blue-green pipeline number 3", repo=repo)
        rebuild = _cli(repo.root, "index", "rebuild")
        moved = len(db.corrupt_copies(repo.index_path))
        rows.append(
            {
                "metric": "disk full: search answered by / healthy memory.db moved aside",
                "value": f"{out.source} / {moved}",
                "unit": "",
                "target": "git grep or ripgrep / 0",
            }
        )
        rows.append(
            {
                "metric": "disk full: `index rebuild` exit / traceback",
                "value": f"{rebuild.returncode} / "
                f"{'yes' if 'Traceback' in rebuild.stderr else 'no'}",
                "unit": "",
                "target": "1 with a clear error / no",
            }
        )
        filler.unlink()
        rows.append(
            {
                "metric": "disk freed: `index rebuild` exit",
                "value": _cli(repo.root, "index", "rebuild").returncode,
                "unit": "",
                "target": "0",
            }
        )
        (repo.root / "knowledge/reference/late.md").write_text(
            "# Late\nA late note about the blue-green pipeline.\n"
        )
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        try:
            out = search_outcome("blue-green pipeline", repo=repo)
            cli = _cli(repo.root, "search", "blue-green pipeline")
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
        rows.append(
            {
                "metric": "read-only file system: search answered by / CLI traceback",
                "value": f"{out.source} / {'yes' if 'Traceback' in cli.stderr else 'no'}",
                "unit": "",
                "target": "git grep or ripgrep / no",
            }
        )
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    return rows


# ── a message that is one long token ──
def bench_long_token(tmp: Path, quick: bool) -> list[dict]:
    """`autopoiesis capture` of a session whose message is one long token (a pasted hex
    dump, minified code): the extraction its end runs read it with patterns that
    backtracked over the whole run at each of its positions (40 KB of hex took 99 s, a
    1 MiB one over 10 minutes), and the stream read no event meanwhile."""
    import secrets

    rows = []
    sizes = (40_000,) if quick else (40_000, 1_000_000)
    for size in sizes:
        for shape, body in (
            ("hex dump", secrets.token_hex(size // 2)),
            ("run of one letter", "a" * size),
        ):
            repo = _repo(tmp, f"token-{size}-{shape.split()[0]}")
            events = [
                {"event": "session_start", "session_id": "dump", "started": "2026-03-03T10:00:00Z"},
                {"event": "message", "role": "user", "content": f"Here is the dump: {body}"},
                {"event": "session_end"},
            ]
            t0 = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "capture"],
                input="".join(json.dumps(e) + "\n" for e in events),
                capture_output=True,
                text=True,
                env=ENV,
                timeout=1800,
            )
            rows.append(
                {
                    "metric": f"capture of a {size // 1000:,} KB {shape} (its extraction "
                    f"included; exit {done.returncode})",
                    "value": round(time.perf_counter() - t0, 2),
                    "unit": "s",
                    "target": "linear in the size (was 99 s at 40 KB)",
                }
            )
    return rows


def run(quick: bool = False) -> list[dict]:
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-hangs-") as d:
        tmp = Path(d)
        rows += bench_trickle(tmp, quick)
        rows += bench_reply_cap(tmp)
        rows += bench_index(tmp)
        rows += bench_long_token(tmp, quick)
    for r in rows:
        r["bench"] = "hangs"
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
