"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Three generations are read:

* **Current** (Codex ≥0.44): one `{"timestamp", "type", "payload"}` envelope per line.
  `session_meta` names the session, `response_item` lines carry the OpenAI Responses
  items of the conversation (read by responses.ResponsesReader), `event_msg` lines are
  UI events that repeat those items (user_message, agent_message, exec_command_end, …),
  `turn_context` gives the model, `token_count` events the cumulative token usage,
  `thread_name_updated` the topic. `compacted`'s summary becomes a system turn; the
  other envelope kinds (turn_context, world_state, …) are bookkeeping. A rollout that
  holds events but no response items (0.50-era logs) is read from its events instead.
* **Early Rust** (before 0.44): a first line `{"id", "timestamp", "instructions"}`, then
  bare Responses items (no times of their own) and `{"record_type": "state"}` lines.
* **TypeScript** (spring 2025): one JSON file `{"session": {...}, "items": [...]}`.

A forked or resumed rollout repeats the `session_meta` of the session it came from: the
first one names the session. A line whose timestamp is not a time is counted as
malformed and skipped; a line without one takes the time of the line before it (its
payload's own `timestamp` when it has one). Bookkeeping lines are known and skipped
without a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    first_json_line,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    count,
    file_session_id,
    first_time,
    json_lines,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
    sequence,
    stable_id,
    string,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.project import remote_repository_name
from autopoiesis.core.text import injected_context
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.integrations.responses.importer import (
    SILENT_ITEMS,
    ResponsesReader,
    call_args,
    command_line,
    is_responses_item,
    user_request,
)

ENVELOPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "inter_agent_communication_metadata",
    }
)
# Events that carry the conversation when a rollout has no response items.
CONTENT_EVENTS = frozenset(
    {
        "user_message",
        "agent_message",
        "exec_command_end",
        "mcp_tool_call_end",
        "patch_apply_end",
        "web_search_end",
    }
)
_UUID_TAIL = re.compile(
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE
)
CHAT_ROLES = ("user", "assistant", "system", "developer")


def _is_early_meta(obj: dict[str, Any]) -> bool:
    return (
        isinstance(obj.get("id"), str)
        and "timestamp" in obj
        and ("instructions" in obj or "git" in obj)
        and "type" not in obj
        and "role" not in obj
    )


def _is_chat_line(obj: dict[str, Any]) -> bool:
    """An item line of an early Codex log written chat-style: role, content and a time."""
    return (
        string(obj.get("role")) in CHAT_ROLES
        and ("content" in obj or isinstance(obj.get("message"), str))
        and ("timestamp" in obj or "created_at" in obj)
        and "sessionId" not in obj
        and "type" not in obj
    )


class CodexImporter:
    name = "codex"
    description = "Codex CLI rollouts (~/.codex/sessions/**/rollout-*.jsonl, all generations)"

    def detect(self, path: Path, text: str) -> float:
        rollout = path.name.startswith("rollout-")
        if not looks_like_jsonl(path, text):
            try:
                data = load_json(text)
            except (ValueError, RecursionError):
                return 0.0
            ok = (
                isinstance(data, dict)
                and isinstance(data.get("session"), dict)
                and isinstance(data.get("items"), list)
            )
            return 0.95 if ok else 0.0
        first = first_json_line(text)
        if not isinstance(first, dict):
            return 0.0
        if string(first.get("type")) in ENVELOPES and isinstance(first.get("payload"), dict):
            return 0.95
        if _is_early_meta(first) or "record_type" in first:
            return 0.9
        if is_responses_item(first) or _is_chat_line(first):
            return 0.9 if rollout else 0.6
        return 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        if not looks_like_jsonl(path, text):
            return [_read_typescript(path, text, report)]
        rollout = _Rollout(path, report)
        for n, obj in json_lines(text, str(path), report):
            rollout.line(n, obj)
        return [rollout.finish()]


def _read_typescript(path: Path, text: str, report: ImportReport) -> SessionDraft:
    try:
        data = load_json(text)
    except ValueError as exc:
        raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
    session, items = data.get("session"), data.get("items")
    if not isinstance(session, dict) or not isinstance(items, list):
        raise ImportFormatError(
            f"{path}: a Codex session file is an object with session and items."
        )
    started = parse_ts(session.get("timestamp"), f"{path}: session.timestamp")
    sid = safe_session_id(session.get("id")) or stable_id("codex", path.name, items)
    draft = SessionDraft(
        session_id=sid, channel="codex", source=f"codex:{path.name}", started=started
    )
    reader = ResponsesReader(draft)
    for i, item in enumerate(items):
        why = reader.add(item, started) if isinstance(item, dict) else "not an object"
        if why:
            report.skip_line(str(path), i + 1, f"items[{i}]: {why}")
    if not draft.turns:
        raise ImportFormatError(
            f"{path}: Codex session {sid} holds no user or agent message; nothing to import."
        )
    return draft


# How each UI event of a finished tool call reads as a call line, for a rollout replayed
# from its events: event payload -> (tool, arguments, result).
def _exec_command_end(p: dict[str, Any]) -> tuple[str, str, str | None]:
    out = output_text(p.get("aggregated_output") or p.get("formatted_output") or p.get("stdout"))
    code = p.get("exit_code")
    if isinstance(code, int) and code != 0:
        out = f"exit {code}: {out}"
    return "shell", command_line(p.get("command")) or "", out or None


def _mcp_tool_call_end(p: dict[str, Any]) -> tuple[str, str, str | None]:
    inv = mapping(p.get("invocation"))
    name = ".".join(str(x) for x in (inv.get("server"), inv.get("tool")) if x) or "mcp"
    res = mapping(p.get("result"))
    ok = res.get("Ok")
    out = (
        f"error: {output_text(res['Err'])}"
        if "Err" in res
        else output_text(ok.get("content") if isinstance(ok, dict) else ok)
    )
    return name, call_args(inv.get("arguments")), out or None


def _patch_apply_end(p: dict[str, Any]) -> tuple[str, str, str | None]:
    changes = mapping(p.get("changes"))
    ok = "applied" if p.get("success") is not False else f"failed: {output_text(p.get('stderr'))}"
    return "apply_patch", " ".join(map(str, changes)), ok


def _web_search_end(p: dict[str, Any]) -> tuple[str, str, str | None]:
    return "web_search", str(p.get("query") or ""), None


REPLAYED_CALLS: dict[str, Callable[[dict[str, Any]], tuple[str, str, str | None]]] = {
    "exec_command_end": _exec_command_end,
    "mcp_tool_call_end": _mcp_tool_call_end,
    "patch_apply_end": _patch_apply_end,
    "web_search_end": _web_search_end,
}


class _Rollout:
    """The state of reading one rollout file, line by line."""

    def __init__(self, path: Path, report: ImportReport) -> None:
        self.path, self.report, self.source = path, report, str(path)
        self.draft = SessionDraft(session_id="", channel="codex", source=f"codex:{path.name}")
        self.reader = ResponsesReader(self.draft)
        self.clock: datetime | None = None  # the last good time, for lines that carry none
        self.events: list[
            tuple[int, dict[str, Any], Any]
        ] = []  # content events, used when no items came
        self.total: tuple[int, int] | None = None  # cumulative usage from token_count
        self.summed = [0, 0]  # per-turn usage of older logs
        self.bookkeeping = 0
        self.bad_before = report.bad_lines

    def _when(self, n: int, value: Any, *, carry: bool = False) -> datetime | None:
        if value is None and carry and self.clock is not None:
            return self.clock
        when = self.report.line_time(self.source, n, value, before=self.clock)
        if when is not None:
            self.clock = when
        return when

    def line(self, n: int, obj: dict[str, Any]) -> None:
        kind, payload = string(obj.get("type")), obj.get("payload")
        if kind in ENVELOPES and isinstance(payload, dict):
            getattr(self, f"_{kind}")(n, obj, payload)
        elif "record_type" in obj:
            self.bookkeeping += 1  # the state lines of early rollouts
        elif _is_early_meta(obj):
            self._session_meta(n, obj, obj)
        elif kind == "error" and "role" not in obj:
            self.bookkeeping += 1  # an error notice of an early log
        elif isinstance(kind, str) or isinstance(obj.get("role"), str):
            self._item(n, obj, obj.get("timestamp", obj.get("created_at")), carry=True)
        else:
            self.report.skip_line(self.source, n, f"not a Codex rollout line (type {kind!r})")

    def _item(self, n: int, obj: dict[str, Any], ts: Any, *, carry: bool = False) -> None:
        if string(obj.get("type")) in SILENT_ITEMS or string(obj.get("role")) in (
            "system",
            "developer",
        ):
            self.bookkeeping += 1  # reasoning and system prompts need no time to be left out
            return
        when = self._when(n, ts, carry=carry)
        if when is None:
            return
        why = self.reader.add(obj, when)
        if why:
            self.report.skip_line(self.source, n, why)

    def _session_meta(self, n: int, obj: dict[str, Any], payload: dict[str, Any]) -> None:
        self.bookkeeping += 1
        sid = safe_session_id(payload.get("id"), payload.get("session_id"))
        if self.draft.session_id or sid is None:
            return  # the first session_meta names the session; later ones come from forks
        self.draft.session_id = sid
        started = first_time(
            payload.get("timestamp"), obj.get("timestamp"), field="session_meta.timestamp"
        )
        if started is not None:
            self.draft.started = self.clock = started
        if isinstance(payload.get("model"), str):
            self.draft.model = payload["model"]
        if nonempty_str(payload.get("cwd")):
            self.draft.cwd = payload["cwd"]
        git = payload.get("git")
        if isinstance(git, dict) and nonempty_str(git.get("repository_url")):
            # The remote Codex saw names the project where the folder is not here.
            self.draft.repository = remote_repository_name(git["repository_url"]) or None

    def _response_item(self, n: int, obj: dict[str, Any], payload: dict[str, Any]) -> None:
        self._item(n, payload, obj.get("timestamp", payload.get("timestamp")), carry=True)

    def _turn_context(self, n: int, obj: dict[str, Any], payload: dict[str, Any]) -> None:
        self.bookkeeping += 1
        if self.draft.cwd is None and nonempty_str(payload.get("cwd")):
            self.draft.cwd = payload["cwd"]
        if (
            self.draft.model is None
            and nonempty_str(payload.get("model"))
            and self._when(n, obj.get("timestamp"))
        ):
            self.draft.model = payload["model"]

    def _event_msg(self, n: int, obj: dict[str, Any], payload: dict[str, Any]) -> None:
        kind = string(payload.get("type"))
        if kind in CONTENT_EVENTS:
            self.events.append((n, payload, obj.get("timestamp")))
            return
        if kind not in (
            "token_count",
            "turn.completed",
            "thread_name_updated",
            "thread_settings_applied",
        ):
            self.bookkeeping += 1
            return
        if self._when(n, obj.get("timestamp")) is None:
            return  # what a line says is used only when the line itself is sound
        self.bookkeeping += 1
        if kind == "token_count" and isinstance(payload.get("info"), dict):
            info = payload["info"]
            total = info.get("total_token_usage")
            if isinstance(total, dict):  # cumulative: the largest is the session's
                seen = self.total or (0, 0)
                self.total = (
                    max(seen[0], count(total.get("input_tokens"))),
                    max(seen[1], count(total.get("output_tokens"))),
                )
            elif "prompt" in info or "completion" in info:
                self.summed[0] += count(info.get("prompt"))
                self.summed[1] += count(info.get("completion"))
        elif kind == "turn.completed" and isinstance(payload.get("usage"), dict):
            self.summed[0] += count(payload["usage"].get("input_tokens"))
            self.summed[1] += count(payload["usage"].get("output_tokens"))
        elif kind == "thread_name_updated" and nonempty_str(payload.get("thread_name")):
            self.draft.topic = payload["thread_name"]
        elif kind == "thread_settings_applied" and isinstance(payload.get("thread_settings"), dict):
            if self.draft.model is None and nonempty_str(payload["thread_settings"].get("model")):
                self.draft.model = payload["thread_settings"]["model"]

    def _compacted(self, n: int, obj: dict[str, Any], payload: dict[str, Any]) -> None:
        summary = nonempty_str(payload.get("message"))
        if summary is None:
            self.bookkeeping += 1
            return
        when = self._when(n, obj.get("timestamp"))
        if when is not None:
            self.draft.add_turn(when, "system", [tf.Text(summary)])

    def _world_state(self, n: int, obj: dict[str, Any], payload: dict[str, Any]) -> None:
        self.bookkeeping += 1

    def _inter_agent_communication_metadata(
        self, n: int, obj: dict[str, Any], payload: dict[str, Any]
    ) -> None:
        self.bookkeeping += 1

    def _replay_events(self) -> None:
        """The conversation from UI events, for a rollout that recorded no response items."""
        for n, p, ts in self.events:
            when = self._when(n, ts)
            if when is None:
                continue
            kind = p["type"]
            if kind in ("user_message", "agent_message"):
                self._replay_message(kind, p, when)
            elif kind in REPLAYED_CALLS:
                tool, args, result = REPLAYED_CALLS[kind](p)
                self.reader.call(p.get("call_id"), tool, args, when, result)

    def _replay_message(self, kind: str, p: dict[str, Any], when: datetime) -> None:
        text = nonempty_str(p.get("message"))
        if text is None or (kind == "user_message" and injected_context(text)):
            return
        files: list[tf.Item] = []
        if kind == "user_message":
            text, files = user_request(text)
        items: list[tf.Item] = [tf.Text(text), *files]
        images = [*sequence(p.get("images")), *sequence(p.get("local_images"))]
        items += [
            tf.Attachment(
                i if isinstance(i, str) and not i.startswith("data:") else "image (not stored)"
            )
            for i in images
            if i
        ]
        self.draft.add_turn(when, "user" if kind == "user_message" else "agent", items)

    def finish(self) -> SessionDraft:
        d = self.draft
        if not d.session_id:
            tail = _UUID_TAIL.search(self.path.stem)  # rollout-2025-10-30T10-00-00-<uuid>
            d.session_id = file_session_id("codex", tail.group(1) if tail else self.path.stem)
        if not d.turns and self.events:
            self._replay_events()
        else:
            self.bookkeeping += len(self.events)  # the UI's copy of what the items already said
        d.tokens_in, d.tokens_out = self.total or (self.summed[0], self.summed[1])
        if not d.turns:
            bad_lines = self.report.bad_lines - self.bad_before
            bad = f", {bad_lines} malformed" if bad_lines else ""
            raise ImportFormatError(
                f"{self.path}: Codex rollout {d.session_id} holds no user or agent message "
                f"({self.bookkeeping} bookkeeping lines{bad}); nothing to import."
            )
        return d
