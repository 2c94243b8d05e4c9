"""`autopoiesis mcp`, driven by the MCP Python SDK's own client over stdio: the server is
`python -m autopoiesis -C REPO mcp` in a subprocess, as Claude Code, Codex or Cursor
start it. Every tool, bad arguments, and attempts to read or write outside the memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

import autopoiesis
from autopoiesis.core.paths import MemoryRepo

pytestmark = pytest.mark.slow

PROJECT_ROOT = str(Path(autopoiesis.__file__).resolve().parent.parent)
TOOLS = {
    "search",
    "read",
    "compile_context",
    "remember",
    "supersede",
    "recall",
    "links",
    "history",
    "topics",
    "get_schema",
}


@pytest.fixture
def repo(memory_repo: MemoryRepo, commit_all) -> MemoryRepo:
    (memory_repo.root / "knowledge/reference/billing.md").write_text(
        "---\ntype: reference\n---\n\n# Billing\n\n## Facts\n- The billing database runs Postgres 17 on pg-billing-2.\n"
    )
    commit_all(memory_repo, "memory: billing facts")
    from autopoiesis.index import SearchIndex

    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    return memory_repo


Call = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, str]]]


def with_server(
    repo: MemoryRepo,
    tmp_path: Path,
    scenario: Callable[[ClientSession, Call], Awaitable[None]],
    cwd: Path | None = None,
) -> None:
    """Start the server over stdio with the SDK's client (in CWD, default TMP_PATH) and run
    SCENARIO against it."""
    env = {
        "PYTHONPATH": PROJECT_ROOT,
        **{k: v for k, v in os.environ.items() if k.startswith(("GIT_", "HOME"))},
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "autopoiesis", "-C", str(repo.root), "mcp"],
        env=env,
        cwd=str(cwd or tmp_path),
    )

    async def main() -> None:
        with open(tmp_path / "server-stderr.log", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()

                async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
                    result = await session.call_tool(name, args)
                    text = "\n".join(c.text for c in result.content if hasattr(c, "text"))
                    return bool(result.is_error), text

                await scenario(session, call)

    anyio.run(main)


def test_every_tool_over_stdio(repo: MemoryRepo, tmp_path: Path, git) -> None:
    async def scenario(session: ClientSession, call: Call) -> None:
        listed = await session.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        assert all(t.description for t in listed.tools)

        err, text = await call("get_schema", {})
        schema = json.loads(text)
        assert not err and schema["sections"]["knowledge/memory/MEMORY.md"] == [
            "Key Decisions",
            "Lessons Learned",
            "Active Context",
        ]
        assert "keyword" in schema["topic_trigger_types"] and "conversation" in schema["categories"]

        err, text = await call(
            "search", {"query": "which host runs the billing database", "limit": 3}
        )
        hits = json.loads(text)
        assert (
            not err
            and hits["source"] == "index"
            and hits["results"][0]["path"] == "knowledge/reference/billing.md"
        )

        err, text = await call(
            "read", {"path": "knowledge/reference/billing.md", "start_line": 5, "end_line": 7}
        )
        assert not err and text.splitlines() == [
            "[knowledge/reference/billing.md lines 5-7 of 8; 1 more, read on with start_line=8]",
            "# Billing",
            "",
            "## Facts",
        ]

        err, text = await call(
            "remember",
            {
                "path": "knowledge/reference/billing.md",
                "content": "Invoices run nightly at 02:00 UTC",
                "source": "raw/conversations/2026/03/01/0900-s1-billing.md",
                "tags": ["billing"],
            },
        )
        added = json.loads(text)
        assert (
            not err
            and added["status"] == "added"
            and added["section"] == "Facts"
            and added["commit"]
        )
        body = (repo.root / "knowledge/reference/billing.md").read_text()
        assert "Invoices run nightly at 02:00 UTC (via mcp:s1-billing)" in body
        assert f"{{id: {added['entry_id']}}} #billing" in body

        err, text = await call(
            "remember",
            {
                "path": "knowledge/reference/billing.md",
                "content": "invoices run nightly at 02:00 UTC.",
            },
        )
        assert not err and json.loads(text)["status"] == "duplicate"

        err, text = await call(
            "remember",
            {
                "path": "knowledge/people/dana.md",
                "content": "Dana owns the invoice runner",
                "section": "Context",
            },
        )
        assert not err and json.loads(text)["status"] == "added"
        assert "## Context\n- " in (repo.root / "knowledge/people/dana.md").read_text()

        err, text = await call(
            "supersede",
            {
                "path": "knowledge/reference/billing.md",
                "target": "02:00",
                "content": "Invoices run nightly at 03:00 UTC since March",
            },
        )
        assert not err, text
        sup = json.loads(text)
        assert sup["superseded"] == added["entry_id"]
        body = (repo.root / "knowledge/reference/billing.md").read_text()
        assert f"~~ {{id: {added['entry_id']}}} #billing #superseded-by:{sup['entry_id']}" in body
        assert (
            "- The billing database runs Postgres 17 on pg-billing-2." in body
        )  # the hand-written line is untouched

        err, text = await call("recall", {"text": "03:00 UTC since March"})
        commits = json.loads(text)["commits"]
        assert (
            not err
            and commits[0]["subject"]
            == "memory: supersede an entry in knowledge/reference/billing.md"
        )

        err, text = await call("history", {"path": "knowledge/reference/billing.md", "blame": True})
        hist = json.loads(text)
        assert (
            not err
            and [c["subject"] for c in hist["commits"]][-1] == "memory: billing facts"
            and len(hist["commits"]) == 3
        )
        assert "03:00 UTC since March" in hist["blame"]

        err, text = await call("topics", {})
        assert not err and {t["name"] for t in json.loads(text)["topics"]} == {
            "code-quality",
            "github-pr-review",
        }
        err, text = await call(
            "topics", {"message": "please review PR https://github.com/acme/api/pull/7"}
        )
        acts = {a["topic"]: a["activated"] for a in json.loads(text)["activations"]}
        assert not err and acts == {"code-quality": False, "github-pr-review": True}

        err, text = await call(
            "compile_context", {"message": "where does the billing database run?", "budget": 3000}
        )
        assert not err and "<!-- identity:SOUL.md -->" in text and "pg-billing-2" in text

    with_server(repo, tmp_path, scenario)
    assert (
        git(repo, "status", "--porcelain").stdout == ""
    )  # every write was committed, nothing else touched


def test_bad_arguments_are_errors_and_nothing_leaves_knowledge(
    repo: MemoryRepo, tmp_path: Path, git
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret\n")
    (repo.root / "knowledge/reference/escape.md").symlink_to(outside)
    head = git(repo, "rev-parse", "HEAD").stdout

    async def scenario(session: ClientSession, call: Call) -> None:
        refusals = [
            ("read", {"path": "../secret.txt"}, "outside the memory repository"),
            ("read", {"path": str(outside)}, "outside the memory repository"),
            (
                "read",
                {"path": "knowledge/reference/escape.md"},
                "lies through a symbolic link (knowledge/reference/escape.md -> ",
            ),  # a symlink out: named as the link it is, and how to be rid of it
            ("read", {"path": ".git/config"}, "git keeps its own files under that name"),
            ("read", {"path": "memory.db"}, "is not memory content"),
            ("read", {"path": "knowledge/nothing.md"}, "is not a file"),
            ("read", {"path": "knowledge/memory/MEMORY.md", "start_line": 500}, "past its end"),
            (
                "read",
                {"path": "knowledge/memory/MEMORY.md", "start_line": 5, "end_line": 2},
                "no range",
            ),
            (
                "read",
                {"path": "knowledge/memory/MEMORY.md", "start_line": 0},
                "greater than or equal to 1",
            ),
            ("read", {"path": "knowledge\x00/x.md"}, "NUL"),
            ("search", {"query": 42}, "valid string"),
            ("search", {"query": "   "}, "query is empty"),
            ("search", {"query": "x", "limit": 0}, "greater than or equal to 1"),
            ("search", {"query": "x", "category": "secrets"}, "is not one of"),
            ("search", {}, "search: query is required."),
            (
                "remember",
                {"path": "raw/conversations/2026/01/01/0000-x-y.md", "content": "x"},
                "outside knowledge/",
            ),
            ("remember", {"path": "../outside.md", "content": "x"}, "outside knowledge/"),
            (
                "remember",
                {"path": "knowledge/../../outside.md", "content": "x"},
                "outside knowledge/",
            ),
            (
                "remember",
                {"path": str(tmp_path / "outside.md"), "content": "x"},
                "outside knowledge/",
            ),
            (
                "remember",
                {"path": "knowledge/identity/SOUL.md", "content": "I obey everyone"},
                "never knowledge/identity/",
            ),
            (
                "remember",
                {"path": "knowledge/reference/notes.txt", "content": "x"},
                "only .md knowledge files",
            ),
            (
                "remember",
                {"path": "knowledge/reference/escape.md", "content": "x"},
                "lies through a symbolic link (knowledge/reference/escape.md -> ",
            ),
            (
                "remember",
                {"path": "knowledge/reference/two\nlines.md", "content": "x"},
                "contains a control character",
            ),
            (
                "remember",
                {"path": "knowledge/reference/" + "n" * 300 + ".md", "content": "x"},
                "is 303 bytes; a file name is at most 255 bytes",
            ),
            ("remember", {"path": "knowledge/reference/a.md", "content": ""}, "content is empty"),
            (
                "remember",
                {"path": "knowledge/reference/a.md", "content": "x" * 5000},
                "at most 4000",
            ),
            (
                "remember",
                {"path": "knowledge/reference/a.md", "content": "x", "source": "my session"},
                "without spaces",
            ),
            (
                "remember",
                {"path": "knowledge/reference/a.md", "content": "x", "tags": ["two words"]},
                "one word",
            ),
            (
                "supersede",
                {
                    "path": "knowledge/reference/billing.md",
                    "target": "no such fact",
                    "content": "y",
                },
                "no single active entry",
            ),
            (
                "supersede",
                {"path": "knowledge/reference/missing.md", "target": "x", "content": "y"},
                "no single active entry",
            ),
            # a hand-written line is not an entry: nothing to strike, so nothing is appended either
            (
                "supersede",
                {"path": "knowledge/reference/billing.md", "target": "Postgres 17", "content": "y"},
                "no single active entry",
            ),
            ("compile_context", {"message": "x", "budget": 10}, "from 256 to"),
            ("recall", {"text": ""}, "text is empty"),
            ("history", {"path": "/etc/passwd"}, "outside the memory repository"),
            ("history", {"path": "knowledge/never.md"}, "has no history"),
            ("topics", {"message": ""}, "message is empty"),
            ("no_such_tool", {}, "Unknown tool"),
        ]
        for name, args, why in refusals:
            err, text = await call(name, args)
            assert err, (name, args, text)
            assert why in text, (name, args, text)
            assert "Traceback" not in text
        # arguments that fail the schema: one readable line, no pydantic report or link
        for args, said in (
            ({"query": 42, "limit": 0}, "search: query should be a valid string, not 42; limit "
             "should be greater than or equal to 1, not 0."),
            ({}, "search: query is required."),
        ):  # fmt: skip
            err, text = await call("search", args)
            assert err and text == said, text
        # remember: a section the file does not have is refused, naming those it has
        err, text = await call(
            "remember",
            {"path": "knowledge/reference/billing.md", "content": "x", "section": "Factz"},
        )
        assert err and "has no section 'Factz'; its sections are Billing, Facts" in text
        # the server is still up and answering
        err, text = await call("read", {"path": "knowledge/memory/MEMORY.md"})
        assert not err and "Core Memory" in text

    with_server(repo, tmp_path, scenario)
    assert outside.read_text() == "top secret\n"
    assert not (tmp_path / "outside.md").exists() and not (repo.root / "outside.md").exists()
    assert git(repo, "rev-parse", "HEAD").stdout == head
    assert (
        git(repo, "status", "--porcelain").stdout == "?? knowledge/reference/escape.md\n"
    )  # the test's own symlink


def test_remember_says_what_it_redacted(repo: MemoryRepo, tmp_path: Path) -> None:
    key = "AKIA" + "Q3EGRTWZ5KD7YJ2M"

    async def scenario(session: ClientSession, call: Call) -> None:
        err, text = await call(
            "remember",
            {"path": "knowledge/reference/billing.md", "content": f"the deploy key is {key}",
             "section": "facts"},
        )  # fmt: skip
        assert not err, text
        answer = json.loads(text)
        assert answer["section"] == "Facts" and answer["redacted"], answer
        assert answer["note"].startswith("redacted 1 secret (")
        err, text = await call(
            "remember", {"path": "knowledge/reference/billing.md", "content": "plain fact here"}
        )
        assert "redacted" not in json.loads(text)

    with_server(repo, tmp_path, scenario)
    assert key not in (repo.root / "knowledge/reference/billing.md").read_text()


def test_the_server_writes_nothing_but_the_protocol_on_stdout(
    repo: MemoryRepo, tmp_path: Path
) -> None:
    """A raw JSON-RPC exchange: every line the server prints is a JSON-RPC message, and
    every request is answered."""
    lines = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "../../etc/passwd"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "billing"}},
        },
        # half a surrogate pair (JSON allows it): the SDK's parser refused the line and
        # the request was never answered
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "billing \ud83d"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "knowledge/\ud83d.md"}},
        },
    ]
    proc = _raw_server(repo, tmp_path, stderr=subprocess.DEVNULL)
    watchdog = threading.Timer(
        120, proc.kill
    )  # a server that never answers fails the test, not the run
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
        proc.stdin.flush()
        replies = [
            json.loads(proc.stdout.readline()) for _ in range(5)
        ]  # every line it prints is a message
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == ""
    finally:
        watchdog.cancel()
        proc.kill()
    assert sorted(r.get("id") for r in replies) == [1, 2, 3, 4, 5]
    by_id = {r["id"]: r for r in replies}
    assert by_id[2]["result"]["isError"] is True and by_id[3]["result"]["isError"] is False
    assert by_id[4]["result"]["isError"] is False
    assert "knowledge/\ufffd.md is not a file" in by_id[5]["result"]["content"][0]["text"]


def test_search_prefers_the_project_of_the_servers_folder(
    repo: MemoryRepo, tmp_path: Path, git, commit_all
) -> None:
    # The same fact in two projects' knowledge, alpha's said more plainly: started in beta's
    # repository, the server ranks beta's first (alpha's wins without a project); `project`
    # overrides; an unknown project is refused by name.
    said = {
        "alpha": "The deploy script lives in tools/ship.",
        "beta": "The deploy script lives in tools/ship, next to the release notes template.",
    }
    for name, fact in said.items():
        note = repo.root / "knowledge" / "projects" / name / "context.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# {name}\n\n## Tooling\n- {fact}\n")
    commit_all(repo, "memory: two projects")
    checkout = tmp_path / "beta-checkout"
    checkout.mkdir()
    git(checkout, "init", "-q")
    git(checkout, "remote", "add", "origin", "https://example.org/acme/beta.git")

    async def scenario(session: ClientSession, call: Call) -> None:
        async def first(args: dict[str, Any]) -> str | None:
            err, text = await call("search", {"query": "where does the deploy script live", **args})
            assert not err, text
            return json.loads(text)["results"][0]["project"]

        assert await first({"project": ""}) == "alpha"  # no preference: the plainer match
        assert await first({}) == "beta"
        assert await first({"project": "alpha"}) == "alpha"
        err, text = await call("search", {"query": "deploy script", "project": "gamma"})
        assert err and "no project 'gamma'" in text and "alpha, beta" in text

    with_server(repo, tmp_path, scenario, cwd=checkout)


def test_remember_takes_a_name_as_long_as_the_file_system_allows(memory_repo: MemoryRepo) -> None:
    """A 255-byte name (NAME_MAX) is written and committed: its temporary file's name is
    shorter than it (it failed with an opaque OSError)."""
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory

    name = "n" * 252 + ".md"
    done = MemoryTools(Memory(memory_repo.root)).remember(
        f"knowledge/reference/{name}", "the longest name the disk takes"
    )
    assert done["status"] == "added" and done["commit"]
    assert "the longest name" in (memory_repo.root / "knowledge/reference" / name).read_text()


def test_remember_writes_no_control_character(memory_repo: MemoryRepo) -> None:
    """An entry's text keeps no ESC, BEL or other control character: `search` and `compile` print entries, and an OSC sequence in one set the
    user's terminal title and wrote the clipboard."""
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory

    rel = "knowledge/reference/term.md"
    done = MemoryTools(Memory(memory_repo.root)).remember(
        rel,
        "quokka note \x1b]0;PWNED-TITLE\x07\x1b]52;c;ZWNobyBwd25lZA==\x07 end\x9b",
    )
    assert done["status"] == "added"
    text = (memory_repo.root / rel).read_text(encoding="utf-8")
    assert "quokka note ]0;PWNED-TITLE]52;c;ZWNobyBwd25lZA== end" in text
    assert not any(c in text for c in "\x1b\x07\x9b")


def test_remember_refuses_a_folder_named_as_gits_own(memory_repo: MemoryRepo, git) -> None:
    """`remember` into `knowledge/.git/config.md` (or `knowledge/reference/.GIT/x.md`)
    was written and committed through plumbing, which git's own checks never saw: the
    commit held a tree `git fsck` flags (hasDotgit), which a remote refuses and no clone
    checks out. Every such name is refused, saying why; nothing is written."""
    from autopoiesis.errors import ChangeRejectedError, UnsafePathError
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory

    tools = MemoryTools(Memory(memory_repo.root))
    head = git(memory_repo, "rev-parse", "HEAD").stdout
    for path in (
        "knowledge/.git/config.md",
        "knowledge/reference/.GIT/x.md",
        "knowledge/reference/.git. /x.md",
        "knowledge/reference/git~1/x.md",
    ):
        with pytest.raises(ChangeRejectedError, match="git keeps its own files under that name"):
            tools.remember(path, "a fact")
    with pytest.raises(UnsafePathError, match="git keeps its own files under that name"):
        tools.read("knowledge/.git/config.md")
    assert git(memory_repo, "rev-parse", "HEAD").stdout == head
    assert git(memory_repo, "status", "--porcelain").stdout == ""
    assert not [p for p in (memory_repo.root / "knowledge").rglob("*") if "git" in p.name.lower()
                and p.name != ".gitkeep"]  # fmt: skip
    # a name that merely starts so is a name like any other
    assert tools.remember("knowledge/reference/.github-notes.md", "a fact")["status"] == "added"


def test_an_entrys_tags_are_a_handful_each_once(memory_repo: MemoryRepo) -> None:
    """`remember` with ten thousand tags wrote them all on the entry's line (30 KB of
    `#a #a ...`): a tag is written once, and an entry takes at most MAX_ENTRY_TAGS; the
    tool says so, and the writer keeps to it for every producer."""
    from datetime import UTC, datetime

    from autopoiesis.errors import InvalidArgumentError
    from autopoiesis.knowledge.changes import KnowledgeChange, Provenance
    from autopoiesis.knowledge.writer import MAX_ENTRY_TAGS, KnowledgeWriter
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory

    rel = "knowledge/reference/tags.md"
    tools = MemoryTools(Memory(memory_repo.root))
    done = tools.remember(rel, "the quokka fact", tags=["quokka"] * 10_000)
    assert done["status"] == "added"
    (line,) = [x for x in (memory_repo.root / rel).read_text().splitlines() if "quokka" in x]
    assert line.endswith(f"{{id: {done['entry_id']}}} #quokka")
    many = [f"t{i}" for i in range(MAX_ENTRY_TAGS + 1)]
    with pytest.raises(InvalidArgumentError, match=f"at most {MAX_ENTRY_TAGS}"):
        tools.remember(rel, "another fact", tags=many)
    prov = Provenance("raw/conversations/x.md", datetime(2026, 3, 1, 12, tzinfo=UTC), "test@1")
    KnowledgeWriter(memory_repo).apply(
        [KnowledgeChange(rel, "append", "Facts", "the wombat fact", prov, tags=(*many, *many))]
    )
    (line,) = [x for x in (memory_repo.root / rel).read_text().splitlines() if "wombat" in x]
    assert line.count(" #") == MAX_ENTRY_TAGS and line.count("#t0 ") == 1


def test_remember_refuses_a_path_that_holds_a_secret(memory_repo: MemoryRepo) -> None:
    """`remember` redacted a secret in the content but wrote the path as given: the file
    `knowledge/projects/ghp_.../context.md` was committed (and its frontmatter's
    `project:`), so the token reached git and every remote. The writer's guard refuses
    such a path, saying why; nothing is written. An ordinary long name still goes."""
    from autopoiesis.errors import ChangeRejectedError
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory

    tools = MemoryTools(Memory(memory_repo.root))
    token = "ghp_" + "TT3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    for path in (
        f"knowledge/projects/{token}/context.md",
        f"knowledge/people/{token}.md",
        "knowledge/reference/AKIA" + "Q3EGRTWZ5KD7YJ2M.md",
    ):
        with pytest.raises(ChangeRejectedError, match="looks like a secret"):
            tools.remember(path, "a fact")
    log = subprocess.run(
        ["git", "log", "--all", "-p", "--format=%B"],
        cwd=memory_repo.root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert token not in log and "AKIA" not in log
    assert not list((memory_repo.root / "knowledge").rglob(f"*{token}*"))
    done = tools.remember("knowledge/reference/api-keys-rotation.md", "keys rotate monthly")
    assert done["status"] == "added"


def test_a_transcript_hit_names_its_own_turn_to_read(memory_repo: MemoryRepo, commit_all) -> None:
    """An agent's search finds a turn with the turns around it; own_start..own_end are the
    turn itself, which `read` then gives alone. A knowledge section names none."""
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory
    from autopoiesis.testing.samples import write_closed_transcript

    at = "2026-03-02T10:00:00Z"
    rel = write_closed_transcript(
        memory_repo.root,
        "ses_bun",
        "Build scripts",
        "build-scripts",
        [
            (at, "agent", None, "Checked the scripts folder: " + "three build steps run. " * 20),
            (at, "user", None, "Use bun, not node, to run the release scripts from now on."),
            (at, "agent", None, "Switching the scripts over: " + "step converted. " * 25),
        ],
    )
    (memory_repo.root / "knowledge/reference/release.md").write_text(
        "# Release\n\n## Facts\n- The release scripts live in scripts/release.\n"
    )
    commit_all(memory_repo, "a session and a note")
    from autopoiesis.index import SearchIndex

    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    tools = MemoryTools(Memory(memory_repo.root))
    found = tools.search("bun release scripts", 10, None, "")["results"]
    turn = next(r for r in found if r["path"] == rel and r["heading"] == "user")
    assert turn["start_line"] < turn["own_start"] <= turn["own_end"] < turn["end_line"]
    shown = tools.read(rel, turn["own_start"], turn["own_end"])
    assert "Use bun, not node" in shown and "Checked the scripts" not in shown
    note = next(r for r in found if r["path"] == "knowledge/reference/release.md")
    assert note["own_start"] is None and note["own_end"] is None


def test_supersede_with_a_new_value_of_one_word_replaces_the_entry(memory_repo: MemoryRepo) -> None:
    """MCP `supersede` of "... on Tuesdays." by "... on Wednesdays." answered `duplicate`:
    the new value restates the entry it replaces but for that word, and the writer took
    it for a restatement of a live entry. The entry it replaces is no restatement."""
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory

    tools = MemoryTools(Memory(memory_repo.root))
    rel = "knowledge/procedures/deploys.md"
    first = tools.remember(rel, "Deploy billing with blue-green on Tuesdays.")
    done = tools.supersede(rel, first["entry_id"], "Deploy billing with blue-green on Wednesdays.")
    assert done["status"] == "superseded" and done["superseded"] == first["entry_id"]
    again = tools.supersede(rel, "Wednesdays", "Deploy billing with blue-green on Wednesdays.")
    assert again["status"] == "duplicate"
    text = (memory_repo.root / rel).read_text()
    assert "~~2026" in text and "on Wednesdays. (via" in text


def test_remember_refuses_a_project_folder_that_is_no_project_name(
    memory_repo: MemoryRepo,
) -> None:
    """`knowledge/projects/Shop/context.md` was written and committed, but no project is
    named `Shop` (a project's folder is its slug): the fact was read as global knowledge,
    ranked alike in every project, and `--project shop` knew nothing of it. The guard
    refuses it, naming the folder to use; nothing is written."""
    from autopoiesis.errors import ChangeRejectedError
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory

    tools = MemoryTools(Memory(memory_repo.root))
    with pytest.raises(ChangeRejectedError, match="knowledge/projects/shop/context.md"):
        tools.remember("knowledge/projects/Shop/context.md", "The Shop API listens on 8443.")
    assert not (memory_repo.root / "knowledge" / "projects" / "Shop").exists()
    done = tools.remember("knowledge/projects/shop/context.md", "The Shop API listens on 8443.")
    assert done["status"] == "added"
    assert Memory(memory_repo.root).known_project("shop") == "shop"


def _raw_server(
    repo: MemoryRepo, tmp_path: Path, stderr: int = subprocess.PIPE
) -> subprocess.Popen[str]:
    """`autopoiesis mcp` in a subprocess, driven with raw JSON-RPC lines."""
    return subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", str(repo.root), "mcp"],
        cwd=tmp_path,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env={**os.environ, "PYTHONPATH": PROJECT_ROOT},
    )


def _send(proc: subprocess.Popen[str], *messages: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    proc.stdin.flush()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_sigterm_during_remember_lets_the_commit_finish(
    repo: MemoryRepo, tmp_path: Path, git
) -> None:
    """A harness that stops the server (SIGTERM) while `remember` commits: the call in
    progress finishes (its commit whole, the post-commit hook run, the index as HEAD has
    it) and the server exits 0, as when the client closes its stream."""
    import signal
    import time

    hooks = Path(git(repo, "rev-parse", "--absolute-git-dir").stdout.strip()) / "hooks"
    started, go, finished = tmp_path / "started", tmp_path / "go", tmp_path / "finished"
    (hooks / "reference-transaction.local").write_text(
        f'#!/bin/sh\nif [ "$1" = prepared ]; then touch {started}; '
        f"while [ ! -e {go} ]; do sleep 0.05; done; fi\n"
    )
    (hooks / "post-commit.local").write_text(f"#!/bin/sh\ntouch {finished}\n")
    for hook in ("reference-transaction.local", "post-commit.local"):
        (hooks / hook).chmod(0o755)
    proc = _raw_server(repo, tmp_path)
    watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test, not the run
    watchdog.start()
    try:
        _send(proc, INITIALIZE)
        assert proc.stdout is not None
        proc.stdout.readline()
        remember = {"path": "knowledge/reference/otters.md", "content": "Otters hold hands."}
        _send(
            proc,
            INITIALIZED,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "remember", "arguments": remember},
            },
        )
        while not started.exists() and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        go.touch()
        assert proc.wait(timeout=60) == 0
        answer = json.loads(proc.stdout.readline())  # the client learns it was remembered
    finally:
        watchdog.cancel()
        proc.kill()
    assert answer["id"] == 2 and "result" in answer, answer
    assert finished.exists()
    assert "Otters hold hands." in git(repo, "show", "HEAD:knowledge/reference/otters.md").stdout
    assert git(repo, "status", "--porcelain", "--", "knowledge").stdout == ""


def test_requests_sent_just_before_the_client_closes_are_answered_and_done(
    repo: MemoryRepo, tmp_path: Path, git
) -> None:
    """A client that sends its requests and closes its end at once (a script piping them
    in): the SDK ended its loop at the end of the stream and cancelled every call still
    running, so `remember` was answered "Connection closed" and nothing was written, and
    `tools/list` sometimes not at all. The end waits for the calls read before it."""
    remember = {"path": "knowledge/reference/otters.md", "content": "Otters hold hands."}
    lines = [
        INITIALIZE,
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": remember},
        },
    ]
    proc = _raw_server(repo, tmp_path)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        replies = {r["id"]: r for r in map(json.loads, proc.stdout.read().splitlines())}
    finally:
        watchdog.cancel()
        proc.kill()
    assert sorted(replies) == [1, 2, 3]
    assert replies[2]["result"]["tools"] and "result" in replies[3], replies[3]
    assert "Otters hold hands." in git(repo, "show", "HEAD:knowledge/reference/otters.md").stdout


def test_a_request_the_parser_refuses_is_answered_with_its_id(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Arguments nested past the SDK's JSON recursion limit (about 200 levels), or a
    request without `jsonrpc`: the SDK dropped the line, and the client waited for ever
    for its answer. Each now gets a JSON-RPC error with its id, and the server goes on."""
    deep = "[" * 300 + '"x"' + "]" * 300
    lines = [
        json.dumps(INITIALIZE),
        json.dumps(INITIALIZED),
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search",'
        '"arguments":{"query":"q","extra":' + deep + "}}}",
        '{"id":"three","method":"tools/list"}',
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    ]
    proc = _raw_server(memory_repo, tmp_path)
    watchdog = threading.Timer(120, proc.kill)  # a server that never answers fails the test
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(4)]
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        watchdog.cancel()
        proc.kill()
    by_id = {r.get("id"): r for r in replies}
    assert sorted(by_id, key=str) == [1, 2, 4, "three"]
    assert by_id[2]["error"]["code"] == -32700
    assert "nests too deeply" in by_id[2]["error"]["message"]
    assert by_id["three"]["error"]["code"] == -32600
    assert "jsonrpc" in by_id["three"]["error"]["message"]
    assert by_id[4]["result"]["tools"]


def test_a_client_that_stops_reading_ends_the_server_with_a_line_not_a_traceback(
    repo: MemoryRepo, tmp_path: Path
) -> None:
    """A client closed its end of the server's stdout and kept writing requests: the SDK's
    writer failed with BrokenPipeError and the server ended in a traceback of some 90
    lines. It ends with one line that says so; what it was asked before was done."""
    proc = _raw_server(repo, tmp_path)
    watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test, not the run
    watchdog.start()
    try:
        _send(proc, INITIALIZE)
        assert proc.stdout is not None and proc.stderr is not None
        assert '"id":1' in proc.stdout.readline()
        proc.stdout.close()  # stops reading; its requests keep coming
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        try:
            _send(proc, INITIALIZED, listing)
            for n in range(3, 40):  # until the server's end of the pipe fails and it exits
                if proc.poll() is not None:
                    break
                _send(proc, {**listing, "id": n})
                threading.Event().wait(0.2)
        except BrokenPipeError:
            pass  # the server is gone: its stdin closed
        assert proc.wait(timeout=60) == 0
        err = proc.stderr.read()
    finally:
        watchdog.cancel()
        proc.kill()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert "the client stopped reading the answers" in err
