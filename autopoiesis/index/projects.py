"""Which project a memory file is about, for the index's `files.project` column, and how
search prefers the current project's chunks.

* A transcript: its frontmatter's `project:` (formats/transcript_meta.py; the importers
  and the capture stream write it from the session's working folder).
* Knowledge under `knowledge/projects/<slug>/` (also as archived): that slug.
* A section of a daily journal, which holds every project's sessions of its day: the
  project its heading names (`chunk_projects`).
* A reference file named after a project the memory has (`knowledge/reference/<slug>.md`:
  the facts extractor files a session's facts under its project's name): that project
  (`owning_project`), so its facts are labelled as that project's elsewhere.
* Everything else -- preferences, identity, topics, a transcript without `project:` --
  is global (None): it belongs to every project.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import CONVERSATIONS_DIR, MemoryRepo, knowledge_project

# A chunk of another project than the one asked for counts this much of its merged
# score. 0.5, so that another project answers only when nothing of the project's fits:
# with the weighted merge (scores 0..1) another project's chunk must score twice as
# well; with reciprocal-rank fusion (1/(60+rank) a list) a chunk on top of both lists
# (2/61) is then worth what the project's chunk on top of one list only is (1/61), so
# the project's chunk that both lists found comes first, however far down, and another
# project's only leads over one that a single list found far below it. Measured in
# tests/index/test_project_search.py: the same words in two projects rank the asked
# project's turn first under both merges; a turn of another project holding every query
# term, first without a project, comes after the asked project's turn holding two of the
# three; a term only another project has still finds its turn.
OTHER_PROJECT_FACTOR = 0.5

_PROJECT_LINE = re.compile(r"^project:[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
JOURNALS = ("knowledge/journal/", "archive/knowledge/journal/")
REFERENCES = ("knowledge/reference/", "archive/knowledge/reference/")


def file_project(path: str, category: str, text: str) -> str | None:
    """The project of the memory file PATH (CATEGORY, TEXT), or None: global."""
    owner = knowledge_project(path)
    if owner is not None:
        return owner
    if category != "conversation" and not path.startswith("archive/raw/"):
        return None
    # The frontmatter's `project:` line, read without YAML (a slug is plain, or quoted
    # when YAML would read it as a number): the index writes thousands of files.
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
    m = _PROJECT_LINE.search(text, 0, end if end != -1 else len(text))
    if m is None:
        return None
    value = m.group(1).strip("'\"")
    return value if _SLUG.match(value) else None


def chunk_projects(
    conn: Any, ids: Iterable[int], reusable: dict[str, Any] | None = None
) -> dict[int, str | None]:
    """The project of each chunk of IDS: its file's (`owning_project`; the index keeps the
    file's files.project on each of its chunks, so that a search's 200 candidates are
    read without their files' rows, which hold their chunks' texts), or for a section of
    a daily journal (global: one day holds every project's sessions, each under its
    project's heading, "2026-03-02 > checkout-api") the project its heading names, when
    the memory has one of that name (a heading of a tag or a channel names none).
    REUSABLE (the store's, kept until memory.db changes) keeps which names are projects'."""
    ids = list(ids)
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT id, path, heading, project FROM chunks WHERE id IN ({','.join('?' * len(ids))})",
        ids,
    ).fetchall()
    known = (
        KnownProjects(conn)
        if reusable is None
        else reusable.setdefault("known_projects", KnownProjects(conn))
    )
    out: dict[int, str | None] = {}
    for cid, path, heading, project in rows:
        project = owning_project(path, project, known)
        if project is None and path.startswith(JOURNALS) and heading and " > " in heading:
            topic = heading.rsplit(" > ", 1)[1].strip()
            project = topic if known(topic) else None
        out[int(cid)] = project
    return out


class KnownProjects:
    """Whether the index has a file of a project of the name asked, each name looked up once."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._known: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        if name not in self._known:
            self._known[name] = has_project(self._conn, name)
        return self._known[name]


def owning_project(path: str, project: str | None, known: Callable[[str], bool]) -> str | None:
    """The project whose file PATH is, given its files.project PROJECT (`file_project`):
    that, or for a reference file named after a project the memory has (KNOWN: whether a
    name is a project's; `knowledge/reference/<slug>.md`: the facts extractor files a
    session's facts under its project's name) that project. "Your scripts are located in
    assets/scripts/", said in one codebase, is no fact of another, and shown there without
    its project's name it read as one. (Whether the name is a project's is known only once
    the memory is indexed, so it is asked here, not written in files.project.)"""
    if project is not None or not path.startswith(REFERENCES) or not path.endswith(".md"):
        return project
    folder, _, name = path.rpartition("/")
    if f"{folder}/" not in REFERENCES:
        return None  # in a folder of its own under reference/: named after no project
    stem = name[: -len(".md")]
    return stem if _SLUG.match(stem) and known(stem) else None


def has_project(conn: Any, name: str) -> bool:
    """Whether the index on CONN has a file of project NAME (files.project is indexed)."""
    return (
        conn.execute("SELECT 1 FROM files WHERE project = ? LIMIT 1", (name,)).fetchone()
        is not None
    )


def memory_has_project(repo: MemoryRepo, slug: str) -> bool:
    """Whether REPO knows the project SLUG without reading every transcript: its knowledge
    folder, or files of it in the search index."""
    return (repo.knowledge_dir / "projects" / slug).is_dir() or indexed_project(
        repo.index_path, slug
    )


def indexed_project(db_path: Path, name: str) -> bool:
    """Whether memory.db at DB_PATH has a file of project NAME: a millisecond's read-only
    look, False when it cannot tell (no index, one from before files.project, busy)."""
    from urllib.parse import quote

    from autopoiesis.core.sqlite import sqlite_module

    if not db_path.is_file():
        return False
    module = sqlite_module()
    try:
        conn = module.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True, timeout=1.0)
    except module.Error:
        return False
    try:
        return has_project(conn, name)
    except module.Error:
        return False
    finally:
        conn.close()


def cited_projects(db_path: Path, sources: Iterable[str]) -> dict[str, str]:
    """The project of the transcript each of SOURCES names, where the index knows one: a
    knowledge entry's citation, a session's cited id (`(via REF)`: its transcript is
    `raw/conversations/YYYY/MM/DD/HHMM-REF...`) or a transcript's path (older
    citations). A read-only look at memory.db like `indexed_project`; {} when it cannot
    tell. A preference said in one project's session stands in MEMORY.md for every
    project, and the compiler ranks it after the current project's own when another
    project is current."""
    from urllib.parse import quote

    from autopoiesis.core.sqlite import sqlite_module
    from autopoiesis.formats.knowledge import CITATION_REF_CHARS
    from autopoiesis.formats.transcript_names import session_key

    wanted = {s for s in sources if s}
    if not wanted or not db_path.is_file():
        return {}
    refs: dict[int, list[str]] = {}
    for s in wanted:
        if "/" not in s:
            refs.setdefault(len(s), []).append(s)
    # where the id starts in a transcript's path; compared in SQL (a scan of the
    # transcripts' paths costs ~1 ms at 10,000 where reading them into Python cost 15)
    at = len(f"{CONVERSATIONS_DIR}/YYYY/MM/DD/HHMM-") + 1
    module = sqlite_module()
    try:
        conn = module.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True, timeout=1.0)
    except module.Error:
        return {}
    out: dict[str, str] = {}
    try:
        paths = [s for s in wanted if "/" in s]
        for i in range(0, len(paths), 500):
            part = paths[i : i + 500]
            out.update(
                conn.execute(
                    "SELECT path, project FROM files WHERE project IS NOT NULL AND path IN "
                    f"({','.join('?' * len(part))})",
                    part,
                ).fetchall()
            )
        for n, group in refs.items():
            for i in range(0, len(group), 500):
                part = group[i : i + 500]
                marks = ",".join("?" * len(part))
                for path, project in conn.execute(
                    "SELECT path, project FROM files WHERE path > ? AND path < ? "
                    f"AND project IS NOT NULL AND substr(path, ?, ?) IN ({marks})",
                    [f"{CONVERSATIONS_DIR}/", f"{CONVERSATIONS_DIR}0", at, n, *part],
                ):
                    stem = session_key(path) or ""  # `{id}-{slug}`
                    # the whole id, or one cut to CITATION_REF_CHARS (a UUID's head ends at '-')
                    if n == CITATION_REF_CHARS or stem[n : n + 1] in ("", "-"):
                        out.setdefault(stem[:n], project)
    except module.Error:
        return {}
    finally:
        conn.close()
    return out


def project_counts(conn: Any) -> dict[str, dict[str, int]]:
    """Each project's indexed files, by category: {slug: {"conversation": n, ...}}."""
    counts: dict[str, dict[str, int]] = {}
    for project, category, n in conn.execute(
        "SELECT project, category, count(*) FROM files WHERE project IS NOT NULL "
        "GROUP BY project, category"
    ):
        counts.setdefault(project, {})[category] = int(n)
    return counts
