"""Errors that point the right way: a folder that is not there is said to be missing, a
code repository is never offered `init`, paths typed in a subfolder are read from it,
and no Python internals reach the output."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.git.repo import MemoryGit
from tests.conftest import Cli, Git


def test_a_missing_folder_is_no_such_folder(tmp_path: Path, cli: Cli) -> None:
    r = cli("-C", str(tmp_path / "nowhere"), "status")
    assert r.returncode != 0
    assert f"-C {tmp_path / 'nowhere'}: no such folder" in r.stderr
    assert "not a memory repository" not in r.stderr
    assert "Traceback" not in r.stderr and "Errno" not in r.stderr
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    assert "is a file, not a folder" in cli("-C", str(a_file), "search", "x").stderr


def test_inside_a_code_repository_init_is_never_suggested_for_it(
    tmp_path: Path, cli: Cli, git: Git
) -> None:
    code = tmp_path / "code"
    (code / "src").mkdir(parents=True)
    git(code, "init", "-q")
    for where in (code, code / "src"):
        r = cli("search", "anything", cwd=where)
        assert r.returncode != 0
        assert "is a git repository but not a memory repository" in r.stderr
        assert f"autopoiesis init {code}" not in r.stderr
        assert "autopoiesis init ~/memory" in r.stderr
    # an empty folder given with -C may well become one
    empty = tmp_path / "empty"
    empty.mkdir()
    assert f"`autopoiesis init {empty}`" in cli("-C", str(empty), "status").stderr


def test_paths_typed_in_a_subfolder_are_read_from_it(memory_repo: MemoryRepo, cli: Cli) -> None:
    sub = memory_repo.root / "knowledge" / "identity"
    r = cli("blame", "USER.md", cwd=sub)
    assert r.returncode == 0, r.stderr
    assert "# User" in r.stdout
    r = cli("show-at", "HEAD", "../memory/MEMORY.md", cwd=sub)
    assert r.returncode == 0, r.stderr
    assert "knowledge/memory/MEMORY.md at HEAD" in r.stderr
    # from outside the repository (with -C), paths are the repository's
    r = cli("blame", "knowledge/identity/USER.md", repo=memory_repo, cwd=memory_repo.root.parent)
    assert r.returncode == 0, r.stderr
    assert memory_repo.typed("a/b.md", cwd=memory_repo.root) == "a/b.md"
    assert memory_repo.typed("../x.md", cwd=sub) == "knowledge/x.md"
    assert memory_repo.typed(str(sub / "USER.md"), cwd="/") == "knowledge/identity/USER.md"


def test_counts_read_as_english(memory_repo: MemoryRepo, cli: Cli, tmp_path: Path) -> None:
    log = tmp_path / "one.json"
    log.write_text(
        json.dumps(
            {
                "session_id": "only-one",
                "started": "2026-01-01T10:00:00Z",
                "messages": [{"role": "user", "content": "one session"}],
            }
        )
    )
    cli("import", str(log), repo=memory_repo, check=True)
    out = cli("verify", repo=memory_repo).stdout + cli("status", repo=memory_repo).stdout
    out += cli("extract", "--pending", repo=memory_repo).stdout
    assert "1 transcript," in out or "1 transcript " in out
    for internal in ("1 transcripts", "1 sessions", "(s)", "None", "Errno"):
        assert internal not in out, internal


def test_an_annotated_tag_on_a_machine_with_no_git_identity(
    memory_repo: MemoryRepo, cli: Cli, monkeypatch, tmp_path: Path
) -> None:
    """A tagger is needed as a committer is: the runner's fallback identity serves both
    (before, GitPython's error escaped as a traceback)."""
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("EMAIL", "")
    r = cli("tag", "milestone", "first", "-m", "the first milestone", repo=memory_repo)
    assert r.returncode == 0, r.stderr
    assert "tagged memory/milestone/first" in r.stdout and "Traceback" not in r.stderr


def test_a_missing_question_set_is_no_such_file(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    r = cli("eval", str(tmp_path / "nope.jsonl"), repo=memory_repo)
    assert r.returncode != 0
    assert f"cannot read the question set {tmp_path / 'nope.jsonl'}: no such file." in r.stderr
    assert "Errno" not in r.stderr


def test_days_and_counts_a_memory_cannot_have_are_usage_errors(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    """`tag daily --date 9999-12-31` and `condense weekly` of it ended on an OverflowError's
    traceback; a monthly condensing of 9999-12-31 took it for today and archived every
    journal; `learned --since 'not a date'` said nothing was learned since it (git reads
    such text as now); `explore prune --days -1` deleted every explore branch; `recall
    -n 0` said no commit had the text. Each is now refused (exit 2) with what to give."""
    for args, says in (
        (("tag", "daily", "--date", "9999-12-31"), "outside the years 1970-2200"),
        (("tag", "daily", "release"), "a daily tag is named by its day (--date)"),
        (("condense", "weekly", "--date", "9999-12-31"), "outside the years 1970-2200"),
        (("condense", "monthly", "--date", "2199-12-31"), "is after today"),
        (("learned", "--since", "not a date"), "is no date git understands"),
        (("learned", "--since", "2026-02-30"), "is not a date"),
        (("explore", "prune", "--days", "-1"), "-1 is not in the range"),
        (("recall", "x", "-n", "0"), "0 is not in the range"),
        (("recall", "  "), "recall needs the text to look for"),
        (("watch-sessions", "--once", "--idle-minutes", "99999999999"), "not in the range"),
    ):
        done = cli(*args, repo=memory_repo)
        assert done.returncode == 2 and says in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert cli("learned", "--since", "1 week ago", repo=memory_repo).returncode == 0


def test_a_date_in_numbers_git_would_misread_is_refused(memory_repo: MemoryRepo, cli: Cli) -> None:
    """git reads numbers it cannot place as some day of this month or year: `--since -5`
    as the 5th, `--since 2026-11` as 11 November, `--since 99999-01-01` as 1 January of
    this year, and `learned` listed what came after that day under the date the user
    gave. A day or a month year first is read as its calendar says; other numbers are
    refused with what to give."""
    for value in ("-5", "99999-01-01", "11/29/2026", "29.11.2026"):
        done = cli("learned", "--since", value, repo=memory_repo)
        assert done.returncode == 2 and "is no date git understands" in done.stderr, value
    git = MemoryGit(memory_repo)
    assert (
        git.git_time("2026-11") == git.git_time("2026-11-01") == 1793491200
    )  # 2026-11-01 00:00 UTC
    assert git.git_time("2026/11/29") == git.git_time("2026-11-29")
    assert git.git_time("2026-13") is None
    assert cli("learned", "--since", "2026-11", repo=memory_repo).returncode == 0


def test_a_query_beside_a_batch_is_refused_not_dropped(
    memory_repo: MemoryRepo, cli: Cli, tmp_path: Path
) -> None:
    """`search --batch FILE QUERY` ran the batch and dropped QUERY without a word."""
    batch = tmp_path / "queries.txt"
    batch.write_text("hello\n", encoding="utf-8")
    done = cli("search", "--batch", str(batch), "python", repo=memory_repo)
    assert done.returncode == 2 and "give a QUERY or --batch FILE, not both" in done.stderr


def test_links_mv_and_flush_read_paths_typed_in_a_subfolder_from_it(
    memory_repo: MemoryRepo, cli: Cli, git: Git
) -> None:
    """`links`, `mv` and `flush --session` read a path typed in a folder of the memory from
    the repository's top ("there is no note", "is not a note", "is outside raw/"); they
    read it from the current folder now, as `blame` and `show-at` do (MemoryRepo.typed)."""
    from datetime import UTC, datetime

    from autopoiesis.capture.session import ConversationCapture, Session

    people = memory_repo.root / "knowledge" / "people"
    (people / "maria-lopez.md").write_text("# Maria Lopez\n\n- Owns capture.\n", "utf-8")
    (memory_repo.root / "knowledge/reference/team.md").write_text(
        "# Team\n\n- [[maria-lopez]] owns capture.\n", "utf-8"
    )
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "notes")
    r = cli("links", "maria-lopez.md", cwd=people)
    assert r.returncode == 0, r.stderr
    assert "knowledge/reference/team.md" in r.stdout
    r = cli("mv", "./maria-lopez.md", "./maria.md", "--no-commit", cwd=people)
    assert r.returncode == 0, r.stderr
    assert "moved knowledge/people/maria-lopez.md -> knowledge/people/maria.md" in r.stdout
    assert (people / "maria.md").is_file() and "[[maria|maria-lopez]]" in (
        memory_repo.root / "knowledge/reference/team.md"
    ).read_text()

    cap = ConversationCapture(memory_repo)
    s = Session("s1", started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC), model="m", channel="cli")
    cap.on_session_start(s)
    cap.on_message(s, "user", "we decided to keep the notes in git")
    closed = cap.on_session_end(s)
    assert closed is not None
    transcript = memory_repo.root / closed.path
    r = cli(
        "flush",
        "--session",
        transcript.name,
        input="- Decided: notes live in git\n",
        cwd=transcript.parent,
    )
    assert r.returncode == 0, r.stderr
    assert "outside" not in r.stderr


def test_extractors_given_but_naming_none_are_refused(memory_repo: MemoryRepo, cli: Cli) -> None:
    """`replay --extractors ,` (or "") ran every extractor, and the branch's commit said
    "with all extractors" where one was meant; so did `extract --extractors ''`."""
    for args in (
        ("replay", "--branch", "extract/none", "--extractors", ",, ,"),
        ("replay", "--branch", "extract/none", "--extractors", ""),
        ("extract", "--pending", "--extractors", ","),
    ):
        r = cli(*args, repo=memory_repo)
        assert r.returncode == 2, (args, r)
        assert "names no extractor" in r.stderr
    assert "extract/none" not in MemoryGit(memory_repo).run("branch", "--list").stdout


def test_replay_sample_without_questions_is_refused(memory_repo: MemoryRepo, cli: Cli) -> None:
    """`replay --compare A B --sample 3` (and `--branch ... --sample 3`) ignored --sample
    without a question set, and printed a result as if conversation 3 had been scored."""
    for args in (
        ("replay", "--compare", "main", "main", "--sample", "3"),
        ("replay", "--branch", "extract/s", "--sample", "3"),
    ):
        r = cli(*args, repo=memory_repo)
        assert r.returncode == 2, (args, r)
        assert "--sample goes with --questions" in r.stderr
