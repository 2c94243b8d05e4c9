"""Text helpers (autopoiesis.core.text): one-line flattening, token counts, content words."""

from __future__ import annotations

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
