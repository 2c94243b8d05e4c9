"""The coding development set (bench/coding) holds what bench_coding.py and its readers
rely on: enough questions of each kind over several projects, every evidence snippet
copied verbatim from a session of its project, every answer matched by its pattern,
provenance for every project folder, and a data set under 8 MB."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

CODING = Path(__file__).resolve().parents[3] / "bench" / "coding"
KINDS = {"lexical", "paraphrase", "temporal", "preference"}


@pytest.fixture(scope="module")
def questions() -> list[dict[str, object]]:
    path = CODING / "questions.jsonl"
    if not path.exists():
        pytest.skip("bench/coding/questions.jsonl is missing")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _sessions(project: str) -> list[str]:
    history = CODING / "sessions" / project / ".specstory" / "history"
    return [p.read_text(encoding="utf-8") for p in sorted(history.glob("*.md"))]


def test_counts(questions: list[dict[str, object]]) -> None:
    kinds = Counter(q["kind"] for q in questions)
    assert len(questions) >= 100 and set(kinds) == KINDS
    assert min(kinds.values()) >= 15, kinds
    assert len({q["project"] for q in questions}) >= 3
    assert len({q["id"] for q in questions}) == len(questions)
    assert len(list((CODING / "sessions").rglob("*.md"))) >= 100


@pytest.mark.slow
def test_evidence_is_verbatim_and_answers_match(questions: list[dict[str, object]]) -> None:
    texts: dict[str, list[str]] = {}
    for q in questions:
        project = str(q["project"])
        texts.setdefault(project, _sessions(project))
        assert re.search(str(q["answer_pattern"]), str(q["answer"]), re.IGNORECASE), q["id"]
        evidence = q["evidence"]
        assert isinstance(evidence, list) and evidence, q["id"]
        for snippet in evidence:
            assert 20 <= len(snippet) <= 120, (q["id"], snippet)
            assert any(snippet in text for text in texts[project]), (q["id"], snippet)


def test_provenance_and_size() -> None:
    provenance = (CODING / "PROVENANCE.md").read_text(encoding="utf-8")
    for folder in (CODING / "sessions").iterdir():
        assert f"| {folder.name} | https://github.com/" in provenance, folder.name
    size = sum(p.stat().st_size for p in CODING.rglob("*") if p.is_file())
    assert size <= 8 * 1000 * 1000, size
