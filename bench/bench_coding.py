"""Coding-agent development set (bench/coding: 111 real SpecStory sessions of seven
projects, 123 questions written from the logs; PROVENANCE.md says where they come from).

The sessions are laid out as exported (`<project>/.specstory/history/*.md`, each project
folder its own git repository, so a session's project is its folder's) and go through the
real command line into a fresh memory repo: `autopoiesis init`, `import`, the offline
`extract --pending` (no LLM configured), then:

* `autopoiesis eval bench/coding/questions.jsonl`: evidence in the compiled context at
  2K/4K/8K tokens beside BM25-ranked turns packed into the same budget (the same run);
* search turn recall@10 with `--mode bm25` and `--mode hybrid` (over everything, and over
  transcripts only): a question counts when one of its evidence turns (the turn whose text
  holds an evidence snippet) overlaps one of the ten results; overall and for each
  question kind (lexical, paraphrase, temporal, preference).

    python bench/bench_coding.py [--quick] [--json]

--quick keeps the 40 first questions (and every session: the import is the set).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SESSIONS = HERE / "coding" / "sessions"
QUESTIONS = HERE / "coding" / "questions.jsonl"
BUDGETS = (2048, 4096, 8192)
KINDS = ("lexical", "paraphrase", "temporal", "preference")
# (mode, category): every category as an agent searches, and transcripts only (no
# extracted knowledge in the ten)
SEARCHES = (("bm25", None), ("hybrid", None), ("bm25", "conversation"), ("hybrid", "conversation"))
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV.update(
    {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
)
for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AUTOPOIESIS_LLM"):
    ENV.pop(key, None)  # the offline path: extraction without a model


def _cli(repo: Path | None, *args: str, stdin: str | None = None) -> str:
    cmd = [sys.executable, "-m", "autopoiesis", *(["-C", str(repo)] if repo else []), *args]
    # run outside any git repository: the current folder's project must not be this checkout's
    done = subprocess.run(
        cmd,
        input=stdin,
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
        timeout=3600,
        cwd=tempfile.gettempdir(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])}: exit {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _lay_out(tmp: Path) -> list[Path]:
    """The sessions copied as exported, each project folder a git repository."""
    files = []
    for project in sorted(p for p in SESSIONS.iterdir() if p.is_dir()):
        dest = tmp / "projects" / project.name
        shutil.copytree(project, dest)
        subprocess.run(["git", "init", "-q", str(dest)], check=True, env=ENV)
        files += sorted((dest / ".specstory" / "history").glob("*.md"))
    return files


def _recall_at_10(
    repo: Path, questions: list[dict[str, Any]], mode: str, only: str | None
) -> tuple[list[bool | None], float]:
    """Per question: an evidence turn among the ten results (None: no evidence turn found)."""
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.eval.context import LineCache, norm, resolve, transcript_turns

    memory = MemoryRepo(repo)
    turns = transcript_turns(memory)
    normed = [norm(t.unit.text) for t in turns]
    cache = LineCache()
    started = time.perf_counter()
    # one batch a project: the agent asks from inside that project's repository
    lines: dict[int, str] = {}
    by_project: dict[str, list[int]] = defaultdict(list)
    for n, q in enumerate(questions):
        by_project[q.get("project") or ""].append(n)
    for project, numbers in by_project.items():
        out = _cli(
            repo,
            "search",
            "--batch",
            "-",
            "--json",
            "--mode",
            mode,
            "-k",
            "10",
            "--project",
            project,
            *(["-c", only] if only else []),
            stdin="".join(" ".join(questions[n]["question"].split()) + "\n" for n in numbers),
        )
        lines.update(zip(numbers, out.splitlines(), strict=True))
    out = "\n".join(lines[n] for n in range(len(questions)))
    seconds = time.perf_counter() - started
    hits: list[bool | None] = []
    for q, line in zip(questions, out.splitlines(), strict=True):
        places = [
            loc
            for item in q["evidence"]
            for loc in resolve(item, memory, turns, normed, cache).locations
        ]
        if not places:
            hits.append(None)
            continue
        results = json.loads(line)
        hits.append(
            any(
                r["path"] == path and r["start_line"] <= end and start <= r["end_line"]
                for r in results
                for path, start, end in places
            )
        )
    return hits, seconds


def measure(quick: bool = False) -> dict[str, Any]:
    questions = [json.loads(x) for x in QUESTIONS.read_text(encoding="utf-8").splitlines() if x]
    if quick:
        questions = questions[:40]
    figures: dict[str, Any] = {"questions": len(questions)}
    with tempfile.TemporaryDirectory(prefix="bench-coding-") as name:
        tmp = Path(name)
        files = _lay_out(tmp)
        repo = tmp / "memory"
        _cli(None, "init", str(repo))
        t0 = time.perf_counter()
        _cli(repo, "import", "--format", "specstory", *map(str, files))
        figures["import_s"] = time.perf_counter() - t0
        figures["sessions"] = len(files)
        figures["transcripts"] = len(list((repo / "raw" / "conversations").rglob("*.md")))
        t0 = time.perf_counter()
        _cli(repo, "extract", "--pending")
        figures["extract_s"] = time.perf_counter() - t0
        _cli(repo, "index", "rebuild")
        qfile = tmp / "questions.jsonl"
        qfile.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
        t0 = time.perf_counter()
        report = json.loads(_cli(repo, "eval", str(qfile), "--json"))
        figures["eval_s"] = time.perf_counter() - t0
        figures["with_evidence"] = report["with_evidence"]
        figures["compiled"] = {s["budget"]: s["compiled"] for s in report["budgets"]}
        figures["bm25_packed"] = {s["budget"]: s["bm25_packed"] for s in report["budgets"]}
        for key in ("answer_compiled", "answer_bm25_packed"):
            figures[key] = {s["budget"]: s[key] for s in report["budgets"]}
        figures["compiled_tokens"] = {s["budget"]: s["compiled_tokens"] for s in report["budgets"]}
        figures["recall@10"] = {}
        figures["search_s"] = {}
        for mode, only in SEARCHES:
            hits, seconds = _recall_at_10(repo, questions, mode, only)
            label = f"{mode}, {only} only" if only else mode
            figures["search_s"][label] = seconds
            by_kind: dict[str, list[bool]] = defaultdict(list)
            for q, hit in zip(questions, hits, strict=True):
                if hit is not None:
                    by_kind["all"].append(hit)
                    by_kind[q["kind"]].append(hit)
            figures["recall@10"][label] = {
                k: (sum(v) / len(v), len(v)) for k, v in sorted(by_kind.items())
            }
    return figures


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Rows {bench, metric, value, unit, target} for bench/run.py."""
    if not QUESTIONS.exists() or not SESSIONS.is_dir():
        return [{"bench": "coding", "metric": "skipped (no bench/coding)", "value": None}]
    m = measure(quick)
    rows: list[dict[str, Any]] = []
    for b in BUDGETS:
        k = f"{b // 1024}K"
        rows.append(
            {
                "bench": "coding eval",
                "metric": f"evidence in compiled context, {k}",
                "value": round(m["compiled"][b], 3),
                "unit": "",
                "target": None,
            }
        )
        rows.append(
            {
                "bench": "coding eval",
                "metric": f"evidence in BM25 turns packed, {k}",
                "value": round(m["bm25_packed"][b], 3),
                "unit": "",
                "target": None,
            }
        )
        for key, what in (
            ("answer_compiled", "compiled context"),
            ("answer_bm25_packed", "BM25 turns packed"),
        ):
            rows.append(
                {
                    "bench": "coding eval",
                    "metric": f"answer in {what}, {k}",
                    "value": round(m[key][b], 3),
                    "unit": "",
                    "target": None,
                }
            )
    for label, by_kind in m["recall@10"].items():
        for kind in ("all", *KINDS):
            if kind in by_kind:
                value, n = by_kind[kind]
                rows.append(
                    {
                        "bench": f"coding search ({label})",
                        "metric": f"turn recall@10, {kind} (n={n})",
                        "value": round(value, 3),
                        "unit": "",
                        "target": None,
                    }
                )
    rows += [
        {
            "bench": "coding",
            "metric": "sessions imported / transcripts",
            "value": f"{m['sessions']} / {m['transcripts']}",
            "unit": "",
            "target": None,
        },
        {
            "bench": "coding",
            "metric": "questions / with evidence",
            "value": f"{m['questions']} / {m['with_evidence']}",
            "unit": "",
            "target": None,
        },
        {
            "bench": "coding",
            "metric": "compiled tokens at 8K (mean)",
            "value": round(m["compiled_tokens"][8192]),
            "unit": "tokens",
            "target": None,
        },
        {
            "bench": "coding",
            "metric": "import / extract / eval time",
            "value": f"{m['import_s']:.1f} / {m['extract_s']:.1f} / {m['eval_s']:.1f}",
            "unit": "s",
            "target": None,
        },
    ]
    return rows


if __name__ == "__main__":
    if "--json" in sys.argv:
        print(json.dumps(measure(quick="--quick" in sys.argv), indent=2, default=str))
    else:
        for r in run(quick="--quick" in sys.argv):
            print(f"{r['bench']:<22} {r['metric']:<40} {r['value']!s:>14} {r.get('unit', '')}")
