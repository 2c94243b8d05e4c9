"""Install autopoiesis's hooks into a harness's own settings, and take them out again:
what every harness's install shares (claude_code/install.py and codex/install.py hold
each harness's own settings file).

The command names the interpreter autopoiesis runs in and the memory repo as absolute
paths (`python -P -m autopoiesis -C REPO hook ...`): a hook runs from the harness's
environment, whose PATH may not hold the virtualenv, and in the project's folder, which
is not the memory repo (and `-P` keeps a folder of that project named autopoiesis from
being imported in place of the installed package).
"""

from __future__ import annotations

import json
import re
import shlex
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo, atomic_write
from autopoiesis.errors import HookInstallError


@dataclass
class IntegrationReport:
    """What an install or uninstall did to one settings file."""

    path: Path
    added: list[str] = field(default_factory=list)  # events (Claude Code) or "notify" (Codex)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    # what is still to be written into PATH (None: nothing), or with `drop`, that PATH goes:
    # an integration of two files computes both before it writes either (`write`)
    pending: str | None = field(default=None, repr=False)
    drop: bool = field(default=False, repr=False)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def to_write(self, text: str | None = None, *, drop: bool = False) -> None:
        """Keep TEXT (or, with DROP, the file's removal) to be written by `write`; a file
        its owner made read-only is refused here, before either file of an integration
        is written (`refuse_read_only`)."""
        if text is not None or drop:
            refuse_read_only(self.path)
        self.pending, self.drop = text, drop

    def write(self) -> None:
        """Write what this report keeps pending into its file (or remove the file), once."""
        if self.drop:
            self.path.unlink(missing_ok=True)
        elif self.pending is not None:
            write_settings(self.path, self.pending)
        self.pending, self.drop = None, False


def hook_command(
    repo: MemoryRepo,
    harness: str,
    event: str,
    *,
    budget: int | None = None,
    python: str | None = None,
) -> str:
    """The shell command a harness runs for EVENT (Claude Code runs it with sh -c)."""
    parts = [
        python or sys.executable,
        "-P",
        "-m",
        "autopoiesis",
        "-C",
        str(repo.root),
        "hook",
        harness,
        event,
    ]
    if budget is not None:
        parts += ["--budget", str(budget)]
    return shlex.join(parts)


def json_settings(path: Path, data: Any) -> str:
    """DATA as the JSON text of the settings file PATH, laid out as that file is now: its
    indent (spaces or a tab; none for a file on one line, and then its separators), its
    line ends and whether it ends with a line break. A user's settings that autopoiesis
    adds its entry to and takes it out of again so come back byte for byte, wherever
    their layout is one of these; a new file is indented by 2, as Claude Code writes it."""
    try:
        text = path.read_bytes().decode("utf-8-sig")  # its line ends as they are
    except (OSError, UnicodeDecodeError):
        text = ""
    body = text.strip()
    if not body:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if "\n" not in body:  # one line: `{"a": 1}` or JSON.stringify's `{"a":1}`
        spaced = re.search(r'"\s*:\s', body) is not None or not re.search(r'"\s*:', body)
        out = json.dumps(
            data, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":")
        )
    else:
        m = re.search(r"\n([ \t]+)\S", body)
        indent: str | int = (
            (m.group(1) if m.group(1).startswith("\t") else len(m.group(1))) if m else 2
        )
        out = json.dumps(data, indent=indent, ensure_ascii=False)
    if "\r\n" in text:
        out = out.replace("\n", "\r\n")  # a line break in a string is escaped: only layout
    ending = "\r\n" if "\r\n" in text else "\n"
    return out + (ending if text.endswith("\n") else "")


def refuse_read_only(path: Path) -> None:
    """HookInstallError when PATH (its target, for a symlink) is a file its owner made
    read-only: a rename onto it replaces it whatever its mode (as root, or in a folder
    one may write), and a settings file someone locked is theirs to unlock."""
    try:
        mode = path.resolve().stat().st_mode
    except OSError:
        return  # no file yet: it is made
    if stat.S_ISREG(mode) and not mode & stat.S_IWUSR:
        raise HookInstallError(
            f"{path} is read-only (mode {stat.filemode(mode)}); make it writable "
            f"(`chmod u+w {path}`) and run this again. Nothing was changed."
        )


def write_settings(path: Path, text: str) -> None:
    """Replace PATH's content atomically; a symlinked settings file (dotfiles kept in a
    repository of their own) stays a symlink, and its target gets the new content. A
    read-only one is refused (`refuse_read_only`)."""
    refuse_read_only(path)
    atomic_write(path.resolve(), text)
