"""A year of a team, on one repository: grow a memory repo to 10k / 50k / 100k realistic
transcripts (scale_corpus.py) and measure what a team lives with at each size:

- capture-to-commit: a live `autopoiesis capture` process, from its session_end event to
  its "committed" line (median of a few sessions), and the git processes one close runs;
- `git status` in the grown work tree;
- the search index (memory.db and the embedding cache) per transcript, and as a multiple
  of the text it indexes;
- a fresh clone's time to its first search (clone, set-up, first answer from the index);
- a cold `autopoiesis search` (a new process, warm page cache);
- `autopoiesis verify` before the captures (from the checkpoint a run before left, or
  the first commit), after them (from the checkpoint), and a walk from the first commit.

The grown repository is cached under /tmp (AUTOPOIESIS_SCALE_CACHE) and grown in place
from the size it has to the size asked for, so a run does not regrow it:

    python bench/bench_scale.py                 # 10,000
    python bench/bench_scale.py 10000 50000 100000
    python bench/run.py scale [--quick | --large]
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scale_corpus

CORPUS_VERSION = 1
CACHE = Path(os.environ.get("AUTOPOIESIS_SCALE_CACHE", "/tmp/autopoiesis-scale"))
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV.update(
    {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
)
QUERIES = ("rollback plan for the database migration", "kubernetes deploy latency", "invoice")
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


def _git(root: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True, **kw)


def _cli(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autopoiesis", "-C", str(root), *args],
        env=ENV,
        capture_output=True,
        text=True,
        check=check,
    )


def _state(root: Path) -> dict:
    try:
        return json.loads((root / ".autopoiesis" / "scale.json").read_text())
    except (OSError, ValueError):
        return {}


def _cached(n: int) -> Path:
    return CACHE / f"repo-v{CORPUS_VERSION}-{n}"


def grown(n: int) -> Path:
    """The cached repository of N generated transcripts, grown from the largest smaller
    one cached (its objects shared by a local clone, its memory.db copied and caught up)."""
    root = _cached(n)
    if int(_state(root).get("generated", -1)) == n:
        return root
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    smaller = sorted(
        (m, _cached(m))
        for m in (int(p.name.rsplit("-", 1)[1]) for p in CACHE.glob(f"repo-v{CORPUS_VERSION}-*"))
        if m < n and int(_state(_cached(m)).get("generated", -1)) == m
    )
    from autopoiesis.memory.initialize import init_memory_repo

    have = 0
    if smaller:
        have, base = smaller[-1]
        subprocess.run(["git", "clone", "-q", str(base), str(root)], env=ENV, check=True)
        _git(root, "remote", "remove", "origin")
        init_memory_repo(root, build_index=False)
        for name in ("memory.db", "memory.db-wal"):
            if (base / name).exists():
                shutil.copyfile(base / name, root / name)
    else:
        from corpus import make_corpus

        init_memory_repo(root, build_index=False)
        make_corpus(root, 300)
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        _git(root, "config", key, "true")
    head = _git(root, "rev-parse", "HEAD").stdout.decode().strip()
    proc = subprocess.Popen(
        ["git", *NO_HOOKS, "fast-import", "--quiet", "--done"],
        cwd=root,
        stdin=subprocess.PIPE,
        env=ENV,
    )
    assert proc.stdin
    for chunk in scale_corpus.fast_import_stream(have, n, head, "refs/heads/main"):
        proc.stdin.write(chunk)
    proc.stdin.write(b"done\n")
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    _git(root, *NO_HOOKS, "reset", "-q", "--hard")
    # what a remote is kept as (git gc): packed, with reachability bitmaps
    _git(root, *NO_HOOKS, "repack", "-q", "-a", "-d", "-b")
    catch_up = index_up_to_date(root)
    (root / ".autopoiesis" / "scale.json").write_text(
        json.dumps({"generated": n, "index_catch_up": catch_up})
    )
    print(f"[scale: grew to {n} in {time.perf_counter() - started:.0f} s]", file=sys.stderr)
    return root


def _median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _wait_for_index_sync(root: Path, timeout: float = 600.0) -> None:
    from autopoiesis.core.paths import FileLock

    lock = FileLock(root / ".autopoiesis" / "locks" / "index.lock")
    if lock.path.exists() and lock.acquire(timeout=timeout):
        lock.release()


def index_up_to_date(root: Path) -> float:
    """Bring memory.db up to date (what the first search after growing would do)."""
    started = time.perf_counter()
    if (root / "memory.db").exists():
        _cli(root, "search", "--json", QUERIES[0])  # a search catches the index up
    else:
        _cli(root, "index", "rebuild")
    return time.perf_counter() - started


def capture_sessions(root: Path, count: int, tag: str) -> list[float]:
    """Close COUNT live sessions through `autopoiesis capture`: seconds from session_end
    to the "committed" line, each."""
    latencies = []
    for k in range(count):
        sid = f"ses_{tag}{k:03d}{int(time.time() * 1000) % 10**9:09d}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "autopoiesis", "-C", str(root), "capture"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ENV,
        )
        assert proc.stdin and proc.stdout
        events = [{"event": "session_start", "session_id": sid, "model": "m", "channel": "bench"}]
        for i in range(6):
            role = "user" if i % 2 == 0 else "agent"
            events.append(
                {"event": "message", "role": role, "content": f"{tag} {k} {i}: deploy the cache"}
            )
        proc.stdin.write(b"".join(json.dumps(e).encode() + b"\n" for e in events))
        proc.stdin.flush()
        deadline = time.time() + 120
        while time.time() < deadline:  # every message on disk before the close is timed
            found = list(root.glob(f"raw/conversations/*/*/*/*{sid}*.md"))
            if found and f"{tag} {k} 5:" in found[0].read_text(encoding="utf-8"):
                break
            time.sleep(0.01)
        t = time.perf_counter()
        proc.stdin.write(b'{"event": "session_end"}\n')
        proc.stdin.flush()
        line = proc.stdout.readline()
        latencies.append(time.perf_counter() - t)
        proc.stdin.close()
        err = proc.stderr.read().decode()
        proc.wait()
        if b"committed" not in line:
            raise RuntimeError(f"session {sid} not committed: {line!r} {err[-500:]}")
        _wait_for_index_sync(root)
    return latencies


def index_bytes(root: Path) -> tuple[int, int]:
    """(bytes of memory.db with its WAL and the embedding cache, bytes of the text indexed)."""
    index = sum(
        p.stat().st_size
        for p in [root / "memory.db", root / "memory.db-wal", *root.glob(".autopoiesis/**/*.db")]
        if p.exists()
    )
    text = sum(
        p.stat().st_size
        for top in ("raw", "knowledge", "topics", "archive")
        for p in (root / top).rglob("*.md")
    )
    return index, text


def fresh_clone_first_search(root: Path, since: str | None) -> dict:
    """`autopoiesis clone` ROOT as a new machine would, then search until the index
    answers with a hit: seconds of each step, and how much was indexed by then."""
    # ignore_cleanup_errors: a background process the clone started may still write
    # into its .git (waited for below, but a fresh one may start meanwhile)
    with tempfile.TemporaryDirectory(prefix="ap-scale-clone-", ignore_cleanup_errors=True) as tmp:
        clone = Path(tmp) / "memory"
        got: dict = {}
        t = time.perf_counter()
        args = ["clone", f"file://{root}", str(clone)] + (["--since", since] if since else [])
        subprocess.run(
            [sys.executable, "-m", "autopoiesis", *args], env=ENV, check=True, capture_output=True
        )
        got["clone"] = time.perf_counter() - t
        t = time.perf_counter()
        while True:
            out = _cli(clone, "search", "--json", QUERIES[0])
            hits = json.loads(out.stdout or "[]")
            if hits or time.perf_counter() - t > 600:
                break
            time.sleep(0.5)
        got["search"] = time.perf_counter() - t
        got["hits"] = len(hits)
        got["note"] = out.stderr.strip().splitlines()[-1][:100] if out.stderr.strip() else ""
        got["files"] = sum(1 for _ in clone.glob("raw/conversations/*/*/*/*.md"))
        got["git_mb"] = sum(f.stat().st_size for f in (clone / ".git").rglob("*") if f.is_file())
        got["total"] = got["clone"] + got["search"]
        _wait_for_processes_in(clone)  # the background build, before the folder goes
        return got


def _wait_for_processes_in(folder: Path, timeout: float = 60.0) -> None:
    """End the processes that name FOLDER on their command line (the stepwise index
    build and the syncs a clone and its searches start: the measurement is over, and a
    whole build of a large clone would take many minutes), then wait until none is left."""
    needle = str(folder).encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if needle in cmdline.read_bytes():
                    pids.append(int(cmdline.parent.name))
            except (OSError, ValueError):
                continue
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        time.sleep(0.5)


def git_processes(root: Path, tag: str) -> int | None:
    """The git processes one captured session runs (start, six messages, close and
    commit, the post-commit hook), counted with strace; None without strace."""
    if shutil.which("strace") is None:
        return None
    with tempfile.NamedTemporaryFile(prefix="ap-strace-") as trace:
        events = [{"event": "session_start", "session_id": f"ses_{tag}{time.time_ns()}"}]
        events += [{"event": "message", "role": "user", "content": f"m{i}"} for i in range(6)]
        events.append({"event": "session_end"})
        subprocess.run(
            ["strace", "-f", "-qq", "-e", "trace=execve", "-o", trace.name, sys.executable, "-m"]
            + ["autopoiesis", "-C", str(root), "capture"],
            input=b"".join(json.dumps(e).encode() + b"\n" for e in events),
            env=ENV,
            capture_output=True,
            check=True,
        )
        _wait_for_index_sync(root)
        lines = Path(trace.name).read_text(errors="replace").splitlines()
    return sum(1 for x in lines if 'execve("' in x and '/git"' in x and x.rstrip().endswith("= 0"))


def measure(n: int, *, sessions: int = 5, clone: bool = True) -> list[dict]:
    root = grown(n)
    rows = [
        {
            "metric": f"{n}: index catch-up when grown",
            "value": _state(root).get("index_catch_up", float("nan")),
            "unit": "s",
        }
    ]
    _cli(root, "init")  # the settings and hooks of this version
    index_up_to_date(root)
    first_verify = _median_time(lambda: _cli(root, "verify"), 1)  # the checkpoint, if none yet
    latencies = capture_sessions(root, sessions, f"b{n}x")
    rows.append(
        {
            "metric": f"{n}: capture-to-commit per session (median of {sessions})",
            "value": statistics.median(latencies) * 1000,
            "unit": "ms",
            "target": "<= 1000",
        }
    )
    processes = git_processes(root, f"p{n}x")
    if processes is not None:
        rows.append({"metric": f"{n}: git processes a captured session runs", "value": processes})
    _git(root, "status")
    rows.append(
        {
            "metric": f"{n}: git status",
            "value": _median_time(lambda: _git(root, "status"), 3) * 1000,
            "unit": "ms",
        }
    )
    index, text = index_bytes(root)
    count = sum(1 for _ in root.glob("raw/conversations/*/*/*/*.md"))
    rows += [
        {"metric": f"{n}: index per transcript", "value": index / count / 1024, "unit": "KB"},
        {
            "metric": f"{n}: index / text indexed",
            "value": index / text,
            "unit": "x",
            "target": "<= 5",
        },
    ]
    index_up_to_date(root)
    rows.append(
        {
            "metric": f"{n}: cold search (new process, median of {len(QUERIES)})",
            "value": statistics.median(
                _median_time(lambda q=q: _cli(root, "search", q), 1) for q in QUERIES
            )
            * 1000,
            "unit": "ms",
        }
    )
    rows.append({"metric": f"{n}: verify before the captures", "value": first_verify * 1000})
    rows[-1]["unit"] = "ms"
    rows.append(
        {
            "metric": f"{n}: verify after the captures (from the checkpoint)",
            "value": _median_time(lambda: _cli(root, "verify"), 1) * 1000,
            "unit": "ms",
        }
    )
    rows.append(
        {
            "metric": f"{n}: verify --full (from the first commit)",
            "value": _median_time(lambda: _cli(root, "verify", "--full"), 1) * 1000,
            "unit": "ms",
        }
    )
    if clone:
        for since, label in ((None, "the current year"), (_last_month(root), "the last month")):
            got = fresh_clone_first_search(root, since)
            rows.append(
                {
                    "metric": f"{n}: fresh clone to first search, {label} checked out "
                    f"({got['files']} transcripts, .git {got['git_mb'] / 1e6:.0f} MB; clone "
                    f"{got['clone']:.1f} s, search {got['search']:.1f} s, {got['hits']} hits)",
                    "value": got["total"],
                    "unit": "s",
                    "target": "<= 60",
                }
            )
    return rows


def _last_month(root: Path) -> str:
    """The month of the newest transcript (YYYY-MM)."""
    newest = max(root.glob("raw/conversations/*/*"))
    return f"{newest.parent.name}-{newest.name}"


def run(quick: bool = False, large: bool = False) -> list[dict]:
    sizes = (2000,) if quick else (10_000, 50_000, 100_000) if large else (10_000,)
    rows: list[dict] = []
    for n in sizes:
        rows += measure(n, sessions=3 if quick else 5)
    for r in rows:
        r["bench"] = "scale"
        r.setdefault("target", "")
    return rows


if __name__ == "__main__":
    from run import print_table

    sizes = [int(a) for a in sys.argv[1:] if a.isdigit()] or [10_000]
    table: list[dict] = []
    for n in sizes:
        for row in measure(n, clone="--no-clone" not in sys.argv):
            print(row, file=sys.stderr, flush=True)
            table.append({"bench": "scale", "target": "", **row})
    print_table(table)
