"""`autopoiesis eval` on small real memory repos (transcripts written by the format's
renderer, knowledge files, commits through the hooks, a real search index): a JSONL and
a LoCoMo question set, a branch and a tag read without touching the checkout, and
`replay --compare` showing both sides."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autopoiesis.cli import app
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import QuestionSetError
from autopoiesis.eval.evaluate import evaluate, load_questions
from autopoiesis.formats import transcript as tf
from autopoiesis.testing.samples import closed_transcript

POOL_OLD = (
    "- ~~2026-02-01: The pooler is PgBouncer in transaction mode (source: raw/a.md @ 2026-02-01T09:00Z)~~ "
    "{id: 20260201-0900-aaaaaa} #superseded-by:20260210-0900-bbbbbb"
)
POOL_NEW = "- 2026-02-10: The pooler is HikariCP (source: raw/b.md @ 2026-02-10T09:00Z) {id: 20260210-0900-bbbbbb}"
SESSIONS = {
    "ses_e1": (
        "2026-02-10T09:00:00Z",
        [
            ("user", "Lena", "Quick note: Lena's birthday is on March 14, put it in the calendar."),
            ("agent", None, "Added to the calendar."),
            ("user", "Lena", "And the office door is painted teal now, in case someone asks."),
            ("agent", None, "Teal, noted."),
        ],
    ),
    "ses_e2": (
        "2026-02-12T15:30:00Z",
        [
            ("user", None, "What did the vet say about the cat?"),
            ("agent", None, "The vet said the cat needs a lighter diet and more play."),
            ("user", None, "Right. We moved the cutover to June 17."),
            ("agent", None, "Cutover on June 17, understood."),
        ],
    ),
}


def _write_session(repo: MemoryRepo, sid: str, started: str, turns: list) -> str:
    from datetime import timedelta

    from autopoiesis.core.clock import format_ts, parse_ts

    t0 = parse_ts(started)
    timed = [
        (format_ts(t0 + timedelta(minutes=k)), role, name, text)
        for k, (role, name, text) in enumerate(turns)
    ]
    rel = tf.transcript_relpath(sid, t0, sid)
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        closed_transcript(sid, sid, timed, started=started, ended=timed[-1][0]), encoding="utf-8"
    )
    return rel


@pytest.fixture
def repo(memory_repo: MemoryRepo, commit_all) -> MemoryRepo:
    for sid, (started, turns) in SESSIONS.items():
        _write_session(memory_repo, sid, started, turns)
    k = memory_repo.knowledge_dir
    (k / "reference" / "database.md").write_text(
        f"# Database\n\n## Pooling\n{POOL_OLD}\n{POOL_NEW}\n", encoding="utf-8"
    )
    (k / "people" / "lena.md").write_text("# Lena\n\n- Birthday: March 14\n", encoding="utf-8")
    (k / "projects" / "billing").mkdir(parents=True)
    (k / "projects" / "billing" / "context.md").write_text(
        "# Billing\n\n## Key Decisions\n- The cutover is planned for June 3.\n", encoding="utf-8"
    )
    commit_all(memory_repo, "memory: sample knowledge")
    return memory_repo


def _questions(tmp_path: Path) -> Path:
    rows = [
        {
            "question": "Which connection pooler do we use?",
            "answer": "HikariCP",
            "evidence": ["knowledge/reference/database.md:5"],
            "stale": ["The pooler is PgBouncer in transaction mode"],
        },
        {
            "question": "When is Lena's birthday?",
            "answer": "March 14",
            "evidence": ["Lena's birthday is on March 14"],
        },
        {
            "question": "What colour is the office door?",
            "answer": "teal",
            "evidence": ["the office door is painted TEAL now"],
        },
        {"question": "Who brought cake?", "answer": "nobody said"},
        {"stale": ["the cutover is planned for June 3"]},
    ]
    f = tmp_path / "questions.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return f


@pytest.mark.slow
def test_jsonl_question_set_on_a_small_repo(repo: MemoryRepo, tmp_path: Path) -> None:
    r = evaluate(repo, load_questions(_questions(tmp_path)), budgets=(100, 2048, 8192))
    assert r.asked == 4
    assert r.with_evidence == 3
    scores = {b.budget: b for b in r.budgets}
    assert (
        scores[100].compiled is None and "never dropped" in scores[100].note
    )  # smaller than the system prompt (the template's identity files may be left out)
    assert scores[8192].compiled == 1.0
    assert scores[2048].compiled == 1.0
    # the BM25 baseline packs transcript turns only: the knowledge line is out of its reach
    assert scores[8192].bm25_packed == pytest.approx(2 / 3)
    assert 0 < scores[2048].compiled_tokens <= 2048
    # answers: HikariCP and March 14 are in current-state files, teal and "nobody said" are not
    assert r.with_answer == 4
    assert r.answer_line == pytest.approx(2 / 4)
    assert r.answer_words == pytest.approx((1 + 1 + 0 + 0) / 4)
    assert r.raw_answer_line == pytest.approx(2 / 4)  # "HikariCP" was never said in a transcript
    assert r.raw_answer_words is not None and r.raw_answer_words >= 0.5
    # the superseded pooler is history; the cutover date is still live although marked stale
    assert r.stale_marked == 2
    assert r.stale_live == ["the cutover is planned for June 3"]
    assert r.raw_bytes > 0
    assert r.knowledge_bytes > 0
    assert r.knowledge_ratio == pytest.approx(r.knowledge_bytes / r.raw_bytes)
    assert r.current_state_bytes <= r.knowledge_bytes


def test_evidence_is_found_by_line_and_by_text(repo: MemoryRepo, tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text(
        json.dumps(
            {"question": "zzz qqq", "evidence": ["the vet said the cat needs a lighter diet"]}
        )
        + "\n"
        + json.dumps(
            {
                "question": "What did the vet say about the cat?",
                "evidence": ["knowledge/reference/database.md:5"],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    r = evaluate(repo, load_questions(f), budgets=(8192,))
    # nothing matches the first question: neither the compiler nor BM25 finds its turn;
    # the second one's evidence is a line the question does not lead to
    assert r.budgets[0].compiled == 0.0
    assert r.budgets[0].bm25_packed == 0.0
    f.write_text(
        json.dumps(
            {
                "question": "What did the vet say about the cat?",
                "evidence": ["The vet said the cat needs a lighter diet and more play."],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    r = evaluate(repo, load_questions(f), budgets=(8192,))
    assert r.budgets[0].compiled == 1.0
    assert r.budgets[0].bm25_packed == 1.0


@pytest.mark.slow
def test_a_branch_and_a_tag_are_read_without_touching_the_checkout(
    repo: MemoryRepo, tmp_path: Path, git
) -> None:
    git(repo, "checkout", "-q", "-b", "extract/v2")
    door = repo.knowledge_dir / "reference" / "office.md"
    door.write_text("# Office\n\n- The office door is teal.\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memory: office door")
    git(repo, "tag", "memory/extract/v2")
    git(repo, "checkout", "-q", "main")
    dirty = repo.knowledge_dir / "people" / "lena.md"
    dirty.write_text(dirty.read_text() + "- Likes tea\n", encoding="utf-8")  # an uncommitted edit
    before = (
        git(repo, "status", "--porcelain").stdout,
        dirty.read_text(),
        git(repo, "rev-parse", "HEAD").stdout,
    )
    qs = load_questions(_questions(tmp_path))
    here = evaluate(repo, qs, budgets=(2048,))
    branch = evaluate(repo, qs, ref="extract/v2", budgets=(2048,))
    tag = evaluate(repo, qs, ref="memory/extract/v2", budgets=(2048,))
    assert here.answer_line == pytest.approx(2 / 4)
    assert branch.answer_line == tag.answer_line == pytest.approx(3 / 4)
    assert branch.target.startswith("extract/v2 (")
    assert branch.knowledge_bytes > here.knowledge_bytes - len("- Likes tea\n")
    after = (
        git(repo, "status", "--porcelain").stdout,
        dirty.read_text(),
        git(repo, "rev-parse", "HEAD").stdout,
    )
    assert after == before
    assert git(repo, "branch", "--show-current").stdout.strip() == "main"
    assert (
        len(git(repo, "worktree", "list").stdout.strip().splitlines()) == 1
    )  # the eval's worktree is gone
    with pytest.raises(Exception, match="not a branch, tag or commit"):
        evaluate(repo, qs, ref="no-such-branch")


@pytest.mark.slow
def test_replay_compare_shows_both_sides(repo: MemoryRepo, tmp_path: Path, git) -> None:
    git(repo, "checkout", "-q", "-b", "extract/v2")
    (repo.knowledge_dir / "reference" / "office.md").write_text(
        "# Office\n\n- The office door is teal.\n", encoding="utf-8"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memory: office door")
    git(repo, "checkout", "-q", "main")
    out = CliRunner().invoke(
        app,
        [
            "-C",
            str(repo.root),
            "replay",
            "--compare",
            "main",
            "extract/v2",
            "--questions",
            str(_questions(tmp_path)),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "git diff main..extract/v2 --stat" in out.output
    header = next(
        line for line in out.output.splitlines() if "main (" in line and "extract/v2 (" in line
    )
    assert header.index("main (") < header.index("extract/v2 (")
    recall = next(
        line for line in out.output.splitlines() if line.startswith("answer recall in knowledge/")
    )
    assert "0.500 in one line" in recall and "0.750 in one line" in recall
    assert recall.index("0.500") < recall.index("0.750")
    assert "stale facts still live" in out.output
    sizes = CliRunner().invoke(
        app, ["-C", str(repo.root), "replay", "--compare", "main", "extract/v2"]
    )
    assert sizes.exit_code == 0
    assert "knowledge size" in sizes.output
    assert "--questions" in sizes.output


def _small_locomo(shared_data: Path, tmp_path: Path) -> tuple[Path, dict]:
    """Two conversations of LoCoMo cut to their first sessions, with the questions whose
    evidence lies in them."""
    from autopoiesis.eval.locomo import normalise_evidence

    data = json.loads((shared_data / "locomo" / "locomo-dev.json").read_text(encoding="utf-8"))
    out = []
    for sample, keep in ((data[1], 2), (data[0], 3)):
        conv = {
            k: v
            for k, v in sample["conversation"].items()
            if not k.startswith("session_") or int(k.split("_")[1]) <= keep
        }
        qa = [
            q
            for q in sample["qa"]
            if q.get("evidence")
            and all(s <= keep for s, _ in normalise_evidence(q["evidence"]))
            and normalise_evidence(q["evidence"])
        ]
        out.append({"conversation": conv, "qa": qa})
    f = tmp_path / "locomo-small.json"
    f.write_text(json.dumps(out), encoding="utf-8")
    return f, out[1]


@pytest.mark.slow
def test_locomo_question_set(shared_data: Path, tmp_path: Path) -> None:
    from autopoiesis.eval.locomo import import_conversation

    f, sample = _small_locomo(shared_data, tmp_path)
    corpus = import_conversation(tmp_path, 0, sample["conversation"])
    qs = load_questions(f)
    assert qs.kind == "locomo"
    r = evaluate(corpus.repo, qs, budgets=(2048, 8192))
    assert "(sample 1, found in the transcripts)" in r.questions  # the conversation this repo holds
    expected = [q for q in sample["qa"] if q["category"] in (1, 2, 3, 4)]
    assert r.asked == len(expected) >= 10
    assert r.with_evidence == r.asked
    low, high = r.budgets
    assert high.compiled == 1.0  # three sessions fit in 8K: every evidence turn is there
    assert low.compiled is not None and low.bm25_packed is not None
    assert low.compiled >= low.bm25_packed
    # the answer, from its content words (or a date's ISO form), in the same contexts
    assert r.with_pattern >= r.asked - 2  # a few answers are stopwords only
    # measured 0.65 at 8K with every evidence turn there: an answer the annotator inferred
    # ("the week before 9 June" for "last week") is in no context as such
    assert high.answer_compiled is not None and 0.5 <= high.answer_compiled < 1.0
    assert low.answer_compiled is not None and low.answer_compiled <= high.answer_compiled
    assert low.answer_bm25_packed is not None
    kinds = {g.value for g in r.breakdown if g.by == "kind"}
    assert kinds and kinds <= {"multi-hop", "temporal", "open-domain", "single-hop"}
    assert not any(g.by == "project" for g in r.breakdown)
    assert r.answer_line is not None and r.answer_line < 0.2  # nothing was extracted yet
    assert r.raw_answer_words is not None and r.raw_answer_words > 0.5
    with pytest.raises(QuestionSetError, match="samples 0 to 1"):
        evaluate(corpus.repo, qs, sample=5)
    other = tmp_path / "other.json"
    other.write_text(json.dumps([json.loads(f.read_text())[0]] * 2), encoding="utf-8")
    with pytest.raises(QuestionSetError, match="none of the 2 conversations"):
        evaluate(corpus.repo, load_questions(other))


@pytest.mark.slow
def test_cli_eval_json_and_clear_errors(repo: MemoryRepo, tmp_path: Path) -> None:
    runner = CliRunner()
    root = str(repo.root)
    out = runner.invoke(
        app, ["-C", root, "eval", str(_questions(tmp_path)), "--json", "--budget", "4096"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert [b["budget"] for b in data["budgets"]] == [4096]
    assert data["budgets"][0]["compiled"] == 1.0
    assert {
        "answer_line",
        "answer_words",
        "knowledge_bytes",
        "raw_bytes",
        "knowledge_ratio",
        "stale_live",
    } <= set(data)
    text = runner.invoke(app, ["-C", root, "eval", str(_questions(tmp_path)), "--budget", "4096"])
    assert "evidence in context, 4096 tokens" in text.output
    bad = tmp_path / "bad.jsonl"
    for content, message in (
        (b'{"question": "ok"}\nnot json\n', "bad.jsonl:2"),
        (b'{"question": 5}\n', "non-empty string"),
        (b'{"question": "q", "evidence": "x", "stale": [1]}\n', "stale must be a list of strings"),
        (b"\xff\xfe", "cannot read"),
        (b"[1, 2]", "not LoCoMo"),
        (b"", "no questions"),
    ):
        bad.write_bytes(content)
        res = runner.invoke(app, ["-C", root, "eval", str(bad)])
        assert res.exit_code != 0
        assert isinstance(res.exception, (SystemExit, QuestionSetError))
        with pytest.raises(QuestionSetError, match=message):
            load_questions(bad)
    missing = runner.invoke(app, ["-C", root, "eval", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code != 0


def test_a_question_set_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A question set Notepad or PowerShell saved starts with a byte order mark: its first
    line was refused ("Unexpected UTF-8 BOM"), and a LoCoMo file was not taken for JSON."""
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_text('\ufeff{"question": "Which tool?", "answer": "uv"}\n', encoding="utf-8")
    qs = load_questions(jsonl)
    assert [q.question for group in qs.groups for q in group] == ["Which tool?"]
    locomo = tmp_path / "bom.json"
    locomo.write_text("\ufeff" + json.dumps([{"conversation": {}, "qa": []}]), encoding="utf-8")
    assert load_questions(locomo).kind == "locomo"


def test_sample_on_a_jsonl_question_set_says_it_is_for_locomo(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`eval FILE.jsonl --sample 3` said "FILE has samples 0 to 0", a count for what is
    no LoCoMo file at all. It now says --sample is for LoCoMo's JSON only."""
    f = tmp_path / "q.jsonl"
    f.write_text('{"question": "Which tool?", "answer": "uv"}\n', encoding="utf-8")
    with pytest.raises(QuestionSetError) as refused:
        evaluate(memory_repo, load_questions(f), sample=3)
    assert str(refused.value) == (
        f"--sample 3: --sample picks one of the conversations of LoCoMo's JSON, and {f} is a "
        "JSONL question set (one set of questions); leave --sample out."
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_utf16_question_set_is_told_to_be_saved_as_utf8(tmp_path: Path, encoding: str) -> None:
    """A question set saved as UTF-16 (PowerShell's `>`, Notepad's "Unicode") was refused
    as "not UTF-8 text (byte 0)", or, with no byte order mark, as a line that is "not a
    JSON object": nothing said what to do. It now says to save it as UTF-8."""
    f = tmp_path / "q.jsonl"
    f.write_text('{"question": "Which tool?", "answer": "uv"}\n', encoding=encoding)
    with pytest.raises(QuestionSetError) as refused:
        load_questions(f)
    assert str(refused.value) == (
        f"cannot read the question set {f}: UTF-16 text, and a question set is read as UTF-8: "
        "save it as UTF-8 (in Notepad: Save As, Encoding UTF-8; in PowerShell: `Out-File "
        "-Encoding utf8`)."
    )
    f.write_bytes(b'{"question": "caf\xe9"}\n')  # Latin-1
    with pytest.raises(QuestionSetError, match=r"not UTF-8 text \(byte 17\); save it as UTF-8"):
        load_questions(f)


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("deep.json", "[" * 5000, "deep.json: not valid JSON (nested deeper than can be read)"),
        ("deep.jsonl", '{"a": ' + "[" * 5000, "deep.jsonl:1: not a JSON object (nested deeper"),
    ],
)
def test_a_question_set_nested_past_reading_is_refused_with_a_reason(
    tmp_path: Path, name: str, text: str, said: str
) -> None:
    """A question file of 5,000 opening brackets: `eval` ended in Python's RecursionError
    traceback. It is refused as JSON that cannot be read, as any other bad JSON."""
    path = tmp_path / name
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(QuestionSetError, match=re.escape(said)):
        load_questions(path)
