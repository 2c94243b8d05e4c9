"""What a session log says, read independently of its importer, for the strict fidelity
check (testing.fidelity): the user's and the agent's words, and each tool call's result
with the call it answers (its tool and a hint of its arguments: the command or path).

These readers know each format only as far as a check needs: who said what, which
results answer which calls. They skip what every reader of the format must skip (the
harness's own injections), and nothing else, so a message an importer loses, a result it
puts on the wrong call, or words it gives the wrong role show up as a miss.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass
class Expect:
    """What one log holds: VERSION of the harness that wrote it (when it says), MESSAGES
    (user and agent messages), USER and AGENT texts, RESULTS as (tool, hint, result)."""

    version: str | None = None
    messages: int = 0
    user: list[str] = field(default_factory=list)
    agent: list[str] = field(default_factory=list)
    results: list[tuple[str, str, str]] = field(default_factory=list)


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


_DECODER = json.JSONDecoder()


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines log, each line once (two written back to back on
    one line are both read), without the lines every reader must skip: a repeated uuid,
    and a timestamp that is no time (a line the log itself spoiled)."""
    seen: set[str] = set()
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        pos, objects = 0, []
        try:
            while pos < len(line.rstrip()):
                obj, pos = _DECODER.raw_decode(line, pos)
                objects.append(obj)
                while pos < len(line) and line[pos] in " \t":
                    pos += 1
        except ValueError:
            pass
        for obj in objects:
            if not isinstance(obj, dict) or not _sound_time(obj.get("timestamp")):
                continue
            uuid = obj.get("uuid")
            if isinstance(uuid, str) and obj.get("type") in ("user", "assistant"):
                if uuid in seen:
                    continue
                seen.add(uuid)
            yield obj


def _sound_time(value: Any) -> bool:
    if value is None or isinstance(value, int | float):
        return True
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _texts(content: Any, kind: str = "text") -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            out.append(block)
        elif (
            isinstance(block, dict)
            and block.get("type")
            in (
                kind,
                "text",
                "input_text",
                "output_text",
                None,  # a Gemini API part: {"text": ...}
            )
            and not block.get("thought")
        ):
            if isinstance(block.get("text"), str):
                out.append(block["text"])
    return out


def _hint(args: Any) -> str:
    """The argument a call line shows first: a command, a path, a query."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return args[:60]
    if isinstance(args, dict):
        for key in (
            "command",
            "cmd",
            "file_path",
            "absolute_path",
            "path",
            "query",
            "pattern",
            "url",
        ):
            value = args.get(key)
            if isinstance(value, str):
                return value[:60]
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return " ".join(value)[-60:]
    return ""


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_result_text(v) for v in value if v is not None)
    if isinstance(value, dict):
        for key in ("text", "content", "output", "stdout", "result"):
            if key in value and value[key] is not None:
                return _result_text(value[key])
    return ""


_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_CLAUDE_SKIP = ("<command-", "<local-command", "Caveat: The messages below", "[Request interrupted")


def _anthropic_tools(e: Expect, calls: dict[str, tuple[str, str]], content: Any) -> None:
    """The tool_use blocks of CONTENT noted in CALLS, its tool_result blocks paired with
    their call in E.results (Anthropic's content blocks, which several harnesses keep)."""
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            calls[str(block.get("id"))] = (str(block.get("name")), _hint(block.get("input")))
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            tool, hint = calls.get(str(block.get("tool_use_id")), ("", ""))
            if tool:
                e.results.append((tool, hint, _result_text(block.get("content"))))


def claude_code(path: Path) -> Expect:
    e = Expect()
    calls: dict[str, tuple[str, str]] = {}
    for obj in _lines(path):
        e.version = e.version or obj.get("version")
        message = _d(obj.get("message"))
        content = message.get("content")
        if obj.get("type") == "assistant":
            e.messages += 1
            e.agent += _texts(content)
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[str(block.get("id"))] = (
                        str(block.get("name")),
                        _hint(block.get("input")),
                    )
        elif (
            obj.get("type") == "user" and not obj.get("isMeta") and not obj.get("isCompactSummary")
        ):
            texts = [_REMINDER.sub("", t).strip() for t in _texts(content)]
            said = [t for t in texts if t and not t.startswith(_CLAUDE_SKIP)]
            if said != ["Warmup"]:
                e.user += said
            e.messages += bool(said)
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    tool, hint = calls.get(str(block.get("tool_use_id")), ("", ""))
                    if tool:
                        e.results.append(
                            (tool, hint, _REMINDER.sub("", _result_text(block.get("content"))))
                        )
    return e


_CODEX_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
)


def codex(path: Path) -> Expect:
    e = Expect()
    calls: dict[str, tuple[str, str]] = {}
    for obj in _lines(path):
        payload = _d(obj.get("payload"))
        if obj.get("type") == "session_meta":
            e.version = payload.get("cli_version")
        if obj.get("type") != "response_item":
            continue
        kind = payload.get("type")
        if kind == "message" and payload.get("role") in ("user", "assistant"):
            texts = _texts(payload.get("content"))
            if payload["role"] == "user":
                texts = [
                    t.split("## My request for Codex:", 1)[-1]
                    for t in texts
                    if not t.lstrip().startswith(_CODEX_INJECTED)
                ]
                e.user += texts
            else:
                e.agent += texts
            e.messages += bool(texts)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            args = payload.get("arguments", payload.get("input", payload.get("action")))
            calls[str(payload.get("call_id"))] = (str(payload.get("name") or "shell"), _hint(args))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            tool, hint = calls.get(str(payload.get("call_id")), ("", ""))
            output = payload.get("output")
            if isinstance(output, str) and output.lstrip().startswith("{"):
                try:
                    output = json.loads(output).get("output", output)
                except (ValueError, AttributeError):
                    pass
            if tool:
                e.results.append((tool, "", _result_text(output)))
    return e


def gemini(path: Path) -> Expect:
    e = Expect()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        messages = data.get("messages", [])
    except ValueError:  # the JSONL recording: records by id, a later one replaces
        by_id: dict[str, Any] = {}
        for obj in _lines(path):
            if "id" in obj and "type" in obj:
                by_id[obj["id"]] = obj
        messages = list(by_id.values())
    for m in messages:
        if m.get("type") == "user":
            e.user += _texts(m.get("content"))
            e.messages += 1
        elif m.get("type") == "gemini":
            e.agent += _texts(m.get("content"))
            e.messages += 1
            for call in m.get("toolCalls") or []:
                result = call.get("result") or []
                outputs = [
                    r["functionResponse"].get("response", {}).get("output", "")
                    for r in result
                    if isinstance(r, dict) and isinstance(r.get("functionResponse"), dict)
                ]
                text = "\n".join(o for o in outputs if isinstance(o, str)) or (
                    call.get("resultDisplay") if isinstance(call.get("resultDisplay"), str) else ""
                )
                e.results.append((str(call.get("name")), _hint(call.get("args")), text))
    return e


_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)


def cursor(path: Path) -> Expect:
    e = Expect()
    calls: dict[str, tuple[str, str]] = {}
    for obj in _lines(path):
        message = _d(obj.get("message")) or None
        if message is None or obj.get("role") not in ("user", "assistant"):
            continue
        content = message.get("content")
        texts = _texts(content)
        if obj["role"] == "user":
            said = [m.group(1) for t in texts for m in [_QUERY.search(t)] if m] or texts
            e.user += said
        else:
            e.agent += texts
        e.messages += bool(texts)
        _anthropic_tools(e, calls, content)
    return e


def copilot(path: Path) -> Expect:
    e = Expect()
    calls: dict[str, tuple[str, str]] = {}
    for obj in _lines(path):
        data = _d(obj.get("data"))
        kind = obj.get("type")
        if kind == "session.start":
            e.version = data.get("copilotVersion")
        elif kind == "user.message" and isinstance(data.get("content"), str):
            e.user.append(data["content"])
            e.messages += 1
        elif kind == "assistant.message":
            if isinstance(data.get("content"), str) and data["content"].strip():
                e.agent.append(data["content"])
                e.messages += 1
            for req in data.get("toolRequests") or []:
                if isinstance(req, dict):
                    calls[str(req.get("toolCallId"))] = (
                        str(req.get("name")),
                        _hint(req.get("arguments")),
                    )
        elif kind == "tool.execution_start":
            calls.setdefault(
                str(data.get("toolCallId")),
                (str(data.get("toolName")), _hint(data.get("arguments"))),
            )
        elif kind == "tool.execution_complete":
            tool, hint = calls.get(str(data.get("toolCallId")), ("", ""))
            result = _d(data.get("result"))
            if tool and data.get("success") is not False:
                e.results.append((tool, hint, _result_text(result.get("content"))))
    return e


_CHATGPT_NOT_WORDS = frozenset(
    {"thoughts", "reasoning_recap", "code", "execution_output", "user_editable_context"}
)


def chatgpt(path: Path) -> Expect:
    e = Expect()
    data = json.loads(path.read_text(encoding="utf-8"))
    for conv in data if isinstance(data, list) else [data]:
        tree = conv.get("mapping") or {}
        node = conv.get("current_node")
        while isinstance(node, str) and node in tree:
            message = tree[node].get("message") or {}
            role = (message.get("author") or {}).get("role")
            content = message.get("content") or {}
            parts = [p for p in content.get("parts") or [] if isinstance(p, str) and p.strip()]
            to_tool = role == "assistant" and message.get("recipient") not in (None, "all")
            words = content.get("content_type") not in _CHATGPT_NOT_WORDS
            if words and parts and role in ("user", "assistant") and not to_tool:
                (e.user if role == "user" else e.agent).extend(parts)
                e.messages += 1
            node = tree[node].get("parent")
    return e


def claude_ai(path: Path) -> Expect:
    e = Expect()
    data = json.loads(path.read_text(encoding="utf-8"))
    for conv in data if isinstance(data, list) else [data]:
        for m in conv.get("chat_messages") or []:
            text = m.get("text") if isinstance(m.get("text"), str) else ""
            if not text.strip():
                continue
            (e.user if m.get("sender") == "human" else e.agent).append(text)
            e.messages += 1
    return e


def aider(path: Path) -> Expect:
    e = Expect()
    lines = path.read_text(encoding="utf-8").split("\n")
    user: list[str] = []
    reply: list[str] | None = None
    for i, line in enumerate(lines):
        if line.startswith("####") and line.endswith("  "):
            user.append(line[5:].rstrip())
            continue
        if user:
            said = "\n".join(user)
            user = []
            if not said.startswith(("/", "!")) or said.split(" ", 1)[0] in (
                "/ask",
                "/code",
                "/architect",
                "/context",
                "/copy-context",
            ):
                e.user.append(said.split(" ", 1)[1] if said.startswith("/") else said)
                e.messages += 1
        if line.startswith(">") or line.startswith("# aider chat started at"):
            reply = None
            continue
        if reply is None and not line.strip() and i + 1 < len(lines) and lines[i + 1].strip():
            nxt = lines[i + 1]
            if not nxt.startswith((">", "####", "# aider chat started at")):
                reply = []
                e.agent.append("")
                e.messages += 1
            continue
        if reply is not None and line.strip():
            e.agent[-1] += line + "\n"
    e.agent = [a for a in e.agent if a.strip()]
    return e


_CLINE_USER = re.compile(r"<(task|feedback|answer|user_message)>\n?(.*?)\n?</\1>", re.S)
_CLINE_HEAD = re.compile(r"^\[([A-Za-z0-9_.:-]+)(?: for '(.*?)')?\] Result:\s*(.*)", re.S)
_CLINE_SPEAKS = {
    "ask_followup_question": "question",
    "plan_mode_respond": "response",
    "attempt_completion": "result",
}
_CLINE_TAG = re.compile(r"<([a-z_]+)>.*?</\1>", re.S)


def cline(path: Path) -> Expect:
    e = Expect()
    names: dict[str, str] = {}
    for message in json.loads(path.read_text(encoding="utf-8")):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if message.get("role") == "assistant":
            e.messages += 1
            for b in blocks:
                if b.get("type") == "text":
                    text = _CLINE_TAG.sub(
                        "", re.sub(r"<thinking>.*?</thinking>", "", b["text"], flags=re.S)
                    )
                    if text.strip():
                        e.agent.append(text)
                elif b.get("type") == "tool_use":
                    names[str(b.get("id"))] = str(b.get("name"))
                    words = _d(b.get("input")).get(_CLINE_SPEAKS.get(str(b.get("name")), ""))
                    if isinstance(words, str) and words.strip():
                        e.agent.append(words)
            continue
        said = False
        for b in blocks:
            text = str(b["text"]) if isinstance(b.get("text"), str) else ""
            head = _CLINE_HEAD.match(text.strip())
            if head is not None and not _CLINE_USER.search(text):
                output = re.sub(r"<environment_details>.*", "", head.group(3), flags=re.S).strip()
                if output and len(output) > 20:  # a short output ("Done") names no call
                    e.results.append((head.group(1), (head.group(2) or "")[:40], output))
            for _, inner in _CLINE_USER.findall(text):
                e.user.append(
                    re.sub(r'<file_content path="[^"]*">.*?</file_content>', "", inner, flags=re.S)
                )
                said = True
            if b.get("type") == "tool_result" and names.get(str(b.get("tool_use_id"))):
                e.results.append((names[str(b["tool_use_id"])], "", _result_text(b.get("content"))))
        e.messages += said
    return e


READERS: dict[str, Callable[[Path], Expect]] = {
    "claude-code": claude_code,
    "codex": codex,
    "gemini": gemini,
    "cursor": cursor,
    "copilot": copilot,
    "chatgpt": chatgpt,
    "claude-ai": claude_ai,
    "aider": aider,
    "cline": cline,
}

_QWEN_HOOK = re.compile(r"<(qwen:[a-z-]+)>.*?</\1>", re.S)


def _qwen_records(path: Path, e: Expect) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Qwen Code's records by uuid (a message written in pieces joined), in file order."""
    records: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for obj in _lines(path):
        key = str(obj.get("uuid"))
        if key in records:  # a message written in pieces
            parts = records[key]["message"]["parts"] + obj.get("message", {}).get("parts", [])
            records[key] = {**obj, "message": {**obj.get("message", {}), "parts": parts}}
        else:
            records[key] = obj
            order.append(key)
        e.version = e.version or obj.get("version")
    return records, order


def _qwen_active(records: dict[str, dict[str, Any]], order: list[str]) -> set[str]:
    """The records on the path from the last message back to the first (parentUuid)."""
    kinds = ("user", "assistant", "tool_result")
    leaf = next((k for k in reversed(order) if records[k].get("type") in kinds), None)
    active: set[str] = set()
    while leaf is not None and leaf in records and leaf not in active:
        active.add(leaf)
        leaf = records[leaf].get("parentUuid")
    return active


def qwen_code(path: Path) -> Expect:
    e = Expect()
    records, order = _qwen_records(path, e)
    active = _qwen_active(records, order)
    calls: dict[str, tuple[str, str]] = {}
    for key in [k for k in order if k in active]:
        obj = records[key]
        parts = [p for p in (obj.get("message") or {}).get("parts") or [] if isinstance(p, dict)]
        if obj.get("type") == "user" and obj.get("subtype") != "notification":
            shown = (obj.get("systemPayload") or {}).get("displayText")
            text = shown or _QWEN_HOOK.sub("", "\n".join(p.get("text", "") for p in parts))
            if text.strip():
                e.user.append(text)
                e.messages += 1
        elif obj.get("type") == "assistant":
            texts = [
                p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
            ]
            e.agent += texts
            e.messages += bool(texts)
            for call in [p.get("functionCall") for p in parts]:
                if isinstance(call, dict):
                    calls[str(call.get("id"))] = (str(call.get("name")), _hint(call.get("args")))
        elif obj.get("type") == "tool_result":
            for answer in [p.get("functionResponse") for p in parts]:
                if isinstance(answer, dict) and str(answer.get("id")) in calls:
                    tool, hint = calls[str(answer["id"])]
                    e.results.append((tool, hint, _result_text(answer.get("response"))))
    return e


def kimi(path: Path) -> Expect:
    e = Expect()
    calls: dict[str, tuple[str, str]] = {}
    for obj in _lines(path):
        if obj.get("type") == "metadata":
            e.version = obj.get("protocol_version")
        if obj.get("type") == "context.append_message":
            m = obj.get("message") or {}
            if m.get("role") == "user" and (m.get("origin") or {}).get("kind") != "injection":
                texts = _texts(m.get("content"))
                e.user += texts
                e.messages += bool(texts)
        elif obj.get("type") == "context.append_loop_event":
            ev = obj.get("event") or {}
            part = ev.get("part") or {}
            if ev.get("type") == "content.part" and part.get("type") == "text":
                e.agent.append(part.get("text", ""))
                e.messages += 1
            elif ev.get("type") == "tool.call":
                calls[str(ev.get("toolCallId"))] = (str(ev.get("name")), _hint(ev.get("args")))
            elif ev.get("type") == "tool.result" and str(ev.get("toolCallId")) in calls:
                tool, hint = calls[str(ev["toolCallId"])]
                e.results.append((tool, hint, _result_text((ev.get("result") or {}).get("output"))))
    return e


def droid(path: Path) -> Expect:
    e = Expect()
    calls: dict[str, tuple[str, str]] = {}
    for obj in _lines(path):
        if obj.get("type") == "session_start":
            e.version = obj.get("version")
        if obj.get("type") != "message" or obj.get("visibility") == "llm_only":
            continue
        m = obj.get("message") or {"role": obj.get("role"), "content": obj.get("text")}
        content = m.get("content")
        texts = [_REMINDER.sub("", t).strip() for t in _texts(content)]
        texts = [t for t in texts if t]
        (e.user if m.get("role") == "user" else e.agent).extend(texts)
        e.messages += bool(texts)
        _anthropic_tools(e, calls, content)
    return e


def pi(path: Path) -> Expect:
    e = Expect()
    calls: dict[str, tuple[str, str]] = {}
    for obj in _lines(path):
        m = obj.get("message") if obj.get("type") == "message" else None
        if not isinstance(m, dict):
            continue
        if m.get("role") == "toolResult" and str(m.get("toolCallId")) in calls:
            tool, hint = calls[str(m["toolCallId"])]
            e.results.append((tool, hint, _result_text(m.get("content"))))
            continue
        texts = _texts(m.get("content"))
        (e.user if m.get("role") == "user" else e.agent).extend(texts)
        e.messages += bool(texts)
        blocks = m.get("content")
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                calls[str(block.get("id"))] = (
                    str(block.get("name")),
                    _hint(block.get("arguments")),
                )
    return e


READERS.update({"qwen-code": qwen_code, "kimi": kimi, "droid": droid, "pi": pi})
