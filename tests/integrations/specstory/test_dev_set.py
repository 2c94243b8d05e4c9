"""The coding development sets (bench/coding, the second one of other projects,
bench/coding-b, and the third of Claude Code sessions, bench/coding-c) hold what
bench_coding.py and its readers rely on: enough questions of each kind over their
projects, every evidence snippet copied verbatim from a session of its project, every
answer matched by its pattern, provenance for every project folder, and a data set within
its size."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
KINDS = {"lexical", "paraphrase", "temporal", "preference"}


class DevSet(NamedTuple):
    """What a set must hold: its folder, its questions (at least), of each kind, its
    sessions, its longest snippet, its megabytes (at most) and its projects."""

    folder: str
    n_questions: int
    n_kind: int
    n_sessions: int
    longest: int
    megabytes: int
    n_projects: int


# the second set is smaller, and its reader took snippets of up to 160 characters; the
# third is one project's Claude Code sessions
SETS = [
    DevSet("coding", 100, 15, 100, 120, 8, 3),
    DevSet("coding-b", 80, 12, 40, 160, 6, 3),
    DevSet("coding-c", 50, 7, 20, 160, 2, 1),
]
sets = pytest.mark.parametrize("spec", SETS, ids=[s.folder for s in SETS])


def _questions(folder: str) -> list[dict[str, object]]:
    path = BENCH / folder / "questions.jsonl"
    if not path.exists():
        pytest.skip(f"bench/{folder}/questions.jsonl is missing")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _sessions(folder: str, project: str) -> list[str]:
    history = BENCH / folder / "sessions" / project / ".specstory" / "history"
    return [p.read_text(encoding="utf-8") for p in sorted(history.glob("*.md"))]


@sets
def test_counts(spec: DevSet) -> None:
    folder = spec.folder
    questions = _questions(folder)
    kinds = Counter(q["kind"] for q in questions)
    assert len(questions) >= spec.n_questions and set(kinds) == KINDS
    assert min(kinds.values()) >= spec.n_kind, kinds
    assert len({q["project"] for q in questions}) >= spec.n_projects
    assert len({q["id"] for q in questions}) == len(questions)
    assert len(list((BENCH / folder / "sessions").rglob("*.md"))) >= spec.n_sessions


@pytest.mark.slow
@sets
def test_evidence_is_verbatim_and_answers_match(spec: DevSet) -> None:
    folder = spec.folder
    texts: dict[str, list[str]] = {}
    for q in _questions(folder):
        project = str(q["project"])
        texts.setdefault(project, _sessions(folder, project))
        assert re.search(str(q["answer_pattern"]), str(q["answer"]), re.IGNORECASE), q["id"]
        evidence = q["evidence"]
        assert isinstance(evidence, list) and evidence, q["id"]
        for snippet in evidence:
            assert 20 <= len(snippet) <= spec.longest, (q["id"], snippet)
            assert any(snippet in text for text in texts[project]), (q["id"], snippet)


@sets
def test_provenance_and_size(spec: DevSet) -> None:
    folder = spec.folder
    root = BENCH / folder
    if not (root / "PROVENANCE.md").exists():
        pytest.skip(f"bench/{folder} is missing")
    provenance = (root / "PROVENANCE.md").read_text(encoding="utf-8")
    for project in (root / "sessions").iterdir():
        assert f"| {project.name} | https://github.com/" in provenance, project.name
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert size <= spec.megabytes * 1000 * 1000, size
