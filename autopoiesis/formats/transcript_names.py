"""The names of transcript files, which tell the parts of one session apart from other
sessions: part of the transcript format (formats/transcript.py re-exports it), kept in a
module of its own so that search, which groups results by session, does not load the
whole format (its YAML and patterns) on a cold start."""

from __future__ import annotations

import re

_TRANSCRIPT_NAME_RE = re.compile(r"^\d{4}-(?P<stem>[^+/]+)(?:\+\d+)?\.md\Z")


def session_key(relpath: str) -> str | None:
    """What every part of one session has in common in its file name (`{id}-{slug}` of
    `HHMM-{id}-{slug}[+N].md`), so the parts of a session are told apart from other
    sessions by their names alone; None for a name that is not a transcript's."""
    m = _TRANSCRIPT_NAME_RE.match(relpath.rstrip("/").rpartition("/")[2])
    return m["stem"] if m else None
