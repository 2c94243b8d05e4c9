"""Synthetic memory repos for benchmarks: N knowledge files of about SIZE bytes each,
spread over the knowledge categories.

Words follow a Zipf distribution over a vocabulary of common words plus ~20,000
generated ones, as real notes do: a few words are everywhere, most are rare. (A corpus
drawn from a hundred words makes every query term match half the index, which no real
memory does, and would time the wrong thing.)"""

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
_SYLLABLES = (
    "ka lo mi ne ru ta sa vi do pe an or el ix um ber tal con dra fen gil hom jur kel mor".split()
)


def _vocabulary(size: int = 20_000, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    words = list(WORDS)
    seen = set(words)
    while len(words) < size:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


VOCABULARY = _vocabulary()
# Zipf weights (s = 1): the i-th word is 1/i as frequent as the first
_CUM_WEIGHTS = []
_total = 0.0
for _i in range(len(VOCABULARY)):
    _total += 1.0 / (_i + 1)
    _CUM_WEIGHTS.append(_total)


def zipf_words(rng: random.Random, k: int) -> list[str]:
    return rng.choices(VOCABULARY, cum_weights=_CUM_WEIGHTS, k=k)


def queries(n: int = 100, words: int = 3, seed: int = 5) -> list[str]:
    """N queries of WORDS words drawn from the corpus's Zipf distribution: a few common
    words and rarer ones, as the peers were measured with (issue 14)."""
    rng = random.Random(seed)
    return [" ".join(zipf_words(rng, words)) for _ in range(n)]


def knowledge_text(rng: random.Random, i: int, size: int) -> str:
    topic = zipf_words(rng, 1) + rng.sample(
        VOCABULARY[100:], 2
    )  # each note has its own rarer subject words
    lines = [
        "---",
        "type: reference",
        f"updated: 2026-0{1 + i % 9}-1{i % 10}T10:00:00Z",
        f"tags: [{topic[0]}, {topic[1]}]",
        "---",
        "",
        f"# {topic[0].title()} {topic[1]} note {i}",
        "",
    ]
    body = 0
    section = 0
    while body < size:
        if body // 300 > section:
            section += 1
            lines += ["", f"## {zipf_words(rng, 1)[0].title()} {section}", ""]
        n = rng.randint(6, 14)
        sentence = " ".join(
            rng.choice(topic) if rng.random() < 0.3 else w for w in zipf_words(rng, n)
        )
        line = f"- 2026-02-{1 + i % 28:02d}: {sentence.capitalize()} (item {i}-{body})."
        lines.append(line)
        body += len(line) + 1
    return "\n".join(lines) + "\n"


def make_corpus(
    root: Path, n_files: int, size: int = 1024, seed: int = 7, commit: bool = True
) -> list[str]:
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
        subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "commit", "-qm", f"bench: {n_files} files"],
            cwd=root,
            check=True,
        )
    return rels
