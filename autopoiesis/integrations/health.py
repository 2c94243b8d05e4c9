"""The check of `doctor` for the agent harnesses (core.health.Check): every hook and MCP
registration autopoiesis wrote into a harness's settings (Claude Code's settings files
and ~/.claude.json or .mcp.json, Codex's config.toml), found where `integrate` writes
them for this user, for the project of the current folder and for every project
~/.claude.json names (where Claude Code records each folder it opened, and `integrate`
its local MCP entry). Each must point at a
memory repository that exists (this one, or another the user chose) and run a Python
that is still there: a hook pointed at a folder that is gone runs, finds nothing, and
exits 0, so nothing else would ever tell.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autopoiesis.core.health import Check, Finding, note, ok, problem
from autopoiesis.plugins import hookimpl


def _project_here(memory: Any) -> Path | None:
    """The git repository of the current folder, unless it is the memory repo itself."""
    from autopoiesis.git.runner import toplevel

    top = toplevel(Path.cwd())
    if top is None or top.resolve() == memory.root.resolve():
        return None
    return top.resolve()


def _claude_projects(memory: Any) -> list[Path]:
    """The project folders whose Claude Code settings may call a memory: the current
    folder's, then each one ~/.claude.json names that still exists. `integrate` runs in a
    project, and `doctor` is run from anywhere: a check of the current folder's project
    alone told a memory every project calls that no harness calls it."""
    from autopoiesis.integrations.claude_code.mcp_config import claude_json_path

    here = _project_here(memory)
    folders = [here] if here is not None else []
    try:
        data = json.loads(claude_json_path().read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError):
        data = None
    named = data.get("projects") if isinstance(data, dict) else None
    seen = {f.resolve() for f in folders} | {memory.root.resolve()}
    for name in named if isinstance(named, dict) else ():
        folder = Path(name)  # as named: the key of its local MCP entry
        if folder.is_absolute() and folder.is_dir() and folder.resolve() not in seen:
            seen.add(folder.resolve())
            folders.append(folder)
    return folders


def _places(memory: Any) -> Iterator[tuple[str, str, list[list[str]]]]:
    """(harness, where, the argv of each command found there) for every place autopoiesis
    writes a hook or a server entry."""
    from autopoiesis.integrations.claude_code.install import CLAUDE_EVENTS, installed_hooks
    from autopoiesis.integrations.claude_code.mcp_config import (
        claude_config_dir,
        mcp_location,
        registered,
    )

    projects = _claude_projects(memory)
    settings = [claude_config_dir() / "settings.json"]
    for project in projects:
        settings += [project / ".claude" / "settings.local.json", project / ".claude/settings.json"]
    for path in settings:
        hooks = installed_hooks(path)
        if hooks:
            missing = [e for e in CLAUDE_EVENTS if e not in hooks]
            where = f"hooks in {path}" + (f" (missing: {', '.join(missing)})" if missing else "")
            yield "Claude Code", where, [_split(c) for c in hooks.values()]
    scopes = [("user", Path.cwd())]
    for project in projects:
        scopes += [("local", project), ("project", project)]
    for scope, project in scopes:
        path, keys = mcp_location(scope, project)
        entry = registered(path, keys)
        if entry is not None:
            argv = [str(entry.get("command", ""))] + [str(a) for a in entry.get("args") or []]
            yield "Claude Code", f"MCP server ({scope} scope) in {path}", [argv]
    yield from _codex()


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _codex() -> Iterator[tuple[str, str, list[list[str]]]]:
    """Codex's notify and its [[hooks.EVENT]] entries autopoiesis wrote in config.toml."""
    import tomllib

    from autopoiesis.integrations.codex.install import (
        CODEX_BEGIN,
        CODEX_EVENTS,
        codex_config_path,
    )

    path = codex_config_path()
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return
    notify = data.get("notify")
    if CODEX_BEGIN in text and isinstance(notify, list):
        yield "Codex", f"notify in {path}", [[str(a) for a in notify]]
    hooks = {
        event: _split(entry["command"])
        for event, entry in _codex_hook_entries(data.get("hooks"))
        if " hook codex " in f" {entry['command']} "
    }
    if hooks:
        missing = [e for e in CODEX_EVENTS if e not in hooks]
        where = f"hooks in {path}" + (f" (missing: {', '.join(missing)})" if missing else "")
        yield "Codex", where, list(hooks.values())


def _codex_hook_entries(tables: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event, hook) for each command hook of config.toml's [[hooks.EVENT]] tables."""
    if not isinstance(tables, dict):
        return
    for event, groups in tables.items():
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                    yield event, entry


def _judge(memory: Any, harness: str, where: str, argv: list[str]) -> Finding:
    """Where ARGV (an autopoiesis command a harness runs) sends its calls, and whether it can."""
    from autopoiesis.core.paths import MemoryRepo

    name = harness
    fix = f"run `autopoiesis integrate {'codex' if harness == 'Codex' else 'claude-code'}` again"
    python = argv[0] if argv else ""
    if os.path.isabs(python) and not Path(python).exists():
        return problem(
            name, f"{where}: its Python {python} is gone, so it does nothing", fix, where=where
        )
    target = argv[argv.index("-C") + 1] if "-C" in argv[:-1] else None
    if target is None:
        return note(name, f"{where}: uses whatever memory the folder it runs in names")
    repo = Path(target).expanduser()
    if not repo.is_dir():
        return problem(
            name,
            f"{where}: points at {target}, which does not exist; it finds no memory and exits "
            "quietly",
            fix,
        )
    if not MemoryRepo(repo).is_initialized():
        return problem(name, f"{where}: points at {target}, which is not a memory repository", fix)
    if repo.resolve() != memory.root.resolve():
        return note(name, f"{where}: sends its sessions to another memory, {target}")
    return ok(name, f"{where}: this memory")


def check_harnesses(memory: Any) -> Iterator[Finding]:
    found = False
    said: set[str] = set()
    for harness, where, commands in _places(memory):
        for argv in commands:
            found = True
            finding = _judge(memory, harness, where, argv)
            if finding.summary not in said:  # the five hooks of a file say it once
                said.add(finding.summary)
                yield finding
    if not found:
        yield note(
            "harnesses",
            "no agent harness calls this memory yet (looked at the user's Claude Code and Codex "
            "settings, this folder's project and the projects ~/.claude.json names)",
            "`autopoiesis integrate claude-code` (or `codex`) in your project",
        )


@hookimpl
def register_checks(register: Any) -> None:
    register(Check("harnesses", check_harnesses, ("Claude Code", "Codex")))
