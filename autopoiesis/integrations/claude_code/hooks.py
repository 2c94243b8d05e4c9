"""Claude Code's hook events, as autopoiesis answers them.

Claude Code runs each hook command with the event's JSON on stdin: `session_id`,
`transcript_path` (the session's JSONL log), `cwd`, `hook_event_name`, and per event
`source` (SessionStart: startup, resume, clear or compact), `prompt` (UserPromptSubmit),
`trigger` and `custom_instructions` (PreCompact), `reason` (SessionEnd). A SessionStart
or UserPromptSubmit hook that prints `{"hookSpecificOutput": {"hookEventName": EVENT,
"additionalContext": TEXT}}` adds TEXT to what the model sees.

    SessionStart      the session-level memory (identity, MEMORY.md, journal, active
                      projects) and the knowledge about the project in `cwd`; after a
                      compaction, first the notes of the pre-compaction flush
    UserPromptSubmit  the topics the prompt activates and the knowledge it calls for
                      (the compiler without the session-level slots, which the session
                      already has): the design's "the LLM never searches"
    PreCompact        the flush: Claude Code compacts by itself, so the agent cannot be
                      asked for a silent turn. The hook prints the flush prompt as
                      instructions for the compaction summary (Claude Code passes a
                      PreCompact hook's output to the summariser: observed, not
                      documented), and the next SessionStart (source compact), or failing
                      that the next Stop, reads the notes back from the summary in the
                      transcript and appends them through the knowledge writer
    Stop              the session is alive (sessions.py); quiet sessions get imported
    SubagentStop      a subagent finished: its log (`agent_transcript_path`) is recorded
                      with its session, to be imported with it
    SessionEnd        the import of the transcript and its subagents' logs
                      (claude_code.locations), in a detached process

Every answer fits `integrations.hook_token_budget` tokens (or the hook's --budget).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import HookPayloadError
from autopoiesis.integrations.hook_context import (
    about,
    compile_context,
    context_output,
    fit_inline,
    project_of,
)
from autopoiesis.integrations.sessions import SessionRegistry, session_key, spawn_import, sweep_idle

__all__ = ["EVENTS", "compile_context", "fit_inline", "handle"]

HARNESS = "claude-code"
EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SubagentStop", "SessionEnd")
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")
SESSION_PREAMBLE = (
    "Your long-term memory (autopoiesis: Markdown files in the git repository {root}): your "
    "identity, core "
    "memory, recent journal and active projects, and what it holds about this project. Each "
    "prompt brings the "
    "topics and knowledge relevant to it. Cite the file when you rely on one."
)
PROMPT_PREAMBLE = (
    "From your long-term memory (autopoiesis, {root}), for this prompt. Cite the "
    "file when you rely on one."
)


# A Claude Code session id is a UUID: one that is not a single word of id characters (a
# line break, a space) would add lines to every commit message and row that names it.
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z")


def _field(payload: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    value = payload.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise HookPayloadError(f"the hook payload's {name!r} is {value!r}, not a string")
    return value


def _session_id(repo: MemoryRepo, payload: dict[str, Any], *, required: bool) -> str | None:
    """The payload's session_id, redacted (it names the session in commit messages, the
    registry and the log), or None; HookPayloadError when it is no id."""
    sid = _field(payload, "session_id", required=required)
    if sid is not None and not _SESSION_ID.match(sid):
        raise HookPayloadError(
            "the hook payload's 'session_id' is not a session id (one word of letters, digits, "
            "'-', '_', '.' or ':', up to 128 characters)"
        )
    return repo.redactor().redact(sid) if sid else sid


def handle(
    repo: MemoryRepo, event: str, payload: dict[str, Any], *, budget: int
) -> tuple[str | None, dict[str, Any]]:
    """Answer EVENT: (what to print on stdout or None, fields for the event log)."""
    if event not in EVENTS:
        raise HookPayloadError(
            f"{event!r} is not a Claude Code event autopoiesis handles ({', '.join(EVENTS)})"
        )
    named = payload.get("hook_event_name")
    if named is not None and named != event:
        raise HookPayloadError(
            f"the hook is installed for {event} but was called for {named!r}; "
            "run `autopoiesis integrate claude-code` again"
        )
    sid = _session_id(repo, payload, required=event != "UserPromptSubmit")
    transcript = _field(payload, "transcript_path")
    transcript = str(Path(transcript).expanduser()) if transcript else None
    cwd = _field(payload, "cwd")
    # what the registry keeps (.autopoiesis/harness/sessions.json): the redacted forms
    redact = repo.redactor().redact
    kept_path = redact(transcript) if transcript else None
    kept_cwd = redact(cwd) if cwd else None
    info: dict[str, Any] = {"session": sid}
    registry = SessionRegistry(repo)
    key = session_key(HARNESS, sid) if sid else None

    if event == "UserPromptSubmit":
        prompt = _field(payload, "prompt", required=True) or ""
        project = info["project"] = project_of(repo, cwd)
        text, more = compile_context(
            repo,
            prompt,
            budget=budget,
            session_context=False,
            preamble=PROMPT_PREAMBLE.format(root=repo.root),
            project=project,
        )
        return context_output(event, text), info | more

    if event == "SessionStart":
        source = _field(payload, "source") or "startup"
        info["source"] = source
        if sid and source == "compact":
            info["flush"] = flush_from_summary(repo, sid, transcript)
        project = info["project"] = project_of(repo, cwd)
        text, more = compile_context(
            repo,
            about(project, cwd),
            budget=budget,
            session_context=True,
            preamble=SESSION_PREAMBLE.format(root=repo.root),
            project=project,
        )
        if sid and key:  # (always: SessionStart carries its session_id)
            registry.touch(HARNESS, sid, path=kept_path, cwd=kept_cwd)
            info["import_started"] = sweep_idle(repo, exclude=key) is not None
        return context_output(event, text), info | more

    assert sid is not None and key is not None  # required above for the remaining events
    if event == "PreCompact":
        from autopoiesis.knowledge.flush import compaction_instructions

        offset = _size(transcript)
        registry.touch(
            HARNESS, sid, path=kept_path, cwd=kept_cwd, flush_pending=True, flush_from=offset
        )
        info["trigger"] = payload.get("trigger")
        return compaction_instructions(repo), info

    if event == "Stop":
        seen = registry.get(key)
        if seen is not None and seen.data.get("flush_pending"):
            info["flush"] = flush_from_summary(repo, sid, transcript)
        registry.touch(HARNESS, sid, path=kept_path, cwd=kept_cwd)
        info["import_started"] = sweep_idle(repo, exclude=key) is not None
        return None, info

    if event == "SubagentStop":
        agent_log = _field(payload, "agent_transcript_path")
        agent_log = redact(str(Path(agent_log).expanduser())) if agent_log else None
        seen = registry.get(key)
        subagents = list(seen.data.get("subagents") or []) if seen is not None else []
        if agent_log and agent_log not in subagents:
            subagents.append(agent_log)
        registry.touch(HARNESS, sid, path=kept_path, cwd=kept_cwd, subagents=subagents or None)
        info["agent"] = payload.get("agent_id")
        info["import_started"] = sweep_idle(repo, exclude=key) is not None
        return None, info

    # SessionEnd: this session and any other gone quiet, imported in the background
    info["reason"] = payload.get("reason")
    registry.touch(HARNESS, sid, path=kept_path, cwd=kept_cwd)
    idle = registry.idle(repo.config.integrations.import_idle_minutes, exclude=key)
    info["import_pid"] = spawn_import(repo, [key, *(s.key for s in idle)])
    return None, info


def _size(path: str | None) -> int:
    try:
        return Path(path).stat().st_size if path else 0
    except OSError:
        return 0


# The longest log line read for a compaction summary (a summary is tens of KB): a longer
# one is passed over a piece at a time (capture's capped_lines), never held whole (a 2 GB
# line took the Stop hook to 4 GB and past its deadline).
SUMMARY_LINE_CAP = 16 * 1024 * 1024


def last_compact_summary(path: Path, offset: int = 0) -> str | None:
    """The text of the last compaction summary (a `"isCompactSummary": true` user line)
    in the Claude Code log PATH at or after byte OFFSET, or None."""
    from autopoiesis.capture.stream import TooLong, capped_lines  # only where a summary is read

    found = None
    with open(path, "rb") as fh:
        if offset <= path.stat().st_size:
            fh.seek(offset)
        for raw in capped_lines(fh, SUMMARY_LINE_CAP):
            if isinstance(raw, TooLong) or b"isCompactSummary" not in raw:
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                continue  # a line cut by a crash, or not ours to judge
            if not isinstance(row, dict) or row.get("isCompactSummary") is not True:
                continue
            content = (
                (row.get("message") or {}).get("content")
                if isinstance(row.get("message"), dict)
                else None
            )
            if isinstance(content, str):
                found = content
            elif isinstance(content, list):
                found = "\n".join(
                    b.get("text", "")
                    for b in content
                    if isinstance(b, dict) and isinstance(b.get("text"), str)
                )
    return found


def flush_from_summary(repo: MemoryRepo, sid: str, transcript: str | None) -> dict[str, Any]:
    """Append the notes of the flush block in the last compaction summary of TRANSCRIPT
    (after the PreCompact hook's offset), cited as the session, and commit them. The
    session's flush stays pending (for the next Stop) while no summary is there yet."""
    from autopoiesis.knowledge.flush import apply_flush, flush_block

    registry = SessionRegistry(repo)
    seen = registry.get(session_key(HARNESS, sid))
    offset = int(seen.data.get("flush_from") or 0) if seen is not None else 0
    if not transcript or not Path(transcript).is_file():
        return {"status": "no transcript to read the compaction summary from"}
    summary = last_compact_summary(Path(transcript), offset)
    if summary is None:
        registry.touch(HARNESS, sid, flush_pending=True)
        return {"status": "no compaction summary in the transcript yet"}
    registry.touch(HARNESS, sid, flush_pending=False, flush_from=_size(transcript))
    block = flush_block(summary)
    if block is None:
        return {"status": "the compaction summary holds no memory-flush block"}
    report = apply_flush(
        repo,
        block,
        source=f"{HARNESS}:{sid}",
        commit_as=f"memory: pre-compaction flush of {HARNESS} session {sid}",
    )
    if not report.written:
        return {"status": "nothing new to keep"}
    return {"status": "flushed", "written": dict(report.written), "commit": report.commit}
