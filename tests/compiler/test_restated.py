"""A later statement of the same subject wins over the earlier one in the compiled
context: a real memory repo, real transcripts, the real index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from autopoiesis.compiler import ContextCompiler
from autopoiesis.compiler.restated import Statement, later_statements
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from autopoiesis.index import SearchIndex
from autopoiesis.testing.samples import closed_transcript

NOW = datetime(2026, 3, 20, 12, tzinfo=UTC)
FILLER = "We went through the upload form, the thumbnails and the gallery layout again. " * 6


def _session(repo: MemoryRepo, n: int, started: datetime, lines: list[str]) -> None:
    turns = [
        (
            (started + timedelta(minutes=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "user" if k % 2 == 0 else "agent",
            None,
            text,
        )
        for k, text in enumerate(lines)
    ]
    rel = tf.transcript_relpath(f"ses_l{n}", started, f"gallery-{n}")
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    ended = (started + timedelta(minutes=len(turns))).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(
        closed_transcript(f"ses_l{n}", f"Gallery {n}", turns, started=turns[0][0], ended=ended),
        encoding="utf-8",
    )


def test_the_later_limit_is_in_the_context_and_the_earlier_is_marked(
    memory_repo: MemoryRepo, commit_all
) -> None:
    monday = datetime(2026, 3, 2, 9, tzinfo=UTC)
    _session(
        memory_repo,
        1,
        monday,
        [
            "Limit the uploads to 1 image a day per user, the image limit keeps storage small.",
            "Done: the upload limit is 1 image a day per user. " + FILLER,
        ],
    )
    for n in range(2, 8):  # other sessions about the gallery, none about the limit
        _session(memory_repo, n, monday + timedelta(days=n), ["How is the gallery?", FILLER])
    _session(
        memory_repo,
        9,
        monday + timedelta(days=10),
        ["Change the daily image limit to 3 now.", "Updated. " + FILLER],
    )
    commit_all(memory_repo, "conversation: sessions")
    with SearchIndex(memory_repo) as idx:
        idx.rebuild_full()
    with ContextCompiler(memory_repo) as c:
        res = c.compile("What is the image limit per day?", now=NOW, budget=1200)
    assert "limit to 3" in res.prompt  # the later value is offered ...
    # ... and the earlier statement, when it is in, says that it was restated
    earlier = [line for line in res.prompt.splitlines() if "1 image a day" in line]
    assert all(line.startswith("[earlier; restated 2026-03-12") for line in earlier)


def test_template_turns_about_different_things_are_not_one_subject() -> None:
    said = [
        Statement("Omar asked whether the search index can go to the new cluster.", 100.0),
        Statement("Omar asked whether the on-call rota can go to the new cluster.", 9000.0),
        Statement("Limit the uploads to 1 image a day.", 10.0),
        Statement("Make it 3 images a day now, the image limit was too low.", 20000.0),
    ]
    out = later_statements("Who asked about the new cluster? What is the image limit?", said)
    assert {i: j for i, (j, _) in out.items()} == {
        2: 3
    }  # no change cue in the second Omar turn: not a restatement


def test_a_later_statement_of_another_project_restates_nothing() -> None:
    """ "Make it 3 images a day now" said in another codebase changes nothing this one said."""
    said = [
        Statement("Limit the uploads to 1 image a day.", 10.0, "gallery"),
        Statement("Make it 3 images a day now, the image limit was too low.", 20000.0, "shop"),
        Statement("Limit the uploads to 2 images a day.", 30.0, "shop"),
    ]
    out = later_statements("What is the image limit per day?", said)
    assert {i: j for i, (j, _) in out.items()} == {2: 1}
    # a session that named no project may restate any
    said[1] = Statement(said[1].text, said[1].when, None)
    out = later_statements("What is the image limit per day?", said)
    assert {i: j for i, (j, _) in out.items()} == {0: 1, 2: 1}


def test_what_a_tool_printed_or_a_turn_heading_states_nothing() -> None:
    """Snippets as search gives them from coding sessions (one line each): a tool's output
    ("has been updated successfully", "String to replace not found"), fenced file lines
    and the turn headings' speaker and month matched the change cue and the message's
    words, and each pair below was marked as one subject restated."""
    query = "What is the analytics event for the watch command called, the agent said?"
    pairs = [
        (
            "agent, 25 January 2026: ```text Exit code 1 pkg/analytics/events.go:11:1: File is "
            "not properly formatted (gofmt) EventWatchActivated = 1 ``` Tool use: **Bash**…",
            "agent, 12 February 2026: ```text <tool_use_error>String to replace not found in "
            "file. String: Run: func(c *cobra.Command) { analytics.TrackEvent(analytics.Even…",
        ),
        (
            "agent, 25 January 2026: > [tool:Read] ./pkg/analytics/events.go → the watch "
            "command event and the analytics client",
            "agent, 26 January 2026: > [tool:Edit] ./pkg/analytics/events.go → The file "
            "./pkg/analytics/events.go has been updated successfully. agent, 26 January 2026: "
            "Now let me run the watch command's tests.",
        ),
    ]
    for earlier, later in pairs:
        assert later_statements(query, [Statement(earlier, 10.0), Statement(later, 9000.0)]) == {}
    # the same words said, not printed, are a restatement
    said = [
        Statement(
            "agent, 25 January 2026: The watch command's analytics event is ext_watch.", 10.0
        ),
        Statement(
            "agent, 26 January 2026: I renamed the watch command's analytics event to "
            "ext_watch_activated instead. > [tool:Edit] x.go → The file x.go has been updated",
            9000.0,
        ),
    ]
    assert {i: j for i, (j, _) in later_statements(query, said).items()} == {0: 1}


def test_a_change_of_something_else_in_the_turn_restates_nothing() -> None:
    """The later turn says it changes something, but not the subject both turns name:
    "Now let me" opens an agent's next step, and the import path it updated is not the
    image limit."""
    query = "What is the image limit per day for uploads?"
    earlier = Statement("Limit the uploads to 1 image a day.", 10.0)
    for later in (
        "Now let me look at the uploads: 1 image a day is the limit in the form.",
        "The uploads keep 1 image a day as the limit. I also updated the import paths.",
    ):
        assert later_statements(query, [earlier, Statement(later, 9000.0)]) == {}
    changed = "The uploads keep their form. Make it 3 images a day now, the limit was too low."
    assert 0 in later_statements(query, [earlier, Statement(changed, 9000.0)])
