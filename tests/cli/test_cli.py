"""The CLI end to end: global -C, friendly errors, the demo."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import Cli


def test_help_lists_the_commands(cli: Cli) -> None:
    proc = cli("--help")
    assert proc.returncode == 0
    for cmd in (
        "init",
        "capture",
        "import",
        "commit",
        "tag",
        "explore",
        "hooks",
        "recall",
        "blame",
        "learned",
        "show-at",
        "demo",
    ):
        assert cmd in proc.stdout


@pytest.mark.slow
def test_init_twice_says_nothing_changed(tmp_path: Path, cli: Cli) -> None:
    first = cli("init", str(tmp_path / "m"))
    assert first.returncode == 0
    assert "Initialized a new memory repository" in first.stdout
    assert "search index built" in first.stdout
    again = cli("-C", str(tmp_path / "m"), "init")
    assert again.returncode == 0
    assert "nothing changed" in again.stdout


@pytest.mark.slow
def test_user_errors_have_no_traceback(tmp_path: Path, cli: Cli) -> None:
    for args in (
        ("-C", str(tmp_path), "commit"),
        ("-C", str(tmp_path / "nope"), "recall", "x"),
        ("recall", "x"),
    ):
        proc = cli(*args, cwd=tmp_path, process=True)
        assert proc.returncode != 0
        assert "Traceback" not in proc.stderr, proc.stderr
        assert "autopoiesis init" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_commit_tag_recall_learned_blame_show_at(memory_repo: MemoryRepo, cli: Cli) -> None:
    root = str(memory_repo.root)
    assert "nothing to commit" in cli("-C", root, "commit").stdout
    (memory_repo.root / "knowledge/reference/db.md").write_text(
        "# DB\n\n- Postgres 16 in production\n"
    )
    out = cli("-C", root, "commit").stdout
    assert "memory: Postgres 16 in production" in out  # the subject names what was learned
    assert "tagged memory/milestone/first" in cli("-C", root, "tag", "milestone", "first").stdout
    assert "already exists" in cli("-C", root, "tag", "milestone", "first").stdout
    bad = cli("-C", root, "tag", "milestone")
    assert bad.returncode == 2
    assert "needs a name" in bad.stderr
    rec = cli("-C", root, "recall", "Postgres 16")
    assert "memory: Postgres 16 in production" in rec.stdout
    assert "knowledge/reference/db.md" in rec.stdout
    learned = cli("-C", root, "learned", "--since", "1 hour ago")
    assert "+ - Postgres 16 in production" in learned.stdout
    assert "Postgres 16" in cli("-C", root, "blame", "knowledge/reference/db.md").stdout
    assert (
        "Postgres 16"
        in cli("-C", root, "show-at", "milestone/first", "knowledge/reference/db.md").stdout
    )
    outside = cli("-C", root, "blame", "../../etc/passwd")
    assert outside.returncode != 0
    assert "outside" in outside.stderr
    assert "Traceback" not in outside.stderr


@pytest.mark.slow
def test_demo_runs_offline(tmp_path: Path, git, cli: Cli) -> None:
    proc = cli("demo", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stderr
    assert "[redacted:openai_key]" in proc.stdout
    assert "conversation: pr-review-for-the-capture-module" in proc.stdout
    # what extraction wrote is shown, and not its bookkeeping (knowledge/.extracted)
    assert "-- knowledge/journal/2026-02-16.md" in proc.stdout
    assert "knowledge/.extracted" not in proc.stdout
    log = git(tmp_path / "demo", "log", "--format=%s", check=False).stdout
    assert log.count("conversation:") == 3
    again = cli("demo", str(tmp_path / "demo"))
    assert again.returncode != 0
    assert "not empty" in again.stderr


@pytest.mark.slow
def test_the_demo_shows_a_search_as_the_search_command_prints_it(tmp_path: Path, cli: Cli) -> None:
    """The demo prints `autopoiesis search "..." --limit 3` and its hits: they are what that
    command prints, line for line, not a format of the demo's own."""
    demo = cli("demo", str(tmp_path / "demo"), cwd=tmp_path, check=True).stdout
    query = "why did the deploy fail?"
    shown = demo.split(f'== autopoiesis search "{query}" --limit 3\n', 1)[1].split("\n\n", 1)[0]
    search = cli("-C", str(tmp_path / "demo"), "search", query, "--limit", "3", cwd=tmp_path)
    assert search.returncode == 0, search.stderr
    assert shown == search.stdout.rstrip("\n")


def test_version_prints_the_package_version(cli: Cli) -> None:
    from autopoiesis import __version__

    proc = cli("--version", process=True)  # the light entry, as installed
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"autopoiesis {__version__}"


def test_init_in_an_impossible_place_is_a_clear_error(tmp_path: Path, cli: Cli) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for target in ("/proc/autopoiesis-test", str(blocker / "mem")):
        proc = cli("init", target)
        assert proc.returncode == 1
        assert "Traceback" not in proc.stderr
        assert "cannot create a memory repository" in proc.stderr


@pytest.mark.slow
def test_an_unknown_embedder_is_refused_with_the_registered_names(tmp_path: Path, cli: Cli) -> None:
    assert cli("init", str(tmp_path / "m")).returncode == 0  # with a search index
    config = tmp_path / "m" / "memory-config.yaml"
    config.write_text(config.read_text().replace("embedder: offline", "embedder: ofline"))
    # the embedder is this machine's to approve (core/approval.py): unapproved, it is not used
    assert cli("-C", str(tmp_path / "m"), "llm", "approve", "--yes").returncode == 0
    proc = cli("-C", str(tmp_path / "m"), "search", "anything")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "unknown search.embedder 'ofline'" in proc.stderr
    assert "offline" in proc.stderr.split("unknown search.embedder", 1)[1]


def test_extract_list_json_prints_json(cli: Cli) -> None:
    """`extract --list --json` printed the human table; it prints the extractors as JSON."""
    import json

    r = cli("extract", "--list", "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    decisions = next(e for e in listed if e["name"] == "decisions")
    assert decisions["key"].startswith("decisions@") and decisions["description"]


def test_replay_compare_reads_the_question_set_first(
    memory_repo: MemoryRepo, cli: Cli, git, tmp_path: Path
) -> None:
    """`replay --compare A B --questions /nonexistent` ran the whole comparison, then failed
    on the file; the file is read first, so nothing runs for a set that cannot be read."""
    git(memory_repo, "branch", "extract/b")
    r = cli(
        "replay",
        "--compare",
        "main",
        "extract/b",
        "--questions",
        str(tmp_path / "nope.jsonl"),
        repo=memory_repo,
    )
    assert r.returncode == 1 and "cannot read the question set" in r.stderr
    assert r.stdout == ""


def test_import_of_a_folder_of_no_logs_says_nothing_was_imported(
    memory_repo: MemoryRepo, cli: Cli, git, tmp_path: Path
) -> None:
    """A folder whose files were all skipped (none a log of any format) imported nothing
    and exited 0 with warnings only; as an empty folder, it is refused (exit 1) with why."""
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.json").write_text('{"x": 1}\n')
    (junk / "b.md").write_text("# notes\n")
    head = git(memory_repo, "rev-parse", "HEAD").stdout
    r = cli("import", str(junk), repo=memory_repo)
    assert r.returncode == 1
    assert f"refused: {junk}: none of the 2 files found is a session log" in r.stderr
    assert "nothing imported" in r.stderr
    assert git(memory_repo, "rev-parse", "HEAD").stdout == head


def test_recall_bounds_the_length_of_its_text(memory_repo: MemoryRepo, cli: Cli) -> None:
    """`recall` of a 30 KB text took 16 s and of 100 KB never ended (`git log -S` with case
    ignored is quadratic in the text); the owner (git/recall.py) refuses a text over
    MAX_RECALL_CHARS at once, for the CLI and the MCP tool alike."""
    # refused, not searched: the search itself never ended (the cli's timeout is the hang
    # guard), so the refusal shows it was not run
    r = cli("recall", "a" * 100_000, repo=memory_repo, process=True)
    assert r.returncode == 1 and "recall looks for at most 1,000" in r.stderr

    from autopoiesis.errors import InvalidArgumentError
    from autopoiesis.git.recall import MAX_RECALL_CHARS
    from autopoiesis.git.repo import MemoryGit

    with pytest.raises(InvalidArgumentError):
        MemoryGit(memory_repo).changes("b" * (MAX_RECALL_CHARS + 1))
    assert cli("recall", "a" * MAX_RECALL_CHARS, repo=memory_repo).returncode == 0


def test_commit_names_a_finished_transcript_it_cannot_read(
    memory_repo: MemoryRepo, cli: Cli, git
) -> None:
    """A transcript whose start no conversation can have (the year 1, a negative epoch)
    is never committed; `autopoiesis commit` passed over it without a word ("nothing to
    commit: no finished transcript waits") while it sat in the work tree. It is named,
    with why and what to do; a readable one beside it is committed as before."""
    folder = memory_repo.root / "raw/conversations/2026/03/02"
    folder.mkdir(parents=True)
    meta = "session_id: {sid}\nstarted: {at}\nended: {at}\nstatus: closed\n"
    body = "\n# T\n\n## 10:00 — user\nWe decided to use Redis.\n"
    for sid, at in (("ses_year1", "0001-01-01T10:00:00Z"), ("ses_ok", "2026-03-02T10:00:00Z")):
        (folder / f"1000-{sid}-t.md").write_text(
            "---\n" + meta.format(sid=sid, at=at) + "---\n" + body
        )
    out = cli("commit", repo=memory_repo)
    assert out.returncode == 0, out.stderr
    assert "1 transcript" in out.stdout
    assert "1000-ses_year1-t.md: started 0001-01-01T10:00:00+00:00 is outside" in out.stderr
    assert "not committed until it can be read" in out.stderr
    assert "datetime.datetime" not in out.stderr
    untracked = git(memory_repo, "status", "--porcelain", "--", "raw").stdout
    assert "ses_year1" in untracked and "ses_ok" not in untracked
