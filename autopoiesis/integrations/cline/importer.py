"""Cline, Roo Code and Kilo Code task histories, and any Anthropic Messages list.

Cline keeps each task in `.../globalStorage/saoudrizwan.claude-dev/tasks/<taskId>/`
(Roo Code: `rooveterinaryinc.roo-cline`, Kilo Code: `kilocode.kilo-code`); the
conversation is `api_conversation_history.json`, the Anthropic Messages list sent to the
model: `[{"role": "user" | "assistant", "content": str | [blocks], "ts"?: ms,
"modelInfo"?: {"modelId"}, "metrics"?: {"tokens": {"prompt", "completion"}}}]`. Any other
list of Anthropic messages (or an object with `messages`, as an API request is) reads
the same way.

* Native tool calls are `tool_use` blocks, answered by `tool_result` blocks or, in
  Cline's current shape, by `[read_file for 'a.py'] Result:` text in the next user
  message; older tasks call tools in the text (`<read_file><path>a.py</path></read_file>`)
  and answer the same way: all become `> [tool:NAME] args → result` lines. How a user
  message is read (results paired by tool and order, the user's wrapped words, the
  harness's notices and reminders) is in `messages`. What the agent says through a tool
  (a question, a plan-mode response, a completion) is the agent's text.
* Reasoning (`thinking` blocks, `<thinking>` in the text) is left out.
* Times are the messages' `ts`; without them, the task id when it is Cline's millisecond
  timestamp, else the file's modification minute. The session id is `<harness>-<taskId>`
  (the task folder's name), else a hash of the opening exchange (base.opening_id).
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
    as_dict,
    json_probe,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    anthropic_attachment,
    anthropic_tool_result,
    args_summary,
    has_anthropic_blocks,
    opening_id,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import ImportFormatError, TranscriptFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.integrations.cline.messages import read_user_message

HISTORY_FILE = "api_conversation_history.json"
HARNESS_FOLDERS = {
    "saoudrizwan.claude-dev": "cline",
    "rooveterinaryinc.roo-cline": "roo-code",
    "kilocode.kilo-code": "kilo-code",
}
# The tools Cline and Roo Code call in the text of older tasks (the tag names they write).
XML_TOOLS = frozenset(
    {
        "execute_command",
        "read_file",
        "write_to_file",
        "replace_in_file",
        "apply_diff",
        "insert_content",
        "search_and_replace",
        "search_files",
        "list_files",
        "list_code_definition_names",
        "codebase_search",
        "browser_action",
        "use_mcp_tool",
        "access_mcp_resource",
        "ask_followup_question",
        "attempt_completion",
        "new_task",
        "switch_mode",
        "plan_mode_respond",
        "act_mode_respond",
        "load_mcp_documentation",
        "web_fetch",
        "condense",
        "summarize_task",
        "report_bug",
        "new_rule",
        "fetch_instructions",
        "update_todo_list",
        "focus_chain",
        "run_slash_command",
        "generate_image",
    }
)
_XML_TOOL_RE = re.compile(r"<(" + "|".join(sorted(XML_TOOLS)) + r")>(.*?)</\1>", re.S)
_XML_PARAM_RE = re.compile(r"<([a-z_]+)>(.*?)</\1>", re.S)
_THINKING_RE = re.compile(r"<thinking>.*?</thinking>", re.S)
# The tools through which the agent speaks to the user: the parameter it says it in is
# the agent's text; the call's line keeps the rest (a question's options).
SPEAKING_TOOLS = {
    "ask_followup_question": "question",
    "plan_mode_respond": "response",
    "attempt_completion": "result",
}
# Parameters that are the harness's bookkeeping, not the call's arguments.
_BOOKKEEPING_PARAMS = ("task_progress",)


def _messages(data: Any) -> tuple[list[Any], dict[str, Any]] | None:
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return data, {}
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return data["messages"], data
    return None


class ClineImporter:
    name = "cline"
    description = (
        "Cline / Roo Code api_conversation_history.json, or any Anthropic Messages list "
        "(tool_use blocks)"
    )

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text) or json_probe(text) is None:
            return 0.0
        found = _messages(load_json(text))
        if found is None:
            return 0.0
        messages, _ = found
        if has_anthropic_blocks(messages):
            return 0.95
        if path.name == HISTORY_FILE or any(
            isinstance(m, dict) and "ts" in m for m in messages[:5]
        ):
            return 0.9
        return 0.0

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        found = _messages(data)
        if found is None:
            raise ImportFormatError(
                f"{path}: expected a list of messages with role and content (an Anthropic Messages "
                "list such as Cline's api_conversation_history.json)."
            )
        messages, info = found
        harness = next(
            (name for folder, name in HARNESS_FOLDERS.items() if folder in path.parts), None
        )
        task = path.parent.name if path.name == HISTORY_FILE else None
        if harness is None:
            harness = "cline" if path.name == HISTORY_FILE else "anthropic"
        if task is not None and tf.SESSION_ID_RE.match(f"{harness}-{task}"):
            sid = f"{harness}-{task}"
        else:
            sid = str(info.get("id") or info.get("session_id") or opening_id("anth_", messages))
        started = _start(task, path)
        draft = SessionDraft(
            session_id=sid,
            channel=harness,
            source=f"{harness}:{path.name}",
            model=str(info["model"]) if isinstance(info.get("model"), str) else None,
        )
        _read_messages(draft, messages, started, str(path))
        draft.cwd = working_folder(text)
        return [draft]


# What the harness writes in every `<environment_details>`: Cline "# Current Working
# Directory (/path) Files", Roo and Kilo Code "# Current Workspace Directory (/path) Files".
_CWD_RE = re.compile(r"# Current Work(?:ing|space) Directory \(((?:[^()\\]|\\.)+)\) Files")


def working_folder(text: str) -> str | None:
    """The folder the task ran in, from the first environment details in the file's
    TEXT (as JSON: the path's escapes are read back), or None."""
    match = _CWD_RE.search(text)
    if match is None:
        return None
    try:
        folder = json.loads(f'"{match.group(1)}"')
    except ValueError:
        return None
    if not isinstance(folder, str) or not folder.strip():
        return None
    return folder.strip()


def _start(task: str | None, path: Path) -> datetime:
    """When a task without message times began: its id when that is a millisecond
    timestamp (Cline's), else the file's modification minute."""
    if task is not None and task.isdigit() and len(task) == 13:
        try:
            return parse_ts(int(task), "task id")
        except TranscriptFormatError:
            pass
    return parse_ts(path.stat().st_mtime, f"{path}: modification time").replace(
        second=0, microsecond=0
    )


def _read_messages(
    draft: SessionDraft, messages: list[Any], started: datetime, source: str
) -> None:
    calls = ToolCalls()
    clock = started
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            raise ImportFormatError(
                f"{source}: messages[{i}] must be an object with role user or assistant."
            )
        if msg.get("ts") is not None:
            try:
                clock = parse_ts(msg["ts"], f"messages[{i}].ts")
            except TranscriptFormatError as exc:
                raise ImportFormatError(f"{source}: {exc}") from None
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [content]
        if msg["role"] == "assistant":
            info = as_dict(msg.get("modelInfo"))
            if not draft.model and isinstance(info.get("modelId"), str):
                draft.model = info["modelId"]
            _add_tokens(draft, msg)
            items = _assistant_items(blocks, calls)
            if items:
                draft.add_turn(clock, "agent", items)
        else:
            for role, segment in read_user_message(blocks, calls):
                draft.add_turn(clock, role, segment)


def _add_tokens(draft: SessionDraft, msg: dict[str, Any]) -> None:
    metrics = as_dict(msg.get("metrics"))
    tokens = as_dict(metrics.get("tokens"))
    for key, attr in (("prompt", "tokens_in"), ("completion", "tokens_out")):
        value = tokens.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            setattr(draft, attr, getattr(draft, attr) + value)


def _assistant_items(blocks: list[Any], calls: ToolCalls) -> list[tf.Item]:
    items: list[tf.Item] = []
    for block in blocks:
        if isinstance(block, str):
            _assistant_text(block, calls, items)
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            _assistant_text(block["text"], calls, items)
        elif block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
            _call(
                block.get("id"), str(block.get("name") or "tool"), block.get("input"), calls, items
            )
        elif str(block.get("type", "")).endswith("tool_result"):
            anthropic_tool_result(block, calls, items)
        elif block.get("type") in ("image", "document"):
            items.append(anthropic_attachment(block))
    return items


def _call(call_id: Any, tool: str, params: Any, calls: ToolCalls, items: list[tf.Item]) -> None:
    """A tool call; what the agent says through it to the user is its text."""
    if isinstance(params, dict):
        said = params.get(SPEAKING_TOOLS.get(tool, ""))
        if isinstance(said, str) and said.strip():
            items.append(tf.Text(said))
        params = {
            k: v
            for k, v in params.items()
            if k not in _BOOKKEEPING_PARAMS and k != SPEAKING_TOOLS.get(tool)
        }
    calls.add(call_id, items, tf.ToolCall(tool, args_summary(params) if params else "", None))


def _assistant_text(text: str, calls: ToolCalls, items: list[tf.Item]) -> None:
    """Assistant text: reasoning cut out, tools called in the text as tool calls."""
    text = _THINKING_RE.sub("", text)
    pos = 0
    for m in _XML_TOOL_RE.finditer(text):
        if text[pos : m.start()].strip():
            items.append(tf.Text(text[pos : m.start()]))
        params = {k: v.strip() for k, v in _XML_PARAM_RE.findall(m.group(2))}
        _call(None, m.group(1), params if params else m.group(2).strip(), calls, items)
        pos = m.end()
    if text[pos:].strip():
        items.append(tf.Text(text[pos:]))
