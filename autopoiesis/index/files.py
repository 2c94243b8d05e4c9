"""Memory files as the index reads them: which files there are, the stat key that tells
one changed without reading it (and git's racy-clean rule), the content hash, the text.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from autopoiesis.core.paths import ODD_NAME, MemoryRepo, category_of, shipped_files
from autopoiesis.core.private import is_ciphertext
from autopoiesis.core.text import is_utf8, wide_encoding

MAX_FILE_BYTES = 8 * 1024 * 1024

# One file as it is written: (path, category, stat, content hash, text).
FileItem = tuple[str, str, os.stat_result, str, str]
# A file whose stat was taken this soon after it last changed may change again without its
# stat showing it: a rewrite of the same size within one tick of a coarse clock (a second
# on some file systems) keeps mtime, ctime and size. Such a file is compared by content
# at the next check (git's "racy clean" rule).
RACY_NS = 2_000_000_000


def stat_key(st: os.stat_result) -> list[int]:
    """What tells a file changed without reading it: mtime, ctime (which no program sets
    back, as `touch -d` or a restored mtime do to mtime) and size."""
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_size]


def racy(key: list[int], taken_ns: int) -> bool:
    """Whether a stat KEY taken at TAKEN_NS may hide a later change (see RACY_NS)."""
    return max(key[0], key[1]) >= taken_ns - RACY_NS


def hash_bytes(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@functools.cache
def shipped_hashes() -> dict[str, str]:
    """The files a new memory gets from the template, by path: their content hash
    (files.content_hash) as they ship. A file at that path with that hash still holds only
    the template."""
    return {rel: hash_bytes(data) for rel, data in shipped_files().items()}


def decode_text(raw: bytes) -> str | None:
    """Text of a memory file, or None for binary content (a NUL in the first 8 KB). A file
    an editor saved as UTF-16 or UTF-32 (its byte order mark says which) is read in that
    encoding: its NULs are its text's, which the pre-commit hook refuses to commit until it
    is UTF-8, and which search and compile still show as the person wrote it."""
    wide = wide_encoding(raw)
    if wide is not None:
        return raw.decode(wide, "replace")
    if b"\x00" in raw[:8192]:
        return None
    return raw.decode("utf-8", "replace")


def read_bounded(path: str | os.PathLike[str]) -> bytes | None:
    """The bytes of the memory file at PATH, or None when it holds more than MAX_FILE_BYTES
    (measured on the open file and by what is read, so one that grows meanwhile is refused
    too). Raises OSError as open does. Whatever reads a memory file whole reads it here: a
    file pulled from a collaborator is the collaborator's size, and 61 MB of identity file,
    read whole by the compiler, took 25 s and 1.4 GB at every session start."""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > MAX_FILE_BYTES:
            return None
        data = fh.read(MAX_FILE_BYTES + 1)
    return None if len(data) > MAX_FILE_BYTES else data


def markdown_paths(repo: MemoryRepo) -> list[str]:
    """The repo-relative paths of the memory files (MemoryRepo.iter_markdown, .rel),
    without resolving each path: a file that is no symlink, in a folder that resolves
    to itself, is where its path says (rglob does not enter linked folders). At 10,000
    files that is 0.6 s less of a rebuild."""
    root = repo.root
    real: dict[Path, bool] = {}
    out = []
    for p in repo.iter_markdown():
        folder = p.parent
        if folder not in real:
            real[folder] = folder.resolve() == folder
        out.append(
            p.relative_to(root).as_posix() if real[folder] and not p.is_symlink() else repo.rel(p)
        )
    return out


def never_held(path: str, size: int | None = None) -> bool:
    """Whether PATH is a file the index never holds, whatever it says: a name that is not
    UTF-8 or holds a control character, or (SIZE, when known) more than MAX_FILE_BYTES.
    read_memory_file skips such a file with a warning; the index is not behind for it."""
    return (
        not is_utf8(path)
        or ODD_NAME.search(path) is not None
        or (size is not None and size > MAX_FILE_BYTES)
    )


def read_memory_file(
    repo: MemoryRepo, path: str, warnings: list[str]
) -> tuple[str, os.stat_result, str, str] | None:
    """(category, stat, hash, text) of a memory file on disk; None when it is gone,
    not memory content, or binary (with a warning added to WARNINGS)."""
    category = category_of(path)
    if category is None:
        return None
    if not is_utf8(path):
        # SQLite stores text as UTF-8 and refuses the byte (a lone surrogate here)
        warnings.append(
            f"{ascii(path)[1:-1]}: its name is not UTF-8; not indexed: rename it (`git mv`)"
        )
        return None
    odd = ODD_NAME.search(path)
    if odd:  # what search or a context prints of it would be the name's escape or line break
        warnings.append(
            f"{ascii(path)[1:-1]}: its name holds a control character ({odd.group()!r}); not "
            "indexed: rename it (`git mv`; `autopoiesis verify` reports it)"
        )
        return None
    full = repo.root / path
    if repo.is_link(path):
        warnings.append(
            f"{path}: a symbolic link (or in a linked folder); not read: memory files must be "
            "regular files (`autopoiesis verify` reports it; remove it with `git rm`)"
        )
        return None
    try:
        st = os.stat(full)
        raw = read_bounded(full)
        if raw is None:
            warnings.append(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MB; skipped")
            return None
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None  # disappeared meanwhile: it is simply not indexed
    except OSError as exc:
        warnings.append(f"{path}: unreadable ({exc}); skipped")
        return None
    text = decode_text(raw)
    if text is None:
        if is_ciphertext(raw):
            warnings.append(
                f"{path}: locked (git-crypt); not indexed until `autopoiesis private unlock`"
            )
        else:
            warnings.append(f"{path}: binary content; skipped")
        return None
    return category, st, hash_bytes(raw), text
