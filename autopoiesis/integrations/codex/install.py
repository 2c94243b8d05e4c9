"""Install autopoiesis's Codex hook, and take it out again.

**Codex** runs one `notify` program after each agent turn (`notify = [...]` at the top of
`$CODEX_HOME/config.toml`, default ~/.codex). autopoiesis writes its own between two
marker comments, so uninstalling removes exactly those lines; a `notify` the user already
has is never replaced.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import HookInstallError
from autopoiesis.integrations.install import IntegrationReport, write_settings

CODEX_BEGIN = (
    "# autopoiesis: begin (written by `autopoiesis integrate codex`; `--uninstall` removes it)"
)
CODEX_END = "# autopoiesis: end"


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
        text = path.read_text(encoding="utf-8")
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


def _without_our_block(text: str) -> tuple[str, bool]:
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, l in enumerate(lines) if l.rstrip("\r\n") == CODEX_BEGIN)
        end = next(i for i in range(start, len(lines)) if lines[i].rstrip("\r\n") == CODEX_END)
    except StopIteration:
        return text, False
    return "".join(lines[:start] + lines[end + 1 :]), True


def install_codex(
    repo: MemoryRepo, config: Path, *, python: str | None = None
) -> IntegrationReport:
    """Set Codex's `notify` to autopoiesis's hook in CONFIG; refuse when the user has a
    notify program of their own (Codex runs only one)."""
    report = IntegrationReport(config)
    text, data = _read_codex(config)
    want = codex_notify(repo, python=python)
    rest, ours = _without_our_block(text)
    if not ours and "notify" in data:
        raise HookInstallError(
            f"{config} already has notify = {data['notify']!r}, and Codex runs only one notify "
            "program. "
            "Remove that line (or run it from a script that also runs `"
            + shlex.join(want)
            + ' "$1"`), then run this again. Nothing was changed.'
        )
    if ours and data.get("notify") == want:
        report.unchanged.append("notify")
        return report
    block = f"{CODEX_BEGIN}\nnotify = [{', '.join(json.dumps(a) for a in want)}]\n{CODEX_END}\n"
    new = (
        block + ("\n" if rest.strip() else "") + rest.lstrip("\n")
    )  # top-level keys must precede every [table]
    try:
        if tomllib.loads(new).get("notify") != want:
            raise HookInstallError(
                f"could not write notify into {config} as TOML; nothing was changed."
            )
    except tomllib.TOMLDecodeError as exc:
        raise HookInstallError(
            f"could not write notify into {config} as TOML ({exc}); nothing was changed."
        ) from None
    write_settings(config, new)
    (report.updated if ours else report.added).append("notify")
    return report


def uninstall_codex(config: Path) -> IntegrationReport:
    """Remove the lines `install_codex` wrote (between its marker comments), nothing else."""
    report = IntegrationReport(config)
    text, _ = _read_codex(config)
    rest, ours = _without_our_block(text)
    if ours:
        write_settings(config, rest.lstrip("\n"))
        report.removed.append("notify")
    return report
