"""Where a Claude Code session's logs are, beside the one its hooks name.

A hook's `transcript_path` is the main conversation's log (`~/.claude/projects/<folder>/
<session>.jsonl`). Its subagents write logs of their own: 2.1 in `<session>/subagents/
agent-<id>.jsonl` beside it, 2.0 in `agent-<id>.jsonl` beside it, each line naming the
parent's `sessionId`; the SubagentStop hook names them too (`agent_transcript_path`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

_HEAD_BYTES = 4096  # enough for an agent log's first line to name its session


def session_files(transcript: Path, session: str, recorded: Iterable[str] = ()) -> list[Path]:
    """TRANSCRIPT and the logs of the subagents of SESSION: its `subagents/` folder, the
    2.0 agent logs beside it whose first line names SESSION, and the RECORDED paths the
    SubagentStop hook gave (those that exist), each once, the main log first."""
    found: dict[Path, None] = {transcript: None}
    folder = transcript.with_suffix("") / "subagents"
    if folder.is_dir():
        found.update(dict.fromkeys(sorted(folder.glob("*.jsonl"))))
    for sibling in sorted(transcript.parent.glob("agent-*.jsonl")):
        if _first_session(sibling) == session:
            found[sibling] = None
    for path in recorded:
        if isinstance(path, str) and Path(path).is_file():
            found[Path(path)] = None
    return list(found)


def _first_session(path: Path) -> str | None:
    """The sessionId of PATH's first line, None when it has none (or cannot be read)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES).split(b"\n", 1)[0]
        row = json.loads(head)
    except (OSError, ValueError):
        return None
    sid = row.get("sessionId") if isinstance(row, dict) else None
    return sid if isinstance(sid, str) else None
