"""Which transcript files belong to a session id, without listing raw/ for every session.

A transcript's file name starts with its session id (`HHMM-{id}[-{slug}][+N].md`, see
formats.transcript), so the names under raw/conversations/ answer "is session X filed,
and where". Listing every day folder for every imported session made bulk import slow
in a big repo (30 sessions/s at 4,500 transcripts). The SessionIndex keeps the names of
each day folder, with the folder's mtime, in the state file `session_index`; a load
lists again only the folders whose mtime changed (adding, removing or renaming a file
changes it) and the ones that are new. The file is a cache, never trusted over raw/:
missing, unreadable or of another version, it is rebuilt from the folders; a folder
listed within two seconds of its last change is listed again next time (a file system
with coarse times could hide a change made in the same tick); and every path it answers
is checked to exist.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path

from autopoiesis.core.clock import utc
from autopoiesis.core.paths import MemoryRepo, atomic_write
from autopoiesis.errors import TranscriptFormatError
from autopoiesis.formats import transcript as tf

VERSION = 1
RACY_NS = 2_000_000_000  # a folder changed this recently is not trusted to show its last change
_UNTRUSTED = -1  # recorded mtime of a folder to list again on the next load


def _digits(name: str, width: int) -> bool:
    return len(name) == width and name.isdigit()


def _day_folders(base: Path) -> list[tuple[str, str]]:
    """(YYYY/MM/DD, absolute path) of every day folder under BASE."""
    out = []
    for year in _subdirs(str(base), 4):
        for month in _subdirs(year[1], 2):
            for day in _subdirs(month[1], 2):
                out.append((f"{year[0]}/{month[0]}/{day[0]}", day[1]))
    return out


def _subdirs(path: str, width: int) -> list[tuple[str, str]]:
    try:
        with os.scandir(path) as it:
            return sorted(
                (e.name, e.path)
                for e in it
                if _digits(e.name, width) and e.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []


def _names_in(stem: str, session_id: str) -> bool:
    """Whether a file stem (`{id}[-{slug}]`, without `HHMM-` and `+N`) is SESSION_ID's."""
    return stem == session_id or stem.startswith(session_id + "-")


# How much of a transcript `first_turn_of` is asked of: its frontmatter, title and first
# turn's header and first line fit.
FIRST_TURN_BYTES = 64 * 1024


def first_turn_of(text: str) -> str | None:
    """The first turn of the rendered transcript TEXT (or of its beginning): its header
    and up to 200 characters of its first line; None when it has no turn. Two transcripts
    whose first turns are the same turn say the same; a resumed session's copy is looked
    for only among those (capture/importers/filing.py)."""
    at = text.find("\n## ")
    if at < 0:
        return None
    header, _, rest = text[at + 1 :].partition("\n")
    return f"{header}\n{rest.split(chr(10), 1)[0][:200]}"


class SessionIndex:
    """Session id -> transcript files, from the file names under raw/conversations/."""

    def __init__(self, repo: MemoryRepo, folders: dict[str, tuple[int, list[str]]], *, dirty: bool):
        self.repo = repo
        self._folders = folders  # "YYYY/MM/DD" -> (mtime_ns, sorted file names)
        self._dirty = dirty
        self._by_head: dict[str, list[str]] | None = None
        self._first_turns: dict[str, str | None] = {}  # rel -> first_turn_of, read once

    @classmethod
    def load(cls, repo: MemoryRepo) -> SessionIndex:
        """The index of REPO: the state file, with every folder that changed since listed again."""
        known = cls._read_state(repo)
        folders: dict[str, tuple[int, list[str]]] = {}
        dirty = False
        now = time.time_ns()
        for key, path in _day_folders(repo.conversations_dir):
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                continue
            entry = known.get(key)
            if entry is not None and entry[0] == mtime:
                folders[key] = entry
                continue
            try:
                with os.scandir(path) as it:
                    names = sorted(
                        e.name for e in it if e.name.endswith(".md") and not e.name.startswith(".")
                    )
            except OSError:
                continue
            folders[key] = (_UNTRUSTED if now - mtime < RACY_NS else mtime, names)
            dirty = True
        dirty = dirty or folders.keys() != known.keys()
        return cls(repo, folders, dirty=dirty)

    @staticmethod
    def _read_state(repo: MemoryRepo) -> dict[str, tuple[int, list[str]]]:
        try:
            data = json.loads(repo.state_file("session_index").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if (
            not isinstance(data, dict)
            or data.get("version") != VERSION
            or not isinstance(data.get("folders"), dict)
        ):
            return {}
        out: dict[str, tuple[int, list[str]]] = {}
        for key, value in data["folders"].items():
            if (
                isinstance(key, str)
                and isinstance(value, list)
                and len(value) == 2
                and isinstance(value[0], int)
                and isinstance(value[1], list)
                and all(isinstance(n, str) for n in value[1])
            ):
                out[key] = (value[0], value[1])
        return out

    def save(self) -> None:
        """Write the index back when a load or an `add` changed it. A failure to write is
        no error: the next load lists the folders again."""
        if not self._dirty:
            return
        data = {
            "version": VERSION,
            "folders": {k: [m, names] for k, (m, names) in sorted(self._folders.items())},
        }
        try:
            atomic_write(
                self.repo.state_file("session_index"), json.dumps(data, separators=(",", ":"))
            )
        except OSError:
            return
        self._dirty = False

    def _heads(self) -> dict[str, list[str]]:
        """Repo-relative paths by the first `-`-separated part of their file stem: a session
        id's own first part picks the few names that can be its."""
        if self._by_head is None:
            heads: dict[str, list[str]] = {}
            for key, (_, names) in self._folders.items():
                for name in names:
                    stem = name[5:-3].split("+", 1)[0]
                    heads.setdefault(stem.split("-", 1)[0], []).append(
                        f"raw/conversations/{key}/{name}"
                    )
            self._by_head = heads
        return self._by_head

    def transcripts(self, session_id: str) -> list[Path]:
        """The files named for SESSION_ID that exist, sorted by path."""
        out = []
        for rel in self._heads().get(session_id.split("-", 1)[0], ()):
            if _names_in(rel.rsplit("/", 1)[-1][5:-3].split("+", 1)[0], session_id):
                path = self.repo.root / rel
                if path.is_file():
                    out.append(path)
        return sorted(out)

    def started_at(self, when: datetime) -> list[str]:
        """The repo-relative paths of the first parts of sessions that started in the UTC
        minute of WHEN (their names say it: `YYYY/MM/DD/HHMM-`), that exist."""
        t = utc(when)
        _, names = self._folders.get(t.strftime("%Y/%m/%d"), (0, []))
        head = t.strftime("%H%M-")
        return [
            rel
            for name in names
            if name.startswith(head) and "+" not in name
            for rel in [f"raw/conversations/{t.strftime('%Y/%m/%d')}/{name}"]
            if (self.repo.root / rel).is_file()
        ]

    def first_turn(self, rel: str) -> str | None:
        """The first turn of the transcript REL as `first_turn_of` tells it, read from its
        first FIRST_TURN_BYTES once for this index (a transcript is immutable)."""
        if rel not in self._first_turns:
            try:
                with open(self.repo.root / rel, "rb") as fh:
                    head = fh.read(FIRST_TURN_BYTES).decode("utf-8", "replace")
            except OSError:
                head = ""
            self._first_turns[rel] = first_turn_of(head)
        return self._first_turns[rel]

    def add(self, rel: str) -> None:
        """Record the transcript just written at REL (its folder is listed again next load,
        so a file another process wrote there meanwhile is not missed)."""
        folder, name = rel.removeprefix("raw/conversations/").rsplit("/", 1)
        _, names = self._folders.get(folder, (_UNTRUSTED, []))
        if name not in names:
            names = sorted([*names, name])
        self._folders[folder] = (_UNTRUSTED, names)
        self._dirty = True
        if self._by_head is not None:
            self._by_head.setdefault(name[5:-3].split("+", 1)[0].split("-", 1)[0], []).append(rel)


def session_parts(
    repo: MemoryRepo, session_id: str, index: SessionIndex | None = None
) -> list[tuple[str, tf.Transcript]]:
    """(repo-relative path, transcript) of every filed part of SESSION_ID, first part
    first. A file whose name could be the session's but whose frontmatter names another
    session is not one of them. TranscriptFormatError (naming the file) for a part that
    cannot be read."""
    index = index or SessionIndex.load(repo)
    parts: list[tuple[str, tf.Transcript]] = []
    for path in index.transcripts(session_id):
        rel = repo.rel(path)
        try:
            text = tf.decode(path.read_bytes(), rel)
        except OSError as exc:
            raise TranscriptFormatError(f"{rel} cannot be read ({exc.strerror or exc}).") from None
        if not text.endswith("\n"):
            text += "\n"  # an open transcript whose last write was cut short
        transcript = tf.parse(text, rel)
        if transcript.meta.session_id == session_id:
            parts.append((rel, transcript))
    parts.sort(key=lambda p: (p[1].meta.part, p[1].meta.started, p[0]))
    return parts


def parts_of(repo: MemoryRepo, relpath: str) -> list[tuple[str, tf.Transcript]]:
    """Every part of the session the transcript at RELPATH belongs to (itself included),
    first part first; just that transcript when it is the only one."""
    text = tf.decode((repo.root / relpath).read_bytes(), relpath)
    meta = tf.parse_meta(text, relpath)
    parts = session_parts(repo, meta.session_id)
    if not any(rel == relpath for rel, _ in parts):
        parts = [(relpath, tf.parse(text, relpath))]
    return parts
