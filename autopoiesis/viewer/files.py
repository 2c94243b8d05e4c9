"""The memory files a page may show, read safely: a path given in a URL is refused unless
it is a Markdown file inside the memory folders of the repo (raw/, knowledge/, topics/,
archive/), reached through no symbolic link (core/paths.py's `is_link`: nothing is read
through a link), and not over MAX_BYTES."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from autopoiesis.errors import InvalidArgumentError, UnsafePathError

if TYPE_CHECKING:
    from autopoiesis.memory import Memory

VIEWABLE = ("raw", "knowledge", "topics", "archive")
MAX_BYTES = 8 * 1024 * 1024


class NotFound(InvalidArgumentError):
    """The file a page was asked for is not there (a 404)."""


def checked_path(memory: Memory, path: str, *, under: str | None = None) -> str:
    """PATH as a repo-relative path the viewer may read (under UNDER when given), or an
    UnsafePathError / NotFound that says why not. The folder and the links are checked on
    PATH as written, its `..` taken out by the letter: resolved first, a link (or a `..`)
    led to a file it named, and the check passed on where it led (`raw/../knowledge/...`
    read a knowledge file as a session; a link to another viewable file was followed)."""
    tops = (under,) if under else VIEWABLE
    rel = posixpath.normpath(path.strip().lstrip("/") or ".")
    if not rel.endswith(".md") or rel.split("/", 1)[0] not in tops:
        raise UnsafePathError(f"{path!r} is not a Markdown file under {', '.join(tops)}/.")
    full = memory.repo.resolve_inside(rel)  # a NUL, a control character, out of the repo
    if memory.repo.is_link(rel):
        raise UnsafePathError(f"{rel} is, or is under, a symbolic link: it is never read.")
    if not full.is_file():
        raise NotFound(f"{rel}: no such file in the memory.")
    return rel


def read_text(memory: Memory, path: str, *, under: str | None = None) -> str:
    """The text of PATH (checked_path), bytes that are not UTF-8 read as U+FFFD."""
    rel = checked_path(memory, path, under=under)
    full = memory.root / rel
    if full.stat().st_size > MAX_BYTES:
        raise InvalidArgumentError(
            f"{rel} is over {MAX_BYTES // (1024 * 1024)} MB; open it in git."
        )
    return full.read_bytes().decode("utf-8", "replace")
