"""The `[[wikilinks]]` of the indexed notes (formats/wikilinks.py): written with a file's
rows (`rows_of`), and read as a note's outgoing links and backlinks, the broken ones, and
the notes a set of hits links to (what the compiler's P3 adds as candidates).

A link is resolved when read, not when written: a note written later, renamed or deleted
changes what a link finds without touching the file that holds it. It resolves as Obsidian
resolves it (wikilinks.resolve): a bare name finds the file of that name (the shortest
path first), a path finds the file of that path. Transcripts are not read for links (a
conversation quotes `[[...]]` as text); knowledge, topics, archive and team notes are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from autopoiesis.formats.wikilinks import file_keys, link_key, parse_links, resolve

# A link whose target names a file of another kind (`diagram.png`, `spec.pdf`) is an
# attachment, not a note: not held (the index holds Markdown only), never reported broken.
_ATTACHMENT = re.compile(r"\.(?!md\Z)[A-Za-z0-9]{1,5}\Z")


class Link(NamedTuple):
    """One link as the index holds it, with the file it resolves to (None: broken)."""

    source: str
    line: int
    target: str
    heading: str | None
    alias: str | None
    resolved: str | None

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


def link_name(path: str) -> str:
    """files.link_name of PATH: the name a link finds it by."""
    return file_keys(path)[0]


def rows_of(path: str, category: str, text: str) -> list[tuple[Any, ...]]:
    """The links table's rows of one file (none for a transcript)."""
    if category == "conversation" or "[[" not in text:
        return []
    return [
        (path, x.line, x.target, x.key.rsplit("/", 1)[-1], x.heading, x.alias)
        for x in parse_links(text)
        if not _ATTACHMENT.search(x.target)
    ]


def _by_name(conn: Any, names: Iterable[str]) -> dict[str, list[str]]:
    wanted = sorted(set(names))
    out: dict[str, list[str]] = {}
    for i in range(0, len(wanted), 500):
        part = wanted[i : i + 500]
        rows = conn.execute(
            f"SELECT link_name, path FROM files WHERE link_name IN ({','.join('?' * len(part))})",
            part,
        )
        for name, path in rows:
            out.setdefault(name, []).append(path)
    return out


def _resolved(conn: Any, rows: Sequence[tuple[Any, ...]]) -> list[Link]:
    """ROWS (source, line, target, name, heading, alias) as Links, each resolved."""
    by_name = _by_name(conn, (r[3] for r in rows))
    return [
        Link(src, line, target, heading, alias, resolve(link_key(target), by_name))
        for src, line, target, _name, heading, alias in rows
    ]


_COLUMNS = "source, line, target, name, heading, alias"


def outgoing(conn: Any, path: str) -> list[Link]:
    """The links written in PATH, in file order."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM links WHERE source = ? ORDER BY line, rowid", (path,)
    ).fetchall()
    return _resolved(conn, rows)


def incoming(conn: Any, path: str) -> list[Link]:
    """The links of other notes that resolve to PATH (its backlinks), by source."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM links WHERE name = ? ORDER BY source, line", (link_name(path),)
    ).fetchall()
    return [x for x in _resolved(conn, rows) if x.resolved == path]


def broken(conn: Any) -> list[Link]:
    """Every link that resolves to no indexed note, by source and line."""
    rows = conn.execute(f"SELECT {_COLUMNS} FROM links ORDER BY source, line").fetchall()
    return [x for x in _resolved(conn, rows) if x.resolved is None]


def linked_from(conn: Any, paths: Sequence[str]) -> list[tuple[str, str, str | None]]:
    """(source, the note it links to, the heading named) for each resolved link written in
    PATHS, in the order of PATHS, each (source, target) once."""
    if not paths:
        return []
    marks = ",".join("?" * len(paths))
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM links WHERE source IN ({marks}) ORDER BY line", list(paths)
    ).fetchall()
    order = {p: i for i, p in enumerate(paths)}
    seen: set[tuple[str, str]] = set()
    out = []
    for x in sorted(_resolved(conn, rows), key=lambda x: (order[x.source], x.line)):
        if x.resolved and x.resolved != x.source and (x.source, x.resolved) not in seen:
            seen.add((x.source, x.resolved))
            out.append((x.source, x.resolved, x.heading))
    return out


def first_chunk(conn: Any, path: str, heading: str | None = None) -> tuple[int, int] | None:
    """(start, end) lines of PATH's chunk under HEADING (a `#heading` link), else its first."""
    if heading:
        row = conn.execute(
            "SELECT start_line, end_line FROM chunks WHERE path = ? AND (heading = ? OR heading "
            "LIKE ?) ORDER BY start_line LIMIT 1",
            (path, heading, f"% > {heading}"),
        ).fetchone()
        if row:
            return int(row[0]), int(row[1])
    row = conn.execute(
        "SELECT start_line, end_line FROM chunks WHERE path = ? ORDER BY start_line LIMIT 1",
        (path,),
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else None


__all__ = [
    "Link",
    "broken",
    "first_chunk",
    "incoming",
    "link_name",
    "linked_from",
    "outgoing",
    "rows_of",
]
