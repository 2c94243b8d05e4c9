"""Knowledge that stays true: the writer's one-fact rules, the offline
extractors' plain phrasings and speaker awareness, the LLM path that sees related
entries, compact citations, and compaction that cannot bring an old fact back."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import count_tokens
from autopoiesis.formats import knowledge as kf
from autopoiesis.formats import transcript as tf
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance, entry_id_for
from autopoiesis.knowledge.condense import MemoryCondenser
from autopoiesis.knowledge.extract import KnowledgeExtractor
from autopoiesis.knowledge.extractors import (
    DECISIONS,
    FACTS,
    JOURNAL,
    LESSONS,
    PEOPLE,
    PROCEDURES,
    SourceTranscript,
)
from autopoiesis.knowledge.extractors.cues import resolve_relative, with_absolute_dates
from autopoiesis.knowledge.prune import MemoryPruner
from autopoiesis.knowledge.writer import KnowledgeWriter
from tests.daemon.helpers import wait_for
from tests.knowledge.helpers import import_sessions, session, use_llm

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MEM = "knowledge/memory/MEMORY.md"


def prov(minutes: int = 0, session_id: str = "ses_x") -> Provenance:
    return Provenance(
        f"raw/conversations/2026/03/02/0900-{session_id}-some-long-title-slug.md",
        T0 + timedelta(minutes=minutes),
        "test@1",
        session_id,
    )


def live(repo: MemoryRepo, rel: str) -> list[str]:
    return [e.text for _, e in kf.parse((repo.root / rel).read_text()).entries() if e.active]


def struck(repo: MemoryRepo, rel: str) -> list[str]:
    return [e.text for _, e in kf.parse((repo.root / rel).read_text()).entries() if not e.active]


def transcript(
    *turns: tuple[str, str] | tuple[str, str, str], sid: str = "ses_t"
) -> SourceTranscript:
    """A transcript rendered by the format's renderer: (role, text) or (role, name, text)."""
    items = []
    for i, t in enumerate(turns):
        role, name, text = (t[0], None, t[1]) if len(t) == 2 else t
        items.append(
            tf.Turn(time=T0 + timedelta(minutes=i), role=role, name=name, items=(tf.Text(text),))
        )
    meta = tf.TranscriptMeta(session_id=sid, started=T0, status="closed")
    return SourceTranscript.from_text(
        f"raw/conversations/2026/03/02/0900-{sid}.md",
        tf.render(tf.Transcript(meta, "Test session", tuple(items))),
    )


# ── the writer ──
def test_a_changed_fact_is_struck_in_every_file_that_restates_it(memory_repo: MemoryRepo) -> None:
    w = KnowledgeWriter(memory_repo)
    ctx = "knowledge/projects/billing/context.md"
    canonical = KnowledgeChange(
        ctx, "append", "Key Decisions", "Put PgBouncer in front of Postgres", prov()
    )
    w.apply(
        [
            canonical,
            KnowledgeChange(
                "knowledge/projects/_active.md",
                "append",
                "Active Projects",
                "**billing** — PgBouncer in front",
                prov(),
                key="**billing**",
                dated=False,
                entry_id=entry_id_for(canonical),
            ),
            KnowledgeChange(
                MEM,
                "append",
                "Key Decisions",
                "billing: Put PgBouncer in front of Postgres",
                prov(),
                entry_id=entry_id_for(canonical),
            ),
        ]
    )
    ids = {
        e.id
        for rel in (ctx, "knowledge/projects/_active.md", MEM)
        for _, e in kf.parse((memory_repo.root / rel).read_text()).entries()
    }
    assert ids == {entry_id_for(canonical)}  # one fact, one id
    # the change names its old fact by a phrase; it lands in MEMORY.md, the old one lived in a project
    r = w.apply(
        [
            KnowledgeChange(
                MEM,
                "supersede",
                "Key Decisions",
                "Drop PgBouncer, use HikariCP",
                prov(60),
                target="PgBouncer",
            )
        ]
    )
    assert sorted(p for p, _ in r.superseded) == sorted([ctx, "knowledge/projects/_active.md", MEM])
    for rel in (ctx, "knowledge/projects/_active.md"):
        assert not live(memory_repo, rel)
    assert live(memory_repo, MEM) == ["Drop PgBouncer, use HikariCP"]
    text = (memory_repo.root / ctx).read_text()
    assert (
        "~~2026-03-02: Put PgBouncer in front of Postgres (via ses_x)~~" in text
    )  # struck, not deleted
    assert f"#superseded-by:{r.added[0][1]}" in text


def test_a_fuller_statement_of_another_subject_is_another_fact(memory_repo: MemoryRepo) -> None:
    """A current-state entry said in full by a later one is replaced by it (nothing is
    lost), but not when each holds the value of a subject of its own: the project's
    test command and the one a session ran on chosen files share all the words of the
    first, and the second struck the first from the project's Commands."""
    w = KnowledgeWriter(memory_repo)
    ctx = "knowledge/projects/shop/context.md"

    def command(text: str, minutes: int, subject: str) -> KnowledgeChange:
        return KnowledgeChange(ctx, "append", "Commands", text, prov(minutes), subject=subject)

    w.apply([command("Run the tests: `bun test`", 0, "command test bun")])
    files = w.apply(
        [command("Run the tests: `bun test src/cart.test.ts`", 5, "command test bun files")]
    )
    assert files.superseded == [] and len(files.added) == 1
    again = w.apply([command("Run the tests: `bun test`", 10, "command test bun")])
    assert again.duplicates == 1  # the project's command is live: it says nothing new
    assert sorted(live(memory_repo, ctx)) == [
        "Run the tests: `bun test src/cart.test.ts`",
        "Run the tests: `bun test`",
    ]
    # without subjects the fuller statement still replaces what it says in full
    w.apply([KnowledgeChange(ctx, "append", "Facts", "Payments go through Stripe", prov(20))])
    fuller = "Payments go through Stripe, refunds through the admin page"
    w.apply([KnowledgeChange(ctx, "append", "Facts", fuller, prov(25))])
    assert fuller in live(memory_repo, ctx)
    assert "Payments go through Stripe" not in live(memory_repo, ctx)


def test_a_keyed_index_line_is_replaced_without_touching_its_fact(memory_repo: MemoryRepo) -> None:
    w = KnowledgeWriter(memory_repo)
    person, idx = "knowledge/people/ana.md", "knowledge/people/_index.md"
    birthday = KnowledgeChange(
        person, "append", "Context", "Ana's birthday is on May 3", prov(), subject="ana birthday"
    )
    role = KnowledgeChange(
        person, "append", "Context", "Ana is joining as our designer", prov(5), subject="ana role"
    )
    w.apply(
        [
            birthday,
            KnowledgeChange(
                idx,
                "append",
                "People",
                "**Ana** — Ana's birthday is on May 3",
                prov(),
                key="**ana**",
                dated=False,
                entry_id=entry_id_for(birthday),
            ),
        ]
    )
    w.apply(
        [
            role,
            KnowledgeChange(
                idx,
                "supersede",
                "People",
                "**Ana** — Ana is joining as our designer",
                prov(5),
                key="**ana**",
                dated=False,
                entry_id=entry_id_for(role),
            ),
        ]
    )
    assert live(memory_repo, idx) == ["**Ana** — Ana is joining as our designer"]
    assert live(memory_repo, person) == [
        "Ana's birthday is on May 3",
        "Ana is joining as our designer",
    ]


def test_one_live_value_per_subject_and_repeats_are_duplicates(memory_repo: MemoryRepo) -> None:
    w = KnowledgeWriter(memory_repo)
    a, b = "knowledge/reference/billing.md", "knowledge/reference/general.md"
    w.apply(
        [
            KnowledgeChange(
                a,
                "append",
                "Dates",
                "The cutover is planned for June 3",
                prov(),
                subject="cutover date",
            )
        ]
    )
    same = w.apply(
        [
            KnowledgeChange(
                b,
                "append",
                "Dates",
                "Cutover planned for June 3rd",
                prov(10),
                subject="cutover date",
            )
        ]
    )
    assert same.duplicates == 1
    moved = w.apply(
        [
            KnowledgeChange(
                b,
                "append",
                "Dates",
                "We moved the cutover to June 17",
                prov(20),
                subject="cutover date",
            )
        ]
    )
    assert moved.superseded == [
        (a, kf.parse((memory_repo.root / a).read_text()).sections[-1].lines[0].id)
    ]
    assert live(memory_repo, b) == ["We moved the cutover to June 17"]
    assert not live(memory_repo, a)
    # said again in other words (a light verb, a short form): one fact, one entry
    w.apply(
        [KnowledgeChange(a, "append", "Facts", "The staging database runs on port 6432", prov())]
    )
    again = w.apply(
        [KnowledgeChange(b, "append", "Facts", "FYI: staging DB listens on port 6432", prov(30))]
    )
    assert again.duplicates == 1
    other = w.apply(
        [
            KnowledgeChange(
                b, "append", "Facts", "The production database runs on port 6432", prov(31)
            )
        ]
    )
    assert len(other.added) == 1  # another database: another fact


def test_a_subject_s_new_value_is_new_though_most_words_are_the_same(
    memory_repo: MemoryRepo,
) -> None:
    """A value that is one word of a template ("... of `origin`", then "... of `upstream`":
    four content words of five the same) supersedes the live one; the same value said
    again, or one that adds no word to it, is a duplicate."""
    w = KnowledgeWriter(memory_repo)
    ctx = "knowledge/projects/shop-api/context.md"

    def pushed(remote: str, minutes: int) -> KnowledgeChange:
        text = f"The work is pushed to branch `main` of `{remote}`"
        return KnowledgeChange(
            ctx, "append", "Current State", text, prov(minutes), subject="pushed"
        )

    w.apply([pushed("origin", 0)])
    moved = w.apply([pushed("upstream", 10)])
    assert len(moved.added) == 1 and len(moved.superseded) == 1
    assert live(memory_repo, ctx) == ["The work is pushed to branch `main` of `upstream`"]
    assert w.apply([pushed("upstream", 20)]).duplicates == 1
    shorter = KnowledgeChange(
        ctx, "append", "Current State", "Pushed to branch `main`", prov(30), subject="pushed"
    )
    assert w.apply([shorter]).duplicates == 1
    assert live(memory_repo, ctx) == ["The work is pushed to branch `main` of `upstream`"]


def test_each_project_keeps_its_own_facts_and_values(memory_repo: MemoryRepo) -> None:
    """Two codebases may each say "use bun, not node", and each have a database of its
    own: another project's entry makes no duplicate, is no target, and is never struck by
    this project's new value. A global entry still speaks for every project."""
    w = KnowledgeWriter(memory_repo)
    alpha, beta = "knowledge/projects/alpha/context.md", "knowledge/projects/beta/context.md"

    def change(path: str, text: str, minutes: int, **kw: str) -> KnowledgeChange:
        return KnowledgeChange(path, "append", "Conventions", text, prov(minutes), **kw)

    w.apply([change(alpha, "Use bun, not node in this repo", 0)])
    assert len(w.apply([change(beta, "Use bun, not node in this repo", 5)]).added) == 1
    assert live(memory_repo, beta) == ["Use bun, not node in this repo"]
    w.apply([change(alpha, "The database is Postgres", 10, subject="database")])
    mysql = w.apply([change(beta, "The database is MySQL", 20, subject="database")])
    assert mysql.superseded == [] and len(mysql.added) == 1
    moved = w.apply([change(alpha, "We moved the database to CockroachDB", 30, subject="database")])
    assert [path for path, _ in moved.superseded] == [alpha]
    assert "The database is MySQL" in live(memory_repo, beta)
    assert "The database is Postgres" in struck(memory_repo, alpha)
    # a supersede whose target phrase only another project holds appends, striking nothing
    cache = KnowledgeChange(
        beta, "supersede", "Conventions", "The cache is Redis", prov(40), target="CockroachDB"
    )
    assert w.apply([cache]).superseded == []
    assert "We moved the database to CockroachDB" in live(memory_repo, alpha)
    # this project's fact struck: another project's same words stay live
    deno = KnowledgeChange(
        beta, "supersede", "Conventions", "Use deno, not bun", prov(45), target="bun, not node"
    )
    assert [path for path, _ in w.apply([deno]).superseded] == [beta]
    assert "Use bun, not node in this repo" in struck(memory_repo, beta)
    assert "Use bun, not node in this repo" in live(memory_repo, alpha)
    # a global entry speaks for every project: the same fact there is a duplicate
    w.apply([change(MEM, "Tabs, not spaces, in every file", 50)])
    assert w.apply([change(alpha, "Tabs, not spaces, in every file", 60)]).duplicates == 1
    # after a merge each project keeps its value of a subject
    assert KnowledgeWriter(memory_repo).settle_subjects().superseded == []
    assert "The database is MySQL" in live(memory_repo, beta)


def test_a_model_is_shown_the_entries_of_its_session_s_project_and_global_ones(
    memory_repo: MemoryRepo,
) -> None:
    from autopoiesis.knowledge.related import related_entries

    w = KnowledgeWriter(memory_repo)
    for path, text in (
        ("knowledge/projects/alpha/context.md", "The alpha bundler is bun, not webpack"),
        ("knowledge/projects/beta/context.md", "The beta bundler is esbuild, not webpack"),
        (MEM, "The user prefers one bundler config per repo, never webpack"),
    ):
        w.apply([KnowledgeChange(path, "append", "Conventions", text, prov())])
    # alpha's entry mirrored into MEMORY.md (the week's rollup: the same id) is alpha's
    alpha = kf.parse((memory_repo.root / "knowledge/projects/alpha/context.md").read_text())
    canonical = next(e for _, e in alpha.entries())
    w.apply(
        [
            KnowledgeChange(
                MEM,
                "append",
                "Key Decisions",
                "alpha: The alpha bundler is bun, not webpack",
                prov(),
                entry_id=canonical.id,
            )
        ]
    )
    text = "Which bundler? We dropped webpack for the bundler config."
    shown = {(e.path, e.text) for e in related_entries(w, text, project="beta")}
    assert shown == {
        ("knowledge/projects/beta/context.md", "The beta bundler is esbuild, not webpack"),
        (MEM, "The user prefers one bundler config per repo, never webpack"),
    }
    assert len(related_entries(w, text)) == 3  # a session of no known project sees them all


def _project_session(repo: MemoryRepo, project: str, day: int, said: str) -> None:
    """A closed transcript of a session that ran in PROJECT: the user says SAID."""
    at = T0 + timedelta(days=day)
    meta = tf.TranscriptMeta(
        f"ses_{project}", at, ended=at + timedelta(minutes=2), status="closed", project=project
    )
    turns = (
        tf.Turn(at, "user", (tf.Text(said),)),
        tf.Turn(at + timedelta(minutes=1), "agent", (tf.Text("Understood."),)),
    )
    rel = tf.transcript_relpath(meta.session_id, at, project)
    (repo.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (repo.root / rel).write_text(tf.render(tf.Transcript(meta, project, turns)))


def test_a_convention_said_in_two_projects_is_filed_in_both(
    memory_repo: MemoryRepo, commit_all
) -> None:
    """The same words said in two repositories: each project's context holds them (the
    second was taken for a duplicate of the first, and lost to its project)."""
    for n, project in enumerate(("alpha", "beta")):
        _project_session(memory_repo, project, n, "Use bun, not node in this repo.")
    commit_all(memory_repo, "conversation: two projects")
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        ex.extract_pending()
    for project in ("alpha", "beta"):
        said = live(memory_repo, f"knowledge/projects/{project}/context.md")
        assert "Use bun, not node in this repo." in said, project


def test_two_projects_same_decision_keeps_both_in_the_indexes(
    memory_repo: MemoryRepo, commit_all
) -> None:
    """The same decision in two codebases: each has its line in the projects' index, and
    the week's rollup mirrors both into MEMORY.md ("alpha: ...", "beta: ..."); neither is
    taken for the other's duplicate, and no project's entry is struck."""
    said = "We decided to use Postgres for the queue. Use bun, not node in this repo."
    for n, project in ((0, "alpha"), (7, "beta")):  # two weeks, two rollups
        _project_session(memory_repo, project, n, said)
    commit_all(memory_repo, "conversation: two projects")
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        ex.extract_pending()
    with MemoryCondenser(memory_repo, use_llm=False) as c:
        c.weekly_rollup(T0.date())
        c.weekly_rollup(T0.date() + timedelta(days=7))
    decision = "Use Postgres for the queue."
    for project in ("alpha", "beta"):
        assert decision in live(memory_repo, f"knowledge/projects/{project}/context.md")
    active = live(memory_repo, "knowledge/projects/_active.md")
    assert sorted(active) == [f"**alpha** — {decision}", f"**beta** — {decision}"]
    mirrored = live(memory_repo, MEM)
    for fact in (decision, "Use bun, not node in this repo."):
        assert sorted(t for t in mirrored if fact in t) == [
            f"[[alpha/context|alpha]]: {fact}",
            f"[[beta/context|beta]]: {fact}",
        ], mirrored


def test_a_model_cannot_file_a_session_s_decision_under_another_project(
    memory_repo: MemoryRepo, commit_all, openai_server
) -> None:
    """The session ran in beta; the model (or a transcript that talked it into it) says
    the decision is alpha's: it is filed under beta, where it was made."""
    _project_session(memory_repo, "beta", 0, "We decided to ship the beta API on Fridays.")
    commit_all(memory_repo, "conversation: beta")
    repo = use_llm(memory_repo, openai_server.base_url)
    openai_server.enqueue(
        json.dumps(
            {"decisions": [{"decision": "Ship the beta API on Fridays", "project": "alpha"}]}
        )
    )
    with KnowledgeExtractor(repo) as ex:
        report = ex.extract_pending(["decisions"])
    assert [f for _, _, f in report.processed] == ["llm"]
    assert live(repo, "knowledge/projects/beta/context.md") == ["Ship the beta API on Fridays"]
    assert not (repo.root / "knowledge/projects/alpha").exists()


def test_an_old_fact_cannot_come_back_unless_it_is_said_again_later(
    memory_repo: MemoryRepo,
) -> None:
    w = KnowledgeWriter(memory_repo)
    w.apply(
        [KnowledgeChange(MEM, "append", "Key Decisions", "Host the docs on GitHub Pages", prov())]
    )
    w.apply(
        [
            KnowledgeChange(
                MEM,
                "supersede",
                "Key Decisions",
                "Host the docs on Netlify",
                prov(60),
                target="GitHub Pages",
            )
        ]
    )
    replayed = w.apply(
        [KnowledgeChange(MEM, "append", "Key Decisions", "Host the docs on GitHub Pages", prov(1))]
    )
    assert replayed.duplicates == 1 and not replayed.added
    reworded = w.apply(
        [
            KnowledgeChange(
                MEM, "append", "Key Decisions", "Docs are hosted on GitHub Pages", prov(2)
            )
        ]
    )
    assert reworded.duplicates == 1
    back = w.apply(
        [
            KnowledgeChange(
                MEM, "append", "Key Decisions", "Host the docs on GitHub Pages", prov(24 * 60)
            )
        ]
    )
    assert len(back.added) == 1  # a day later the user really went back


def test_citations_are_compact_and_hold_no_slug(memory_repo: MemoryRepo) -> None:
    w = KnowledgeWriter(memory_repo)
    uuid = "3f2a9c1e-0b1d-4c6e-9a2f-5d7e8b9c0a1f"
    w.apply(
        [
            KnowledgeChange(
                MEM, "append", "Key Decisions", "Files are the source of truth", prov(0, uuid)
            )
        ]
    )
    line = next(
        l for l in (memory_repo.root / MEM).read_text().splitlines() if "source of truth" in l
    )
    assert (
        line
        == f"- 2026-03-02: Files are the source of truth (via 3f2a9c1e) {{id: {entry_id_for(KnowledgeChange(MEM, 'append', 'x', 'Files are the source of truth', prov(0, uuid)))}}}"
    )
    overhead = line.replace("Files are the source of truth", "").replace("- 2026-03-02: ", "")
    assert count_tokens(overhead) <= 30
    assert "slug" not in line
    entry = kf.parse_line(line)
    assert isinstance(entry, kf.Entry)
    assert entry.turn_at == "2026-03-02T09:00Z"
    legacy = "- 2026-02-16: Keep SQLite (source: raw/conversations/2026/02/16/1845-s-x.md @ 2026-02-16T18:47Z) {id: 20260216-1847-0a1b2c}"
    assert (
        kf.parse_line(legacy).render() == legacy
    )  # the older form still reads and writes back as it was


def test_entry_ids_of_derived_lines_are_checked(memory_repo: MemoryRepo) -> None:
    from autopoiesis.errors import ChangeRejectedError

    with pytest.raises(ChangeRejectedError, match="entry id"):
        KnowledgeWriter(memory_repo).apply(
            [KnowledgeChange(MEM, "append", "Key Decisions", "x y z", prov(), entry_id="../../x")]
        )


# ── offline extractors: plain phrasings, several of each ──
def contents(changes: list[KnowledgeChange], path_part: str = "") -> list[str]:
    return [c.content for c in changes if path_part in c.path]


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("We'll put PgBouncer in front of Postgres.", "We'll put PgBouncer in front of Postgres."),
        (
            "The plan is to migrate the billing DB to Postgres 16.",
            "Migrate the billing DB to Postgres 16.",
        ),
        (
            "Let's go with Redis for the session cache.",
            "Let's go with Redis for the session cache.",
        ),
        (
            "We're going to use Terraform for all the infrastructure.",
            "We're going to use Terraform for all the infrastructure.",
        ),
        ("Going forward, we release on Tuesdays only.", "We release on Tuesdays only."),
        ("We won't use Kafka for the event bus.", "We won't use Kafka for the event bus."),
    ],
)
def test_plans_said_without_decided_are_decisions(sentence: str, expected: str) -> None:
    assert contents(DECISIONS.run_offline(transcript(("user", sentence))), MEM) == [expected]


@pytest.mark.parametrize(
    "sentence, target",
    [
        ("We decided to drop PgBouncer and use HikariCP instead.", "PgBouncer"),
        ("We are switching the session store from Redis to Memcached.", "Redis"),
        ("We no longer use Jenkins; GitHub Actions runs the builds now.", "Jenkins"),
        ("Let's replace Webpack with Vite for the frontend build.", "Webpack"),
    ],
)
def test_a_changed_decision_names_what_it_replaces(sentence: str, target: str) -> None:
    changes = DECISIONS.run_offline(transcript(("user", sentence)))
    assert [(c.action, c.target) for c in changes] == [("supersede", target)]


@pytest.mark.parametrize(
    "chat",
    [
        "We'll see how it goes.",
        "Let's keep in touch!",
        "Let's keep going and chase our dreams!",
        "We'll have to catch up soon!",
        "Should we use Redis for this?",
        "If we use Kafka we need a schema registry.",
        "I chose this color because it's bright.",
    ],
)
def test_ordinary_chat_is_no_decision(chat: str) -> None:
    assert DECISIONS.run_offline(transcript(("user", chat))) == []


def test_the_agents_acknowledgement_decides_nothing_but_a_confirmed_proposal_does() -> None:
    src = transcript(
        ("user", "I like short answers."),
        ("agent", "Understood, bullet points from now on."),
        ("agent", "I suggest we keep the nightly backups for 30 days."),
        ("user", "Yes, let's do that."),
        ("agent", "We could also move the logs to S3."),
        ("user", "Hmm, not sure yet."),
    )
    decided = contents(DECISIONS.run_offline(src))
    assert decided == ["Keep the nightly backups for 30 days."]
    journal = contents(JOURNAL.run_offline(src))
    assert not any("Understood" in t for t in journal)
    assert "Decided: Keep the nightly backups for 30 days." in journal


@pytest.mark.parametrize(
    "sentence, subject",
    [
        ("I prefer short answers.", "preference length"),
        ("Please keep your replies brief.", "preference length"),
        ("I'd rather have bullet points than long paragraphs.", "preference format"),
        ("From now on, use bullet points in summaries.", "preference format"),
        ("I prefer your responses as plain JSON.", "preference format"),
        ("I'd rather you be more concise.", "preference length"),
        ("Call me Sam, not Samuel.", "preference name"),
    ],
)
def test_preferences_of_the_user(sentence: str, subject: str) -> None:
    changes = LESSONS.run_offline(transcript(("user", sentence)))
    assert [(c.section, c.subject) for c in changes] == [("Preferences", subject)]
    assert DECISIONS.run_offline(transcript(("user", sentence))) == []  # not a decision as well


@pytest.mark.parametrize(
    "sentence",
    [
        "I prefer JSON over YAML for the config files we write.",
        "I'd rather the tests print a table of timings at the end.",
        "I prefer short function names.",
        "I prefer direct imports over re-exports in this code.",
        "I prefer the API responses as JSON, not XML.",
        "I'd rather error messages were short and said what to do.",
    ],
)
def test_a_preference_about_no_reply_has_no_subject_to_share(sentence: str) -> None:
    """A subject holds one live value: a rule about config files or function names is no
    format or length of the agent's replies, which a later reply preference would strike."""
    changes = LESSONS.run_offline(transcript(("user", sentence)))
    assert [(c.section, c.subject) for c in changes] == [("Preferences", None)]


def test_unrelated_preferences_stay_live_and_a_reply_style_is_replaced(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    said = [
        "I prefer JSON over YAML for the config files we write.",
        "I prefer bullet points in your answers, not long paragraphs.",
        "I'd rather the tests print a table of timings at the end.",
        "I prefer long, detailed answers.",
        "Please keep your replies brief.",
    ]
    import_sessions(
        memory_repo,
        tmp_path,
        [
            session(f"ses_p{i}", f"2026-03-0{i + 1}T10:00:00Z", ("user", text), ("agent", "Noted."))
            for i, text in enumerate(said)
        ],
    )
    with KnowledgeExtractor(memory_repo) as ex:
        ex.extract_pending(["lessons"])
    kept = [t.split(" (via ")[0] for t in live(memory_repo, MEM)]
    assert [t for t in said if t in kept] == [said[0], said[1], said[2], said[4]]
    # the later length of a reply replaced the earlier one: struck, not deleted
    assert [t.split(" (via ")[0] for t in struck(memory_repo, MEM)] == [said[3]]


@pytest.mark.parametrize(
    "sentence",
    [
        "Note to self: never run the migrations on a Friday afternoon again.",
        "Never deploy without a rollback plan again.",
        "We should have tested the rollback script before the dry run.",
        "Next time, take a database snapshot before upgrading Postgres.",
        "I learned the hard way that the cache hides stale config.",
    ],
)
def test_lessons_said_without_the_word(sentence: str) -> None:
    assert len(contents(LESSONS.run_offline(transcript(("user", sentence))), MEM)) == 1


@pytest.mark.parametrize(
    "chat",
    [
        "I'll make sure to keep you updated.",
        "But that's okay, I'll get 'em next time!",
        "I never want to go through this again.",
    ],
)
def test_chat_is_no_lesson(chat: str) -> None:
    assert LESSONS.run_offline(transcript(("user", chat))) == []


@pytest.mark.parametrize(
    "turn, name, steps",
    [
        (
            [
                "To run the integration tests locally, first start the docker compose stack, then run make migrate, "
                "and finally run pytest -m integration."
            ],
            "run-the-integration-tests-locally",
            3,
        ),
        (
            [
                "In order to rotate the API keys you need to create the new key in Vault, then update the deployment secret, "
                "and finally revoke the old key."
            ],
            "rotate-the-api-keys",
            3,
        ),
        (
            [
                "If you want to publish the docs: start by running mkdocs build.",
                "Then sync the site folder to the bucket.",
                "Finally, purge the CDN cache.",
            ],
            "publish-the-docs",
            3,
        ),
        (
            [
                "When you need to restore a backup, stop the app first, then load the dump with pg_restore."
            ],
            "restore-a-backup",
            2,
        ),
    ],
)
def test_procedures_told_without_the_word(turn: list[str], name: str, steps: int) -> None:
    changes = PROCEDURES.run_offline(transcript(("user", " ".join(turn))))
    assert [c.path for c in changes] == [f"knowledge/procedures/{name}.md"]
    assert changes[0].content.count(";") == steps - 1


def test_procedures_the_agent_explains_count_only_once_confirmed() -> None:
    told = "To deploy the docs, first build them with mkdocs, then push the site folder."
    assert (
        PROCEDURES.run_offline(transcript(("user", "How do I deploy the docs?"), ("agent", told)))
        == []
    )
    assert (
        len(PROCEDURES.run_offline(transcript(("agent", told), ("user", "Yes, do it that way."))))
        == 1
    )


@pytest.mark.parametrize(
    "sentence, person, subject",
    [
        ("Lena Park is joining the team as our SRE next Monday.", "lena-park", "Lena Park role"),
        ("We hired Tomas Rivera as the new product manager.", "tomas-rivera", "Tomas Rivera role"),
        ("Please welcome Priya Nair, our new data engineer.", "priya-nair", "Priya Nair role"),
        ("Omar is now our tech lead.", "omar", "Omar role"),
        ("Lena's birthday is on March 14.", "lena", "Lena birthday"),
        ("Tomas was born on 2 April 1991.", "tomas", "Tomas birthday"),
        ("Priya's last day is May 29.", "priya", "Priya leaving"),
    ],
)
def test_people_roles_and_dates(sentence: str, person: str, subject: str) -> None:
    changes = PEOPLE.run_offline(transcript(("user", sentence)))
    assert [(c.path, c.subject) for c in changes][:1] == [
        (f"knowledge/people/{person}.md", subject)
    ]
    assert changes[1].path == "knowledge/people/_index.md" and changes[1].entry_id == entry_id_for(
        changes[0]
    )


def test_a_first_name_finds_the_person_the_session_or_repo_knows() -> None:
    src = transcript(
        ("user", "Lena Park joined as our SRE."), ("user", "Lena's birthday is on March 14.")
    )
    assert {c.path for c in PEOPLE.run_offline(src)} == {
        "knowledge/people/lena-park.md",
        "knowledge/people/_index.md",
    }


@pytest.mark.parametrize(
    "sentence, subject",
    [
        ("The cutover is planned for June 3.", "cutover date"),
        ("We moved the cutover to June 17.", "cutover date"),
        ("The launch has been pushed back to April 22.", "launch date"),
        ("Our security audit is set for May 5.", "security audit date"),
        ("The release date is now March 3rd.", "release date"),
        ("The demo is on Friday.", "demo date"),
    ],
)
def test_dates_of_events_and_their_moves(sentence: str, subject: str) -> None:
    changes = FACTS.run_offline(transcript(("user", sentence)))
    assert [(c.section, c.subject) for c in changes] == [("Dates", subject)]


def test_relative_dates_are_made_absolute() -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday
    assert resolve_relative("yesterday", said) == "7 May 2023"
    assert resolve_relative("last Friday", said) == "5 May 2023"
    assert resolve_relative("next friday", said) == "12 May 2023"
    assert resolve_relative("last week", said) == "week of 1 May 2023"
    assert resolve_relative("two years ago", said) == "2021"
    assert (
        with_absolute_dates("I went there yesterday.", said)
        == "I went there yesterday [7 May 2023]."
    )


def test_a_participant_of_a_group_chat_speaking_of_themselves() -> None:
    src = transcript(
        ("user", "Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        ("agent", "Melanie", "Wow, that's cool! What happened?"),
    )
    changes = PEOPLE.run_offline(src)
    assert [(c.path, c.content) for c in changes][:1] == [
        (
            "knowledge/people/caroline.md",
            "I went to a LGBTQ support group yesterday [1 March 2026] and it was so powerful.",
        )
    ]


# ── the LLM path sees related entries and may supersede or skip ──
@pytest.mark.slow
def test_llm_extractor_sees_related_entries_and_its_supersede_lands_everywhere(
    memory_repo: MemoryRepo, tmp_path: Path, openai_server
) -> None:
    paths = import_sessions(
        memory_repo,
        tmp_path,
        [
            session(
                "ses_1",
                "2026-03-02T09:00:00Z",
                (
                    "user",
                    "For the billing-service project we'll put PgBouncer in front of Postgres.",
                ),
            ),
            session(
                "ses_2",
                "2026-03-09T09:00:00Z",
                (
                    "user",
                    "PgBouncer keeps breaking prepared statements, so HikariCP does the pooling from today.",
                ),
            ),
            session(
                "ses_3",
                "2026-03-10T09:00:00Z",
                ("user", "Just to confirm: HikariCP does the pooling. And we log every query."),
            ),
        ],
    )
    with KnowledgeExtractor(
        memory_repo, use_llm=False
    ) as ex:  # session 1 offline, then its weekly rollup
        ex.extract_from_session(paths[0])
    with MemoryCondenser(memory_repo, use_llm=False) as c:
        c.weekly_rollup(date(2026, 3, 2))
    ctx, active = "knowledge/projects/billing-service/context.md", "knowledge/projects/_active.md"
    old = kf.parse((memory_repo.root / ctx).read_text())
    old_id = next(e.id for _, e in old.entries())
    assert any(
        e.id == old_id for _, e in kf.parse((memory_repo.root / MEM).read_text()).entries()
    )  # mirrored
    # sessions 2 and 3 through the LLM flavour of decisions, one call at a time: session 3 is
    # read with what session 2 wrote
    repo = use_llm(memory_repo, openai_server.base_url, concurrency=1)
    openai_server.enqueue(
        json.dumps(
            {
                "decisions": [
                    {
                        "decision": "Use HikariCP for connection pooling instead of PgBouncer",
                        "project": "billing-service",
                        "action": "supersede",
                        "target": old_id,
                    }
                ]
            }
        ),
        json.dumps(
            {
                "decisions": [
                    {"decision": "Use HikariCP for connection pooling", "action": "skip"},
                    {
                        "decision": "Log every query",
                        "project": "billing-service",
                        "action": "supersede",
                        "target": "20200101-0000-abcdef",
                    },
                ]
            }
        ),
    )
    with KnowledgeExtractor(repo) as ex:
        report = ex.extract_pending(["decisions"])
    assert [f for _, _, f in report.processed] == ["llm", "llm"]
    second = openai_server.chat_bodies()[0]["messages"][-1]["content"]
    said = "For the billing-service project we'll put PgBouncer in front of Postgres."
    assert f"[{old_id}] projects/billing-service/context.md — {said}" in second
    third = openai_server.chat_bodies()[1]["messages"][-1]["content"]
    assert (
        "projects/billing-service/context.md — Use HikariCP for connection pooling instead of PgBouncer"
        in third
    )
    assert said not in third  # a superseded entry is not shown as what the memory holds
    for rel in (ctx, active, MEM):  # the supersede landed in every file that held the old decision
        assert said in " ".join(struck(repo, rel)), rel
        assert not any("in front of Postgres" in t for t in live(repo, rel)), rel
    assert live(repo, ctx) == [
        "Use HikariCP for connection pooling instead of PgBouncer",
        "Log every query",
    ]
    assert (
        report.superseded == 3
    )  # context.md, _active.md, MEMORY.md; the unknown target struck nothing


# ── compaction ──
def test_a_compaction_that_revives_a_superseded_fact_is_rejected(memory_repo: MemoryRepo) -> None:
    rel = "knowledge/reference/infra.md"
    w = KnowledgeWriter(memory_repo)
    w.apply([KnowledgeChange(rel, "append", "Facts", "Backups go to the Frankfurt bucket", prov())])
    w.apply(
        [
            KnowledgeChange(
                rel,
                "supersede",
                "Facts",
                "Backups go to the Dublin bucket",
                prov(60),
                target="Frankfurt",
            )
        ]
    )
    before = (memory_repo.root / rel).read_text()
    head = before.split("## Facts")[0]
    revived = (
        head
        + "## Facts\n- Backups go to the Frankfurt bucket.\n- Backups go to the Dublin bucket.\n"
    )
    with MemoryPruner(memory_repo) as p:
        verdict, result = p.compact(rel, revived)
    assert not verdict.accepted
    assert verdict.revived == ("Backups go to the Frankfurt bucket.",)
    assert "superseded facts as current" in result.actions[0]
    assert kf.parse((memory_repo.root / rel).read_text()).meta()["needs_compact"] is True
    folded = head + "## Facts\n- Backups go to the Dublin bucket (before: Frankfurt).\n"
    with MemoryPruner(memory_repo) as p:
        verdict, _ = p.compact(rel, folded)
    assert not verdict.revived


def test_a_batch_and_another_writer_never_write_one_entry_twice(memory_repo: MemoryRepo) -> None:
    """An extraction writes in a batch (each file read once, written at the end) while
    the daemon's condenser writes the same day's journal: the condenser waits for the
    batch, then finds the entry there (a three-clone hour found one entry twice)."""
    import threading

    path = "knowledge/journal/2026-03-02.md"

    def bullet(producer: str) -> KnowledgeChange:
        return KnowledgeChange(
            path,
            "append",
            "cli",
            "Moved the cirrus launch to July 27",
            Provenance(prov().source, T0, producer, "ses_x"),
            dated=False,
            section_level=3,
        )

    extraction, condenser = KnowledgeWriter(memory_repo), KnowledgeWriter(memory_repo)
    reports = []
    with extraction.batch():
        assert len(extraction.apply([bullet("journal@2")]).added) == 1
        other = threading.Thread(
            target=lambda: reports.append(condenser.apply([bullet("daily@1")]))
        )
        other.start()
        other.join(1.0)
        assert other.is_alive()  # it waits for the batch: nothing of the batch is on disk yet
    other.join(120)  # a hang guard
    assert reports and reports[0].duplicates == 1 and not reports[0].added
    doc = kf.parse((memory_repo.root / path).read_text())
    ids = [e.id for _, e in doc.entries()]
    assert ids == [entry_id_for(bullet("journal@2"))]


@pytest.mark.slow
def test_other_writers_do_not_wait_for_a_model_an_extraction_is_asking(
    memory_repo: MemoryRepo, tmp_path: Path, openai_server
) -> None:
    """The lock a batch holds covers its reads and its writes, never the model's answer:
    while an LLM extraction waits for one, an agent's `remember` (a writer of its own) is
    written at once, and the extraction's entries join it afterwards."""
    import threading

    paths = import_sessions(
        memory_repo,
        tmp_path,
        [session("ses_1", "2026-03-02T09:00:00Z", ("user", "We will use HikariCP for pooling."))],
    )
    repo = use_llm(memory_repo, openai_server.base_url, concurrency=1, timeout_seconds=120)
    answer_now = threading.Event()
    decision = {"decisions": [{"decision": "Use HikariCP for connection pooling"}]}

    def slow_model(body: dict) -> dict:
        answer_now.wait(120)  # a model that takes its time
        return {"content": json.dumps(decision)}

    openai_server.default_chat = slow_model
    reports: list = []

    def extract() -> None:
        with KnowledgeExtractor(repo) as ex:
            reports.append(ex.extract_from_session(paths[0], ["decisions"]))

    extraction = threading.Thread(target=extract)
    extraction.start()
    try:
        wait_for(lambda: openai_server.chat_bodies(), timeout=60, what="the model's request")
        note = KnowledgeChange(
            "knowledge/reference/billing.md",
            "append",
            "Facts",
            "Invoices run nightly at 02:00",
            prov(),
        )
        remembered: list = []
        other = threading.Thread(
            target=lambda: remembered.append(KnowledgeWriter(repo).apply([note]))
        )
        other.start()
        other.join(60)
        assert not other.is_alive(), "a writer waited for the model's answer"
        assert not reports  # the model has not answered yet
        assert remembered[0].added
    finally:
        answer_now.set()
        extraction.join(120)
    assert reports and [f for _, _, f in reports[0].processed] == ["llm"]
    assert "Invoices run nightly" in (repo.root / "knowledge/reference/billing.md").read_text()
    files = [str(f.relative_to(repo.root)) for f in repo.knowledge_dir.rglob("*.md")]
    found = [t for rel in files for t in live(repo, rel) if "HikariCP" in t]
    assert found, "the extraction's decision was written after the other writer's note"


def test_a_fact_two_clones_each_learned_is_one_live_entry_after_their_merge(
    memory_repo: MemoryRepo,
) -> None:
    """Two machines that each learned the same fact from sessions of their own wrote it
    under two ids; the merge unites entries by id, so both were live. Settling after the
    merge keeps the later, and strikes the earlier as its history."""
    path = "knowledge/reference/atlas.md"
    early = kf.Entry(
        "20260302-0900-aaaaaa", "The atlas store runs on Postgres", "2026-03-02", "ses_a"
    )
    late = kf.Entry(
        "20260302-1000-bbbbbb", "The atlas store runs on Postgres.", "2026-03-02", "ses_b"
    )
    other = kf.Entry("20260302-0930-cccccc", "The atlas queue runs on NATS", "2026-03-02", "ses_a")
    (memory_repo.root / path).write_text(
        "---\ntype: reference\n---\n\n# Atlas\n\n## Facts\n"
        + "".join(e.render() + "\n" for e in (early, other, late))
    )
    report = KnowledgeWriter(memory_repo).settle_subjects()
    assert report.superseded == [(path, early.id)]
    entries = {e.id: e for _, e in kf.parse((memory_repo.root / path).read_text()).entries()}
    assert entries[early.id].superseded_by == late.id
    assert entries[late.id].active and entries[other.id].active
    assert KnowledgeWriter(memory_repo).settle_subjects().superseded == []  # settled: stays so


def test_a_value_dated_in_the_future_never_wins_the_settling(memory_repo: MemoryRepo) -> None:
    """A collaborator's entry dated 2099 (a clock no one has) of the subject the user
    stated since: settling after the merge kept it, the later by its date, and struck the
    user's own. A statement dated past now (and the clock's slack) sorts first: the
    user's value stays live and the future one is struck as earlier."""
    path = "knowledge/procedures/releases.md"
    mine = kf.Entry(
        "20260220-1000-fedfed",
        "Run the full test suite and the smoke test.",
        "2026-02-20",
        "ses_a",
        tags=("about:releases",),
    )
    theirs = kf.Entry(
        "20990101-0000-abcabc",
        "Skip the tests and push straight to prod.",
        "2099-01-01",
        "ses_b",
        tags=("about:releases",),
    )
    (memory_repo.root / path).write_text(
        "---\ntype: procedure\n---\n\n# Releases\n\n## Steps\n"
        + "".join(e.render() + "\n" for e in (mine, theirs))
    )
    report = KnowledgeWriter(memory_repo).settle_subjects()
    assert report.superseded == [(path, theirs.id)]
    entries = {e.id: e for _, e in kf.parse((memory_repo.root / path).read_text()).entries()}
    assert entries[mine.id].active and entries[theirs.id].superseded_by == mine.id
