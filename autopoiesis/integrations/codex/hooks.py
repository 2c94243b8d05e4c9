"""Codex CLI: its `notify` program runs after every agent turn, with the event as one JSON
argument: `{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", "client",
"input-messages", "last-assistant-message"}`.

Notify can show nothing to the model (compiled context reaches Codex through the MCP
server's `compile_context`), and no event marks a thread's end. So each notify records
the thread as alive, with its rollout file (`$CODEX_HOME/sessions/YYYY/MM/DD/
rollout-TIME-THREAD.jsonl`), and starts the import of the threads that have gone quiet
(sessions.py): a Codex session is filed once it has been idle for
`integrations.import_idle_minutes`, whole.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import HookPayloadError
from autopoiesis.integrations.sessions import SessionRegistry, session_key, sweep_idle

HARNESS = "codex"
_THREAD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z")


def codex_home() -> Path:
    home = os.environ.get("CODEX_HOME")
    return Path(home).expanduser() if home else Path.home() / ".codex"


def find_rollout(thread_id: str, home: Path | None = None) -> Path | None:
    """The newest rollout file of THREAD_ID under HOME/sessions (dated folders, or the flat
    layout of older Codex versions), or None."""
    if not _THREAD_ID.match(thread_id):
        return None
    base = (home or codex_home()) / "sessions"
    if not base.is_dir():
        return None
    found = sorted(base.glob(f"**/rollout-*{thread_id}.jsonl"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def handle_notify(repo: MemoryRepo, payload: dict[str, Any]) -> dict[str, Any]:
    """Record the thread of an agent-turn-complete notification, start the import of idle
    threads; returns what to log. Other notification types are ignored."""
    kind = payload.get("type")
    if kind != "agent-turn-complete":
        return {"ignored": f"notification type {kind!r}"}
    thread = payload.get("thread-id")
    if not isinstance(thread, str) or not _THREAD_ID.match(thread):
        raise HookPayloadError(f"the notification's thread-id {thread!r} is not a thread id")
    registry = SessionRegistry(repo)
    key = session_key(HARNESS, thread)
    known = registry.get(key)
    path = known.path if known and known.path else None
    if path is None:
        rollout = find_rollout(thread)
        path = str(rollout) if rollout else None
    cwd = payload.get("cwd")
    registry.touch(HARNESS, thread, path=path, cwd=cwd if isinstance(cwd, str) else None)
    spawned = sweep_idle(repo, exclude=key)
    return {"session": thread, "rollout": path, "import_started": spawned is not None}
