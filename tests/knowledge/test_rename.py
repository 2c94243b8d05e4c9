"""`autopoiesis mv OLD NEW`: the note moves and every link that found it finds it still,
in one commit."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo


def _note(repo: MemoryRepo, rel: str, text: str) -> None:
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_mv_rewrites_every_link_in_one_commit(memory_repo: MemoryRepo, cli, git) -> None:
    _note(memory_repo, "knowledge/people/ann.md", "# Ann\n\n## Role\n- Billing lead.\n")
    _note(
        memory_repo,
        "knowledge/projects/billing/context.md",
        "# billing\n- ask [[ann]], see [[ann#Role|her role]] and [[knowledge/people/ann]]\n"
        "- `[[ann]]` in code stays\n",
    )
    _note(memory_repo, "knowledge/reference/other/ann.md", "# another Ann\n")  # same name
    _note(memory_repo, "topics/billing.md", "---\ndescription: x\n---\n# t\n[[ann]] owns it\n")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "notes")
    before = git(memory_repo, "rev-list", "--count", "HEAD").stdout

    done = cli("mv", "knowledge/people/ann.md", "knowledge/people/ann-smith", repo=memory_repo)
    assert done.returncode == 0, done.stderr
    assert "4 links rewritten in 2 files" in done.stdout

    ctx = (memory_repo.root / "knowledge/projects/billing/context.md").read_text(encoding="utf-8")
    assert ctx == (
        "# billing\n- ask [[ann-smith|ann]], see [[ann-smith#Role|her role]] and "
        "[[knowledge/people/ann-smith|ann]]\n- `[[ann]]` in code stays\n"
    )
    assert "[[ann-smith|ann]] owns it" in (memory_repo.root / "topics/billing.md").read_text()
    assert not (memory_repo.root / "knowledge/people/ann.md").exists()
    assert (memory_repo.root / "knowledge/people/ann-smith.md").is_file()
    # one commit, with everything in it, and nothing left over
    assert int(git(memory_repo, "rev-list", "--count", "HEAD").stdout) == int(before) + 1
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    shown = git(memory_repo, "show", "--stat", "--format=%s", "HEAD").stdout
    assert shown.startswith("memory: move knowledge/people/ann.md to knowledge/people/ann-smith.md")
    # the other Ann is untouched, and the index finds the backlinks at the new place
    from autopoiesis.memory.facade import Memory

    _, back = Memory(memory_repo).links("knowledge/people/ann-smith.md")
    assert {x.source for x in back} == {
        "knowledge/projects/billing/context.md",
        "topics/billing.md",
    }
    assert Memory(memory_repo).broken_links() == []


def test_mv_refuses_a_transcript_and_an_existing_target(memory_repo: MemoryRepo, cli) -> None:
    _note(memory_repo, "knowledge/people/ann.md", "# Ann\n")
    _note(memory_repo, "knowledge/people/bob.md", "# Bob\n")
    out = cli("mv", "knowledge/people/ann.md", "raw/conversations/x.md", repo=memory_repo)
    assert out.returncode != 0 and "transcripts under raw/ never move" in out.stderr
    out = cli("mv", "knowledge/people/ann.md", "knowledge/people/bob.md", repo=memory_repo)
    assert out.returncode != 0 and "exists already" in out.stderr
    assert (memory_repo.root / "knowledge/people/ann.md").is_file()


def test_mv_refuses_a_new_name_that_holds_a_secret(memory_repo: MemoryRepo, cli, git) -> None:
    _note(memory_repo, "knowledge/people/ann.md", "# Ann\n")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "ann")
    token = "ghp_" + "Bq9vB2mK7pL4nR8sT1wY6zA3cD5eF0gH2jK9"
    out = cli("mv", "knowledge/people/ann.md", f"topics/ann-{token}", repo=memory_repo)
    assert out.returncode != 0
    assert "NEW (topics/ann-[redacted:github_token].md) holds what looks like a secret" in (
        out.stderr
    )
    assert token not in out.stderr
    assert (memory_repo.root / "knowledge/people/ann.md").is_file()
    assert token not in git(memory_repo, "rev-list", "--all", "--objects").stdout


def test_mv_refuses_a_note_autopoiesis_finds_by_its_path(memory_repo: MemoryRepo, cli) -> None:
    """`mv knowledge/memory/MEMORY.md knowledge/memory/CORE.md` took the core memory out of
    every compiled context, and the next extraction started an empty MEMORY.md."""
    for fixed in (
        "knowledge/memory/MEMORY.md",
        "knowledge/people/_index.md",
        "knowledge/identity/USER.md",
    ):
        before = (memory_repo.root / fixed).read_bytes()
        done = cli("mv", fixed, "knowledge/reference/moved.md", repo=memory_repo)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert f"{fixed} is read and written at that path" in done.stderr
        assert (memory_repo.root / fixed).read_bytes() == before
        assert not (memory_repo.root / "knowledge/reference/moved.md").exists()


def test_a_move_stopped_before_its_commit_is_committed_by_the_next_run(
    memory_repo: MemoryRepo, cli, git
) -> None:
    """`mv` killed after it moved the note and rewrote the links, before its commit: run
    again it says there is no such note, and the move stayed uncommitted for good. The
    move is recorded as the writer's writes are: the next prune, condense or extraction
    commits it."""
    from autopoiesis.knowledge.rename import move_note

    _note(memory_repo, "knowledge/people/ann.md", "# Ann\n\n- Billing lead.\n")
    _note(memory_repo, "knowledge/reference/billing.md", "# Billing\n\n- ask [[ann]]\n")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "notes")
    move_note(memory_repo, "knowledge/people/ann.md", "knowledge/people/ann-smith.md", commit=False)

    done = cli("prune", repo=memory_repo)
    assert done.returncode == 0, done.stderr
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    tree = git(memory_repo, "ls-tree", "-r", "--name-only", "HEAD", "knowledge").stdout.split()
    assert "knowledge/people/ann-smith.md" in tree and "knowledge/people/ann.md" not in tree
    assert (
        "[[ann-smith|ann]]"
        in git(memory_repo, "show", "HEAD:knowledge/reference/billing.md").stdout
    )


def test_mv_keeps_a_private_note_private_unless_told(memory_repo: MemoryRepo, cli, git) -> None:
    """git-crypt encrypts by path: `mv knowledge/private/pay.md knowledge/reference/pay.md`
    committed the salary in clear, and the next sync pushed it (the push check looks at
    private paths only). Now a private note leaves the private paths only with
    --make-public; moving it within them works; a locked one (ciphertext on disk) is not
    moved at all, as git-crypt would never decrypt it at its new path."""
    from autopoiesis.core.private import MAGIC

    _note(memory_repo, "knowledge/private/pay.md", "# Pay\n\n- My salary is PAPAYA-7.\n")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "notes")

    out = cli("mv", "knowledge/private/pay.md", "knowledge/reference/pay.md", repo=memory_repo)
    assert out.returncode == 1 and "--make-public" in out.stderr and "Traceback" not in out.stderr
    assert (memory_repo.root / "knowledge/private/pay.md").is_file()
    assert not (memory_repo.root / "knowledge/reference/pay.md").exists()
    assert (
        "PAPAYA" not in git(memory_repo, "log", "-p", "--all", "--", "knowledge/reference").stdout
    )

    moved = cli("mv", "knowledge/private/pay.md", "knowledge/private/salary.md", repo=memory_repo)
    assert moved.returncode == 0, moved.stderr
    public = cli(
        "mv",
        "knowledge/private/salary.md",
        "knowledge/reference/salary.md",
        "--make-public",
        repo=memory_repo,
    )
    assert public.returncode == 0, public.stderr
    assert (memory_repo.root / "knowledge/reference/salary.md").is_file()

    (memory_repo.root / "knowledge/private/locked.md").write_bytes(MAGIC + b"\x93\x11ciphertext")
    locked = cli("mv", "knowledge/private/locked.md", "knowledge/private/l2.md", repo=memory_repo)
    assert locked.returncode == 1 and "private unlock" in locked.stderr
    assert (memory_repo.root / "knowledge/private/locked.md").is_file()


def test_a_move_whose_commit_is_refused_is_undone(memory_repo: MemoryRepo, cli, git) -> None:
    """A note linking the moved one had frontmatter that is not YAML: the commit of the
    rewritten links was refused, and the move stayed done on disk, uncommitted, with the
    old path gone (`mv` again: "there is no note"). Now the move is undone: the notes are
    as they were, and the error says nothing was moved and what to fix."""
    _note(memory_repo, "knowledge/people/ann.md", "# Ann\n\n- Billing lead.\n")
    broken = "---\ntitle: [broken\n---\n# Billing\n\n- ask [[ann]]\n"
    _note(memory_repo, "knowledge/reference/billing.md", broken)
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "notes", "--no-verify")
    head = git(memory_repo, "rev-parse", "HEAD").stdout

    done = cli("mv", "knowledge/people/ann.md", "knowledge/people/ann-smith", repo=memory_repo)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "nothing was moved" in done.stderr and "knowledge/reference/billing.md" in done.stderr
    assert git(memory_repo, "rev-parse", "HEAD").stdout == head
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    assert (memory_repo.root / "knowledge/reference/billing.md").read_text() == broken
    assert not (memory_repo.root / "knowledge/people/ann-smith.md").exists()


def test_mv_in_a_rebase_changes_nothing(memory_repo: MemoryRepo, cli, git) -> None:
    """`mv` in a rebase stopped at a conflict moved the note and rewrote the links (the
    conflicted note too, markers and all) and then said "nothing was changed" when its
    commit was refused. Now it is refused before anything is written."""
    _note(memory_repo, "knowledge/people/ann.md", "# Ann\n\n- Billing lead.\n")
    _note(memory_repo, "knowledge/reference/billing.md", "# Billing\n\n- ask [[ann]]\n")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "notes")
    git(memory_repo, "checkout", "-q", "-b", "side")
    _note(memory_repo, "knowledge/reference/billing.md", "# Billing\n\n- ask [[ann]] (side)\n")
    git(memory_repo, "commit", "-qam", "side")
    git(memory_repo, "checkout", "-q", "-")
    _note(memory_repo, "knowledge/reference/billing.md", "# Billing\n\n- ask [[ann]] (main)\n")
    git(memory_repo, "commit", "-qam", "main")
    git(memory_repo, "rebase", "side", check=False)
    conflicted = (memory_repo.root / "knowledge/reference/billing.md").read_text()
    assert "<<<<<<<" in conflicted

    done = cli("mv", "knowledge/people/ann.md", "knowledge/people/ann-smith", repo=memory_repo)
    assert done.returncode == 1 and "a rebase is in progress" in done.stderr
    assert (memory_repo.root / "knowledge/reference/billing.md").read_text() == conflicted
    assert (memory_repo.root / "knowledge/people/ann.md").is_file()
    assert not (memory_repo.root / "knowledge/people/ann-smith.md").exists()


def test_mv_of_a_symbolic_link_moves_nothing(memory_repo: MemoryRepo, cli, git) -> None:
    """`mv LINK NEW`, LINK a symbolic link to a note: the link was resolved to the note it
    points at, and that note was moved and committed, the link left dangling. A link
    named (relative or absolute) is refused, and nothing moves."""
    _note(memory_repo, "knowledge/people/ann.md", "# Ann\n\n- Billing lead.\n")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "ann")
    head = git(memory_repo, "rev-parse", "HEAD").stdout
    (memory_repo.root / "knowledge/people/annie.md").symlink_to("ann.md")
    for link in ("knowledge/people/annie.md", str(memory_repo.root / "knowledge/people/annie.md")):
        done = cli("mv", link, "knowledge/people/ann-smith", repo=memory_repo)
        assert done.returncode == 1 and "is a symbolic link" in done.stderr, done.stderr
        assert (memory_repo.root / "knowledge/people/ann.md").is_file()
        assert git(memory_repo, "rev-parse", "HEAD").stdout == head


def test_an_entry_written_while_mv_starts_is_kept(
    memory_repo: MemoryRepo, git, monkeypatch
) -> None:
    """Another writer (an extraction) appended an entry to a note that links to the note
    being moved after `mv` had read the notes and before it took the writer's lock: `mv`
    wrote that note back as it had read it, links rewritten, and the entry was lost. The
    notes are read under the lock."""
    from datetime import UTC, datetime

    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.rename import move_note
    from autopoiesis.knowledge.writer import KnowledgeWriter

    _note(memory_repo, "knowledge/people/ann.md", "# Ann\n\n- Billing lead.\n")
    _note(memory_repo, "knowledge/reference/billing.md", "# Billing\n\n## Notes\n- ask [[ann]]\n")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "notes")
    take_lock = MemoryRepo.writer_lock

    def the_other_writer_first(repo: MemoryRepo):
        monkeypatch.setattr(MemoryRepo, "writer_lock", take_lock)
        KnowledgeWriter(repo).apply(
            [
                KnowledgeChange(
                    "knowledge/reference/billing.md",
                    "append",
                    "Notes",
                    "Invoices close on the 5th.",
                    Provenance("raw/a.md", datetime(2026, 3, 1, tzinfo=UTC)),
                )
            ]
        )
        return take_lock(repo)

    monkeypatch.setattr(MemoryRepo, "writer_lock", the_other_writer_first)
    move_note(memory_repo, "knowledge/people/ann.md", "knowledge/people/ann-smith.md")
    billing = git(memory_repo, "show", "HEAD:knowledge/reference/billing.md").stdout
    assert "Invoices close on the 5th." in billing
    assert "[[ann-smith|ann]]" in billing
