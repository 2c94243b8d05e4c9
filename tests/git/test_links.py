"""A symbolic link or gitlink in the memory folders (a memory pulled from a collaborator:
`knowledge/reference/team-notes.md -> ~/.aws/credentials`) is refused at commit, reported
by `verify`, `doctor` and `index rebuild`, and never read: search, compile and the
knowledge writer see nothing of what it points to. Real repos, real git, real hooks."""

from __future__ import annotations

import json
import os
from pathlib import Path

from autopoiesis.core.paths import MemoryRepo

SECRET = "aws_secret_access_key = zebracorn-9f8e7d6c5b4a"
LINK = "knowledge/reference/team-notes.md"


def _plant(repo: MemoryRepo, tmp_path: Path) -> None:
    outside = tmp_path / "credentials"
    outside.write_text(f"# Team notes\n\n{SECRET}\n", encoding="utf-8")
    (repo.root / LINK).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, repo.root / LINK)


def test_the_pre_commit_hook_refuses_a_link(memory_repo: MemoryRepo, tmp_path: Path, git) -> None:
    _plant(memory_repo, tmp_path)
    git(memory_repo, "add", LINK)
    done = git(memory_repo, "commit", "-m", "notes", check=False)
    assert done.returncode != 0
    assert f"{LINK}: a symbolic link" in done.stderr and "git rm --cached" in done.stderr
    # a gitlink (a submodule entry) too
    git(memory_repo, "rm", "-q", "--cached", LINK)
    head = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
    git(memory_repo, "update-index", "--add", "--cacheinfo", f"160000,{head},knowledge/sub")
    done = git(memory_repo, "commit", "-m", "sub", check=False)
    assert done.returncode != 0 and "knowledge/sub: a gitlink" in done.stderr


def test_a_link_committed_without_hooks_is_reported_and_never_read(
    memory_repo: MemoryRepo, tmp_path: Path, git, cli
) -> None:
    _plant(memory_repo, tmp_path)
    git(memory_repo, "add", LINK)
    git(memory_repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "notes")
    verify = cli("verify", repo=memory_repo)
    assert verify.returncode != 0 and LINK in verify.stdout + verify.stderr
    rebuild = cli("index", "rebuild", repo=memory_repo)
    assert f"{LINK}: a symbolic link; not indexed" in rebuild.stdout + rebuild.stderr
    found = cli("search", "zebracorn aws secret", "--json", repo=memory_repo, check=True)
    assert SECRET not in found.stdout and LINK not in found.stdout
    compiled = cli(
        "compile",
        "what are the aws secret access keys?",
        "--json",
        "--dry-run",
        repo=memory_repo,
        check=True,
    )
    assert SECRET not in compiled.stdout
    doctor = cli("doctor", "--json", repo=memory_repo)
    assert doctor.returncode == 1
    problems = json.loads(doctor.stdout)["problems"]
    assert any("symbolic links" in p and LINK in p for p in problems)


def test_the_knowledge_writer_never_writes_through_a_link(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    import pytest

    from autopoiesis.errors import UnsafePathError
    from autopoiesis.knowledge.documents import KnowledgeDocuments

    _plant(memory_repo, tmp_path)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        KnowledgeDocuments(memory_repo).read(LINK)
    assert memory_repo.is_link(LINK) and not memory_repo.is_link("knowledge/memory/MEMORY.md")
    assert memory_repo.links() == [LINK]


def test_a_name_with_a_control_character_is_refused_and_reported(
    memory_repo: MemoryRepo, git, cli
) -> None:
    """A name may hold any byte but `/` and NUL; one with a line break printed as two
    lines in `search` and posed as a section of a compiled context. The pre-commit hook
    refuses it, and `verify` reports one committed without the hooks, with its own remedy
    (not the hint about rewritten transcripts)."""
    odd = "knowledge/reference/a\nb.md"
    (memory_repo.root / odd).write_text("# A\n\n- the quokka ledger\n", encoding="utf-8")
    git(memory_repo, "add", "-A")
    done = git(memory_repo, "commit", "-m", "odd", check=False)
    assert done.returncode != 0
    assert "knowledge/reference/a\\nb.md: its name holds a control character" in done.stderr
    git(memory_repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "odd, no hooks")
    verify = cli("verify", repo=memory_repo)
    assert verify.returncode == 1
    assert "knowledge/reference/a\\nb.md: a name with a control character" in verify.stdout
    assert "immutable" not in verify.stderr


def test_extraction_reads_no_transcript_through_a_link(
    memory_repo: MemoryRepo, tmp_path: Path, cli
) -> None:
    """A link under raw/conversations was read when extraction listed the transcripts
    (one to /etc/passwd was skipped as a transcript without frontmatter only after), and
    one to a transcript outside the repository stopped the whole run at its path."""
    from autopoiesis.knowledge.extract import list_transcripts
    from autopoiesis.testing.samples import closed_transcript

    outside = tmp_path / "outside.md"
    outside.write_text(closed_transcript("ses_outside", "Outside"), encoding="utf-8")
    day = memory_repo.conversations_dir / "2026/02/16"
    day.mkdir(parents=True)
    os.symlink(outside, day / "1845-ses_outside-outside.md")
    os.symlink("/etc/passwd", day / "1846-ses_passwd.md")
    assert list_transcripts(memory_repo) == []
    done = cli("extract", "--pending", repo=memory_repo)
    assert done.returncode == 0, done.stderr


def test_the_pre_commit_hook_refuses_a_link_at_a_file_autopoiesis_reads_or_under_shared(
    memory_repo: MemoryRepo, git
) -> None:
    """`memory-config.yaml -> /dev/zero` was read on every command; `shared/x -> ..` was
    taken for a team's mount, synced in. Neither is committed; a team's gitlink is."""
    config = memory_repo.root / "memory-config.yaml"
    config.unlink()
    config.symlink_to("/dev/zero")
    git(memory_repo, "add", "memory-config.yaml")
    done = git(memory_repo, "commit", "-m", "config", check=False)
    assert done.returncode != 0
    assert "memory-config.yaml: a symbolic link at a file autopoiesis reads" in done.stderr
    git(memory_repo, "reset", "-q", "--hard")
    (memory_repo.root / "shared").mkdir()
    (memory_repo.root / "shared/x").symlink_to("..")
    git(memory_repo, "add", "shared/x")
    done = git(memory_repo, "commit", "-m", "x", check=False)
    assert done.returncode != 0 and "shared/x: a symbolic link under shared/" in done.stderr


def test_a_name_that_holds_a_secret_is_refused_shown_without_it(
    memory_repo: MemoryRepo, git, cli
) -> None:
    """A note's text is redacted when `autopoiesis commit` commits it, but its name cannot
    be: the pre-commit hook refuses it, naming the file with the secret cut out, and the
    note stays in the work tree to be renamed."""
    token = "ghp_" + "Bq9vB2mK7pL4nR8sT1wY6zA3cD5eF0gH2jK9"
    note = memory_repo.root / f"knowledge/reference/deploy-{token}.md"
    note.write_text("# Deploy\n\n- the CI token lives in the vault\n", encoding="utf-8")
    done = cli("commit", repo=memory_repo)
    assert done.returncode != 0
    assert (
        "knowledge/reference/deploy-[redacted:github_token].md: its name holds what looks "
        "like a secret" in done.stderr
    )
    assert token not in done.stderr + done.stdout
    assert note.is_file()
    objects = git(memory_repo, "rev-list", "--all", "--objects").stdout
    assert token not in objects
    # plain git is held the same way
    git(memory_repo, "add", "-A")
    assert git(memory_repo, "commit", "-m", "deploy", check=False).returncode != 0
    assert token not in git(memory_repo, "rev-list", "--all", "--objects").stdout
    # committed without the hooks (or by a collaborator), `verify` reports it, without it
    git(memory_repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "no hooks")
    verify = cli("verify", repo=memory_repo)
    assert verify.returncode == 1
    assert (
        "knowledge/reference/deploy-[redacted:github_token].md: a name that holds what looks "
        "like a secret" in verify.stdout
    )
    assert token not in verify.stdout + verify.stderr
