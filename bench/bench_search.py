"""Search speed and size: full rebuild, incremental update after a one-file commit,
search latency in-process and through the CLI, beside `git grep -i` (and ripgrep when
installed) on the same generated corpus; peak memory of a full rebuild.

    /tmp/v/bin/python bench/bench_search.py [--quick]      (quick: 1k files; else 10k, and 50k for memory)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus import VOCABULARY
from corpus import make_corpus as write_corpus

# Questions as a user asks them: a few common words and one or two specific ones.
QUERIES = [
    "how did the database migration go",
    f"what did we decide about {VOCABULARY[310]} and the deploy",
    f"who owns {VOCABULARY[1200]}",
    f"{VOCABULARY[650]} {VOCABULARY[2400]} incident report",
    "deploy pipeline rollback incident",
    f"notes on {VOCABULARY[4100]} from the meeting",
    f"why is {VOCABULARY[880]} slow",
    f"procedure for {VOCABULARY[1750]} release",
]
# Commands are timed as a user runs them, with Python's bytecode cache in use.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def make_corpus(root: Path, n_files: int, seed: int = 7) -> list[str]:
    """N_FILES knowledge files of about 1 KB in a new memory repo, committed (bench/corpus.py)."""
    from autopoiesis.app.initialize import init_memory_repo

    init_memory_repo(root, build_index=False)
    return write_corpus(root, n_files, size=1024, seed=seed)


def git(root: Path, *args: str) -> str:
    # benchmarks time the index, not the hook: commits here run without hooks
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=root, capture_output=True, text=True, check=True).stdout


_CHILD = """
import json, resource, sys, time
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index import SearchIndex
t = time.perf_counter()
with SearchIndex(MemoryRepo(sys.argv[1])) as idx:
    rep = idx.rebuild_full()
print(json.dumps({"seconds": time.perf_counter() - t, "files": rep.indexed,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def rebuild_in_child(root: Path, *, cold_cache: bool = True) -> dict:
    if cold_cache:
        shutil.rmtree(root / ".autopoiesis", ignore_errors=True)
        for p in root.glob("memory.db*"):
            p.unlink()
    out = subprocess.run([sys.executable, "-c", _CHILD, str(root)], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def measure(n_files: int) -> list[dict]:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.index import SearchIndex

    rows: list[dict] = []
    tag = f"{n_files // 1000}k files"
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        root = Path(tmp) / "repo"
        rels = make_corpus(root, n_files)
        full = rebuild_in_child(root)
        rows.append({"bench": f"search {tag}", "metric": "full rebuild (offline embedder)", "value": round(full["seconds"], 2),
                     "unit": "s", "target": 30 if n_files == 10000 else None})
        rows.append({"bench": f"search {tag}", "metric": "full rebuild peak RSS", "value": round(full["peak_mb"], 1), "unit": "MB",
                     "target": 500 if n_files == 50000 else None})
        if n_files > 10000:
            return rows
        repo = MemoryRepo(root)
        with SearchIndex(repo) as index:
            index.catch_up()
            incr = []
            for k in range(5):
                p = root / rels[4 * k]
                p.write_text(p.read_text(encoding="utf-8") + f"\nedit {k} zanzibar\n", encoding="utf-8")
                git(root, "commit", "-q", "-am", f"edit {k}")
                t = time.perf_counter()
                rep = index.catch_up()
                incr.append(time.perf_counter() - t)
                assert rep.indexed == 1, rep
            rows.append({"bench": f"search {tag}", "metric": "incremental update after 1-file commit (p50)",
                         "value": round(p50(incr), 1), "unit": "ms", "target": 100})
            warm, nofresh = [], []
            for _ in range(3):
                for q in QUERIES:
                    t = time.perf_counter()
                    index.search(q, 10)
                    warm.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    index.search(q, 10, fresh=False)
                    nofresh.append(time.perf_counter() - t)
            rows.append({"bench": f"search {tag}", "metric": "search p50 warm in-process (with freshness check)",
                         "value": round(p50(warm), 2), "unit": "ms", "target": 20})
            rows.append({"bench": f"search {tag}", "metric": "search p50 warm in-process (query only)",
                         "value": round(p50(nofresh), 2), "unit": "ms", "target": None})
        cli = []
        exe = [sys.executable, "-m", "autopoiesis", "-C", str(root), "search"]
        for q in QUERIES[:5]:
            t = time.perf_counter()
            subprocess.run([*exe, q, "--json"], capture_output=True, check=True, env=ENV)
            cli.append(time.perf_counter() - t)
        rows.append({"bench": f"search {tag}", "metric": "`autopoiesis search` end to end (p50)", "value": round(p50(cli), 1),
                     "unit": "ms", "target": 400})
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import autopoiesis.cli"], check=True, env=ENV)
        rows.append({"bench": f"search {tag}", "metric": "  of which: python + `import autopoiesis.cli`",
                     "value": round((time.perf_counter() - t) * 1000, 1), "unit": "ms", "target": None})
        grep = []
        for q in QUERIES[:5]:
            t = time.perf_counter()
            subprocess.run(["git", "grep", "-i", "-l", "-e", q.split()[-1], "--", "knowledge"], cwd=root, capture_output=True)
            grep.append(time.perf_counter() - t)
        rows.append({"bench": f"search {tag}", "metric": "git grep -i (one term, p50)", "value": round(p50(grep), 1), "unit": "ms", "target": None})
        if shutil.which("rg"):
            rg = []
            for q in QUERIES[:5]:
                t = time.perf_counter()
                subprocess.run(["rg", "-i", "-l", q.split()[-1], "knowledge"], cwd=root, capture_output=True)
                rg.append(time.perf_counter() - t)
            rows.append({"bench": f"search {tag}", "metric": "ripgrep -i (one term, p50)", "value": round(p50(rg), 1), "unit": "ms", "target": None})
        else:
            rows.append({"bench": f"search {tag}", "metric": "ripgrep", "value": "not installed", "unit": "", "target": None})
    return rows


def run(quick: bool = False) -> list[dict]:
    sizes = (1000,) if quick else (1000, 10000, 50000)
    rows = []
    for n in sizes:
        rows.extend(measure(n))
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        target = "" if r["target"] is None else f"(target {r['target']})"
        print(f"{r['bench']:<18} {r['metric']:<52} {r['value']!s:>10} {r['unit']:<3} {target}")
