"""Session history from a file: a transcript (docs/design.md#transcript-format), or a JSON list or
JSONL of
{role, content[, tool, id, result]} objects, as the compiler's `HistoryMessage` turns.
A transcript of a session that was continued in parts (formats.transcript: "Parts") is
the whole session: every part, in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopoiesis.compiler.context import HistoryMessage
from autopoiesis.core.paths import CONVERSATIONS_DIR, MemoryRepo
from autopoiesis.errors import AutopoiesisError
from autopoiesis.formats.transcript_files import parts_of


def load_session(path: Path, repo: MemoryRepo | None = None) -> list[HistoryMessage]:
    """Session history from a transcript (docs/design.md#transcript-format), a JSON list or JSONL of
    {role, content[, tool, id]} objects. With REPO, a transcript under its raw/ that is
    one part of a continued session gives the history of every part."""
    # the transcript format (its many patterns) only when a session is read: `compile`
    # without --session, the prompt hook, never needs it
    from autopoiesis.formats.transcript import KnowledgeOp, Text, ToolCall, parse

    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AutopoiesisError(
            f"{path}: not UTF-8 text; give a transcript, a JSON list or JSONL of {{role, content}}."
        ) from None
    except OSError as exc:
        raise AutopoiesisError(
            f"{path}: cannot be read ({exc.strerror or exc}); check the path and its permissions."
        ) from None
    if text.startswith("---"):
        turns = list(parse(text, str(path)).turns)
        if repo is not None and _inside(repo, Path(path)):
            turns = [
                turn
                for _, part in parts_of(repo, repo.rel(Path(path).resolve()))
                for turn in part.turns
            ]
        out: list[HistoryMessage] = []
        for n, turn in enumerate(turns):
            stamp = turn.time.strftime("%Y-%m-%d %H:%M")  # dated, so facts can be ordered
            for k, item in enumerate(turn.items):
                mid = f"t{n}.{k}"
                if isinstance(item, Text):
                    out.append(HistoryMessage(turn.role, item.content, mid, None, stamp))
                elif isinstance(item, ToolCall):
                    out.append(
                        HistoryMessage(turn.role, item.args, mid, item.tool, stamp, item.result)
                    )
                elif isinstance(item, KnowledgeOp):
                    out.append(
                        HistoryMessage(
                            turn.role, f"{item.action} {item.path}", mid, "knowledge", stamp
                        )
                    )
        return out
    rows: list[Any]
    stripped = text.strip()
    try:
        if stripped.startswith("["):
            rows = json.loads(stripped)
        else:
            rows = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    except (ValueError, RecursionError) as exc:
        raise AutopoiesisError(
            f"{path}: neither a transcript nor JSON ({exc}); give a transcript, a JSON list or "
            "JSONL of {role, content}."
        ) from None
    if not isinstance(rows, list):
        raise AutopoiesisError(f"{path}: a JSON list or JSONL of {{role, content}} is expected.")
    out = []
    for n, r in enumerate(rows):
        if not isinstance(r, dict) or "content" not in r:
            raise AutopoiesisError(
                f"{path}: entry {n} is not an object with 'role' and 'content'; "
                "give a transcript, a JSON list or JSONL of {role, content}."
            )
        out.append(
            HistoryMessage(
                str(r.get("role", "user")),
                str(r["content"]),
                str(r.get("id", n)),
                r.get("tool") or (r.get("name") if r.get("role") == "tool" else None),
                None,
                None if r.get("result") is None else str(r["result"]),
            )
        )
    return out


def _inside(repo: MemoryRepo, path: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to((repo.root / CONVERSATIONS_DIR).resolve())
    except OSError:
        return False
