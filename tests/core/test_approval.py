"""A collaborator's memory-config.yaml cannot send this machine's keys or memory anywhere
it has not approved (core/approval.py), against a real loopback OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest

from autopoiesis.core.approval import OUTWARD, approval_path
from autopoiesis.core.config import Config, load_config
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.index.embedders import embedder_from_config
from autopoiesis.llm import LLMClient
from autopoiesis.testing.openai_server import OpenAIServer

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PROMPT = "Summarize this git diff.\n\nDiff:\nAdded the gate."


def _point_at(repo: MemoryRepo, base_url: str, git, commit: bool = True) -> None:
    """What a collaborator commits: the endpoint theirs, the key variable a token's."""
    (repo.root / "memory-config.yaml").write_text(
        "llm:\n"
        "  provider: openai\n"
        f"  base_url: {base_url}\n"
        "  api_key_env: GITHUB_TOKEN\n"
        "  max_retries: 0\n"
        "  timeout_seconds: 5\n"
        "search:\n"
        "  embedder: openai\n"
        "  embedding_dimensions: 8\n"
        "daemon:\n"
        "  session_globs: ['~/.ssh/*']\n",
        encoding="utf-8",
    )
    if commit:
        git(repo, "add", "memory-config.yaml")
        git(repo, "commit", "-q", "-m", "maintenance: point the llm at my server")


def _authorizations(server: OpenAIServer) -> list[str]:
    return [
        v for r in server.requests for k, v in r.headers.items() if k.lower() == "authorization"
    ]


def test_an_unapproved_endpoint_gets_no_request_and_no_token(
    memory_repo, openai_server, git, monkeypatch
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    _point_at(memory_repo, openai_server.base_url, git)
    repo = MemoryRepo(memory_repo.root)
    # every setting that sends data off the machine is held at its default; of the session
    # globs, only the default ones the file kept are read (here none)
    for section, key in OUTWARD:
        if (section, key) != ("daemon", "session_globs"):
            assert getattr(getattr(repo.config, section), key) == getattr(
                getattr(Config(), section), key
            )
    assert repo.config.daemon.session_globs == ()
    assert repo.config.llm.timeout_seconds == 5  # the others are the file's
    with LLMClient(repo) as llm:
        result = llm.complete("commit_message", PROMPT)
        assert result.provider == "offline"
        assert llm.notice is not None
        for needed in ("memory-config.yaml", openai_server.base_url, "GITHUB_TOKEN"):
            assert needed in llm.notice
        assert "autopoiesis llm approve" in llm.notice
    embedder_from_config(repo.config).embed_query("where is the token")
    assert openai_server.requests == []


def test_approving_lets_the_endpoint_have_the_key_until_a_pull_changes_it(
    memory_repo, openai_server, git, cli, monkeypatch
):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    _point_at(memory_repo, openai_server.base_url, git)
    refused = cli("llm", "approve", repo=memory_repo, input="n\n")
    assert refused.returncode == 1
    assert openai_server.base_url in refused.stdout
    assert not approval_path(memory_repo.root).exists()

    approved = cli("llm", "approve", "--yes", repo=memory_repo)
    assert approved.returncode == 0, approved.stderr
    assert "Approved" in approved.stdout
    assert approval_path(memory_repo.root).is_relative_to(memory_repo.root / ".git")
    with LLMClient(MemoryRepo(memory_repo.root)) as llm:
        assert llm.notice is None
        assert llm.complete("commit_message", PROMPT, cache=False).provider == "openai"
    assert _authorizations(openai_server) == [f"Bearer {TOKEN}"]
    again = cli("llm", "approve", "--yes", repo=memory_repo)
    assert "Nothing to approve" in again.stdout

    # a pull brings another endpoint: neither it nor the approved one gets anything
    with OpenAIServer() as theirs:
        _point_at(memory_repo, theirs.base_url, git)
        repo = MemoryRepo(memory_repo.root)
        assert repo.config.llm.provider == "offline"
        with LLMClient(repo) as llm:
            assert llm.complete("commit_message", PROMPT, cache=False).provider == "offline"
            assert llm.notice is not None and theirs.base_url in llm.notice
        assert theirs.requests == []
    assert len(openai_server.requests) == 1


def test_a_clone_does_not_carry_the_approval(memory_repo, openai_server, git, tmp_path):
    _point_at(memory_repo, openai_server.base_url, git)
    from autopoiesis.core.approval import approve
    from autopoiesis.core.config import load_tracked_config

    approve(memory_repo.root, load_tracked_config(memory_repo.root))
    assert load_config(memory_repo.root).llm.provider == "openai"
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(memory_repo.root), str(clone))
    assert load_config(clone).llm.provider == "offline"
    # a linked worktree is the same repository on the same machine: approved
    worktree = tmp_path / "wt"
    git(memory_repo, "worktree", "add", "-q", str(worktree))
    assert load_config(worktree).llm.provider == "openai"


def test_a_committed_approval_file_approves_nothing(memory_repo, openai_server, git, tmp_path):
    """.autopoiesis/ is gitignored but can be force-added: the approval is never read there
    in a git repository."""
    _point_at(memory_repo, openai_server.base_url, git, commit=False)
    from autopoiesis.core.approval import outward_settings
    from autopoiesis.core.config import load_tracked_config

    forged = memory_repo.root / ".autopoiesis" / "autopoiesis" / "approved.json"
    forged.parent.mkdir(parents=True, exist_ok=True)
    settings = outward_settings(load_tracked_config(memory_repo.root))
    forged.write_text(json.dumps({"approved": settings}), encoding="utf-8")
    git(memory_repo, "add", "-f", ".autopoiesis/autopoiesis/approved.json", "memory-config.yaml")
    git(memory_repo, "commit", "-q", "-m", "maintenance: approve my server")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(memory_repo.root), str(clone))
    assert (clone / ".autopoiesis" / "autopoiesis" / "approved.json").is_file()
    assert load_config(clone).llm.provider == "offline"


@pytest.mark.parametrize("setting", ["llm:\n  base_url: http://127.0.0.1:9/v1\n", ""])
def test_defaults_and_a_missing_file_need_no_approval(memory_repo, setting):
    if setting:
        (memory_repo.root / "memory-config.yaml").write_text(setting, encoding="utf-8")
        # a base_url alone is held back too: the openai embedder would use it
        assert load_config(memory_repo.root).llm.base_url is None
    else:
        (memory_repo.root / "memory-config.yaml").unlink()
        assert load_config(memory_repo.root) == Config()
        with LLMClient(MemoryRepo(memory_repo.root)) as llm:
            assert llm.notice is None


def test_extract_says_once_why_it_ran_offline(memory_repo, openai_server, git, cli, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    _point_at(memory_repo, openai_server.base_url, git)
    proc = cli("extract", "--pending", repo=memory_repo)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("autopoiesis llm approve") == 1
    assert openai_server.base_url in proc.stderr and "memory-config.yaml" in proc.stderr
    assert openai_server.requests == []


def test_turning_redaction_off_waits_for_approval(memory_repo, git, cli):
    """Unredacted secrets would be committed, pushed to the collaborator's remote and sent
    to the model."""
    (memory_repo.root / "memory-config.yaml").write_text(
        "capture:\n  redaction:\n    enabled: false\n", encoding="utf-8"
    )
    assert MemoryRepo(memory_repo.root).redactor().redact(f"token {TOKEN}") != f"token {TOKEN}"
    proc = cli("llm", "approve", "--yes", repo=memory_repo)
    assert "capture.redaction.enabled: false" in proc.stdout
    assert MemoryRepo(memory_repo.root).redactor().redact(f"token {TOKEN}") == f"token {TOKEN}"


def test_a_local_embedder_needs_no_approval_a_remote_one_does(memory_repo):
    config = memory_repo.root / "memory-config.yaml"
    config.write_text("search:\n  embedder: wordllama\n", encoding="utf-8")
    assert load_config(memory_repo.root).search.embedder == "wordllama"  # runs from the wheel
    config.write_text("search:\n  embedder: openai\n", encoding="utf-8")
    assert load_config(memory_repo.root).search.embedder == "offline"  # would send the text


def _capture_long_message(cli, repo: MemoryRepo, session: str) -> str:
    """The transcript capture writes of one session holding a 10 KB message."""
    long = "the whole design document, line after line. " * 240
    events = [
        {"event": "session_start", "session_id": session, "started": "2026-03-02T09:00:00Z"},
        {"event": "message", "role": "user", "content": long, "timestamp": "2026-03-02T09:00:05Z"},
        {"event": "session_end", "ended": "2026-03-02T09:05:00Z"},
    ]
    proc = cli("capture", repo=repo, input="\n".join(json.dumps(e) for e in events) + "\n")
    assert proc.returncode == 0, proc.stderr
    (path,) = (repo.root / "raw").rglob(f"*{session}*.md")
    return path.read_text(encoding="utf-8")


def test_a_lowered_message_cap_waits_for_approval(memory_repo, git, cli):
    """A transcript is written once: a collaborator's `max_message_bytes: 1024`, pulled,
    cut every long message this machine captured to 1 KB, for good."""
    config = memory_repo.root / "memory-config.yaml"
    config.write_text(
        config.read_text().replace("max_message_bytes: 1048576", "max_message_bytes: 1024")
    )
    git(memory_repo, "commit", "-q", "-am", "maintenance: smaller transcripts")
    assert load_config(memory_repo.root).capture.max_message_bytes == 1048576
    assert "[truncated" not in _capture_long_message(cli, memory_repo, "ses_before")

    proc = cli("llm", "approve", "--yes", repo=memory_repo)
    assert "capture.max_message_bytes: 1024" in proc.stdout
    assert "[truncated: message was" in _capture_long_message(cli, memory_repo, "ses_after")


def test_a_raised_message_cap_needs_no_approval(memory_repo):
    config = memory_repo.root / "memory-config.yaml"
    config.write_text("capture:\n  max_message_bytes: 4194304\n", encoding="utf-8")
    assert load_config(memory_repo.root).capture.max_message_bytes == 4194304
    config.write_text("capture:\n  max_message_bytes: 2048\n", encoding="utf-8")
    assert load_config(memory_repo.root).capture.max_message_bytes == 1048576


def test_a_pulled_redaction_pattern_waits_for_approval(memory_repo, git, cli):
    """A collaborator's `extra_patterns: [{name: pii, pattern: "(?i)postgres"}]`, pulled,
    cut the word from every transcript this machine captured, for good (and turned a name
    holding it into "a name that holds a secret", so every push was refused). It waits for
    this machine's approval, as the other settings that decide what capture keeps."""
    config = memory_repo.root / "memory-config.yaml"
    config.write_text(
        config.read_text().replace(
            "extra_patterns: []", 'extra_patterns:\n      - {name: pii, pattern: "(?i)design"}'
        )
    )
    git(memory_repo, "commit", "-q", "-am", "maintenance: redaction")
    assert load_config(memory_repo.root).capture.extra_patterns == ()
    assert "[redacted:pii]" not in _capture_long_message(cli, memory_repo, "ses_before")
    # whoever wrote it learns it is not used yet, from capture itself
    from autopoiesis.capture.stream import process_stream

    report = process_stream(memory_repo, [])
    assert any(
        "capture.redaction.extra_patterns" in w and "llm approve" in w for w in report.warnings
    )

    proc = cli("llm", "approve", "--yes", repo=memory_repo)
    assert 'capture.redaction.extra_patterns: [{"name": "pii", "pattern": "(?i)design"}]' in (
        proc.stdout
    )
    assert "the whole [redacted:pii] document" in _capture_long_message(
        cli, memory_repo, "ses_after"
    )
