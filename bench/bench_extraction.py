"""Precision and recall of the offline extractors on real coding sessions, old (v2) and new
(v3, with coding@1), against a hand-labelled sample (bench/extraction/README.md).

The sessions: bench/extraction/sessions/*.md (transcripts of public SpecStory exports, their
provenance in sessions.json), and the coding agents' logs of ../shared/data (claude-code/ and
harness-logs/, imported through the real importers; skipped when ../shared is absent). Each
version's extractors run offline on each session (derived lines of the index files left out:
they restate a canonical entry).

* precision: useful / labelled, over the entries the version produced that the sample
  labels (an entry matches a label with the same session, file and text); unlabelled
  entries are counted and shown, never guessed;
* recall: the share of the sample's useful facts (what a careful reader keeps of the
  session, whoever produced it) that the version produced: same session and file, and
  the fact's words (longer than two letters) at least 60% inside one entry's.

    python bench/bench_extraction.py [--quick] [--show-unlabelled]
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from autopoiesis.knowledge.extractors import SourceTranscript, default_registry
from autopoiesis.knowledge.extractors.base import long_words

HERE = Path(__file__).resolve().parent / "extraction"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
# the coding agents' logs there (chat exports and LoCoMo are no coding sessions)
SHARED_LOGS = (
    "claude-code/*.jsonl",
    "harness-logs/claude-code/*.jsonl",
    "harness-logs/codex/*.jsonl",
    "harness-logs/copilot/*.jsonl",
    "harness-logs/cursor/*.jsonl",
    "harness-logs/gemini/*",
    "harness-logs/aider/*",
)
VERSIONS = {
    "old (v2)": ["decisions@2", "lessons@2", "people@2", "procedures@2", "facts@2", "journal@2"],
    "new (v3 + coding@1)": [
        "decisions@3",
        "lessons@3",
        "people@3",
        "procedures@3",
        "facts@3",
        "journal@3",
        "coding@1",
    ],
}
DERIVED = ("knowledge/projects/_active.md", "knowledge/people/_index.md")


def _with_project(src: SourceTranscript, project: str | None) -> SourceTranscript:
    """SRC with the project its provenance names, where its frontmatter names none."""
    meta = src.transcript.meta
    if not project or meta.project:
        return src
    made = dataclasses.replace(meta, project=project)
    return dataclasses.replace(src, transcript=dataclasses.replace(src.transcript, meta=made))


def sessions() -> list[tuple[str, SourceTranscript]]:
    """(name, transcript) of every labelled session that is here."""
    provenance = json.loads((HERE / "sessions.json").read_text(encoding="utf-8"))
    out = []
    for name, info in provenance.items():
        path = HERE / "sessions" / f"{name}.md"
        src = SourceTranscript.from_text(f"raw/{name}.md", path.read_text(encoding="utf-8"))
        out.append((name, _with_project(src, info.get("project"))))
    if SHARED.exists():
        out += _shared_sessions()
    return out


def _shared_sessions() -> list[tuple[str, SourceTranscript]]:
    from autopoiesis.capture.importers import import_files
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo

    with tempfile.TemporaryDirectory() as tmp:
        repo = MemoryRepo(
            init_memory_repo(Path(tmp) / "memory", install_hooks=False, build_index=False).root
        )
        root = repo.root
        out = []
        for pattern in SHARED_LOGS:
            for log in sorted(SHARED.glob(pattern)):
                report = import_files(repo, [log], commit=False)
                for rel in report.imported:
                    text = (root / rel).read_text(encoding="utf-8")
                    src = SourceTranscript.from_text(rel, text)
                    name = f"shared:{log.relative_to(SHARED)}#{src.session_id}"
                    out.append((name, src))
        return out


def produced(srcs: list[tuple[str, SourceTranscript]], keys: list[str]) -> list[dict[str, str]]:
    registry = default_registry(plugins=False)
    rows = []
    for name, src in srcs:
        for extractor in registry.select(keys):
            for change in extractor.run_offline(src):
                if change.path in DERIVED:
                    continue
                rows.append(
                    {
                        "session": name,
                        "file": change.path,
                        "section": change.section,
                        "text": change.content,
                        "by": extractor.key,
                    }
                )
    return rows


def _file_key(path: str) -> str:
    """PATH as labels and entries are matched on: a journal file without its day. A log
    that carries no times is dated by its file's modification time (the importers'
    rule), which is the day ../shared was copied: the same entry lands on another day's
    journal on another machine."""
    return "knowledge/journal/" if path.startswith("knowledge/journal/") else path


def _found(fact: dict[str, Any], rows: list[dict[str, str]]) -> bool:
    want = set(long_words(fact["text"]))
    for r in rows:
        if r["session"] != fact["session"] or _file_key(r["file"]) != _file_key(fact["file"]):
            continue
        if r["text"] == fact["text"]:
            return True
        if want and len(want & set(long_words(r["text"]))) / len(want) >= 0.6:
            return True
    return False


def measure(show_unlabelled: bool = False) -> dict[str, dict[str, Any]]:
    labels = [
        json.loads(line)
        for line in (HERE / "labelled.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    by_key = {(x["session"], _file_key(x["file"]), x["text"]): x["label"] for x in labels}
    srcs = sessions()
    here = {name for name, _ in srcs}
    # a label that is another's entry in other words (`variant_of`: the same session's
    # line as a later version words it) judges that entry, and is no fact of its own
    facts = [
        x
        for x in labels
        if x["label"] == "useful" and x["session"] in here and "variant_of" not in x
    ]
    out: dict[str, dict[str, Any]] = {}
    for version, keys in VERSIONS.items():
        rows = produced(srcs, keys)
        marks = [by_key.get((r["session"], _file_key(r["file"]), r["text"])) for r in rows]
        useful, noise = marks.count("useful"), marks.count("noise")
        unlabelled = [r for r, m in zip(rows, marks, strict=True) if m is None]
        found = sum(_found(f, rows) for f in facts)
        out[version] = {
            "produced": len(rows),
            "useful": useful,
            "noise": noise,
            "unlabelled": len(unlabelled),
            "precision": useful / (useful + noise) if useful + noise else None,
            "recall": found / len(facts) if facts else None,
            "facts": len(facts),
        }
        if show_unlabelled:
            for r in unlabelled:
                print(json.dumps(r, ensure_ascii=False))
    return out


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Rows {bench, metric, value, unit, target} for bench/run.py."""
    rows = []
    for version, m in measure().items():
        rows.append(
            {
                "bench": "extraction",
                "metric": f"precision, {version}",
                "value": round(m["precision"], 3) if m["precision"] is not None else None,
                "unit": "",
                "target": ">= 0.9" if version.startswith("new") else "",
            }
        )
        rows.append(
            {
                "bench": "extraction",
                "metric": f"recall, {version}",
                "value": round(m["recall"], 3) if m["recall"] is not None else None,
                "unit": "",
                "target": "",
            }
        )
    return rows


def main() -> None:
    results = measure(show_unlabelled="--show-unlabelled" in sys.argv)
    for version, m in results.items():
        p = "n/a" if m["precision"] is None else f"{m['precision']:.3f}"
        r = "n/a" if m["recall"] is None else f"{m['recall']:.3f}"
        print(
            f"{version:22} precision {p} ({m['useful']} useful / {m['useful'] + m['noise']} "
            f"labelled of {m['produced']} produced, {m['unlabelled']} unlabelled)  "
            f"recall {r} ({m['facts']} useful facts in the sample)"
        )


if __name__ == "__main__":
    main()
