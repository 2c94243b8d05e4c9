"""Register autopoiesis's MCP server with Claude Code, and take it out again.

Claude Code reads MCP servers from three scopes (its documentation, "MCP" / "scopes"):

* **local** (the default of `claude mcp add`): you, in one project. Kept in the user's
  `~/.claude.json` under `projects["/abs/project"].mcpServers`.
* **project**: everyone on the project, in `.mcp.json` at its root (checked in; Claude Code
  asks each person to approve it).
* **user**: you, in every project: `~/.claude.json`'s top-level `mcpServers`.

`~/.claude.json` is `$CLAUDE_CONFIG_DIR/.claude.json` when that variable is set. A server
entry is `{"type": "stdio", "command": ..., "args": [...], "env": {}}`. Only the entry
named SERVER_NAME is ever written or removed; everything else in these files (Claude
Code keeps much of its own state in ~/.claude.json) is left as it was.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import HookInstallError
from autopoiesis.integrations.install import IntegrationReport, json_settings

SERVER_NAME = "autopoiesis"
SCOPES = ("local", "project", "user")


def claude_config_dir() -> Path:
    """$CLAUDE_CONFIG_DIR, else ~/.claude: where Claude Code keeps the user's settings."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def claude_json_path() -> Path:
    """The user's ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json when that is set)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() / ".claude.json" if env else Path.home() / ".claude.json"


def mcp_location(scope: str, project: Path) -> tuple[Path, tuple[str, ...]]:
    """The file and the keys down to the `mcpServers` object of SCOPE for PROJECT."""
    if scope == "project":
        return project / ".mcp.json", ("mcpServers",)
    if scope == "user":
        return claude_json_path(), ("mcpServers",)
    if scope == "local":
        return claude_json_path(), ("projects", str(project), "mcpServers")
    raise ValueError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")


def server_entry(repo: MemoryRepo, *, python: str | None = None) -> dict[str, Any]:
    """The stdio server Claude Code starts: this interpreter, `-m autopoiesis -C REPO mcp`
    (absolute paths: Claude Code's environment may not have the virtualenv on PATH)."""
    return {
        "type": "stdio",
        "command": python or sys.executable,
        "args": ["-P", "-m", "autopoiesis", "-C", str(repo.root), "mcp"],
        "env": {},
    }


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError:
        raise HookInstallError(
            f"{path} is not UTF-8 text; fix it first. Nothing was changed."
        ) from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HookInstallError(
            f"{path} is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}); fix it "
            "first. Nothing was changed."
        ) from None
    if not isinstance(data, dict):
        raise HookInstallError(f"{path} is not a JSON object; fix it first. Nothing was changed.")
    return data


def _servers(data: dict[str, Any], keys: tuple[str, ...], path: Path, create: bool) -> Any:
    """The `mcpServers` object at KEYS in DATA (made on the way with CREATE), or None."""
    node: Any = data
    for key in keys:
        child = node.get(key)
        if child is None:
            if not create:
                return None
            child = node[key] = {}
        if not isinstance(child, dict):
            raise HookInstallError(
                f"{path}: {'.'.join(keys)} is not an object; fix it first. Nothing was changed."
            )
        node = child
    return node


def registered(path: Path, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The entry of our server at KEYS in PATH, None when there is none (or the file
    cannot be read: the check that asks says so itself)."""
    try:
        servers = _servers(_read(path), keys, path, create=False)
    except HookInstallError:
        return None
    entry = servers.get(SERVER_NAME) if servers else None
    return entry if isinstance(entry, dict) else None


def install_mcp(
    repo: MemoryRepo,
    path: Path,
    keys: tuple[str, ...],
    *,
    python: str | None = None,
    write: bool = True,
) -> IntegrationReport:
    """Add (or bring up to date) our server's entry at KEYS in PATH (without WRITE, only
    into the report, whose `write` writes it)."""
    report = IntegrationReport(path)
    data = _read(path)
    servers = _servers(data, keys, path, create=True)
    want = server_entry(repo, python=python)
    have = servers.get(SERVER_NAME)
    if have == want:
        report.unchanged.append("MCP server")
        return report
    (report.updated if have is not None else report.added).append("MCP server")
    servers[SERVER_NAME] = want
    report.to_write(json_settings(path, data))
    if write:
        report.write()
    return report


def uninstall_mcp(path: Path, keys: tuple[str, ...], *, write: bool = True) -> IntegrationReport:
    """Remove our server's entry at KEYS in PATH, and nothing else (without WRITE, only in
    the report)."""
    report = IntegrationReport(path)
    if not path.exists():
        return report
    data = _read(path)
    servers = _servers(data, keys, path, create=False)
    if servers is None or SERVER_NAME not in servers:
        return report
    del servers[SERVER_NAME]
    report.removed.append("MCP server")
    _prune(data, keys)
    if not data and path.name == ".mcp.json":  # it held our server alone: gone with it
        report.to_write(drop=True)
    else:
        report.to_write(json_settings(path, data))
    if write:
        report.write()
    return report


def _prune(data: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Drop the objects along KEYS that removing our entry left empty, deepest first."""
    for depth in range(len(keys), 0, -1):
        node: Any = data
        for key in keys[: depth - 1]:
            node = node.get(key)
        if isinstance(node, dict) and node.get(keys[depth - 1]) == {}:
            del node[keys[depth - 1]]
