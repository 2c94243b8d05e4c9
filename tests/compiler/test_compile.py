"""ContextCompiler against real memory repos: slots, budgets, determinism, shared
contexts, history window, the real search index for P3, and the pre-compaction flush."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from autopoiesis.cli import app
from autopoiesis.compiler import (
    ContextCompiler,
    HistoryMessage,
    ScoredItem,
    load_session,
)
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.core.text import count_tokens
from autopoiesis.errors import BudgetTooSmallError
from autopoiesis.knowledge.flush import apply_flush, flush_prompt, parse_flush
from autopoiesis.memory.usage import inclusion_counts, record_inclusions
from autopoiesis.topics.loader import load_topics
from tests.conftest import Cli

TODAY = date(2026, 2, 16)
NOW = datetime(2026, 2, 16, 12, tzinfo=UTC)


def history(n: int) -> list[HistoryMessage]:
    out = []
    for i in range(n):
        if i % 3 == 2:
            out.append(HistoryMessage("agent", "line one\nline two\n" * 50, f"m{i}", tool="exec"))
        else:
            out.append(
                HistoryMessage(
                    "user" if i % 3 == 0 else "agent", f"turn {i}: " + "words " * 20, f"m{i}"
                )
            )
    return out


@pytest.fixture
def repo(memory_repo: MemoryRepo) -> MemoryRepo:
    k = memory_repo.knowledge_dir
    (k / "journal" / "2026-02-16.md").write_text(
        "---\ntype: journal\n---\n## 2026-02-16\n- today entry\n"
    )
    (k / "journal" / "2026-02-15.md").write_text("## 2026-02-15\n- yesterday entry\n")
    (k / "journal" / "2026-02-10.md").write_text("## 2026-02-10\n- old entry\n")
    (k / "memory" / "MEMORY.md").write_text(
        "# Core Memory\n- 2026-02-14: secret main-session fact\n"
    )
    return memory_repo


def _indexed_and_compiled(repo: MemoryRepo, message: str):
    """MESSAGE's context once the index holds the memory's files as they are now."""
    from autopoiesis.index import SearchIndex

    with SearchIndex(repo) as idx:
        idx.rebuild_full()
    with ContextCompiler(repo) as comp:
        return comp.compile(message, today=TODAY, now=NOW)


def compile_(repo: MemoryRepo, **kw):
    kw.setdefault("available_knowledge", [])
    with ContextCompiler(repo) as c:
        return c.compile("hello", today=TODAY, now=NOW, **kw)


def test_slots_and_labels(repo: MemoryRepo) -> None:
    (repo.knowledge_dir / "projects" / "_active.md").write_text(
        "# Active Projects\n- **shop** — Ship the cart on Friday\n"
    )
    topics = load_topics(repo).topics
    res = compile_(repo, active_topics=topics, session_history=history(2))
    labels = [s.label for s in res.sections if s.included]
    # the prompt shows P0 first: the system prompt, then the identity files (these are the
    # template's, placed last in the room left, and shown in their place)
    shown = [line[5:-4] for line in res.prompt.split("\n") if line.startswith("<!-- ")]
    assert shown[:5] == [
        "system",
        "identity:SOUL.md",
        "identity:USER.md",
        "identity:AGENTS.md",
        "identity:TOOLS.md",
    ]
    assert {
        "memory",
        "journal:2026-02-16",
        "journal:2026-02-15",
        "projects",
        "topic:github-pr-review",
        "topic:code-quality",
        "history:m0",
        "history:m1",
    } <= set(labels)
    assert "old entry" not in res.prompt
    assert "today entry" in res.prompt
    assert "yesterday entry" in res.prompt
    assert "<!-- identity:SOUL.md -->" in res.prompt
    # the PR topic is high priority: injected before code-quality (medium)
    assert res.prompt.index("topic:github-pr-review") < res.prompt.index("topic:code-quality")
    # its subscription _active.md is already loaded as P1: not twice
    sub = next(s for s in res.sections if s.label == "sub:knowledge/projects/_active.md")
    assert not sub.included
    assert "already included" in sub.reason
    assert res.prompt.count("# Active Projects") == 1
    assert res.total_tokens == count_tokens(res.prompt) <= res.budget


def test_shared_context_leaves_memory_out_even_from_search(repo: MemoryRepo) -> None:
    leak = [ScoredItem(MEMORY_FILE, 1.0, "secret main-session fact", 1, 2)]
    res = compile_(repo, shared=True, available_knowledge=leak)
    assert "secret main-session fact" not in res.prompt
    mem = next(s for s in res.sections if s.label == "memory")
    assert not mem.included
    assert "shared" in mem.reason
    assert "secret main-session fact" in compile_(repo).prompt


def test_a_byte_that_is_not_utf8_in_memory_leaves_none_of_its_lines_out(
    repo: MemoryRepo,
) -> None:
    """A hand edit saved as Latin-1 (one byte that is not UTF-8): the core memory is still
    in the prompt, that byte shown as U+FFFD, not the whole file dropped without a word."""
    mem = repo.root / MEMORY_FILE
    mem.write_bytes(mem.read_bytes() + b"- 2026-02-15: the caf\xe9 on Main Street opens at 7\n")
    res = compile_(repo)
    assert "secret main-session fact" in res.prompt
    assert "the caf\ufffd on Main Street opens at 7" in res.prompt
    assert next(s for s in res.sections if s.label == "memory").included


def test_deterministic(repo: MemoryRepo) -> None:
    topics = load_topics(repo).topics
    a = compile_(repo, active_topics=topics, session_history=history(30), budget=1500)
    b = compile_(
        repo, active_topics=list(reversed(topics)), session_history=history(30), budget=1500
    )
    assert a.prompt == b.prompt
    assert a.sections == b.sections


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # read-only use of the repo
@given(
    budget=st.integers(min_value=420, max_value=5000), turns=st.integers(min_value=0, max_value=60)
)
def test_never_exceeds_the_budget(memory_repo: MemoryRepo, budget: int, turns: int) -> None:
    topics = load_topics(memory_repo).topics
    items = [
        ScoredItem(f"knowledge/reference/r{i}.md", 1.0 / (i + 1), "fact " * 80, 1, 5)
        for i in range(10)
    ]
    res = compile_(
        memory_repo,
        active_topics=topics,
        session_history=history(turns),
        budget=budget,
        available_knowledge=items,
    )
    assert count_tokens(res.prompt) == res.total_tokens <= budget
    # the system prompt is never dropped; the identity files here are the template's (a
    # written one's head never is: test_a_written_identity_is_never_dropped_a_template_may_be)
    assert all(s.included for s in res.sections if s.label == "system")


def test_budget_smaller_than_identity_is_a_clear_error(repo: MemoryRepo) -> None:
    with pytest.raises(BudgetTooSmallError, match="never dropped.*Raise --budget"):
        compile_(repo, budget=100)
    out = CliRunner().invoke(app, ["-C", str(repo.root), "compile", "x", "--budget", "100"])
    assert out.exit_code != 0


def test_history_sliding_window_newest_first_tools_on_one_line(repo: MemoryRepo) -> None:
    msgs = history(60)
    res = compile_(repo, session_history=msgs, budget=1400)
    kept = [s.label for s in res.sections if s.label.startswith("history:") and s.included]
    assert kept
    assert kept[0] == "history:m59"  # newest considered first
    n_kept = len(kept)
    assert res.dropped_history == 60 - n_kept
    assert res.flush_due
    # chronological in the prompt, and the kept turns are the newest ones
    assert res.prompt.index(f"history:m{60 - n_kept}") < res.prompt.index("history:m59")
    assert "[tool:exec] line one line two" in res.prompt
    assert "line one\nline two" not in res.prompt
    small = compile_(repo, session_history=history(2))
    assert small.dropped_history == 0
    assert not small.flush_due


def test_scored_knowledge_from_the_real_index_with_frequency_counts(repo: MemoryRepo) -> None:
    from autopoiesis.index import SearchIndex

    ref = repo.knowledge_dir / "reference"
    (ref / "kubernetes.md").write_text(
        "# Kubernetes\n\nOur cluster runs on kubernetes with three nodes in Frankfurt.\n"
    )
    (ref / "cooking.md").write_text("# Cooking\n\nPasta needs salted boiling water.\n")
    with SearchIndex(repo) as idx:
        idx.rebuild_full()
    with ContextCompiler(repo) as comp:
        res = comp.compile("how many kubernetes nodes does the cluster have?", today=TODAY, now=NOW)
        hit = [
            s
            for s in res.sections
            if s.label.startswith("knowledge:knowledge/reference/kubernetes.md")
        ]
        assert hit
        assert hit[0].included
        assert "recency" in hit[0].reason
        assert "three nodes in Frankfurt" in res.prompt
        record_inclusions(repo, res.knowledge_paths)
        record_inclusions(repo, res.knowledge_paths)
        counts = json.loads((repo.state_dir / "compiler" / "inclusions.json").read_text())
        assert counts["knowledge/reference/kubernetes.md"] == 2
        again = comp.compile(
            "how many kubernetes nodes does the cluster have?",
            today=TODAY,
            now=NOW,
            usage=inclusion_counts(repo),
        )
        assert (
            "frequency 1.20"
            in next(
                s for s in again.sections if s.path == "knowledge/reference/kubernetes.md"
            ).reason
        )


def test_a_compiler_given_an_open_index_searches_it_and_leaves_it_open(repo: MemoryRepo) -> None:
    # the viewer's compiler shares the index its search page keeps open
    from autopoiesis.index import SearchIndex

    (repo.knowledge_dir / "reference" / "kubernetes.md").write_text(
        "# Kubernetes\n\nOur cluster runs on kubernetes with three nodes in Frankfurt.\n"
    )
    with SearchIndex(repo) as idx:
        idx.rebuild_full()
        searches = idx.query.bm25.searches
        with ContextCompiler(repo, index=idx) as comp:
            res = comp.compile("how many kubernetes nodes?", today=TODAY, now=NOW)
        assert "three nodes in Frankfurt" in res.prompt
        assert idx.query.bm25.searches > searches  # its search, not one of its own
        assert idx.is_current()  # still open for its owner
        assert idx.search("kubernetes nodes", 3)[0].path == "knowledge/reference/kubernetes.md"
    assert not idx.is_current()


def test_compile_cli_json_shape_and_session_transcript(repo: MemoryRepo, tmp_path) -> None:
    from autopoiesis.formats.transcript import (
        Text,
        ToolCall,
        Transcript,
        TranscriptMeta,
        Turn,
        render,
    )

    t = Transcript(
        TranscriptMeta("ses_a1", NOW, status="closed", ended=NOW),
        "Test",
        (
            Turn(NOW, "user", (Text("please check the deploy"),)),
            Turn(
                NOW,
                "agent",
                (ToolCall("exec", "kubectl get pods", "3 running\nall ok"), Text("All good.")),
            ),
        ),
    )
    f = tmp_path / "s.md"
    f.write_text(render(t))
    msgs = load_session(f)
    assert [m.role for m in msgs] == ["user", "agent", "agent"]
    assert msgs[1].tool == "exec"
    out = CliRunner().invoke(
        app,
        [
            "-C",
            str(repo.root),
            "compile",
            "review the PR",
            "--session",
            str(f),
            "--json",
            "--budget",
            "3000",
        ],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert {"prompt", "total_tokens", "budget", "sections"} <= set(data)
    assert data["budget"] == 3000
    for s in data["sections"]:
        assert {"label", "priority", "tokens", "included", "reason"} <= set(s)
    assert "> [tool:exec] kubectl get pods → 3 running all ok" in data["prompt"]
    explain = CliRunner().invoke(app, ["-C", str(repo.root), "compile", "x", "--explain"])
    assert "identity:SOUL.md" in explain.output
    assert "total" in explain.output


def test_token_estimator() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("internationalization") == 3  # long words split every 8 letters
    assert count_tokens("Hello, world!") == 4
    prose = (
        "The context compiler assembles the densest possible prompt within a token budget. " * 20
    )
    # 14 per sentence of 13 words and a period, as a BPE tokenizer (cl100k) splits it
    assert count_tokens(prose) == 20 * 14
    assert len(prose) / 7 <= count_tokens(prose) <= len(prose) / 4


# ── pre-compaction flush ──
def test_flush_appends_never_overwrites(repo: MemoryRepo) -> None:
    before_memory = (repo.root / MEMORY_FILE).read_text()
    before_journal = (repo.knowledge_dir / "journal" / "2026-02-16.md").read_text()
    prompt = flush_prompt(repo, TODAY)
    assert "FLUSH_OK" in prompt
    assert "2026-02-16" in prompt
    reply = (
        "## journal\n- Migrated the cluster to three nodes\n## memory\n- Always drain nodes before upgrades\n"
        "## project: Autopoiesis Core\n- Decided on RE2 for watcher patterns\n"
    )
    source = "raw/conversations/2026/02/16/0900-s1-cluster.md"
    report = apply_flush(repo, reply, today=TODAY, source=source)
    assert dict(report.written) == {
        "knowledge/journal/2026-02-16.md": 1,
        MEMORY_FILE: 1,
        "knowledge/projects/autopoiesis-core/context.md": 1,
    }

    def body(text: str) -> str:  # frontmatter counters are kept current; the body only grows
        return text.split("\n---\n", 1)[1].lstrip("\n") if text.startswith("---\n") else text

    memory = (repo.root / MEMORY_FILE).read_text()
    assert body(memory).startswith(body(before_memory).rstrip("\n"))
    assert (
        "- 2026-02-16: Always drain nodes before upgrades (via s1-cluster) {id: 20260216-" in memory
    )  # cites the session
    journal = (repo.knowledge_dir / "journal" / "2026-02-16.md").read_text()
    assert body(journal).startswith(body(before_journal).rstrip("\n"))
    assert "- Migrated the cluster to three nodes" in journal
    ctx = (repo.knowledge_dir / "projects" / "autopoiesis-core" / "context.md").read_text()
    assert ctx.startswith("---\ntype: project_context")
    assert "2026-02-16: Decided on RE2" in ctx
    # the same notes again are not duplicated; a path escape in a project name is slugged away
    again = apply_flush(repo, reply, today=TODAY, source=source)
    assert again.nothing_to_do
    assert (repo.root / MEMORY_FILE).read_text() == memory
    apply_flush(repo, "## project: ../../raw\n- sneaky", today=TODAY, source=source)
    assert (repo.knowledge_dir / "projects" / "raw" / "context.md").exists()
    assert apply_flush(repo, "FLUSH_OK", today=TODAY).nothing_to_do
    assert parse_flush('{"journal": ["a"], "projects": {"x": ["b"]}}') == {
        "journal": ["a"],
        "project:x": ["b"],
    }
    # `projects` as a list or a string (an agent's slip) crashed the whole flush: it is
    # left out with a warning, and the journal note of the same reply is kept
    for wrong in ('["billing: x"]', '"billing: x"'):
        with pytest.warns(UserWarning, match="projects"):
            assert parse_flush(f'{{"journal": ["a"], "projects": {wrong}}}') == {"journal": ["a"]}


def test_cli_flush_prompt_and_reply(memory_repo, cli: Cli, git) -> None:

    root = str(memory_repo.root)
    prompt = cli("-C", root, "flush", "--prompt")
    assert prompt.returncode == 0
    assert "FLUSH_OK" in prompt.stdout
    reply = "## memory\n- Rotate the API keys every quarter\n"
    out = cli("-C", root, "flush", input=reply)
    assert out.returncode == 0
    assert "appended 1 entry to knowledge/memory/MEMORY.md" in out.stdout
    assert (
        "Rotate the API keys every quarter"
        in (memory_repo.root / "knowledge/memory/MEMORY.md").read_text()
    )
    # committed by itself: left uncommitted, the next extraction's or maintenance's commit
    # took its notes under that one's message
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    subject = git(memory_repo, "log", "-1", "--format=%s").stdout.strip()
    assert subject == "memory: pre-compaction flush"
    ghost = cli(
        "-C", root, "flush", "--session", "raw/conversations/1999/01/01/gone.md", input=reply
    )
    assert ghost.returncode == 2 and "no such transcript" in ghost.stderr  # a citation is real
    assert "Traceback" not in ghost.stderr
    bad = cli("-C", root, "flush", "--session", "../../etc/passwd", input=reply)
    assert bad.returncode != 0
    assert "outside" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_no_private_file_enters_the_standing_part_or_a_topic(repo: MemoryRepo) -> None:
    """A private file no model may see stays out of P0-P2 as it does out of P3 — the
    current project's file, MEMORY.md, a journal, a topic's subscription — and the
    context's report says why."""
    from autopoiesis.core.private import WITHHELD

    k = repo.knowledge_dir
    (k / "projects" / "acme").mkdir(parents=True, exist_ok=True)
    (k / "projects" / "acme" / "context.md").write_text(
        "# Acme\n\n## Conventions\n- 2026-02-14: The acme vault key is PAPAYA-7.\n"
    )
    (k / "private").mkdir(exist_ok=True)
    (k / "private" / "plans.md").write_text("# Plans\n- The zebra codeword is MANGO-3.\n")
    (repo.root / "topics" / "plans.md").write_text(
        "---\ntype: topic\ndescription: launch plans\ntriggers:\n  - type: keyword\n"
        "    words: [launch]\nsubscriptions:\n  - knowledge/private/plans.md\n---\n"
        "Mind the plans.\n"
    )
    (repo.root / "memory-config.yaml").write_text(
        "private:\n  paths:\n    - knowledge/projects/acme/**\n"
        "    - knowledge/memory/MEMORY.md\n    - knowledge/journal/2026-02-16.md\n",
        encoding="utf-8",
    )
    repo = MemoryRepo(repo.root)
    topics = [t for t in load_topics(repo).topics if t.name == "plans"]
    res = compile_(repo, active_topics=topics, project="acme")
    for secret in ("PAPAYA-7", "MANGO-3", "secret main-session fact", "today entry"):
        assert secret not in res.prompt
    withheld = {s.label for s in res.sections if not s.included and s.reason == WITHHELD}
    assert {"project:acme", "memory", "journal:2026-02-16", "sub:knowledge/private/plans.md"} <= (
        withheld
    )
    assert "yesterday entry" in res.prompt  # what is not private still comes in
    # the project's file does come in once it is not private
    (repo.root / "memory-config.yaml").write_text("{}\n", encoding="utf-8")
    res = compile_(MemoryRepo(repo.root), project="acme")
    assert "PAPAYA-7" in res.prompt and "secret main-session fact" in res.prompt


def _journal_day(repo: MemoryRepo, projects: list[str], sections: str) -> Path:
    """The journal of 2026-02-16 with SECTIONS (`### name` and its entries), in a memory
    that knows PROJECTS."""
    k = repo.knowledge_dir
    for name in projects:
        (k / "projects" / name).mkdir(parents=True, exist_ok=True)
        (k / "projects" / name / "context.md").write_text(f"# {name.title()}\n")
    day = k / "journal" / "2026-02-16.md"
    day.write_text(f"---\ntype: journal\n---\n\n## 2026-02-16\n\n{sections}")
    return day


def test_the_journal_of_a_project_prompt_leaves_other_projects_sections_to_search(
    repo: MemoryRepo,
) -> None:
    """A day's journal holds every project's sessions, each under its project's heading:
    a prompt from beta gets beta's sections and the ones of no project, not alpha's."""
    _journal_day(
        repo,
        ["alpha"],
        "### alpha\n- Rotated the alpha keys\n\n### beta\n- Pinned the beta base image\n\n"
        "### standup\n- Moved the standup to 10:00\n",
    )
    res = compile_(repo, project="beta")
    assert "Pinned the beta base image" in res.prompt
    assert "Moved the standup to 10:00" in res.prompt  # a tag's heading names no project
    assert "Rotated the alpha keys" not in res.prompt
    left = next(s for s in res.sections if s.label == "journal:2026-02-16:alpha")
    assert not left.included and "left to search" in left.reason
    everything = compile_(repo)  # no current project: the whole day
    assert "Rotated the alpha keys" in everything.prompt
    # a day of only other projects' sessions says nothing to gamma: not even its heading
    _journal_day(
        repo,
        ["alpha", "beta"],
        "### alpha\n- Rotated the alpha keys\n\n### beta\n- Pinned the beta base image\n",
    )
    gamma = compile_(repo, project="gamma")
    assert "2026-02-16" not in gamma.prompt
    assert not any(s.included for s in gamma.sections if s.label.startswith("journal:2026-02-16"))


def test_a_journal_line_that_repeats_a_placed_memory_entry_is_left_out(repo: MemoryRepo) -> None:
    """The journal says a session's preference with its entry's id ("Preference: ...
    {id: X}"), and MEMORY.md holds entry X: a session's start showed the fact twice, in
    the room of another. Left out once MEMORY.md's entry is placed, and said so."""
    said = "Use bun, not node, for every script"
    (repo.knowledge_dir / "memory" / "MEMORY.md").write_text(
        f"# Core Memory\n\n## Preferences\n- 2026-02-16: {said} (via s1) {{id: 20260216-0900-abc123}}\n"
    )
    _journal_day(
        repo,
        ["shop"],
        "### shop\n- Fixed the cart total — changed 1 file (cart.ts) (via s1) "
        "{id: 20260216-0900-000001}\n"
        f"- Preference: {said} (via s1) {{id: 20260216-0900-abc123}}\n",
    )
    res = compile_(repo)
    assert res.prompt.count(said) == 1
    assert "Fixed the cart total" in res.prompt
    left = next(s for s in res.sections if s.label == "journal:2026-02-16:repeated")
    assert not left.included and "MEMORY.md above holds already" in left.reason
    # in a shared context (no MEMORY.md) the journal keeps it: its only place
    shared = compile_(repo, shared=True)
    assert shared.prompt.count(said) == 1 and "Preference: " + said in shared.prompt


def test_a_project_entry_active_projects_shows_is_not_shown_again_by_its_file(
    repo: MemoryRepo,
) -> None:
    """Active Projects names a project by its latest decision, an entry of the project's
    own Key Decisions too: a session's start in that project showed it twice. The
    project's file leaves it out once Active Projects is placed, and says so; its other
    entries and headings stay."""
    decision = "Go with the factory approach for the canvas layers"
    entry = f"{decision} (via s1) {{id: 20260216-0900-fac701}}"
    k = repo.knowledge_dir
    (k / "projects" / "_active.md").write_text(f"# Active Projects\n- **shop** — {entry}\n")
    (k / "projects" / "shop").mkdir(parents=True, exist_ok=True)
    (k / "projects" / "shop" / "context.md").write_text(
        "# Shop — Context\n\n## Key Decisions\n"
        f"- 2026-02-16: {entry}\n"
        "- 2026-02-16: Keep the singular folder name (via s1) {id: 20260216-0900-fac702}\n\n"
        "## Commands\n- Run the tests: `go test ./...`\n"
    )
    res = compile_(repo, project="shop")
    assert res.prompt.count(decision) == 1
    assert "Keep the singular folder name" in res.prompt
    assert "## Key Decisions\n- 2026-02-16: Keep the singular" in res.prompt
    assert "\n\n## Commands\n- Run the tests" in res.prompt
    left = next(s for s in res.sections if s.label == "project:shop:repeated")
    assert not left.included and "1 entry that the context holds above" in left.reason


def test_a_standing_file_of_headings_alone_is_left_out(repo: MemoryRepo) -> None:
    """A project whose one decision was superseded by an entry of MEMORY.md keeps only its
    headings current, and Active Projects is its heading alone before any project: a
    hook's context showed both as headings with nothing under them. They are left out,
    and the plan says why; MEMORY.md as the template ships it stays (where the agent
    writes what it keeps)."""
    k = repo.knowledge_dir
    (k / "projects" / "billing").mkdir(parents=True, exist_ok=True)
    (k / "projects" / "billing" / "context.md").write_text(
        "# Billing — Context\n\n## Key Decisions\n"
        "- ~~2026-02-02: Put PgBouncer in front of Postgres (via s1)~~ "
        "{id: 20260202-0900-0e92ca} #superseded-by:20260209-1000-68591e\n\n## Commands\n"
    )
    (k / "projects" / "_active.md").write_text("# Active Projects\n")
    res = compile_(repo, project="billing")
    assert "Billing — Context" not in res.prompt and "# Active Projects" not in res.prompt
    for label in ("project:billing", "projects"):
        left = next(s for s in res.sections if s.label == label)
        assert not left.included and "nothing but headings" in left.reason
    assert "<!-- memory -->" in res.prompt


def test_a_topics_subscription_leaves_out_the_entries_the_context_holds_above(
    repo: MemoryRepo,
) -> None:
    """A topic subscribed to Active Projects, whose line for a project is its latest
    decision, an entry MEMORY.md holds too: P1 left Active Projects out as repeating it,
    and the subscription brought the file back whole, the decision twice in one context.
    A subscription leaves out what the context holds above and says so; one with nothing
    else is left out, and one with more keeps the rest."""
    decision = "Files are the source of truth, SQLite is a cache"
    entry = f"{decision} (via s1) {{id: 20260216-0900-fac701}}"
    k = repo.knowledge_dir
    (k / "memory" / "MEMORY.md").write_text(f"# Core Memory\n\n## Key Decisions\n- {entry}\n")
    (k / "projects" / "_active.md").write_text(f"# Active Projects\n- **shop** — {entry}\n")
    (k / "reference" / "storage.md").write_text(
        f"# Storage\n\n## Facts\n- {entry}\n"
        "- The index lives in memory.db (via s2) {id: 20260216-0900-fac702}\n"
    )
    (repo.root / "topics" / "review.md").write_text(
        "---\ntype: topic\ndescription: code review\ntriggers:\n  - type: keyword\n"
        "    words: [review]\nsubscriptions:\n  - knowledge/projects/_active.md\n"
        "  - knowledge/reference/storage.md\n---\nReview the diff.\n"
    )
    topics = [t for t in load_topics(repo).topics if t.name == "review"]
    res = compile_(repo, active_topics=topics)
    assert res.prompt.count(decision) == 1
    assert "<!-- sub:knowledge/projects/_active.md -->" not in res.prompt
    assert "## Facts\n- The index lives in memory.db" in res.prompt
    for sub in ("knowledge/projects/_active.md", "knowledge/reference/storage.md"):
        left = next(s for s in res.sections if s.label == f"sub:{sub}:repeated")
        assert not left.included and "1 entry that the context holds above" in left.reason


def test_a_search_hit_leaves_out_the_entries_the_context_holds_above(repo: MemoryRepo) -> None:
    """An old day's journal says "Decided: ..." with the id of the decision MEMORY.md
    shows: a message that found that day by search got the decision twice, once in P1
    and once in the hit, in the room of another. The hit shows the day's other entries;
    a hit left with none of its own shows nothing."""
    decision = "Files are the source of truth, SQLite is only a cache we can rebuild"
    k = repo.knowledge_dir
    (k / "memory" / "MEMORY.md").write_text(
        f"# Core Memory\n\n## Key Decisions\n- 2026-02-01: {decision} (via s1) "
        "{id: 20260201-0900-fac701}\n"
    )
    (k / "journal" / "2026-02-01.md").write_text(
        "## 2026-02-01\n\n### shop\n"
        "- Talked through how the cart stores its rows in SQLite (via s1) "
        "{id: 20260201-0850-fac700}\n"
        f"- Decided: {decision} (via s1) {{id: 20260201-0900-fac701}}\n"
    )
    res = _indexed_and_compiled(repo, "where does the cart keep its rows, SQLite?")
    assert res.prompt.count(decision) == 1
    assert "how the cart stores its rows in SQLite" in res.prompt
    hit = next(
        s for s in res.sections if s.label.startswith("knowledge:knowledge/journal/2026-02-01")
    )
    assert hit.included and decision not in hit.content
    # the day holds nothing else: found by search, it brings nothing
    (k / "journal" / "2026-02-01.md").write_text(
        f"## 2026-02-01\n\n### shop\n- Decided: {decision} (via s1) {{id: 20260201-0900-fac701}}\n"
    )
    alone = _indexed_and_compiled(repo, "is SQLite the source of truth or a cache?")
    assert alone.prompt.count(decision) == 1
    assert "knowledge/journal/2026-02-01" not in alone.prompt


def test_a_message_gets_the_entries_of_the_day_that_bear_on_it(repo: MemoryRepo) -> None:
    """Today's journal for a message: the entries that share two of its words; the others
    are left to search, and the explanation says so. A greeting gets the day whole."""
    (repo.knowledge_dir / "journal" / "2026-02-16.md").write_text(
        "## 2026-02-16\n\n### beta\n- Pinned the beta base image to bookworm\n"
        "- Moved the standup to 10:00\n- Renamed the cart module\n"
    )
    with ContextCompiler(repo) as c:
        res = c.compile("Which base image is pinned?", today=TODAY, now=NOW, available_knowledge=[])
    assert "Pinned the beta base image to bookworm" in res.prompt
    assert "standup" not in res.prompt and "Renamed the cart module" not in res.prompt
    left = next(s for s in res.sections if s.label == "journal:2026-02-16:unrelated")
    assert not left.included and left.reason.startswith("2 entries") and "search" in left.reason
    # yesterday's one entry bears on nothing of it: the day is not there at all
    assert not any(s.label == "journal:2026-02-15" and s.included for s in res.sections)
    greeted = compile_(repo)
    assert "standup" in greeted.prompt and "yesterday entry" in greeted.prompt


def test_a_project_gets_the_last_earlier_day_it_was_worked_on(repo: MemoryRepo) -> None:
    """Today's and yesterday's journals hold nothing of beta: a session starting in beta
    after days away gets the last earlier day that has a beta section (that section
    alone), and no day older than it; a project the journals never name, and a
    compile with no current project, get today's and yesterday's alone."""
    k = repo.knowledge_dir
    (k / "projects" / "alpha").mkdir(parents=True)
    (k / "projects" / "alpha" / "context.md").write_text("# Alpha\n")
    journal = k / "journal"
    (journal / "2026-02-02.md").write_text(
        "## 2026-02-02\n\n### beta\n- Beta's first week: the schema drafted\n"
    )
    (journal / "2026-02-05.md").write_text(
        "## 2026-02-05\n- Lunch with the team\n\n### alpha\n- Rotated the alpha keys\n\n"
        "### beta\n- Pinned the beta base image — checks passed: `make test`\n\n"
        "### standup\n- Moved the standup to 10:00\n"
    )
    (journal / "2026-02-12.md").write_text("## 2026-02-12\n\n### alpha\n- Alpha's release\n")
    (journal / "notes.md").write_text("### beta\n- not a day\n")
    res = compile_(repo, project="beta")
    assert "Pinned the beta base image" in res.prompt
    assert "today entry" in res.prompt and "yesterday entry" in res.prompt
    assert "Rotated the alpha keys" not in res.prompt and "Alpha's release" not in res.prompt
    assert "Beta's first week" not in res.prompt and "not a day" not in res.prompt
    # that day was chosen for beta: the rest of it (no project's, or a tag's) stays out
    assert "Lunch with the team" not in res.prompt and "Moved the standup" not in res.prompt
    day = next(s for s in res.sections if s.label == "journal:2026-02-05")
    assert day.included and day.path == "knowledge/journal/2026-02-05.md"
    # a later day of beta is the one given
    (journal / "2026-02-13.md").write_text("## 2026-02-13\n\n### beta\n- Beta's API frozen\n")
    res = compile_(repo, project="beta")
    assert "Beta's API frozen" in res.prompt and "Pinned the beta base image" not in res.prompt
    # a project the journals never name, and no current project: no earlier day
    for got in (compile_(repo, project="gamma"), compile_(repo)):
        assert "Beta's API frozen" not in got.prompt and "Alpha's release" not in got.prompt
        assert "today entry" in got.prompt and "yesterday entry" in got.prompt
    # today's journal of beta is where it was worked on last: no older day besides
    (journal / "2026-02-16.md").write_text("## 2026-02-16\n\n### beta\n- Beta today\n")
    res = compile_(repo, project="beta")
    assert "Beta today" in res.prompt and "Beta's API frozen" not in res.prompt
