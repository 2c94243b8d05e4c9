"""`autopoiesis forget`: a string or a transcript leaves every commit, tag, reflog and cache."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from autopoiesis.capture.session import ConversationCapture, Session
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.errors import GitError
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
from autopoiesis.knowledge.writer import KnowledgeWriter
from autopoiesis.memory.forget import forget, plan_forget
from tests.conftest import PROJECT_ROOT, Cli, all_objects

SECRET = "corp-vault-unlock zebra 7731 harpoon"  # prose-shaped: redaction cannot know it is secret
OTHER = "the deploy pipeline has a rollback plan"


def _session(repo: MemoryRepo, sid: str, *lines: str) -> str:
    cap = ConversationCapture(repo)
    s = Session(sid, started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC), model="m", channel="cli")
    cap.on_session_start(s)
    for line in lines:
        cap.on_message(s, "user", line)
    closed = cap.on_session_end(s)
    assert closed is not None and closed.commit
    return closed.path


def _index_holds(repo: MemoryRepo, text: str) -> bool:
    """Whether memory.db holds TEXT: in its bytes, or in the chunk texts it keeps
    compressed (files.chunks_z)."""
    import zlib

    from autopoiesis.core.sqlite import sqlite_module  # the index's own SQLite

    conn = sqlite_module().connect(repo.index_path)
    try:
        packed = [z for (z,) in conn.execute("SELECT chunks_z FROM files") if z]
    finally:
        conn.close()
    plain = repo.index_path.read_bytes() + b"".join(zlib.decompress(z) for z in packed)
    return text.encode() in plain


@pytest.mark.slow
def test_forget_a_string_removes_it_from_every_object_and_keeps_tags(
    memory_repo: MemoryRepo, git, cli: Cli
) -> None:
    path = _session(
        memory_repo, "leak1", "hello there", f"the vault phrase is {SECRET}, keep it safe", OTHER
    )
    note = memory_repo.root / "knowledge" / "reference" / "vault.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(f"# Vault\n\nPhrase: {SECRET}\n", encoding="utf-8")
    git(memory_repo, "add", "knowledge")
    git(memory_repo, "commit", "-qm", f"memory: note the vault ({SECRET})")
    old_head = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
    git(memory_repo, "tag", "v1")
    git(memory_repo, "tag", "-a", "milestone/one", "-m", "first milestone")
    _session(memory_repo, "later1", "a later, unrelated conversation")
    # caches that quote the text
    (memory_repo.state_dir / "llm").mkdir(parents=True, exist_ok=True)
    (memory_repo.state_dir / "llm" / "cache.sqlite").write_bytes(b"prompt: " + SECRET.encode())
    (memory_repo.state_dir / "llm" / "ledger.jsonl").write_text(
        json.dumps({"prompt": SECRET}) + "\n"
    )
    (memory_repo.state_dir / "embed-cache.db").write_bytes(b"chunk " + SECRET.encode())
    assert cli("index", "rebuild", repo=memory_repo).returncode == 0
    assert _index_holds(memory_repo, SECRET)
    assert SECRET.encode() in all_objects(memory_repo.root)

    done = cli(
        "forget",
        "--stdin",
        "--yes",
        "--reason",
        "pasted the vault phrase by mistake",
        repo=memory_repo,
        input=SECRET + "\n",
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

    # in no object at all: blobs, trees, commit messages, tags, reflogs, unreachable objects
    assert SECRET.encode() not in all_objects(memory_repo.root)
    assert (
        git(memory_repo, "reflog", "--all").stdout.count("\n") <= 2
    )  # only the maintenance commit and the rewrite
    assert SECRET not in (memory_repo.root / path).read_text(encoding="utf-8")
    assert "[redacted:forgotten]" in (memory_repo.root / path).read_text(encoding="utf-8")
    assert OTHER in (memory_repo.root / path).read_text(encoding="utf-8")
    # tags re-pointed at the rewritten commits
    v1 = git(memory_repo, "rev-parse", "v1^{commit}").stdout.strip()
    milestone = git(memory_repo, "rev-parse", "milestone/one^{commit}").stdout.strip()
    assert v1 == milestone != old_head
    assert git(memory_repo, "merge-base", "--is-ancestor", v1, "HEAD", check=False).returncode == 0
    assert "[redacted:forgotten]" in git(memory_repo, "show", f"v1:{path}").stdout
    assert "[redacted:forgotten]" in git(memory_repo, "log", "-1", "--format=%s", "v1").stdout
    # memory.db rebuilt without it; the caches are gone
    assert memory_repo.index_path.exists() and not _index_holds(memory_repo, SECRET)
    embed = memory_repo.state_dir / "embed-cache.db"  # deleted, then refilled by the rebuild
    assert not embed.exists() or SECRET.encode() not in embed.read_bytes()
    assert not (memory_repo.state_dir / "llm" / "cache.sqlite").exists()
    assert not (memory_repo.state_dir / "llm" / "ledger.jsonl").exists()
    # recorded: what (never the secret), when, why
    record = git(memory_repo, "log", "-1", "--format=%B").stdout
    assert record.startswith("maintenance: forget a secret")
    assert f"a string of {len(SECRET)} characters" in record and "salted sha256:" in record
    assert "Why: pasted the vault phrase by mistake" in record and "When: " in record
    assert SECRET not in record
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    assert git(memory_repo, "fsck", "--no-progress").returncode == 0
    # the sanctioned rewrite is the new truth: verify accepts it, and later commits pass the hooks
    verified = cli("verify", repo=memory_repo)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    _session(memory_repo, "after1", "a conversation after the purge")


@pytest.mark.slow
def test_forget_a_transcript_removes_the_file_from_all_history(
    memory_repo: MemoryRepo, git
) -> None:
    keep = _session(memory_repo, "keep1", "this one stays", OTHER)
    gone = _session(memory_repo, "gone1", "this one goes", f"it said {SECRET}")
    git(memory_repo, "tag", "after-both")
    report = forget(memory_repo, transcript=gone, reason="the whole conversation was private")
    assert git(memory_repo, "log", "--all", "--format=%H", "--", gone).stdout.strip() == ""
    assert SECRET.encode() not in all_objects(memory_repo.root)
    assert (memory_repo.root / keep).exists() and not (memory_repo.root / gone).exists()
    tagged = git(memory_repo, "ls-tree", "-r", "--name-only", "after-both").stdout.split()
    assert [p for p in tagged if p.startswith("raw/conversations/") and p.endswith(".md")] == [keep]
    assert "the transcript raw/conversations/2026/03/01/0900-gone1-….md" == report.what
    assert "this-one-goes" not in git(memory_repo, "log", "-1", "--format=%B").stdout


def test_forget_refuses_a_dirty_tree_and_short_strings(
    memory_repo: MemoryRepo, git, cli: Cli
) -> None:
    _session(memory_repo, "d1", f"leak {SECRET}")
    head = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
    stray = memory_repo.root / "knowledge" / "draft.md"
    stray.write_text("work in progress\n", encoding="utf-8")
    with pytest.raises(GitError, match="clean working tree"):
        forget(memory_repo, text=SECRET, reason="x")
    stray.unlink()
    with pytest.raises(GitError, match="at least"):
        forget(memory_repo, text="zebra", reason="x")
    done = cli(
        "forget", "--yes", "--reason", "r", "--transcript", "knowledge/x.md", repo=memory_repo
    )
    assert (
        done.returncode != 0
        and "is no transcript" in done.stderr
        and "Traceback" not in done.stderr
    )
    assert git(memory_repo, "rev-parse", "HEAD").stdout.strip() == head  # nothing rewritten


@pytest.mark.slow
def test_forget_tells_what_a_pushed_remote_needs(
    memory_repo: MemoryRepo, git, tmp_path: Path, cli: Cli
) -> None:
    _session(memory_repo, "p1", "hello", f"leak {SECRET}")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(memory_repo, "remote", "add", "origin", str(remote))
    git(memory_repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(memory_repo, "fetch", "-q", "origin")
    done = cli("forget", "--stdin", "--yes", "--reason", "leaked", repo=memory_repo, input=SECRET)
    assert done.returncode == 0, done.stderr
    assert "force" in done.stderr and "re-clone" in done.stderr and str(remote) in done.stderr
    # one branch, no tag: counted in the singular, here and in the record
    assert "history rewritten; 1 branch or tag re-pointed;" in done.stdout
    record = git(memory_repo, "log", "-1", "--format=%B").stdout
    assert "1 branch or tag re-pointed;" in record
    assert git(memory_repo, "remote").stdout.split() == [
        "origin"
    ]  # the remote is kept for the force-push
    # the remote-tracking ref no longer holds it
    assert SECRET.encode() not in all_objects(memory_repo.root)


def _every_trace(repo: MemoryRepo, needle: str) -> list[str]:
    """Where NEEDLE still is, outside the packed objects: the name or the bytes of any file
    of the repo (work tree, .git/index, refs and logs, memory.db, .autopoiesis/), and the
    object store (case-insensitively)."""
    low = needle.lower().encode()
    found = []
    for path in repo.root.rglob("*"):
        rel = path.relative_to(repo.root).as_posix()
        if needle.lower() in rel.lower():
            found.append(f"name: {rel}")
        elif path.is_file() and "/objects/" not in f"/{rel}" and low in path.read_bytes().lower():
            found.append(f"bytes: {rel}")
    if low in all_objects(repo.root).lower():
        found.append("object store")
    return found


def _pushed_to_a_remote(repo: MemoryRepo, git, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "HEAD:refs/heads/main")
    return remote


@pytest.mark.slow
def test_forget_a_secret_in_a_file_name_renames_it_everywhere_and_sync_pushes_no_trace(
    memory_repo: MemoryRepo, git, tmp_path: Path, cli: Cli
) -> None:
    secret = "zq-plover-quartz-7731"  # slug-shaped: the first message names the transcript
    path = _session(memory_repo, "name1", f"{secret} opens the vault", OTHER)
    assert secret in path
    remote = _pushed_to_a_remote(memory_repo, git, tmp_path)
    assert cli("index", "rebuild", repo=memory_repo).returncode == 0
    assert _index_holds(memory_repo, secret)

    done = cli("forget", "--stdin", "--yes", "--reason", "leaked", repo=memory_repo, input=secret)
    assert done.returncode == 0, done.stderr
    assert "1 file name:" in done.stderr and secret not in done.stderr  # shown masked
    assert _every_trace(memory_repo, secret) == []
    renamed = memory_repo.root / path.replace(secret, "redacted-forgotten")
    assert OTHER in renamed.read_text(encoding="utf-8")
    assert git(memory_repo, "log", "-1", "--format=%s").stdout.startswith("maintenance: forget")

    forced = cli("sync", "--force-after-forget", repo=memory_repo)
    assert forced.returncode == 0, forced.stderr
    on_remote = git(remote, "log", "--all", "--name-only", "-p").stdout
    assert renamed.name in on_remote and secret not in on_remote
    # what the remote's branches reach (its old objects stay until the host collects them)
    assert secret not in git(remote, "rev-list", "--all", "--objects").stdout


@pytest.mark.slow
def test_forget_removes_the_forms_a_first_message_takes_in_the_name_and_the_title(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    """Said first in a session, a string names its transcript: lowercased in the file name
    (`zebracorn-4471-...`) and title-cased in the title (`# Zebracorn 4471 ...`). forget
    removes those forms too, not only the string as it was said."""
    secret = "ZebraCorn_4471!"
    path = _session(memory_repo, "title1", f"{secret} opens the vault", OTHER)
    text = (memory_repo.root / path).read_text(encoding="utf-8")
    assert "zebracorn-4471" in path and "# Zebracorn 4471 Opens The Vault" in text
    assert cli("index", "rebuild", repo=memory_repo).returncode == 0

    done = cli("forget", "--stdin", "--yes", "--reason", "leaked", repo=memory_repo, input=secret)
    assert done.returncode == 0, done.stderr
    for form in (secret, "zebracorn-4471", "Zebracorn 4471", "zebracorn 4471"):
        assert _every_trace(memory_repo, form) == [], form
    (renamed,) = (memory_repo.root / "raw/conversations").rglob("*title1*.md")
    assert OTHER in renamed.read_text(encoding="utf-8")


@pytest.mark.slow
def test_forget_records_nothing_when_the_string_survives_the_rewrite(
    memory_repo: MemoryRepo, git, tmp_path: Path, cli: Cli
) -> None:
    _session(memory_repo, "bin1", f"leak {SECRET}")
    blob = memory_repo.root / "archive" / "dump.bin"  # binary: filter-repo leaves it as it is
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(b"\0\1binary " + SECRET.encode() + b"\0")
    git(memory_repo, "add", "archive")
    git(memory_repo, "commit", "-qm", "a binary dump")
    remote = _pushed_to_a_remote(memory_repo, git, tmp_path)

    done = cli("forget", "--stdin", "--yes", "--reason", "r", repo=memory_repo, input=SECRET)
    assert done.returncode == 1 and "still in the object store" in done.stderr
    assert "archive/dump.bin" in done.stderr and "Traceback" not in done.stderr
    assert git(memory_repo, "log", "-1", "--format=%s").stdout.strip() == "a binary dump"
    assert not memory_repo.state_file("verify_rewrites").exists()  # sync will not force it
    # the history is rewritten but not recorded: no sync, forced or not, until it is
    for args in (("sync", "--force-after-forget"), ("sync",)):
        refused = cli(*args, repo=memory_repo)
        assert refused.returncode != 0 and "was stopped before it finished" in refused.stderr
    assert SECRET.encode() in all_objects(remote)  # as it was, never forced


def test_forget_refuses_structure_and_says_how_often_and_where(
    memory_repo: MemoryRepo, git, cli: Cli
) -> None:
    path = _session(memory_repo, "where1", "hello", f"the vault phrase is {SECRET}")
    note = memory_repo.root / "knowledge" / "reference" / "vault.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(f"# Vault\n\nPhrase: {SECRET}\nAgain: {SECRET.upper()}\n")
    git(memory_repo, "add", "knowledge")
    git(memory_repo, "commit", "-qm", f"memory: note the vault ({SECRET})")
    head = git(memory_repo, "rev-parse", "HEAD").stdout.strip()

    for word, kind in (
        ("session_id", "a frontmatter key"),  # would strip the key from every transcript
        ("memory", "a transcript marker"),  # also .gitignore's memory.db, knowledge/memory
        ("Session_ID", "a frontmatter key"),
        ("conversations/2026", "a folder"),
    ):
        with pytest.raises(GitError, match=f"part of {kind}") as refused:
            plan_forget(memory_repo, text=word)
        assert "--force" in str(refused.value)
    done = cli("forget", "--yes", "--reason", "r", "memory", repo=memory_repo)
    assert done.returncode == 1 and "--force" in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(GitError, match="in no file"):
        plan_forget(memory_repo, text="not-in-this-repo-42")

    plan = plan_forget(memory_repo, text=SECRET)
    assert plan.found is not None
    assert plan.found.in_files == {path: 1, "knowledge/reference/vault.md": 1}
    assert plan.found.in_messages == 1 and plan.found.total == 3
    assert f"3 occurrences in the history: knowledge/reference/vault.md (1); {path} (1)" in (
        plan.summary()
    )
    any_case = plan_forget(memory_repo, text=SECRET.title(), ignore_case=True)
    assert any_case.found is not None and any_case.found.total == 4
    with pytest.raises(GitError, match="add --ignore-case"):
        plan_forget(memory_repo, text=SECRET.title())
    assert git(memory_repo, "rev-parse", "HEAD").stdout.strip() == head  # nothing rewritten

    done = cli("forget", "-i", "--yes", "--reason", "r", SECRET.title(), repo=memory_repo)
    assert done.returncode == 0, done.stderr
    assert "to forget: 4 occurrences" in done.stderr
    assert _every_trace(memory_repo, SECRET) == []
    assert note.read_text().count("[redacted:forgotten]") == 2


def _fact(repo: MemoryRepo, source: str, path: str, text: str) -> None:
    KnowledgeWriter(repo).apply(
        [
            KnowledgeChange(
                path=path,
                action="append",
                section="Facts",
                content=text,
                provenance=Provenance(source, datetime(2026, 3, 1, 9, 5, tzinfo=UTC), "test@1"),
            )
        ]
    )


@pytest.mark.slow
def test_forget_a_transcript_drops_what_was_extracted_from_it(memory_repo: MemoryRepo, git) -> None:
    keep = _session(memory_repo, "keep2", "we talked about the release", OTHER)
    gone = _session(memory_repo, "gone2", "private: the merger closes on 12 March")
    files = (MEMORY_FILE, "knowledge/reference/deals.md", "knowledge/projects/acme/context.md")
    private = ("Initech merger closes 12 March", "Initech pays 40 a share", "Initech is under NDA")
    public = ("Release train every Tuesday", "Deploys need two reviewers", "Acme ships on Mondays")
    for path, secret_fact, public_fact in zip(files, private, public, strict=True):
        _fact(memory_repo, gone, path, secret_fact)
        _fact(memory_repo, keep, path, public_fact)
    git(memory_repo, "add", "knowledge")
    git(memory_repo, "commit", "-qm", "memory: extracted")
    _fact(memory_repo, keep, files[1], "Hotfixes skip the release train")
    git(memory_repo, "commit", "-qam", "memory: more")  # the private entry, in a second version

    with pytest.raises(GitError, match="a pattern, not a transcript"):
        plan_forget(memory_repo, transcript="raw/conversations/**/*gone2*.md")
    plan = plan_forget(memory_repo, transcript=gone.replace("raw/", "raw//./"))
    assert plan.transcript == gone and sorted(p for p, _ in plan.derived) == sorted(files)
    forget(memory_repo, transcript=gone.replace("raw/", "raw//"), reason="private", plan=None)

    assert git(memory_repo, "log", "--all", "--format=%H", "--", gone).stdout.strip() == ""
    assert _every_trace(memory_repo, "Initech") == []
    for path, public_fact in zip(files, public, strict=True):
        text = (memory_repo.root / path).read_text(encoding="utf-8")
        assert public_fact in text and "Initech" not in text, path
    assert (memory_repo.root / keep).exists()
    assert git(memory_repo, "status", "--porcelain").stdout == ""


def _forget_process(
    repo: MemoryRepo, secret_file: Path, *, terminal: int | None
) -> subprocess.CompletedProcess[bytes]:
    """`autopoiesis forget --stdin < SECRET_FILE` in a session of its own: with no
    controlling terminal, or with the pty TERMINAL (its slave fd) as its terminal."""

    def take_terminal() -> None:
        if terminal is not None:
            import fcntl
            import termios

            fcntl.ioctl(terminal, termios.TIOCSCTTY, 0)

    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    with secret_file.open("rb") as stdin:
        return subprocess.run(
            [sys.executable, "-P", "-m", "autopoiesis", "forget", "--stdin", "--reason", "r"],
            stdin=stdin,
            capture_output=True,
            cwd=repo.root,
            env=env,
            start_new_session=True,
            preexec_fn=take_terminal,
            pass_fds=() if terminal is None else (terminal,),
            timeout=120,
        )


@pytest.mark.slow
def test_the_confirmation_is_asked_on_the_terminal_never_read_from_stdin(
    memory_repo: MemoryRepo, git, tmp_path: Path
) -> None:
    _session(memory_repo, "tty1", f"leak {SECRET}")
    head = git(memory_repo, "rev-parse", "HEAD").stdout.strip()
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET + "\n")

    alone = _forget_process(memory_repo, secret_file, terminal=None)
    assert alone.returncode == 1 and b"pass --yes" in alone.stderr
    assert git(memory_repo, "rev-parse", "HEAD").stdout.strip() == head

    master, slave = pty.openpty()
    try:
        os.write(master, b"y\n")  # the person at the terminal answers
        asked = _forget_process(memory_repo, secret_file, terminal=slave)
        shown = os.read(master, 4096)
    finally:
        os.close(master)
        os.close(slave)
    assert asked.returncode == 0, asked.stderr
    assert (
        b"Continue? [y/N]" in shown and b"to forget: 4 occurrences" in asked.stderr
    )  # its text, title, name, subject
    assert SECRET.encode() not in all_objects(memory_repo.root)
    assert re.match(r"maintenance: forget", git(memory_repo, "log", "-1", "--format=%s").stdout)


@pytest.mark.slow
def test_forget_removes_a_string_where_a_quoted_value_escapes_it(memory_repo: MemoryRepo) -> None:
    """A string holding `"` or `\\` is written escaped where a frontmatter or JSON value
    quotes it (a session's topic, tags, working folder): forget removed the plain form,
    found no trace of it, and reported success while `Kq\\"7\\\\Mango...` stayed in HEAD
    and history. The escaped forms go with it now."""
    secret = 'Kq"7\\Mango-Vortex-3141'
    cap = ConversationCapture(memory_repo)
    s = Session(
        "ses_quoted",
        started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
        topic="code " + secret,
        tags=(secret,),
        cwd="/home/me/" + secret,
    )
    cap.on_session_start(s)
    cap.on_message(s, "user", secret)
    assert cap.on_session_end(s) is not None
    escaped = json.dumps(secret)[1:-1].encode()
    assert escaped in all_objects(memory_repo.root)  # the frontmatter holds the escaped form
    forget(memory_repo, text=secret, reason="leaked")
    objects = all_objects(memory_repo.root)
    assert secret.encode() not in objects and escaped not in objects
    assert b"Mango-Vortex" not in objects


@pytest.mark.slow
def test_forget_a_transcript_leaves_no_word_of_it_in_messages_or_the_record(
    memory_repo: MemoryRepo,
) -> None:
    """The transcript and its entries left the files, but its words stayed in the history:
    the commit messages quoted its slug and topic ("conversation: affair-with-ramona-…",
    "Session: raw/…", "From 1009-ses_a-affair-…") and the entries extracted from it
    ("memory: Affair with Ramona Quillfeather: I am having…"), and knowledge/.extracted
    named its path on a line an extractor. Now those go too; another session's stay."""
    from autopoiesis.knowledge.extract import KnowledgeExtractor

    keep = _session(memory_repo, "keep2", "We decided to keep the billing ledger in Postgres.")
    cap = ConversationCapture(memory_repo)
    s = Session(
        "ses_q1",
        started=datetime(2026, 3, 1, 10, 0, tzinfo=UTC),
        topic="affair with Ramona Quillfeather",
    )
    cap.on_session_start(s)
    cap.on_message(s, "user", "I am having an affair with Ramona Quillfeather.")
    gone = cap.on_session_end(s).path
    with KnowledgeExtractor(memory_repo) as ex:
        ex.commit(ex.extract_pending())
    history = subprocess.run(
        ["git", "log", "--all", "-p", "--format=%B"],
        cwd=memory_repo.root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "Quillfeather" in history.stdout and gone in history.stdout
    forget(memory_repo, transcript=gone, reason="private")
    objects = all_objects(memory_repo.root)
    for word in (b"Quillfeather", b"affair", b"Affair", gone.encode()):
        assert word not in objects, word
    assert keep.encode() in (memory_repo.root / "knowledge/.extracted").read_bytes()
    messages = subprocess.run(
        ["git", "log", "--format=%B"], cwd=memory_repo.root, capture_output=True, text=True
    ).stdout
    assert "billing ledger" in messages.lower() or "keep2" in messages


def test_forget_a_string_that_is_not_utf8_matches_the_bytes_typed(
    memory_repo: MemoryRepo, git, cli: Cli
) -> None:
    """A string with bytes that are not UTF-8 (a Latin-1 secret typed in a Latin-1
    terminal, or piped in) died with UnicodeEncodeError before anything was looked at. It
    is matched as the bytes the user gave: a log committed as it was loses them in every
    commit; where they are nowhere, the refusal says the memory's text is UTF-8."""
    log = memory_repo.root / "attachments" / "server.log"
    log.write_bytes(b"login ok\nuser=bob password=passw\xe9rd123\n")
    git(memory_repo, "add", "attachments/server.log")
    git(memory_repo, "commit", "-qm", "a log")
    latin1 = os.fsdecode(b"passw\xe9rd123")  # the argument as Python reads it from argv
    done = cli("forget", "--yes", "--reason", "leaked", latin1, repo=memory_repo, process=True)
    assert done.returncode == 0, done.stderr
    assert log.read_bytes() == b"login ok\nuser=bob password=[redacted:forgotten]\n"
    assert b"passw\xe9rd123" not in all_objects(memory_repo.root)
    # read from stdin, as bytes: never found in UTF-8 text, and it says why
    piped = cli(
        "forget", "--yes", "--reason", "r", "--stdin", repo=memory_repo, input=b"\xff\xfe\x80bad!!"
    )
    assert piped.returncode == 1 and "Traceback" not in piped.stderr
    assert "is in no file" in piped.stderr and "not UTF-8 text" in piped.stderr


@pytest.mark.slow
def test_forget_removes_the_form_a_sentence_begins_with(memory_repo: MemoryRepo) -> None:
    """A message that begins with the secret makes a journal line and a commit's
    "Learned:" title that begin with it capitalised ("Xylofakesecret-4821 is what ..."):
    forget removed the form typed, reported success, and left that one."""
    from autopoiesis.knowledge.extract import KnowledgeExtractor

    secret = "xylofakesecret-4821"
    _session(memory_repo, "ses_cap", f"{secret} is what I typed into the staging box yesterday")
    with KnowledgeExtractor(memory_repo) as ex:
        ex.commit(ex.extract_pending())
    assert b"Xylofakesecret-4821" in all_objects(memory_repo.root)
    forget(memory_repo, text=secret, reason="leaked")
    objects = all_objects(memory_repo.root)
    assert b"Xylofakesecret-4821" not in objects and secret.encode() not in objects


@pytest.mark.slow
def test_forget_a_transcript_leaves_another_session_of_the_same_slug_alone(
    memory_repo: MemoryRepo,
) -> None:
    """Two sessions opened with the same words share a slug: scrubbing the forgotten one's
    slug everywhere rewrote the other's `conversation:` subject and made its Session line
    name a path that does not exist. Only the forgotten session's own commit loses it."""
    gone = _session(memory_repo, "ses_one", "database migration plan for the ledger")
    kept = _session(memory_repo, "ses_two", "database migration plan for the ledger")
    forget(memory_repo, transcript=gone, reason="private")
    log = subprocess.run(
        ["git", "log", "--format=%B"], cwd=memory_repo.root, capture_output=True, text=True
    ).stdout
    assert f"Session: {kept}" in log and "conversation: database-migration-plan" in log
    assert gone not in log


# A forget killed with SIGKILL at a chosen point: a sitecustomize on the killed process's
# path (and its children's: git-filter-repo is one) kills the whole process group once a
# subprocess whose command holds the marker has finished.
_KILLER = """
import os, signal, subprocess
_marker = os.environ.get("AP_TEST_KILL_AFTER")
if _marker:
    _wait = subprocess.Popen.wait
    def _wait_then_kill(self, *args, **kwargs):
        code = _wait(self, *args, **kwargs)
        command = self.args if isinstance(self.args, str) else " ".join(map(str, self.args))
        if _marker in command:
            os.killpg(0, signal.SIGKILL)
        return code
    subprocess.Popen.wait = _wait_then_kill
"""


def _forget_killed_after(repo: MemoryRepo, tmp_path: Path, marker: str, *args: str) -> None:
    """`autopoiesis forget ARGS` killed (its process group, SIGKILL) right after the
    subprocess whose command holds MARKER has finished."""
    killer = tmp_path / "killer"
    killer.mkdir(exist_ok=True)
    (killer / "sitecustomize.py").write_text(_KILLER, encoding="utf-8")
    shared_tmp = tmp_path / "shared-tmp"
    shared_tmp.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(killer), str(PROJECT_ROOT)]),
        "AP_TEST_KILL_AFTER": marker,
        "TMPDIR": str(shared_tmp),
    }
    done = subprocess.run(
        [sys.executable, "-P", "-m", "autopoiesis", "-C", str(repo.root), "forget", *args],
        capture_output=True,
        env=env,
        start_new_session=True,  # the group killed is the forget's, not the tests'
    )
    assert done.returncode == -9, done.stderr
    # the machine's shared temporary folder holds no copy of the text being forgotten
    # (filter-repo's rules, escaped as a regex, spell its words): killed, nothing cleared it
    left = [p for p in shared_tmp.rglob("*") if p.is_file() and b"harpoon" in p.read_bytes()]
    assert left == []


def _records(git, repo: MemoryRepo) -> list[str]:
    return git(repo, "log", "--all", "--format=%H", "--grep=^maintenance: forget ").stdout.split()


@pytest.mark.slow
def test_forget_killed_inside_the_rewrite_is_finished_by_the_same_forget_again(
    memory_repo: MemoryRepo, git, cli: Cli, tmp_path: Path
) -> None:
    """Killed after git-filter-repo re-pointed the refs, before it reset the work tree and
    before forget pruned the old objects and committed its record: the old files read as
    changes to commit, the secret is in the reflogs, nothing records the rewrite (a sync
    would merge the old history back), and the same forget found "nothing to forget"."""
    _session(memory_repo, "leak2", f"the vault phrase is {SECRET}", OTHER)
    _forget_killed_after(memory_repo, tmp_path, "fast-import", SECRET, "-m", "leaked", "-y")
    # the refs are rewritten; the work tree and the index are still the old history's
    assert git(memory_repo, "status", "--porcelain").stdout != ""

    doctor = cli("doctor", repo=memory_repo)
    assert "a forget begun" in doctor.stdout and "was stopped before it finished" in doctor.stdout
    other = cli("forget", OTHER, "-m", "another", "-y", repo=memory_repo)
    assert other.returncode == 1 and "was stopped before it finished" in other.stderr
    assert "Run that same `autopoiesis forget` again" in other.stderr

    again = cli("forget", SECRET, "-m", "leaked", "-y", repo=memory_repo)
    assert again.returncode == 0, again.stderr
    assert SECRET.encode() not in all_objects(memory_repo.root)
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    assert len(_records(git, memory_repo)) == 1
    rewrites = json.loads((memory_repo.state_dir / "verify" / "rewrites.json").read_text())
    assert [r["commit"] for r in rewrites["rewrites"]] == _records(git, memory_repo)
    assert "was stopped" not in cli("doctor", repo=memory_repo).stdout
    # the killed forget's rule files, which spelled the secret, went with the one that finished
    rules = memory_repo.root / ".git" / "autopoiesis" / "forget-rules"
    assert not rules.exists()


@pytest.mark.slow
def test_forget_killed_after_its_record_commit_is_recorded_once(
    memory_repo: MemoryRepo, git, cli: Cli, tmp_path: Path
) -> None:
    _session(memory_repo, "leak3", f"the vault phrase is {SECRET}", OTHER)
    _forget_killed_after(
        memory_repo, tmp_path, "commit --allow-empty", SECRET, "-m", "leaked", "-y"
    )
    again = cli("forget", SECRET, "-m", "leaked", "-y", repo=memory_repo)
    assert again.returncode == 0, again.stderr
    assert len(_records(git, memory_repo)) == 1
    rewrites = json.loads((memory_repo.state_dir / "verify" / "rewrites.json").read_text())
    assert [r["commit"] for r in rewrites["rewrites"]] == _records(git, memory_repo)


@pytest.mark.slow
def test_forget_of_a_transcript_killed_after_removing_its_entries_still_drops_them_from_history(
    memory_repo: MemoryRepo, git, cli: Cli, tmp_path: Path
) -> None:
    """Killed after it committed the removal of the transcript's entries, before the
    rewrite: run again, it found no entry citing the transcript any more, and left every
    older version of them in the history."""
    keep = _session(memory_repo, "keep4", "we talked about the release", OTHER)
    gone = _session(memory_repo, "gone4", "private: the merger closes on 12 March")
    _fact(memory_repo, gone, "knowledge/reference/deals.md", "Initech merger closes 12 March")
    _fact(memory_repo, keep, "knowledge/reference/deals.md", "Release train every Tuesday")
    git(memory_repo, "add", "knowledge")
    git(memory_repo, "commit", "-qm", "memory: extracted")
    args = ("--transcript", gone, "-m", "private", "-y")
    _forget_killed_after(memory_repo, tmp_path, "maintenance: drop", *args)
    assert "Initech" not in (memory_repo.root / "knowledge/reference/deals.md").read_text()

    again = cli("forget", *args, repo=memory_repo)
    assert again.returncode == 0, again.stderr
    assert git(memory_repo, "log", "--all", "--format=%H", "--", gone).stdout.strip() == ""
    assert _every_trace(memory_repo, "Initech") == []
    assert (
        "Release train every Tuesday"
        in git(memory_repo, "show", "HEAD:knowledge/reference/deals.md").stdout
    )
    assert len(_records(git, memory_repo)) == 1


def test_forget_names_a_file_of_raw_that_is_no_transcript(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    # given exactly as `git ls-files raw` shows it: the message says what the file is not,
    # not how to spell its path
    refused = cli(
        "forget", "--transcript", "raw/conversations/.gitkeep", "-m", "x", "-y", repo=memory_repo
    )
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "raw/conversations/.gitkeep is in raw/ but is no transcript" in refused.stderr
    assert "git ls-files 'raw/conversations/*.md'" in refused.stderr
    outside = cli("forget", "--transcript", MEMORY_FILE, "-m", "x", "-y", repo=memory_repo)
    assert outside.returncode == 1
    assert f"{MEMORY_FILE} is not under raw/ and is no transcript" in outside.stderr
    assert (memory_repo.root / "raw/conversations/.gitkeep").exists()


def test_forget_clears_the_generation_a_rotated_log_keeps(memory_repo: MemoryRepo) -> None:
    """The harness log (every hook call's payload, redacted) and the daemon's log are
    rotated to NAME.1 past their cap; forget deletes every log, as any may quote what is
    forgotten, and must delete the generation before each too."""
    gone = _session(memory_repo, "gone2", "this one goes", f"it said {SECRET}")
    harness = memory_repo.state_file("harness_log")
    harness.parent.mkdir(parents=True, exist_ok=True)
    harness.write_text('{"event":"UserPromptSubmit"}\n', encoding="utf-8")
    rotated = harness.with_name(harness.name + ".1")
    rotated.write_text('{"event":"UserPromptSubmit","prompt_words":12}\n', encoding="utf-8")
    report = forget(memory_repo, transcript=gone, reason="private")
    assert not harness.exists() and not rotated.exists()
    assert str(rotated.relative_to(memory_repo.root)) in report.cleared


def test_forget_commits_the_removal_of_its_entries_and_not_an_entry_written_meanwhile(
    memory_repo: MemoryRepo, git, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`forget --transcript` removed the entries extracted from the transcript, then
    committed them with the writer's lock let go: an agent's `remember` into the same
    MEMORY.md in between was committed as "drop N knowledge entries" (and rewritten into
    history by the forget), its own commit left empty. The forget holds the writer's lock
    (before the git lock, as a merge does) through its removal and its commit."""
    import threading

    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory
    from tests.knowledge.helpers import Waits

    gone = _session(memory_repo, "gone5", "private: the merger closes on 12 March")
    _fact(memory_repo, gone, MEMORY_FILE, "Initech merger closes 12 March")
    git(memory_repo, "add", "knowledge")
    git(memory_repo, "commit", "-qm", "memory: extracted")
    waits = Waits(monkeypatch)
    removed, go = threading.Event(), threading.Event()
    remove = KnowledgeWriter.remove_entries_from

    def remove_then_wait(writer: KnowledgeWriter, source: str, *, dry_run: bool = False):
        found = remove(writer, source, dry_run=dry_run)
        if not dry_run:  # written: its commit waits until the other writer is under way
            removed.set()
            go.wait()
        return found

    monkeypatch.setattr(KnowledgeWriter, "remove_entries_from", remove_then_wait)
    results: dict[str, object] = {}

    def run(name: str, call) -> None:
        try:
            results[name] = call()
        except Exception as exc:  # the assertions name it
            results[name] = exc

    def remember() -> object:
        tools = MemoryTools(Memory(MemoryRepo(memory_repo.root)))
        try:
            return tools.remember(MEMORY_FILE, "Deploys go out on Tuesdays.", source="ses_two")
        finally:
            tools.close()

    forgetting = waits.start(
        "forget",
        run,
        "forget",
        lambda: forget(MemoryRepo(memory_repo.root), transcript=gone, reason="private"),
    )
    removed.wait()
    remembering = waits.start("remember", run, "remember", remember)
    waited = waits.until_waiting("remember")
    go.set()
    forgetting.join()
    remembering.join()
    remembered = results["remember"]
    assert not isinstance(results["forget"], Exception), results
    assert isinstance(remembered, dict) and remembered["commit"], remembered
    drop = git(memory_repo, "log", "--format=%H", "--grep=^maintenance: drop").stdout.split()
    assert len(drop) == 1
    assert "Deploys go out" not in git(memory_repo, "show", "--format=", drop[0]).stdout
    assert "Deploys go out" in git(memory_repo, "show", "--format=", remembered["commit"]).stdout
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    assert waited == "knowledge-writer"  # the entry was written after the forget's commit


@pytest.mark.slow
def test_forget_names_a_team_memory_that_still_holds_the_string(
    memory_repo: MemoryRepo, git, tmp_path: Path, cli: Cli
) -> None:
    """A secret in a note shared with a team: forget rewrote this memory and said it was
    done, while the team's repository (mounted under shared/), its remote and the search
    index still held it. forget names the team, says what its keeper must do, and a
    second forget says where the string is rather than that it is nowhere."""
    seed = tmp_path / "team-seed"
    (seed / "knowledge/reference").mkdir(parents=True)
    (seed / "knowledge/reference/a.md").write_text("# A\n")
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "seed")
    team = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(team)], check=True)
    assert cli("team", "add", "billing", team.as_uri(), repo=memory_repo).returncode == 0
    note = memory_repo.root / "knowledge/reference/vault.md"
    note.write_text(
        "---\ntype: reference\n---\n# Vault\n\n"
        f"- 2026-02-20: the unlock phrase is {SECRET} {{id: 20260220-1400-eeeeee}}\n"
    )
    assert cli("commit", "-m", "memory: vault", repo=memory_repo).returncode == 0
    shared = cli("share", "knowledge/reference/vault.md", "--team", "billing", repo=memory_repo)
    assert shared.returncode == 0, shared.stderr
    done = cli("forget", "--stdin", "--yes", "--reason", "leaked", repo=memory_repo, input=SECRET)
    assert done.returncode == 0, done.stderr
    assert "shared/billing still holds it" in done.stderr and "team remove" in done.stderr
    again = cli("forget", "--stdin", "--yes", "--reason", "leaked", repo=memory_repo, input=SECRET)
    assert again.returncode == 1
    assert "no file, file name or message of this memory's history" in again.stderr
    assert "shared/billing holds it" in again.stderr
