"""The standing part of a context (identity files and MEMORY.md) within the session share:
whole when it fits, by section ranked against the message when it does not, and never a
section left out without the context saying so."""

from __future__ import annotations

from datetime import UTC, datetime

from autopoiesis.compiler import ContextCompiler
from autopoiesis.compiler.context import ScoredItem, Section
from autopoiesis.compiler.standing import (
    LEFT_OUT_TOKENS,
    StandingFile,
    bearing,
    entries,
    fit,
    sections,
)
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo, project_context_file
from autopoiesis.core.text import count_tokens

NOW = datetime(2026, 2, 16, 12, tzinfo=UTC)
FILLER = "We talked about it at length and agreed on the details of the plan. " * 12


def _memory(repo: MemoryRepo, notes: int = 3) -> str:
    text = (
        "# Core Memory\n\n"
        + "".join(f"## Project note {i}\n- {FILLER}\n\n" for i in range(notes))
        + "## Preferences\n- The user wants bun, not npm or node, for every script.\n"
    )
    (repo.root / MEMORY_FILE).write_text(text, encoding="utf-8")
    return text


def test_a_long_memory_enters_by_section_at_a_small_budget(memory_repo: MemoryRepo) -> None:
    _memory(memory_repo)
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("Which package manager should the scripts use, npm?", budget=2048, now=NOW)
    memory = next(s for s in res.sections if s.label == "memory")
    assert memory.included
    # the section that answers the message is in, though it is the last of the file ...
    assert "bun, not npm" in memory.content
    # ... the fixed part stays within its share, and what was left out is named
    standing = sum(s.tokens for s in res.sections if s.priority <= 1 and s.included)
    assert standing <= 2048 * 0.25 + 400  # + the system prompt, journal and labels
    assert "left out for room" in memory.content and '"Project note 2"' in memory.content
    assert f"read {MEMORY_FILE}" in memory.content


def test_everything_whole_when_it_fits(memory_repo: MemoryRepo) -> None:
    text = _memory(memory_repo)
    assert len(text.encode()) < 3 * 1024  # within memory_budget_kb
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("npm or bun?", budget=32768, now=NOW)
    memory = next(s for s in res.sections if s.label == "memory")
    assert memory.content.strip() == text.strip()
    assert "left out" not in res.prompt


def test_memory_over_its_kb_cap_keeps_the_relevant_sections(memory_repo: MemoryRepo) -> None:
    _memory(memory_repo, notes=8)  # ~7 KB, over memory_budget_kb (3)
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("npm or bun?", budget=32768, now=NOW)
    memory = next(s for s in res.sections if s.label == "memory")
    assert "bun, not npm" in memory.content and "left out for room" in memory.content
    assert len(memory.content.encode()) <= 3 * 1024 + 200  # + the line naming what is out


def test_identity_heads_are_never_dropped_and_sections_keep_file_order() -> None:
    soul = "# Soul\nI am the agent.\n\n## Style\nTerse.\n\n## Tools\nI use git every day.\n"
    memory = "# Core Memory\n\n## Git\n- we rebase, never merge\n\n## Food\n- pizza on Fridays\n"
    files = [
        StandingFile("knowledge/identity/SOUL.md", soul, 10_000, True),
        StandingFile(MEMORY_FILE, memory, 10_000, False),
    ]
    # the identity head, the relevant section, MEMORY.md's title and the line naming what
    # it left out (charged when a file is first opened), and 12 tokens to spare
    share = (
        count_tokens("# Soul\nI am the agent.")
        + count_tokens("## Git\n- we rebase")
        + count_tokens("# Core Memory")
        + LEFT_OUT_TOKENS
        + 12
    )
    soul_out, memory_out = fit(files, "how do we merge in git?", share)
    assert soul_out.startswith("# Soul\nI am the agent.")  # the head, though nothing matches
    assert "## Git" in memory_out and "pizza" not in memory_out
    assert '"Food"' in memory_out
    # a file's sections come out in file order, whatever their rank
    both = fit(files, "git tools style", 10_000)
    assert both[0] == soul


def test_a_written_identity_is_never_dropped_a_template_may_be(memory_repo: MemoryRepo) -> None:
    """The identity files as `init` leaves them are the template's words ("Edit this file:
    name, role, time zone ..."), ~250 tokens that told the agent nothing at 2K while the
    evidence waited: they go in last, whole, in the room the rest left (shown with P0).
    Once somebody writes one, its head is never dropped."""
    _memory(memory_repo, notes=6)
    question = "Which package manager should the scripts use, npm?"
    notes = memory_repo.knowledge_dir / "reference" / "scripts.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text(
        "# Scripts\n\n"
        + "".join(f"- The release script {i} runs `bun run build` first.\n" for i in range(20)),
        encoding="utf-8",
    )
    # a search hit in a template's lines does not bring it in through the knowledge either
    evidence = [
        ScoredItem("knowledge/reference/scripts.md", 1.0, "", 3, 22),
        ScoredItem("knowledge/identity/TOOLS.md", 0.9, "", 7, 10),
    ]

    def compiled(knowledge: list[ScoredItem], budget: int = 700) -> dict[str, Section]:
        with ContextCompiler(memory_repo) as c:
            res = c.compile(question, available_knowledge=knowledge, budget=budget, now=NOW)
        assert res.total_tokens <= budget
        return {s.label: s for s in res.sections}

    shown = compiled(evidence)
    assert "bun, not npm" in shown["memory"].content
    assert any(
        k.startswith("knowledge:knowledge/reference/") and s.included for k, s in shown.items()
    )
    left = [k for k, s in shown.items() if k.startswith("identity:") and not s.included]
    assert left, "the template's identity files took the evidence's room"
    assert "as the template ships it" in shown[left[0]].reason
    assert not any(k.startswith("knowledge:knowledge/identity/") for k in shown)
    # with room to spare, they come whole, after everything else
    roomy = compiled(evidence, budget=4000)
    assert not any(k.startswith("knowledge:knowledge/identity/") for k in roomy)
    assert all(roomy[f"identity:{n}"].included for n in ("SOUL.md", "USER.md", "TOOLS.md"))
    assert "in the room left" in roomy["identity:SOUL.md"].reason
    user = memory_repo.knowledge_dir / "identity" / "USER.md"
    user.write_text("# User\n\nAda, staff engineer in Lisbon; reviews PRs on Fridays.\n")
    written = compiled(evidence)["identity:USER.md"]
    assert written.included and "Ada, staff engineer" in written.content


def test_sections_ignore_headings_inside_fences() -> None:
    text = "# T\nintro\n\n## A\n```\n## not a section\n```\n\n## B\nb\n"
    assert [h for h, _ in sections(text)] == ["", "A", "B"]


def _long_preferences(repo: MemoryRepo, entries: int = 40) -> list[str]:
    """A MEMORY.md whose Preferences section alone is over memory_budget_kb (3 KB)."""
    lines = [
        f"- 2026-01-{1 + i % 28:02d}: Keep the changelog entry {i} short and in the past "
        f"tense, one line per change, grouped under its release heading."
        for i in range(entries)
    ]
    lines[-1] = "- 2026-02-15: Rules must always be created in the `.cursor/rules` folder."
    text = "# Core Memory\n\n## Preferences\n" + "\n".join(lines) + "\n"
    assert len(text.encode()) > 3 * 1024
    (repo.root / MEMORY_FILE).write_text(text, encoding="utf-8")
    return lines


def test_a_section_over_the_cap_keeps_its_entries_that_answer(memory_repo: MemoryRepo) -> None:
    lines = _long_preferences(memory_repo)
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("Where must new cursor rules be created?", budget=32768, now=NOW)
    memory = next(s for s in res.sections if s.label == "memory")
    # the last entry answers: it is kept, where cutting the section's tail dropped it
    assert lines[-1] in memory.content
    assert "## Preferences" in memory.content
    kept = [line for line in lines if line in memory.content]
    assert 5 < len(kept) < len(lines)
    # the kept entries stay in file order, and the context says how many were left out
    assert memory.content.index(kept[0]) < memory.content.index(kept[-1])
    left = len(lines) - len(kept)
    assert f'{left} of the {len(lines)} entries of "Preferences"' in memory.content
    assert len(memory.content.encode()) <= 3 * 1024 + 200  # + the line naming what is out


def test_among_entries_the_message_does_not_name_the_later_ones_stay(
    memory_repo: MemoryRepo,
) -> None:
    lines = _long_preferences(memory_repo)
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("What is the weather like?", budget=32768, now=NOW)
    memory = next(s for s in res.sections if s.label == "memory").content
    # a later entry restates or replaces an earlier one: the newest are kept
    assert lines[-2] in memory and lines[-3] in memory
    assert lines[0] not in memory


def test_entries_are_list_items_with_their_continuations_or_paragraphs() -> None:
    text = (
        "## Notes\n- one\n  still one\n* two\n```\n- inside a fence\n\n```\n"
        "3. three\n\nA paragraph\nof two lines.\n\nAnother."
    )
    lead, items = entries(text)
    assert lead == "## Notes"
    assert items == [
        "- one\n  still one",
        "* two\n```\n- inside a fence\n\n```",
        "3. three",
        "A paragraph\nof two lines.",
        "Another.",
    ]


def _project_and_preferences(repo: MemoryRepo) -> None:
    """A MEMORY.md whose long Preferences share a word or two with a question about tests
    in many entries, and a project file whose one Commands entry answers it."""
    prefs = [
        f"- 2026-01-{1 + i % 28:02d}: When a review of change {i} is done, run the linter "
        "and keep the summary of the review in the pull request, not in a comment."
        for i in range(24)
    ]
    prefs[5] = "- 2026-01-06: Tests that touch the network are marked slow."
    (repo.root / MEMORY_FILE).write_text(
        "# Core Memory\n\n## Preferences\n" + "\n".join(prefs) + "\n", encoding="utf-8"
    )
    context = repo.root / project_context_file("minsky")
    context.parent.mkdir(parents=True, exist_ok=True)
    context.write_text(
        "# Minsky — Context\n\n## Current State\n\n## Key Decisions\n"
        + "".join(
            f"- 2026-01-{d:02d}: Sessions live in their own clone, decision {d}.\n"
            for d in range(1, 9)
        )
        + "\n## Commands\n- 2026-01-09: Run the tests: `bun test`\n"
        "- 2026-01-09: Install the dependencies: `bun install`\n",
        encoding="utf-8",
    )


def test_the_entry_that_answers_enters_before_a_long_section_that_shares_words(
    memory_repo: MemoryRepo,
) -> None:
    """Sections used to compete whole: the Preferences section, sharing "run" with the
    message in most of its entries, ranked first and filled the share with entries that
    answer nothing, and the project's one Commands entry that answers was left out."""
    _project_and_preferences(memory_repo)
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("How do I run the tests?", budget=2048, now=NOW, project="minsky")
    shown = {s.label: s for s in res.sections if s.included}
    assert "Run the tests: `bun test`" in shown["project:minsky"].content
    assert "Tests that touch the network are marked slow" in shown["memory"].content
    # within the share (+ the system prompt and the labels), and what is out is named
    # (the identity files as the template ships them fill the room left after the rest)
    standing = sum(
        s.tokens
        for s in res.sections
        if s.priority <= 1 and s.included and not s.reason.startswith("as the template")
    )
    assert standing <= 2048 * 0.25 + 200
    assert 'entries of "Preferences"' in shown["memory"].content
    # a heading with nothing under it is neither shown nor named as left out
    assert "Current State" not in shown["project:minsky"].content
    assert shown["project:minsky"].content.startswith("# Minsky — Context")


def test_what_sessions_did_enters_only_when_the_message_asks_for_it() -> None:
    """A project file's Changes and Errors and Fixes record what sessions did, not what
    stands: at a small budget their entries come in when they share words with the
    message, never to fill the share as a project's Commands and preferences do; with no
    message (a session's start) they fill it as before."""
    changes = "".join(
        f"- 2026-02-0{i}: Changed `pkg/cmd/list{i}.go` — for: widen the provider column {i}\n"
        for i in range(1, 6)
    )
    text = (
        "# Shop — Context\n\n## Commands\n- Run the tests: `go test ./...`\n\n"
        f"## Changes\n{changes}\n"
        "## Errors and Fixes\n- `--- FAIL: TestTotal` from `go test ./...` — fixed by editing "
        "`cart.go`; then it passed\n\n" + f"## Notes\n- {FILLER}\n"
    )
    shop = StandingFile("knowledge/projects/shop/context.md", text, 3000, False)
    [unrelated] = fit([shop], "How do I deploy the storefront?", 200)
    assert "go test ./..." in unrelated  # a standing command fills the share
    assert "Changed `pkg/cmd" not in unrelated and "TestTotal" not in unrelated
    [asked] = fit([shop], "Which file widened the provider column?", 200)
    assert "Changed `pkg/cmd/list5.go`" in asked
    # at a session's start there is no message: what the last sessions did is what there is
    [start] = fit([shop], "", 200)
    assert "Changed `pkg/cmd/list5.go`" in start


def test_a_greeting_gets_what_sessions_did_like_a_sessions_start() -> None:
    """One content word cannot tell which of what sessions did bears on it: a greeting
    gets the project's Changes as a session's start does."""
    text = "# Shop — Context\n\n## Changes\n- 2026-02-01: Changed `cart.go` — for: fix totals\n"
    shop = StandingFile("knowledge/projects/shop/context.md", text, 3000, False)
    [greeted] = fit([shop], "hello", 200)
    assert "Changed `cart.go`" in greeted


JOURNAL_DAY = """## 2026-02-12

### shop
- 10:02 — changed 2 files (cart.go, cart_test.go); checks passed: `go test ./...`
- Decided: round the totals half to even
  (the accountant asked for it)

### standup
- Moved the standup to 10:00

```text
### not a heading: the totals log
```
"""


def test_a_day_of_the_journal_keeps_the_entries_that_bear_on_the_message() -> None:
    """For a message, a day's journal keeps the entries that share two of its words, with
    the headings above them (and no heading left without one); an entry keeps its
    continuation lines and a fenced block its lines; the rest is counted as left out."""
    kept, left = bearing(JOURNAL_DAY, "How are the totals rounded, half to even?")
    assert kept == (
        "## 2026-02-12\n\n### shop\n- Decided: round the totals half to even\n"
        "  (the accountant asked for it)"
    )
    assert left == 3  # the change, the standup, the fenced block
    # a fenced line that looks like a heading is the block's, not a heading: the block
    # is under the heading before it
    fenced, _ = bearing(JOURNAL_DAY, "the totals log heading")
    assert fenced == "## 2026-02-12\n\n### standup\n```text\n### not a heading: the totals log\n```"
    # nothing bears on it: nothing, not even the day's heading
    assert bearing(JOURNAL_DAY, "Which base image does the deploy pin?") == ("", 4)
    # a session's start, a greeting: the day whole
    assert bearing(JOURNAL_DAY, "") == (JOURNAL_DAY, 0)
    assert bearing(JOURNAL_DAY, "hello!") == (JOURNAL_DAY, 0)


def test_an_entry_pasted_twice_is_shown_once(memory_repo: MemoryRepo) -> None:
    """A copy-pasted entry (one `{id: ...}` on two entries of MEMORY.md, not committed, so
    no hook saw it) was shown twice in the standing part, at every budget."""
    entry = (
        "- 2026-02-16: The user wants bun for every script (via ses_b2) {id: 20260216-1850-a1b2c3}"
    )
    text = f"# Core Memory\n\n## Preferences\n{entry}\n- Tabs, not spaces.\n\n## Tools\n{entry}\n"
    (memory_repo.root / MEMORY_FILE).write_text(text, encoding="utf-8")
    for budget in (600, 8000):  # placed by entry, and whole
        with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
            res = c.compile("Which package manager do scripts use?", budget=budget, now=NOW)
        memory = next(s for s in res.sections if s.label == "memory")
        assert memory.content.count("{id: 20260216-1850-a1b2c3}") == 1
        assert "Tabs, not spaces." in memory.content or budget < 8000


def test_fit_shows_no_id_twice_within_a_file() -> None:
    entry = "- Use bun (via s) {id: 20260216-1850-a1b2c3}"
    text = f"# Memory\n\n## A\n{entry}\n- other\n\n## B\n{entry}\n- more\n"
    (shown,) = fit([StandingFile(MEMORY_FILE, text, 10_000, False)], "bun", 10_000)
    assert shown.count("a1b2c3") == 1
    assert "- other" in shown and "- more" in shown
