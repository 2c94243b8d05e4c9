"""Knowledge files a person edits by hand while autopoiesis keeps writing them: what the
writer, the hooks and the pruner do with a hand edit they cannot take as it is. Nothing a
person wrote is lost, cut or committed broken, and each refusal says what to do."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.errors import KnowledgeFileError
from autopoiesis.formats import knowledge as kf
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
from autopoiesis.knowledge.writer import KnowledgeWriter

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def lesson(text: str, minutes: int = 0) -> KnowledgeChange:
    when = T0.replace(minute=minutes)
    prov = Provenance("raw/conversations/2026/03/02/0900-ses_h-a.md", when, "test@1", "ses_h")
    return KnowledgeChange(MEMORY_FILE, "append", "Lessons Learned", text, prov, dated=True)


def test_a_nul_byte_typed_into_memory_is_neither_written_over_nor_committed(
    memory_repo: MemoryRepo, commit_all
) -> None:
    """A NUL makes MEMORY.md binary to git (no diff, no merge by entry) and to the index
    (left out of search whole): the writer does not add to it and the hook refuses it,
    each naming the line, and the person's text stays as they wrote it."""
    mem = memory_repo.root / MEMORY_FILE
    edited = mem.read_bytes() + b"- my note \x00 pasted from a terminal\n"
    mem.write_bytes(edited)
    line = edited.decode().count("\n")

    with pytest.raises(KnowledgeFileError, match=f"NUL byte \\(line {line}\\)"):
        KnowledgeWriter(memory_repo).apply([lesson("Reset the staging database first")])
    assert mem.read_bytes() == edited

    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode != 0
    assert f"{MEMORY_FILE}: line {line} holds a NUL byte" in proc.stderr


def test_a_memory_saved_with_a_byte_order_mark_keeps_its_one_frontmatter(
    memory_repo: MemoryRepo,
) -> None:
    """Notepad saves UTF-8 with a BOM: the writer found no frontmatter behind it, put a
    second one above it and left the person's (`type: memory`) in the body as text."""
    mem = memory_repo.root / MEMORY_FILE
    mem.write_bytes(b"\xef\xbb\xbf" + mem.read_bytes() + b"- my hand note, saved in Notepad\n")

    KnowledgeWriter(memory_repo).apply([lesson("Reset the staging database before a load test")])
    text = mem.read_text(encoding="utf-8")
    assert text.startswith("\ufeff---\ntype: memory\n")
    assert text.count("---\n") == 2 and text.count("type: memory") == 1
    doc = kf.parse(text)
    assert doc.meta()["entry_count"] == 1 and doc.meta()["line_count"] == text.count("\n")
    assert "- my hand note, saved in Notepad" in text
    assert [e.text for _, e in doc.entries()] == ["Reset the staging database before a load test"]


def test_a_memory_over_its_limit_in_hand_written_lines_is_not_sent_to_prune(
    memory_repo: MemoryRepo, cli, commit_all
) -> None:
    """500 hand-written lines: prune moves entries only, so "Prune it first" sent the
    person round in a circle, and prune's own refusal blamed the free disk space."""
    mem = memory_repo.root / MEMORY_FILE
    KnowledgeWriter(memory_repo).apply([lesson("Reset the staging database before a load test")])
    commit_all(memory_repo.root, "an entry")
    mem.write_text(mem.read_text() + "".join(f"- zebra note {i}\n" for i in range(500)))

    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode != 0
    assert "which `autopoiesis prune` never moves" in proc.stderr
    assert "Prune it first" not in proc.stderr

    pruned = cli("prune", repo=memory_repo)
    assert pruned.returncode == 1 and "Traceback" not in pruned.stderr
    assert "free disk" not in pruned.stderr
    assert "which `autopoiesis prune` never moves" in pruned.stderr
    text = mem.read_text()  # every hand line is still there
    assert all(f"- zebra note {i}\n" in text for i in range(500))


def test_a_frontmatter_broken_by_hand_keeps_the_extraction_pending_until_it_is_fixed(
    memory_repo: MemoryRepo, cli, git, caplog
) -> None:
    """A typo in MEMORY.md's YAML: the writer added to the file all the same, the hook
    refused the commit, and once the person fixed the typo the next run found the
    extraction done (its record committed) while its entries stayed uncommitted in the
    person's file. Now the writer does not add to it: the extraction stays pending, and
    after the fix it writes and commits everything."""
    mem = memory_repo.root / MEMORY_FILE
    good = mem.read_text(encoding="utf-8")
    broken = good.replace("type: memory", "type: [memory", 1)
    mem.write_text(broken, encoding="utf-8")
    events = [
        {"event": "session_start", "session_id": "fm1", "timestamp": "2026-03-02T09:00:00Z"},
        {
            "event": "message",
            "session_id": "fm1",
            "role": "user",
            "content": "We decided to use PostgreSQL for the event store because we need "
            "transactions.",
            "timestamp": "2026-03-02T09:01:00Z",
        },
        {"event": "session_end", "session_id": "fm1", "timestamp": "2026-03-02T09:02:00Z"},
    ]
    stream = "".join(json.dumps(e) + "\n" for e in events)
    captured = cli("capture", repo=memory_repo, input=stream)
    assert captured.returncode == 0, captured.stderr
    assert "line 3: the frontmatter is not valid YAML" in caplog.text
    assert "It stays pending (`autopoiesis extract --pending` retries it)." in caplog.text
    assert mem.read_text(encoding="utf-8") == broken  # nothing added to the person's file
    assert "PostgreSQL" not in git(memory_repo.root, "show", f"HEAD:{MEMORY_FILE}").stdout

    mem.write_text(good, encoding="utf-8")  # the person fixes the typo
    done = cli("extract", "--pending", repo=memory_repo)
    assert done.returncode == 0, done.stderr
    assert "PostgreSQL" in git(memory_repo.root, "show", f"HEAD:{MEMORY_FILE}").stdout
    assert git(memory_repo.root, "status", "--porcelain", "--", "knowledge").stdout.strip() == ""


def test_an_editors_working_files_beside_a_note_are_neither_committed_nor_in_the_way(
    memory_repo: MemoryRepo, cli, git
) -> None:
    """MEMORY.md open in Emacs (its lock, `.#MEMORY.md`, is a symbolic link) made every
    `autopoiesis commit` fail on the hook's refusal of a link, the person's own edit with
    it; and Vim's binary swap file, a backup `MEMORY.md~` and git mergetool's `.orig` were
    committed and pushed to every clone as if they were knowledge."""
    folder = (memory_repo.root / MEMORY_FILE).parent
    (folder / ".#MEMORY.md").symlink_to("ed@laptop.4242:1700000000")
    (folder / ".MEMORY.md.swp").write_bytes(b"b0VIM 9.0\x00\x00swap\x00")
    (folder / "MEMORY.md~").write_text("the backup\n", encoding="utf-8")
    (folder / "MEMORY.md.orig").write_text("before the merge\n", encoding="utf-8")
    (folder / "#MEMORY.md#").write_text("autosave\n", encoding="utf-8")
    mem = memory_repo.root / MEMORY_FILE
    mem.write_text(mem.read_text(encoding="utf-8") + "- my own note\n", encoding="utf-8")

    done = cli("commit", repo=memory_repo)
    assert done.returncode == 0, done.stderr
    tracked = git(memory_repo.root, "ls-files", "knowledge/memory").stdout.split()
    assert tracked == [MEMORY_FILE]
    assert "- my own note" in git(memory_repo.root, "show", f"HEAD:{MEMORY_FILE}").stdout


@pytest.mark.parametrize(
    ("encoding", "said"),
    [
        ("utf-16", f'{MEMORY_FILE} is UTF-16 text (saved as "Unicode")'),
        ("latin-1", f"{MEMORY_FILE}: line LINE, column 9 holds the byte 0xE9, which is not UTF-8"),
    ],
)
def test_a_memory_saved_in_another_encoding_is_refused_saying_where_and_how_to_fix_it(
    memory_repo: MemoryRepo, commit_all, encoding: str, said: str
) -> None:
    """MEMORY.md saved as UTF-16 (Notepad's "Unicode") or with a Latin-1 `é`: the writer
    said "not UTF-8 text (byte 0)", the hook "not UTF-8 text" with no line and nothing to
    do, and compile put the UTF-16 file into every prompt as NULs between its letters."""
    from autopoiesis.compiler.compile import ContextCompiler

    mem = memory_repo.root / MEMORY_FILE
    said = said.replace("LINE", str(mem.read_text(encoding="utf-8").count("\n") + 1))
    edited = (mem.read_text(encoding="utf-8") + "- my café note\n").encode(encoding)
    mem.write_bytes(edited)

    with pytest.raises(KnowledgeFileError) as refused:
        KnowledgeWriter(memory_repo).apply([lesson("Reset the staging database first")])
    assert str(refused.value).startswith(said) and "iconv -f" in str(refused.value)
    assert mem.read_bytes() == edited

    proc = commit_all(memory_repo.root, check=False)
    assert proc.returncode != 0
    assert said in proc.stderr and f"then `git add {MEMORY_FILE}`" in proc.stderr

    with ContextCompiler(memory_repo) as compiler:
        shown = compiler.compile("café").prompt
    assert "\x00" not in shown
    assert ("- my café note" if encoding == "utf-16" else "- my caf\ufffd note") in shown


def test_a_memory_replaced_by_a_folder_is_refused_saying_what_to_do(
    memory_repo: MemoryRepo,
) -> None:
    """A person moved notes into a folder named MEMORY.md: the writer's refusal was
    Python's "[Errno 21] Is a directory", and nothing was said of what to do."""
    mem = memory_repo.root / MEMORY_FILE
    mem.unlink()
    mem.mkdir()
    (mem / "mine.md").write_text("- my note\n", encoding="utf-8")

    with pytest.raises(KnowledgeFileError, match=r"is a folder, where a knowledge file belongs"):
        KnowledgeWriter(memory_repo).apply([lesson("Reset the staging database first")])
    assert (mem / "mine.md").read_text(encoding="utf-8") == "- my note\n"
