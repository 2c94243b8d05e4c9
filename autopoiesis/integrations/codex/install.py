"""Install autopoiesis's Codex hooks, and take them out again.

**Codex** 0.124 and later run command hooks from `[hooks]` tables in
`$CODEX_HOME/config.toml` (default ~/.codex): autopoiesis adds SessionStart,
UserPromptSubmit, Stop and SessionEnd (codex.hooks) at the end of the file. Older Codex
runs only one `notify` program after each agent turn (`notify = [...]` at the top of the
file): autopoiesis sets it too, unless the user has a notify of their own, which is never
replaced (the hooks do without it). Each part is written between two marker comments, so
uninstalling removes exactly those lines. Codex asks the user to review and trust new
hooks once (`/hooks`) before it runs them.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import HookInstallError
from autopoiesis.integrations.install import IntegrationReport, hook_command, write_settings

CODEX_BEGIN = (
    "# autopoiesis: begin (written by `autopoiesis integrate codex`; `--uninstall` removes it)"
)
CODEX_END = "# autopoiesis: end"
HOOKS_BEGIN = (
    "# autopoiesis: hooks begin (written by `autopoiesis integrate codex`; `--uninstall` "
    "removes them)"
)
HOOKS_END = "# autopoiesis: hooks end"
CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
CODEX_TIMEOUT = 15  # seconds; the hooks stop themselves earlier (integrations.DEADLINES)


def codex_config_path() -> Path:
    """$CODEX_HOME/config.toml, by default ~/.codex/config.toml."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"


def codex_notify(repo: MemoryRepo, *, python: str | None = None) -> list[str]:
    """The argv Codex runs after each turn (it appends the event's JSON as the last argument)."""
    return [
        python or sys.executable,
        "-P",
        "-m",
        "autopoiesis",
        "-C",
        str(repo.root),
        "hook",
        "codex",
        "notify",
    ]


def _read_codex(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = path.read_bytes().decode("utf-8")  # its line ends as they are (CRLF stays)
    except FileNotFoundError:
        return "", {}
    except UnicodeDecodeError:
        raise HookInstallError(
            f"{path} is not UTF-8 text; fix it first. Nothing was changed."
        ) from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HookInstallError(
            f"{path} is not valid TOML ({exc}); fix it first. Nothing was changed."
        ) from None


def _without_block(text: str, begin: str = CODEX_BEGIN, end: str = CODEX_END) -> tuple[str, str]:
    """TEXT without the lines from BEGIN to END, and those lines ('' when there are none)."""
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, l in enumerate(lines) if l.rstrip("\r\n") == begin)
        stop = next(i for i in range(start, len(lines)) if lines[i].rstrip("\r\n") == end)
    except StopIteration:
        return text, ""
    return "".join(lines[:start] + lines[stop + 1 :]), "".join(lines[start : stop + 1])


def hooks_block(repo: MemoryRepo, *, python: str | None = None) -> str:
    """The `[hooks]` tables autopoiesis adds to config.toml, between their markers."""
    out = [HOOKS_BEGIN]
    for event in CODEX_EVENTS:
        command = hook_command(repo, "codex", event, python=python)
        out += [
            f"[[hooks.{event}]]",
            f"[[hooks.{event}.hooks]]",
            'type = "command"',
            f"command = {json.dumps(command)}",
            f"timeout = {CODEX_TIMEOUT}",
        ]
    return "\n".join([*out, HOOKS_END]) + "\n"


def install_codex(
    repo: MemoryRepo, config: Path, *, python: str | None = None
) -> IntegrationReport:
    """Add autopoiesis's hooks to CONFIG, and its notify unless the user has one."""
    report = IntegrationReport(config)
    text, data = _read_codex(config)
    rest, old_notify = _without_block(text)
    rest, old_hooks = _without_block(rest, HOOKS_BEGIN, HOOKS_END)
    want = codex_notify(repo, python=python)
    theirs = not old_notify and "notify" in data  # Codex runs one notify: theirs stays
    notify = (
        ""
        if theirs
        else f"{CODEX_BEGIN}\nnotify = [{', '.join(json.dumps(a) for a in want)}]\n{CODEX_END}\n"
    )
    hooks = hooks_block(repo, python=python)
    body = rest.strip("\r\n")
    nl = "\r\n" if "\r\n" in text else "\n"  # a file of CRLF lines (Windows) gets ours so
    notify, hooks = notify.replace("\n", nl), hooks.replace("\n", nl)
    # top-level keys must precede every [table]; the hook tables go last
    new = notify + (nl if notify and body else "") + body + (nl * 2 if body else "") + hooks
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise HookInstallError(
            f"could not add autopoiesis's hooks to {config} as TOML ({exc}); if it defines "
            "hooks of its own as inline arrays, write them as [[hooks.EVENT]] tables. Nothing "
            "was changed."
        ) from None
    if not theirs and parsed.get("notify") != want:
        raise HookInstallError(
            f"could not write notify into {config} as TOML; nothing was changed."
        )
    for name, old, wanted in [("notify", old_notify, notify)] * (not theirs) + [
        (event, old_hooks, hooks) for event in CODEX_EVENTS
    ]:
        (report.unchanged if old == wanted else report.updated if old else report.added).append(
            name
        )
    if report.changed:
        write_settings(config, new)
    return report


def uninstall_codex(config: Path) -> IntegrationReport:
    """Remove the lines `install_codex` wrote (between its marker comments), nothing else."""
    report = IntegrationReport(config)
    text, _ = _read_codex(config)
    rest, notify = _without_block(text)
    rest, hooks = _without_block(rest, HOOKS_BEGIN, HOOKS_END)
    if notify:
        report.removed.append("notify")
    if hooks:
        report.removed.extend(CODEX_EVENTS)
    if report.removed:
        ending = "\r\n" if "\r\n" in text else "\n"
        write_settings(config, rest.strip("\r\n") + ending if rest.strip() else "")
    return report
