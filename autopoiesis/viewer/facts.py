"""Where a knowledge entry came from and how it changed: the provenance page's and the
history page's data, read from the entry format (formats/knowledge.py), the transcripts
and git (git/recall.py's `log -S` with the lines each commit added and removed, and
`blame`).

* **The turn**: the entry's citation names its session (`(via SESSION)`, or the older
  `(source: PATH @ TIME)`), and its id's `YYYYMMDD-HHMM` is the minute of the turn; the
  transcript's turn at that minute is the one it came from.
* **The extractor versions**: `knowledge/.extracted` (knowledge/state.py) as it stood in
  the commit that added the entry: the extractors (name@version) that had run on that
  transcript then.
* **The commit**: the oldest commit that added the entry's `{id: ...}` to its file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from autopoiesis.errors import AutopoiesisError, InvalidArgumentError
from autopoiesis.formats import knowledge as kf

if TYPE_CHECKING:
    from autopoiesis.git.recall import CommitInfo, LineChange
    from autopoiesis.git.repo import MemoryGit
    from autopoiesis.memory import Memory
    from autopoiesis.viewer.sessions import SessionCatalog, SessionRow

EXTRACTED_FILE = "knowledge/.extracted"  # knowledge/state.py's record
KNOWLEDGE = ("knowledge/", "archive/knowledge/")
_BLAME = re.compile(r"^\^?([0-9a-f]{7,40}) .*?(\d{4}-\d\d-\d\d)\s+(\d+)\) ?(.*)$")


@dataclass(frozen=True)
class Located:
    """An entry and where it stands: its file, its line (1-based), its section."""

    entry: kf.Entry
    path: str
    line: int
    section: str


@dataclass
class Provenance:
    located: Located
    transcript: SessionRow | None = None
    turn: int | None = None  # the index of the turn in the transcript, for its anchor
    said: str = ""  # what was said in that turn
    turn_at: str = ""
    added_in: CommitInfo | None = None
    extractors: list[str] = field(default_factory=list)
    replacement: Located | None = None  # the entry that superseded this one
    replaces: list[Located] = field(default_factory=list)  # the entries this one superseded
    also_in: list[str] = field(default_factory=list)  # other files restating it (same id)


def locate(memory: Memory, git: MemoryGit, entry_id: str, path: str | None) -> list[Located]:
    """The lines holding the entry ENTRY_ID: in PATH when given, else wherever `git grep`
    finds it in knowledge/ (the canonical entry and the lines that restate it)."""
    if not kf.ENTRY_ID_RE.match(entry_id):
        raise InvalidArgumentError(f"{entry_id!r} is not an entry id (YYYYMMDD-HHMM-xxxxxx).")
    paths = [path] if path else sorted(_grep(git, f"{{id: {entry_id}}}"), key=_canonical_first)
    found = []
    for p in paths:
        found += [loc for loc in read_entries(memory, p) if loc.entry.id == entry_id]
    return found


def _canonical_first(path: str) -> tuple[int, str]:
    """Where an entry is canonical first: a topical file, then MEMORY.md, then the index
    files that repeat a line (`_active.md`, `_index.md`), then the journal."""
    name = PurePosixPath(path).name
    rank = (
        3 if "/journal/" in path else 2 if name.startswith("_") else 1 if name == "MEMORY.md" else 0
    )
    return rank, path


def _grep(git: MemoryGit, text: str) -> list[str]:
    proc = git.run("grep", "-l", "-F", "--untracked", "-e", text, "--", "knowledge/", check=False)
    return [p for p in proc.stdout.splitlines() if p.endswith(".md")]


def read_entries(memory: Memory, path: str) -> list[Located]:
    """Every entry of the knowledge file PATH with its line and section."""
    from autopoiesis.viewer.files import read_text

    doc = kf.parse(read_text(memory, path, under="knowledge"))
    line = 1 + (doc.frontmatter.count("\n") + 2 if doc.frontmatter is not None else 0)
    out = []
    for s in doc.sections:
        if s.level:
            line += 1
        for item in s.lines:
            if isinstance(item, kf.Entry):
                out.append(Located(item, path, line, s.title))
            line += 1
    return out


def session_of(catalog: SessionCatalog, entry: kf.Entry) -> SessionRow | None:
    """The transcript the entry cites: its path (older citations), or the session whose id
    (or cited head) the citation names, started at or before the entry's turn."""
    source = entry.source
    if not source:
        return None
    sessions = catalog.current()
    if "/" in source:
        return sessions.by_path.get(source)
    turn_day = entry.turn_at[:10]
    best = None
    for row in sessions.by_session.get(source, ()):  # newest first
        if not turn_day or row.day <= turn_day:
            if best is None or row.day > best.day:
                best = row
    return best


def provenance(
    memory: Memory, git: MemoryGit, catalog: SessionCatalog, located: Located
) -> Provenance:
    """The provenance of LOCATED: transcript and turn, the commit that added it, the
    extractor versions that had run then, its replacement and what it replaced."""
    entry = located.entry
    prov = Provenance(located, turn_at=entry.turn_at)
    prov.transcript = session_of(catalog, entry)
    if prov.transcript is not None:
        turn = turn_at(memory, prov.transcript.path, entry.turn_at)
        if turn is not None:
            prov.turn, prov.said = turn
    changes = git.changes(f"{{id: {entry.id}}}", 50, (located.path,))
    adds = [c for c in changes if _adds(c, located.path, entry.id)]
    if adds:
        prov.added_in = adds[-1].commit
        prov.extractors = _extractors_at(git, prov.added_in.sha, prov.transcript)
    elif prov.transcript is not None:  # not committed yet: what the working tree says
        prov.extractors = _extractors_in(_read_or_empty(memory), prov.transcript.path)
    siblings = read_entries(memory, located.path)
    if entry.superseded_by:
        same = [s for s in siblings if s.entry.id == entry.superseded_by]
        found = same or locate(memory, git, entry.superseded_by, None)
        prov.replacement = found[0] if found else None
    prov.replaces = [s for s in siblings if s.entry.superseded_by == entry.id]
    prov.also_in = [p for p in _grep(git, f"{{id: {entry.id}}}") if p != located.path]
    return prov


def _adds(change: LineChange, path: str, entry_id: str) -> bool:
    return any(p == path and entry_id in line for p, line in change.added)


def turn_at(memory: Memory, path: str, minute: str) -> tuple[int, str] | None:
    """(index, text) of the turn of the transcript PATH said at MINUTE
    (YYYY-MM-DDTHH:MMZ); the last turn before it when none is at that minute."""
    from autopoiesis.formats import transcript as tf
    from autopoiesis.viewer.files import read_text

    try:
        turns = tf.parse(read_text(memory, path, under="raw"), path).turns
    except AutopoiesisError:
        return None
    best = None
    for i, t in enumerate(turns):
        at = t.time.strftime("%Y-%m-%dT%H:%MZ")
        if at == minute:
            return i, t.text
        if at < minute:
            best = i, t.text
    return best


def _read_or_empty(memory: Memory) -> str:
    try:
        return (memory.root / EXTRACTED_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _extractors_at(git: MemoryGit, sha: str, transcript: SessionRow | None) -> list[str]:
    if transcript is None:
        return []
    proc = git.run("show", f"{sha}:{EXTRACTED_FILE}", check=False)
    return _extractors_in(proc.stdout if proc.returncode == 0 else "", transcript.path)


def _extractors_in(record: str, transcript: str) -> list[str]:
    out = []
    for line in record.splitlines():
        path, tab, extractor = line.partition("\t")
        if tab and path == transcript and not line.startswith("#"):
            out.append(extractor.strip())
    return sorted(out)


@dataclass(frozen=True)
class Change:
    """One dated change of a fact: a commit and the lines of it that it added or removed."""

    date: str
    sha: str
    subject: str
    added: tuple[tuple[str, str], ...]
    removed: tuple[tuple[str, str], ...]
    note: str = ""


def history(
    git: MemoryGit, text: str, limit: int = 50, paths: tuple[str, ...] = ()
) -> list[Change]:
    """The commits that added or removed TEXT, newest first (git log -S; PATHS: only
    in those files or folders)."""
    return [
        Change(c.commit.date, c.commit.sha, c.commit.subject, c.added, c.removed)
        for c in git.changes(text, limit, paths)
    ]


def entry_history(git: MemoryGit, located: Located, limit: int = 50) -> list[Change]:
    """The dated changes of an entry: each commit that added or removed its id, and the
    one that struck it (the commit that tagged it `#superseded-by:NEW`), newest first."""
    changes = {c.sha: c for c in history(git, f"{{id: {located.entry.id}}}", limit, KNOWLEDGE)}
    new = located.entry.superseded_by
    if new:
        for c in history(git, f"#{kf.SUPERSEDED_TAG}{new}", limit, (located.path,)):
            struck = tuple((p, line) for p, line in c.added if located.entry.id in line)
            if struck:
                changes.setdefault(
                    c.sha, Change(c.date, c.sha, c.subject, struck, (), f"superseded by {new}")
                )
    return sorted(changes.values(), key=lambda c: c.date, reverse=True)


@dataclass(frozen=True)
class BlameLine:
    sha: str
    date: str
    line: int
    text: str


def blame_lines(git: MemoryGit, path: str, needle: str) -> list[BlameLine]:
    """The lines of PATH holding NEEDLE, with the commit and date git blame gives each."""
    try:
        out = git.blame(path)
    except AutopoiesisError:
        return []
    found = []
    for raw in out.splitlines():
        m = _BLAME.match(raw)
        if m and needle in m.group(4):
            found.append(BlameLine(m.group(1), m.group(2), int(m.group(3)), m.group(4)))
    return found


def short_name(path: str) -> str:
    p = PurePosixPath(path)
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name
