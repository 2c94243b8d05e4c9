"""Kimi Code session journals (`~/.kimi-code/sessions/<workdir>/<session>/agents/<agent>/
wire.jsonl`).

A journal is one op a line, `{"type", ...payload, "time": ms}`, after a first
`{"type": "metadata", "protocol_version"}` line. The conversation is in two families:

* `context.append_message`: the user's messages (`origin.kind` user); those the harness
  injects (`origin.kind` injection: system reminders, plan-mode notices) are left out;
* `context.append_loop_event`: what the model produced, step by step: `content.part`
  (`text`; `think` is reasoning, left out), `tool.call` and `tool.result` (by
  `toolCallId`), `step.end` with the step's token usage.

Everything else (config updates, tool snapshots, LLM requests, permissions, turn markers)
is bookkeeping; `llm.request` and `config.update` name the model. The session is the
folder above `agents/`; its `state.json` gives the title and the working folder. A
subagent's journal (`agents/<id>/`, id not `main`) is a session of its own,
`<session>-<id>`, whose parent is the main one.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    first_json_line,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    args_summary,
    count,
    file_session_id,
    json_lines,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
    sequence,
    string,
)
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf

MAIN_AGENT = "main"


def _is_journal(first: Any) -> bool:
    return (
        isinstance(first, dict) and first.get("type") == "metadata" and "protocol_version" in first
    )


class KimiImporter:
    name = "kimi"
    description = "Kimi Code session journals (~/.kimi-code/sessions/**/wire.jsonl)"

    def detect(self, path: Path, text: str) -> float:
        if not looks_like_jsonl(path, text):
            return 0.0
        if _is_journal(first_json_line(text)):
            return 0.95
        return 0.6 if path.name == "wire.jsonl" and "context.append_" in text[:65536] else 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        journal = _Journal(path, report)
        for n, obj in json_lines(text, str(path), report):
            journal.op(n, obj)
        return [journal.finish()]


class _Journal:
    def __init__(self, path: Path, report: ImportReport) -> None:
        self.path, self.report = path, report
        session, agent = _ids(path)
        self.draft = SessionDraft(
            session_id=session if agent in (None, MAIN_AGENT) else f"{session}-{agent}",
            channel="kimi",
            source=f"kimi:{path.name}",
            parent_session=session if agent not in (None, MAIN_AGENT) else None,
        )
        self.calls = ToolCalls()
        self.step: str | None = None  # the step whose agent turn is open
        self.clock: datetime | None = None

    def _when(self, n: int, obj: dict[str, Any]) -> datetime | None:
        value = obj.get("time", obj.get("created_at"))
        if value is None:
            return self.clock
        when = self.report.line_time(str(self.path), n, value, "time", before=self.clock)
        if when is not None:
            self.clock = when
        return when

    def op(self, n: int, obj: dict[str, Any]) -> None:
        kind = string(obj.get("type"))
        if kind is None:
            self.report.skip_line(str(self.path), n, "not a Kimi journal op (no type)")
            return
        when = self._when(n, obj)
        if when is None:
            return
        if kind in ("llm.request", "config.update") and self.draft.model is None:
            self.draft.model = nonempty_str(obj.get("model"))
        elif kind == "config.update" and self.draft.cwd is None:
            self.draft.cwd = nonempty_str(obj.get("cwd"))
        elif kind == "context.append_message":
            self._message(mapping(obj.get("message")), when)
        elif kind == "context.append_loop_event":
            self._loop(mapping(obj.get("event")), when)

    def _message(self, message: dict[str, Any], when: datetime) -> None:
        if (
            message.get("role") != "user"
            or mapping(message.get("origin")).get("kind") == "injection"
        ):
            return
        items: list[tf.Item] = []
        for part in sequence(message.get("content")):
            part = mapping(part)
            if isinstance(part.get("text"), str) and part["text"].strip():
                items.append(tf.Text(part["text"]))
            elif part.get("type") in ("image", "image_url", "file"):
                items.append(tf.Attachment(str(part.get("path") or part.get("type"))))
        if items:
            self.draft.add_turn(when, "user", items)
            self.step = None

    def _agent(self, step: str | None, when: datetime) -> list[tf.Item]:
        turns = self.draft.turns
        if step is not None and step == self.step and turns and turns[-1].role == "agent":
            return turns[-1].items
        self.step = step
        return self.draft.add_turn(when, "agent", []).items

    def _loop(self, event: dict[str, Any], when: datetime) -> None:
        kind = event.get("type")
        step = nonempty_str(event.get("stepUuid"))
        if kind == "content.part":
            part = mapping(event.get("part"))
            if part.get("type") == "text" and nonempty_str(part.get("text")):
                self._agent(step, when).append(tf.Text(part["text"]))
        elif kind == "tool.call":
            call = tf.ToolCall(str(event.get("name") or "tool"), args_summary(event.get("args")))
            self.calls.add(event.get("toolCallId"), self._agent(step, when), call)
        elif kind == "tool.result":
            result = mapping(event.get("result"))
            text = output_text(result.get("output"))
            if result.get("isError") and not text.startswith("error"):
                text = f"error: {text}" if text else "error"
            if not self.calls.resolve(event.get("toolCallId"), text or None):
                orphan = tf.ToolCall("result", str(event.get("toolCallId") or ""), text or None)
                self._agent(step, when).append(orphan)
        elif kind == "step.end":
            usage = mapping(event.get("usage"))
            self.draft.tokens_in += sum(
                count(usage.get(k)) for k in ("inputOther", "inputCacheRead", "inputCacheCreation")
            )
            self.draft.tokens_out += count(usage.get("output"))

    def finish(self) -> SessionDraft:
        d = self.draft
        d.turns = [t for t in d.turns if t.items]
        state = _state(self.path)
        title = state.get("customTitle") if state.get("isCustomTitle") else state.get("title")
        d.topic = nonempty_str(title) if d.parent_session is None else None
        d.cwd = nonempty_str(state.get("workDir")) or d.cwd
        if not d.turns:
            raise ImportFormatError(
                f"{self.path}: this Kimi Code journal holds no user or model message; nothing "
                "to import."
            )
        return d


def _ids(path: Path) -> tuple[str, str | None]:
    """(session id, agent id) of a journal at PATH: `<session>/agents/<agent>/wire.jsonl`,
    else the file's own name and no agent."""
    folder = path.parent
    if folder.parent.name == "agents":
        session = safe_session_id(folder.parent.parent.name)
        if session is not None:
            return session, folder.name
    return file_session_id("kimi", path.stem if path.stem != "wire" else folder.name), None


def _state(path: Path) -> dict[str, Any]:
    """The session's state.json (title, workDir), {} when there is none."""
    if path.parent.parent.name != "agents":
        return {}
    try:
        data = json.loads((path.parent.parent.parent / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
