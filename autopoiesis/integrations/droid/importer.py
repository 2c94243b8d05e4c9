"""Factory Droid sessions (`~/.factory/sessions/<workspace>/<id>.jsonl`), and the
`droid exec --output-format stream-json` log.

**Session logs**: a `session_start` line (`id`, `title`, `cwd`), then `message` lines
whose `message` is an Anthropic message (`role`, `content` blocks: `text`, `tool_use`,
`tool_result`, `image`; `thinking` is left out). Lines the harness shows only to the model
(`visibility: "llm_only"`) and `<system-reminder>` blocks are context, not conversation.
The `<id>.settings.json` beside the log gives the model and the token usage.

**stream-json**: `message` (`role`, `text`), `tool_call` (`toolCallId`, `toolName`,
`parameters`), `tool_result` (`toolCallId`, `value`) and `completion` (`finalText`) lines,
each with `session_id` and `timestamp`.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    first_json_line,
    head_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    anthropic_attachment,
    anthropic_tool_result,
    args_summary,
    count,
    file_session_id,
    json_lines,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
    string,
)
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf

_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_QUERY_RE = re.compile(r"^\s*<user_query>\s*(.*?)\s*</user_query>\s*$", re.S)
STREAM_TYPES = ("message", "tool_call", "tool_result", "completion")


class DroidImporter:
    name = "droid"
    description = "Factory Droid sessions (~/.factory/sessions/*/*.jsonl) and stream-json logs"

    def detect(self, path: Path, text: str) -> float:
        if not looks_like_jsonl(path, text):
            return 0.0
        first = first_json_line(text)
        if not isinstance(first, dict):
            return 0.0
        if first.get("type") == "session_start" and isinstance(first.get("id"), str):
            return 0.95
        stream = any(
            isinstance(o, dict) and _session_of(o) is not None and _is_stream_line(o)
            for o in head_json(text)
        )
        return 0.95 if stream else 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        log = _Log(path, report)
        for n, obj in json_lines(text, str(path), report):
            log.line(n, obj)
        return [log.finish()]


class _Log:
    def __init__(self, path: Path, report: ImportReport) -> None:
        self.path, self.report = path, report
        self.draft = SessionDraft(session_id="", channel="droid", source=f"droid:{path.name}")
        self.calls = ToolCalls()
        self.clock: datetime | None = None  # the time of the last line dated

    def _when(self, n: int, value: Any) -> datetime | None:
        when = self.report.line_time(str(self.path), n, value, before=self.clock)
        self.clock = when or self.clock
        return when

    def line(self, n: int, obj: dict[str, Any]) -> None:
        kind = string(obj.get("type"))
        if kind == "session_start":
            d = self.draft
            d.session_id = d.session_id or (safe_session_id(obj.get("id")) or "")
            d.topic = (
                d.topic or nonempty_str(obj.get("sessionTitle")) or nonempty_str(obj.get("title"))
            )
            d.cwd = d.cwd or nonempty_str(obj.get("cwd"))
            d.model = d.model or nonempty_str(obj.get("model"))
            return
        if kind == "system":  # a stream's first line: the model and the folder
            self.draft.model = self.draft.model or nonempty_str(obj.get("model"))
            self.draft.cwd = self.draft.cwd or nonempty_str(obj.get("cwd"))
        if kind not in STREAM_TYPES:
            return  # the log's bookkeeping (todo state, settings changes, errors, ...)
        if obj.get("visibility") == "llm_only":
            return  # context shown to the model only
        when = self._when(n, obj.get("timestamp"))
        if when is None:
            return
        stream_id = _session_of(obj)
        if not self.draft.session_id and stream_id is not None:
            self.draft.session_id = safe_session_id(stream_id) or ""
        if kind == "message" and isinstance(obj.get("message"), dict):
            self._message(obj["message"], when)
        else:
            self._stream(kind, obj, when)

    def _message(self, message: dict[str, Any], when: datetime) -> None:
        role = "user" if message.get("role") == "user" else "agent"
        content = message.get("content")
        items: list[tf.Item] = []
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, str):
                block = {"type": "text", "text": block}
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                text = _REMINDER_RE.sub("", block["text"])
                m = _QUERY_RE.match(text)
                if (m.group(1) if m else text).strip():
                    items.append(tf.Text(m.group(1) if m else text))
            elif kind == "tool_use":
                call = tf.ToolCall(
                    str(block.get("name") or "tool"), args_summary(block.get("input"))
                )
                self.calls.add(block.get("id"), items, call)
            elif kind == "tool_result":
                anthropic_tool_result(block, self.calls, items)
            elif kind in ("image", "document"):
                items.append(anthropic_attachment(block))
        if not items:
            return
        if role == "user" and all(isinstance(i, tf.ToolCall | tf.Attachment) for i in items):
            role = "agent"  # results that answer no call seen
        self._add(when, role, items)

    def _add(self, when: datetime, role: str, items: list[tf.Item]) -> None:
        self.draft.add_turn(when, role, items)  # its very list: results fill calls in it

    def _stream(self, kind: str, obj: dict[str, Any], when: datetime) -> None:
        call_id = obj.get("toolCallId", obj.get("id"))
        said = obj.get("text")
        text = _REMINDER_RE.sub("", said).strip() if isinstance(said, str) else ""
        if kind == "message" and text:
            self._add(when, "user" if obj.get("role") == "user" else "agent", [tf.Text(text)])
        elif kind == "tool_call":
            items: list[tf.Item] = []
            tool = str(obj.get("toolName") or "tool")
            self.calls.add(call_id, items, tf.ToolCall(tool, args_summary(obj.get("parameters"))))
            self._add(when, "agent", items)
        elif kind == "tool_result":
            value = obj.get("value")
            text = output_text(value)
            code = mapping(value).get("exitCode")
            if isinstance(code, int) and code != 0:
                text = f"exit {code}: {text}"
            elif obj.get("isError") is True and not text.startswith("error"):
                text = f"error: {text}"
            if not self.calls.resolve(call_id, text or None):
                orphan = tf.ToolCall("result", str(call_id or ""), text or None)
                self._add(when, "agent", [orphan])
        elif kind == "completion":
            usage = mapping(obj.get("usage"))
            self.draft.tokens_in += count(usage.get("input_tokens"))
            self.draft.tokens_out += count(usage.get("output_tokens"))
            if nonempty_str(obj.get("finalText")):
                self._add(when, "agent", [tf.Text(obj["finalText"])])

    def finish(self) -> SessionDraft:
        d = self.draft
        if not d.session_id:
            d.session_id = file_session_id("droid", self.path.stem)
        settings = _settings(self.path)
        d.model = d.model or nonempty_str(settings.get("model"))
        usage = mapping(settings.get("tokenUsage"))
        if usage:
            d.tokens_in = count(usage.get("inputTokens")) + count(usage.get("cacheReadTokens"))
            d.tokens_out = count(usage.get("outputTokens"))
        if not d.turns:
            raise ImportFormatError(
                f"{self.path}: this Droid session holds no user or agent message; nothing to "
                "import."
            )
        return d


def _is_stream_line(obj: dict[str, Any]) -> bool:
    """A line only Droid's stream-json writes (Claude Code's old logs have tool_use and
    tool_result lines of their own, shaped otherwise)."""
    kind = obj.get("type")
    return (
        (kind == "tool_call" and "toolName" in obj)
        or (kind == "tool_result" and "value" in obj)
        or (kind == "completion" and "finalText" in obj)
        or (kind == "message" and "text" in obj and "role" in obj and "message" not in obj)
    )


def _session_of(obj: dict[str, Any]) -> str | None:
    """The session id a stream-json line carries (`session_id`, or `sessionId`)."""
    value = obj.get("session_id", obj.get("sessionId"))
    return value if isinstance(value, str) else None


def _settings(path: Path) -> dict[str, Any]:
    """The `<id>.settings.json` beside a session log (model, token usage), {} if none."""
    try:
        data = json.loads(path.with_suffix(".settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
