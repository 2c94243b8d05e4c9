"""The viewer's pages (issue 25: each loads in <= 300 ms on a 10k-file repo): a generated
memory repo of N files, half transcripts over a year (three projects, three harnesses),
half knowledge files with entries (one superseded in each), committed, the search index
built; then each page asked for through the real app (Starlette's TestClient: the
routing, the guards, the templates), the median of several loads after a first one.

    python bench/run.py viewer             10k files
    python bench/run.py viewer --quick     1k files
    python bench/bench_viewer.py [--quick]

A separate row times the first timeline of a fresh server: the session catalog reading
every transcript's head (`serve` does that in the background as it starts).
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 300.0
LOADS = 7
PROJECTS = ("billing-service", "mobile-app", "data-pipeline")
HARNESSES = ("claude-code", "codex", "gemini")
WORDS = (
    "deploy rollback database migration schema index query latency cache review merge branch "
    "release budget invoice customer meeting decision lesson procedure incident postgres "
    "redis kafka python docker kubernetes terraform grafana alert pooling retries"
).split()


def _sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _transcript(i: int, rng: random.Random, day: str) -> tuple[str, str]:
    hh, mm = rng.randrange(24), rng.randrange(60)
    sid = f"ses_b{i:05d}"
    project = PROJECTS[i % len(PROJECTS)]
    turns = []
    for t in range(6):
        role = "user" if t % 2 == 0 else "agent"
        body = _sentence(rng) + " " + _sentence(rng)
        if role == "agent" and t == 1:
            body = "> [tool:exec] make test → 12 passed\n\n" + body
        turns.append(f"\n## {hh:02d}:{mm:02d} — {role}\n{body}\n")
    text = (
        f"---\nsession_id: {sid}\nstarted: {day}T{hh:02d}:{mm:02d}:00Z\n"
        f"ended: {day}T{hh:02d}:{mm:02d}:00Z\nmodel: m\nchannel: {HARNESSES[i % 3]}\n"
        "topic: null\ntags: []\ntokens_in: 0\ntokens_out: 0\nstatus: closed\n"
        f"source: {HARNESSES[i % 3]}:x.jsonl\nproject: {project}\nredactions: {{}}\n"
        f"knowledge_changes: []\n---\n\n# Session {i}\n" + "".join(turns)
    )
    path = f"raw/conversations/{day.replace('-', '/')}/{hh:02d}{mm:02d}-{sid}-session-{i}.md"
    return path, text


def _knowledge(i: int, rng: random.Random, day: str, sid: str) -> tuple[str, str]:
    from datetime import datetime

    from autopoiesis.formats import knowledge as kf

    when = datetime.fromisoformat(f"{day}T09:00:00+00:00")
    old_id = kf.make_entry_id(when, sid, f"old{i}")
    new_id = kf.make_entry_id(when, sid, f"new{i}")
    old = kf.Entry(old_id, _sentence(rng), day, sid, None, (f"superseded-by:{new_id}",))
    new = kf.Entry(new_id, _sentence(rng), day, sid)
    lines = [old.render(), new.render()]
    lines += [
        kf.Entry(kf.make_entry_id(when, sid, f"{i}-{k}"), _sentence(rng), day, sid).render()
        for k in range(4)
    ]
    project = PROJECTS[i % len(PROJECTS)]
    path = f"knowledge/projects/{project}/notes-{i:05d}.md"
    text = (
        f"---\ntype: project_context\nproject: {project}\nentry_count: {len(lines)}\n---\n\n"
        f"# Notes {i}\n\n## Key Decisions\n" + "\n".join(lines) + "\n"
    )
    return path, text


def make_repo(root: Path, n_files: int) -> dict[str, str]:
    """A memory repo of N_FILES files (half transcripts, half knowledge), committed and
    indexed; what the pages are asked about."""
    from datetime import date, timedelta

    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.index import SearchIndex
    from autopoiesis.memory.initialize import init_memory_repo

    init_memory_repo(root, build_index=False)
    rng = random.Random(25)
    start = date(2026, 1, 1)
    sample: dict[str, str] = {}
    for i in range(n_files // 2):
        day = (start + timedelta(days=i * 365 // max(1, n_files // 2))).isoformat()
        tpath, ttext = _transcript(i, rng, day)
        kpath, ktext = _knowledge(i, rng, day, f"ses_b{i:05d}")
        for path, text in ((tpath, ttext), (kpath, ktext)):
            full = root / path
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(text, encoding="utf-8")
        sample = {"session": tpath, "knowledge": kpath}
    entry_line = (root / sample["knowledge"]).read_text().split("\n")[9]
    sample["entry"] = entry_line.split("{id: ")[1][:20]
    git = ["git", "-c", "core.hooksPath=/dev/null", "-C", str(root)]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "bench: the corpus"], check=True, capture_output=True)
    subprocess.run([*git, "branch", "extract/bench"], check=True, capture_output=True)
    with SearchIndex(MemoryRepo(root)) as index:
        index.rebuild_full()
    return sample


def pages(sample: dict[str, str]) -> list[tuple[str, str]]:
    from urllib.parse import quote

    k, s, e = quote(sample["knowledge"]), quote(sample["session"]), sample["entry"]
    return [
        ("timeline", "/timeline"),
        ("timeline, one project", "/timeline?project=mobile-app"),
        ("timeline, searched", "/timeline?q=postgres+rollback"),
        ("session", f"/session?path={s}"),
        ("knowledge (every file)", "/knowledge"),
        ("knowledge of a project", "/knowledge?project=mobile-app"),
        ("knowledge file", f"/knowledge/file?path={k}"),
        ("entry provenance", f"/entry/{e}?path={k}"),
        ("history of a fact", f"/history/{e}?path={k}"),
        ("search", "/search?q=why+did+the+deploy+rollback"),
        ("compiler view", "/compile?message=why+did+the+deploy+rollback&budget=4096"),
        ("compare", "/compare?a=extract/bench&b=main"),
        ("health", "/health"),
    ]


def measure(n_files: int) -> list[dict]:
    from starlette.testclient import TestClient

    from autopoiesis.memory import Memory
    from autopoiesis.viewer.app import create_app

    rows = []
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        root = Path(tmp) / "memory"
        sample = make_repo(root, n_files)
        app = create_app(Memory(root), token="t", port=1)
        with TestClient(app, base_url="http://127.0.0.1:1") as client:
            client.get("/?token=t")
            t = time.perf_counter()
            assert client.get("/timeline").status_code == 200
            rows.append(
                _row(
                    f"first timeline of a fresh server, {n_files} files",
                    (time.perf_counter() - t) * 1000,
                )
            )
            for name, url in pages(sample):
                client.get(url)  # the first load: caches, imports
                times = []
                for _ in range(LOADS):
                    t = time.perf_counter()
                    r = client.get(url)
                    times.append((time.perf_counter() - t) * 1000)
                    assert r.status_code == 200, (url, r.status_code, r.text[:300])
                rows.append(_row(f"{name}, {n_files} files (median)", statistics.median(times)))
        app.state.viewer.health.wait()  # its checks run in a thread: done before the cleanup
    return rows


def _row(metric: str, ms: float) -> dict:
    return {"metric": metric, "value": round(ms, 1), "unit": "ms", "target": f"<= {TARGET_MS:.0f}"}


def run(quick: bool = False) -> list[dict]:
    return measure(1000 if quick else 10_000)


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row['metric']:<60} {row['value']:>8} {row['unit']}  {row['target']}")
