"""A new user's two weeks, end to end: five sessions over two weeks, imported
through the real import path into a real git repo, then offline extraction, the daily
journals and the weekly rollups, then `compile`.

The sessions hold each kind of fact: a decision that changes, a fact said twice, a new
person with a role, a date about a person, a procedure told without the word, a
preference, a lesson told without the word, a date that moves — plus the agent's
acknowledgements and a proposal the user accepts. Three variants say all of it in
different words, so the rules are shown general, not matched to one sentence.

After the run: every fact is kept (live in the current-state files); every changed one
is superseded everywhere it lives, struck and never deleted; journals keep what was
said; nothing is doubled in a file; no acknowledgement became knowledge; and the
compiled context gives the current fact, the old one never as current.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import knowledge as kf
from autopoiesis.knowledge.condense import MemoryCondenser
from autopoiesis.knowledge.extract import KnowledgeExtractor
from tests.knowledge.helpers import import_sessions, session

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Variant:
    project_intro: str
    old_decision: str
    old_probe: str  # words only the old decision has
    new_decision: str
    new_probe: str
    fact_first: str
    fact_again: str
    fact_probe: str
    person_role: str
    person: str  # the person's file stem
    role_probe: str
    person_date: str
    date_probe: str
    procedure: tuple[str, ...]  # one turn's sentences
    procedure_file: str
    step_probes: tuple[str, ...]
    preference: str
    preference_probe: str
    lesson: str
    lesson_probe: str
    event_planned: str
    event_moved: str
    old_date: str
    new_date: str
    question_date: str
    question_decision: str


VARIANTS = {
    "pgbouncer": Variant(
        project_intro="Let's plan the next steps for the billing-service project.",
        old_decision="We'll put PgBouncer in front of Postgres, in transaction mode.",
        old_probe="in front of Postgres",
        new_decision="We decided to drop PgBouncer and use HikariCP instead.",
        new_probe="HikariCP",
        fact_first="Remember that the staging database runs on port 6432.",
        fact_again="FYI the staging DB listens on port 6432.",
        fact_probe="6432",
        person_role="Lena Park is joining the team as our SRE next Monday.",
        person="lena-park",
        role_probe="SRE",
        person_date="Lena's birthday is on March 14, so let's get a cake.",
        date_probe="March 14",
        procedure=(
            "To run the integration tests locally, first start the docker compose stack, then run make migrate, "
            "and finally run pytest -m integration.",
        ),
        procedure_file="run-the-integration-tests-locally",
        step_probes=("docker compose", "make migrate", "pytest -m integration"),
        preference="Also, I prefer short answers in bullet points.",
        preference_probe="short answers",
        lesson="Note to self: never run the migrations on a Friday afternoon again.",
        lesson_probe="Friday afternoon",
        event_planned="The cutover is planned for June 3.",
        event_moved="Heads up: we moved the cutover to June 17 because the vendor slipped.",
        old_date="June 3",
        new_date="June 17",
        question_date="When is the cutover?",
        question_decision="Which connection pooler does billing-service use, PgBouncer or HikariCP?",
    ),
    "redis": Variant(
        project_intro="Today I want to work on the checkout-api project.",
        old_decision="The plan is to keep user sessions in Redis with a one hour TTL.",
        old_probe="one hour TTL",
        new_decision="We are switching the session store from Redis to Memcached.",
        new_probe="Memcached",
        fact_first="Note that the metrics dashboard lives at grafana.internal/checkout.",
        fact_again="For the record, the metrics dashboard lives at grafana.internal/checkout.",
        fact_probe="grafana.internal/checkout",
        person_role="We hired Tomas Rivera as the new product manager.",
        person="tomas-rivera",
        role_probe="product manager",
        person_date="Tomas was born on 2 April 1991, by the way.",
        date_probe="2 April 1991",
        procedure=(
            "In order to rotate the API keys you need to create the new key in Vault, then update the deployment "
            "secret, and finally revoke the old key.",
        ),
        procedure_file="rotate-the-api-keys",
        step_probes=("new key in Vault", "deployment secret", "revoke the old key"),
        preference="Please keep your replies brief.",
        preference_probe="replies brief",
        lesson="We should have tested the rollback script before the dry run.",
        lesson_probe="rollback script",
        event_planned="The launch is scheduled for April 8.",
        event_moved="The launch has been pushed back to April 22.",
        old_date="April 8",
        new_date="April 22",
        question_date="When is the launch?",
        question_decision="Where do we keep user sessions, Redis or Memcached?",
    ),
    "jenkins": Variant(
        project_intro="Let's look at the data-platform project again.",
        old_decision="Let's go with Jenkins for the nightly builds.",
        old_probe="Jenkins for the nightly builds",
        new_decision="We no longer use Jenkins; GitHub Actions runs the nightly builds now.",
        new_probe="GitHub Actions",
        fact_first="Keep in mind the API rate limit for partners is 600 requests per minute.",
        fact_again="Good to know: the partner API rate limit is 600 requests per minute.",
        fact_probe="600 requests",
        person_role="Please welcome Priya Nair, our new data engineer.",
        person="priya-nair",
        role_probe="data engineer",
        person_date="Priya's last day before her parental leave is May 29.",
        date_probe="May 29",
        procedure=(
            "If you want to publish the docs: start by running mkdocs build.",
            "Then sync the site folder to the bucket.",
            "Finally, purge the CDN cache.",
        ),
        procedure_file="publish-the-docs",
        step_probes=("mkdocs build", "site folder", "CDN cache"),
        preference="I'd rather have plain prose than tables.",
        preference_probe="plain prose",
        lesson="Next time, take a database snapshot before upgrading Postgres.",
        lesson_probe="database snapshot",
        event_planned="Our security audit is set for May 5.",
        event_moved="The security audit is now on May 12.",
        old_date="May 5",
        new_date="May 12",
        question_date="When is the security audit?",
        question_decision="Which tool runs the nightly builds, Jenkins or GitHub Actions?",
    ),
}
DAYS = [date(2026, 3, 2), date(2026, 3, 4), date(2026, 3, 9), date(2026, 3, 12), date(2026, 3, 13)]


def sessions_of(v: Variant) -> list[dict]:
    return [
        session(
            "ses_w1a",
            "2026-03-02T09:00:00Z",
            ("user", v.project_intro),
            ("agent", "Sure. Where do we start?"),
            ("user", v.old_decision),
            ("agent", "Understood, " + v.old_decision[0].lower() + v.old_decision[1:]),
            ("user", v.fact_first),
            ("user", v.person_role),
            ("user", v.event_planned),
        ),
        session(
            "ses_w1b",
            "2026-03-04T14:00:00Z",
            ("user", " ".join(v.procedure)),
            ("agent", "Got it."),
            ("user", v.preference),
            ("agent", "Understood, bullet points from now on."),
            ("user", v.person_date),
        ),
        session(
            "ses_w2a",
            "2026-03-09T10:00:00Z",
            ("user", "The old setup keeps giving us trouble."),
            ("agent", "We could revisit it."),
            ("user", v.new_decision),
            ("user", v.lesson),
        ),
        session("ses_w2b", "2026-03-12T16:00:00Z", ("user", v.event_moved), ("user", v.fact_again)),
        session(
            "ses_w2c",
            "2026-03-13T11:00:00Z",
            ("agent", "I suggest we keep the nightly backups for 30 days."),
            ("user", "Yes, let's do that."),
            ("agent", "Got it, from now on backups are kept for 30 days."),
        ),
    ]


def live_lines(repo: MemoryRepo) -> dict[str, list[kf.Entry]]:
    """path -> live entries, for every current-state knowledge file."""
    out = {}
    for p in sorted(repo.knowledge_dir.rglob("*.md")):
        rel = repo.rel(p)
        if kf.is_current_state(rel):
            out[rel] = [e for _, e in kf.parse(p.read_text()).entries() if e.active]
    return out


def all_entries(repo: MemoryRepo) -> list[tuple[str, kf.Entry]]:
    return [
        (repo.rel(p), e)
        for p in sorted(repo.knowledge_dir.rglob("*.md"))
        for _, e in kf.parse(p.read_text()).entries()
    ]


def holding(lines: dict[str, list[kf.Entry]], probe: str) -> list[tuple[str, kf.Entry]]:
    return [(p, e) for p, es in lines.items() for e in es if probe.lower() in e.text.lower()]


def run_two_weeks(repo: MemoryRepo, tmp_path: Path, v: Variant) -> None:
    import_sessions(repo, tmp_path, sessions_of(v))
    with KnowledgeExtractor(repo) as ex:
        report = ex.extract_pending()
        assert not report.failed
        assert ex.commit(report)
    with MemoryCondenser(repo) as c:
        for day in DAYS:
            c.daily_summary(day)
        c.weekly_rollup(date(2026, 3, 2))
        c.weekly_rollup(date(2026, 3, 9))


@pytest.fixture(params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> Variant:
    return VARIANTS[request.param]


def test_two_weeks_of_knowledge_stay_true(
    memory_repo: MemoryRepo, tmp_path: Path, variant: Variant
) -> None:
    v = variant
    run_two_weeks(memory_repo, tmp_path, v)
    root = memory_repo.root
    lines = live_lines(memory_repo)

    # every fact is kept, live, where it belongs
    assert holding(lines, v.new_probe), "the new decision"
    assert len(holding(lines, v.fact_probe)) == 1, "the fact said twice: one live entry"
    person = f"knowledge/people/{v.person}.md"
    assert any(v.role_probe.lower() in e.text.lower() for e in lines[person]), "the role"
    assert any(v.date_probe.lower() in e.text.lower() for e in lines[person]), (
        "the date about the person"
    )
    index = [e.text for e in lines["knowledge/people/_index.md"]]
    assert any(v.role_probe.lower() in t.lower() for t in index), "people/_index.md names the role"
    steps = " ".join(e.text for e in lines[f"knowledge/procedures/{v.procedure_file}.md"])
    for probe in v.step_probes:
        assert probe.lower() in steps.lower(), probe
    memory = kf.parse((root / "knowledge/memory/MEMORY.md").read_text())
    prefs = [
        e.text for e in memory.sections[memory.find_section("Preferences")].entries() if e.active
    ]
    assert any(v.preference_probe in t for t in prefs), "the preference"
    lessons = [
        e.text
        for e in memory.sections[memory.find_section("Lessons Learned")].entries()
        if e.active
    ]
    assert any(v.lesson_probe in t for t in lessons), "the lesson"
    assert holding(lines, v.new_date), "the date as moved"
    assert holding(lines, "nightly backups for 30 days"), "the proposal the user accepted"

    # every changed fact is superseded everywhere it lived: struck, never deleted
    for probe in (v.old_probe, v.old_date):
        assert not holding(lines, probe), f"{probe!r} is still live"
        struck = [
            (p, e)
            for p, e in all_entries(memory_repo)
            if kf.is_current_state(p) and probe.lower() in e.text.lower()
        ]
        assert struck, f"{probe!r} was deleted instead of struck"
        assert all(e.superseded_by for _, e in struck)
        ids = {i for _, e in all_entries(memory_repo) for i in [e.id]}
        assert all(
            e.superseded_by in ids for _, e in struck
        )  # pointing at the entry that replaced it
    old_decision_files = {
        p for p, e in all_entries(memory_repo) if kf.is_current_state(p) and v.old_probe in e.text
    }
    if any(
        p.startswith("knowledge/projects/") and p.endswith("/context.md")
        for p in old_decision_files
    ):
        assert (
            "knowledge/projects/_active.md" in old_decision_files
        )  # its derived line was struck too

    # journals are history: they keep what was said that day
    journals = "".join(p.read_text() for p in sorted((root / "knowledge/journal").glob("*.md")))
    assert v.old_probe in journals
    assert re.search(r"^- ~~", journals, re.M) is None

    # nothing doubled in a file, no acknowledgement became knowledge
    for rel, entries in lines.items():
        facts = [kf.normalize_fact(e.text) for e in entries]
        assert len(facts) == len(set(facts)), rel
        ids = [e.id for e in entries]
        assert len(ids) == len(set(ids)), rel
    for rel, e in all_entries(memory_repo):
        assert not re.match(
            r"(?:Decided: |Lesson: |Preference: )?(?:Understood|Got it)\b", e.text
        ), (rel, e.text)

    # citations are compact: the session, never the transcript's slug
    for rel, e in all_entries(memory_repo):
        assert e.source in {"ses_w1a", "ses_w1b", "ses_w2a", "ses_w2b", "ses_w2c"}, (rel, e.source)
    text = (root / "knowledge/memory/MEMORY.md").read_text()
    assert "raw/conversations" not in text


def test_rerunning_extraction_and_condensation_changes_nothing(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    v = VARIANTS["pgbouncer"]
    run_two_weeks(memory_repo, tmp_path, v)
    before = {p: p.read_bytes() for p in memory_repo.knowledge_dir.rglob("*.md")}
    with MemoryCondenser(memory_repo) as c:
        for day in DAYS:
            c.daily_summary(day)
        c.weekly_rollup(date(2026, 3, 2))
        c.weekly_rollup(date(2026, 3, 9))
    with KnowledgeExtractor(memory_repo) as ex:
        assert ex.extract_pending().already_done == 35  # 5 sessions x 7 extractors
    assert {p: p.read_bytes() for p in memory_repo.knowledge_dir.rglob("*.md")} == before


def _outside_strikes(text: str) -> str:
    return re.sub(r"~~.*?~~", " ", text, flags=re.S)


def test_compile_answers_with_the_current_fact(
    memory_repo: MemoryRepo, tmp_path: Path, variant: Variant
) -> None:
    from autopoiesis.compiler.compile import ContextCompiler
    from autopoiesis.index.searchindex import SearchIndex

    v = variant
    run_two_weeks(memory_repo, tmp_path, v)
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    with ContextCompiler(memory_repo) as compiler:
        for question, new, old in (
            (v.question_date, v.new_date, v.old_date),
            (v.question_decision, v.new_probe, v.old_probe),
        ):
            result = compiler.compile(question, budget=8192, today=date(2026, 3, 20))
            knowledge = [
                s for s in result.sections if s.included and s.path and kf.is_current_state(s.path)
            ]
            current = " ".join(_outside_strikes(s.content) for s in knowledge)
            assert new in current, (question, [s.label for s in knowledge])
            # the old fact may be there as history (a transcript, a journal) or struck, never as current
            assert old not in current, (question, current)
