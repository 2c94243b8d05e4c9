"""Where every harness keeps its sessions on this machine: each harness's package says
(`SESSION_GLOBS`, `~` and `$VARS` expanded, so HOME decides); the daemon's session watcher
watches them (`daemon.session_globs`, whose default is a copy of their union: the config
cannot import the harnesses, a test holds the two together), and `autopoiesis import --all`
imports everything in them, once (a second run files nothing new).
"""

from __future__ import annotations

import glob
import importlib
import os
import pkgutil
from collections.abc import Iterable
from pathlib import Path

import autopoiesis.integrations as integrations


def session_globs() -> dict[str, tuple[str, ...]]:
    """Each harness package's SESSION_GLOBS, by package name."""
    out: dict[str, tuple[str, ...]] = {}
    for info in pkgutil.iter_modules(integrations.__path__):
        if info.ispkg:
            module = importlib.import_module(f"autopoiesis.integrations.{info.name}")
            globs = tuple(getattr(module, "SESSION_GLOBS", ()))
            if globs:
                out[info.name] = globs
    return out


def all_session_globs() -> tuple[str, ...]:
    """Every harness's globs, each once, in the packages' order."""
    return tuple(dict.fromkeys(g for globs in session_globs().values() for g in globs))


def history_files(globs: Iterable[str] | None = None) -> list[Path]:
    """The files GLOBS (default: every harness's) match on this machine, each once, sorted
    (a glob naming a variable that is not set matches nothing)."""
    found: set[str] = set()
    for pattern in all_session_globs() if globs is None else globs:
        expanded = os.path.expandvars(os.path.expanduser(pattern))
        if "$" in expanded:
            continue
        for hit in glob.iglob(expanded, recursive=True):
            if os.path.isfile(hit):
                found.add(os.path.realpath(hit))
    return [Path(p) for p in sorted(found)]
