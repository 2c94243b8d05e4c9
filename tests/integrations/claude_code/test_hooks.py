"""The Claude Code hooks' own rules: the context fits Claude Code's inline limit."""

from __future__ import annotations


def test_hook_context_fits_claude_codes_inline_limit() -> None:
    from autopoiesis.integrations.claude_code.hooks import fit_inline

    sections = ["<!-- system -->\nhead"] + [
        f"<!-- knowledge:k{i}.md -->\n" + "x" * 3000 for i in range(5)
    ]
    prompt = "\n\n".join(sections)
    text, dropped = fit_inline(prompt)
    assert len(text) <= 10_000 and dropped == 2 and text == "\n\n".join(sections[:4])
    assert fit_inline("short") == ("short", 0)
    huge, dropped = fit_inline("<!-- identity:SOUL.md -->\n" + "line\n" * 5000)
    assert (
        len(huge) <= 10_000
        and huge.endswith("cut to fit the hook's 10,000 characters]")
        and dropped == 0
    )
