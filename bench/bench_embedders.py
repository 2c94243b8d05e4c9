"""The embedders side by side: retrieval quality under `--mode hybrid` with each embedder,
beside `--mode bm25`, on LoCoMo and on coding sessions; and what each costs (load time,
throughput, vector size, and bench_search's speed figures with it configured).

    python bench/bench_embedders.py [--quick] [--embedders offline,wordllama]
        [--coding QUESTIONS [--sessions DIR | --repo REPO]] [--speed NOTES]

Embedders whose package is missing are skipped with a row saying so. LoCoMo is read from
../shared/data/locomo (bench_locomo's import and figures: session recall@5/@10, MRR, turn
hit@10). The coding figure is turn recall@10 (a question is found when one of its
evidence snippets is inside a returned chunk) and MRR, overall and per question kind, on
QUESTIONS (JSON lines {"question", "evidence": [snippet, ...], "kind", "project"}) over
the session logs under DIR (default: beside QUESTIONS), imported into a new memory repo,
or over REPO, a memory repo they are in already; each is asked from its project, as an
agent in that project's checkout asks (bench_coding's searches do the same). By default:
bench/coding's questions and sessions, or, without them, a small paraphrase probe over
../shared/data's coding-agent logs.
--speed: the speed figures on a corpus of NOTES notes (default 1,000; not with --quick).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_search as bs

from autopoiesis.errors import EmbedderError

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DATA = SHARED / "locomo" / "locomo-dev.json"
# The coding question set (questions.jsonl beside the SpecStory sessions it asks about),
# measured by default when it is there; else the probe below.
CODING = Path(__file__).resolve().parent / "coding"
LOG_SUFFIXES = (".md", ".json", ".jsonl")
# A small paraphrase probe over ../shared/data's coding-agent logs (claude-code and
# harness-logs, ~20 sessions): each question in other words than its evidence turn's.
PROBE: tuple[tuple[str, str], ...] = (
    ("how do wrappers that change what a function does work in Python?", "design pattern"),
    ("a wrapper factory with arguments that calls the function several times", "factory"),
    ("looking for leftover fix-me notes in the source", "grep -rn TODO"),
    ("handing a code search off to a helper agent", "Spawning a subagent"),
    ("saving the greeting function to version control", "Add hello function"),
    ("what happened when a tool could not run?", "Tool execution failed"),
    ("accented letters, other alphabets and emoji", "Testing special characters"),
    ("how does rich text like bold, lists and tables render?", "Markdown formatting is"),
    ("which command ran the unit checks of the sources?", "pytest -q tests/unit/sources"),
    ("the user stopped the agent midway", "Request interrupted"),
    ("reading the project's readme and pulling out its heading", "extracted the title"),
    ("a to-do list with priorities and states", "Implement core functionality"),
    ("making the search faster", "several areas for improvement"),
    ("a long paragraph of placeholder Latin text to check wrapping", "Lorem ipsum"),
)
EMBEDDERS = ("offline", "wordllama")
TARGETS = {
    "session_recall@5": 0.95,
    "mrr": 0.85,
    "turn_hit@10": 0.80,
    "turn_recall@10": 0.80,
}


def make(name: str) -> Any:
    """The embedder registered as NAME, made for the default config."""
    from autopoiesis.core.config import Config
    from autopoiesis.index.embedders import make_embedder

    return make_embedder(name, Config())


class Scores:
    """Session recall@5/@10, MRR over the first 10 sessions, turn hit@10 (eval.locomo's)."""

    def __init__(self) -> None:
        self.n = 0
        self.sums = {"session_recall@5": 0.0, "session_recall@10": 0.0, "mrr": 0.0}
        self.sums["turn_hit@10"] = 0.0

    def add(self, ranked: list[int], evidence: set[int], turn_hit: bool) -> None:
        self.n += 1
        self.sums["session_recall@5"] += any(s in evidence for s in ranked[:5])
        self.sums["session_recall@10"] += any(s in evidence for s in ranked[:10])
        self.sums["mrr"] += next(
            (1.0 / (i + 1) for i, s in enumerate(ranked[:10]) if s in evidence), 0.0
        )
        self.sums["turn_hit@10"] += turn_hit

    def figures(self) -> dict[str, float]:
        return {k: v / (self.n or 1) for k, v in self.sums.items()}


def locomo(embedders: dict[str, Any], quick: bool) -> dict[str, dict[str, float]]:
    """Figures per "EMBEDDER hybrid" and for "bm25", each conversation indexed once per
    embedder."""
    from autopoiesis.eval.locomo import import_conversation, questions
    from autopoiesis.index import SearchIndex

    data = json.loads(DATA.read_text(encoding="utf-8"))
    scores: dict[str, Scores] = {}
    with tempfile.TemporaryDirectory(prefix="bench-embedders-") as tmp:
        for conv_no, sample in enumerate(data):
            qs = questions(sample)[:: 3 if quick else 1]
            corpus = import_conversation(Path(tmp), conv_no, sample["conversation"])
            path_session = {p: n for n, p in corpus.session_path.items()}
            for name, embedder in embedders.items():
                with SearchIndex(corpus.repo, embedder=embedder) as index:
                    index.rebuild_full()
                    modes = ("hybrid", "bm25") if name == next(iter(embedders)) else ("hybrid",)
                    for mode in modes:
                        label = "bm25" if mode == "bm25" else f"{name} hybrid"
                        got = scores.setdefault(label, Scores())
                        for q, ev in qs:
                            results = index.search(q, limit=10, mode=mode, fresh=False)
                            ranked = [path_session.get(r.path, -1) for r in results]
                            lines = [corpus.turn_lines[e] for e in ev if e in corpus.turn_lines]
                            hit = any(
                                r.path == p
                                and r.start_line <= s
                                and e <= r.end_line + 1
                                and s <= r.end_line
                                for r in results
                                for p, s, e in lines
                            )
                            got.add(ranked, {s for s, _ in ev}, hit)
    return {label: s.figures() for label, s in scores.items()}


def normalised(text: str) -> str:
    """TEXT lower-cased, without Markdown emphasis and backticks, whitespace collapsed: an
    evidence snippet copied from a log still matches the transcript the importer wrote."""
    return " ".join(re.sub(r"[*_`]+", "", text).lower().split())


def imported_repo(root: Path, logs: list[Path]) -> Path:
    """A new memory repo under ROOT with the session logs LOGS (files or folders) imported
    through the real import path (formats detected per file)."""
    from autopoiesis.capture.importers import import_files
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo

    repo = MemoryRepo(init_memory_repo(root / "memory", build_index=False).root)
    report = import_files(repo, logs)
    if not report.imported:
        raise RuntimeError(f"no session imported from {logs}: {report.refused[:3]}")
    return repo.root


def session_logs(folder: Path) -> list[Path]:
    """The folders of FOLDER that hold session logs, hidden ones included (SpecStory keeps
    its exports in <project>/.specstory/history, which a folder import passes over)."""
    return sorted({p.parent for p in folder.rglob("*") if p.suffix in LOG_SUFFIXES})


def coding(
    repo_root: Path, questions: list[dict[str, Any]], embedders: dict[str, Any]
) -> dict[str, dict[str, float]]:
    """Turn recall@10 and MRR per "EMBEDDER hybrid" and for "bm25", overall and per
    question kind: a question is found when one of its evidence snippets is inside a
    returned chunk."""
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.index import SearchIndex

    repo = MemoryRepo(repo_root)
    lines_of: dict[str, list[str]] = {}

    def rank(results: list[Any], evidence: list[str]) -> int | None:
        """The rank of the first result that holds an evidence snippet."""
        wanted = [normalised(e) for e in evidence]
        for n, r in enumerate(results, 1):
            if r.path not in lines_of:
                lines_of[r.path] = (repo.root / r.path).read_text(encoding="utf-8").split("\n")
            text = normalised(" ".join(lines_of[r.path][r.start_line - 1 : r.end_line]))
            if any(w and w in text for w in wanted):
                return n
        return None

    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-embedders-") as tmp:
        for name, embedder in embedders.items():
            db = Path(tmp) / f"{name}.db"
            with SearchIndex(repo, embedder=embedder, db_path=db) as index:
                index.rebuild_full()
                modes = ("hybrid", "bm25") if name == next(iter(embedders)) else ("hybrid",)
                for mode in modes:
                    got: dict[str, list[float]] = {}
                    for q in questions:
                        results = index.search(
                            q["question"],
                            limit=10,
                            mode=mode,
                            fresh=False,
                            project=q.get("project") or None,
                        )
                        n = rank(results, q["evidence"])
                        for kind in ("", f" {q.get('kind', '')}"):
                            got.setdefault(f"turn_recall@10{kind}", []).append(n is not None)
                            got.setdefault(f"turn_mrr@10{kind}", []).append(1 / n if n else 0.0)
                    label = "bm25" if mode == "bm25" else f"{name} hybrid"
                    out[label] = {k: sum(v) / len(v) for k, v in got.items()}
    return out


def cost(name: str) -> dict[str, float]:
    """Load time (s), throughput (texts/s) on LoCoMo's turns, dimensions."""
    started = time.perf_counter()
    embedder = make(name)
    loaded = time.perf_counter() - started
    texts: list[str] = []
    if DATA.exists():
        for sample in json.loads(DATA.read_text(encoding="utf-8")):
            for key, turns in sample["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    texts.extend(t["text"] for t in turns)
    texts = (texts * (20_000 // max(1, len(texts)) + 1))[:20_000] or ["probe"] * 20_000
    started = time.perf_counter()
    embedder.embed(texts)
    rate = len(texts) / (time.perf_counter() - started)
    started = time.perf_counter()
    for text in texts[:200]:
        embedder.embed_query(text)
    query_ms = 1000 * (time.perf_counter() - started) / 200
    return {
        "load": loaded,
        "texts/s": rate,
        "query embed": query_ms,
        "dimensions": float(embedder.dimensions),
    }


def speed(name: str, n_files: int) -> dict[str, float]:
    """bench_search's figures with search.embedder NAME on its corpus of N_FILES notes:
    full build (s, in a fresh process), per query in process p50 (ms), one cold
    `autopoiesis search` (median ms). Not the build's peak memory: a child's peak RSS
    counts its parent's, which has loaded LoCoMo and the models here (bench_search's
    figure is the one to read, with the embedder set in a config)."""
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.index import SearchIndex

    qs = bs.queries(100)
    with tempfile.TemporaryDirectory(prefix="bench-embedders-speed-") as tmp:
        root = Path(tmp) / "repo"
        bs.make_corpus(root, n_files)
        config = root / "memory-config.yaml"
        text = config.read_text(encoding="utf-8")
        config.write_text(
            re.sub(r"(?m)^(  embedder:) offline", rf"\1 {name}", text), encoding="utf-8"
        )
        build = bs.rebuild_in_child(root)
        with SearchIndex(MemoryRepo(root)) as index:
            if index.store.embedder.name != name:
                raise RuntimeError(f"the corpus searched with {index.store.embedder.name}")
            index.search("warm up", 10)
            p50 = statistics.median(bs.in_process(index, qs))
        exe = [sys.executable, "-m", "autopoiesis", "-C", str(root)]
        bs.timed_run([*exe, "search", "warm up the bytecode cache"])
        cold = [bs.timed_run([*exe, "search", q, "--json"]) * 1000 for q in qs[: bs.CLI_RUNS]]
    return {
        "full build": build["seconds"],
        "per query in process p50": p50,
        "one cold `search` CLI call (median)": statistics.median(cold),
    }


def read_questions(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of PATH, blank lines skipped."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def rows_of(bench: str, figures: dict[str, dict[str, float]]) -> list[dict]:
    return [
        {
            "bench": f"{bench} {label}",
            "metric": metric,
            "value": round(value, 3),
            "unit": "",
            "target": TARGETS.get(metric),
        }
        for label, per_metric in figures.items()
        for metric, value in per_metric.items()
    ]


def run(
    quick: bool = False,
    names: tuple[str, ...] = EMBEDDERS,
    questions: Path | None = None,
    logs: Path | None = None,
    repo: Path | None = None,
    speed_notes: int = 1_000,
) -> list[dict]:
    """Rows {bench, metric, value, unit, target} for bench/run.py. QUESTIONS are asked of
    REPO (a memory repo their sessions are in) or of a new one LOGS (a folder of session
    logs) is imported into; by default bench/coding's, or the probe when it is absent."""
    rows: list[dict] = []
    embedders: dict[str, Any] = {}
    units = {"load": "s", "texts/s": "/s", "query embed": "ms", "dimensions": ""}
    for name in names:
        try:
            embedders[name] = make(name)
        except EmbedderError as exc:
            rows.append({"bench": f"embedder {name}", "metric": f"skipped ({exc})"})
            continue
        rows.extend(
            {
                "bench": f"embedder {name}",
                "metric": metric,
                "value": round(value, 3),
                "unit": units[metric],
            }
            for metric, value in cost(name).items()
        )
    if questions is None and (CODING / "questions.jsonl").exists():
        questions, logs = CODING / "questions.jsonl", CODING / "sessions"
    with tempfile.TemporaryDirectory(prefix="bench-embedders-coding-") as tmp:
        if questions is not None:
            if repo is None:
                repo = imported_repo(Path(tmp), session_logs(logs or questions.parent))
            figures = coding(repo, read_questions(questions), embedders)
            rows.extend(rows_of("coding", figures))
        elif SHARED.exists():
            probe = [{"question": q, "evidence": [e], "kind": "paraphrase"} for q, e in PROBE]
            logs_of_shared = [SHARED / "claude-code", SHARED / "harness-logs"]
            figures = coding(imported_repo(Path(tmp), logs_of_shared), probe, embedders)
            rows.extend(rows_of("probe", figures))
    if DATA.exists():
        rows.extend(rows_of("locomo", locomo(embedders, quick)))
    else:
        rows.append({"bench": "embedders", "metric": "skipped (no ../shared/data/locomo)"})
    if not quick:
        units = {"full build": "s"}
        for name in embedders:
            rows.extend(
                {
                    "bench": f"speed {speed_notes // 1000}k notes {name}",
                    "metric": metric,
                    "value": round(value, 2),
                    "unit": units.get(metric, "ms"),
                    "target": bs.TARGETS.get((metric, speed_notes)),
                }
                for metric, value in speed(name, speed_notes).items()
            )
    return rows


if __name__ == "__main__":
    args = sys.argv[1:]

    def option(flag: str) -> Path | None:
        return Path(args[args.index(flag) + 1]) if flag in args else None

    for row in run(
        quick="--quick" in args,
        names=tuple(str(option("--embedders") or ",".join(EMBEDDERS)).split(",")),
        questions=option("--coding"),
        logs=option("--sessions"),
        repo=option("--repo"),
        speed_notes=int(str(option("--speed") or 1_000)),
    ):
        target = "" if row.get("target") is None else f"(target {row['target']})"
        print(
            f"{row['bench']:<32} {row['metric']:<36} {row.get('value')!s:>10} "
            f"{row.get('unit', ''):<3} {target}"
        )
