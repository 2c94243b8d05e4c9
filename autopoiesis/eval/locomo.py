"""LoCoMo (snap-research/LoCoMo) as a retrieval evaluation: read its conversations and
annotated questions, import each conversation into a memory repo through the real import
path, and score search against the evidence turns, beside a plain FTS5 BM25 baseline
computed in the same run.

Each conversation goes into its own memory repo through `import_files` (neutral JSON:
one session object per LoCoMo session, the session's real date, speaker_a as user and
speaker_b as agent with their names, turns a minute apart). Every category 1-4 question
is asked through `SearchIndex.search`; the figures are session recall@5, recall@10, MRR
(a hit when a result's transcript is an evidence session) and turn-level hit@10 (an
evidence turn's lines inside a returned chunk). The baseline is FTS5 with the porter
tokenizer, an OR of the question's non-stopword terms, one document per session (and one
per turn for the turn figure).

Used by bench/bench_locomo.py and the retrieval test; it lives in the library so that
neither imports the other.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


def parse_locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(items: list[str]) -> list[tuple[int, int]]:
    """Evidence ids as (session, turn); accepts 'D8:6; D9:17', 'D:11:26', 'D30:05'."""
    out = []
    for item in items:
        for part in re.split(r"[;\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if m:
                out.append((int(m.group(1)), int(m.group(2))))
    return out


def turn_text(turn: dict[str, Any]) -> str:
    text = turn.get("text", "")
    if turn.get("blip_caption"):
        text += f" [shares a photo of {turn['blip_caption'].removeprefix('a photo of ')}]"
    return text


def sessions_of(conv: dict[str, Any]) -> list[int]:
    return sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k) and conv[k])


def neutral_sessions(conv_no: int, conv: dict[str, Any]) -> list[dict[str, Any]]:
    roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "agent"}
    out = []
    for n in sessions_of(conv):
        start = parse_locomo_date(conv[f"session_{n}_date_time"])
        msgs = []
        for i, t in enumerate(conv[f"session_{n}"]):
            msgs.append(
                {
                    "role": roles.get(t["speaker"], "user"),
                    "name": t["speaker"],
                    "content": turn_text(t),
                    "timestamp": (start + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
        out.append(
            {
                "session_id": f"locomo{conv_no}_s{n}",
                "started": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "messages": msgs,
            }
        )
    return out


@dataclass
class Corpus:
    """One conversation imported into a memory repo, with dia_id -> (path, lines)."""

    repo: Any
    session_path: dict[int, str] = field(default_factory=dict)
    turn_lines: dict[tuple[int, int], tuple[str, int, int]] = field(default_factory=dict)


def import_conversation(root: Path, conv_no: int, conv: dict[str, Any]) -> Corpus:
    from autopoiesis.capture.importers import import_files
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.formats.transcript import HEADER_RE
    from autopoiesis.memory.initialize import init_memory_repo

    repo = MemoryRepo(init_memory_repo(root / f"conv{conv_no}", build_index=False).root)
    src = root / f"json{conv_no}"
    src.mkdir()
    files = []
    for s in neutral_sessions(conv_no, conv):
        p = src / f"{s['session_id']}.json"
        p.write_text(json.dumps(s), encoding="utf-8")
        files.append(p)
    report = import_files(repo, files, "neutral")
    if report.refused:
        raise RuntimeError(f"import refused: {report.refused[:3]}")
    corpus = Corpus(repo)
    for rel in report.imported:
        found = re.search(r"locomo\d+_s(\d+)", rel)
        if found is None:
            raise RuntimeError(f"unexpected transcript name {rel}")
        n = int(found.group(1))
        corpus.session_path[n] = rel
        lines = (repo.root / rel).read_text(encoding="utf-8").split("\n")
        headers = [i + 1 for i, line in enumerate(lines) if HEADER_RE.match(line)]
        dia = [int(t["dia_id"].split(":")[1]) for t in conv[f"session_{n}"]]
        for k, start in enumerate(headers):
            end = (headers[k + 1] - 2) if k + 1 < len(headers) else len(lines)
            corpus.turn_lines[(n, dia[k])] = (rel, start, end)
    return corpus


def questions(sample: dict[str, Any]) -> list[tuple[str, list[tuple[int, int]]]]:
    out = []
    for q in sample["qa"]:
        if q.get("category") in (1, 2, 3, 4):
            ev = normalise_evidence(q.get("evidence") or [])
            if ev:
                out.append((q["question"], ev))
    return out


class _Scores:
    def __init__(self) -> None:
        self.n = 0
        self.r5 = self.r10 = self.mrr = self.turn = 0.0

    def add(self, ranked_sessions: list[int], evidence_sessions: set[int], turn_hit: bool) -> None:
        self.n += 1
        self.r5 += any(s in evidence_sessions for s in ranked_sessions[:5])
        self.r10 += any(s in evidence_sessions for s in ranked_sessions[:10])
        rr = next(
            (1.0 / (i + 1) for i, s in enumerate(ranked_sessions[:10]) if s in evidence_sessions),
            0.0,
        )
        self.mrr += rr
        self.turn += turn_hit

    def figures(self) -> dict[str, float]:
        n = self.n or 1
        return {
            "session_recall@5": self.r5 / n,
            "session_recall@10": self.r10 / n,
            "mrr": self.mrr / n,
            "turn_hit@10": self.turn / n,
        }


def baseline(
    conv: dict[str, Any], qs: list[tuple[str, list[tuple[int, int]]]], scores: _Scores
) -> None:
    """Plain FTS5 BM25: porter, OR of non-stopword terms; documents = sessions / turns."""
    import sqlite3

    from autopoiesis.index.text import fts_match, query_terms

    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE s USING fts5(body, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    turn_ids: dict[int, tuple[int, int]] = {}
    for n in sessions_of(conv):
        turns = conv[f"session_{n}"]
        db.execute(
            "INSERT INTO s(rowid, body) VALUES (?, ?)",
            (n, "\n".join(f"{t['speaker']}: {turn_text(t)}" for t in turns)),
        )
        for t in turns:
            rid = len(turn_ids) + 1
            turn_ids[rid] = (n, int(t["dia_id"].split(":")[1]))
            db.execute(
                "INSERT INTO t(rowid, body) VALUES (?, ?)", (rid, f"{t['speaker']}: {turn_text(t)}")
            )
    for q, ev in qs:
        match = fts_match(query_terms(q))
        sess = (
            [
                r[0]
                for r in db.execute(
                    "SELECT rowid FROM s WHERE s MATCH ? ORDER BY rank LIMIT 10", (match,)
                )
            ]
            if match
            else []
        )
        turns = (
            [
                turn_ids[r[0]]
                for r in db.execute(
                    "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT 10", (match,)
                )
            ]
            if match
            else []
        )
        scores.add(sess, {s for s, _ in ev}, any(x in set(ev) for x in turns))


def evaluate(
    data_path: Path,
    merge: str | None = None,
    quick: bool = False,
    conversations: int | None = None,
    embedder: Any = None,
) -> dict[str, Any]:
    """Retrieval figures of the conversations in DATA_PATH (LoCoMo JSON), ours beside the
    plain FTS5 BM25 baseline computed in the same run."""
    from autopoiesis.index import SearchIndex

    data = json.loads(Path(data_path).read_text(encoding="utf-8"))
    if conversations is not None:
        data = data[:conversations]
    ours, base = _Scores(), _Scores()
    latencies: list[float] = []
    build_s = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-locomo-") as tmp:
        for conv_no, sample in enumerate(data):
            conv = sample["conversation"]
            qs = questions(sample)
            if quick:
                qs = qs[::3]
            corpus = import_conversation(Path(tmp), conv_no, conv)
            path_session = {p: n for n, p in corpus.session_path.items()}
            t0 = time.perf_counter()
            with SearchIndex(corpus.repo, embedder=embedder) as index:
                index.catch_up()
                build_s += time.perf_counter() - t0
                for q, ev in qs:
                    t1 = time.perf_counter()
                    results = index.search(q, limit=10, merge=merge, fresh=False)
                    latencies.append(time.perf_counter() - t1)
                    ranked = [path_session.get(r.path, -1) for r in results]
                    ev_lines = [corpus.turn_lines[e] for e in ev if e in corpus.turn_lines]
                    hit = any(
                        r.path == p
                        and r.start_line <= s
                        and e <= r.end_line + 1
                        and s <= r.end_line
                        for r in results
                        for p, s, e in ev_lines
                    )
                    ours.add(ranked, {s for s, _ in ev}, hit)
            baseline(conv, qs, base)
    latencies.sort()
    return {
        "ours": ours.figures(),
        "baseline": base.figures(),
        "questions": ours.n,
        "search_p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else 0.0,
        "index_s": build_s,
    }
