"""The sessions of a memory, by day, for the timeline: each transcript's day, time, title,
project and harness, read from the head of its file and kept for the life of the server.

A transcript is immutable, so what its head says is read once: a load looks at the
day folders under raw/conversations/ (one `stat` each), lists again the ones that
changed, and reads the head of a file only when its size or mtime is new to the catalog
(a session still being captured grows, a `forget` rewrites). 10,000 transcripts cost
one read each on the first load and a few hundred `stat`s after; a new session shows on
the next load, without a restart.

The fields are read the way the index reads `project:` (index/projects.py): by line, not
by YAML, from the frontmatter at the top of the file (formats/transcript_meta.py writes it
in a fixed order, so the keys needed are in its first few hundred bytes).
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import is_utf8
from autopoiesis.formats.knowledge import citation_ref
from autopoiesis.index.projects import file_project

_HEAD_BYTES = 4096
_FIELD = re.compile(r"^(session_id|started|channel|source|topic|status|model):[ \t]*(.*?)[ \t]*$")
_TITLE = re.compile(r"^# (.+)$", re.M)
_NAME = re.compile(r"^(\d{2})(\d{2})-(.+?)\.md$")


@dataclass(frozen=True)
class SessionRow:
    """One transcript as the timeline lists it."""

    path: str  # raw/conversations/YYYY/MM/DD/HHMM-id-slug.md
    day: str  # YYYY-MM-DD (the folder: the day the session started)
    time: str  # HH:MM UTC
    session_id: str
    title: str
    project: str | None
    harness: str | None  # the channel (the importers name their harness there), else source's
    status: str
    model: str | None
    # what a timeline search's words are looked for in (title, id, project, harness), lowered
    hay: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        hay = f"{self.title} {self.session_id} {self.project or ''} {self.harness or ''}"
        object.__setattr__(self, "hay", hay.lower())

    def matches(self, words: Iterable[str]) -> bool:
        hay = self.hay
        for w in words:
            if w not in hay:
                return False
        return True


def _clean(value: str) -> str | None:
    value = value.strip().strip("'\"")
    return value if value and value != "null" else None


def read_row(path: str, head: str) -> SessionRow | None:
    """The SessionRow of the transcript PATH from the first bytes of its file (None when
    its name is not a transcript's)."""
    parts = path.split("/")
    if len(parts) != 6:
        return None
    m = _NAME.match(parts[5])
    if m is None:
        return None
    fields: dict[str, str | None] = {}
    if head.startswith("---\n"):
        end = head.find("\n---", 3)
        for line in head[4 : end if end != -1 else len(head)].split("\n"):
            f = _FIELD.match(line)
            if f:
                fields[f.group(1)] = _clean(f.group(2))
    title_at = head.find("\n---", 3) if head.startswith("---\n") else 0
    t = _TITLE.search(head, max(title_at, 0))
    session_id = fields.get("session_id") or m.group(3).split("-", 1)[0]
    source = fields.get("source")
    harness = fields.get("channel") or (source.split(":", 1)[0] if source else None)
    return SessionRow(
        path=path,
        day=f"{parts[2]}-{parts[3]}-{parts[4]}",
        time=f"{m.group(1)}:{m.group(2)}",
        session_id=session_id,
        title=(t.group(1).strip() if t else None) or fields.get("topic") or session_id,
        project=file_project(path, "conversation", head),
        harness=harness,
        status=fields.get("status") or "closed",
        model=fields.get("model"),
    )


_Files = dict[str, tuple[int, int, "SessionRow | None"]]  # file name -> (size, mtime_ns, row)


class _Day:
    """A day folder as last listed: its mtime, its files, and those of an open session."""

    __slots__ = ("mtime", "files", "open")

    def __init__(self, mtime: int, files: _Files):
        self.mtime = mtime
        self.files = files
        self.open = tuple(
            n for n, (_, _, r) in files.items() if r is not None and r.status == "open"
        )


class Sessions:
    """The catalog's rows at one refresh, newest first, and what the pages look up in
    them, each made on its first use."""

    def __init__(self, rows: list[SessionRow]):
        self.rows = rows

    @functools.cached_property
    def by_session(self) -> dict[str, list[SessionRow]]:
        """The rows (newest first) by session id, and by the head of the id an entry's
        citation gives (formats.knowledge.citation_ref)."""
        index: dict[str, list[SessionRow]] = {}
        for r in self.rows:
            index.setdefault(r.session_id, []).append(r)
            cited = citation_ref(r.session_id)
            if cited != r.session_id:
                index.setdefault(cited, []).append(r)
        return index

    @functools.cached_property
    def by_path(self) -> dict[str, SessionRow]:
        return {r.path: r for r in self.rows}

    @functools.cached_property
    def projects(self) -> frozenset[str]:
        return frozenset(r.project for r in self.rows if r.project)

    @functools.cached_property
    def harnesses(self) -> frozenset[str]:
        return frozenset(r.harness for r in self.rows if r.harness)


class SessionCatalog:
    """Every transcript of a repo as a SessionRow, newest first, refreshed on each
    `current()` (or `rows()`).

    A day folder is listed again only when its mtime changed (a file added, removed or
    renamed in it); within a folder, a file is read again when its size or mtime changed,
    and only the files of an open session are looked at again in an unchanged folder (an
    open transcript grows in place)."""

    def __init__(self, repo: MemoryRepo):
        self.repo = repo
        self._lock = threading.Lock()
        self._days: dict[str, _Day] = {}
        self._current = Sessions([])

    def rows(self) -> list[SessionRow]:
        """The rows, newest first: changed folders listed again, new or changed heads read."""
        return self.current().rows

    def current(self) -> Sessions:
        """The rows as `rows()` gives them, with their lookups (kept until a row changes)."""
        with self._lock:
            days: dict[str, _Day] = {}
            changed = False
            for key, folder in self._day_folders():
                try:
                    mtime = os.stat(folder).st_mtime_ns
                except OSError:
                    continue
                old = self._days.get(key)
                if old is not None and old.mtime == mtime:
                    day = self._reread_open(key, folder, old) if old.open else old
                    days[key] = day
                    changed |= day is not old
                    continue
                days[key] = _Day(mtime, self._list(key, folder, old.files if old else {}))
                changed = True
            if changed or days.keys() != self._days.keys():
                rows = [r for day in days.values() for _, _, r in day.files.values() if r]
                rows.sort(key=lambda r: (r.day, r.time, r.path), reverse=True)
                self._current = Sessions(rows)
            self._days = days
            return self._current

    def _day_folders(self) -> Iterable[tuple[str, str]]:
        for year in _subdirs(str(self.repo.conversations_dir), 4):
            for month in _subdirs(year[1], 2):
                for day in _subdirs(month[1], 2):
                    yield f"{year[0]}/{month[0]}/{day[0]}", day[1]

    def _list(self, key: str, folder: str, known: _Files) -> _Files:
        files: _Files = {}
        try:
            with os.scandir(folder) as it:
                # a name that is not UTF-8 no page can link to (every page raised on it);
                # the index warns of it, the pre-commit hook refuses it
                entries = [
                    e
                    for e in it
                    if e.name.endswith(".md") and not e.is_symlink() and is_utf8(e.name)
                ]
        except OSError:
            return files
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            old = known.get(e.name)
            if old is not None and old[:2] == (st.st_size, st.st_mtime_ns):
                files[e.name] = old
            else:
                rel = f"raw/conversations/{key}/{e.name}"
                files[e.name] = (st.st_size, st.st_mtime_ns, self._read(rel, e.path))
        return files

    def _reread_open(self, key: str, folder: str, day: _Day) -> _Day:
        """DAY with the heads of its open sessions read again where they grew (the same
        object when none did)."""
        files = day.files
        for name in day.open:
            size, mtime, _ = files[name]
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            if (st.st_size, st.st_mtime_ns) != (size, mtime):
                rel = f"raw/conversations/{key}/{name}"
                fresh = self._read(rel, os.path.join(folder, name))
                files = {**files, name: (st.st_size, st.st_mtime_ns, fresh)}
        return day if files is day.files else _Day(day.mtime, files)

    @staticmethod
    def _read(rel: str, full: str) -> SessionRow | None:
        try:
            with open(full, "rb") as f:
                head = f.read(_HEAD_BYTES).decode("utf-8", "replace")
        except OSError:
            return None
        return read_row(rel, head)


def _subdirs(path: str, width: int) -> list[tuple[str, str]]:
    try:
        with os.scandir(path) as it:
            return [
                (e.name, e.path)
                for e in it
                if len(e.name) == width and e.name.isdigit() and e.is_dir(follow_symlinks=False)
            ]
    except OSError:
        return []


@dataclass(frozen=True)
class Day:
    day: str
    sessions: tuple[SessionRow, ...]


def by_day(rows: Iterable[SessionRow], days: int | None = None) -> list[Day]:
    """ROWS (newest first) grouped by their day, in that order; the first DAYS of them
    when given (the rest of ROWS is not looked at)."""
    groups: OrderedDict[str, list[SessionRow]] = OrderedDict()
    for r in rows:
        group = groups.get(r.day)
        if group is None:
            if days is not None and len(groups) >= days:
                break
            group = groups[r.day] = []
        group.append(r)
    return [Day(d, tuple(s)) for d, s in groups.items()]
