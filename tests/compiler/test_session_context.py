"""The compiler without the session-level slots (a harness adds its own): identity and P1 left out."""

from __future__ import annotations

from autopoiesis.compiler import ContextCompiler, ScoredItem
from autopoiesis.compiler.compile import RECALLED_IS_DATA
from autopoiesis.core.paths import MemoryRepo


def test_compile_without_session_context_leaves_identity_and_p1_out(
    memory_repo: MemoryRepo,
) -> None:
    (memory_repo.root / "knowledge/journal").mkdir(exist_ok=True)
    (memory_repo.root / "knowledge/projects/_active.md").write_text(
        "# Active Projects\n- **billing** — Move the invoices to Postgres 17\n"
    )
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


def test_a_session_file_that_is_no_session_is_a_clear_error(
    memory_repo: MemoryRepo, tmp_path, cli
) -> None:
    shadow = tmp_path / "shadow"
    shadow.write_text("root:$6$salt$hash:19000:0:99999:7:::\n", encoding="utf-8")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00junk")
    second = tmp_path / "second.jsonl"  # a good first line: the bad one is named
    second.write_text('{"role": "user", "content": "hi"}\nnot json\n', encoding="utf-8")
    typed = tmp_path / "typed.jsonl"  # content that is no text was taken as its repr
    typed.write_text('{"role": "user", "content": "hi"}\n{"role": "user", "content": {}}\n')
    for path, why in (
        (shadow, "line 1 is not JSON"),
        (binary, "not UTF-8 text"),
        (second, "line 2 is not JSON (Expecting value at column 1)"),
        (typed, "line 2: content must be text"),
    ):
        out = cli("compile", "x", "--session", str(path), "--dry-run", repo=memory_repo)
        assert out.returncode != 0 and why in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and "$6$salt" not in out.stderr


def test_half_a_surrogate_pair_in_a_session_file_is_replaced(
    memory_repo: MemoryRepo, tmp_path, cli
) -> None:
    """A JSON `\\ud83d` without its pair ended `compile --session` on a traceback when the
    context was printed; it reads as U+FFFD, as a capture reads it."""
    session = tmp_path / "session.jsonl"
    session.write_text('{"role": "user", "content": "hi \\ud83d there"}\n', encoding="utf-8")
    out = cli("compile", "hello", "--session", str(session), "--dry-run", repo=memory_repo)
    assert out.returncode == 0, out.stderr
    assert "user: hi \ufffd there" in out.stdout
