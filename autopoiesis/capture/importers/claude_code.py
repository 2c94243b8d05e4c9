"""Claude Code session logs (`~/.claude/projects/*/*.jsonl`): one JSON object per line,
`user` and `assistant` lines carrying an Anthropic `message`, plus bookkeeping lines.

A file may hold several sessions (by `sessionId`). A malformed line is counted and
skipped; every good line is kept. Tool results are written into the line of the tool
use they answer; `thinking` blocks are left out on purpose (design §2.1: reasoning is
excluded). A `summary` line becomes the topic of the session holding its leaf message.
"""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    ToolCalls,
    args_summary,
    content_text,
    first_json_line,
    looks_like_jsonl,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import TranscriptFormatError
from autopoiesis.formats import transcript as tf

SKIPPED_TYPES = {"file-history-snapshot", "queue-operation", "mode", "system", "progress"}


class ClaudeCodeImporter:
    name = "claude-code"
    description = "Claude Code JSONL session logs"

    def detect(self, path: Path, text: str) -> float:
        # The JSON-lines format autopoiesis knows best; others that recognise their own
        # first line (neutral sessions) are surer.
        if not looks_like_jsonl(path, text):
            return 0.0
        first = first_json_line(text)
        return 0.9 if isinstance(first, dict) and "sessionId" in first else 0.5

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        return parse_log(text.splitlines(), str(path), report)


def _tool_result(block: dict) -> str:
    result = content_text(block.get("content")) or ("error" if block.get("is_error") else "")
    if block.get("is_error") and not result.startswith("error"):
        result = f"error: {result}"
    return result


def parse_log(lines: list[str], source: str, report: ImportReport) -> list[SessionDraft]:
    drafts: dict[str, SessionDraft] = {}
    calls = ToolCalls()
    summaries: list[tuple[str, str | None]] = []  # (summary, leafUuid)
    session_of_uuid: dict[str, str] = {}

    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            report.skip_line(source, n, "not JSON")
            continue
        except RecursionError:
            report.skip_line(source, n, "nested deeper than can be read")
            continue
        if not isinstance(obj, dict):
            report.skip_line(source, n, f"a JSON {type(obj).__name__}, not an object")
            continue
        kind = obj.get("type")
        if kind == "summary":
            if isinstance(obj.get("summary"), str):
                summaries.append((obj["summary"], obj.get("leafUuid")))
            continue
        if kind in SKIPPED_TYPES:
            continue
        if kind not in ("user", "assistant"):
            report.skip_line(source, n, f"unknown line type {kind!r}")
            continue
        msg = obj.get("message")
        if not isinstance(msg, dict) or "content" not in msg:
            report.skip_line(source, n, "no message.content")
            continue
        sid = obj.get("sessionId")
        if not isinstance(sid, str) or not sid:
            report.skip_line(source, n, "no sessionId")
            continue
        try:
            tf.validate_session_id(sid)
            when = parse_ts(obj.get("timestamp"), "timestamp")
        except TranscriptFormatError as exc:
            report.skip_line(source, n, str(exc).split(";")[0])
            continue
        d = drafts.get(sid)
        if d is None:
            d = drafts[sid] = SessionDraft(session_id=sid, channel="claude-code", source=f"claude-code:{Path(source).name}")
        if isinstance(obj.get("uuid"), str):
            session_of_uuid[obj["uuid"]] = sid
        if kind == "assistant" and msg.get("model") and not d.model:
            d.model = str(msg["model"])
        usage = msg["usage"] if isinstance(msg.get("usage"), dict) else {}
        d.tokens_in += usage["input_tokens"] if isinstance(usage.get("input_tokens"), int) else 0
        d.tokens_out += usage["output_tokens"] if isinstance(usage.get("output_tokens"), int) else 0
        content = msg["content"]
        items: list[tf.Item] = []
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, str):
                if block.strip():
                    items.append(tf.Text(block))
            elif not isinstance(block, dict):
                continue
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                items.append(tf.Text(block["text"]))
            elif block.get("type") == "tool_use":
                calls.add(block.get("id"), items, tf.ToolCall(str(block.get("name") or "tool"), args_summary(block.get("input")), None))
            elif block.get("type") == "tool_result":
                result = _tool_result(block)
                if not calls.resolve(block.get("tool_use_id"), result or None):
                    items.append(tf.ToolCall("result", str(block.get("tool_use_id")), result or None))
            elif block.get("type") == "image":
                items.append(tf.Attachment("image (not stored)"))
        if not items:
            continue
        role = "agent" if kind == "assistant" else "user"
        if role == "user" and all(isinstance(i, tf.ToolCall) for i in items):
            role = "agent"  # orphan tool results belong with the agent's tool use
        d.add_turn(when, role, items)
    # A summary line names the session that holds its leaf message; with no leaf to go
    # by, it can only be attributed when the file holds a single session.
    for summary, leaf in summaries:
        sid = session_of_uuid.get(leaf) if isinstance(leaf, str) else None
        if sid is None and len(drafts) == 1:
            sid = next(iter(drafts))
        if sid is not None and drafts[sid].topic is None:
            drafts[sid].topic = summary
    return [d for d in drafts.values() if d.turns]
