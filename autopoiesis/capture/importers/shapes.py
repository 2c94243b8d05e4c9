"""The shapes chat logs have in common, for importers: text of content blocks, tool calls
and their results (Anthropic's blocks among them), JSON lines, ids, times, and the small
coercions of a field a log may leave out or get wrong. The Importer protocol and the
registry are in `base`."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    as_dict,
    iter_log_lines,
    load_json,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.text import counted, one_line
from autopoiesis.errors import (
    ImportFormatError,
    TimestampError,
    TranscriptFormatError,
)
from autopoiesis.formats import transcript as tf


def content_text(value: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts
    (OpenAI parts, Anthropic blocks), or JSON for anything else."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


def output_text(value: Any) -> str:
    """A tool output as text: a string (Codex's older `{"output": ..., "metadata": ...}`
    JSON string unwrapped), a list of content parts, or a `{content, success}` payload."""
    if value is None:
        return ""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{") and '"output"' in stripped:
            try:
                inner = json.loads(stripped)
            except (ValueError, RecursionError):
                return value
            if isinstance(inner, dict) and "output" in inner:
                return output_text(inner["output"])
        return value
    if isinstance(value, list):
        parts = [output_text(v) for v in value]
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        kind = string(value.get("type"))
        if kind in ("input_image", "image", "output_image"):
            return "[image]"
        for key in ("text", "content", "output", "stdout", "result", "message"):
            if key in value and value[key] is not None:
                text = output_text(value[key])
                if value.get("success") is False and text and not text.startswith("error"):
                    text = f"error: {text}"
                return text
        if "error" in value and value["error"]:
            return f"error: {output_text(value['error'])}"
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return json.dumps(value, ensure_ascii=False)


def whole_number(value: Any, where: str) -> int:
    """VALUE as a non-negative whole number (None and absent are 0); ImportFormatError
    naming WHERE for anything else ("abc", 1.5, -3, true)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ImportFormatError(f"{where} must be a non-negative whole number, not {value!r}.")
    return value


def args_summary(value: Any) -> str:
    """A tool call's arguments in one telling line: the command, path or query first."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, TypeError):
            return value
    if isinstance(value, dict):
        if isinstance(value.get("questions"), list):
            asked = _questions(value["questions"])
            if asked:
                return asked
        for key in (
            "command",
            "file_path",
            "absolute_path",
            "path",
            "query",
            "url",
            "pattern",
            "description",
            "plan",
        ):
            if isinstance(value.get(key), str):
                rest = {k: v for k, v in value.items() if k != key}
                return value[key] + (
                    f" {json.dumps(rest, ensure_ascii=False)}" if rest and key != "command" else ""
                )
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value is not None else ""


def _questions(questions: list[Any]) -> str:
    """The questions a tool asks the user (Claude Code's AskUserQuestion: each with its
    options' labels and descriptions), written as SpecStory writes them: "**Q?** Options:
    - **Label** - what it means" (`tool_calls.choices` reads the answer's choice from
    them); "" when none is a question."""
    out = []
    for q in questions:
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            continue
        line = f"**{q['question']}**"
        options = [o for o in q.get("options") or () if isinstance(o, dict) and o.get("label")]
        if options:
            line += " Options: " + " ".join(
                f"- **{o['label']}**" + (f" - {o['description']}" if o.get("description") else "")
                for o in options
            )
        out.append(line)
    return " ".join(out)


# Content blocks only the Anthropic Messages format has (OpenAI's content parts are text,
# image_url, input_audio, file): a list holding one is no chat-completions list.
ANTHROPIC_BLOCK_TYPES = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "document",
    }
)


def has_anthropic_blocks(messages: Any) -> bool:
    """Whether MESSAGES (a list of message objects) holds an Anthropic content block."""
    if not isinstance(messages, list):
        return False
    for msg in messages:
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and (
                    block.get("type") in ANTHROPIC_BLOCK_TYPES
                    or (block.get("type") == "image" and isinstance(block.get("source"), dict))
                ):
                    return True
    return False


def opening_id(prefix: str, messages: list[Any]) -> str:
    """A session id for a log that names none, stable while the log grows: PREFIX and a
    hash of its opening exchange (the messages up to and including the first reply; all
    of them while there is no reply yet)."""
    opening: list[Any] = []
    for msg in messages:
        opening.append(msg)
        if isinstance(msg, dict) and msg.get("role") in ("assistant", "agent", "model"):
            break
    canonical = json.dumps(opening, sort_keys=True, ensure_ascii=False, default=str).encode(
        "utf-8", "surrogatepass"
    )
    return f"{prefix}{hashlib.sha256(canonical).hexdigest()[:16]}"


def anthropic_attachment(block: dict[str, Any], where: str = "") -> tf.Attachment:
    """An image or document block as an attachment line (its bytes are not kept)."""
    src = as_dict(block.get("source"))
    if src.get("type") == "url" and isinstance(src.get("url"), str):
        return tf.Attachment(src["url"])
    media = (
        src.get("media_type")
        if isinstance(src.get("media_type"), str)
        else str(block.get("type") or "image")
    )
    return tf.Attachment(f"{media}{where} (not stored)")


def anthropic_tool_result(
    block: dict[str, Any],
    calls: ToolCalls,
    items: list[tf.Item],
    clean: Callable[[str], str] = str.strip,
) -> None:
    """Write a tool_result block into the call it answers (an image it carries as an
    attachment line after the call), or, answering no call seen, as a `result` line in
    ITEMS. CLEAN tidies the result text (a harness's own tags)."""
    content = block.get("content")
    texts: list[str] = []
    images: list[tf.Attachment] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and part.get("type") in ("image", "document"):
            images.append(anthropic_attachment(part, " from a tool result"))
        elif isinstance(part, dict) and part.get("type") == "text":
            texts.append(str(part.get("text") or ""))
        elif isinstance(part, str):
            texts.append(part)
        elif part is not None:
            texts.append(content_text(part))
    result = clean("\n".join(t for t in texts if t))
    if not result and block.get("is_error"):
        result = "error"
    elif block.get("is_error") and not result.startswith("error"):
        result = f"error: {result}"
    call_id = block.get("tool_use_id")
    if calls.resolve(call_id, result or None):
        for image in images:
            calls.attach(call_id, image)
        return
    items.append(tf.ToolCall("result", str(call_id) if call_id is not None else "", result or None))
    items.extend(images)


class ToolCalls:
    """Tool calls waiting for their results: logs send a call and its result in separate
    messages, linked by an id; the result is written into the call's own line. A result
    without an id answers the oldest call still waiting (logs that carry no ids)."""

    def __init__(self) -> None:
        self._slots: dict[str, list[Any]] = {}  # id -> [items, call]
        self._waiting: list[list[Any]] = []  # [items, call] not yet answered, oldest first
        self._last: list[Any] | None = None  # the call filled last

    def add(self, call_id: Any, items: list[tf.Item], call: tf.ToolCall) -> None:
        """Append CALL to ITEMS and remember it under CALL_ID (a call without an id can
        still be answered by `resolve(None, ...)` or `resolve_oldest`)."""
        items.append(call)
        slot: list[Any] = [items, call]
        if call_id not in (None, ""):
            self._slots[str(call_id)] = slot
        self._waiting.append(slot)

    def __contains__(self, call_id: Any) -> bool:
        return call_id not in (None, "") and str(call_id) in self._slots

    def _slot(self, call_id: Any) -> list[Any] | None:
        if call_id in (None, ""):
            return self._waiting[0] if self._waiting else None
        return self._slots.get(str(call_id))

    @staticmethod
    def _index(slot: list[Any]) -> int:
        items, call = slot
        return next(i for i, item in enumerate(items) if item is call)

    def _fill(self, slot: list[Any], result: str | None) -> bool:
        items, call = slot
        done = call.with_result(result)
        items[self._index(slot)] = done
        slot[1] = done
        if slot in self._waiting:
            self._waiting.remove(slot)
        self._last = slot
        return True

    def resolve(self, call_id: Any, result: str | None) -> bool:
        """Fill RESULT into the call CALL_ID (no id: the oldest call still waiting); False
        when no such call was seen."""
        slot = self._slot(call_id)
        return False if slot is None else self._fill(slot, result)

    def resolve_oldest(
        self, tool: str | None, result: str | None, *, any_tool: bool = False
    ) -> bool:
        """Fill RESULT into the oldest unanswered call of TOOL (any tool when None), for
        logs whose results name the tool but not the call; with ANY_TOOL, a result whose
        tool no waiting call has answers the oldest call instead (a harness that names a
        tool in its results differently from its calls). False when none is waiting."""
        wanted = None if tool is None else one_line(tool, 80).replace("]", ")")
        for slot in self._waiting:
            if wanted is None or slot[1].tool == wanted:
                return self._fill(slot, result)
        if any_tool and self._waiting:
            return self._fill(self._waiting[0], result)
        return False

    def unanswered(self) -> int:
        """Stop waiting for the calls not answered yet (a harness that answers every call
        of a message in the next one never answers these: an interrupted task); how many
        there were. Their lines stay, without a result."""
        left = len(self._waiting)
        self._waiting.clear()
        return left

    def attach_to_last(self, item: tf.Item) -> bool:
        """Put ITEM right after the call filled last (an image after its result's text);
        False when none was."""
        return self._last is not None and self._insert_after(self._last, item)

    def attach(self, call_id: Any, item: tf.Item) -> bool:
        """Put ITEM (an attachment a tool result carried) right after the call CALL_ID;
        False when no such call was seen."""
        slot = self._slot(call_id)
        return slot is not None and self._insert_after(slot, item)

    def _insert_after(self, slot: list[Any], item: tf.Item) -> bool:
        items = slot[0]
        at = self._index(slot) + 1
        while at < len(items) and isinstance(items[at], tf.Attachment):
            at += 1
        items.insert(at, item)
        return True


def content_parts(value: Any) -> tuple[list[str], list[tf.Item]]:
    """(texts, attachments) of a Gemini API PartListUnion (Gemini CLI, Qwen Code): a
    string, a part, or a list of them; thought parts (reasoning) are left out."""
    if isinstance(value, str):
        return [value], []
    texts: list[str] = []
    attachments: list[tf.Item] = []
    for part in value if isinstance(value, list) else [value]:
        if isinstance(part, str):
            texts.append(part)
        elif not isinstance(part, dict) or part.get("thought") is True:
            continue  # thought parts are reasoning
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("inlineData"), dict):
            attachments.append(
                tf.Attachment(f"{part['inlineData'].get('mimeType') or 'data'} (not stored)")
            )
        elif isinstance(part.get("fileData"), dict) and nonempty_str(
            part["fileData"].get("fileUri")
        ):
            attachments.append(tf.Attachment(part["fileData"]["fileUri"]))
    return texts, attachments


def function_part(part: dict[str, Any], turn_items: list[tf.Item], calls: ToolCalls) -> None:
    """A Gemini API functionCall part opens a call in TURN_ITEMS; a functionResponse part
    answers one (by id, else the oldest open call of its name), or is a result line of its
    own."""
    call, answer = part.get("functionCall"), part.get("functionResponse")
    if isinstance(call, dict):
        tool = tf.ToolCall(str(call.get("name") or "tool"), args_summary(call.get("args")), None)
        calls.add(call.get("id"), turn_items, tool)
    elif isinstance(answer, dict):
        body = mapping(answer.get("response"))
        result = f"error: {output_text(body['error'])}" if body.get("error") else output_text(body)
        if answer.get("id") and calls.resolve(answer["id"], result or None):
            return
        if not calls.resolve_oldest(nonempty_str(answer.get("name")), result or None):
            turn_items.append(tf.ToolCall(str(answer.get("name") or "result"), "", result or None))


def json_lines(
    text: str | list[str], source: str, report: ImportReport
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each JSON-object line of TEXT (or of its LINES), as each
    is read; a line that is not JSON, nested too deeply or not an object is counted as
    malformed in REPORT and skipped. A line of objects written back to back (a line break
    lost) gives each."""
    for n, line in enumerate(iter_log_lines(text) if isinstance(text, str) else text, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            glued = _glued(line)
            if glued is None:
                report.skip_line(source, n, "not JSON")
            for one in glued or ():
                yield n, one
            continue
        except RecursionError:
            report.skip_line(source, n, "nested deeper than can be read")
            continue
        if not isinstance(obj, dict):
            report.skip_line(source, n, f"a JSON {type(obj).__name__}, not an object")
            continue
        yield n, obj


_DECODER = json.JSONDecoder()


def _glued(line: str) -> list[dict[str, Any]] | None:
    """The objects of a LINE that holds several written back to back (a lost line break),
    or None when it is not that."""
    out: list[dict[str, Any]] = []
    pos, end = 0, len(line.rstrip())
    try:
        while pos < end:
            obj, pos = _DECODER.raw_decode(line, pos)
            if not isinstance(obj, dict):
                return None
            out.append(obj)
            while pos < end and line[pos] in " \t":
                pos += 1
    except (ValueError, RecursionError):
        return None
    return out if len(out) > 1 else None


def count(value: Any) -> int:
    """A token count from a log: a non-negative whole number, else 0 (logs are not
    trusted to hold numbers where numbers belong)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def mapping(value: Any) -> dict[str, Any]:
    """VALUE when it is a JSON object, else an empty one (logs drift; a field of the
    wrong type reads as absent)."""
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    """VALUE when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def string(value: Any) -> str | None:
    """VALUE when it is a string, else None: a `type` or `role` that came as a list or an
    object must not be looked up in a set (it cannot be hashed)."""
    return value if isinstance(value, str) else None


def nonempty_str(value: Any) -> str | None:
    """VALUE when it is a string with something in it, else None."""
    return value if isinstance(value, str) and value.strip() else None


def safe_session_id(*candidates: Any) -> str | None:
    """The first candidate that is a valid transcript session id, or None."""
    for value in candidates:
        if isinstance(value, str):
            try:
                return tf.validate_session_id(value)
            except TranscriptFormatError:
                continue
    return None


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def file_session_id(prefix: str, name: str) -> str:
    """The id of a session known only by its file NAME: a UUID (what harnesses name their
    files by) as it is, any other name with PREFIX- so that `small.jsonl` of two formats
    cannot claim the same id."""
    if _UUID.fullmatch(name):
        return name
    return safe_session_id(f"{prefix}-{name}") or stable_id(prefix, name)


def stable_id(prefix: str, *parts: Any) -> str:
    """PREFIX_ and a hash of PARTS: the id of a session whose log gives it none, the same
    every time the same log is imported."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str).encode(
        "utf-8", "surrogatepass"
    )
    return f"{prefix}_{hashlib.sha256(canonical).hexdigest()[:16]}"


def read_export(
    path: Path,
    text: str,
    report: ImportReport,
    *,
    export: str,
    is_conversation: Callable[[Any], bool],
    needs: str,
    read_one: Callable[[Any, str], SessionDraft],
    refusals: tuple[type[Exception], ...] = (ImportFormatError,),
) -> list[SessionDraft]:
    """The sessions of a JSON export holding one conversation or a list of them (the
    ChatGPT and Claude.ai exports): READ_ONE(conversation, where) each; one that is no
    conversation (it lacks NEEDS) or cannot be read is refused alone, the rest imported."""
    try:
        data = load_json(text)
    except ValueError as exc:
        raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
    conversations = data if isinstance(data, list) else [data]
    if not any(is_conversation(c) for c in conversations):
        raise ImportFormatError(f"{path}: not a {export} export: no conversation has {needs}.")
    drafts = []
    for i, conv in enumerate(conversations):
        where = f"{path}[{i}]" if isinstance(data, list) else str(path)
        if not is_conversation(conv):
            report.refuse(where, f"not a {export} conversation (no {needs}); it was not imported.")
            continue
        try:
            drafts.append(read_one(conv, where))
        except refusals as exc:
            report.refuse(where, str(exc))
    return drafts


def first_time(*values: Any, field: str = "timestamp") -> datetime | None:
    """The first of VALUES that reads as a timestamp (clock.parse_ts), None when none does:
    for the optional times of a log, where a missing or wrong one is no reason to refuse
    the session (its turns date it instead)."""
    for value in values:
        if value is None or value == "":
            continue
        try:
            return parse_ts(value, field)
        except TimestampError:
            continue
    return None


# Subagent runs Claude Code starts for itself, not for the conversation, by their prompt:
# the pre-warm request of Claude Code 2.0 (the word Warmup, to warm a subagent's cache)
# and a prompt suggestion (it asks a subagent to guess the user's next message). Neither
# holds a word of the conversation; the reason says which, for the import's warnings.
_OWN_RUNS = (
    (lambda prompt: prompt == "Warmup", "Claude Code's pre-warm request ('Warmup')"),
    (
        lambda prompt: prompt.startswith("[SUGGESTION MODE:"),
        "Claude Code asking a subagent to guess your next message",
    ),
)


def _own_run(draft: SessionDraft) -> str | None:
    """Why DRAFT, a subagent's session, is a run the harness started for itself and no
    conversation (see _OWN_RUNS); None when it is a subagent's work."""
    first = next((t for t in draft.turns if t.role == "user"), None)
    if first is None:
        return None
    prompt = "\n".join(i.content for i in first.items if isinstance(i, tf.Text)).strip()
    return next((why for test, why in _OWN_RUNS if test(prompt)), None)


def without_own_runs(
    drafts: list[SessionDraft], subagents: Collection[str], source: str, report: ImportReport
) -> list[SessionDraft]:
    """DRAFTS but for the subagent sessions (their ids in SUBAGENTS) that are the harness's
    own runs (`_own_run`), each counted in REPORT's warnings; a SOURCE that held
    nothing else is passed over."""
    own = {
        d.session_id: why
        for d in drafts
        if d.session_id in subagents and (why := _own_run(d)) is not None
    }
    kept = [d for d in drafts if d.session_id not in own]
    reasons = "; ".join(sorted(set(own.values())))
    if drafts and not kept:
        report.pass_over(source, f"{reasons}, no conversation")
    elif own:
        report.warnings.append(
            f"{source}: {counted(len(own), 'run')} left out ({reasons}: no conversation)"
        )
    return kept
