"""What the knowledge holds of the answers (issue 11's figures): answer recall in the
current-state knowledge files, and the knowledge's size against the raw transcripts.

* **answer recall**: for each question with an answer, its answer words (lower-cased,
  stopwords out, plurals folded: "Adoption agencies" -> {adoption, agency}) are looked
  for in the *live* lines of the current-state files (MEMORY.md, projects, people,
  procedures, reference and the index files: `knowledge.is_current_state`); journals,
  identity files, superseded entries and raw/ are left out. Two figures:
  `line` — the share of questions whose answer words all stand in one live line (one
  fact holds the answer); `words` — the mean share of answer words found anywhere in those
  files. The same two over raw/ turns are the ceiling.
* **size**: bytes of knowledge/ written by extraction (identity files out), of the
  current-state files alone, and of raw/conversations/; their ratios.

`knowledge_recall` and `knowledge_size` score any memory repo (the `eval` command reuses
them); `locomo_knowledge` runs the whole LoCoMo measurement: each conversation imported
through the real import path (`app.locomo`), offline extraction, the daily journals and
weekly rollups, then both figures. bench/bench_knowledge.py prints them.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import words
from autopoiesis.formats import knowledge as kf
from autopoiesis.formats import transcript as tf
from autopoiesis.index.text import SEARCH_STOPWORDS


def answer_words(answer: Any) -> frozenset[str]:
    """The words of an answer that must be found: lower-cased, stopwords out ("May" the
    month stays), plurals folded."""
    return frozenset(_fold(w) for w in words(str(answer)) if w not in SEARCH_STOPWORDS)


def _fold(w: str) -> str:
    return w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w


def _line_words(text: str) -> frozenset[str]:
    return frozenset(_fold(w) for w in words(text))


def current_state_lines(repo: MemoryRepo) -> list[str]:
    """The live lines of the current-state knowledge files: active entries (their text,
    date and citation left out) and hand-written lines; headings, struck entries and
    frontmatter left out."""
    out: list[str] = []
    for p in sorted(repo.knowledge_dir.rglob("*.md")):
        rel = repo.rel(p)
        if not kf.is_current_state(rel):
            continue
        doc = kf.parse(p.read_text(encoding="utf-8", errors="replace"))
        for sec in doc.sections:
            for line in sec.lines:
                if isinstance(line, kf.Entry):
                    if line.active:
                        out.append(line.text)
                elif line.strip():
                    out.append(line)
    return out


def raw_turns(repo: MemoryRepo) -> list[str]:
    """The text of every turn of every transcript (the ceiling of what knowledge can hold)."""
    out: list[str] = []
    for p in sorted(repo.conversations_dir.rglob("*.md")):
        try:
            out += [t.text for t in tf.parse(p.read_text(encoding="utf-8"), str(p)).turns]
        except Exception:  # a transcript that does not parse is no evidence either way
            continue
    return out


@dataclass(frozen=True)
class RecallFigures:
    questions: int
    line: float  # share of questions whose answer words all stand in one line
    words: float  # mean share of answer words found anywhere


def recall_in(lines: list[str], answers: Iterable[Any]) -> RecallFigures:
    """RecallFigures of ANSWERS over LINES (see the module docstring)."""
    line_words = [_line_words(t) for t in lines]
    vocabulary = frozenset().union(*line_words) if line_words else frozenset()
    n = hits = 0
    share = 0.0
    for answer in answers:
        want = answer_words(answer)
        if not want:
            continue
        n += 1
        hits += any(want <= lw for lw in line_words)
        share += len(want & vocabulary) / len(want)
    return RecallFigures(n, hits / n if n else 0.0, share / n if n else 0.0)


def knowledge_recall(repo: MemoryRepo, answers: Iterable[Any]) -> dict[str, RecallFigures]:
    """{"knowledge": ..., "raw": ...}: answer recall in the current-state files, and in
    the raw turns (the ceiling)."""
    answers = list(answers)
    return {
        "knowledge": recall_in(current_state_lines(repo), answers),
        "raw": recall_in(raw_turns(repo), answers),
    }


@dataclass(frozen=True)
class KnowledgeSize:
    knowledge_bytes: int  # knowledge/ without identity/
    current_state_bytes: int
    raw_bytes: int  # raw/conversations/

    @property
    def fraction(self) -> float:
        return self.knowledge_bytes / self.raw_bytes if self.raw_bytes else 0.0

    @property
    def current_state_fraction(self) -> float:
        return self.current_state_bytes / self.raw_bytes if self.raw_bytes else 0.0


def knowledge_size(repo: MemoryRepo) -> KnowledgeSize:
    know = cur = 0
    for p in repo.knowledge_dir.rglob("*.md"):
        rel = repo.rel(p)
        if rel.startswith(kf.NOT_WRITABLE_DIRS):
            continue
        size = p.stat().st_size
        know += size
        cur += size if kf.is_current_state(rel) else 0
    raw = sum(p.stat().st_size for p in repo.conversations_dir.rglob("*.md"))
    return KnowledgeSize(know, cur, raw)


def extract_and_condense(repo: MemoryRepo) -> None:
    """Offline extraction of every transcript, then the daily journal of each day that
    has transcripts and the weekly rollup of each such week (what cron would have run)."""
    from autopoiesis.knowledge.condense import MemoryCondenser
    from autopoiesis.knowledge.extract import KnowledgeExtractor, list_transcripts

    with KnowledgeExtractor(repo, use_llm=False) as ex:
        ex.extract_pending()
    days = sorted({started.date() for started, _ in list_transcripts(repo)})
    with MemoryCondenser(repo, use_llm=False) as condenser:
        for day in days:
            condenser.daily_summary(day, commit=False)
        for monday in sorted({d - timedelta(days=d.weekday()) for d in days}):
            condenser.weekly_rollup(monday, commit=False)


def locomo_knowledge(
    data_path: Path, *, quick: bool = False, conversations: int | None = None
) -> dict[str, Any]:
    """Answer recall and size on LoCoMo: each conversation imported, extracted offline and
    condensed; category 1-4 questions with an answer. Figures summed over conversations."""
    from autopoiesis.eval.locomo import import_conversation

    data = json.loads(Path(data_path).read_text(encoding="utf-8"))
    if conversations is not None:
        data = data[:conversations]
    elif quick:
        data = data[:1]
    totals: dict[str, list[float]] = {"knowledge": [0, 0.0, 0.0], "raw": [0, 0.0, 0.0]}
    size = [0, 0, 0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-knowledge-") as tmp:
        for n, sample in enumerate(data):
            corpus = import_conversation(Path(tmp), n, sample["conversation"])
            extract_and_condense(corpus.repo)
            answers = [
                q["answer"]
                for q in sample["qa"]
                if q.get("category") in (1, 2, 3, 4) and "answer" in q
            ]
            for where, fig in knowledge_recall(corpus.repo, answers).items():
                t = totals[where]
                t[0] += fig.questions
                t[1] += fig.line * fig.questions
                t[2] += fig.words * fig.questions
            s = knowledge_size(corpus.repo)
            size = [
                size[0] + s.knowledge_bytes,
                size[1] + s.current_state_bytes,
                size[2] + s.raw_bytes,
            ]
    out: dict[str, Any] = {
        "conversations": len(data),
        "seconds": round(time.perf_counter() - started, 1),
    }
    for where, (q, line, share) in totals.items():
        out[where] = asdict(RecallFigures(int(q), line / q if q else 0.0, share / q if q else 0.0))
    total = KnowledgeSize(*size)
    out["size"] = {
        **asdict(total),
        "fraction": total.fraction,
        "current_state_fraction": total.current_state_fraction,
    }
    return out


__all__ = [
    "KnowledgeSize",
    "RecallFigures",
    "answer_words",
    "current_state_lines",
    "extract_and_condense",
    "knowledge_recall",
    "knowledge_size",
    "locomo_knowledge",
    "raw_turns",
    "recall_in",
]
