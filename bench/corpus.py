"""Synthetic memory repos for benchmarks: N knowledge files of about SIZE bytes each,
spread over the knowledge categories, with vocabulary that varies by file."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

WORDS = (
    "deploy rollback database migration schema index query latency cache review merge branch "
    "release version budget invoice customer meeting agenda decision lesson procedure incident "
    "postgres sqlite redis kafka python typescript rust docker kubernetes terraform grafana alert "
    "memory journal project person reference topic email calendar travel flight hotel dinner "
    "garden recipe running marathon piano guitar painting photography camera lens museum novel"
).split()
CATEGORIES = ("projects", "people", "procedures", "reference", "journal")


def knowledge_text(rng: random.Random, i: int, size: int) -> str:
    topic = rng.sample(WORDS, 3)
    lines = [
        "---", f"type: reference", f"updated: 2026-0{1 + i % 9}-1{i % 10}T10:00:00Z", f"tags: [{topic[0]}, {topic[1]}]", "---", "",
        f"# {topic[0].title()} {topic[1]} note {i}", "",
    ]
    body = 0
    section = 0
    while body < size:
        if body // 300 > section:
            section += 1
            lines += ["", f"## {rng.choice(WORDS).title()} {section}", ""]
        sentence = " ".join(rng.choice(topic if rng.random() < 0.3 else WORDS) for _ in range(rng.randint(6, 14)))
        line = f"- 2026-02-{1 + i % 28:02d}: {sentence.capitalize()} (item {i}-{body})."
        lines.append(line)
        body += len(line) + 1
    return "\n".join(lines) + "\n"


def make_corpus(root: Path, n_files: int, size: int = 1024, seed: int = 7, commit: bool = True) -> list[str]:
    """Write N_FILES knowledge files under ROOT/knowledge/ (an initialised memory repo) and
    commit them (hooks off: this is set-up, not the thing measured)."""
    rng = random.Random(seed)
    rels = []
    for i in range(n_files):
        cat = CATEGORIES[i % len(CATEGORIES)]
        rel = f"knowledge/{cat}/bench/{i // 500:03d}/note-{i:05d}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(knowledge_text(rng, i, size), encoding="utf-8")
        rels.append(rel)
    if commit:
        subprocess.run(["git", "add", "-A", "knowledge"], cwd=root, check=True)
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "commit", "-qm", f"bench: {n_files} files"], cwd=root, check=True)
    return rels
