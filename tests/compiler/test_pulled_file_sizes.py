"""A memory file pulled from a collaborator is the collaborator's size: the compiler reads
no file of P0-P2 past what the index reads (index/files.MAX_FILE_BYTES), and says why it
is not in the context. Read whole, 61 MB of identity file took a compile 25 s and 1.4 GB,
at every session start. A real repo, its history, the real compiler and CLI."""

from __future__ import annotations

from datetime import UTC, datetime

from autopoiesis.compiler import ContextCompiler
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index.files import MAX_FILE_BYTES
from tests.conftest import Cli

LINE = "- the collaborator's filler line, pulled with the memory\n"


def _huge(text_head: str) -> str:
    return text_head + LINE * (MAX_FILE_BYTES // len(LINE) + 2)


def test_a_pulled_file_larger_than_the_index_reads_is_left_out_and_named(
    memory_repo: MemoryRepo, commit_all, cli: Cli
) -> None:
    user = memory_repo.root / "knowledge" / "identity" / "USER.md"
    user.write_text(_huge("# User\n\n- Pulled huge preference\n"), encoding="utf-8")
    today = datetime.now(UTC).date().isoformat()
    journal = memory_repo.root / "knowledge" / "journal" / f"{today}.md"
    journal.write_text(_huge(f"# {today}\n\n- Pulled huge journal line\n"), encoding="utf-8")
    commit_all(memory_repo, "collaborator: huge files")

    with ContextCompiler(memory_repo) as c:
        res = c.compile("what does the user prefer", budget=4096)
    assert "Pulled huge" not in res.prompt
    assert "<!-- identity:SOUL.md -->" in res.prompt  # the rest of the context is there
    reasons = {s.label: s.reason for s in res.sections if not s.included}
    assert "not read" in reasons["identity:USER.md"]
    assert "not read" in reasons[f"journal:{today}"]

    explain = cli("compile", "what does the user prefer", "--explain", repo=memory_repo)
    assert explain.returncode == 0, explain.stderr
    assert "identity:USER.md" in explain.stdout and "larger than 8 MB" in explain.stdout


def test_a_file_at_the_limit_is_still_read(memory_repo: MemoryRepo) -> None:
    user = memory_repo.root / "knowledge" / "identity" / "USER.md"
    head = "# User\n\n- Likes answers in French\n"
    body = head + "x" * (MAX_FILE_BYTES - len(head) - 1) + "\n"
    assert len(body.encode()) == MAX_FILE_BYTES
    user.write_text(body, encoding="utf-8")
    with ContextCompiler(memory_repo) as c:
        res = c.compile("what does the user prefer", budget=4096)
    assert "Likes answers in French" in res.prompt


def test_a_file_the_index_never_holds_leaves_it_fresh(
    memory_repo: MemoryRepo, git, cli: Cli
) -> None:
    """A 9 MB note (or a name with a control character): `index status` said "fresh no
    (the next search catches up; 1 file differs)" for ever, since no search can take in
    a file the index never holds. It is skipped with its warning, and the index is fresh."""
    (memory_repo.root / "knowledge/reference/huge.md").write_text(_huge("# Huge\n"), "utf-8")
    (memory_repo.root / "knowledge/reference/odd\x1bname.md").write_text("# Odd\n", "utf-8")
    git(memory_repo, "add", "-A")  # a collaborator's commit, made without the hooks
    git(memory_repo, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "a huge note")
    rebuilt = cli("index", "rebuild", repo=memory_repo)
    assert rebuilt.returncode == 0 and "larger than 8 MB; skipped" in rebuilt.stderr
    status = cli("index", "status", repo=memory_repo)
    assert "fresh      yes" in status.stdout, status.stdout
