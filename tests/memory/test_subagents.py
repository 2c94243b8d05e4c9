"""Sub-agent checkouts with a real sparse worktree: only the folders the sub-agent needs,
the parent's hooks, settings and index carried over, the checkout's project known, and
its writes (knowledge and a transcript) back through a merge."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import InvalidArgumentError
from autopoiesis.index import SearchIndex
from autopoiesis.memory.facade import Memory

pytestmark = pytest.mark.slow


def _git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=where, capture_output=True, text=True, check=True
    ).stdout


def _seed(repo: MemoryRepo) -> None:
    notes = {
        "knowledge/projects/billing/context.md": "# billing\n\n- Invoices retry three times.\n",
        "knowledge/projects/search/context.md": "# search\n\n- The ranking uses RRF.\n",
        "knowledge/procedures/deploys.md": "# Deploys\n\n- Deploy invoices on Tuesdays.\n",
        "knowledge/people/ann.md": "# Ann\n\n- Ann owns invoices.\n",
    }
    for rel, text in notes.items():
        path = repo.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    Memory(repo).commit("memory: seed")
    with SearchIndex(repo) as index:
        index.rebuild_full()


def test_a_sub_agent_gets_its_folders_and_its_work_comes_back(
    memory_repo: MemoryRepo,
    tmp_path: Path,
    cli,
) -> None:
    _seed(memory_repo)
    parent = Memory(memory_repo)
    refused = cli("subagent", "checkout", "x", "--paths", "knowledge/private", repo=parent.root)
    assert refused.returncode != 0 and "private notes are not given" in refused.stderr
    made = cli("subagent", "checkout", "reviewer", "--project", "billing", repo=parent.root)
    assert made.returncode == 0, made.stderr
    (c,) = parent.subagents.list()
    where = c.path
    assert c.branch == "subagent/reviewer" and c.project == "billing"
    # only what it needs: its project, procedures, identity, MEMORY.md, topics, the config
    assert (where / "knowledge/projects/billing/context.md").is_file()
    assert (where / "knowledge/procedures/deploys.md").is_file()
    assert (where / "knowledge/identity/SOUL.md").is_file()
    assert (where / "memory-config.yaml").is_file()
    assert not (where / "knowledge/projects/search").exists()
    assert not (where / "knowledge/people/ann.md").exists()
    assert not (where / "raw").exists() or not list((where / "raw").rglob("*.md"))

    # the parent's hooks and index carry over; the checkout searches its own files
    def hooks(folder: Path) -> Path:
        return (folder / _git(folder, "rev-parse", "--git-path", "hooks").strip()).resolve()

    assert hooks(where) == hooks(parent.root)
    assert (hooks(where) / "pre-commit").is_file()
    child = Memory(where)
    assert child.repo.index_path.exists()
    paths = {r.path for r in child.search("invoices")}
    assert "knowledge/projects/billing/context.md" in paths
    assert "knowledge/people/ann.md" not in paths
    # its folder maps to its project; the parent's to none
    assert child.project_here(str(where)) == "billing"
    assert parent.project_here(str(parent.root)) is None

    # the sub-agent writes a fact and a session is captured in its checkout
    from datetime import UTC, datetime

    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.writer import KnowledgeWriter

    KnowledgeWriter(child.repo).apply(
        [
            KnowledgeChange(
                "knowledge/projects/billing/context.md",
                "append",
                "Decisions",
                "Invoice retries back off exponentially from now on.",
                Provenance("raw/conversations/x.md", datetime(2026, 3, 1, tzinfo=UTC), "t@1"),
            )
        ]
    )
    session = tmp_path / "session.json"
    session.write_text(
        json.dumps(
            [
                {
                    "session_id": "ses_sub1",
                    "started": "2026-03-01T10:00:00Z",
                    "messages": [
                        {
                            "role": "user",
                            "content": "Review the invoice retries.",
                            "timestamp": "2026-03-01T10:00:00Z",
                        },
                        {
                            "role": "assistant",
                            "content": "They should back off.",
                            "timestamp": "2026-03-01T10:01:00Z",
                        },
                    ],
                }
            ]
        ),
        encoding="utf-8",
    )
    imported = child.import_files([session], "neutral")
    assert imported.imported and not imported.refused
    listed = json.loads(cli("subagent", "list", "--json", repo=parent.root).stdout)
    assert listed[0]["agent"] == "reviewer"

    # merge: what it left uncommitted is committed, then its branch merged into the memory
    merged = cli("subagent", "merge", "reviewer", repo=parent.root)
    assert merged.returncode == 0, merged.stderr
    text = (parent.root / "knowledge/projects/billing/context.md").read_text(encoding="utf-8")
    assert "back off exponentially" in text
    assert list((parent.root / "raw/conversations").rglob("*ses_sub1*.md"))
    assert "knowledge/people/ann.md" in _git(parent.root, "ls-files")  # nothing lost
    assert parent.verify().ok
    assert cli("subagent", "remove", "reviewer", repo=parent.root).returncode == 0
    assert not where.exists() and parent.subagents.list() == []


def test_the_cli_runs_in_a_sub_agents_checkout(memory_repo: MemoryRepo, cli) -> None:
    """docs/subagents.md: the sub-agent's harness starts in its checkout (or gives `-C`
    with it). The checkout leaves raw/ out, and every command there was refused as "not a
    memory repository (no raw/ and knowledge/)": no search, no commit, no capture."""
    _seed(memory_repo)
    made = cli("subagent", "checkout", "reviewer", "--project", "billing", repo=memory_repo)
    assert made.returncode == 0, made.stderr
    (c,) = Memory(memory_repo).subagents.list()
    where = c.path
    assert not (where / "raw").exists()

    found = cli("search", "invoices", repo=where)
    assert found.returncode == 0, found.stderr
    assert "knowledge/projects/billing/context.md" in found.stdout
    note = where / "knowledge/projects/billing/context.md"
    note.write_text(note.read_text(encoding="utf-8") + "- Retries back off.\n", encoding="utf-8")
    committed = cli("commit", cwd=where)  # no -C: the git top level of the folder it runs in
    assert committed.returncode == 0, committed.stderr
    events = "\n".join(
        json.dumps(e)
        for e in (
            {"event": "session_start", "session_id": "ses_sub2", "started": "2026-03-01T10:00:00Z"},
            {"event": "message", "role": "user", "content": "Review the invoice retries."},
            {"event": "session_end", "ended": "2026-03-01T10:05:00Z"},
        )
    )
    captured = cli("capture", input=events + "\n", repo=where)
    assert captured.returncode == 0, captured.stderr
    ahead = _git(memory_repo.root, "log", "--format=%s", "main..subagent/reviewer")
    assert "conversation:" in ahead and "memory:" in ahead


def _billing_checkout(cli, parent: Memory, agent: str):
    """AGENT's checkout of project billing, made through the CLI as a harness makes it."""
    made = cli("subagent", "checkout", agent, "--project", "billing", repo=parent.root)
    assert made.returncode == 0, made.stderr
    (c,) = parent.subagents.list()
    return c


def _session_events(session_id: str, text: str, started: str) -> str:
    return "\n".join(
        json.dumps(e)
        for e in (
            {"event": "session_start", "session_id": session_id, "started": started},
            {"event": "message", "role": "user", "content": text},
            {"event": "session_end"},
        )
    )


def test_a_session_id_the_memory_holds_is_refused_in_a_sub_agents_checkout(
    memory_repo: MemoryRepo, cli
) -> None:
    """A checkout leaves raw/ out, so capture there did not see the memory's transcripts: a
    session id the memory already held was written anew, its commit refused by the hook,
    the transcript left uncommitted. It is now refused at its session_start, as in the
    memory itself, and nothing is written; a new session id is filed as the sub-agent's."""
    held = cli(
        "capture",
        input=_session_events("ses_dup", "hello", "2026-03-01T09:00:00Z"),
        repo=memory_repo,
    )
    assert held.returncode == 0, held.stderr
    assert cli("subagent", "checkout", "reviewer", repo=memory_repo).returncode == 0
    (c,) = Memory(memory_repo).subagents.list()
    where = c.path
    for started in ("2026-03-01T09:00:00Z", "2026-03-02T09:00:00Z"):  # its day, or another
        again = cli("capture", input=_session_events("ses_dup", "again", started), repo=where)
        assert again.returncode == 1 and "Traceback" not in again.stderr
        assert "session ses_dup was already captured in raw/conversations/2026/03/01/" in (
            again.stderr
        )
        assert "start the continuation under a new session_id" in again.stderr
    assert not (where / "raw").exists() or not list((where / "raw").rglob("*ses_dup*"))
    assert _git(where, "status", "--porcelain") == ""
    new = cli("capture", input=_session_events("ses_own", "mine", started), repo=where)
    assert new.returncode == 0, new.stderr
    assert "conversation:" in _git(
        memory_repo.root, "log", "--format=%s", "main..subagent/reviewer"
    )


def test_worktrees_of_the_memory_and_of_a_code_repository_map_to_their_projects(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    memory = Memory(memory_repo)
    plain = tmp_path / "memory-wt"
    _git(memory.root, "worktree", "add", "-q", "-b", "other", str(plain))
    assert memory.project_here(str(plain)) is None
    assert Memory(plain).project_here(str(plain)) is None
    code = tmp_path / "Shop_API"
    code.mkdir()
    _git(code, "init", "-q")
    _git(code, "commit", "-q", "--allow-empty", "-m", "init")
    linked = tmp_path / "shop-feature"
    _git(code, "worktree", "add", "-q", "-b", "feature", str(linked))
    assert memory.project_here(str(linked / "sub")) == "shop-api"
    assert Memory(plain).project_here(str(linked)) == "shop-api"


def test_a_sub_agent_named_after_a_secret_gets_no_branch(memory_repo: MemoryRepo, cli, git) -> None:
    """Its name names its branch, pushed and shown as it is: one that holds a secret (a
    Slack token is lower-case letters, digits and `-`, as an agent's name) is refused, as
    a tag's or an explore branch's is."""
    token = "xoxb-2048123456-2048123456789-xq9vb2mk7pl4nr8st1wy6za3"
    done = cli("subagent", "checkout", token, repo=memory_repo)
    assert done.returncode != 0
    assert "holds what looks like a secret (subagent/[redacted:slack_token])" in done.stderr
    assert token not in done.stderr
    assert token not in git(memory_repo, "for-each-ref").stdout
    assert Memory(memory_repo).subagents.list() == []


def test_a_private_note_in_a_sub_agents_folders_is_refused_before_anything_is_made(
    memory_repo: MemoryRepo, cli, git
) -> None:
    """A private path inside a folder a sub-agent gets (`private.paths:
    knowledge/procedures/hr/**`): the sparse checkout takes whole folders, so the note
    was the sub-agent's (in clear where git-crypt was not set up; with git-crypt, the
    worktree holds no key and the checkout died half-way on git-crypt's error, leaving a
    branch and a worktree). Now the checkout is refused first, naming the note."""
    (memory_repo.root / ".gitattributes").write_text(
        "knowledge/procedures/hr/** filter=git-crypt diff=git-crypt\n", encoding="utf-8"
    )
    note = memory_repo.root / "knowledge/procedures/hr/bob.md"
    note.parent.mkdir(parents=True)
    note.write_text("# Bob\n\n- Bob leaves in March.\n", encoding="utf-8")
    git(memory_repo, "add", "-A")
    git(memory_repo, "commit", "-qm", "hr")

    done = cli("subagent", "checkout", "reviewer", repo=memory_repo)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "knowledge/procedures/hr/bob.md is private" in done.stderr
    assert "subagent/reviewer" not in git(memory_repo, "branch").stdout
    assert not Memory(memory_repo).subagents.folder("reviewer").exists()


def test_a_sub_agent_that_writes_beyond_its_folders_is_refused_at_merge(
    memory_repo: MemoryRepo, tmp_path: Path, cli, git
) -> None:
    """A sub-agent's checkout is a worktree, where any git command commits anything: its
    branch changed the config, .gitattributes and another project's notes, and `merge`
    brought all of it into the memory. Now the merge is refused first, naming those files
    and saying how to leave them out; the memory is unchanged; once they are undone as
    the message says, its own work (its project's note, a new transcript) merges."""
    _seed(memory_repo)
    parent = Memory(memory_repo)
    c = _billing_checkout(cli, parent, "rogue")
    where = c.path
    # its own work: a note in its project, a transcript of its session
    note = where / "knowledge/projects/billing/context.md"
    note.write_text(note.read_text(encoding="utf-8") + "- Retries back off.\n", encoding="utf-8")
    session = tmp_path / "session.json"
    session.write_text(
        json.dumps(
            [
                {
                    "session_id": "ses_rogue1",
                    "started": "2026-03-01T10:00:00Z",
                    "messages": [
                        {
                            "role": "user",
                            "content": "Check the retries.",
                            "timestamp": "2026-03-01T10:00:00Z",
                        },
                        {
                            "role": "assistant",
                            "content": "They back off.",
                            "timestamp": "2026-03-01T10:01:00Z",
                        },
                    ],
                }
            ]
        ),
        encoding="utf-8",
    )
    assert Memory(where).import_files([session], "neutral").imported
    # ... and what it may not write
    (where / "memory-config.yaml").write_text("llm:\n  provider: openai\n", encoding="utf-8")
    (where / ".gitattributes").write_text("* -filter\n", encoding="utf-8")
    other = where / "knowledge/projects/search/context.md"
    other.parent.mkdir(parents=True)
    other.write_text("# search\n\n- The ranking is random.\n", encoding="utf-8")
    git(where, "add", "-A", "--sparse")
    git(where, "commit", "-qm", "work")
    before = git(parent.root, "rev-parse", "HEAD").stdout

    refused = cli("subagent", "merge", "rogue", repo=parent.root)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "subagent/rogue changes what a sub-agent may not" in refused.stderr
    for name in (".gitattributes", "memory-config.yaml", "knowledge/projects/search/context.md"):
        assert name in refused.stderr
    assert (
        "knowledge/projects/billing/context.md"
        not in refused.stderr.split("may not:")[1].split(".")[0]
    )
    assert "nothing was merged" in refused.stderr
    assert git(parent.root, "rev-parse", "HEAD").stdout == before
    assert not git(parent.root, "status", "--porcelain").stdout.strip()
    assert "The ranking uses RRF" in (
        parent.root / "knowledge/projects/search/context.md"
    ).read_text(encoding="utf-8")

    # the message's own commands leave them out; then its work merges
    undo = refused.stderr.split("(`", 1)[1].split("`", 1)[0]
    subprocess.run(undo, shell=True, check=True, cwd=parent.root)
    git(where, "commit", "-qm", "leave out what is not mine")
    merged = cli("subagent", "merge", "rogue", repo=parent.root)
    assert merged.returncode == 0, merged.stderr
    assert "Retries back off" in (parent.root / "knowledge/projects/billing/context.md").read_text(
        encoding="utf-8"
    )
    assert "provider: openai" not in (parent.root / "memory-config.yaml").read_text(
        encoding="utf-8"
    )
    assert "* -filter" not in (parent.root / ".gitattributes").read_text(encoding="utf-8")
    assert "random" not in (parent.root / "knowledge/projects/search/context.md").read_text(
        encoding="utf-8"
    )
    assert list((parent.root / "raw/conversations").rglob("*ses_rogue1*.md"))
    assert parent.verify().ok


def test_what_a_sub_agent_may_write() -> None:
    """Its folders, a new transcript and its sessions' extraction; never a private note
    (even inside its folders), a changed transcript, the top-level files or archive/."""
    from autopoiesis.memory.subagents import may_write

    folders, private = ("knowledge/projects/billing", "topics"), ["knowledge/private/**", "secret*"]
    assert may_write("knowledge/projects/billing/context.md", "M", folders, private)
    assert may_write("raw/conversations/2026/03/01/1000-ses_a-x.md", "A", folders, private)
    assert may_write("knowledge/journal/2026-03-01.md", "M", folders, private)
    assert may_write("knowledge/.extracted", "M", folders, private)
    assert not may_write("raw/conversations/2026/03/01/1000-ses_a-x.md", "M", folders, private)
    assert not may_write("knowledge/projects/billing/secret.md", "A", folders, private)
    assert not may_write("knowledge/private/x.md", "A", folders, private)
    assert not may_write("knowledge/journal/2026-03-01.md", "D", folders, private)
    for path in ("memory-config.yaml", ".gitattributes", "archive/knowledge/x.md", "raw/x.md"):
        assert not may_write(path, "M", folders, private)


def test_a_note_outside_a_sub_agents_folders_keeps_the_memorys_entries(
    memory_repo: MemoryRepo, cli
) -> None:
    """Extracting a sub-agent's session files what it learns about a person under
    knowledge/people/, which its checkout leaves out: the writer took the note for a new
    one, so the merge replaced the memory's note with the sub-agent's one entry. Now the
    writer reads what the checkout left out from git, and both are kept."""
    from datetime import UTC, datetime

    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.writer import KnowledgeWriter

    _seed(memory_repo)
    parent = Memory(memory_repo)
    c = _billing_checkout(cli, parent, "reviewer")
    assert not (c.path / "knowledge/people/ann.md").exists()
    KnowledgeWriter(MemoryRepo(c.path)).apply(
        [
            KnowledgeChange(
                "knowledge/people/ann.md",
                "append",
                "Context",
                "Ann reviews every invoice change.",
                Provenance("raw/conversations/x.md", datetime(2026, 3, 1, tzinfo=UTC), "t@1"),
            )
        ]
    )
    merged = cli("subagent", "merge", "reviewer", repo=parent.root)
    assert merged.returncode == 0, merged.stderr
    text = (parent.root / "knowledge/people/ann.md").read_text(encoding="utf-8")
    assert "Ann owns invoices." in text and "Ann reviews every invoice change." in text


def test_a_checkouts_project_is_one_the_memory_knows_as_it_names_it(
    memory_repo: MemoryRepo,
) -> None:
    """Memory.subagents.checkout took PROJECT as written (only the CLI asked the memory
    first): `../../etc` went into the sparse checkout's folders and the project its
    worktree declares, `Billing` named a folder that is not there."""
    _seed(memory_repo)
    subagents = Memory(memory_repo).subagents
    with pytest.raises(InvalidArgumentError, match="no project '../../etc'"):
        subagents.checkout("climber", project="../../etc")
    assert not subagents.folder("climber").exists()
    c = subagents.checkout("cased", project="Billing")
    assert c.project == "billing" and "knowledge/projects/billing" in c.folders
    assert (c.path / "knowledge/projects/billing/context.md").is_file()
