"""Watcher figures: tier 1 (pattern) and tiers 1+2 (pattern + similarity) per message,
with 10, 100 and 1,000 synthetic topics. Targets (issue): tier 1 <= 1 ms and tiers 1+2
<= 10 ms per message with 100 topics.

    python bench/bench_watch.py [--quick]
"""

from __future__ import annotations

import random
import statistics
import sys
import time

WORDS = """
deploy release rollback cluster kubernetes node email inbox invoice payment customer refund
review diff merge branch commit test coverage lint python javascript schema migration database
index query latency outage alert pager oncall incident budget forecast hiring interview design
figma api endpoint token auth login password rotate secret backup restore archive journal
meeting agenda notes travel flight hotel visa receipt expense tax contract lawyer invoice quote
shipping warehouse stock
""".split()


def make_topics(n: int, seed: int = 7):
    from autopoiesis.formats.topic import parse_topic

    rng = random.Random(seed)
    topics = []
    for i in range(n):
        kws = rng.sample(WORDS, 4)
        desc = " ".join(rng.sample(WORDS, 8))
        body = "\n".join("- " + " ".join(rng.sample(WORDS, 10)) for _ in range(6))
        text = (
            f"---\ntype: topic\ndescription: {desc}\ntriggers:\n"
            f"  - {{type: pattern, match: '\\b({kws[0]}|{kws[1]})(s|ed|ing)?\\b'}}\n"
            f"  - {{type: keyword, words: [{kws[2]}, {kws[3]}]}}\n"
            f"  - {{type: url, match: github_pull}}\n"
            f"priority: {rng.choice(['low', 'medium', 'high'])}\n---\n\n# Topic {i}\n\n## "
            f"Instructions\n{body}\n"
        )
        t, errors, _ = parse_topic(f"topics/t{i}.md", text)
        assert t is not None, errors
        topics.append(t)
    return topics


def make_messages(k: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    filler = (
        "the a we can you please and then it is for this to of on with about later today".split()
    )
    return [
        " ".join(
            rng.choice(WORDS if rng.random() < 0.25 else filler) for _ in range(rng.randint(8, 40))
        )
        for _ in range(k)
    ]


def _per_message_ms(fn, messages, repeat: int) -> float:
    best = []
    for _ in range(repeat):
        start = time.perf_counter()
        for m in messages:
            fn(m)
        best.append((time.perf_counter() - start) / len(messages) * 1000)
    return min(best)


def run(quick: bool = False) -> list[dict]:
    from autopoiesis.topics.pattern import PatternMatcher
    from autopoiesis.topics.similarity import SimilarityScorer

    messages = make_messages(100 if quick else 300)
    rows: list[dict] = []
    for n in (10, 100, 1000):
        topics = make_topics(n)
        t0 = time.perf_counter()
        matcher = PatternMatcher(topics)
        build_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        scorer = SimilarityScorer(topics)
        fit_ms = (time.perf_counter() - t0) * 1000

        def tier1(m: str, matcher=matcher) -> None:
            matcher.match(m)

        def tier12(m: str, matcher=matcher, scorer=scorer) -> None:
            cands = matcher.match(m)
            if cands:
                scorer.score(m, cands)

        t1 = _per_message_ms(tier1, messages, 3)
        t12 = _per_message_ms(tier12, messages, 3)
        cands = statistics.mean(len(matcher.match(m)) for m in messages)
        target1 = 1.0 if n == 100 else None
        target12 = 10.0 if n == 100 else None
        rows += [
            {
                "bench": "watch",
                "metric": f"tier1 per message, {n} topics",
                "value": round(t1, 4),
                "unit": "ms",
                "target": target1,
            },
            {
                "bench": "watch",
                "metric": f"tier1+2 per message, {n} topics",
                "value": round(t12, 4),
                "unit": "ms",
                "target": target12,
            },
            {
                "bench": "watch",
                "metric": f"tier-1 candidates per message, {n} topics",
                "value": round(cands, 2),
                "unit": "topics",
                "target": None,
            },
            {
                "bench": "watch",
                "metric": f"build rules (once), {n} topics",
                "value": round(build_ms, 1),
                "unit": "ms",
                "target": None,
            },
            {
                "bench": "watch",
                "metric": f"fit tier-2 vectors (once; cached on disk), {n} topics",
                "value": round(fit_ms, 1),
                "unit": "ms",
                "target": None,
            },
        ]
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'bench':<8} {'metric':<58} {'value':>10} {'unit':<7} target")
    for r in rows:
        target = "" if r["target"] is None else f"<= {r['target']}"
        ok = "" if r["target"] is None else ("  ok" if r["value"] <= r["target"] else "  MISSED")
        print(f"{r['bench']:<8} {r['metric']:<58} {r['value']:>10} {r['unit']:<7} {target}{ok}")


if __name__ == "__main__":
    print_table(run(quick="--quick" in sys.argv))
