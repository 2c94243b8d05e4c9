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
from autopoiesis.core.text import utf8_safe
from autopoiesis.errors import AutopoiesisError


def load_session(path: Path, repo: MemoryRepo | None = None) -> list[HistoryMessage]:
    """Session history from a transcript (docs/design.md#transcript-format), a JSON list or JSONL of
    {role, content[, tool, id]} objects. With REPO, a transcript under its raw/ that is
    one part of a continued session gives the history of every part."""
    # the transcript format (its many patterns) only when a session is read: `compile`
    # without --session, the prompt hook, never needs it
    from autopoiesis.formats.transcript import KnowledgeOp, Text, ToolCall, parse
    from autopoiesis.formats.transcript_files import parts_of

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
    where: list[str]  # how each row is named in a message: "line 3" or "entry 3"
    stripped = text.strip().lstrip("\ufeff")
    expected = "give a transcript, a JSON list or JSONL of {role, content}"
    if stripped.startswith("["):
        try:
            rows = json.loads(stripped)
        except (ValueError, RecursionError) as exc:
            raise AutopoiesisError(f"{path}: not valid JSON ({exc}); {expected}.") from None
        if not isinstance(rows, list):
            raise AutopoiesisError(f"{path}: a JSON list or JSONL is expected; {expected}.")
        where = [f"entry {n}" for n in range(1, len(rows) + 1)]
    else:
        rows, where = [], []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line.lstrip("\ufeff")))
            except (ValueError, RecursionError) as exc:
                why = (
                    f"{exc.msg} at column {exc.colno}"
                    if isinstance(exc, json.JSONDecodeError)
                    else str(exc)[:120]
                )
                raise AutopoiesisError(
                    f"{path}: line {n} is not JSON ({why}); {expected}."
                ) from None
            where.append(f"line {n}")
    out = []
    for n, (r, at) in enumerate(zip(rows, where, strict=True)):
        if not isinstance(r, dict) or "content" not in r:
            raise AutopoiesisError(
                f"{path}: {at} is not an object with 'role' and 'content'; {expected}."
            )
        wrong = [
            k
            for k, numbers in (
                ("role", False),
                ("content", True),
                ("tool", False),
                ("name", False),
                ("id", True),
            )
            if r.get(k) is not None and not _text_field(r[k], numbers)
        ]
        if wrong:
            raise AutopoiesisError(f"{path}: {at}: {', '.join(wrong)} must be text; {expected}.")
        # a JSON `\ud83d` escape without its pair is a lone surrogate: made U+FFFD, as a
        # capture makes it, or printing the context failed on it
        tool = r.get("tool") or (r.get("name") if r.get("role") == "tool" else None)
        out.append(
            HistoryMessage(
                utf8_safe(str(r.get("role", "user"))),
                utf8_safe(str(r["content"])),
                utf8_safe(str(r.get("id", n))),
                utf8_safe(str(tool)) if tool is not None else None,
                None,
                None if r.get("result") is None else utf8_safe(str(r["result"])),
            )
        )
    return out


def _text_field(value: Any, numbers: bool) -> bool:
    """Whether VALUE may stand for a field's text: a string, or (NUMBERS) a number."""
    if isinstance(value, str):
        return True
    return numbers and isinstance(value, (int, float)) and not isinstance(value, bool)


def _inside(repo: MemoryRepo, path: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to((repo.root / CONVERSATIONS_DIR).resolve())
    except OSError:
        return False
