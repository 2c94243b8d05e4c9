"""OpenAI Responses API items: the `input`/`output` item lists of the Responses API, which
Codex CLI rollouts record line by line (see codex.py), and a JSON file holding such a list.

Items become turns: a `message` is a user or agent turn; a tool call (`function_call`,
`custom_tool_call`, `local_shell_call`, `shell_call`, `apply_patch_call`, `mcp_call`,
`web_search_call`, `file_search_call`, `code_interpreter_call`, `computer_call`,
`image_generation_call`, `tool_search_call`) joins the agent turn it follows, and its
`*_output` item is written into the call's line by `call_id`. `reasoning` and compaction
items are left out on purpose (docs/design.md#transcript-format: reasoning is excluded), as are
system and
developer messages and the context a harness injects into the user role
(`<environment_context>`, AGENTS.md instructions): none of them is something a person said.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    json_probe,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    args_summary,
    count,
    mapping,
    nonempty_str,
    output_text,
    safe_session_id,
    sequence,
    stable_id,
    string,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.text import injected_context
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf

# Items that carry no conversation: reasoning (excluded on purpose), the encrypted
# summary a compaction leaves, and the harness's own bookkeeping.
SILENT_ITEMS = frozenset(
    {
        "reasoning",
        "compaction",
        "compaction_summary",
        "ghost_snapshot",
        "item_reference",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
    }
)
CALL_ITEMS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "mcp_call",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "computer_call",
        "image_generation_call",
        "tool_search_call",
        "tool_call",
    }
)
OUTPUT_ITEMS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "computer_call_output",
        "tool_search_output",
        "tool_result",
        "function_result",
    }
)
RESPONSES_ITEMS = SILENT_ITEMS | CALL_ITEMS | OUTPUT_ITEMS | {"message", "agent_message"}


# How Codex's Desktop app and IDE extension wrap a prompt: the editor's state and the
# files the user mentioned, then the prompt itself under `## My request for Codex:`.
_WRAPPERS = ("# Context from my IDE setup:", "# Files mentioned by the user:")
_REQUEST_RE = re.compile(r"^## My request for Codex:[ \t]*\n?", re.M)
_MENTIONED_RE = re.compile(r"^## ([^\n]*?):[ \t]*(\S[^\n]*)?\n?([^\n#][^\n]*)?", re.M)


def user_request(text: str) -> tuple[str, list[tf.Item]]:
    """The user's own words in TEXT, and the files a Codex wrapper says they mentioned
    (attachment lines): a Desktop/IDE prompt is its `## My request for Codex:` part; the
    editor's state around it is the harness's, not the user's."""
    head = text.lstrip()
    request = _REQUEST_RE.search(head)
    if not head.startswith(_WRAPPERS) or request is None:
        return text, []
    wrapper = head[: request.start()]
    files: list[tf.Item] = []
    mentioned = wrapper.find(_WRAPPERS[1])
    if mentioned >= 0:
        for name, same_line, next_line in _MENTIONED_RE.findall(wrapper[mentioned:]):
            path = (same_line or next_line or name).strip()
            if path:
                files.append(tf.Attachment(path))
    return head[request.end() :].strip(), files


def command_line(value: Any) -> str | None:
    """A shell command given as an argv list, as one line (`bash -lc SCRIPT` as SCRIPT)."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if (
            len(value) == 3
            and value[1] in ("-lc", "-c")
            and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
        ):
            return value[2]
        return shlex.join(value)
    return value if isinstance(value, str) else None


def call_args(value: Any) -> str:
    """A call's arguments (a JSON string or an object) in one telling line; an argv
    `command` reads as the command line it runs."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return value
        value = parsed
    if isinstance(value, dict) and isinstance(value.get("command"), list):
        value = {**value, "command": command_line(value["command"]) or ""}
    return args_summary(value)


def _parts(content: Any) -> tuple[list[str], list[tf.Item]]:
    """(texts, attachments) of a message's content (a string or a list of parts)."""
    if isinstance(content, str):
        return [content], []
    texts: list[str] = []
    attachments: list[tf.Item] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            texts.append(part)
        elif not isinstance(part, dict):
            continue
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        elif part.get("type") == "input_image" and nonempty_str(part.get("image_url")):
            url = part["image_url"]
            attachments.append(
                tf.Attachment("image (not stored)" if url.startswith("data:") else url)
            )
        elif part.get("type") == "input_file" and (
            nonempty_str(part.get("filename")) or nonempty_str(part.get("file_id"))
        ):
            attachments.append(tf.Attachment(part.get("filename") or part["file_id"]))
    return texts, attachments


def _web_search(item: dict[str, Any]) -> str:
    action = mapping(item.get("action"))
    queries = sequence(action.get("queries"))
    return str(
        action.get("query")
        or " | ".join(str(q) for q in queries)
        or action.get("url")
        or action.get("pattern")
        or ""
    )


# How each kind of tool-call item reads as a call line: item -> (tool, arguments, result
# when the item itself holds it).
_CallLine = tuple[str, str, "str | None"]


def _function_call(item: dict[str, Any]) -> _CallLine:
    fn = mapping(item.get("function"))
    name = str(item.get("name") or fn.get("name") or "tool")
    if nonempty_str(item.get("namespace")):
        name = f"{item['namespace']}.{name}"
    return name, call_args(item.get("arguments", fn.get("arguments"))), None


def _custom_tool_call(item: dict[str, Any]) -> _CallLine:
    return str(item.get("name") or "tool"), call_args(item.get("input")), None


def _shell_call(item: dict[str, Any]) -> _CallLine:
    action = mapping(item.get("action"))
    command = command_line(action.get("command")) or "; ".join(
        str(c) for c in sequence(action.get("commands")) if isinstance(c, str)
    )
    return "shell", command, None


def _apply_patch_call(item: dict[str, Any]) -> _CallLine:
    op = mapping(item.get("operation"))
    return "apply_patch", f"{op.get('type', '')} {op.get('path', '')}".strip(), None


def _mcp_call(item: dict[str, Any]) -> _CallLine:
    name = ".".join(str(p) for p in (item.get("server_label"), item.get("name")) if p)
    result = output_text(item.get("output"))
    if not result and item.get("error"):
        result = f"error: {output_text(item['error'])}"
    return name or "mcp", call_args(item.get("arguments")), result or None


def _web_search_call(item: dict[str, Any]) -> _CallLine:
    return "web_search", _web_search(item), None


def _file_search_call(item: dict[str, Any]) -> _CallLine:
    queries = sequence(item.get("queries"))
    results = item.get("results")
    found = None if results is None else f"{len(sequence(results))} results"
    return "file_search", " | ".join(str(q) for q in queries), found


def _code_interpreter_call(item: dict[str, Any]) -> _CallLine:
    outputs = sequence(item.get("outputs"))
    logs = "\n".join(str(o.get("logs")) for o in outputs if isinstance(o, dict) and o.get("logs"))
    return "code_interpreter", str(item.get("code") or ""), logs or None


def _computer_call(item: dict[str, Any]) -> _CallLine:
    return "computer", args_summary(mapping(item.get("action"))), None


def _image_generation_call(item: dict[str, Any]) -> _CallLine:
    made = "image (not stored)" if item.get("result") else None
    return "image_generation", str(item.get("revised_prompt") or ""), made


def _tool_search_call(item: dict[str, Any]) -> _CallLine:
    return "tool_search", call_args(item.get("arguments")), None


# Every kind of CALL_ITEMS (each needs its entry), to how it reads as a call line.
CALL_LINES: dict[str, Callable[[dict[str, Any]], _CallLine]] = {
    "function_call": _function_call,
    "tool_call": _function_call,
    "custom_tool_call": _custom_tool_call,
    "local_shell_call": _shell_call,
    "shell_call": _shell_call,
    "apply_patch_call": _apply_patch_call,
    "mcp_call": _mcp_call,
    "web_search_call": _web_search_call,
    "file_search_call": _file_search_call,
    "code_interpreter_call": _code_interpreter_call,
    "computer_call": _computer_call,
    "image_generation_call": _image_generation_call,
    "tool_search_call": _tool_search_call,
}


class ResponsesReader:
    """Adds Responses items, one at a time with their time, to DRAFT's turns."""

    def __init__(self, draft: SessionDraft) -> None:
        self.draft = draft
        self.calls = ToolCalls()

    def _agent_items(self, when: datetime) -> list[tf.Item]:
        """The items of the agent turn a tool call joins (a new one unless the last turn is the
        agent's)."""
        if self.draft.turns and self.draft.turns[-1].role == "agent":
            return self.draft.turns[-1].items
        return self.draft.add_turn(when, "agent", []).items

    def call(
        self, call_id: Any, tool: str, args: str, when: datetime, result: str | None = None
    ) -> None:
        self.calls.add(call_id, self._agent_items(when), tf.ToolCall(tool or "tool", args, result))

    def result(self, call_id: Any, tool: str | None, result: str, when: datetime) -> None:
        """Write RESULT into its call (by id, else the oldest open call of TOOL); a result
        whose call was never seen still gets a line of its own."""
        if call_id not in (None, "") and self.calls.resolve(call_id, result or None):
            return
        if call_id in (None, "") and self.calls.resolve_oldest(tool, result or None):
            return
        self._agent_items(when).append(
            tf.ToolCall(tool or "result", str(call_id or ""), result or None)
        )

    def add(self, item: dict[str, Any], when: datetime) -> str | None:
        """Add ITEM; None when it was understood (content or known bookkeeping), else why not."""
        kind = string(item.get("type"))
        if kind is None and isinstance(item.get("role"), str):
            kind = "message"  # chat-style lines of early Codex logs
        if kind in SILENT_ITEMS:
            return None
        if kind in ("message", "agent_message"):
            return self._message(item, kind, when)
        if kind in CALL_ITEMS:
            self._call(item, kind, when)
            return None
        if kind in OUTPUT_ITEMS:
            self._output(item, kind, when)
            return None
        return f"unknown item type {kind!r}"

    def _message(self, item: dict[str, Any], kind: str, when: datetime) -> str | None:
        role = string(item.get("role"))
        if kind == "agent_message":
            role = "agent_message"
        elif role in ("system", "developer"):
            return None  # the system prompt and harness instructions are not conversation
        elif role not in ("user", "assistant"):
            return f"message role {role!r} is not user or assistant"
        content = item.get("content")
        if content is None and isinstance(item.get("message"), str):
            content = item["message"]
        texts, attachments = _parts(content)
        if role == "user":
            texts = [t for t in texts if not injected_context(t)]
            unwrapped = [user_request(t) for t in texts]
            texts = [t for t, _ in unwrapped]
            attachments = [a for _, files in unwrapped for a in files] + attachments
        items: list[tf.Item] = [tf.Text(t) for t in texts if t.strip()] + attachments
        if not items:
            return None  # only injected context, or nothing at all
        if role == "agent_message":  # another agent of the same run speaking to this one
            self.draft.add_turn(when, "user", items, str(item.get("author") or "agent"))
        else:
            self.draft.add_turn(when, "user" if role == "user" else "agent", items)
        return None

    def _call(self, item: dict[str, Any], kind: str, when: datetime) -> None:
        tool, args, result = CALL_LINES[kind](item)
        self.call(item.get("call_id") or item.get("id"), tool, args, when, result)

    def _output(self, item: dict[str, Any], kind: str, when: datetime) -> None:
        call_id = item.get("call_id")
        if kind == "tool_search_output":
            tools = sequence(item.get("tools"))
            text = ", ".join(
                str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("name")
            )
            self.result(call_id, "tool_search", text, when)
        elif kind == "computer_call_output":
            self.result(call_id, "computer", "screenshot (not stored)", when)
        elif kind in ("tool_result", "function_result"):
            self.result(
                call_id,
                nonempty_str(item.get("name")),
                output_text(item.get("result", item.get("output"))),
                when,
            )
        else:
            self.result(call_id, None, output_text(item.get("output")), when)


def is_responses_item(obj: Any) -> bool:
    """OBJ is an item of the Responses API (typed; a `message` names its role)."""
    if not isinstance(obj, dict) or string(obj.get("type")) not in RESPONSES_ITEMS - {
        "tool_call",
        "tool_result",
        "function_result",
    }:
        return False
    return obj["type"] != "message" or isinstance(obj.get("role"), str)


class ResponsesImporter:
    """A JSON file holding a Responses item list: a list of items, or an object with
    `input` and/or `output` lists (a request, a response, or both)."""

    name = "openai-responses"
    description = "OpenAI Responses API items (a list, or an object with input/output)"

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text):
            return 0.0
        probe = json_probe(text)
        if (
            isinstance(probe, dict)
            and probe.get("object") == "response"
            and isinstance(probe.get("output"), list)
        ):
            return 0.9
        if isinstance(probe, dict) and isinstance(probe.get("input"), list) and probe["input"]:
            probe = probe["input"][0]
        return (
            0.85 if is_responses_item(probe) else 0.0
        )  # above openai's 0.8: a typed item is surer

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        info: dict[str, Any] = data if isinstance(data, dict) else {}
        if isinstance(data, list):
            items = data
        elif isinstance(data, dict) and (
            isinstance(data.get("input"), list) or isinstance(data.get("output"), list)
        ):
            items = [*sequence(data.get("input")), *sequence(data.get("output"))]
        else:
            raise ImportFormatError(
                f"{path}: expected a list of Responses items or an object with input/output lists."
            )
        when = (
            parse_ts(info["created_at"], f"{path}: created_at")
            if info.get("created_at") is not None
            else parse_ts(path.stat().st_mtime, f"{path}: modification time").replace(
                second=0, microsecond=0
            )
        )
        sid = safe_session_id(info.get("id"), info.get("previous_response_id")) or stable_id(
            "resp", items
        )
        draft = SessionDraft(
            session_id=sid,
            model=nonempty_str(info.get("model")),
            channel="openai",
            source=f"openai-responses:{path.name}",
            started=when,
        )
        usage = mapping(info.get("usage"))
        draft.tokens_in, draft.tokens_out = (
            count(usage.get("input_tokens")),
            count(usage.get("output_tokens")),
        )
        reader = ResponsesReader(draft)
        for i, item in enumerate(items):
            why = reader.add(item, when) if isinstance(item, dict) else "not an object"
            if why:
                report.skip_line(str(path), i + 1, f"item {i}: {why}")
        return [draft]
