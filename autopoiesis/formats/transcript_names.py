"""The names of transcript files, which tell the parts of one session apart from other
sessions: part of the transcript format (formats/transcript.py re-exports it), kept in a
module of its own so that search, which groups results by session, does not load the
whole format (its YAML and patterns) on a cold start."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_TRANSCRIPT_NAME_RE = re.compile(r"^\d{4}-(?P<stem>[^+/]+)(?:\+\d+)?\.md\Z")
# what follows `HHMM-{session_id}` in a name: `-` and a slug (no `/`, no `+`)
_SLUG_RE = re.compile(r"-[^/+]+\Z")


def session_key(relpath: str) -> str | None:
    """What every part of one session has in common in its file name (`{id}-{slug}` of
    `HHMM-{id}-{slug}[+N].md`), so the parts of a session are told apart from other
    sessions by their names alone; None for a name that is not a transcript's."""
    m = _TRANSCRIPT_NAME_RE.match(relpath.rstrip("/").rpartition("/")[2])
    return m["stem"] if m else None


def name_problem(relpath: str, session_id: str, started: datetime, part: int = 1) -> str | None:
    """Why RELPATH is not the name of a transcript with this frontmatter (None when it
    is): the day folder and the `HHMM` are those of STARTED in UTC, then the session id,
    a slug (which claims nothing), and `+PART` for a continuation. A name is derived from
    the frontmatter, never chosen, so a transcript filed under another day (a backdated
    path) cannot say one thing in its name and another inside."""
    t = started.astimezone(UTC) if started.tzinfo else started
    folder = f"raw/conversations/{t.year:04d}/{t.month:02d}/{t.day:02d}"
    parent, _, name = relpath.rpartition("/")
    head = f"{t.hour:02d}{t.minute:02d}-{session_id}"
    suffix = f"+{part}.md" if part > 1 else ".md"
    slug = name[len(head) : -len(suffix)] if name.endswith(suffix) else None
    if parent == folder and name.startswith(head) and slug is not None:
        if not slug or _SLUG_RE.match(slug):
            return None
    return (
        f"its name does not match its frontmatter (session_id {session_id}, started "
        f"{t:%Y-%m-%dT%H:%MZ}{f', part {part}' if part > 1 else ''}): that transcript is "
        f"{folder}/{head}-SLUG{suffix}"
    )
