"""`autopoiesis daemon install`: start the daemon with the session, as a systemd user unit
(Linux) or a launchd agent (macOS). One unit per memory repo, named after its folder
and a hash of its path. It runs `python -m autopoiesis -C REPO daemon run` with the
interpreter autopoiesis is installed in; SIGHUP (`systemctl --user reload`) reloads
the config, SIGTERM stops it cleanly, a crash restarts it after 30 s.
"""

from __future__ import annotations

import hashlib
import os
import plistlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from autopoiesis.core.paths import MemoryRepo, atomic_write
from autopoiesis.errors import AutopoiesisError

KINDS = ("systemd", "launchd")


@dataclass(frozen=True)
class Installed:
    kind: str
    path: Path
    name: str
    next_steps: tuple[str, ...]


def default_kind() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def unit_name(repo: MemoryRepo) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", repo.root.name.lower()).strip("-")[:30] or "memory"
    digest = hashlib.sha256(str(repo.root).encode()).hexdigest()[:8]
    return f"autopoiesis-{slug}-{digest}"


def _home(home: Path | None) -> Path:
    return Path(home) if home else Path(os.path.expanduser("~"))


def unit_path(repo: MemoryRepo, kind: str, home: Path | None = None) -> Path:
    if kind == "systemd":
        base = (
            Path(os.environ["XDG_CONFIG_HOME"])
            if os.environ.get("XDG_CONFIG_HOME") and home is None
            else _home(home) / ".config"
        )
        return base / "systemd" / "user" / f"{unit_name(repo)}.service"
    if kind == "launchd":
        return _home(home) / "Library" / "LaunchAgents" / f"dev.autopoiesis.{unit_name(repo)}.plist"
    raise AutopoiesisError(f"unknown service manager {kind!r}; use one of: {', '.join(KINDS)}.")


def _command(repo: MemoryRepo, python: str) -> list[str]:
    return [python, "-m", "autopoiesis", "-C", str(repo.root), "daemon", "run"]


def systemd_unit(repo: MemoryRepo, python: str = sys.executable) -> str:
    def quote(arg: str) -> str:  # systemd's own quoting: double quotes, backslash escapes
        return (
            '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
            if re.search(r'[\s"\\]', arg)
            else arg
        )

    return (
        "[Unit]\n"
        f"Description=autopoiesis memory daemon for {repo.root}\n"
        "After=default.target\n\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={' '.join(quote(a) for a in _command(repo, python))}\n"
        "ExecReload=/bin/kill -HUP $MAINPID\n"
        "KillSignal=SIGTERM\n"
        "TimeoutStopSec=60\n"
        "Restart=on-failure\n"
        "RestartSec=30\n\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def launchd_plist(repo: MemoryRepo, python: str = sys.executable) -> str:
    log = repo.state_file("daemon_out")
    return plistlib.dumps(
        {
            "Label": f"dev.autopoiesis.{unit_name(repo)}",
            "ProgramArguments": _command(repo, python),
            "WorkingDirectory": str(repo.root),
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},
            "ThrottleInterval": 30,
            "StandardOutPath": str(log),
            "StandardErrorPath": str(log),
        }
    ).decode("utf-8")


def install(
    repo: MemoryRepo,
    kind: str | None = None,
    *,
    home: Path | None = None,
    python: str = sys.executable,
) -> Installed:
    """Write the unit (replacing an older one of this repo) and say how to enable it."""
    kind = kind or default_kind()
    path = unit_path(repo, kind, home)
    name = unit_name(repo)
    steps: tuple[str, ...]
    if kind == "systemd":
        atomic_write(path, systemd_unit(repo, python))
        steps = (
            "systemctl --user daemon-reload",
            f"systemctl --user enable --now {name}.service",
            f"systemctl --user status {name}.service",
        )
    else:
        atomic_write(path, launchd_plist(repo, python))
        steps = (f"launchctl load -w {path}", f"launchctl list dev.autopoiesis.{name}")
    return Installed(kind, path, name, steps)


def uninstall(
    repo: MemoryRepo, kind: str | None = None, *, home: Path | None = None, manage: bool = True
) -> Installed | None:
    """Stop and disable the unit of this repo through its service manager when that is
    here (MANAGE), remove its file; None when there was none. `next_steps` lists what
    could not be run."""
    kind = kind or default_kind()
    path = unit_path(repo, kind, home)
    name = unit_name(repo)
    if not path.exists():
        return None
    if kind == "systemd":
        before = [["systemctl", "--user", "disable", "--now", f"{name}.service"]]
        after = [["systemctl", "--user", "daemon-reload"]]
    else:
        before, after = [["launchctl", "unload", "-w", str(path)]], []
    left = [c for c in before if not (manage and _run(c))]
    if (
        kind == "systemd" and left
    ):  # not disabled by systemctl: undo what `enable` made, and ask for the stop
        (path.parent / "default.target.wants" / path.name).unlink(missing_ok=True)
        left = [["systemctl", "--user", "stop", f"{name}.service"]]
    path.unlink()
    left += [c for c in after if not (manage and _run(c))]
    return Installed(kind, path, name, tuple(" ".join(c) for c in left))


def _run(command: list[str]) -> bool:
    """Run a service manager's command; False when it is not here or failed."""
    import shutil
    import subprocess

    if shutil.which(command[0]) is None:
        return False
    try:
        return subprocess.run(command, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
