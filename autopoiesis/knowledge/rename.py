"""`autopoiesis mv OLD NEW`: move a note and rewrite every `[[link]]` that finds it, in
one commit, so no link breaks (formats/wikilinks.py).

A link is rewritten only when it resolves to OLD (a bare name another note also has, and
which finds that other note, is left alone); it keeps its `#heading` and its alias, and a
link without an alias whose shown name would change gets the old name as its alias, so
the sentence reads as before. A bare-name link stays a bare name when NEW's name is unique,
else it becomes NEW's path. Transcripts are never moved or rewritten (raw/ is immutable),
and nothing is read or written through a symbolic link. A private note (git-crypt) leaves
the private paths only when the user says it is no longer private (`--make-public`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autopoiesis.core.paths import (
    IDENTITY_DIR,
    IDENTITY_FILES,
    INDEX_FILES,
    MemoryRepo,
    atomic_write,
    category_of,
)
from autopoiesis.errors import GitError, InvalidArgumentError
from autopoiesis.formats.wikilinks import file_keys, link_key, parse_links, resolve, rewrite_targets
from autopoiesis.git.history import secrets_in_names
from autopoiesis.knowledge.documents import note_written

if TYPE_CHECKING:
    from autopoiesis.git.repo import MemoryGit

# The folders whose notes are moved and whose links are rewritten.
NOTE_DIRS = ("knowledge", "topics", "archive")
# The notes autopoiesis finds by their path, never by a link: they do not move
FIXED_PATHS = frozenset(INDEX_FILES) | {f"{IDENTITY_DIR}/{name}" for name in IDENTITY_FILES}


@dataclass(frozen=True)
class Move:
    """What a move did: the paths, the files whose links were rewritten, the links, the commit."""

    old: str
    new: str
    rewritten: tuple[str, ...]
    links: int
    commit: str | None


def _notes(repo: MemoryRepo) -> list[str]:
    return [repo.rel(p) for p in repo.iter_markdown(*NOTE_DIRS)]


def _by_name(paths: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in paths:
        out.setdefault(file_keys(p)[0], []).append(p)
    return out


def _check_privacy(repo: MemoryRepo, old_rel: str, new_rel: str, make_public: bool) -> None:
    """Refuse a move that would put a private note's text in git in clear: out of the
    private paths (git-crypt encrypts by path, so the next commit held it readable for
    every clone and remote) unless MAKE_PUBLIC says so, or of a locked note (its file is
    ciphertext: moved out, git-crypt never decrypts it again; moved within, its clone
    cannot encrypt it)."""
    from autopoiesis.core.private import file_is_ciphertext, matches

    patterns = repo.private_patterns()
    if not matches(old_rel, patterns):
        return
    if file_is_ciphertext(repo.root / old_rel):
        raise InvalidArgumentError(
            f"{old_rel} is private and locked in this clone (its file is git-crypt's "
            "ciphertext): unlock it with `autopoiesis private unlock KEYFILE` first; nothing "
            "was moved."
        )
    if not make_public and not matches(new_rel, patterns):
        raise InvalidArgumentError(
            f"{old_rel} is private (encrypted in git) and {new_rel} is not: moved there, its "
            "text would be committed and pushed in clear. Move it under knowledge/private/ "
            "(or a path of private.paths), or give --make-public if it is no longer private; "
            "nothing was moved."
        )


def _as_named(repo: MemoryRepo, path: str) -> str:
    """PATH repo-relative as it is named, no symbolic link on the way followed."""
    full = os.path.abspath(path if os.path.isabs(path) else repo.root / path)
    return os.path.relpath(full, repo.root).replace(os.sep, "/")


def _check(repo: MemoryRepo, old: str, new: str) -> tuple[str, str]:
    old_rel, new_rel = repo.rel(repo.resolve_inside(old)), repo.rel(repo.resolve_inside(new))
    named = [_as_named(repo, old), _as_named(repo, new)]
    if not new_rel.endswith(".md") and old_rel.endswith(".md"):
        new_rel += ".md"
        named[1] += ".md"
    # as named, not as resolved: a link to a note resolves to that note, and its move
    # moved the note the link points at, leaving the link dangling
    for given in named:
        if repo.is_link(given):
            raise InvalidArgumentError(
                f"{given} is a symbolic link (or in a linked folder): `autopoiesis mv` moves "
                "notes, never through a link; name the note itself. Nothing was moved."
            )
    for rel, what in ((old_rel, "OLD"), (new_rel, "NEW")):
        top = rel.split("/", 1)[0]
        if top not in NOTE_DIRS or category_of(rel) is None:
            raise InvalidArgumentError(
                f"{what} ({rel}) is not a note: `autopoiesis mv` moves Markdown files under "
                f"{', '.join(d + '/' for d in NOTE_DIRS)} (transcripts under raw/ never move)."
            )
    if not (repo.root / old_rel).is_file():
        raise InvalidArgumentError(
            f"there is no note {old_rel}; `git ls-files knowledge` lists them."
        )
    if old_rel in FIXED_PATHS:
        raise InvalidArgumentError(
            f"{old_rel} is read and written at that path (the core memory, an index of the "
            "people or projects, an identity file): moved, it would leave every compiled "
            "context without a word, and the writer would start a new one in its place. "
            "Move entries out of it by editing it instead; nothing was moved."
        )
    masked = secrets_in_names(repo.root, [new_rel]).get(new_rel)
    if masked is not None:
        raise InvalidArgumentError(
            f"NEW ({masked}) holds what looks like a secret: a note's name is committed and "
            "pushed as it is. Name it without the secret; nothing was moved."
        )
    if (repo.root / new_rel).exists():
        raise InvalidArgumentError(f"{new_rel} exists already; pick another name or move it first.")
    return old_rel, new_rel


def move_note(
    repo: MemoryRepo, old: str, new: str, *, commit: bool = True, make_public: bool = False
) -> Move:
    """Move OLD to NEW (repo-relative or absolute) and rewrite the links that find OLD;
    with COMMIT, one commit of the move and every rewritten file. A private note moves to
    a path that is not private only with MAKE_PUBLIC."""
    from autopoiesis.git.repo import MemoryGit

    old, new = _check(repo, old, new)
    _check_privacy(repo, old, new, make_public)
    git = MemoryGit(repo)
    # before anything is written: in a merge or rebase, a conflicted note would be
    # rewritten with its conflict markers, and no commit could be made
    git.refuse_during_operation()
    # the notes are read under the writer's lock too: read before it, a note another
    # writer changed in between (an extraction's entry appended to a note that links
    # here) was written back as it was read, and that entry was lost. And it is held
    # through the commit (and the undo of a refused one): let go before, another
    # writer's entry appended to a rewritten note meanwhile was committed as part of the
    # move, or its lines were put back to the note's text before the move by the undo
    with repo.writer_lock():
        return _move_held(repo, git, old, new, commit=commit)


def _move_held(repo: MemoryRepo, git: MemoryGit, old: str, new: str, *, commit: bool) -> Move:
    """`move_note`'s writes and commit, the writer's lock held by the caller."""
    notes = _notes(repo)
    before = _by_name(notes)
    after = _by_name([new if p == old else p for p in notes])
    new_key = link_key(new)
    new_name = file_keys(new)[0]
    bare = new_name if len(after.get(new_name, ())) == 1 else new_key
    texts: dict[str, str] = {}
    renamed: dict[str, str] = {}
    for path in notes:
        try:
            text = (repo.root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # unreadable (a locked private note): its links stay as they are
        found = parse_links(text)
        if not found:
            continue
        texts[path] = text
        for link in found:
            if resolve(link.key, before) == old:
                renamed[link.key] = bare if "/" not in link.key else new_key
    (repo.root / new).parent.mkdir(parents=True, exist_ok=True)
    changed: dict[str, str] = {}
    total = 0
    for path, text in texts.items():
        out, n = rewrite_targets(text, renamed)
        if n:
            changed[new if path == old else path] = out
            total += n
    # a run killed before its commit: the next extraction's or maintenance's commit
    # takes the move and the rewritten links
    moved = changed.get(new)
    if moved is None:
        moved = (repo.root / old).read_text(encoding="utf-8", errors="replace")
    note_written(repo, {**changed, new: moved}, removed=[old])
    originals = {where: texts[old if where == new else where] for where in changed}
    os.replace(repo.root / old, repo.root / new)
    for where, out in changed.items():
        atomic_write(repo.root / where, out)
    rewritten = list(changed)
    sha = None
    if commit:
        files = "file" if len(rewritten) == 1 else "files"
        message = (
            f"memory: move {old} to {new}\n\n"
            f"{total} [[link{'s' if total != 1 else ''}]] to it rewritten in {len(rewritten)} "
            f"{files} (autopoiesis mv).\n"
        )
        head = git.head()
        try:
            sha = git.commit_paths([old, new, *rewritten], message).sha
        except GitError as exc:
            if git.head() != head:
                raise
            # refused (a hook's check of a rewritten note, a lock): the move is undone,
            # so the note is where it was, its links as they were, and `mv` can be run again
            for where, text in originals.items():
                atomic_write(repo.root / where, text)
            os.replace(repo.root / new, repo.root / old)
            raise GitError(f"nothing was moved: {exc}") from None
    return Move(old, new, tuple(sorted(set(rewritten))), total, sha)


__all__ = ["NOTE_DIRS", "Move", "move_note"]
