"""Runaway replies and leaks through the LLM path: a 3,000-item reply stays inside the
reply cap and the writer's file caps (the repo keeps committing), and a secret in a
transcript reaches neither the model, nor knowledge/, nor a commit message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.git.hooks import pre_commit
from autopoiesis.knowledge.extract import KnowledgeExtractor
from autopoiesis.llm import LLMClient
from autopoiesis.llm.jsonreply import MAX_REPLY_ITEMS
from autopoiesis.memory.commit import commit_knowledge
from autopoiesis.testing.openai_server import OpenAIServer, write_llm_config
from autopoiesis.testing.samples import closed_transcript

SECRET = "AKIAQWERTYUIOPASDF12"
REL = "raw/conversations/2026/03/01/2358-ses_leak01-key-rotation.md"
TRANSCRIPT = closed_transcript(
    "ses_leak01",
    "Key rotation",
    (
        (
            "2026-03-01T23:58:00Z",
            "user",
            "Alice",
            f"The deploy used {SECRET} and it leaked. Lesson learned: rotate keys after every incident.",
        ),
        ("2026-03-01T23:59:00Z", "agent", None, "Noted: rotate keys after every incident."),
    ),
)


def _lessons(n: int, text: str = "Lesson {i}: check item {i} twice before the release") -> dict:
    return {"content": json.dumps({"lessons": [{"lesson": text.format(i=i)} for i in range(n)]})}


def _setup(memory_repo: MemoryRepo, server: OpenAIServer, git, **llm) -> MemoryRepo:
    write_llm_config(memory_repo.root, server.base_url, max_retries=0, timeout_seconds=5, **llm)
    (memory_repo.root / REL).parent.mkdir(parents=True, exist_ok=True)
    (memory_repo.root / REL).write_text(
        TRANSCRIPT
    )  # as written before redaction knew this kind of key
    git(memory_repo.root, "add", "memory-config.yaml", REL)
    git(memory_repo.root, "commit", "-qm", "conversation: key-rotation")
    return MemoryRepo(memory_repo.root)


def test_json_reply_arrays_are_cut_to_the_item_cap(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    write_llm_config(tmp_path, openai_server.base_url, max_retries=0)
    openai_server.enqueue(_lessons(3000))
    with LLMClient(MemoryRepo(tmp_path)) as llm:
        res = llm.complete_json("extract", "lessons please", schema={"type": "object"})
    assert len(res.data["lessons"]) == MAX_REPLY_ITEMS
    assert res.dropped_items == 3000 - MAX_REPLY_ITEMS


def test_an_oversized_reply_is_refused_without_a_repair_turn(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    import pytest

    from autopoiesis.errors import LLMResponseError

    write_llm_config(tmp_path, openai_server.base_url, max_retries=0)
    openai_server.enqueue({"content": json.dumps({"x": "y" * 400_000})})
    with (
        LLMClient(MemoryRepo(tmp_path)) as llm,
        pytest.raises(LLMResponseError, match="over the cap"),
    ):
        llm.complete_json("extract", "x")
    assert len(openai_server.chat_bodies()) == 1


@pytest.mark.slow
def test_a_3000_item_reply_never_leaves_a_memory_file_the_hook_rejects(
    memory_repo: MemoryRepo, openai_server: OpenAIServer, git
) -> None:
    memory_repo = _setup(memory_repo, openai_server, git)
    (memory_repo.root / "memory-config.yaml").write_text(
        (memory_repo.root / "memory-config.yaml").read_text()
        + "lifecycle:\n  memory_line_cap: 60\n"
    )
    repo = MemoryRepo(memory_repo.root)
    # items the transcript says (extract leaves out the ones it does not), each its own
    openai_server.default_chat = lambda body: _lessons(
        3000, "Rotate keys after every incident, tagged a{i}b and c{i}d"
    )
    with KnowledgeExtractor(repo) as ex:
        report = ex.extract_from_session(REL, ["lessons"])
        sha = ex.commit(report)
    assert sha  # the pre-commit hook accepted it
    lines = repo.memory_file.read_text().count("\n")
    assert lines <= 60
    # every item was written: the oldest made room for the newest under the cap
    assert report.added == MAX_REPLY_ITEMS and report.archived == MAX_REPLY_ITEMS - (60 - 14)
    assert pre_commit(repo.root).ok
    # and later commits are not refused either
    (repo.root / "knowledge/reference/later.md").write_text("# Later\n- still committing\n")
    assert commit_knowledge(repo, "memory: later").sha


@pytest.mark.slow
def test_a_secret_reaches_neither_the_model_nor_knowledge_nor_a_commit_message(
    memory_repo: MemoryRepo, openai_server: OpenAIServer, git
) -> None:
    repo = _setup(memory_repo, openai_server, git)
    # the model (or whatever sits behind the endpoint) echoes the key in its answers
    echoed = [f"Rotate {SECRET} and every key after an incident", f"The deploy leaked {SECRET}"]
    openai_server.default_chat = lambda body: (
        {"content": json.dumps({"lessons": [{"lesson": text} for text in echoed]})}
        if (body.get("response_format") or {}).get("type") == "json_object"
        else {"content": f"record the leak of {SECRET} and the rotation lesson"}
    )
    with KnowledgeExtractor(repo) as ex:
        report = ex.extract_from_session(REL, ["lessons"])
        assert ex.commit(report)
    assert report.added == 2
    (repo.root / "knowledge/reference/incident.md").write_text("# Incident\n- keys were rotated\n")
    result = commit_knowledge(repo)
    assert result.sha
    assert "record the leak of [redacted:" in result.message  # the model's subject, redacted

    sent = json.dumps([r.body for r in openai_server.requests])
    assert "rotate keys after every incident" in sent  # the transcript did reach the model ...
    assert SECRET not in sent  # ... without the key
    for path in (repo.root / "knowledge").rglob("*.md"):
        assert SECRET not in path.read_text(), path
    assert "[redacted:aws_access_key]" in repo.memory_file.read_text()
    messages = git(repo.root, "log", "--format=%B").stdout
    assert SECRET not in messages


@pytest.mark.slow
def test_a_huge_reply_is_refused_unread(tmp_path: Path, openai_server: OpenAIServer) -> None:
    """A 300 MB reply is not read whole before the cap: the call fails at MAX_REPLY_BYTES and
    the process that made it grew by a few megabytes, not by the reply (568 MB before)."""
    import subprocess
    import sys

    write_llm_config(tmp_path, openai_server.base_url, max_retries=0, timeout_seconds=60)
    openai_server.enqueue({"content": "warm"}, {"content_bytes": 300_000_000})
    code = (
        "import resource, sys\n"
        "from autopoiesis.core.paths import MemoryRepo\n"
        "from autopoiesis.errors import LLMUnavailableError\n"
        "from autopoiesis.llm import LLMClient\n"
        "llm = LLMClient(MemoryRepo(sys.argv[1]))\n"
        "llm.complete('extract', 'warm up', cache=False)\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    llm.complete('extract', 'say a lot', cache=False)\n"
        "except LLMUnavailableError as exc:\n"
        "    print('refused:', exc)\n"
        "print('grew_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert "refused:" in done.stdout and "over 4 MB" in done.stdout, done.stdout + done.stderr
    grew_kb = int(done.stdout.split("grew_kb")[1])
    assert grew_kb < 64 * 1024, f"the process grew by {grew_kb} KB"


def test_a_servers_token_counts_are_bounded_by_what_was_exchanged(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    write_llm_config(tmp_path, openai_server.base_url, max_retries=0)
    openai_server.enqueue(
        {"content": "fine", "prompt_tokens": 10**12, "completion_tokens": 10**12},
        {"content": "fine", "prompt_tokens": -5, "completion_tokens": 3},
    )
    with LLMClient(MemoryRepo(tmp_path)) as llm:
        lied = llm.complete("extract", "a short prompt", max_tokens=64, cache=False)
        negative = llm.complete("extract", "another prompt", max_tokens=64, cache=False)
    sent = len(openai_server.chat_bodies()[0]["messages"])
    assert lied.tokens_in <= len("a short prompt") + 8 * sent + 16 + 200  # + a system prompt
    assert lied.tokens_out == 64  # no more than asked for
    assert 0 < negative.tokens_in < 50 and negative.tokens_out == 3
    rows = [
        json.loads(line)
        for line in (tmp_path / ".autopoiesis/llm/ledger.jsonl").read_text().splitlines()
    ]
    assert max(r["tokens_in"] + r["tokens_out"] for r in rows) < 500
