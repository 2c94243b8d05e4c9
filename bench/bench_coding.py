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
  question kind (lexical, paraphrase, temporal, preference);
* the precision of what the offline extraction wrote: every entry of the current-state
  knowledge files (MEMORY.md, projects, reference, procedures, people; not journals or
  identity) looked up in `coding/extraction-labels.jsonl`, a reader's labels (useful or
  noise, and why) of every entry the extraction wrote on these sessions on 2026-11-28,
  before its v3 extractors were made to read the agent's advice and narration as no
  facts (and, on 2026-11-29, the two rules said with weight that lessons@3 then found);
  an entry the labels do not know is counted as unlabelled, never guessed;
* the same sessions as a harness streams them from another machine: each transcript
  replayed through `autopoiesis capture` as events whose `cwd` is a folder this machine
  does not have (`/Users/someone/Projects/<project>`, a third of them its `src/`) and no
  `project`, into a second memory; the projects it names and the same `eval`;
* the same exports as a converter of Markdown streams them: each turn's Markdown one
  message (the agent's tool markup left in its text), the session's folder as `cwd`, into
  a third memory (`_stream_markdown`); the entries its Commands and Changes got and the
  same `eval`.

    python bench/bench_coding.py [--quick] [--json] [--embedder NAME] [--set NAME]

A second set of other projects' sessions, `bench/coding-b`, written by another reader
after the first set's figures were tuned, is measured the same way (compiled context,
search, session start, the same two streamed memories; no labels): what the figures are
worth on sessions no rule was written from. `--set coding-b` measures only it. On the
streamed memories search's turn recall@10 is measured too (hybrid and `--mode bm25`):
the capture stream is how a harness's sessions reach a memory. A third set,
`bench/coding-c`, holds Claude Code sessions as SpecStory's CLI exports them (21 sessions
of one Go project, 54 questions), measured the same way (`--set coding-c`).

--quick keeps the 40 first questions (and every session: the import is the set).
--embedder sets both memories' `search.embedder` (e.g. wordllama, with the static extra)
before anything is indexed; the default is the offline one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


class DataSet:
    """A folder of sessions (`sessions/<project>/.specstory/history/*.md`), the questions
    written from them (`questions.jsonl`) and, for the first set, a reader's labels of
    what the extraction wrote (`extraction-labels.jsonl`)."""

    def __init__(self, folder: Path) -> None:
        self.name = folder.name
        self.sessions = folder / "sessions"
        self.questions = folder / "questions.jsonl"
        self.labels = folder / "extraction-labels.jsonl"

    def present(self) -> bool:
        return self.questions.exists() and self.sessions.is_dir()


CODING = DataSet(HERE / "coding")
# a second set of other projects' sessions, its questions written by another reader after
# the first set's figures were tuned: what those figures are worth on sessions no rule
# of the extractors or the ranking was written from (bench/coding-b/PROVENANCE.md)
SECOND = DataSet(HERE / "coding-b")
# a third set, of Claude Code sessions exported by SpecStory's CLI (every tool call an
# agent message of its own, commands and edited files named only in a block's body or its
# answer), its questions written from the logs after the reading of those blocks was
# (bench/coding-c/PROVENANCE.md)
THIRD = DataSet(HERE / "coding-c")
SESSIONS, QUESTIONS, LABELS = CODING.sessions, CODING.questions, CODING.labels
BUDGETS = (2048, 4096, 8192)
KINDS = ("lexical", "paraphrase", "temporal", "preference")
# (mode, category): every category as an agent searches, and transcripts only (no
# extracted knowledge in the ten)
SEARCHES = (("bm25", None), ("hybrid", None), ("bm25", "conversation"), ("hybrid", "conversation"))
MODES = ("hybrid", "bm25")  # the streamed memories' search, each beside BM25 alone
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


def _cli(repo: Path | None, *args: str, stdin: str | None = None, cwd: Path | None = None) -> str:
    cmd = [sys.executable, "-m", "autopoiesis", *(["-C", str(repo)] if repo else []), *args]
    # run outside any git repository (unless CWD says where): the current folder's project
    # must not be this checkout's
    done = subprocess.run(
        cmd,
        input=stdin,
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
        timeout=3600,
        cwd=cwd or tempfile.gettempdir(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])}: exit {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _session_start_answers(repo: Path, qfile: Path, tmp: Path) -> dict:
    """Per question kind, the share of QFILE's questions whose answer pattern the context a
    Claude Code session starts with holds: the real SessionStart hook, run in the git
    checkout the project's sessions were exported from (`_lay_out`: where the agent
    would start again), else in a new one named after the project, at the hooks' default
    budget. (A new checkout beside the laid-out one, both without a remote, is another
    codebase of one name to the memory: core/project_names.)"""
    from autopoiesis.eval.questions import load_questions

    questions = load_questions(qfile).groups[0]  # with the eval's own answer patterns
    contexts: dict[str, str] = {}
    for project in sorted({q.project or "" for q in questions}):
        folder = tmp / "projects" / project
        if not (folder / ".git").is_dir():
            folder = tmp / "checkouts" / project
            folder.mkdir(parents=True)
            subprocess.run(["git", "init", "-q", str(folder)], check=True)
        payload = {
            "session_id": f"bench-{project}",
            "transcript_path": str(tmp / f"{project}.jsonl"),
            "cwd": str(folder),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
        said = _cli(
            repo, "hook", "claude-code", "SessionStart", stdin=json.dumps(payload), cwd=folder
        )
        out = json.loads(said) if said.strip() else {}
        contexts[project] = out.get("hookSpecificOutput", {}).get("additionalContext", "")
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for q in questions:
        hit = q.answer_in(contexts[q.project or ""])
        if hit is not None:
            by_kind["all"].append(hit)
            by_kind[q.kind or ""].append(hit)
    return {k: (sum(v) / len(v), len(v)) for k, v in sorted(by_kind.items())}


def _use_embedder(repo: Path, name: str | None) -> None:
    """Set REPO's `search.embedder` to NAME (None: as `init` wrote it) and commit that."""
    if name is None:
        return
    from ruamel.yaml import YAML

    from autopoiesis.core.config import CONFIG_FILENAME

    yaml = YAML()  # round trip: the file's comments stay
    path = repo / CONFIG_FILENAME
    data = yaml.load(path.read_text(encoding="utf-8"))
    data["search"]["embedder"] = name
    with path.open("w", encoding="utf-8") as fh:
        yaml.dump(data, fh)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "-m", f"config: embedder {name}", "--", path],
        check=True,
        env=ENV,
        capture_output=True,
    )


def _lay_out(tmp: Path, data: DataSet = CODING) -> list[Path]:
    """The sessions copied as exported, each project folder a git repository."""
    files = []
    for project in sorted(p for p in data.sessions.iterdir() if p.is_dir()):
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


def _stream_from_elsewhere(repo: Path) -> str:
    """REPO's transcripts as one capture stream recorded on another machine: the events a
    harness sends (messages and tool calls in their order), each session's `cwd` a folder
    named after its project under a home folder this machine does not have, no `project`."""
    from autopoiesis.formats import transcript as tf

    def stamp(when: Any) -> str:
        return str(when.strftime("%Y-%m-%dT%H:%M:%SZ"))

    lines: list[str] = []
    paths = sorted((repo / "raw" / "conversations").rglob("*.md"))
    for n, path in enumerate(paths):
        t = tf.parse(path.read_text(encoding="utf-8"))
        sid = t.meta.session_id
        home = "/Users/someone"
        cwd = f"{home}/Projects/{t.meta.project}{'/src' if n % 3 == 0 else ''}"
        events: list[dict[str, Any]] = [
            {
                "event": "session_start",
                "session_id": sid,
                "started": stamp(t.meta.started),
                "cwd": cwd if t.meta.project else home,
            }
        ]
        for turn in t.turns:
            texts: list[str] = []
            for item in (*turn.items, None):
                if isinstance(item, tf.Text):
                    texts.append(item.content)
                    continue
                if texts:
                    events.append(
                        {
                            "event": "message",
                            "session_id": sid,
                            "role": turn.role,
                            "content": "\n\n".join(texts),
                            "timestamp": stamp(turn.time),
                        }
                    )
                    texts = []
                if isinstance(item, tf.ToolCall):
                    events.append(
                        {
                            "event": "tool_call",
                            "session_id": sid,
                            "tool": item.tool,
                            "args": item.args,
                            "result": item.result or "",
                            "timestamp": stamp(turn.time),
                        }
                    )
        ended = t.meta.ended or t.meta.started
        events.append({"event": "session_end", "session_id": sid, "ended": stamp(ended)})
        lines += [json.dumps(e) for e in events]
    return "\n".join(lines) + "\n"


_MARKER = re.compile(r"^_\*\*(User|Assistant|Agent)\b.*\*\*_\s*$")
_FILE_MINUTE = re.compile(r"^\d{4}-\d\d-\d\d_\d\d-\d\d")


def _stream_markdown(files: list[Path]) -> str:
    """FILES (SpecStory exports) as a capture stream made the way a converter of chat
    Markdown makes it: each turn's Markdown as one message, tool markup and all, a second
    apart from the file name's minute; the session's folder (the project's) as `cwd`."""
    lines: list[str] = []
    for n, path in enumerate(files):
        sid = f"md-{n:03d}"
        m = _FILE_MINUTE.match(path.name)
        start = (
            datetime.strptime(m.group(0), "%Y-%m-%d_%H-%M").replace(tzinfo=UTC)
            if m
            else datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(second=0)
        )
        events: list[dict[str, Any]] = [
            {
                "event": "session_start",
                "session_id": sid,
                "started": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "cwd": str(path.parents[2]),
            }
        ]
        turns: list[tuple[str, list[str]]] = []
        for line in path.read_text(encoding="utf-8").split("\n"):
            marker = _MARKER.match(line.strip())
            if marker:
                turns.append(("user" if marker.group(1) == "User" else "assistant", []))
            elif turns:
                turns[-1][1].append(line)
        for role, body in turns:
            content = "\n".join(body).strip()
            while content.endswith("\n---") or content == "---":
                content = content[:-3].rstrip()
            if content:
                start += timedelta(seconds=1)
                events.append(
                    {
                        "event": "message",
                        "session_id": sid,
                        "role": role,
                        "content": content,
                        "timestamp": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    }
                )
        events.append({"event": "session_end", "session_id": sid})
        lines += [json.dumps(e) for e in events]
    return "\n".join(lines) + "\n"


def _coding_entries(repo: Path) -> int:
    """The live entries of the Commands and Changes sections of REPO's project files."""
    from autopoiesis.formats import knowledge as kf

    return sum(
        1
        for path in (repo / "knowledge" / "projects").glob("*/context.md")
        for section, entry in kf.parse(path.read_text(encoding="utf-8")).entries()
        if section.title in ("Commands", "Changes") and entry.active
    )


def _entry_labels(repo: Path, data: DataSet = CODING) -> dict[str, int]:
    """How many current-state entries of REPO the labels call useful, noise, or do not know
    (all of them, for a set without labels)."""
    from autopoiesis.formats import knowledge as kf

    labels = {}
    text = data.labels.read_text(encoding="utf-8") if data.labels.exists() else ""
    for line in text.splitlines():
        if line.strip():
            row = json.loads(line)
            labels[(row["file"], kf.normalize_fact(row["text"]))] = row["label"]
    counts = {"useful": 0, "noise": 0, "unlabelled": 0}
    for path in sorted((repo / "knowledge").rglob("*.md")):
        rel = path.relative_to(repo).as_posix()
        if not kf.is_current_state(rel) or path.name.startswith("_"):
            continue  # the index files restate their entries
        for _section, entry in kf.parse(path.read_text(encoding="utf-8")).entries():
            counts[labels.get((rel, kf.normalize_fact(entry.text)), "unlabelled")] += 1
    return counts


def measure(
    quick: bool = False,
    embedder: str | None = None,
    data: DataSet = CODING,
) -> dict[str, Any]:
    """The figures of DATA: imported, and the same sessions captured from another machine
    and streamed as Markdown turns."""
    questions = [
        json.loads(x) for x in data.questions.read_text(encoding="utf-8").splitlines() if x
    ]
    if quick:
        questions = questions[:40]
    figures: dict[str, Any] = {"questions": len(questions)}
    with _work_folder() as tmp:
        files = _lay_out(tmp, data)
        repo = tmp / "memory"
        _cli(None, "init", str(repo))
        _use_embedder(repo, embedder)
        t0 = time.perf_counter()
        _cli(repo, "import", "--format", "specstory", *map(str, files))
        figures["import_s"] = time.perf_counter() - t0
        figures["sessions"] = len(files)
        figures["transcripts"] = len(list((repo / "raw" / "conversations").rglob("*.md")))
        t0 = time.perf_counter()
        _cli(repo, "extract", "--pending")
        figures["extract_s"] = time.perf_counter() - t0
        figures["entries"] = _entry_labels(repo, data)
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
        figures["session_start"] = _session_start_answers(repo, qfile, tmp)
        figures["recall@10"] = {}
        figures["search_s"] = {}
        for mode, only in SEARCHES:
            label = f"{mode}, {only} only" if only else mode
            figures["recall@10"][label], figures["search_s"][label] = _recall_by_kind(
                repo, questions, mode, only
            )
        # the same sessions streamed from another machine (see the module's docstring)
        elsewhere = tmp / "from-elsewhere"
        _cli(None, "init", str(elsewhere))
        _use_embedder(elsewhere, embedder)
        t0 = time.perf_counter()
        _cli(elsewhere, "capture", stdin=_stream_from_elsewhere(repo))
        figures["capture_s"] = time.perf_counter() - t0
        _cli(elsewhere, "extract", "--pending")
        _cli(elsewhere, "index", "rebuild")
        named = json.loads(_cli(elsewhere, "projects", "--json"))
        figures["elsewhere_projects"] = sum(1 for p in named if p["transcripts"])
        report = json.loads(_cli(elsewhere, "eval", str(qfile), "--json"))
        figures["elsewhere_compiled"] = {s["budget"]: s["compiled"] for s in report["budgets"]}
        figures["elsewhere_bm25_packed"] = {
            s["budget"]: s["bm25_packed"] for s in report["budgets"]
        }
        figures["elsewhere_recall@10"] = {
            mode: _recall_by_kind(elsewhere, questions, mode, None)[0] for mode in MODES
        }
        # the same exports as a converter of their Markdown streams them
        markdown = tmp / "as-markdown"
        _cli(None, "init", str(markdown))
        _use_embedder(markdown, embedder)
        _cli(markdown, "capture", stdin=_stream_markdown(files))
        _cli(markdown, "extract", "--pending")
        _cli(markdown, "index", "rebuild")
        figures["coding_entries"] = (_coding_entries(repo), _coding_entries(markdown))
        report = json.loads(_cli(markdown, "eval", str(qfile), "--json"))
        for key in ("compiled", "answer_compiled"):
            figures[f"markdown_{key}"] = {s["budget"]: s[key] for s in report["budgets"]}
        figures["markdown_recall@10"] = {
            mode: _recall_by_kind(markdown, questions, mode, None)[0] for mode in MODES
        }
    return figures


@contextlib.contextmanager
def _work_folder() -> Iterator[Path]:
    """A fresh folder for a measurement, removed after it. Its name has the same token
    count in every run (the process id, zero-padded): a session's start names the
    memory's folder in its preamble, and a random name moved the room left at 2,000
    tokens by up to three tokens, one answer in or out between runs."""
    tmp = Path(tempfile.gettempdir()) / f"bench-coding-{os.getpid():08d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _recall_by_kind(
    repo: Path, questions: list[dict[str, Any]], mode: str, only: str | None
) -> tuple[dict[str, tuple[float, int]], float]:
    """Turn recall@10 of QUESTIONS on REPO, overall and per question kind: {kind: (share,
    questions with a known evidence turn)}; and the seconds the searches took."""
    hits, seconds = _recall_at_10(repo, questions, mode, only)
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for q, hit in zip(questions, hits, strict=True):
        if hit is not None:
            by_kind["all"].append(hit)
            by_kind[q["kind"]].append(hit)
    return {k: (sum(v) / len(v), len(v)) for k, v in sorted(by_kind.items())}, seconds


def run(quick: bool = False, embedder: str | None = None) -> list[dict[str, Any]]:
    """Rows {bench, metric, value, unit, target} for bench/run.py: the first set's, then
    the second's and the third's (all but the extraction labels, which only the first set
    has)."""
    if not CODING.present():
        return [{"bench": "coding", "metric": "skipped (no bench/coding)", "value": None}]
    rows = _rows(measure(quick, embedder), "coding")
    for data in (SECOND, THIRD):
        if data.present():
            rows += _rows(measure(quick, embedder, data), data.name)
    return rows


def _rows(m: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The rows of figures M of the set NAME (those it has: the second set has no
    labels)."""
    rows: list[dict[str, Any]] = []

    def row(bench: str, metric: str, value: Any, unit: str = "", target: Any = None) -> None:
        rows.append(
            {"bench": f"{name}{bench}", "metric": metric, "value": value, "unit": unit}
            | {"target": target}
        )

    for b in BUDGETS:
        k = f"{b // 1024}K"
        for bench, key, metric in (
            (" eval", "compiled", "evidence in compiled context"),
            (" eval", "bm25_packed", "evidence in BM25 turns packed"),
            (" eval", "answer_compiled", "answer in compiled context"),
            (" eval", "answer_bm25_packed", "answer in BM25 turns packed"),
            (" from elsewhere", "elsewhere_compiled", "evidence in compiled context"),
            (" from elsewhere", "elsewhere_bm25_packed", "evidence in BM25 turns packed"),
            (" as Markdown turns", "markdown_compiled", "evidence in compiled context"),
            (" as Markdown turns", "markdown_answer_compiled", "answer in compiled context"),
        ):
            if key in m:
                row(bench, f"{metric}, {k}", round(m[key][b], 3))
    if "coding_entries" in m:
        row(
            " as Markdown turns",
            "Commands and Changes entries, imported / streamed as Markdown turns",
            "{} / {}".format(*m["coding_entries"]),
        )
    for kind in ("all", *KINDS):
        if kind in m["session_start"]:
            value, n = m["session_start"][kind]
            row(
                " session start",
                f"answer in the SessionStart context, {kind} (n={n})",
                round(value, 3),
            )
    for label, by_kind in m["recall@10"].items():
        for kind in ("all", *KINDS):
            if kind in by_kind:
                value, n = by_kind[kind]
                row(f" search ({label})", f"turn recall@10, {kind} (n={n})", round(value, 3))
    # the capture paths: all questions and the paraphrased ones, hybrid beside bm25
    for bench, key in (
        (" from elsewhere", "elsewhere_recall@10"),
        (" as Markdown turns", "markdown_recall@10"),
    ):
        for mode, by_kind in m.get(key, {}).items():
            for kind in ("all", "paraphrase"):
                if kind in by_kind:
                    value, n = by_kind[kind]
                    row(
                        f"{bench} search ({mode})",
                        f"turn recall@10, {kind} (n={n})",
                        round(value, 3),
                    )
    e = m["entries"]
    judged = e["useful"] + e["noise"]
    if judged:
        row(
            "",
            f"extracted entries useful (precision; {e['useful']} useful / {judged} labelled,"
            f" {e['unlabelled']} unlabelled)",
            round(e["useful"] / judged, 3),
            target=0.9,
        )
    row("", "sessions imported / transcripts", f"{m['sessions']} / {m['transcripts']}")
    if "elsewhere_projects" in m:
        row(" from elsewhere", "projects named by the captured sessions", m["elsewhere_projects"])
    row("", "questions / with evidence", f"{m['questions']} / {m['with_evidence']}")
    row("", "compiled tokens at 8K (mean)", round(m["compiled_tokens"][8192]), "tokens")
    times = [m["import_s"], m["extract_s"], m["eval_s"]] + (
        [m["capture_s"]] if "capture_s" in m else []
    )
    row(
        "",
        "import / extract / eval" + (" / capture" if "capture_s" in m else "") + " time",
        " / ".join(f"{t:.1f}" for t in times),
        "s",
    )
    return rows


def _option(flag: str) -> str | None:
    if flag not in sys.argv:
        return None
    at = sys.argv.index(flag) + 1
    if at >= len(sys.argv) or sys.argv[at].startswith("-"):
        sys.exit(f"{flag} takes a value")
    return sys.argv[at]


if __name__ == "__main__":
    chosen = _option("--embedder")  # offline, wordllama, openai, fastembed, ...
    quick = "--quick" in sys.argv
    one = _option("--set")
    data = DataSet(HERE / one) if one else CODING
    if not data.present():
        sys.exit(f"no question set at bench/{data.name}: it needs sessions/ and questions.jsonl")
    if "--json" in sys.argv:
        figures = measure(quick, chosen, data)
        print(json.dumps(figures, indent=2, default=str))
    else:
        rows = _rows(measure(quick, chosen, data), data.name) if one else run(quick, chosen)
        for r in rows:
            print(f"{r['bench']:<22} {r['metric']:<40} {r['value']!s:>14} {r.get('unit', '')}")
