"""GitHub Copilot CLI session events (`~/.copilot/session-state/<id>/events.jsonl`, and
the older `~/.copilot/session-state/<id>.jsonl`).

One `{"type", "data", "id", "timestamp", "parentId"}` event per line. `session.start`
names the session; `user.message` and `assistant.message` are the turns (the user's
`content`, not the `transformedContent` the CLI sends on with injected context);
an assistant message's `toolRequests` and `tool.execution_start` open tool calls, and
`tool.execution_complete` writes the result into them by `toolCallId`. Messages of a
subagent (with `parentToolCallId`) are agent turns named by the subagent.
`assistant.reasoning` is left out on purpose (docs/design.md#transcript-format); `system.message`
(the
system prompt), hooks, session notices and turn markers are bookkeeping. Tokens: the
`session.shutdown` totals when the log has them, else the assistant messages' output.
The model: the assistant messages', else (1.0.12 writes it nowhere else) the main agent's
tool events', else the shutdown metrics' (`currentModel`, or the model of most requests in
`modelMetrics`), else the one selected at the start.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    first_json_line,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    count,
    file_session_id,
    first_time,
    json_lines,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
    sequence,
)
from autopoiesis.core.project import remote_repository_name
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.integrations.responses.importer import call_args

# Known bookkeeping: lifecycle, notices, hooks, turn markers, usage, reasoning (excluded).
KNOWN_PREFIXES = (
    "session.",
    "hook.",
    "subagent.",
    "skill.",
    "system.",
    "assistant.",
    "tool.",
    "abort",
    "user.",
)

# A content event's handler: (the log, its time, its speaker, its data).
_Handler = Callable[["_Log", datetime, "str | None", dict[str, Any]], None]


class CopilotImporter:
    name = "copilot"
    description = "GitHub Copilot CLI session events (~/.copilot/session-state/**/events.jsonl)"

    def detect(self, path: Path, text: str) -> float:
        if not looks_like_jsonl(path, text):
            return 0.0
        first = first_json_line(text)
        if (
            isinstance(first, dict)
            and isinstance(first.get("type"), str)
            and isinstance(first.get("data"), dict)
            and "timestamp" in first
        ):
            return 0.95 if first["type"] == "session.start" else 0.7
        return 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        log = _Log(path, report)
        for n, obj in json_lines(text, str(path), report):
            log.event(n, obj)
        return [log.finish()]


class _Log:
    """One Copilot events file as it is read, event by event, into one SessionDraft."""

    def __init__(self, path: Path, report: ImportReport) -> None:
        self.path, self.report = path, report
        self.draft = SessionDraft(session_id="", channel="copilot", source=f"copilot:{path.name}")
        self.calls = ToolCalls()
        self.subagents: dict[str, str] = {}  # toolCallId of the task -> the subagent's name
        self.shutdown = [0, 0]
        self.output_tokens = 0
        self.selected_model: str | None = None
        self.tool_model: str | None = None  # 1.0.12 names the model only on tool events
        self.shutdown_model: str | None = None  # ... and in the shutdown metrics
        self.clock: datetime | None = None  # the time of the last event dated

    def _agent_items(self, when: datetime, name: str | None) -> list[tf.Item]:
        last = self.draft.turns[-1] if self.draft.turns else None
        if last is not None and last.role == "agent" and last.name == name:
            return last.items
        return self.draft.add_turn(when, "agent", [], name).items

    def event(self, n: int, obj: dict[str, Any]) -> None:
        kind, data = obj.get("type"), obj.get("data")
        if not isinstance(kind, str) or not isinstance(data, dict):
            self.report.skip_line(str(self.path), n, "not a Copilot event (type and data)")
            return
        handler = self._CONTENT_HANDLERS.get(kind)
        if handler is None:
            self._bookkeeping(n, kind, data)
            return
        when = self.report.line_time(str(self.path), n, obj.get("timestamp"), before=self.clock)
        if when is None:
            return
        self.clock = when
        handler(self, when, self._speaker(data), data)

    def _speaker(self, data: dict[str, Any]) -> str | None:
        """Who speaks: None for the main agent, else the subagent whose task this is."""
        parent = data.get("parentToolCallId")
        if not parent:
            return None
        return self.subagents.get(str(parent), "subagent")

    def _user_message(self, when: datetime, speaker: str | None, data: dict[str, Any]) -> None:
        items: list[tf.Item] = []
        if nonempty_str(data.get("content")):
            items.append(tf.Text(data["content"]))
        for att in sequence(data.get("attachments")):
            if not isinstance(att, dict):
                continue
            if nonempty_str(att.get("path")) or nonempty_str(att.get("displayName")):
                items.append(tf.Attachment(att.get("path") or att["displayName"]))
        if items:
            self.draft.add_turn(when, "user", items, speaker)

    def _assistant_message(self, when: datetime, speaker: str | None, data: dict[str, Any]) -> None:
        if self.draft.model is None and nonempty_str(data.get("model")):
            self.draft.model = data["model"]
        self.output_tokens += count(data.get("outputTokens"))
        text = nonempty_str(data.get("content"))
        requests = (
            [r for r in data.get("toolRequests") or [] if isinstance(r, dict)]
            if isinstance(data.get("toolRequests"), list)
            else []
        )
        if text:
            self.draft.add_turn(when, "agent", [tf.Text(text)], speaker)
        for req in requests:
            if req.get("toolCallId") in self.calls:
                continue  # its execution_start came first and opened it
            name = str(req.get("name") or "tool")
            call = tf.ToolCall(name, call_args(req.get("arguments")), None)
            self.calls.add(req.get("toolCallId"), self._agent_items(when, speaker), call)

    def _tool_start(self, when: datetime, speaker: str | None, data: dict[str, Any]) -> None:
        self._tool_model(speaker, data)
        if data.get("toolCallId") in self.calls and data.get("toolCallId") not in (None, ""):
            return  # the assistant message's toolRequests opened it
        name = str(data.get("toolName") or "tool")
        if nonempty_str(data.get("mcpServerName")):
            name = f"{data['mcpServerName']}.{data.get('mcpToolName') or name}"
        self.calls.add(
            data.get("toolCallId"),
            self._agent_items(when, speaker),
            tf.ToolCall(name, call_args(data.get("arguments")), None),
        )

    def _tool_model(self, speaker: str | None, data: dict[str, Any]) -> None:
        """The model a tool event of the main agent names (a subagent's may be another)."""
        if speaker is None and self.tool_model is None:
            self.tool_model = nonempty_str(data.get("model"))

    def _tool_complete(self, when: datetime, speaker: str | None, data: dict[str, Any]) -> None:
        self._tool_model(speaker, data)
        result = mapping(data.get("result"))
        text = output_text(result.get("content")) or output_text(data.get("error"))
        if data.get("success") is False:
            text = f"error: {text}" if text else "error"
        call_id = data.get("toolCallId")
        if not (call_id and self.calls.resolve(call_id, text or None)):
            orphan = tf.ToolCall("result", str(call_id or ""), text or None)
            self._agent_items(when, speaker).append(orphan)

    # The content events, each to its handler; every other kind is bookkeeping.
    _CONTENT_HANDLERS: ClassVar[dict[str, _Handler]] = {
        "user.message": _user_message,
        "assistant.message": _assistant_message,
        "tool.execution_start": _tool_start,
        "tool.execution_complete": _tool_complete,
    }

    def _context(self, context: dict[str, Any]) -> None:
        """session.start's `context` (newer CLIs): `cwd`, `gitRoot`, `repository`
        (`owner/name` on GitHub), `branch`. The repository names the project."""
        self.draft.cwd = self.draft.cwd or nonempty_str(context.get("cwd"))
        repository = nonempty_str(context.get("repository"))
        if self.draft.repository is None and repository:
            self.draft.repository = remote_repository_name(repository) or None

    def _bookkeeping(self, n: int, kind: str, data: dict[str, Any]) -> None:
        if not kind.startswith(KNOWN_PREFIXES):
            self.report.skip_line(str(self.path), n, f"unknown event type {kind!r}")
        elif kind == "session.start":
            if not self.draft.session_id and safe_session_id(data.get("sessionId")):
                self.draft.session_id = data["sessionId"]
                self.draft.started = (
                    first_time(data.get("startTime"), field="startTime") or self.draft.started
                )
            self.selected_model = self.selected_model or nonempty_str(data.get("selectedModel"))
            self._context(mapping(data.get("context")))
        elif kind == "session.model_change":
            self.selected_model = self.selected_model or nonempty_str(data.get("newModel"))
        elif kind == "subagent.started" and data.get("toolCallId"):
            self.subagents[str(data["toolCallId"])] = str(
                data.get("agentDisplayName") or data.get("agentName") or "subagent"
            )
        elif kind == "session.shutdown":
            metrics = mapping(data.get("modelMetrics"))
            self.shutdown_model = nonempty_str(data.get("currentModel")) or max(
                (m for m in metrics if nonempty_str(m)),
                key=lambda m: count(mapping(metrics[m]).get("requests")),
                default=None,
            )
            details = mapping(data.get("tokenDetails"))
            if details:
                self.shutdown[0] += count(mapping(details.get("input")).get("tokenCount"))
                self.shutdown[1] += count(mapping(details.get("output")).get("tokenCount"))
            else:
                for metrics in mapping(data.get("modelMetrics")).values():
                    usage = mapping(mapping(metrics).get("usage"))
                    self.shutdown[0] += count(usage.get("inputTokens"))
                    self.shutdown[1] += count(usage.get("outputTokens"))

    def finish(self) -> SessionDraft:
        d = self.draft
        if not d.session_id:
            stem = self.path.parent.name if self.path.name == "events.jsonl" else self.path.stem
            d.session_id = file_session_id("copilot", stem)
        d.model = d.model or self.tool_model or self.shutdown_model or self.selected_model
        if any(self.shutdown):
            d.tokens_in, d.tokens_out = self.shutdown
        else:
            d.tokens_out = self.output_tokens
        if not d.turns:
            raise ImportFormatError(
                f"{self.path}: Copilot session {d.session_id} holds no user or assistant message; "
                "nothing to import."
            )
        return d
