"""The v3 extractors and `coding` on a real coding session: a Claude Code log imported into a
real memory repo, extracted offline, and what lands in which file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import knowledge as kf
from autopoiesis.knowledge.extract import KnowledgeExtractor
from autopoiesis.knowledge.extractors import SourceTranscript, default_registry
from autopoiesis.knowledge.extractors.coding import command_kind, runner_of
from autopoiesis.knowledge.extractors.prose import is_heading, is_statement, prose_of

MEM = "knowledge/memory/MEMORY.md"
CTX = "knowledge/projects/shop-api/context.md"


def _claude_log(path: Path, steps: list[tuple[str, object]]) -> Path:
    """A Claude Code JSONL log: ("user", text), ("agent", text), ("tool", (name, input,
    result, is_error)), one every ten seconds."""
    lines = []
    for i, (kind, what) in enumerate(steps):
        ts = f"2026-03-02T10:{i // 6:02d}:{(i % 6) * 10:02d}.000Z"
        base = {"timestamp": ts, "sessionId": "ses-coding-1", "cwd": "/work/shop-api"}
        if kind == "user":
            lines.append({**base, "type": "user", "message": {"role": "user", "content": what}})
        elif kind == "agent":
            content = [{"type": "text", "text": what}]
            lines.append(
                {**base, "type": "assistant", "message": {"role": "assistant", "content": content}}
            )
        else:
            name, tool_input, result, is_error = what  # type: ignore[misc]
            use = {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": tool_input}
            lines.append(
                {**base, "type": "assistant", "message": {"role": "assistant", "content": [use]}}
            )
            res = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": result}
            if is_error:
                res["is_error"] = True
            lines.append({**base, "type": "user", "message": {"role": "user", "content": [res]}})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


SESSION = [
    ("user", "In the shop-api project the checkout test fails. Please fix it."),
    (
        "tool",
        (
            "Bash",
            {"command": "pnpm test"},
            "FAIL src/checkout.test.ts\nTypeError: Cannot read properties of undefined "
            "(reading 'total')\nTests: 1 failed, 12 passed",
            True,
        ),
    ),
    (
        "tool",
        (
            "Edit",
            {
                "file_path": "src/checkout.ts",
                "old_string": "cart.total",
                "new_string": "cart?.total",
            },
            "The file src/checkout.ts has been updated.",
            False,
        ),
    ),
    ("tool", ("Bash", {"command": "pnpm test"}, "Tests: 13 passed, 13 total", False)),
    ("tool", ("Bash", {"command": "pnpm lint"}, "✔ 0 errors, 0 warnings", False)),
    ("agent", "## Makes Sense\n\nWeb Search is not needed: the cart can be empty."),
    ("user", "Let's implement the plan."),
    ("user", "Use bun, not node. Never mock the database in production code."),
    (
        "user",
        "I get this:\n```\nsrc/app.ts:3:10: error Please use `let` or `const` instead  no-var\n```",
    ),
]


def _import(repo: MemoryRepo, tmp_path: Path) -> str:
    report = import_files(repo, [_claude_log(tmp_path / "session.jsonl", SESSION)])
    assert not report.refused, report.refused
    return report.imported[0]


def _live(repo: MemoryRepo, path: str, section: str) -> list[str]:
    f = repo.root / path
    if not f.exists():
        return []
    return [e.text for s, e in kf.parse(f.read_text()).entries() if s.title == section and e.active]


@pytest.mark.slow
def test_a_coding_session_lands_where_it_belongs(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    _import(memory_repo, tmp_path)
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        report = ex.extract_pending()
    assert not report.failed
    commands = _live(memory_repo, CTX, "Commands")
    assert any("`pnpm test`" in c and c.startswith("Run the tests") for c in commands), commands
    assert any("`pnpm lint`" in c for c in commands), commands
    fixes = _live(memory_repo, CTX, "Errors and Fixes")
    assert len(fixes) == 1
    assert "TypeError: Cannot read properties of undefined" in fixes[0]
    assert "`src/checkout.ts`" in fixes[0] and "then it passed" in fixes[0]
    changes = _live(memory_repo, CTX, "Changes")
    assert changes == [
        "Changed `src/checkout.ts` — for: In the shop-api project the checkout test fails. "
        "Please fix it."
    ]
    prefs = _live(memory_repo, MEM, "Preferences")
    assert "Use bun, not node." in prefs
    assert "Never mock the database in production code." in prefs
    assert len(prefs) == 2  # the pasted lint error is nobody's preference
    everything = "\n".join(
        p.read_text() for p in (memory_repo.root / "knowledge").rglob("*.md") if p.is_file()
    )
    assert "implement the plan" not in everything  # a plan with no object decides nothing
    assert not list((memory_repo.root / "knowledge/people").glob("*-*.md"))  # no "Makes Sense"
    assert "pnpm" not in (memory_repo.root / MEM).read_text()  # commands are the project's
    assert not (memory_repo.root / "knowledge/reference/general.md").exists()
    journal = next((memory_repo.root / "knowledge/journal").glob("2026-03-02.md")).read_text()
    assert "changed 1 file (checkout.ts)" in journal
    assert "changed 1 file (checkout.ts); checks passed: `pnpm test`, `pnpm lint`" in journal


@pytest.mark.slow
def test_the_older_versions_stay_selectable_for_replay(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`--extractors decisions@2` is what `replay` compares v3 with: the old version still
    takes "Let's implement the plan." for a decision, the new one does not."""
    path = _import(memory_repo, tmp_path)
    src = SourceTranscript.from_text(path, (memory_repo.root / path).read_text())
    reg = default_registry(plugins=False)
    assert [e.key for e in reg.select(["decisions@2", "decisions"])] == [
        "decisions@2",
        "decisions@3",
    ]
    old = [c.content for c in reg.get("decisions@2").run_offline(src)]
    new = [c.content for c in reg.get("decisions").run_offline(src)]
    assert any("implement the plan" in c for c in old)
    assert not any("implement the plan" in c for c in new)


def test_prose_keeps_what_somebody_wrote() -> None:
    pasted = "Fix this please.\n```\nTraceback (most recent call last):\n  x\n```\n## Web Search"
    assert prose_of(pasted).split() == ["Fix", "this", "please."]
    assert prose_of("src/a.ts:3:10: error no-var").strip() == ""
    assert is_heading("Makes Sense") and is_heading("🧠 Rubric Writing")
    assert not is_heading("Use bun, not node.")
    assert not is_statement("The setting is located in")
    assert not is_statement("Let's implement the plan.")
    assert not is_statement("Let's proceed now.")
    assert is_statement("We'll put PgBouncer in front of Postgres.")
    assert is_statement("They give me the strength to push on.")  # a whole sentence
    assert not is_statement("The port is set in the.")


def test_a_harness_s_bookkeeping_and_folded_blocks_are_nobody_s_prose() -> None:
    """Claude Code wraps a slash command and a local command's output in tags, which a
    Markdown export of the session keeps in the user's message: none of it is prose (a
    journal line began "<local-command-caveat>Caveat: The messages below were generated
    ..."). An element left open stays, the text after it too."""
    said = (
        "<local-command-caveat>Caveat: The messages below were generated by the user while "
        "running local commands. DO NOT respond.</local-command-caveat>\n"
        "<command-name>/review</command-name>\n<command-args>PR 12</command-args>\n"
        "Please look at the <CODE>parse()</code> changes.\n<pre>\nWe use bun for the tests."
    )
    assert " ".join(prose_of(said).split()) == (
        "Please look at the changes. We use bun for the tests."
    )


def test_elements_left_open_are_read_in_linear_time() -> None:
    """Each `<code` left open made the pattern that took code elements out scan to the
    text's end (224 KB: 27 s). Eight times the openings take about eight times the CPU time
    now; quadratic would be sixty-four times."""

    def cpu(n: int) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            prose_of("<code x" * n + "\nWe use bun.")
            best = min(best, time.process_time() - started)
        return best

    small, large = cpu(4_000), cpu(32_000)
    assert large < 30 * max(small, 0.0005), f"4,000: {small:.4f} s, 32,000: {large:.4f} s"


def test_commands_by_kind_and_runner() -> None:
    assert command_kind("python -m pytest -q tests/x.py") == "test"
    assert command_kind("pnpm test") == "test"
    assert command_kind("ruff check .") == "lint"
    assert command_kind("mypy") == "typecheck"
    assert command_kind("git status") is None
    assert runner_of("python -m pytest -q tests/x.py") == "pytest"
    assert runner_of("pnpm test") == "pnpm"
    # a package script is named whole, or with its variant; a file named test-... is none
    assert command_kind("npm run test:e2e") == "test"
    assert command_kind("bun run test-session-command-autodetect.ts") is None
    assert command_kind("npm run lint:fix") == "lint"
    assert command_kind("npm run build-storybook") is None


def test_a_command_is_kept_without_the_echo_that_narrates_it() -> None:
    """The agent chains an `echo` after a command to say it worked ("bun install && echo
    'Dependencies installed successfully'"); how to install is `bun install`."""
    made = _fixes_of(
        "Set up the minsky project.",
        [
            ('bun install && echo "Dependencies installed successfully"', "Done in 2.1s"),
            ("bun run test-session-command-autodetect.ts", "3 passed"),
        ],
        section="Commands",
    )
    assert made == ["Install the dependencies: `bun install`"], made


def test_a_command_is_kept_without_the_pager_its_output_went_through() -> None:
    """An agent pipes a command's output through `cat`, `head` or `tail` to read it in its
    terminal (Cursor runs `bun test | cat`); how to run the tests is the command alone, so
    `pytest -x 2>&1 | tail -50` and `pytest -x | head -50` are one entry, not three."""
    made = _fixes_of(
        "Run the tests of the imgcolorshine project.",
        [
            ("python -m pytest -x --tb=short 2>&1 | tail -50", "12 passed in 0.4s"),
            ("python -m pytest -x --tb=short | head -50", "12 passed in 0.4s"),
            ("bun run lint | cat", "0 errors, 0 warnings"),
        ],
        section="Commands",
    )
    assert made == [
        "Run the tests: `python -m pytest -x --tb=short`",
        "Lint: `bun run lint`",
    ], made


@pytest.mark.slow
def test_a_command_with_a_long_run_of_blanks_is_read_in_linear_time() -> None:
    """A tool call's command is whatever its log holds: reading the `echo` after it went
    back over every blank from every blank (20,000 blanks took 3 s). A transcript folds a
    call's blanks, but a ToolStep is read from any log. Eight times the blanks take about
    eight times the CPU time now; quadratic would be sixty-four times (the bound is
    loose: CPU time drifts on a loaded machine)."""
    from datetime import UTC, datetime

    from autopoiesis.knowledge.extractors.coding import ToolStep

    def cpu(blanks: int) -> float:
        best = float("inf")
        for _ in range(3):
            step = ToolStep(
                datetime(2026, 3, 2, tzinfo=UTC), "Bash", "bun i" + " " * blanks + "x", "", ""
            )
            started = time.process_time()
            assert step.command.endswith("x")
            best = min(best, time.process_time() - started)
        return best

    small, large = cpu(4_000), cpu(32_000)
    assert large < 30 * max(small, 0.0005), f"4,000 blanks: {small:.4f} s, 32,000: {large:.4f} s"


@pytest.mark.slow
def test_a_long_path_operand_is_read_in_linear_time() -> None:
    """Whether a command runs chosen files is read from each operand: one regular
    expression for "a name with an extension or a path" went back over every slash of a
    long path from every slash (100,000 characters: 200 s). Eight times the path takes
    about eight times the CPU time; quadratic would be sixty-four times."""
    from autopoiesis.knowledge.extractors.coding import on_chosen_files

    def cpu(size: int) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            assert not on_chosen_files("bun test " + "a/" * size + "*")  # a glob: no file
            best = min(best, time.process_time() - started)
        return best

    small, large = cpu(4_000), cpu(32_000)
    assert large < 30 * max(small, 0.0005), f"4,000: {small:.4f} s, 32,000: {large:.4f} s"


def _fixes_of(
    request: str,
    commands: list[tuple[str, str]],
    section: str = "Errors and Fixes",
    edit: int | None = None,
    subjects: bool = False,
) -> list[str]:
    """The entries of SECTION (Errors and Fixes) `coding` makes of a session: the user's
    REQUEST, then the agent's shell COMMANDS as (command, result) tool calls (the one at
    EDIT an Edit of the file it names); SUBJECTS: each entry after the subject it keeps live."""
    from datetime import UTC, datetime

    from autopoiesis.formats import transcript as tf
    from autopoiesis.formats.transcript_meta import TranscriptMeta

    at = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    calls = tuple(
        tf.ToolCall("Edit" if i == edit else "Bash", command, result)
        for i, (command, result) in enumerate(commands)
    )
    transcript = tf.Transcript(
        TranscriptMeta("ses-flags", at),
        request,
        (tf.Turn(at, "user", (tf.Text(request),)), tf.Turn(at, "agent", calls)),
    )
    src = SourceTranscript.from_text("raw/x.md", tf.render(transcript))
    changes = default_registry().get("coding").run_offline(src)
    if subjects:
        return [f"{c.subject}: {c.content}" for c in changes if c.section == section]
    return [c.content for c in changes if c.section == section]


def test_a_flag_that_made_a_failing_command_work_is_a_fix() -> None:
    """`git commit` failing on the signing key, then `git commit --no-gpg-sign` going
    through: the flag is the fix. A push forced after a rejection is no fix to keep."""
    fixes = _fixes_of(
        "Commit the fix in the moto project.",
        [
            ("git commit -m 'Fix #4600'", "error: cannot run ssh-keygen"),
            ("git commit --no-gpg-sign -m 'Fix #4600'", "2 files changed"),
            ("git push origin fix", "error: failed to push some refs"),
            ("git push -f origin fix", "+ 6751ade...14ddacb fix -> fix"),
        ],
    )
    assert fixes == [
        "`error: cannot run ssh-keygen` from `git commit` — fixed by adding `--no-gpg-sign`"
    ]


def test_a_test_run_passes_and_fails_in_each_runner_s_words() -> None:
    """bun says "18 pass 0 fail" with a check mark a test, mocha "3 passing / 1 failing":
    a bun run that passed was never read as passing (the mark was looked for after a word
    boundary, and "pass" is not "passed"), so a bun project's tests were nowhere in its
    Commands, and "1 fail" or a failed test's mark did not read as a failure."""
    bun_failing = "bun test v1.2.10\nsrc/cart.test.ts:\n✓ cart > adds [0.10ms]\n"
    bun_failing += "✗ cart > totals an empty cart [0.20ms]\n 1 pass\n 1 fail\n"
    bun_passing = bun_failing.replace("✗", "✓").replace(" 1 pass\n 1 fail", " 2 pass\n 0 fail")
    commands = [
        ("bun test", bun_failing),
        ("npx mocha", "  3 passing (20ms)\n  1 failing\n"),
        ("src/cart.ts", "The file src/cart.ts has been updated."),  # an edit (below)
        ("bun test", bun_passing),
    ]
    for section, want in (
        ("Commands", ["Run the tests: `bun test`"]),
        (
            "Errors and Fixes",
            [
                "`✗ cart > totals an empty cart [0.20ms] 1 pass 1 fail` from `bun test` — "
                "fixed by editing "
                "`src/cart.ts`; then it passed"
            ],
        ),
    ):
        got = _fixes_of("Fix the cart tests of the shop project.", commands, section, edit=2)
        assert got == want, section


def test_a_run_of_chosen_files_never_replaces_the_project_s_own_command() -> None:
    """One live command a kind and runner: a later run of the same runner supersedes the
    earlier one. The last test run of a session is often one file's, so it replaced the
    project's `bun test`; a run of chosen files now keeps its own live entry beside it.
    The script an interpreter runs is the program, not a chosen file."""
    passing = "✓ cart > adds [0.10ms]\n 1 pass\n 0 fail"
    got = _fixes_of(
        "Run the tests of the shop project.",
        [
            ("bun test", passing),
            ("bun test src/cart.test.ts", passing),
            ("bun test 'src/shop/*.test.ts'", passing),  # a glob: the project's tests
            ("python manage.py test", "Ran 3 tests in 0.1s\n\nOK"),
            ("python manage.py test shop/tests/test_cart.py", "Ran 1 test in 0.1s\n\nOK"),
        ],
        "Commands",
        subjects=True,
    )
    assert got == [
        "command test bun: Run the tests: `bun test`",
        "command test bun files: Run the tests: `bun test src/cart.test.ts`",
        "command test bun: Run the tests: `bun test 'src/shop/*.test.ts'`",
        "command test manage.py: Run the tests: `python manage.py test`",
        "command test manage.py files: Run the tests: `python manage.py test shop/tests/test_cart.py`",
    ]


def _src(
    *turns: tuple[str, str],
    title: str = "A session",
    topic: str | None = None,
    minutes_apart: int = 1,
) -> SourceTranscript:
    from datetime import UTC, datetime, timedelta

    from autopoiesis.formats import transcript as tf
    from autopoiesis.formats.transcript_meta import TranscriptMeta

    at = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    transcript = tf.Transcript(
        TranscriptMeta("ses-prose", at, topic=topic),
        title,
        tuple(
            tf.Turn(at + timedelta(minutes=i * minutes_apart), role, (tf.Text(text),))
            for i, (role, text) in enumerate(turns)
        ),
    )
    return SourceTranscript.from_text("raw/x.md", tf.render(transcript))


def test_a_pasted_checklist_and_a_one_off_order_are_nobody_s_rules() -> None:
    checklist = "\n\n".join(
        [
            "Review your task before approve it",
            "Does the task use the model Claude 3.7 to generate all the responses?",
            "Did the model response fail?",
            "Does the task have the correct formatting to mention files names?",
            "Please never create unit tests in the prompt.",
            "Did you save the DIFF files?",
            "🚨 Have you completed all 10 code rubrics? At least one critical rubric must show "
            "a failure case.",
            "Create 10 rubrics total.",
        ]
    )
    src = _src(
        ("user", checklist),
        ("agent", "Done."),
        ("user", "DO NOT modify code, JUST identify where the issue lies, and why."),
        ("agent", "The profile is saved field by field."),
    )
    reg = default_registry(plugins=False)
    for name in ("lessons", "decisions", "facts", "people", "procedures"):
        assert reg.get(name).run_offline(src) == [], name
    assert any(c.content.startswith("Please never") for c in reg.get("lessons@2").run_offline(src))


def test_what_a_user_writes_above_a_pasted_document_is_theirs() -> None:
    """A user writes their rules, then pastes the codebase merged into one file (headings,
    fences, tags): the message looks pasted, and its rules were lost with it. What comes
    before the first heading, fence, tag or rule is read; a document that opens with its
    title, or a form whose labels come first, is still nobody's words."""
    dump = (
        "# File Summary\n\nThis file is a merged representation of the codebase.\n\n"
        "## Files\n\n```python\nimport numpy\n```\n\n## Usage\n\nYou should always run make.\n"
    )
    rules = (
        '- Always assume that the fg video is the "better quality" video, and never should '
        "be re-timed\n- Work in rounds\n\n"
    )
    lessons = default_registry(plugins=False).get("lessons")
    kept = [c.content for c in lessons.run_offline(_src(("user", rules + dump), ("agent", "OK.")))]
    assert kept == [
        'Always assume that the fg video is the "better quality" video, and never '
        "should be re-timed"
    ]
    for pasted in (dump, "Prompt Type *\nYou should never mock the database.\n\n" + dump):
        assert lessons.run_offline(_src(("user", pasted), ("agent", "OK."))) == []


def _journal_of(
    *turns: tuple[str, str], title: str = "A session", topic: str | None = None
) -> list[str]:
    """The journal lines journal@3 makes of a session of TURNS (role, text)."""
    journal = default_registry(plugins=False).get("journal")
    return [c.content for c in journal.run_offline(_src(*turns, title=title, topic=topic))]


def test_the_journal_says_a_topic_that_repeats_the_request_once() -> None:
    """A SpecStory export is titled after its first message, cut at 50 characters (and its
    file name in title case): "topic: request" said the same thing twice for 30 of the
    development memory's 105 sessions. A topic of its own stays."""
    done = ("agent", "All linting issues have been resolved.")
    asked = "Running under Node 22, having a bit of an error with standard-js"
    assert _journal_of(("user", asked), done, topic=asked[:50]) == [
        f"{asked} — All linting issues have been resolved"
    ]
    # a request in title case reads as a heading: the line falls back to the title
    assert _journal_of(
        ("user", "Styling The Title With Gradient Text"),
        ("agent", "What colours?"),
        title="Styling The Title With Gradient Text",
        topic="Styling the Title with Gradient Text",
    ) == ["Styling the Title with Gradient Text (2 turns)"]
    assert _journal_of(
        ("user", "Can you please resolve these lint errors"),
        done,
        topic="Resolving Lint Errors in Code",
    ) == [
        "Resolving Lint Errors in Code: Can you please resolve these lint errors — All linting "
        "issues have been resolved"
    ]


def test_a_title_that_is_a_naming_prompt_or_a_time_is_no_request() -> None:
    """SpecStory titled a Cursor chat with the prompt that names it ("Generate a name for
    the chat") and a Claude Code session with its time ("2026-01-25 21:28:55Z"): where the
    first turn made no request (a pasted export, a slash command's record), the session's
    line said only that title and its size. Now the line says the first request a turn of
    the user's makes (a slash command run with words counts; a confirmation or Claude
    Code's notice of an interruption does not), else what was done, else nothing."""
    pasted = "```\n# Implement code from docstring\n_Exported from Cursor_\n```"
    done = ("agent", "I have implemented the model unloading.")
    naming = {"title": "Generate A Name For The Chat", "topic": "Generate a name for the chat"}
    assert _journal_of(
        ("user", pasted),
        ("user", "Well?"),
        ("user", "[Request interrupted by user for tool use]"),
        ("user", "Remember that you must unload all models before loading a new one"),
        done,
        **naming,
    ) == [
        "Remember that you must unload all models before loading a new one — I have "
        "implemented the model unloading"
    ]
    assert _journal_of(("user", "Check if we have any duplicates in docs"), done, **naming) == [
        "Check if we have any duplicates in docs — I have implemented the model unloading"
    ]
    slash = (
        "<command-message>pr-review</command-message>\n<command-name>/pr-review</command-name>"
        "\n<command-args>154</command-args>"
    )
    stamp = {"title": "2026 01 25 21 28 55Z", "topic": "2026-01-25 21:28:55Z"}
    assert _journal_of(("user", slash), ("agent", "Reviewing the PR."), **stamp) == [
        "/pr-review 154 (2 turns)"
    ]
    assert _journal_of(("user", pasted), ("agent", "What should I do?"), **stamp) == []


def test_the_journal_says_nothing_of_a_greeting() -> None:
    assert _journal_of(("user", "Hello"), ("agent", "Hi!"), title="Hello") == []
    assert _journal_of(
        ("user", "Check the tests and solve if any issue"),
        ("agent", "All browser.py tests are passing with 100% code coverage."),
    ) == [
        "Check the tests and solve if any issue — All browser.py tests are passing with 100% "
        "code coverage"
    ]


def test_the_journal_takes_no_narration_or_rule_for_the_outcome() -> None:
    """The agent's last words on the development sessions were as often its next step
    ("Now that we've fixed the test file, let me run the tests") or a rule it restated
    ("All tasks must be tracked using the canonical process") as a report; the report is
    the outcome, and without one the line says the session's size."""
    asked = ("user", "Fix the failing session tests in the minsky project")
    assert _journal_of(
        asked,
        (
            "agent",
            "Now that we've fixed the test file, let me run the tests to see if they pass."
            "\n\nAll tasks and work items must be tracked using the canonical process.",
        ),
    ) == ["Fix the failing session tests in the minsky project (2 turns)"]
    # what the agent has read so far is none either (a Claude Code session's review)
    assert _journal_of(asked, ("agent", "Now I have a complete understanding of the changes.")) == [
        "Fix the failing session tests in the minsky project (2 turns)"
    ]
    assert _journal_of(
        asked, ("agent", "Now I'll run them.\n\nI've fixed the two session tests; all pass.")
    ) == [
        "Fix the failing session tests in the minsky project — I've fixed the two session "
        "tests; all pass"
    ]


def test_the_journal_takes_a_terse_report_that_opens_with_what_was_done() -> None:
    """An agent's report often leaves its subject out ("Rolled back to revision 41"): the
    line said the request and the session's size, as if nothing had been done; a plan or a
    heading that opens with such a word ("Updated plan:") is still none."""
    asked = ("user", "The production deploy failed and customers see errors. Roll back now.")
    assert _journal_of(
        asked, ("agent", "Rolled back to revision 41; errors are gone. Watch the dashboard.")
    ) == [
        "The production deploy failed and customers see errors. Roll back now — Rolled back "
        "to revision 41; errors are gone"
    ]
    assert _journal_of(asked, ("agent", "Let me check.\n\nFixed the ingress timeout.")) == [
        "The production deploy failed and customers see errors. Roll back now — Fixed the "
        "ingress timeout"
    ]
    # lower case mid-sentence, a question, a plan's narration: no report
    for reply in (
        "fixed? Not yet.",
        "Fixed what, exactly?",
        "Updated plan: next I'll roll back the deploy and then check the logs.",
    ):
        assert _journal_of(asked, ("agent", reply)) == [
            "The production deploy failed and customers see errors. Roll back now (2 turns)"
        ], reply


def test_go_ahead_accepts_the_closing_proposal_not_the_narration() -> None:
    from datetime import UTC, datetime, timedelta

    from autopoiesis.formats import transcript as tf
    from autopoiesis.formats.transcript_meta import TranscriptMeta

    at = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    agent = (
        tf.Text("Now let's check the failing tests in session.test.ts first."),
        tf.ToolCall("run_terminal_cmd", "bun test", "3 failed"),
        tf.Text(
            "The failures come from the old path layout.\n\n"
            "I propose we store the session repo path in the session record from now on."
        ),
    )
    transcript = tf.Transcript(
        TranscriptMeta("ses-confirm", at),
        "Session paths",
        (
            tf.Turn(at, "user", (tf.Text("Why do the session tests fail?"),)),
            tf.Turn(at + timedelta(minutes=1), "agent", agent),
            tf.Turn(at + timedelta(minutes=2), "user", (tf.Text("Yes, go ahead."),)),
        ),
    )
    src = SourceTranscript.from_text("raw/x.md", tf.render(transcript))
    said = [c.content for c in default_registry(plugins=False).get("decisions").run_offline(src)]
    assert any("store the session repo path in the session record" in c.lower() for c in said), said
    assert not any("check the failing tests" in c.lower() for c in said), said


def test_a_developer_s_corrections_are_kept_as_preferences() -> None:
    """A developer corrects the agent in passing, in lower case, several sentences a turn:
    each correction is its own preference; a bug described as a contrast, an order for the
    task at hand ("make sure to ...") and a back-reference ("never do this again") are not."""
    src = _src(
        ("user", "run the session tests"),
        ("agent", "I ran `bun run test` in the main workspace."),
        (
            "user",
            "no, i only wanted you to create a task, not work on it. next time, if the task "
            "already exists, tell me first.",
        ),
        ("agent", "Understood."),
        ("user", "you're editing the main workspace, not the session. be more careful"),
        ("user", "just run using `minsky`, not `bun run`. and switch into the session repo"),
        ("user", "when working with json outputs, never use grep, but rather jq."),
        ("user", "rules MUST always be created in the `.cursor/rules` directory"),
        ("user", "dont tell me what to do, do it yourself without asking"),
        ("user", "No, never `bun link` a session version. make sure you never do this again"),
        ("user", "Zonal painting is black fill, not using the fill params"),
        ("user", "make sure to mention the status in the spec"),
        ("user", "I tried it again, not sure why it fails"),
        ("user", "use the second one for now, not the first"),
        # orders about the thing at hand, with a contrast inside
        (
            "user",
            "Lets extract this session repo path to a common function that all the commands "
            "use, instead of duplicating it",
        ),
        ("user", "Generate a PR description for these changes (do it yourself, not using it)"),
        ("user", "The main version should be linked, not this one."),
        # a chat's request cue ("please keep", "please do not") ordering this change: of
        # its code's symbols, or of the turn itself; said to stand, or of the replies, a rule
        ("user", "Please keep both rotateCanvas and rotateWRapper."),
        ("user", "Please do not do any work, let's discuss the options."),
        ("user", "Please always keep the changelog in `CHANGES.md` current."),
        ("user", "Please keep your answers short."),
        # a tool's name as developers write it: in backticks or quotes, a scoped package
        ("user", "use `@clack/prompts` instead of bun-promptx"),
        ("user", 'Use "ruff" instead of flake8'),
        ("user", "I prefer `vitest` over jest"),
    )
    got = {
        c.content: c.section
        for c in default_registry(plugins=False).get("lessons").run_offline(src)
    }
    assert got == {
        "No, i only wanted you to create a task, not work on it.": "Preferences",
        "Next time, if the task already exists, tell me first.": "Lessons Learned",
        "You're editing the main workspace, not the session.": "Preferences",
        "Just run using `minsky`, not `bun run`.": "Preferences",
        "When working with json outputs, never use grep, but rather jq.": "Preferences",
        "Rules MUST always be created in the `.cursor/rules` directory": "Preferences",
        "Dont tell me what to do, do it yourself without asking": "Preferences",
        "No, never `bun link` a session version.": "Preferences",
        "The main version should be linked, not this one.": "Preferences",
        "Please always keep the changelog in `CHANGES.md` current.": "Preferences",
        "Please keep your answers short.": "Preferences",
        "Use `@clack/prompts` instead of bun-promptx": "Preferences",
        'Use "ruff" instead of flake8': "Preferences",
        "I prefer `vitest` over jest": "Preferences",
    }, got


def test_a_flag_fix_is_the_same_command_with_the_flag_added() -> None:
    """`--help` makes any command "pass", and another subcommand passing with another flag
    fixed nothing; a flag the error itself names is the fix even when the arguments
    changed."""
    fixes = _fixes_of(
        "Open a PR in the minsky project.",
        [
            ("minsky session start x --task 7", "error: unknown option '--task'"),
            ("minsky session list --json", '[{"session": "x"}]'),
            ("minsky tasks get", "error: missing required argument 'id'"),
            ("minsky tasks get --help", "Usage: minsky tasks get <id>"),
            ("minsky git pr", "Error: Either --session or --path must be given"),
            ("minsky git pr --path /tmp/s", "feat(#7): session paths"),
        ],
    )
    assert fixes == [
        "`Error: Either --session or --path must be given` from `minsky git` — fixed by adding "
        "`--path`"
    ], fixes


def test_a_script_that_runs_after_an_install_was_fixed_by_it() -> None:
    """A script (no check) that stopped on a missing module and printed its report, in
    whatever language, once the module was installed: the install is the fix. A rerun
    that prints nothing proves nothing, nor one the harness flagged as failed ("error",
    how the importers mark it), and a check must still say it passed."""
    fixes = _fixes_of(
        "Analyse the benchmark results in the bsc project.",
        [
            (
                r"cd proj && .\venv\Scripts\Activate.ps1 && python tests/analyze_results.py",
                "Traceback (most recent call last): | ModuleNotFoundError: No module named "
                "'seaborn'",
            ),
            ("pip install seaborn", "Successfully installed seaborn-0.13.2"),
            (
                r"cd proj && .\venv\Scripts\Activate.ps1 && python tests/analyze_results.py",
                "ANÁLISE COMPLETA! | relatório salvo em results/",
            ),
            ("python scripts/build.py", "ModuleNotFoundError: No module named 'deep_translator'"),
            ("pip install deep-translator", "Successfully installed deep-translator-1.11.4"),
            ("python scripts/build.py", ""),
            ("python tools/sync.py", "Traceback: | ImportError: cannot import name 'x'"),
            ("pip install x", "Successfully installed x-1.0"),
            ("python tools/sync.py", "error"),  # flagged failed by the harness, no text
            ("pytest -q", "ModuleNotFoundError: No module named 'httpx'"),
            ("pip install httpx", "Successfully installed httpx-0.28.1"),
            ("pytest -q", "collected 12 items"),
        ],
    )
    assert fixes == [
        "`ModuleNotFoundError: No module named 'seaborn'` from `python tests/analyze_results.py`"
        " — fixed by running `pip install seaborn`; then it ran"
    ], fixes


def test_a_rule_said_of_this_repository_is_the_project_s() -> None:
    """A rule said "in this repo" or "across our codebase" is the project's convention. A
    checkout ("the main workspace") or a place in the tree ("at the root of the project")
    is no scope."""
    from autopoiesis.knowledge.extractors import cues

    scoped = [
        "We use uv, not pip, in this repo.",
        "Never mock the database in this codebase.",
        "Across our monorepo, imports are absolute.",
        "For this project, always run the tests with tox.",
    ]
    unscoped = [
        "No, dont modify the main workspace, do this from the session workspace",
        "Rules MUST always be created in the `.cursor/rules` directory at the root of the project",
        "Use bun, not node.",
    ]
    assert all(cues.PROJECT_SCOPE.search(s) for s in scoped)
    assert not any(cues.PROJECT_SCOPE.search(s) for s in unscoped)
    src = _src(
        ("user", "Fix the login bug in the shopapp project. We use uv, not pip, in this repo.")
    )
    placed = {
        c.content: (c.path, c.section) for c in default_registry().get("lessons").run_offline(src)
    }
    assert placed["We use uv, not pip, in this repo."] == (
        "knowledge/projects/shopapp/context.md",
        "Conventions",
    )
    general = _src(("user", "We use uv, not pip, in this repo."))
    assert [
        (c.path, c.section) for c in default_registry().get("lessons").run_offline(general)
    ] == [("knowledge/memory/MEMORY.md", "Preferences")]  # no project: the user's


def test_an_error_reads_the_same_wherever_the_shell_prompt_was() -> None:
    """A terminal export copies the prompt with the output: the error is "Error: ..." up to
    the next prompt, so the same fix seen from two folders is one entry."""
    fixes = _fixes_of(
        "Open the PRs in the minsky project.",
        [
            (
                "minsky git pr",
                "me@host task#002 % minsky git pr Error: Either --session or "
                "--path must be provided me@host task#002 %",
            ),
            ("minsky git pr --path .", "feat(#2): paths"),
            (
                "minsky git pr",
                "me@host task#016 % minsky git pr Error: Either --session or "
                "--path must be provided me@host task#016 %",
            ),
            ("minsky git pr --path .", "feat(#16): more paths"),
        ],
    )
    assert fixes == [
        "`Error: Either --session or --path must be provided` from `minsky git` — fixed by "
        "adding `--path`"
    ], fixes


def test_a_model_s_preference_of_this_repository_goes_to_the_project_too() -> None:
    """lessons@3 with a model files a preference where the offline flavour does."""
    from autopoiesis.knowledge.extractors.lessons import lessons_v3_llm

    src = _src(
        ("user", "Fix the login bug in the shopapp project. We use uv, not pip, in this repo.")
    )
    reply = {
        "lessons": [
            {"lesson": "We use uv, not pip, in this repo.", "kind": "preference"},
            {"lesson": "Keep answers short.", "kind": "preference"},
            {"lesson": "Check the lockfile before a release.", "kind": "lesson"},
        ]
    }
    placed = {c.content: (c.path, c.section) for c in lessons_v3_llm(reply, src, "lessons@3")}
    assert placed == {
        "We use uv, not pip, in this repo.": (
            "knowledge/projects/shopapp/context.md",
            "Conventions",
        ),
        "Keep answers short.": ("knowledge/memory/MEMORY.md", "Preferences"),
        "Check the lockfile before a release.": ("knowledge/memory/MEMORY.md", "Lessons Learned"),
    }


def test_a_decision_names_what_was_chosen_and_no_order_is_one() -> None:
    """A plan whose object only points back or moves on ("option 2", "these updates",
    "switch gears", "back to", "onto") decides nothing readable later, and an order for
    the task at hand is no decision for the words "we will use" or "instead" inside it."""
    said = [
        "Yes, let's go with the factory approach in the polychrome project.",
        "Let's keep the singular folder name, analogous to `src`.",
        "Let's use the same blue we use for highlighting the comment.",
        "Let's go with option 2",
        "Let's switch gears for a bit.",
        "Ok, lets add these updates to the task spec",
        "Lets switch back to the session workspace and check the PR description",
        "Let's move onto our final to-dos",
        "Make a rule to record what we just learned re using `bun run` instead of `minsky`.",
        "Before we begin, please write out a plan for what we will use (Playwright).",
    ]
    turns = [t for text in said for t in (("user", text), ("agent", "Done."))]
    src = _src(*turns)
    kept = [
        c.content
        for c in default_registry().get("decisions").run_offline(src)
        if c.section == "Key Decisions" and c.path.endswith("context.md")
    ]
    assert [k.split(" (via")[0] for k in kept] == said[:3], kept


def test_the_agent_s_advice_narration_and_options_are_no_facts() -> None:
    """Facts of an agent's answer are what it observed. Its advice ("Remember to test ...",
    "Note: never commit ..."; its "FYI" before an observation stays), its narration of its next step and the options it lists
    filled a coding project's reference file with noise; the user's "remember that" and
    the agent's observations stay facts."""
    src = _src(
        ("user", "Remember that the staging database runs on port 5433."),
        (
            "agent",
            "Remember to test the changes across different devices and browsers to ensure "
            "compatibility and readability.\n\n"
            "Note: Never commit your actual secret key to version control.\n\n"
            "Now, I'll verify that your test files are located in the tests directory.\n\n"
            "1. **Upgrade Nuxt**: Upgrade to a newer version of Nuxt that is compatible with "
            "Node 18.\n\n"
            "The dev server is running on port 3000.\n\n"
            "FYI the staging server runs on port 8443.",
        ),
    )
    facts = [c.content for c in default_registry(plugins=False).get("facts").run_offline(src)]
    assert facts == [
        "The staging database runs on port 5433.",
        "The dev server is running on port 3000.",
        "The staging server runs on port 8443.",
    ], facts
    older = [c.content for c in default_registry(plugins=False).get("facts@2").run_offline(src)]
    assert any(f.startswith("To test the changes") for f in older)  # what v2 kept


def test_the_agent_s_generalities_and_verdicts_are_no_facts_even_when_accepted() -> None:
    """What the agent says in general ("typically handled in your nuxt.config.js") is its
    advice, and what it says works ("stored in the correct directory structure") its
    verdict on a check; a user's "ok" to the proposal that closes the turn accepts the
    proposal, not every sentence around it. Its observations stay facts, and the user's
    own word stays whatever it says."""
    src = _src(
        ("user", "Please note the session records are stored in the correct folder now."),
        (
            "agent",
            "Configuring the unminified version of p5.js for development is typically "
            "handled in your `nuxt.config.js` by adjusting the Webpack settings.\n\n"
            "When we tested it by hand, it worked:\n"
            "- Sessions are stored in the correct hierarchical directory structure\n"
            "- The session database is stored in `~/.local/state/minsky/session-db.json`\n\n"
            "The settings panel is located on the right of the toolbar.\n\n"
            "I suggest we proceed with accepting the changes.",
        ),
        ("user", "ok, go ahead"),
    )
    facts = [c.content for c in default_registry(plugins=False).get("facts").run_offline(src)]
    assert [f.split(" (via")[0] for f in facts] == [
        "The session records are stored in the correct folder now.",
        "The session database is stored in `~/.local/state/minsky/session-db.json`",
        "The settings panel is located on the right of the toolbar.",
    ], facts


def test_a_sentence_whose_code_the_export_lost_is_no_statement() -> None:
    assert not is_statement("The plan suggests that these are located in ``.")
    assert is_statement("The tests are located in the `tests` directory.")
    assert is_statement("Fenced code starts with ``` on its own line.")


def test_a_procedure_is_named_by_a_task_not_by_a_clause_or_a_pointer() -> None:
    """ "steps"/"process" before a colon introduced a clause or a pointer as often as a task
    on the development sessions: "process. These failures are in:", "Next steps (per
    workflow and rules):", "all the required steps from the Minsky workflow for task
    #004:", a "How to run:" whose step is a code block."""
    steps = "\n1. Stage and commit this change.\n2. Run the tests to ensure everything works."
    said = [
        "These came in during the merge process. These failures are in:" + steps,
        "Next steps (per workflow and rules):" + steps,
        "I've completed all the required steps from the Minsky workflow for task #004:" + steps,
        "**How to run:**\n1. ```sh bun test src/domain/tasks.test.ts ```\n2. ```sh bun x```",
        "Steps to release the desktop app:\n1. Bump the version in package.json.\n"
        "2. Tag the release and push the tag.",
    ]
    src = _src(*[t for text in said for t in (("user", text), ("agent", "Done."))])
    made = default_registry(plugins=False).get("procedures").run_offline(src)
    assert [c.path for c in made] == ["knowledge/procedures/release-the-desktop-app.md"], made


def test_a_procedure_is_never_read_from_output_pasted_in_a_fence() -> None:
    """A user pasted a test run's output in a fence, where a model's answer read 'To write
    "ninety', (✗), Test2: ...': a "To X, ..." procedure to v2; v3 reads procedures from
    what somebody wrote, so none, even when the user wrote prose in the same minute (a
    harness streams a session's turns a minute apart or less). A procedure said in prose
    still is one."""
    log = (
        "lmstrix test --all\n\n```\n[21/57] Testing lucy-128k...\n"
        "    Test1: 'and mathematical operations.\n\n"
        "To write \"ninety' (✗), Test2: '5, 4+1=5.' (✓)\n  ✓ Success at 2,048 tokens\n"
        "[22/57] Testing llama-3.2-3b-instruct...\n"
        "  ⏳ Waiting 3 seconds before next model (resource cleanup)...\n```\n"
    )
    said = (
        "To cut a release, first bump the version in package.json, then tag the release "
        "commit, finally push the new tag to origin."
    )
    src = _src(("user", log), ("user", said), ("agent", "Done."), minutes_apart=0)
    registry = default_registry(plugins=False)
    v2 = registry.get("procedures@2").run_offline(src)
    assert any("Success at 2,048 tokens" in c.content for c in v2), v2  # what v3 fixes
    made = registry.get("procedures").run_offline(src)
    assert [c.path for c in made] == ["knowledge/procedures/cut-a-release.md"], made


def test_a_request_a_list_s_announcement_a_narrated_plan_and_a_verdict_are_no_knowledge() -> None:
    """Four shapes the second coding set's extraction kept (bench/coding-b): a user's
    request with a fact's words in it ("here is the corrected version ..., please update
    the function"), an observation whose list came after it ("... and include:", kept
    without that clause when the rest is whole), the agent's next steps told as a
    procedure ("To understand this better, I'll first read ..."), and the agent's verdict
    on its own work ("This fulfills the directive: ..."). The same facts and procedure said
    plainly are kept."""
    src = _src(
        (
            "user",
            "It seems the page is stored in the wrong folder, here is the corrected version "
            "of it, please update the onPageVisit function in config.ts.",
        ),
        ("agent", "Your scripts are located in `assets/development/scripts/` and include:"),
        (
            "agent",
            "To understand this better, I'll first read the `thumbfind.py` script to see "
            "the calculations. Then, I'll read the `thumbfind1.md` notes for more context.",
        ),
        (
            "agent",
            "This fulfills the directive: code lives in the new accelerated sub-package, "
            "shims exist for external users.",
        ),
        ("user", "ok"),
        ("user", "The crawler output is stored in the output.json file of the project."),
        (
            "user",
            "To cut a release, first bump the version in package.json, then tag the "
            "release commit, finally push the new tag to origin.",
        ),
        ("agent", "Done."),
    )
    registry = default_registry(plugins=False)
    facts = [c.content for c in registry.get("facts").run_offline(src)]
    assert facts == [
        "Your scripts are located in `assets/development/scripts/`.",
        "The crawler output is stored in the output.json file of the project.",
    ], facts
    assert not is_statement(
        "Your scripts are located in `assets/development/scripts/` and include:"
    )
    made = registry.get("procedures").run_offline(src)
    assert [c.path for c in made] == ["knowledge/procedures/cut-a-release.md"], made


def test_a_word_joined_to_a_role_word_names_no_role() -> None:
    """ "Unfortunately, the dev-server.log did not appear" made a person "Unfortunately"
    whose role was "the dev"; "Tom, the new dev, starts Monday" still names Tom's role."""
    src = _src(
        ("user", "Unfortunately, the dev-server.log did not appear, and only 2 tests passed."),
        ("agent", "Done."),
        ("user", "Tom, the new dev, starts on Monday."),
    )
    made = default_registry(plugins=False).get("people").run_offline(src)
    assert {c.path for c in made if not c.path.endswith("_index.md")} == {
        "knowledge/people/tom.md"
    }, made


def test_a_transcript_without_project_is_not_filed_under_its_folder_s_bare_name(
    tmp_path: Path,
) -> None:
    # A transcript that names no project (its folder had none when it was filed) but has
    # a `cwd:`: the extractors ask core.project, as capture does. A folder of this machine
    # in no repository (`.../src`) is no project: the decision goes to MEMORY.md, not to
    # knowledge/projects/src/; a folder of another machine is named by its path.
    from datetime import UTC, datetime

    from autopoiesis.formats import transcript as tf
    from autopoiesis.formats.transcript_meta import TranscriptMeta

    local = tmp_path / "scratch" / "src"
    local.mkdir(parents=True)
    at = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)

    def decisions_in(cwd: str) -> list[str]:
        meta = TranscriptMeta("ses-cwd", at, cwd=cwd)
        turn = tf.Turn(at, "user", (tf.Text("We decided to use Postgres for the queue."),))
        src = SourceTranscript.from_text("raw/x.md", tf.render(tf.Transcript(meta, "t", (turn,))))
        changes = default_registry().get("decisions").run_offline(src)
        return sorted({c.path for c in changes})

    assert decisions_in(str(local)) == [MEM]
    assert CTX in decisions_in("/Users/someone/Projects/shop-api/src")


def _journal_of_calls(
    calls: list[tuple[str, str, str]], asked: str = "Fix the empty cart total in the shop"
) -> list[str]:
    """The journal lines journal@3 makes of a session ASKED something whose agent then made
    tool CALLS (tool, args, result)."""
    from datetime import UTC, datetime

    from autopoiesis.formats import transcript as tf
    from autopoiesis.formats.transcript_meta import TranscriptMeta

    at = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    transcript = tf.Transcript(
        TranscriptMeta("ses-commits", at),
        asked,
        (
            tf.Turn(at, "user", (tf.Text(asked),)),
            tf.Turn(at, "agent", tuple(tf.ToolCall(*call) for call in calls)),
        ),
    )
    src = SourceTranscript.from_text("raw/x.md", tf.render(transcript))
    return [c.content for c in default_registry(plugins=False).get("journal").run_offline(src)]


def test_the_journal_names_the_commits_the_session_made() -> None:
    """A commit's subject is what its author said the change does. Only a commit git
    reported making counts (its "[branch sha] subject" line); the subject is the message as
    `-m` gave it where the log's copy of git's line is cut short or wrapped, and git's own
    line for a message from a file or a here-document (kept on one line in a transcript)."""
    heredoc = (
        "git commit -m \"$(cat <<'EOF'\nGuard the empty cart\n\nThe total of no items is 0."
        '\nEOF\n)"'
    )
    lines = _journal_of_calls(
        [
            ("Edit", "src/cart.ts", "The file src/cart.ts has been updated."),
            (
                "Bash",
                'git commit -m "Nothing yet"; git commit -am "Nothing either"',
                "nothing to commit, working tree clean\nnothing added to commit",
            ),
            (
                "Bash",
                'git add -A && git commit -m "Fix the total of an empty cart"',
                "[main 40c1a2b] Fix the total of an empty c … art\n 1 file changed",
            ),
            ("Bash", heredoc, "[main 51d2b3c] Guard the empty cart\n 1 file changed"),
            ("Bash", "git -C . commit -F msg.txt", "[main 62e3c4d] Note the cart in the changelog"),
            ("Bash", "git log --oneline -1", "[main 62e3c4d] not a commit made here"),
            ("Bash", "pnpm test", "Tests: 13 passed, 13 total"),
        ]
    )
    assert lines == [
        'Fix the empty cart total in the shop — changed 1 file (cart.ts); committed "Fix the '
        'total of an empty cart", "Note the cart in the changelog" and 1 other between; '
        "checks passed: `pnpm test`"
    ]
    assert "Nothing yet" not in lines[0]
    from datetime import UTC, datetime

    from autopoiesis.knowledge.extractors.coding import ToolStep

    # of two chained commits, the one git made is named by its own message
    chained = ToolStep(
        datetime(2026, 3, 2, tzinfo=UTC),
        "Bash",
        'git commit -m "Tidy the imports"; git commit -am "Round the cart total"',
        "nothing to commit, working tree clean\n[main 73f4d5e] Round the cart total\n"
        " 1 file changed",
        "",
    )
    assert chained.commits == ["Round the cart total"]


def test_a_part_of_the_journal_line_that_would_be_cut_is_left_out_whole() -> None:
    """The line says what was done part by part; one that would be cut at the line's
    length is left out, and the parts after it still come when they fit."""
    subject = "Rework the cart totals, the discounts and the rounding of every line item"
    calls = [
        ("Edit", "src/cart.ts", "updated"),
        ("Bash", f'git commit -m "{subject} (1 of 2)"', f"[main 40c1a2b] {subject} (1 of 2)"),
        ("Bash", f'git commit -m "{subject} (2 of 2)"', f"[main 51d2b3c] {subject} (2 of 2)"),
        ("Bash", "pnpm test", "Tests: 13 passed, 13 total"),
    ]
    short = _journal_of_calls(calls)
    assert short == [
        f'Fix the empty cart total in the shop — changed 1 file (cart.ts); committed "{subject}'
        f' (1 of 2)", "{subject} (2 of 2)"; checks passed: `pnpm test`'
    ]
    asked = "Fix the empty cart total in the shop, " + "and the checkout page that shows it, " * 3
    [line] = _journal_of_calls(calls, asked)
    assert line.endswith(" — changed 1 file (cart.ts); checks passed: `pnpm test`"), line
    assert "committed" not in line and len(line) <= 300


@pytest.mark.slow
def test_a_hostile_commit_log_is_read_in_linear_time() -> None:
    """A result of "[" after "[" (each a possible start of git's line) and "git -C -x"
    repeated (each pair read two ways) took minutes, and time doubling with each pair.
    Eight times the input takes about eight times the CPU time now."""
    from datetime import UTC, datetime

    from autopoiesis.knowledge.extractors.coding import ToolStep

    def cpu(n: int) -> float:
        best = float("inf")
        for _ in range(3):
            steps = [
                ToolStep(datetime(2026, 3, 2, tzinfo=UTC), "Bash", "git commit", "[" * n, ""),
                ToolStep(
                    datetime(2026, 3, 2, tzinfo=UTC), "Bash", "git " + "-C -x " * n + "no", "", ""
                ),
            ]
            started = time.process_time()
            assert [s.commits for s in steps] == [[], []]
            best = min(best, time.process_time() - started)
        return best

    small, large = cpu(2_000), cpu(16_000)
    assert large < 30 * max(small, 0.0005), f"2,000: {small:.4f} s, 16,000: {large:.4f} s"


def test_a_tool_is_known_by_its_name_without_its_version() -> None:
    """Cursor's newer logs call the terminal `run_terminal_command_v2` and the editor
    `edit_file_v2`: their commands and edits count as the older names' do."""
    lines = _journal_of_calls(
        [
            ("edit_file_v2", "src/cart.ts", "updated"),
            ("run_terminal_command_v2", "pnpm test", "Tests: 13 passed, 13 total"),
        ]
    )
    assert lines == [
        "Fix the empty cart total in the shop — changed 1 file (cart.ts); checks passed: "
        "`pnpm test`"
    ]


def test_a_check_is_still_failing_only_when_nothing_after_its_failure_says_otherwise() -> None:
    """The journal said "still failing" of checks that passed later: a prompt's git status
    ("[$✘!+?]") read as a failed test's mark, so `yarn tsc` failed with "Done in 2.15s";
    golangci-lint's "0 issues." read as no result, so its earlier failure stood; a build
    whose later run showed no failure, and a run of one file after the project's run
    passed, stayed failing. Now a later run of the same command that shows no failure ends
    the failure (passed when it says so), and the project's passing run covers the runs of
    chosen files before it. A failure nothing came after, or only a run whose output the
    log lost, is still failing."""
    prompt = " gpt-crawler on fck_claude [$✘!+?] is 📦 v1.4.0 took 2s ❯"
    lines = _journal_of_calls(
        [
            (
                "run_terminal_cmd",
                "yarn tsc",
                "$ tsc src/server.ts:20:46 - error TS2769: No overload matches this call."
                f" error Command failed with exit code 2.{prompt}",
            ),
            ("Bash", "golangci-lint run main.go", "Exit code 1 main.go:6:2: unused (typecheck)"),
            ("Bash", "golangci-lint run", "Exit code 1 main.go:6:2: unused 1 issues:"),
            ("Bash", "go build -o app && ./app list --help", "Exit code 1 events.go:78: bad"),
            ("Edit", "src/server.ts", "The file src/server.ts has been updated."),
            ("run_terminal_cmd", "yarn tsc", f"$ tsc Done in 2.15s.{prompt}"),
            ("Bash", "golangci-lint run", "0 issues."),
            ("Bash", "go build -o app && ./app list --help", "List all sessions. Usage: app"),
            ("Bash", "go test ./...", "--- FAIL: TestList (0.00s) FAIL"),
            ("Bash", "npx tsc --noEmit", "Exit code 2 src/a.ts(3,1): error TS2304: x"),
            ("Bash", "npx tsc --noEmit", ""),  # its output lost: it says nothing
        ]
    )
    assert lines == [
        "Fix the empty cart total in the shop — changed 1 file (server.ts); checks passed: "
        "`yarn tsc`, `golangci-lint run`; still failing: `go test ./...`, `npx tsc --noEmit`"
    ]


def test_a_check_its_machine_could_not_run_is_no_result() -> None:
    """A run the shell or Python refused (no such folder to cd into, `Command 'python' not
    found`, `No module named pytest`) never ran the tests: it was read as the tests failing,
    and the journal said "still failing" of them. A project's module a test run cannot
    import is a failure of the tests."""
    pytest = "python -m pytest tests/unit/test_utils*.py --cov=src/utils"
    refused = [
        (
            "run_terminal_cmd",
            f"cd /d/Work/DocGen && {pytest}",
            "-bash: cd: /d/Work/DocGen: No such file or directory",
        ),
        ("run_terminal_cmd", pytest, "Command 'python' not found, did you mean: 'python3'"),
        ("run_terminal_cmd", f"python3{pytest[6:]}", "/usr/bin/python3.13: No module named pytest"),
        ("run_terminal_cmd", "ruff check src", "zsh: command not found: ruff"),
    ]
    assert _journal_of_calls(refused) == [
        "Fix the empty cart total in the shop (2 turns, 4 tool calls)"
    ]
    broken = ("run_terminal_cmd", "pytest -q", "E   ModuleNotFoundError: No module named 'cart'")
    assert _journal_of_calls([*refused, broken]) == [
        "Fix the empty cart total in the shop — still failing: `pytest -q`"
    ]


def test_a_rule_the_user_asks_for_is_a_preference() -> None:
    """A request for a rule states one by the user's own word, however it is phrased:
    what follows "that ...", "saying ..." or a colon, or each point of the list after a
    request that names only its topic (kept after that topic). A request with neither, a
    list after other instructions, and a point the sentences gave already add nothing."""
    lessons = default_registry(plugins=False).get("lessons")

    def rules(text: str) -> list[tuple[str, str]]:
        src = _src(("agent", "I've updated the viewer."), ("user", text), ("agent", "OK."))
        return [(c.section, c.content) for c in lessons.run_offline(src)]

    assert rules(
        "create a rule that specifies that when fixing a bug to first always create a "
        "failing test that covers the behavior prior to fixing it"
    ) == [
        (
            "Preferences",
            "When fixing a bug to first always create a failing test that covers the "
            "behavior prior to fixing it",
        )
    ]
    assert rules("Please add to CLAUDE.md: never push to main without a review") == [
        ("Preferences", "Never push to main without a review")
    ]
    assert rules(
        "add a rule providing guidance on how to write PR descriptions\n\n"
        "- always use the conventional commits format for the title\n"
        "- describe the motivation for the work before the changes\n"
        "- mention any ancillary changes that were made\n\n"
        "Then run the tests and push the branch."
    ) == [
        ("Preferences", "Always use the conventional commits format for the title"),
        (
            "Preferences",
            "How to write PR descriptions: describe the motivation for the work before the changes",
        ),
        (
            "Preferences",
            "How to write PR descriptions: mention any ancillary changes that were made",
        ),
    ]
    assert rules("make a rule for it") == []
    assert rules("write the instructions down for the deploy:\n- build the image\n- ship it") == []


@pytest.mark.slow
def test_a_streamed_session_without_its_folder_is_filed_where_its_tools_worked(
    memory_repo: MemoryRepo,
) -> None:
    """A capture stream that says neither `cwd` nor `project` (a chat export converted to
    it): the session's project is the one its edits and its shell's `cd` worked in, named
    as a working folder of another machine is, and its edits are named as the project's
    people name them. A file of an application's own folder (~/.claude) names none."""
    from autopoiesis.capture.stream import process_stream

    root = "/Users/alice/code/shop-api"

    def session(sid: str, hour: int, *events: tuple[str, dict[str, object]]) -> list[bytes]:
        """A whole session of the stream: its start, EVENTS a minute apart, its end."""
        at = f"2026-03-02T{hour:02d}:"
        return [
            json.dumps({"event": "session_start", "session_id": sid, "started": f"{at}00:00Z"}),
            *(
                json.dumps({"event": kind, "timestamp": f"{at}{i:02d}:00Z", **fields})
                for i, (kind, fields) in enumerate(events, 1)
            ),
            json.dumps({"event": "session_end", "ended": f"{at}{len(events) + 1:02d}:00Z"}),
        ]

    lines = session(
        "ses-nofolder",
        10,
        ("message", {"role": "user", "content": "The empty cart shows NaN as its total. Fix it."}),
        ("tool_call", {"tool": "Read", "args": "/Users/alice/.claude/settings.json"}),
        ("tool_call", {"tool": "Edit", "args": f"{root}/src/cart.ts", "result": "updated"}),
        ("tool_call", {"tool": "Bash", "args": f"cd {root} && pnpm test", "result": "13 passed"}),
        ("message", {"role": "agent", "content": "I've fixed the total of an empty cart."}),
    )
    elsewhere = session(
        "ses-dotfiles",
        11,
        ("message", {"role": "user", "content": "Add my usual rules to the global settings."}),
        ("tool_call", {"tool": "Edit", "args": "/Users/alice/.claude/CLAUDE.md", "result": "ok"}),
    )
    report = process_stream(memory_repo, [(line + "\n").encode() for line in lines + elsewhere])
    assert not report.refused
    # the transcripts say so too, so that search ranks the session's turns as shop-api's
    from autopoiesis.formats import transcript as tf

    metas = [tf.parse(p.read_text(), p.name).meta for p in (memory_repo.root / "raw").rglob("*.md")]
    assert {m.session_id: m.project for m in metas} == {
        "ses-nofolder": "shop-api",
        "ses-dotfiles": None,
    }
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        assert not ex.extract_pending().failed
    assert _live(memory_repo, CTX, "Changes") == [
        "Changed `src/cart.ts` — for: The empty cart shows NaN as its total. Fix it."
    ]
    assert any("`pnpm test`" in c for c in _live(memory_repo, CTX, "Commands"))
    journal = (memory_repo.root / "knowledge/journal/2026-03-02.md").read_text()
    assert "### shop-api" in journal
    assert not (memory_repo.root / "knowledge/projects/claude").exists()


def test_a_word_that_says_which_project_names_none() -> None:
    """ "the current project", "the main project" say which project, not its name (the
    development set's sessions, read without their folder, named projects `current`,
    `main`, `actual` and `original`); "the shop-api project" names one."""
    from autopoiesis.knowledge.extractors.base import detect_project

    for which in ("current", "main", "actual", "original", "existing"):
        said = f"In the {which} project the build takes two minutes, see the {which} project docs."
        assert detect_project(_src(("user", said))) == "general", which
    assert (
        detect_project(_src(("user", "The build of the shop-api project is slow."))) == "shop-api"
    )


def test_an_imported_session_without_its_folder_gets_the_project_its_tools_worked_in(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """The same for an import: a neutral log that names no folder gets the project of the
    folder its agent moved into, and a secret in that folder's path names no project."""
    from autopoiesis.formats import transcript as tf

    def session(sid: str, folder: str) -> dict[str, object]:
        return {
            "session_id": sid,
            "started": "2026-03-02T10:00:00Z",
            "messages": [
                {"role": "user", "content": "Run the tests.", "timestamp": "2026-03-02T10:00:00Z"},
                {
                    "role": "assistant",
                    "content": "They pass.",
                    "timestamp": "2026-03-02T10:01:00Z",
                    "tool_calls": [
                        {"tool": "Bash", "args": f"cd {folder} && pytest -q", "result": "3 passed"}
                    ],
                },
            ],
        }

    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    log = tmp_path / "sessions.json"
    log.write_text(
        json.dumps(
            [
                session("ses-billing", "/home/dev/src/billing-api"),
                session("ses-secret", f"/home/dev/{secret}"),
            ]
        )
    )
    report = import_files(memory_repo, [log], fmt="neutral")
    assert not report.refused, report.refused
    metas = {
        m.session_id: m.project
        for m in (tf.parse((memory_repo.root / r).read_text(), r).meta for r in report.imported)
    }
    assert metas == {"ses-billing": "billing-api", "ses-secret": None}


@pytest.mark.slow
def test_an_export_streamed_turn_by_turn_gives_what_its_import_gives(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A real SpecStory export (bench/coding) sent through `capture` by a converter that
    makes each turn's Markdown one message, tool markup and all: extraction reads its tool
    steps (formats/specstory_markup.read_steps), so the project's Commands are those its
    import gives, and the journal names the commits it made."""
    from autopoiesis.capture.stream import process_stream
    from autopoiesis.integrations.specstory.importer import SpecStoryImporter
    from autopoiesis.memory.initialize import init_memory_repo

    history = Path(__file__).resolve().parents[2] / "bench/coding/sessions/minsky/.specstory"
    export = history / "history/2025-04-29_16-46-debugging-pr-command-logic.md"
    if not export.exists():
        pytest.skip(f"{export} is not in this checkout")
    text = export.read_text(encoding="utf-8")
    events: list[dict[str, object]] = [
        {
            "event": "session_start",
            "session_id": "ses-md",
            "started": "2025-05-02T18:09:00Z",
            "cwd": "/Users/someone/Projects/minsky",
        },
    ]
    role, lines = None, []
    for line in [*text.split("\n"), "_**User**_"]:  # a last marker closes the last turn
        marker = line.strip() in ("_**User**_", "_**Assistant**_")
        if marker and role and "\n".join(lines).strip().strip("-").strip():
            body = "\n".join(lines).strip()
            events.append(
                {
                    "event": "message",
                    "role": role,
                    "content": body,
                    "timestamp": f"2025-05-02T18:{10 + len(events):02d}:00Z",
                }
            )
        if marker:
            role, lines = ("user" if "User" in line else "assistant"), []
        elif role:
            lines.append(line)
    events.append({"event": "session_end", "ended": "2025-05-02T19:00:00Z"})
    report = process_stream(memory_repo, [(json.dumps(e) + "\n").encode() for e in events])
    assert not report.refused
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        assert not ex.extract_pending().failed
    streamed_journal = "".join(
        p.read_text() for p in (memory_repo.root / "knowledge/journal").glob("*.md")
    )
    streamed = _live(memory_repo, "knowledge/projects/minsky/context.md", "Commands")

    imported_repo = MemoryRepo(
        init_memory_repo(tmp_path / "imported", install_hooks=False, build_index=False).root
    )
    placed = tmp_path / "minsky/.specstory/history" / export.name
    placed.parent.mkdir(parents=True)
    placed.write_text(text, encoding="utf-8")
    assert SpecStoryImporter().detect(placed, text) > 0.5
    assert not import_files(imported_repo, [placed]).refused
    with KnowledgeExtractor(imported_repo, use_llm=False) as ex:
        assert not ex.extract_pending().failed
    imported = _live(imported_repo, "knowledge/projects/minsky/context.md", "Commands")

    assert streamed and streamed == imported
    assert 'committed "Update PR description for session 004' in streamed_journal


def test_a_rule_said_with_weight_is_a_preference() -> None:
    """A developer who shouts a rule, or says it holds every time or everywhere, means it
    to stand, as does one of what "we" should never do: each is a preference (the user's
    everywhere, like every rule not said of "this repo" or "everywhere" in its code). Shouting with no rule in it, a one-off ("... ONLY", "JUST identify"), a
    thing at hand ("this file", "it") and a quoted line of code or tool message are none."""
    src = _src(
        ("user", "Fix the login bug in the shopapp project."),
        ("agent", "I ran `python3 -m pytest -n auto` and it passed."),
        ("user", "I don't want the parallelization of tests"),
        ("user", "stop using python3. no test scripts ever, i will test by hand"),
        ("user", "BEFORE WE LOAD A MODEL, we need to ensure that we UNLOAD ALL LOADED MODELS"),
        ("user", "We should everywhere rename chroma to hue in terminology."),
        ("user", "I want every command to print its elapsed time"),
        ("user", "DO NOT ask me anymore whether to continue."),
        ("user", "In this repo, NEVER commit the generated files."),
        # a rule of how the team works, typed before a question
        ("user", "We shouldn't have any tests that rely on a session, what does this test test?"),
        # none of these
        ("user", "NO NO NO, we are spatially perfect but temporally misaligned."),
        ("user", "On some Redo attempts it is NOT the one that was there before."),
        ("user", "no, i want to update the description field ONLY"),
        ("user", "DO NOT modify code, JUST identify where the issue lies."),
        ("user", "I don't want this file."),
        ("user", "I don't want it."),
        ("user", "We don't want that JSON block."),
        ("user", "We shouldn't push this branch."),
        ("user", "We shouldn't merge yet."),
        ("user", "We should not have done that."),
        # a question asked the other way round, without its question mark
        ("user", "So then don't we NOT want go.work at all."),
        # a line of code or a tool's message, quoted
        ("user", "// TODO: ALWAYS check the return value"),
        ("user", "Note: all fields are required and MUST be filled"),
    )
    placed = {
        c.content: (c.path, c.section)
        for c in default_registry(plugins=False).get("lessons").run_offline(src)
    }
    theirs = ("knowledge/memory/MEMORY.md", "Preferences")
    assert placed == {
        "I don't want the parallelization of tests": theirs,
        "Stop using python3.": theirs,
        "No test scripts ever, i will test by hand": theirs,
        "BEFORE WE LOAD A MODEL, we need to ensure that we UNLOAD ALL LOADED MODELS": theirs,
        # "everywhere" in a project's session: all through its code
        "We should everywhere rename chroma to hue in terminology.": (
            "knowledge/projects/shopapp/context.md",
            "Conventions",
        ),
        "I want every command to print its elapsed time": theirs,
        "DO NOT ask me anymore whether to continue.": theirs,
        "We shouldn't have any tests that rely on a session": theirs,
        "In this repo, NEVER commit the generated files.": (
            "knowledge/projects/shopapp/context.md",
            "Conventions",
        ),
    }, placed


def test_a_shell_s_renames_moves_and_deletions_are_changes(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`mv`, `git mv`, `rm` and `git rm` change the project's files as surely as an edit: a
    session's renames (a file moved twice by its first and last names), moves and deletions
    are filed under the request they served, and counted in the journal. What failed, what
    lies outside the project, a backup kept for a moment, a build's output, a file moved
    back and a scratch file the session made and deleted again are no change."""
    log = _claude_log(
        tmp_path / "renames.jsonl",
        [
            ("user", "Rename the docs to the ALL-CAPS naming and drop the old PostHog notes."),
            (
                "tool",
                (
                    "Bash",
                    {"command": 'cd ./docs && mv "homebrew_setup.md" "HOMEBREW.md"'},
                    "",
                    False,
                ),
            ),
            (
                "tool",
                ("Bash", {"command": "git mv docs/HOMEBREW.md docs/HOMEBREW-SETUP.md"}, "", False),
            ),
            (
                "tool",
                (
                    "Bash",
                    {"command": "mv /work/shop-api/pkg/gemini /work/shop-api/pkg/geminicli"},
                    "",
                    False,
                ),
            ),
            ("tool", ("Bash", {"command": "rm docs/spst_posthog.md 2>/dev/null"}, "", False)),
            (
                "tool",
                (
                    "Bash",
                    {"command": "rm docs/missing.md"},
                    "rm: docs/missing.md: No such file or directory",
                    True,
                ),
            ),
            (
                "tool",
                ("Bash", {"command": "mv src/a.ts src/a.ts.bak && touch src/a.ts"}, "", False),
            ),
            ("tool", ("Bash", {"command": "mv tasks/027-x.md tasks/026-x.md"}, "", False)),
            ("tool", ("Bash", {"command": "mv tasks/026-x.md tasks/027-x.md"}, "", False)),
            (
                "tool",
                ("Bash", {"command": "rm -rf node_modules dist && rm ~/.cache/x.json"}, "", False),
            ),
            ("tool", ("Bash", {"command": "rm /tmp/scratch.txt; git rm --cached .env"}, "", False)),
            (
                "tool",
                ("Bash", {"command": "rm -rf /root/.local/state/shop-api/git/task#002"}, "", False),
            ),
            ("tool", ("Bash", {"command": "for f in *.md; do mv $f old/; done"}, "", False)),
            (
                "tool",
                (
                    "Write",
                    {"file_path": "/work/shop-api/scratch_test.go", "content": "package x"},
                    "File created successfully at: /work/shop-api/scratch_test.go",
                    False,
                ),
            ),
            ("tool", ("Bash", {"command": "rm scratch_test.go"}, "", False)),
            (
                "tool",
                (
                    "Edit",
                    {
                        "file_path": "/work/shop-api/docs/index.md",
                        "old_string": "a",
                        "new_string": "b",
                    },
                    "The file has been updated.",
                    False,
                ),
            ),
        ],
    )
    import_files(memory_repo, [log], fmt="claude-code")
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        assert not ex.extract_pending().failed
    changes = _live(memory_repo, CTX, "Changes")
    assert changes == [
        "Changed `docs/index.md`; renamed `docs/homebrew_setup.md` → `docs/HOMEBREW-SETUP.md`, "
        "`pkg/gemini` → `pkg/geminicli`; deleted `docs/spst_posthog.md` — for: Rename the docs "
        "to the ALL-CAPS naming and drop the old PostHog notes."
    ]
    journal = next((memory_repo.root / "knowledge/journal").glob("2026-03-02.md")).read_text()
    assert "changed 4 files (index.md, HOMEBREW-SETUP.md, geminicli, spst_posthog.md)" in journal


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            'cd ./docs && mv "a b.md" "C.md" && mv x.md Y.md',
            [("docs/a b.md", "docs/C.md"), ("docs/x.md", "docs/Y.md")],
        ),
        ("mv a.py b.py lib/", [("a.py", "lib/a.py"), ("b.py", "lib/b.py")]),
        ("mv util.py lib", [("util.py", "lib/util.py")]),  # a file to a name without extension
        ("git -C repo mv a.md b.md", [("a.md", "b.md")]),
        (
            "rm -f go.work go.work.sum 2>/dev/null || true",
            [("go.work", None), ("go.work.sum", None)],
        ),
        ("git rm -r old/", [("old", None)]),
        ("git rm --cached .env", []),  # the file stays on disk
        ("rm -f .cursor/rules && mkdir -p .cursor/rules", []),  # made again: replaced
        ("rm a.md; touch a.md", []),
        ("rm -rf state/task#002 # old clone", [("state/task#002", None)]),  # no comment in a word
        ("cd $DIR && rm a.txt && rm /w/p/b.txt", [("/w/p/b.txt", None)]),  # below an unknown cd
        ("cd && rm a.txt", []),
        ("cd docs && cd .. && rm x.md", [("x.md", None)]),
        ("mv -t lib a.py b.py", []),  # the target first: not worth the guess
        ("for d in a b; do mv $d x; done", []),  # the shell expands it
        ("mv ~/x y", []),
        ('mv "unclosed', []),  # a log cut it short
        ("mv docs/Project Ide…", []),
        ("echo rm me && grep -rn mv src", []),
        ("mv " + "a" * 2500 + " b", []),  # a script, not a file operation
    ],
)
def test_a_shell_command_s_file_operations(
    command: str, expected: list[tuple[str, str | None]]
) -> None:
    from autopoiesis.formats.tool_calls import shell_file_operations

    assert [(op.path, op.to) for op in shell_file_operations(command)] == expected


def test_where_the_work_was_pushed_last_is_the_project_s_current_state(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A `git push` that git reported making files the branch and the remote (its address
    when git printed it) as the project's current state, one live entry: a later session's
    push supersedes it, its address without the credentials a URL may carry. A refused
    push, one with nothing to push, one whose report the log did not keep, one to a
    folder of this machine and one to another project's repository are none."""
    first = _claude_log(
        tmp_path / "push-1.jsonl",
        [
            ("user", "Fix the KMS key policy checks and push the branch to my fork."),
            (
                "tool",
                (
                    "Bash",
                    {"command": "git push origin kms-policy-fix"},
                    "error: failed to push some refs to 'github.com:me/Shop_API.git'\n"
                    "hint: Updates were rejected because the tip of your current branch is behind",
                    True,
                ),
            ),
            (
                "tool",
                (
                    "Bash",
                    {"command": "git push -f origin kms-policy-fix"},
                    "To https://me:[redacted:github_token]@github.com/me/Shop_API.git\n"
                    " + 6751ade79...14ddacbac kms-policy-fix -> "
                    "kms-policy-fix (forced update)",
                    False,
                ),
            ),
            ("tool", ("Bash", {"command": "git push"}, "Everything up-to-date", False)),
            (
                "tool",
                (
                    "Bash",
                    {"command": "git push fork kms-policy-fix"},
                    "To github.com:me/moto.git\n * [new branch] kms-policy-fix -> kms-policy-fix",
                    False,
                ),
            ),
            (
                "tool",
                (
                    "Bash",
                    {"command": "git push local task#2"},
                    "To /home/me/src/shop-api\n * [new branch] task#2 -> task#2",
                    False,
                ),
            ),
        ],
    )
    second = tmp_path / "push-2.jsonl"
    _claude_log(
        second,
        [
            ("user", "Open the follow-up branch for the grant checks and push it."),
            (
                "tool",
                (
                    "Bash",
                    {"command": "git push -u origin kms-grants"},
                    "branch 'kms-grants' set up to track 'origin/kms-grants'.",
                    False,
                ),
            ),
            (
                "tool",
                (
                    "Bash",
                    {"command": "git push origin kms-grants"},
                    "Enumerating objects: 9, …",
                    False,
                ),
            ),
        ],
    )
    second.write_text(
        second.read_text()
        .replace("ses-coding-1", "ses-coding-2")
        .replace("2026-03-02T", "2026-03-03T")
    )
    import_files(memory_repo, [first], fmt="claude-code")
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        assert not ex.extract_pending().failed
    assert _live(memory_repo, CTX, "Current State") == [
        "The work is pushed to branch `kms-policy-fix` of `https://github.com/me/Shop_API.git`"
    ]
    import_files(memory_repo, [second], fmt="claude-code")
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        assert not ex.extract_pending().failed
    assert _live(memory_repo, CTX, "Current State") == [
        "The work is pushed to branch `kms-grants` of `origin`"
    ]
    text = (memory_repo.root / CTX).read_text()
    assert "~~" in text and "kms-policy-fix" in text  # superseded, not deleted


def test_a_remote_git_named_only_is_named_by_the_address_the_session_gave_it(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A push whose log kept only "set up to track 'origin/x'" (git's "To ..." line went to
    the other stream) is filed under the address the session listed (`git remote -v`) or
    gave (`git remote add`, `set-url`, after a `rename`) for that name; an address of
    another project's repository or of this machine is no push of the project's work.
    The same branch pushed to another remote is a new value of the project's "pushed"
    entry, though most of its words are the same."""

    def bash(command: str, result: str) -> tuple[str, object]:
        return ("tool", ("Bash", {"command": command}, result, False))

    def tracked(branch: str, remote: str = "origin") -> str:
        return f"branch '{branch}' set up to track '{remote}/{branch}'. | root@60772da8cf86:/app#"

    sessions = [
        [
            ("user", "Push the fix to my fork: I cannot push to upstream."),
            bash(
                "git remote -v",
                "origin https://github.com/acme/shop-api.git (fetch) | "
                "origin https://github.com/acme/shop-api.git (push) | root@60772da8cf86:/app#",
            ),
            bash("git remote rename origin upstream", "Renaming remote references: 100% (5/5)"),
            bash("git remote add origin https://github.com/me/shop-api.git", ""),
            bash("git push -u origin ssh-error-fix", tracked("ssh-error-fix")),
        ],
        [
            ("user", "Now push the same branch upstream, and to the demo mirror."),
            bash(
                "git remote -v",
                "origin\thttps://github.com/me/shop-api.git (fetch)\n"
                "origin\thttps://github.com/me/shop-api.git (push)\n"
                "upstream\thttps://github.com/acme/shop-api.git (fetch)\n"
                "upstream\thttps://github.com/acme/shop-api.git (push)",
            ),
            bash("git push -u upstream ssh-error-fix", tracked("ssh-error-fix", "upstream")),
            # another project's repository, and a folder of this machine: the push above stays
            bash(
                "git remote add demo git@github.com:me/demo-site.git && "
                "git push -u demo ssh-error-fix",
                tracked("ssh-error-fix", "demo"),
            ),
            bash("git remote set-url upstream /srv/git/shop-api.git", ""),
            bash("git push -u upstream main", tracked("main", "upstream")),
        ],
    ]
    expected = [
        "The work is pushed to branch `ssh-error-fix` of `https://github.com/me/shop-api.git`",
        "The work is pushed to branch `ssh-error-fix` of `https://github.com/acme/shop-api.git`",
    ]
    for n, (steps, want) in enumerate(zip(sessions, expected), 1):
        log = _claude_log(tmp_path / f"remote-{n}.jsonl", steps)
        log.write_text(
            log.read_text()
            .replace("ses-coding-1", f"ses-remote-{n}")
            .replace("2026-03-02T", f"2026-03-{n + 10:02d}T")
        )
        import_files(memory_repo, [log], fmt="claude-code")
        with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
            assert not ex.extract_pending().failed
        assert _live(memory_repo, CTX, "Current State") == [want]


def test_a_package_added_to_the_manifest_is_a_dependency_of_the_project(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`go get`, `npm install X`, `bun add`, `uv add`, ... add to the project's manifest:
    one entry a package with the command that added it, the same whichever session added
    it again. `pip install` changes the environment, not the project; a failed install,
    one from a requirements file and one whose output the log did not keep add nothing."""
    steps: list[tuple[str, object]] = [
        ("user", "Make the list command fit the terminal's width."),
        (
            "tool",
            (
                "Bash",
                {"command": "go get golang.org/x/term@v0.40.0"},
                "go: downloading golang.org/x/term v0.40.0\ngo: added golang.org/x/term v0.40.0",
                False,
            ),
        ),
        (
            "tool",
            ("Bash", {"command": "pip install seaborn"}, "Successfully installed seaborn", False),
        ),
        ("tool", ("Bash", {"command": "npm i lodash"}, "npm ERR! 404 Not Found - lodashh", True)),
        ("tool", ("Bash", {"command": "uv add -r requirements.txt"}, "Resolved 3 packages", False)),
        ("tool", ("Bash", {"command": "bun add commander"}, "", False)),
    ]
    first = _claude_log(tmp_path / "deps-1.jsonl", steps)
    second = tmp_path / "deps-2.jsonl"
    _claude_log(second, steps)
    second.write_text(
        second.read_text()
        .replace("ses-coding-1", "ses-coding-2")
        .replace("2026-03-02T", "2026-03-03T")
    )
    for log in (first, second):
        import_files(memory_repo, [log], fmt="claude-code")
        with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
            assert not ex.extract_pending().failed
    deps = [c for c in _live(memory_repo, CTX, "Changes") if "dependenc" in c]
    assert deps == [
        "Added the dependency `golang.org/x/term@v0.40.0` with `go get golang.org/x/term@v0.40.0`"
    ]


def _dependency_session(tmp_path: Path, n: int, steps: list[tuple[str, object]]) -> Path:
    log = _claude_log(tmp_path / f"deps-{n}.jsonl", steps)
    log.write_text(
        log.read_text()
        .replace("ses-coding-1", f"ses-deps-{n}")
        .replace("2026-03-02T", f"2026-03-{n + 10:02d}T")
    )
    return log


def test_a_package_taken_out_of_the_manifest_is_no_dependency_any_more(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`npm uninstall`, `cargo remove`, `go get X@none`, ... take a package out: the later
    entry of the package wins, a removal after an addition and an addition after a
    removal, in one session or across two. A removal that failed, named a package the
    manifest lacks, printed nothing or names what no package manager takes as a package
    removes nothing; `go get X@none` adds nothing."""

    def bash(command: str, result: str, error: bool = False) -> tuple[str, object]:
        return ("tool", ("Bash", {"command": command}, result, error))

    sessions = [
        [
            ("user", "Add the libraries for the CLI."),
            bash("npm install lodash", "added 1 package, and audited 201 packages in 2s"),
            bash("cargo add serde", "    Adding serde v1.0.200 to dependencies"),
            bash("go get golang.org/x/term@v0.40.0", "go: added golang.org/x/term v0.40.0"),
            bash("bun add commander", "installed commander@12.1.0\n\n 1 package installed"),
            bash("bun add -d bun-types", "installed bun-types@1.2.11\n\n 1 package installed"),
            bash("uv add httpx", "Resolved 12 packages in 3ms\nInstalled 1 package"),
            bash("uv add 'fastapi[standard]>=0.110,<1'", "Resolved 30 packages in 9ms"),
        ],
        [
            ("user", "We do not need lodash, serde or x/term any more; drop them."),
            bash("npm uninstall lodash", "removed 1 package, and audited 200 packages in 1s"),
            bash("cargo remove serde", "    Removing serde from dependencies"),
            bash("go get golang.org/x/term@none", "go: removed golang.org/x/term v0.40.0"),
            # added and removed in one session: the removal is the later
            bash("pnpm add dayjs", "Packages: +1\n+\ndependencies:\n+ dayjs 1.11.10"),
            bash("pnpm remove dayjs", "Packages: -1\n-\ndependencies:\n- dayjs 1.11.10"),
            # no removal: a failure, a package the manifest lacks, a silent result, a chain
            bash(
                "bun remove commander",
                'error: package "commander" not found in package.json',
                True,
            ),
            bash(
                "uv remove httpx",
                "error: The dependency `httpx` could not be found in `project.dependencies`",
            ),
            bash("npm uninstall left-pad", ""),
            # an operand no package manager takes (a mangled byte captured as U+FFFD)
            bash("npm uninstall lodash \ufffd", "removed 1 package"),
            bash("yarn remove chalk && yarn build", "success Uninstalled packages."),
        ],
        [
            ("user", "Bring lodash back, the date helpers need it."),
            bash("npm install lodash", "added 1 package, and audited 201 packages in 2s"),
        ],
    ]
    for n, steps in enumerate(sessions, 1):
        import_files(memory_repo, [_dependency_session(tmp_path, n, steps)], fmt="claude-code")
        with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
            assert not ex.extract_pending().failed
    text = (memory_repo.root / CTX).read_text()
    assert "Added the dependency `lodash`" in text and "Added the dependency `serde`" in text
    deps = sorted(c for c in _live(memory_repo, CTX, "Changes") if "dependenc" in c)
    assert deps == [
        "Added the dependency `bun-types` with `bun add -d bun-types`",
        "Added the dependency `commander` with `bun add commander`",
        "Added the dependency `fastapi[standard]>=0.110,<1` with "
        "`uv add 'fastapi[standard]>=0.110,<1'`",
        "Added the dependency `httpx` with `uv add httpx`",
        "Added the dependency `lodash` with `npm install lodash`",
        "Removed the dependency `dayjs` with `pnpm remove dayjs`",
        "Removed the dependency `golang.org/x/term` with `go get golang.org/x/term@none`",
        "Removed the dependency `serde` with `cargo remove serde`",
    ], deps


def test_code_share_counts_calls_and_identifiers_not_a_long_token() -> None:
    """`obj.method(` is code wherever it starts a word; a pasted hex dump or a run of one
    letter is one word of no code. (Before the call pattern was anchored at a word's
    start it backtracked over a long token at each of its positions: 40 KB of hex took
    99 s to extract; `python bench/run.py hangs` times it.)"""
    from autopoiesis.knowledge.extractors.prose import code_share, prose_of

    assert code_share("call obj.method( now") == 1 / 3
    assert code_share("set max_retry_count here") == 1 / 3
    assert code_share("a" * 5000) == 0 and code_share("0f3a" * 2500) == 0
    assert prose_of("Here is the dump: " + "ab" * 5000) == "Here is the dump: " + "ab" * 5000


def test_a_command_the_machine_could_not_run_is_no_error_an_edit_fixed() -> None:
    """DocGen's session: `python` was no command on that machine (Ubuntu's "Command
    'python' not found"), the agent edited a module, and the same command ran once the
    virtualenv was active: the edit fixed no error of the project's, so nothing is filed
    (it was "fixed by editing `src/models/__init__.py`")."""
    fixes = _fixes_of(
        "Implement the project create command in the docgen project.",
        [
            (
                "python -m src.cli_main --help",
                "dorgham@DESKTOP-QIOT9AT:/mnt/d/Work/DocGen$ python -m src.cli_main --help\n"
                "Command 'python' not found, did you mean:\n"
                "  command 'python3' from deb python3\n",
            ),
            ("src/models/__init__.py", "The file src/models/__init__.py has been updated."),
            ("python -m src.cli_main --help", "Usage: docgen [OPTIONS] COMMAND [ARGS]..."),
        ],
        edit=1,
    )
    assert fixes == [], fixes


def test_a_flag_of_another_program_in_the_pipeline_is_no_fix() -> None:
    """specstory-cli's session: `sed -n ... | cat -A` failed in `cat` (macOS has no -A),
    then `sed -n ... | od -c` worked: `-c` is od's, not a flag added to `sed`, so nothing
    was fixed by adding it (it was "fixed by adding `-c`")."""
    fixes = _fixes_of(
        "Show the raw characters of the sync stats in the specstory-cli project.",
        [
            (
                "sed -n '1907,1910p' main.go | cat -A",
                "Exit code 1\ncat: illegal option -- A\nusage: cat [-belnstuv] [file ...]",
            ),
            (
                "sed -n '1907,1910p' main.go | od -c | head -20",
                "0000000   \\t  \\t  \\t   /   /       D   i   s   p   l   a   y",
            ),
        ],
    )
    assert fixes == [], fixes


def test_a_shell_prompt_copied_with_an_error_is_not_part_of_it() -> None:
    """A bash prompt (`user@host:folder$`) copied into a result after the error line ended
    up in the entry: "`ModuleNotFoundError: No module named 'src'
    dorgham@DESKTOP-QIOT9AT:/mnt/d/Work/AI/Projects/DocGen/src$`"."""
    fixes = _fixes_of(
        "Fix the import of the cli in the docgen project.",
        [
            (
                "python3 -c \"import cli.main; print('ok')\"",
                "ModuleNotFoundError: No module named 'src' (venv) "
                "dorgham@DESKTOP-QIOT9AT:/mnt/d/Work/AI/Projects/DocGen/src$",
            ),
            ("src/cli/main.py", "The file src/cli/main.py has been updated."),
            ("python3 -c \"import cli.main; print('ok')\"", "ok"),
        ],
        edit=1,
    )
    assert fixes == [
        "`ModuleNotFoundError: No module named 'src'` from "
        "`python3 -c \"import cli.main; print('ok')\"` — fixed by editing `src/cli/main.py`; "
        "then it ran"
    ], fixes


def test_a_pasted_terminal_session_or_a_go_ahead_is_no_request_a_change_served(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """lmstrix's user pasted a terminal ("Othello:_keep_this adam$ lmstrix test --all" and
    its output) and agente-bsc-rag's answered "Nao tem problema, a pasta nao é publica" (no
    problem, the folder is not public): the files the agent then changed were filed "for:"
    the prompt line and "for:" the go-ahead, which say nothing of why. A message that opens
    with a shell's prompt is a pasted terminal, nobody's words; "no problem" in English or
    Portuguese is a confirmation, as "yes" and "sim" are."""
    edit = ("Edit", {"file_path": "src/cli/main.py", "old_string": "a", "new_string": "b"})
    steps: list[tuple[str, object]] = [
        ("user", "Make `lmstrix test` accept --all in the shop-api project"),
        ("tool", (*edit, "The file src/cli/main.py has been updated.", False)),
        (
            "user",
            "Othello:_keep_this adam$ lmstrix test --all\nError: You must specify a model ID"
            "\nUsage: lmstrix test -\n\nFor detailed information on this command, run:\n"
            "  lmstrix test - --help\nOthello:_keep_this adam$",
        ),
        ("tool", (*edit, "The file src/cli/main.py has been updated.", False)),
        ("user", "Nao tem problema, a pasta nao é publica e nunca vai ser"),
        (
            "tool",
            (
                "Edit",
                {"file_path": ".gitignore", "old_string": "#.env", "new_string": ".env"},
                "The file .gitignore has been updated.",
                False,
            ),
        ),
        ("user", "No problem, the folder is private and always will be"),
        (
            "tool",
            (
                "Edit",
                {"file_path": "README.md", "old_string": "a", "new_string": "b"},
                "The file README.md has been updated.",
                False,
            ),
        ),
    ]
    report = import_files(memory_repo, [_claude_log(tmp_path / "s.jsonl", steps)])
    assert not report.refused, report.refused
    with KnowledgeExtractor(memory_repo, use_llm=False) as ex:
        assert not ex.extract_pending().failed
    assert _live(memory_repo, CTX, "Changes") == [
        "Changed `src/cli/main.py` — for: Make `lmstrix test` accept --all in the shop-api project"
    ]
    everything = "\n".join(p.read_text() for p in (memory_repo.root / "knowledge").rglob("*.md"))
    assert "Othello" not in everything and "Nao tem problema" not in everything


def test_an_opening_message_sent_unfinished_is_said_as_its_next_sending() -> None:
    """aider's log of zen-mcp-server: the user sent "请你分析一下我这列的处理，我想知道我"
    (cut before what it asks), then the whole message; the journal's line was the cut
    one. A first message a later one repeats and goes on from was sent unfinished: the
    line says the whole one."""
    cut = "Please analyse how this column is handled, I want to know whether"
    whole = f"{cut} the gemini token count of images and PDFs is right"
    assert _journal_of(("user", cut), ("user", whole), ("agent", "Let me look."), title="") == [
        f"{whole} (3 turns)"
    ]


def test_a_title_that_opens_with_session_is_no_session_id() -> None:
    """minsky's "Session Start Error For Task 008", whose one message is a pasted terminal
    (no request of its own): the title says the session, as for any other; only the title
    a session without one gets ("Session ses_1a2b") says nothing."""
    terminal = "❯ minsky session start --task 008\nError starting session: Session not found."
    assert _journal_of(
        ("user", terminal),
        ("agent", "Let me check the rule."),
        title="Session Start Error For Task 008",
        topic="Session Start Error for Task 008",
    ) == ["Session Start Error for Task 008 (2 turns)"]
    assert _journal_of(("user", terminal), ("agent", "Let me check."), title="Session s1") == []


def test_the_journal_counts_a_session_in_words_that_agree() -> None:
    """'(2 turns, 1 tool calls)' was the line of a session with one call that did nothing
    it could report."""
    looked = ("grep_search", "cart total", "no matches")
    assert _journal_of_calls([looked]) == [
        "Fix the empty cart total in the shop (2 turns, 1 tool call)"
    ]
    assert _journal_of_calls([looked, looked]) == [
        "Fix the empty cart total in the shop (2 turns, 2 tool calls)"
    ]


def test_a_message_of_a_megabyte_is_read_by_its_head_and_tail() -> None:
    """A 1 MB message of 500,000 short lines: every extractor read it line by line (each
    line tested as prose, each "sentence" against every cue), and its session's end waited
    20 s. The extractors read its first 48,000 and last 16,000 characters, where a
    person's words are around what they paste; a short message is read whole."""
    from autopoiesis.knowledge.extractors import prose

    said_first = "We decided to use Postgres for the billing service."
    said_last = "Never push straight to main in this repo."
    text = said_first + "\n" + "x\n" * 500_000 + "middle words nobody reads\n" + "y\n" * 20_000
    text += said_last + "\n"
    kept = prose.readable_part(text)
    assert len(kept) <= prose.READ_HEAD_CHARS + prose.READ_TAIL_CHARS + 1
    assert kept.startswith(said_first) and kept.rstrip().endswith(said_last)
    assert "middle words" not in kept and "\nx\n" in kept  # cut at lines' ends
    read = prose.prose_of(text)
    assert said_first in read and said_last in read
    short = "a line\n" * 100
    assert prose.readable_part(short) == short
