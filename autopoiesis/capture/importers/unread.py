"""Session logs of harnesses autopoiesis recognises but does not read yet: a file of one
is refused by the harness's name ("this looks like Grok CLI, which autopoiesis does not
read yet") rather than as N malformed lines or an unknown file. Each entry is a harness
and a test of a file's path and content (its first JSON object or line), or of an
SQLite database's tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

# (harness, test of (path, the first JSON value of the file or its first line))
_FILES: tuple[tuple[str, Callable[[Path, Any], bool]], ...] = (
    (
        "Grok CLI",
        lambda p, first: (
            isinstance(first, dict)
            and first.get("type") == "system"
            and str(first.get("content", "")).startswith("You are Grok")
        ),
    ),
    (
        "Hermes Agent",
        lambda p, first: (
            isinstance(first, dict)
            and {"session_id", "platform", "session_start", "messages"} <= set(first)
        ),
    ),
    (
        "Google Antigravity",
        lambda p, first: (
            isinstance(first, dict)
            and {"step_index", "source", "type"} <= set(first)
            and str(first.get("type", "")).isupper()
        ),
    ),
    ("Kiro", lambda p, first: p.suffix == ".chat" and isinstance(first, dict)),
)
# (harness, the tables whose presence says it's that harness's database)
_DATABASES: tuple[tuple[str, frozenset[str]], ...] = (
    ("Kiro CLI", frozenset({"conversations_v2"})),
    ("Cursor's editor database (state.vscdb)", frozenset({"ItemTable", "cursorDiskKV"})),
    ("Crush", frozenset({"sessions", "messages", "files"})),
    ("Windsurf/VS Code's editor database (state.vscdb)", frozenset({"ItemTable"})),
)


def _first(text: str) -> Any:
    from autopoiesis.capture.importers.base import load_json  # the parse detection shares

    if text.lstrip().startswith(("{", "[")) and "\n{" not in text[:65536]:
        try:
            return load_json(text)
        except (ValueError, RecursionError):
            pass
    from autopoiesis.capture.importers.base import head_lines

    line = next(iter(head_lines(text, 1)), "")
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def recognise_file(path: Path, text: str) -> str | None:
    """The harness whose log PATH (with TEXT) looks like, among those not read yet."""
    first = _first(text)
    for name, test in _FILES:
        try:
            if test(path, first):
                return name
        except (TypeError, ValueError):
            continue
    return None


def recognise_database(tables: set[str]) -> str | None:
    """The harness whose database has TABLES, among those not read yet."""
    for name, needed in _DATABASES:
        if needed <= tables:
            return name
    return None


def not_read_yet(name: str) -> str:
    return (
        f"this looks like {name}, which autopoiesis does not read yet; nothing of it was imported"
    )
