"""Text helpers (autopoiesis.core.text): one-line flattening, token counts, content words."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autopoiesis.core import text


def test_one_line_flattens_every_line_break_and_control() -> None:
    assert text.one_line("a\r\nb\rc\x00d\te \u2192 f") == "a b c d e -> f"
    assert len(text.one_line("x" * 500, 20)) == 20


def test_token_counts_and_content_words() -> None:
    assert text.count_tokens("") == 0
    assert text.count_tokens("Hello world, 12345!") == 6  # Hello, world, ",", 123, 45, "!"
    assert text.content_words("The deploys were deployed to the topics") == {
        "deploy",
        "deployed",
        "topic",
    }
    assert text.slugify("Let's move the memory to Markdown") == "lets-move-the-memory-to-markdown"


def _one_line_whole(value: str, limit: int) -> str:
    """one_line as it was written first: the whole text collapsed, then cut."""
    flat = " ".join(text._CONTROL.sub(" ", value).split()).replace(" \u2192 ", " -> ")
    return flat[: limit - 1].rstrip() + "\u2026" if len(flat) > limit else flat


@given(
    st.text(alphabet=st.sampled_from("ab \n\t\r\u2192\x00\x85-"), max_size=1500),
    st.integers(min_value=2, max_value=400),
)
@settings(max_examples=150, deadline=None)
def test_one_line_of_a_long_text_reads_only_its_head_and_says_the_same(
    value: str, limit: int
) -> None:
    assert text.one_line(value, limit) == _one_line_whole(value, limit)
    long = value * 5
    assert text.one_line(long, limit) == _one_line_whole(long, limit)


def test_sentences_typed_in_lower_case_are_split_when_asked() -> None:
    from autopoiesis.core.text import split_sentences

    text = "no, only create the task. next time, ask first! e.g. this stays. wait... no. ok then"
    assert split_sentences(text) == [text]
    assert split_sentences(text, lowercase_starts=True) == [
        "no, only create the task.",
        "next time, ask first!",
        "e.g. this stays.",
        "wait... no.",
        "ok then",
    ]
    assert split_sentences("see vs. that. The end", lowercase_starts=True) == [
        "see vs. that.",
        "The end",
    ]


def test_a_statement_typed_before_a_question_with_a_comma_is_a_sentence_of_its_own() -> None:
    """A developer types a rule and then asks ("We shouldn't have tests that rely on a
    session, what is this test trying to test?"): the rule is said. A question that asks
    twice, a lead of two words ("So, what now?") and a statement that holds a comma are
    left whole, and so is everything when lower-case starts are not asked for."""
    from autopoiesis.core.text import split_sentences

    spliced = "We shouldn't have tests that rely on a session, what is this test trying to test?"
    assert split_sentences(spliced, lowercase_starts=True) == [
        "We shouldn't have tests that rely on a session",
        "what is this test trying to test?",
    ]
    assert split_sentences(spliced) == [spliced]
    for whole in (
        "How does it work, is it cached?",
        "So, what now?",
        "Use bun, not node, ok?",
        "Thanks a lot, great work!",
    ):
        assert split_sentences(whole, lowercase_starts=True) == [whole]


def test_many_stops_that_end_no_sentence_are_read_once() -> None:
    """Each stop looks at the word before it only: a text of 20,000 abbreviations (a hostile
    message) is one sentence, read in one pass (it took minutes when every stop re-read the
    sentence so far)."""
    from autopoiesis.core.text import split_sentences

    text = "e.g. a " * 20_000
    assert split_sentences(text, lowercase_starts=True) == [text.strip()]
    # a statement of 20,000 words before a question is found in one pass too
    long = "a " * 20_000 + "b, what now?"
    assert split_sentences(long, lowercase_starts=True) == [
        long[: -len(", what now?")],
        "what now?",
    ]


def test_elements_are_taken_out_whole_and_one_left_open_stays() -> None:
    from autopoiesis.core.text import without_elements

    names = ("system-reminder", "code")
    text = "a<system-reminder>b</system-reminder>c<CODE x=1>d</code>e<code>left open"
    assert without_elements(text, names) == "ace<code>left open"
    assert without_elements("no tags here", names) == "no tags here"


def test_elements_left_open_are_taken_out_in_linear_time() -> None:
    """A reminder left open made the pattern that took reminders out of a Claude Code log
    scan to the text's end from each opening (144 KB: 4 s; a log is anyone's text). Eight
    times the openings take about eight times the CPU time now; quadratic would be
    sixty-four times."""
    import time

    from autopoiesis.core.text import without_elements

    def cpu(n: int) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            without_elements("<system-reminder>x" * n + "</code>", ("system-reminder", "code"))
            best = min(best, time.process_time() - started)
        return best

    small, large = cpu(4_000), cpu(32_000)
    assert large < 30 * max(small, 0.0005), f"4,000: {small:.4f} s, 32,000: {large:.4f} s"


@pytest.mark.parametrize(
    ("message", "harness", "injected"),
    [
        # a compacted session's summary: the harness's, and kept (all there may be of before)
        (
            "This session is being continued from a previous conversation that ran out of "
            "context. The conversation is summarized below:\nThe user wants a retry.",
            True,
            False,
        ),
        ("\n  <environment_context>\n  <cwd>/src/shop</cwd>\n</environment_context>", True, True),
        ("# AGENTS.md instructions for /src/shop\n\n<INSTRUCTIONS>\nUse pnpm.", True, True),
        # behind Claude Code's bookkeeping, as a Markdown export keeps it
        (
            "<system-reminder>Be brief.</system-reminder>\nThis session is being continued "
            "from a previous conversation that ran out of context.",
            True,
            False,
        ),
        (
            "Why does this session is being continued from a previous conversation show?",
            False,
            False,
        ),
        ("Keep the <environment_context> block out of the logs.", False, False),
        ("", False, False),
    ],
)
def test_a_message_the_harness_sent_in_the_users_role(
    message: str, harness: bool, injected: bool
) -> None:
    """What a harness sends in the user's role is nobody's words (said_by_the_harness);
    only the context it injects, a copy of what is elsewhere, may an importer leave out."""
    assert text.said_by_the_harness(message) is harness
    assert text.injected_context(message) is injected
