"""Private knowledge: which paths of a memory are private, whether a file is git-crypt
ciphertext, and whether this clone holds the key (unlocked) or not (locked).

A path is private when it matches `knowledge/private/**` (always), a pattern of
`private.paths` (memory-config.yaml), or a `.gitattributes` line that gives it git-crypt's
filter. Patterns are read as `.gitattributes` reads them: `*` within a folder, `**` across
folders, a pattern without `/` matching a file name at any depth. git-crypt encrypts such a
file in every commit (its clean filter runs at `git add`); a clone without the key sees
ciphertext that starts with MAGIC.

`private.model_paths` says which private paths may reach a model (the compiled context, an
LLM stage, an MCP client): none by default; it is one of the settings a machine approves
(core/approval.py), as a clone can change it.

Kept light (stdlib only): the pre-push hook and every search ask it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

MAGIC = b"\x00GITCRYPT\x00"  # the first bytes of every file git-crypt encrypted
DEFAULT_PRIVATE = "knowledge/private/**"
ATTRIBUTES = ".gitattributes"
CRYPT_ATTRIBUTES = "filter=git-crypt diff=git-crypt"


def is_ciphertext(data: bytes) -> bool:
    """Whether DATA is a file as git-crypt stores it (encrypted)."""
    return data.startswith(MAGIC)


def file_is_ciphertext(path: Path) -> bool:
    """Whether the file at PATH holds ciphertext (False when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return is_ciphertext(fh.read(len(MAGIC)))
    except OSError:
        return False


def readable_text(path: Path) -> bool:
    """Whether PATH is a regular file this clone can read as text (not ciphertext)."""
    return path.is_file() and not file_is_ciphertext(path)


@lru_cache(maxsize=256)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    p = pattern.strip().lstrip("/")
    anchored = "/" in pattern.strip().rstrip("/")
    if p.endswith("/"):
        p += "**"
    out, i = "", 0
    while i < len(p):
        if p.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif p.startswith("**", i):
            out += ".*"
            i += 2
        elif p[i] == "*":
            out += "[^/]*"
            i += 1
        elif p[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(p[i])
            i += 1
    return re.compile(("" if anchored else "(?:.*/)?") + out + r"\Z")


def matches(path: str, patterns: Iterable[str]) -> bool:
    """Whether the repo-relative PATH matches one of PATTERNS (gitattributes' rules)."""
    return any(_pattern_regex(p).match(path) for p in patterns if p.strip())


def attribute_patterns(root: Path) -> list[str]:
    """The patterns ROOT's .gitattributes gives git-crypt's filter."""
    try:
        text = (Path(root) / ATTRIBUTES).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not parts[0].startswith("#") and "filter=git-crypt" in parts[1:]:
            out.append(parts[0])
    return out


def private_patterns(root: Path, configured: Sequence[str] = ()) -> list[str]:
    """Every pattern that makes a path of ROOT private (see the module doc)."""
    found = [DEFAULT_PRIVATE, *configured, *attribute_patterns(root)]
    return list(dict.fromkeys(p for p in found if p.strip()))


def is_private(path: str, patterns: Iterable[str]) -> bool:
    return matches(path, patterns)


# Why a private file is not in a compiled context (`compile --explain`).
WITHHELD = "private (git-crypt): never sent to a model unless private.model_paths names it"


def may_reach_model(path: str, private: Iterable[str], model_paths: Iterable[str]) -> bool:
    """Whether PATH may be shown to a model: not private, or a private path that
    `private.model_paths` lets through."""
    return not matches(path, private) or matches(path, model_paths)


def crypt_dir(root: Path) -> Path | None:
    """The git-crypt folder of ROOT's repository (in the common git folder, which the
    linked worktrees share), or None outside git."""
    from autopoiesis.core.gitdirs import common_git_dir

    gitdir = common_git_dir(Path(root) / ".git")
    return None if gitdir is None else gitdir / "git-crypt"


def uses_git_crypt(root: Path) -> bool:
    """Whether ROOT's repository encrypts some paths with git-crypt (its .gitattributes)."""
    return bool(attribute_patterns(root))


def is_unlocked(root: Path) -> bool:
    """Whether this clone holds a git-crypt key (`git-crypt unlock` or `init` ran here)."""
    folder = crypt_dir(root)
    keys = folder / "keys" if folder is not None else None
    return keys is not None and keys.is_dir() and any(keys.iterdir())


def is_locked(root: Path) -> bool:
    """Whether ROOT's repository has encrypted paths and this clone cannot read them."""
    return uses_git_crypt(root) and not is_unlocked(root)


__all__ = [
    "CRYPT_ATTRIBUTES",
    "DEFAULT_PRIVATE",
    "MAGIC",
    "WITHHELD",
    "attribute_patterns",
    "crypt_dir",
    "file_is_ciphertext",
    "is_ciphertext",
    "is_locked",
    "is_private",
    "is_unlocked",
    "matches",
    "may_reach_model",
    "private_patterns",
    "readable_text",
    "uses_git_crypt",
]
