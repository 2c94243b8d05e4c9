"""The name each checkout of this machine goes by in a memory: a record, kept in the memory
repository's git folder (`.git/autopoiesis/projects.json`, GIT_STATE_FILES), of the
projects core.project found and the names they were filed under.

A project's name is derived (its `origin`'s repository name, else its folder's), and a
derived name is no identity: two codebases called `app` (`~/work/acme/app`, `~/oss/app`)
derived the same name and pooled their decisions in one knowledge/projects/app/, and a
checkout that gained an `origin` named otherwise than its folder was renamed by it, its
earlier knowledge left under the old name. So the first name a checkout is filed under
is kept for it:

* a checkout met before keeps its name, whatever its remote says now (added, changed);
* a new checkout of a repository met before (the same remote, or a clone of a checkout
  recorded here) takes that repository's name;
* a new checkout whose derived name another codebase holds takes a name of its own: the
  remote's owner before it (`foo-app`), else its parent folder's (`oss-app`), else a
  number (`app-2`); unless a checkout of that name is gone from this machine and no
  remote says they are different repositories (two remotes that differ), when the name
  moves with it: a checkout moved to another folder (or, where nothing can tell, a new
  one made where an old one of its name was deleted).

The record is this machine's: where its checkouts are is nobody else's business, and a
clone of the memory on another machine keeps its own. Nothing here is ever required: a
record that cannot be read or written leaves the derived name, as before there was one.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from autopoiesis.core.project import Project

RECORD_VERSION = 1
LOCK_WAIT = 2.0  # seconds: a prompt hook may wait this long for another process's record


def name_in_memory(found: Project, memory_root: Path) -> str:
    """The name FOUND, a project of this machine, goes by in the memory at MEMORY_ROOT
    (see the module's docstring), recorded on its first meeting."""
    from autopoiesis.core.paths import git_state_path

    path = git_state_path(memory_root, "project_names")
    known = _read(path).get(found.root)
    if known is not None and (
        not found.remote or known["remote"] == identity(found.remote, found.root)
    ):
        return known["name"]  # the common case: nothing to write
    return _record(path, found)


def checkouts_by_name(memory_root: Path) -> dict[str, list[str]]:
    """The folders of this machine each project name of the memory at MEMORY_ROOT was
    filed from (its checkouts met so far, those still here), by name."""
    from autopoiesis.core.paths import git_state_path

    out: dict[str, list[str]] = {}
    for root, entry in sorted(_read(git_state_path(memory_root, "project_names")).items()):
        if os.path.isdir(root):
            out.setdefault(entry["name"], []).append(root)
    return out


def _record(path: Path, found: Project) -> str:
    """FOUND's name, decided and recorded under the record's lock (two processes meeting
    two new checkouts at once must not both take one name)."""
    from autopoiesis.core.paths import FileLock, atomic_write

    lock = FileLock(path.with_name(path.name + ".lock"))
    try:
        held = lock.acquire(timeout=LOCK_WAIT)
    except OSError:  # a read-only memory, a full disk: named as derived, not recorded
        return found.name
    try:
        checkouts = _read(path)  # again: the other holder may have recorded it meanwhile
        name = _decide(checkouts, found)
        if held:
            remote = identity(found.remote, found.root) if found.remote else None
            checkouts[found.root] = {"name": name, "remote": remote}
            data = {"version": RECORD_VERSION, "checkouts": checkouts}
            try:
                atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
            except OSError:
                pass  # named, not recorded: the next meeting decides again
        return name
    finally:
        lock.release()


def _decide(checkouts: dict[str, _Entry], found: Project) -> str:
    """The name for FOUND given the CHECKOUTS recorded (root -> name, remote), which it
    may change (a checkout gone whose name moves to FOUND is taken out)."""
    known = checkouts.get(found.root)
    if known is not None:
        return known["name"]  # its remote was added or changed: the name stays
    mine = identity(found.remote, found.root) if found.remote else None
    here = "path:" + _real(found.root)
    for entry in checkouts.values():
        if entry["remote"] is not None and entry["remote"] in (mine, here):
            return entry["name"]  # another checkout of the same repository, or its origin
    for root, entry in checkouts.items():
        if mine == "path:" + _real(root):
            return entry["name"]  # a clone of a checkout recorded here
    holders = [root for root, e in checkouts.items() if e["name"] == found.name]
    if not holders:
        return found.name
    gone = [root for root in holders if not os.path.isdir(root)]
    if gone and not (mine and any(checkouts[root]["remote"] for root in holders)):
        for root in gone:  # moved: a checkout of the name is gone, and no remote says
            del checkouts[root]  # this one is another repository
        return found.name
    taken = {e["name"] for e in checkouts.values()}
    return next((n for n in _other_names(found) if n not in taken), found.name)


def identity(url: str, base: str) -> str:
    """What a remote URL says of its repository, one string for every way of writing it
    and none of its credentials: `path:REAL` for a folder of this machine (a clone of a
    local repository; a relative path, `../upstream`, is read from BASE, the checkout's
    top-level folder, as git reads it), else `url:HOST/PATH` in lower case without a
    user, a password, a query, `.git` or a trailing slash (`git@github.com:acme/app.git`,
    `https://u:tok@github.com/acme/app` and `ssh://git@github.com/acme/app/` are one)."""
    from autopoiesis.core.project import without_query

    text = without_query(url)
    local = text[len("file://") :] if text.startswith("file://") else text
    if os.path.isabs(local) or _is_relative_path(local):
        # `../upstream` of two checkouts in two folders is two repositories: as written,
        # one identity made one project of them
        return "path:" + _real(os.path.join(base, local).rstrip("/") or "/")
    text = text.rstrip("/")
    text = text[:-4] if text.endswith(".git") else text
    scp = _SCP.match(text) if "://" not in text else None
    if scp:
        return f"url:{scp.group(1)}/{scp.group(2)}".lower()
    host, _, tail = text.split("://", 1)[-1].partition("/")
    return f"url:{host.rsplit('@', 1)[-1].split(':', 1)[0]}/{tail}".lower()


_SCP = re.compile(r"^(?:[^@/]+@)?([\w.-]+):(?!//)(.+)$")  # git@github.com:acme/app.git


def _is_relative_path(url: str) -> bool:
    """Whether URL is a relative path as git reads a remote's URL: no scheme, and no colon
    before its first slash (where `host:path` would be scp's)."""
    if not url or "://" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    return colon == -1 or (slash != -1 and slash < colon)


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _other_names(found: Project) -> list[str]:
    """The names FOUND may take when its own is another codebase's, in order: its remote's
    owner before it, its parent folder's name before it, then numbered."""
    from autopoiesis.core.project import PROJECT_SLUG_LEN, project_slug

    names = []
    key = identity(found.remote, found.root) if found.remote else ""
    if key.startswith("url:"):
        parts = [p for p in key[4:].split("/") if p]
        if len(parts) >= 3:  # host, owner, ..., repository
            names.append(project_slug(f"{parts[-2]}-{found.name}"))
    names.append(project_slug(f"{Path(found.root).parent.name}-{found.name}"))
    stem = found.name[: PROJECT_SLUG_LEN - 3]
    names += [f"{stem}-{n}" for n in range(2, 100)]
    return [n for n in dict.fromkeys(names) if n and n != found.name]


class _Entry(TypedDict):
    name: str
    remote: str | None


def _read(path: Path) -> dict[str, _Entry]:
    """The checkouts PATH records (root -> name, remote); {} when there is no record or it
    cannot be read (a damaged record is rewritten by the next meeting that records one).
    A name is read as a project's name is written (a slug): a hand-edited record cannot
    name a folder outside knowledge/projects/."""
    from autopoiesis.core.project import project_slug

    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    checkouts = data.get("checkouts") if isinstance(data, dict) else None
    if not isinstance(checkouts, dict):
        return {}
    out: dict[str, _Entry] = {}
    for root, entry in checkouts.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        name = project_slug(entry["name"])
        remote = entry.get("remote")
        if name:
            out[str(root)] = {"name": name, "remote": remote if isinstance(remote, str) else None}
    return out
