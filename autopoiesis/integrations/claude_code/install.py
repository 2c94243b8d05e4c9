"""Install autopoiesis's Claude Code hooks, and take them out again.

**Claude Code** keeps hooks in settings.json (`~/.claude/settings.json` for the user,
`.claude/settings.json` or `.claude/settings.local.json` in a project) as
`hooks: {EVENT: [{matcher?, hooks: [{type: "command", command, timeout?}]}]}`. An entry
is autopoiesis's when its command runs `autopoiesis ... hook claude-code EVENT`; every
other entry (the user's own hooks, other tools') is left exactly as it was. Installing
again is a no-op, or updates our entries in place (another memory repo, another budget);
uninstalling removes our entries and the groups and event lists that held only them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import HookInstallError
from autopoiesis.integrations.install import IntegrationReport, hook_command, json_settings

CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreCompact",
    "Stop",
    "SubagentStop",
    "SessionEnd",
)
# Seconds Claude Code gives each hook. The context hooks stop themselves earlier
# (integrations.DEADLINES) and answer "no context"; SessionEnd's timeout also raises Claude
# Code's 1.5 s budget for the hooks it runs at exit.
CLAUDE_TIMEOUTS = {
    "SessionStart": 15,
    "UserPromptSubmit": 15,
    "PreCompact": 15,
    "Stop": 15,
    "SubagentStop": 15,
    "SessionEnd": 15,
}
# An autopoiesis hook command, however it was spelled (`autopoiesis ...`, `python -m autopoiesis
# ...`).
_OURS = re.compile(r"\bautopoiesis\b.*\shook\s+claude-code\s+([A-Za-z]+)\b")


def claude_settings_path(
    *,
    project: str | os.PathLike[str] | None = None,
    user: bool = False,
    local: bool = True,
) -> Path:
    """The user's settings.json ($CLAUDE_CONFIG_DIR, else ~/.claude) with USER; else
    PROJECT's .claude/settings.local.json (LOCAL: yours alone, kept out of the project's git
    by Claude Code, the place for paths of this machine) or .claude/settings.json (shared
    with everyone on the project)."""
    if user:
        from autopoiesis.integrations.claude_code.mcp_config import claude_config_dir

        return claude_config_dir() / "settings.json"
    base = project_folder(project)
    return base / ".claude" / ("settings.local.json" if local else "settings.json")


def project_folder(project: str | os.PathLike[str] | None) -> Path:
    """PROJECT (default: the current folder), absolute; HookInstallError when it is no folder."""
    base = Path(project or ".").expanduser().resolve()
    if not base.is_dir():
        what = "does not exist" if not base.exists() else "is not a folder"
        raise HookInstallError(
            f"{base} {what}; pass --project with the project's folder (or --user)."
        )
    return base


def installed_hooks(settings: Path) -> dict[str, str]:
    """The command of each autopoiesis hook in SETTINGS by event ({} when there is none,
    or the file cannot be read)."""
    try:
        hooks = _hooks_of(_read_settings(settings), settings)
    except HookInstallError:
        return {}
    found: dict[str, str] = {}
    for groups in hooks.values():
        for group in groups if isinstance(groups, list) else ():
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else ():
                event = _our_event(entry)
                if event:
                    found.setdefault(event, entry["command"])
    return found


def _read_settings(path: Path) -> dict[str, Any]:
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
        raise HookInstallError(
            f"{path} holds a JSON {type(data).__name__}, not an object of settings; fix it first. "
            "Nothing was changed."
        )
    return data


def _hooks_of(data: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = data.get("hooks")
    if hooks is None:
        return {}
    if not isinstance(hooks, dict):
        raise HookInstallError(
            f"{path}: 'hooks' is a {type(hooks).__name__}, not an object of events; fix it first. "
            "Nothing was changed."
        )
    return hooks


def _our_event(entry: Any) -> str | None:
    """The event of an autopoiesis hook entry, None for anything else."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    m = _OURS.search(entry["command"])
    return m.group(1) if m else None


def _groups(hooks: dict[str, Any], event: str, path: Path) -> list[Any]:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise HookInstallError(
            f"{path}: hooks.{event} is not a list of matcher groups; fix it first. Nothing was "
            "changed."
        )
    return groups


def install_claude_code(
    repo: MemoryRepo,
    settings: Path,
    *,
    budget: int | None = None,
    python: str | None = None,
    write: bool = True,
) -> IntegrationReport:
    """Add (or bring up to date) autopoiesis's hook for each of CLAUDE_EVENTS in SETTINGS
    (without WRITE, only into the report, whose `write` writes it)."""
    data = _read_settings(settings)
    hooks = _hooks_of(data, settings)
    report = IntegrationReport(settings)
    for event in CLAUDE_EVENTS:
        event_budget = (
            budget if event in ("SessionStart", "UserPromptSubmit") else None
        )  # the hooks that add context
        want = {
            "type": "command",
            "command": hook_command(repo, "claude-code", event, budget=event_budget, python=python),
            "timeout": CLAUDE_TIMEOUTS[event],
        }
        groups = _groups(hooks, event, settings)
        found = False
        emptied: list[Any] = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                continue
            for entry in list(entries):
                if _our_event(entry) != event:
                    continue
                if found:  # a second copy (a hand edit): keep one
                    entries.remove(entry)
                    report.updated.append(event)
                    if not entries and set(group) <= {"hooks", "matcher"}:
                        emptied.append(group)
                    continue
                found = True
                if entry == want:
                    report.unchanged.append(event)
                else:
                    entries[entries.index(entry)] = want
                    report.updated.append(event)
        groups[:] = [g for g in groups if not any(g is e for e in emptied)]
        if not found:
            groups.append({"hooks": [want]})
            report.added.append(event)
        hooks[event] = groups
    if report.changed:
        data["hooks"] = hooks
        report.to_write(json_settings(settings, data))
    if write:
        report.write()
    return report


def uninstall_claude_code(settings: Path, *, write: bool = True) -> IntegrationReport:
    """Remove every autopoiesis hook entry from SETTINGS, and the groups, event lists and
    `hooks` object left empty by that; nothing else (without WRITE, only in the report)."""
    report = IntegrationReport(settings)
    if not settings.exists():
        return report
    data = _read_settings(settings)
    hooks = _hooks_of(data, settings)
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list) or not any(_our_event(e) for e in entries):
                kept_groups.append(group)
                continue
            rest = [e for e in entries if not _our_event(e)]
            report.removed.extend(ev for e in entries if (ev := _our_event(e)))
            if rest or set(group) - {"hooks", "matcher"}:
                kept_groups.append({**group, "hooks": rest})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if report.removed:
        if hooks:
            data["hooks"] = hooks
        else:
            data.pop("hooks", None)
        report.to_write(json_settings(settings, data))
    if write:
        report.write()
    return report


# where `integrate claude-code` writes, by the scope asked for: the hooks' settings file,
# and the MCP scope of Claude Code (mcp_config.SCOPES)
INTEGRATION_SCOPES = {"local": "local", "shared": "project", "user": "user"}


def integrate_claude_code(
    repo: MemoryRepo | None,
    *,
    project: str | os.PathLike[str] | None = None,
    scope: str = "local",
    mcp: bool = True,
    budget: int | None = None,
    python: str | None = None,
    uninstall: bool = False,
) -> list[IntegrationReport]:
    """Install (or with UNINSTALL remove) the hooks and the MCP server for SCOPE: `local`
    (PROJECT's settings.local.json and Claude Code's local MCP scope: yours alone, the
    right place for this machine's paths), `shared` (PROJECT's settings.json and
    .mcp.json, in the project's git for everyone) or `user` (every project of this user).
    REPO may be None only to uninstall."""
    from autopoiesis.integrations.claude_code import mcp_config

    if scope not in INTEGRATION_SCOPES:
        raise ValueError(f"unknown scope {scope!r}; use one of {', '.join(INTEGRATION_SCOPES)}")
    settings = claude_settings_path(project=project, user=scope == "user", local=scope == "local")
    folder = Path.cwd() if scope == "user" else project_folder(project)
    mcp_path, keys = mcp_config.mcp_location(INTEGRATION_SCOPES[scope], folder)
    # both files are read and changed in memory first: one that cannot be (invalid JSON)
    # stops the integration before the other is written, as its error says
    if uninstall:
        reports = [uninstall_claude_code(settings, write=False)]
        if mcp:
            reports.append(mcp_config.uninstall_mcp(mcp_path, keys, write=False))
    else:
        assert repo is not None
        reports = [install_claude_code(repo, settings, budget=budget, python=python, write=False)]
        if mcp:
            reports.append(mcp_config.install_mcp(repo, mcp_path, keys, python=python, write=False))
    for report in reports:
        report.write()
    return reports
