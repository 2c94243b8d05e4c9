"""`autopoiesis eval`'s answer in context, the knowledge line that carries the evidence,
and the breakdown per kind and per project, on a small real memory repo (transcripts
written by the format's renderer, a knowledge file, commits through the hooks, a real
search index), with figures computed by hand; and the question set's new fields."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autopoiesis.cli import app
from autopoiesis.compiler.plan import Section
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import QuestionSetError
from autopoiesis.eval.context import (
    ContextView,
    LineCache,
    compiled_view,
    evidence_held,
    norm,
    resolve,
    transcript_turns,
)
from autopoiesis.eval.evaluate import evaluate
from autopoiesis.eval.questions import answer_pattern_of, load_questions
from autopoiesis.eval.report import format_report
from tests.eval.test_evaluate import _write_session

TURNS = [
    ("user", None, "We picked HikariCP for the connection pool after the load test."),
    ("agent", None, "Noted."),
    ("user", None, "Oh, and we moved it to Frankfurt on Monday."),
    ("agent", None, "Understood."),
    ("user", None, "The invoice cutover moved to June 17."),
    ("agent", None, "Cutover on June 17, noted."),
]
# cites the third turn (09:02) of ses_a1 in other words than the turn's
REGION = (
    "- 2026-03-02: The staging database is hosted in eu-central (via ses_a1) "
    "{id: 20260302-0902-abc123}"
)


@pytest.fixture
def repo(memory_repo: MemoryRepo, commit_all) -> MemoryRepo:
    _write_session(memory_repo, "ses_a1", "2026-03-02T09:00:00Z", TURNS)
    ctx = memory_repo.knowledge_dir / "projects" / "billing"
    ctx.mkdir(parents=True)
    (ctx / "context.md").write_text(f"# Billing\n\n## Infrastructure\n{REGION}\n", encoding="utf-8")
    commit_all(memory_repo, "memory: a session and the billing context")
    return memory_repo


ROWS = [
    {  # the answer is in the context, in other words than the evidence
        "id": "q1",
        "question": "Which connection pool library did we pick?",
        "answer_pattern": "hikari",
        "evidence": ["we settled on Hikari for pooling"],
        "kind": "lexical",
        "project": "infra",
    },
    {  # only a knowledge line carries the evidence; the answer derived from `answer`
        "id": "q2",
        "question": "Where is the staging database hosted?",
        "answer": "eu-central",
        "evidence": ["staging database eu-central"],
        "kind": "paraphrase",
        "project": "billing",
    },
    {  # a pattern that matches nothing
        "id": "q3",
        "question": "Which connection pool library did we pick?",
        "answer_pattern": r"zebra crossing \d+",
        "kind": "lexical",
        "project": "billing",
    },
    {  # evidence, no answer: left out of the answer figure
        "id": "q4",
        "question": "When is the invoice cutover?",
        "evidence": ["The invoice cutover moved to June 17."],
        "kind": "temporal",
    },
]


def _write(tmp_path: Path, rows: list, name: str = "q.jsonl") -> Path:
    f = tmp_path / name
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return f


@pytest.mark.slow
def test_answer_and_evidence_in_context_by_kind_and_project(
    repo: MemoryRepo, tmp_path: Path
) -> None:
    r = evaluate(repo, load_questions(_write(tmp_path, ROWS)), budgets=(8192,))
    assert (r.asked, r.with_evidence, r.with_pattern) == (4, 3, 3)
    by_id = {s.id: s for s in r.scores}
    # evidence: q1's text is nowhere; q2's only in the knowledge line; q4's turn is found
    assert [by_id[q].evidence[8192] for q in ("q1", "q2", "q4")] == [
        {"compiled": False, "bm25_packed": False},
        {"compiled": True, "bm25_packed": False},
        {"compiled": True, "bm25_packed": True},
    ]
    assert by_id["q3"].evidence[8192] == {"compiled": None, "bm25_packed": None}
    # answer: HikariCP is in the turn both contexts hold; eu-central only in the knowledge
    # line; the zebra nowhere; q4 has none to score
    assert [by_id[q].answer[8192] for q in ("q1", "q2", "q3", "q4")] == [
        {"compiled": True, "bm25_packed": True},
        {"compiled": True, "bm25_packed": False},
        {"compiled": False, "bm25_packed": False},
        {"compiled": None, "bm25_packed": None},
    ]
    (b,) = r.budgets
    assert (b.compiled, b.bm25_packed) == pytest.approx((2 / 3, 1 / 3))
    assert (b.answer_compiled, b.answer_bm25_packed) == pytest.approx((2 / 3, 1 / 3))
    groups = {(g.by, g.value): g for g in r.breakdown}
    assert list(groups) == [
        ("kind", "lexical"),
        ("kind", "paraphrase"),
        ("kind", "temporal"),
        ("project", "billing"),
        ("project", "infra"),
    ]
    lexical = groups["kind", "lexical"]
    assert (lexical.with_evidence, lexical.evidence_compiled, lexical.evidence_bm25_packed) == (
        1,
        0.0,
        0.0,
    )
    assert (lexical.with_pattern, lexical.answer_compiled, lexical.answer_bm25_packed) == (
        2,
        0.5,
        0.5,
    )
    temporal = groups["kind", "temporal"]
    assert (temporal.with_pattern, temporal.answer_compiled) == (0, None)
    billing = groups["project", "billing"]
    assert (billing.evidence_compiled, billing.evidence_bm25_packed) == (1.0, 0.0)
    assert (billing.answer_compiled, billing.answer_bm25_packed) == (0.5, 0.0)
    text = format_report(r)
    assert "answer in context, 8192 tokens" in text
    assert "0.667 compiled / 0.333 BM25 turns" in text
    row = next(line for line in text.splitlines() if "project billing" in line)
    assert row.split() == ["project", "billing", "1", "2", "100|0", "50|0"]
    table = text[text.index("  by kind / project") :].splitlines()[:6]
    assert all(len(line) <= 100 for line in table)


def test_a_knowledge_line_carries_the_evidence_by_its_citation(repo: MemoryRepo) -> None:
    """The entry cites ses_a1's 09:02 turn: it carries that turn (in other words), not
    the 09:00 one; struck through, it carries nothing."""
    turns = transcript_turns(repo)
    normed = [norm(t.unit.text) for t in turns]
    cache = LineCache()
    moved = resolve("we moved it to Frankfurt", repo, turns, normed, cache)
    picked = resolve("We picked HikariCP", repo, turns, normed, cache)
    assert moved.locations and moved.cited_as and picked.locations
    path = "knowledge/projects/billing/context.md"
    section = Section("billing", 3, 30, True, "search", path, "", ((4, 4),))
    view = compiled_view("The staging database is hosted in eu-central", [section], repo, cache)
    assert evidence_held(moved, view, repo, cache)
    assert not evidence_held(picked, view, repo, cache)
    # the turn's own line range, given as path:line, resolves to the same turn
    rel, start, _ = moved.locations[0]
    assert evidence_held(resolve(f"{rel}:{start}", repo, turns, normed, cache), view, repo, cache)
    struck = "- ~~" + REGION[2:].replace(" {id", "~~ {id") + " #superseded-by:20260303-0900-def456"
    (repo.root / path).write_text(f"# Billing\n\n## Infrastructure\n{struck}\n", encoding="utf-8")
    stale = compiled_view("", [section], repo, LineCache())
    assert not evidence_held(moved, stale, repo, cache)
    # the baseline's view holds turns, never knowledge lines
    assert not evidence_held(moved, ContextView("eu-central"), repo, cache)


def test_the_answer_pattern_derived_from_an_answer() -> None:
    def held(answer: str, text: str) -> bool:
        pattern = answer_pattern_of(answer)
        assert pattern is not None
        return re.search(pattern, text, re.IGNORECASE) is not None

    assert held("Adoption agencies", "She is looking into agencies for adoption.")
    assert held("7 May 2023", "on May 7, 2023")
    assert held("HikariCP", "we use hikaricp")
    assert not held("Adoption agencies", "She is looking into adoption.")
    assert not held("7 May 2023", "on May 17, 2023")
    # a date also counts in the ISO form contexts date their turns with
    assert held("7 May 2023", "[2023-05-07, Sunday] 10:00 Caroline: I went yesterday.")
    assert held("June 2023", "[2023-06-09, Friday]")
    assert not held("7 May 2023", "[2023-05-17, Wednesday]")
    assert not held("May 2023", "[2023-06-09, Friday]")
    assert answer_pattern_of("the") is None


def test_an_answer_met_only_in_an_address_is_no_answer() -> None:
    """A compiled context says where each thing is: a section's label (a file and its
    lines), an entry's id and citation. "17" in an id's hex or a word of a file's slug
    answered questions by chance (two of the coding set's session starts)."""
    from autopoiesis.eval.questions import Question

    seventeen = Question("How many e2e tests passed?", answer_pattern=r"\b17\b|17")
    docs = Question("What should the agent ask about?", answer_pattern="docs")
    context = (
        "<!-- knowledge:raw/conversations/2025/07/28/1427-s-update-the-docs.md:9-12 -->\n"
        "- Plans renamed (via specstory-f3cb6964-37fa) {id: 20250728-1427-dc0c17} "
        "#about:plan-names"
    )
    assert not seventeen.answer_in(context) and not docs.answer_in(context)
    assert seventeen.answer_in(context + "\n- 17 passed in the Playwright UI")
    assert docs.answer_in(context + "\n- Ask whether to update `docs/`")


def test_new_fields_and_clear_errors(tmp_path: Path, repo: MemoryRepo) -> None:
    qs = load_questions(_write(tmp_path, ROWS + [{"question": "x", "note": "n", "tags": []}]))
    (questions,) = qs.groups
    assert [q.id for q in questions] == ["q1", "q2", "q3", "q4", None]
    assert questions[1].answer_pattern == answer_pattern_of("eu-central")
    assert questions[3].answer_pattern is None and questions[3].kind == "temporal"
    assert len(qs.warnings) == 2 and "q.jsonl:5: unknown key 'note' ignored" in qs.warnings[0]
    for row, message in (
        ({"question": "q", "answer_pattern": "(unclosed"}, r"bad.jsonl:2: 'answer_pattern' is not"),
        ({"question": "q", "answer_pattern": 3}, "'answer_pattern' must be a non-empty string"),
        ({"question": "q", "kind": 5}, "'kind' must be a non-empty string"),
        ({"question": "q", "project": ["a"]}, "'project' must be a non-empty string"),
        ({"question": "q", "id": [1]}, "'id' must be a string"),
    ):
        bad = _write(tmp_path, [{"question": "fine"}, row], "bad.jsonl")
        with pytest.raises(QuestionSetError, match=message):
            load_questions(bad)
    out = CliRunner().invoke(app, ["-C", str(repo.root), "eval", str(bad), "--budget", "4096"])
    assert out.exit_code != 0 and "bad.jsonl:2" in str(out.exception or out.output)
    warned = _write(tmp_path, [{"question": "Which pool?", "answer": "HikariCP", "note": "n"}])
    out = CliRunner().invoke(
        app, ["-C", str(repo.root), "eval", str(warned), "--budget", "4096", "--json"]
    )
    assert out.exit_code == 0, out.output
    assert "unknown key 'note' ignored" in out.stderr
    data = json.loads(out.stdout)
    assert data["warnings"] and data["with_pattern"] == 1
    assert data["scores"][0]["answer"]["4096"] == {"compiled": True, "bm25_packed": True}


def test_evidence_in_a_long_turn_is_held_only_where_the_context_shows_it(
    memory_repo: MemoryRepo,
) -> None:
    """A long turn may be shown in part (compiler/packing.FOCUS_CHARS): text evidence in
    it is the lines that hold it, so a context that shows the turn's opening and another
    line is not credited with a line it left out; the baseline's whole turn still is."""
    from autopoiesis.compiler.packing import source_of
    from autopoiesis.compiler.standing import stems

    output = [f"step {n}: compiled module_{n}.ts in {n * 7} ms, no warnings" for n in range(60)]
    output[37] = "error: PgBouncer refused the connection: too many clients on port 6432"
    output[12] = "warning: the lockfile was written by an older npm"
    rel = _write_session(
        memory_repo,
        "ses_long",
        "2026-03-02T10:00:00Z",
        [("user", None, "run the build"), ("agent", None, "Ran it.\n" + "\n".join(output))],
    )
    turns = transcript_turns(memory_repo)
    normed = [norm(t.unit.text) for t in turns]
    cache = LineCache()
    refused = resolve("PgBouncer refused the connection", memory_repo, turns, normed, cache)
    lockfile = resolve(
        "the lockfile was written by an older npm", memory_repo, turns, normed, cache
    )
    lines = (memory_repo.root / rel).read_text(encoding="utf-8").split("\n")
    (_, a, b), (_, c, d) = refused.locations[0], lockfile.locations[0]
    assert a == b and output[37] in lines[a - 1] and c == d and output[12] in lines[c - 1]
    # the context as the compiler shows the turn for a question about PgBouncer
    src = source_of(rel, (memory_repo.root / rel).read_text(encoding="utf-8")).focused(
        stems("why did pgbouncer refuse the connection?")
    )
    agent = next(i for i, u in enumerate(src.units) if "Ran it." in u.text)
    text, spans = src.shown(agent)
    assert "lockfile" not in text
    view = compiled_view(
        text, [Section("t", 3, 50, True, "search", rel, text, spans)], memory_repo, cache
    )
    assert evidence_held(refused, view, memory_repo, cache)
    assert not evidence_held(lockfile, view, memory_repo, cache)
    whole = src.units[agent]
    baseline = ContextView(whole.text, spans={rel: [(whole.start, whole.end)]})
    assert evidence_held(lockfile, baseline, memory_repo, cache)


def test_an_answer_met_only_in_the_contexts_notes_of_what_it_left_out_is_no_answer() -> None:
    """A compiled context says what it left out for room, with counts and a file to read:
    "22 of the 29 entries" answered "Which Node version?" (22) at three of the coding set's
    session starts. Its notes are no answer; the same words said by an entry are."""
    from autopoiesis.compiler.standing import StandingFile, fit
    from autopoiesis.eval.questions import Question

    node = Question("Which Node version should the project run with?", answer_pattern=r"\b22\b")
    entries = "\n".join(f"- 2026-01-{n:02d}: Keep rule {n + 40} in mind." for n in range(1, 30))
    memory = StandingFile(
        "knowledge/memory/MEMORY.md", f"## Preferences\n{entries}\n", 10**6, False
    )
    # the share at which the standing part leaves 22 of the 29 entries out
    shown = next(
        text
        for share in range(40, 400)
        for [text] in [fit([memory], "", share)]
        if "22 of the 29 entries" in text
    )
    assert not node.answer_in(shown)
    for other in ("[\u2026 truncated: 22 more bytes in knowledge/x.md]", "[\u2026]"):
        assert not node.answer_in(f"{shown}\n{other}")
    assert node.answer_in(f"{shown}\n- 2026-01-30: Run the project with Node 22.")


def test_a_catastrophic_answer_pattern_cannot_hang_eval(repo: MemoryRepo, tmp_path: Path) -> None:
    """`(a+)+$` against a context with a long run of a's backtracked for ever on Python's
    engine, and the eval with it: a question set's patterns run on RE2 (linear time), and
    one RE2 cannot run (lookaround, a backreference) is refused at load, with its line."""
    from autopoiesis.eval.questions import Question

    assert Question("q", answer_pattern="(a+)+$").answer_in("a" * 5000 + "!") is False
    assert Question("q", answer_pattern="(a+)+$").answer_in("a" * 5000) is True
    session = _write_session(
        repo, "ses_a2", "2026-03-03T09:00:00Z", [("user", None, "aaaa " + "a" * 4000 + "!")]
    )
    assert session
    rows = [{"question": "What did the user shout aaaa?", "answer_pattern": "(a+)+$"}]
    out = CliRunner().invoke(
        app, ["-C", str(repo.root), "eval", str(_write(tmp_path, rows)), "--budget", "8192"]
    )
    assert out.exit_code == 0, out.output
    assert "answer in context, 8192 tokens       0.000 compiled / 0.000 BM25 turns" in out.output
    for pattern in (r"(?=.*hikari)(?=.*pool)", r"(\w)\1"):
        bad = _write(tmp_path, [{"question": "fine"}, {"question": "q", "answer_pattern": pattern}])
        with pytest.raises(QuestionSetError, match=r"q.jsonl:2: 'answer_pattern' uses a feature"):
            load_questions(bad)
    # RE2 reads UTF-8, which a lone surrogate has no form in: an error, not a traceback
    bad = tmp_path / "surrogate.jsonl"
    bad.write_text('{"question": "q", "answer_pattern": "x\\ud800"}\n', encoding="utf-8")
    with pytest.raises(QuestionSetError, match=r"surrogate.jsonl:1: 'answer_pattern' holds"):
        load_questions(bad)


def test_a_duplicate_id_or_an_answer_that_is_no_text_is_an_error_naming_its_line(
    tmp_path: Path,
) -> None:
    """Two questions of one id were both scored, and `--json`'s scores could not be told
    apart; `"answer": true` was looked for as "True", `NaN` (which Python's JSON reads) as
    "nan"."""
    for rows, message in (
        (
            [{"id": "a", "question": "q"}, {"id": "a", "question": "r"}],
            "the id 'a' is also that of .*dup.jsonl:1",
        ),
        ([{"id": 7, "question": "q"}, {"id": "7", "question": "r"}], "the id '7' is also"),
        ([{"question": "q"}, {"question": "q", "answer": True}], "'answer' must be a string"),
        ([{"question": "q"}, {"question": "q", "answer": float("nan")}], "'answer' must be"),
        ([{"question": "q"}, {"question": "q", "id": False}], "'id' must be a string"),
    ):
        bad = _write(tmp_path, rows, "dup.jsonl")
        with pytest.raises(QuestionSetError, match=f"dup.jsonl:2: {message}"):
            load_questions(bad)
    fine = _write(tmp_path, [{"id": 1, "question": "q", "answer": 41}, {"question": "r"}])
    (questions,) = load_questions(fine).groups
    assert questions[0].id == "1" and questions[0].answer == "41"


def test_evidence_or_a_project_that_names_nothing_of_the_memory_is_warned_of(
    repo: MemoryRepo, tmp_path: Path
) -> None:
    """A `path:line` of no file, outside the repo or past its end, and a project the memory
    does not have, were scored as misses without a word: the user's typo read as the
    memory's failure."""
    (turns,) = [p for p in repo.iter_markdown("raw/conversations")]
    rel, length = repo.rel(turns), len(turns.read_text(encoding="utf-8").splitlines())
    rows = [
        {"question": "Which pool?", "evidence": [f"{rel}:3"], "project": "billing"},
        {"question": "Which pool?", "evidence": ["raw/conversations/nope.md:3"]},
        {"question": "Which pool?", "evidence": ["../../etc/passwd.md:1"]},
        {"question": "Which pool?", "evidence": [f"{rel}:{length + 1}"]},
        {"question": "Which pool?", "answer": "HikariCP", "project": "nowhere"},
    ]
    out = CliRunner().invoke(
        app, ["-C", str(repo.root), "eval", str(_write(tmp_path, rows)), "--budget", "4096"]
    )
    assert out.exit_code == 0, out.output
    warned = [line for line in out.stderr.splitlines() if line.startswith("warning: ")]
    assert [w.split(": ")[1].rsplit(":", 1)[1] for w in warned] == ["2", "3", "4", "5"], warned
    assert "names no file of the memory repo (raw/conversations/nope.md)" in warned[0]
    assert "names a path outside the memory repo" in warned[1]
    assert f"names line {length + 1}, and {rel} has lines 1 to {length}" in warned[2]
    assert "project 'nowhere' is none of this memory's" in warned[3]


def test_replay_compare_warns_of_its_question_set_as_eval_does(
    repo: MemoryRepo, tmp_path: Path, git
) -> None:
    """`replay --compare A B --questions FILE` scored both refs and said nothing of what
    `eval` warns of (an unknown key, an evidence line past the end of its file): each is
    said once, as `eval` says it."""
    git(repo, "branch", "extract/other")
    (turns,) = [p for p in repo.iter_markdown("raw/conversations")]
    rel, length = repo.rel(turns), len(turns.read_text(encoding="utf-8").splitlines())
    rows = [
        {"question": "Which pool?", "answer": "HikariCP", "tier": "gold"},
        {"question": "Which pool?", "evidence": [f"{rel}:{length + 1}"]},
    ]
    f = _write(tmp_path, rows)
    out = CliRunner().invoke(
        app, ["-C", str(repo.root), "replay", "--compare", "main", "extract/other", "--questions", str(f)]
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    warned = [line for line in out.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 2, out.stderr
    assert warned[0].startswith(f"warning: {f}:1: unknown key 'tier' ignored"), warned
    assert warned[1].startswith(f"warning: {f}:2: evidence "), warned
    assert f"names line {length + 1}, and {rel} has lines 1 to {length}" in warned[1]
