"""Codex's hooks, as autopoiesis answers them.

Codex 0.124 and later run command hooks (`hooks.json` or `[hooks]` in config.toml) with
the event's JSON on stdin, as Claude Code does: `session_id` (the thread), `transcript_path`
(its rollout file), `cwd`, `hook_event_name`, `model`, and per event `source`
(SessionStart), `prompt` (UserPromptSubmit), `turn_id` and `last_assistant_message` (Stop).
A SessionStart or UserPromptSubmit hook that prints `{"hookSpecificOutput":
{"hookEventName": EVENT, "additionalContext": TEXT}}` adds TEXT to what the model sees.

    SessionStart      the session-level memory and the project's knowledge (as Claude
                      Code's); the thread is recorded as alive
    UserPromptSubmit  the topics and knowledge the prompt calls for
    Stop              the thread is alive, with its rollout; quiet threads get imported
    SessionEnd        the import of the rollout, in a detached process

Older Codex has only `notify`, run after every agent turn with the event as one JSON
argument: `{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", "client",
"input-messages", "last-assistant-message"}`. It can show nothing to the model and marks
no end: each notify records the thread as alive with its rollout file
(`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-TIME-THREAD.jsonl`), and a thread quiet for
`integrations.import_idle_minutes` is imported whole (sessions.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import HookPayloadError
from autopoiesis.integrations.hook_context import (
    about,
    compile_context,
    context_output,
    project_of,
)
from autopoiesis.integrations.sessions import SessionRegistry, session_key, spawn_import, sweep_idle

HARNESS = "codex"
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
SESSION_PREAMBLE = (
    "Your long-term memory (autopoiesis: Markdown files in the git repository {root}): your "
    "identity, core memory, recent journal and active projects, and what it holds about this "
    "project. Each prompt brings the topics and knowledge relevant to it. Cite the file when "
    "you rely on one."
)
PROMPT_PREAMBLE = (
    "From your long-term memory (autopoiesis, {root}), for this prompt. Cite the file when "
    "you rely on one."
)
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


def _string(payload: dict[str, Any], name: str) -> str | None:
    value = payload.get(name)
    if value is not None and not isinstance(value, str):
        raise HookPayloadError(f"the hook payload's {name!r} is {value!r}, not a string")
    return value or None


def handle(
    repo: MemoryRepo, event: str, payload: dict[str, Any], *, budget: int
) -> tuple[str | None, dict[str, Any]]:
    """Answer Codex hook EVENT: (what to print on stdout or None, fields for the log)."""
    if event not in EVENTS:
        raise HookPayloadError(
            f"{event!r} is not a Codex event autopoiesis handles ({', '.join(EVENTS)}, notify)"
        )
    named = payload.get("hook_event_name")
    if named is not None and named != event:
        raise HookPayloadError(
            f"the hook is installed for {event} but was called for {named!r}; "
            "run `autopoiesis integrate codex` again"
        )
    thread = _string(payload, "session_id")
    if thread is None or not _THREAD_ID.match(thread):
        if event != "UserPromptSubmit":
            raise HookPayloadError(f"the hook payload's session_id {thread!r} is not a thread id")
        thread = None
    cwd = _string(payload, "cwd")
    rollout = _string(payload, "transcript_path")
    info: dict[str, Any] = {"session": thread}
    if event in ("SessionStart", "UserPromptSubmit"):
        project = info["project"] = project_of(repo, cwd)
        start = event == "SessionStart"
        text, more = compile_context(
            repo,
            about(project, cwd) if start else (_string(payload, "prompt") or ""),
            budget=budget,
            session_context=start,
            preamble=(SESSION_PREAMBLE if start else PROMPT_PREAMBLE).format(root=repo.root),
            project=project,
        )
        info |= more
        if start and thread is not None:
            info["source"] = payload.get("source")
            _alive(repo, thread, rollout, cwd)
            info["import_started"] = (
                sweep_idle(repo, exclude=session_key(HARNESS, thread)) is not None
            )
        return context_output(event, text), info
    assert thread is not None  # required above for the remaining events
    key = session_key(HARNESS, thread)
    _alive(repo, thread, rollout, cwd)
    if event == "Stop":
        info["import_started"] = sweep_idle(repo, exclude=key) is not None
        return None, info
    idle = SessionRegistry(repo).idle(repo.config.integrations.import_idle_minutes, exclude=key)
    info["import_pid"] = spawn_import(repo, [key, *(s.key for s in idle)])
    return None, info


def _alive(repo: MemoryRepo, thread: str, rollout: str | None, cwd: str | None) -> None:
    """Record THREAD as alive, with its rollout (the hook's, else the one found)."""
    registry = SessionRegistry(repo)
    if rollout is None:
        known = registry.get(session_key(HARNESS, thread))
        rollout = known.path if known and known.path else None
    if rollout is None:
        found = find_rollout(thread)
        rollout = str(found) if found else None
    registry.touch(HARNESS, thread, path=rollout, cwd=cwd)
