"""`autopoiesis integrate claude-code`: the hooks in the user's own settings.local.json by
default (machine paths stay out of the project's shared settings.json), the MCP server in
Claude Code's documented places (~/.claude.json's local and user scopes, .mcp.json), the
daemon mentioned, USER.md filled from flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import Cli, Git
from tests.mcp.test_server import INITIALIZE


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HOME of this test's own: the settings it writes there stay out of other tests'."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)


@pytest.fixture
def project(tmp_path: Path, git: Git) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    git(folder, "init", "-q")
    return folder.resolve()


def _claude_json() -> dict:
    return json.loads((Path.home() / ".claude.json").read_text())


def test_default_is_the_local_settings_and_the_local_mcp_scope(
    memory_repo: MemoryRepo, project: Path, cli: Cli
) -> None:
    # Claude Code's own state in ~/.claude.json is kept as it is
    (Path.home() / ".claude.json").write_text(
        json.dumps({"numStartups": 7, "projects": {str(project): {"allowedTools": ["Bash"]}}})
    )
    r = cli("integrate", "claude-code", "--no-input", repo=memory_repo, cwd=project)
    assert r.returncode == 0, r.stderr
    local = project / ".claude" / "settings.local.json"
    assert "hook claude-code SessionStart" in local.read_text()
    assert not (project / ".claude" / "settings.json").exists()
    assert not (project / ".mcp.json").exists()
    data = _claude_json()
    assert data["numStartups"] == 7
    assert data["projects"][str(project)]["allowedTools"] == ["Bash"]
    entry = data["projects"][str(project)]["mcpServers"]["autopoiesis"]
    assert entry == {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-P", "-m", "autopoiesis", "-C", str(memory_repo.root), "mcp"],
        "env": {},
    }
    assert f"added MCP server in {Path.home() / '.claude.json'}" in r.stdout
    assert "The daemon is not running" in r.stdout and "autopoiesis daemon start" in r.stdout
    again = cli("integrate", "claude-code", "--no-input", repo=memory_repo, cwd=project)
    assert again.stdout.count("nothing to change") == 2
    gone = cli("integrate", "claude-code", "--uninstall", repo=memory_repo, cwd=project)
    assert "removed MCP server" in gone.stdout
    assert _claude_json() == {
        "numStartups": 7,
        "projects": {str(project): {"allowedTools": ["Bash"]}},
    }
    assert "hooks" not in json.loads(local.read_text())


def test_shared_and_user_scopes_and_no_mcp(
    memory_repo: MemoryRepo, project: Path, cli: Cli, tmp_path: Path
) -> None:
    cli("integrate", "claude-code", "--shared", repo=memory_repo, cwd=project, check=True)
    assert "hook claude-code Stop" in (project / ".claude" / "settings.json").read_text()
    shared = json.loads((project / ".mcp.json").read_text())
    assert shared["mcpServers"]["autopoiesis"]["args"][-1] == "mcp"
    cli("integrate", "claude-code", "--shared", "--uninstall", repo=memory_repo, cwd=project)
    assert not (project / ".mcp.json").exists()

    config = tmp_path / "claude-config"
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    cli("integrate", "claude-code", "--user", repo=memory_repo, cwd=project, env=env, check=True)
    assert "hook claude-code UserPromptSubmit" in (config / "settings.json").read_text()
    user = json.loads((config / ".claude.json").read_text())
    assert user["mcpServers"]["autopoiesis"]["command"] == sys.executable

    cli("integrate", "claude-code", "--no-mcp", repo=memory_repo, cwd=project, check=True)
    assert not (Path.home() / ".claude.json").exists()


def test_identity_from_flags_is_written_and_committed(
    memory_repo: MemoryRepo, project: Path, cli: Cli, git: Git
) -> None:
    r = cli(
        "integrate",
        "claude-code",
        "--name",
        "Ada Lovelace",
        "--timezone",
        "Europe/London",
        "--no-mcp",
        repo=memory_repo,
        cwd=project,
    )
    assert r.returncode == 0, r.stderr
    assert "wrote Name, Time zone into knowledge/identity/USER.md" in r.stdout
    text = (memory_repo.root / "knowledge/identity/USER.md").read_text()
    assert "- Name: Ada Lovelace\n- Time zone: Europe/London\n- Preferences:" in text
    assert "Edit this file" not in text
    log = git(memory_repo, "log", "-1", "--format=%s").stdout.strip()
    assert log == "identity: the user's name, time zone"


@pytest.mark.slow
def test_the_registered_mcp_server_answers(
    memory_repo: MemoryRepo, project: Path, cli: Cli
) -> None:
    cli("integrate", "claude-code", "--no-input", repo=memory_repo, cwd=project, check=True)
    entry = _claude_json()["projects"][str(project)]["mcpServers"]["autopoiesis"]
    proc = subprocess.run(
        [entry["command"], *entry["args"]],
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        timeout=120,
    )
    answer = json.loads(proc.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"]["name"] == "autopoiesis", proc.stderr


def test_the_help_names_every_hook_it_installs(cli: Cli) -> None:
    from autopoiesis.integrations.claude_code.install import CLAUDE_EVENTS

    help_text = " ".join(cli("integrate", "claude-code", "--help").stdout.split())
    assert [e for e in CLAUDE_EVENTS if e not in help_text] == []


@pytest.mark.parametrize("uninstall", [False, True])
def test_a_config_file_that_cannot_be_read_stops_the_integration_before_anything_is_written(
    memory_repo: MemoryRepo, project: Path, cli: Cli, uninstall: bool
) -> None:
    """The hooks' settings were written (or our hooks taken out of them) before
    ~/.claude.json was found invalid, and the error said "Nothing was changed"."""
    local = project / ".claude" / "settings.local.json"
    if uninstall:
        first = cli("integrate", "claude-code", "--no-input", repo=memory_repo, cwd=project)
        assert first.returncode == 0, first.stderr
    before = local.read_bytes() if uninstall else None
    (Path.home() / ".claude.json").write_text('{"numStartups": 7,')
    args = ["integrate", "claude-code", "--no-input"] + ["--uninstall"] * uninstall
    r = cli(*args, repo=memory_repo, cwd=project)
    assert r.returncode == 1
    assert ".claude.json is not valid JSON" in r.stderr and "Nothing was changed" in r.stderr
    assert "Traceback" not in r.stderr
    if uninstall:
        assert local.read_bytes() == before
    else:
        assert not local.exists()


def test_a_read_only_settings_file_is_refused_before_anything_is_written(
    memory_repo: MemoryRepo, project: Path, cli: Cli
) -> None:
    """A settings file its owner made read-only (chmod 444) was replaced all the same: the
    atomic rename onto it needs only the folder. Now the integration is refused, the file's
    mode named, and neither it nor ~/.claude.json changes; writable again, it goes in."""
    import stat

    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text('{"permissions": {"allow": ["Bash"]}}\n')
    local.chmod(0o444)
    claude = Path.home() / ".claude.json"
    claude.write_text('{"numStartups": 7}\n')
    before = (local.read_bytes(), claude.read_bytes())
    r = cli("integrate", "claude-code", "--no-input", repo=memory_repo, cwd=project)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "is read-only (mode -r--r--r--)" in r.stderr and "chmod u+w" in r.stderr
    assert (local.read_bytes(), claude.read_bytes()) == before
    assert stat.S_IMODE(local.stat().st_mode) == 0o444
    local.chmod(0o644)
    again = cli("integrate", "claude-code", "--no-input", repo=memory_repo, cwd=project)
    assert again.returncode == 0, again.stderr
    assert "hook claude-code SessionStart" in local.read_text()
