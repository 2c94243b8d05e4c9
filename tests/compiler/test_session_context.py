"""The compiler without the session-level slots (a harness adds its own): identity and P1 left out."""

from __future__ import annotations

from autopoiesis.compiler import ContextCompiler, ScoredItem
from autopoiesis.compiler.compile import RECALLED_IS_DATA
from autopoiesis.core.paths import MemoryRepo


def test_compile_without_session_context_leaves_identity_and_p1_out(
    memory_repo: MemoryRepo,
) -> None:
    (memory_repo.root / "knowledge/journal").mkdir(exist_ok=True)
    knowledge = [
        ScoredItem(
            "knowledge/reference/pg.md", 1.0, "[knowledge/reference/pg.md]\nPostgres 17 on pg-2"
        )
    ]
    with ContextCompiler(memory_repo, system_prompt="From memory:") as compiler:
        full = compiler.compile("postgres host?", available_knowledge=knowledge)
        lean = compiler.compile(
            "postgres host?", available_knowledge=knowledge, session_context=False
        )
    assert (
        "<!-- identity:SOUL.md -->" in full.prompt
        and "<!-- memory -->" in full.prompt
        and "<!-- projects -->" in full.prompt
    )
    # the harness's system prompt, and what the recalled sections are (compiler.compile)
    assert lean.prompt.splitlines()[:2] == ["<!-- system -->", f"From memory: {RECALLED_IS_DATA}"]
    for label in ("identity:", "<!-- memory -->", "<!-- journal:", "<!-- projects -->"):
        assert label not in lean.prompt
    assert "Postgres 17 on pg-2" in lean.prompt and lean.total_tokens < full.total_tokens
    assert any(s.label == "session" and not s.included for s in lean.sections)
