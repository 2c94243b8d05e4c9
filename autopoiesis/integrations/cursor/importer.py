"""Cursor: the agent's JSONL transcripts, and the Markdown of Cursor's "Export chat".

**Agent JSONL** (`~/.cursor/projects/*/agent-transcripts/<id>.jsonl`, and the same
under `subagents/`): one `{"role", "message": {"content": [...]}}` line per message,
with Anthropic-style blocks (`text`, `thinking`, `tool_use`, `tool_result`), plus
bookkeeping lines such as `{"type": "turn_ended"}`. The lines carry no times and no
session id: the session is named by the file (its stem), and every turn gets the
file's modification minute unless a line brings a timestamp of its own. A user's words
arrive wrapped in `<user_query>`; the context Cursor adds around them is left out.

**Markdown export**: `# Title`, `_Exported on DATE from Cursor (VERSION)_`, then
messages under `**User**` and `**Cursor**` lines separated by `---`. The export holds
no per-message times (every turn gets the export time, read with its UTC offset) and
no tool calls; the session id is a hash of the title and the first message, so
exporting the same chat again names the same session.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
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
    content_text,
    file_session_id,
    json_lines,
    nonempty_str,
    stable_id,
    string,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.text import counted, noun
from autopoiesis.errors import ImportFormatError, TimestampError
from autopoiesis.formats import transcript as tf

_USER_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.DOTALL)
SKIPPED_BLOCKS = frozenset({"thinking", "redacted_thinking", "reasoning"})
CALL_BLOCKS = frozenset({"tool_use", "tool_call", "tool-call"})
RESULT_BLOCKS = frozenset({"tool_result", "tool-result"})


def _file_minute(path: Path) -> datetime:
    return parse_ts(path.stat().st_mtime, f"{path}: modification time").replace(
        second=0, microsecond=0
    )


def _is_agent_line(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and string(obj.get("role")) in ("user", "assistant")
        and isinstance(obj.get("message"), dict)
        and "content" in obj["message"]
        and "type" not in obj
        and "sessionId" not in obj
    )


class CursorImporter:
    name = "cursor"
    description = "Cursor agent transcripts (~/.cursor/projects/*/agent-transcripts/*.jsonl)"

    def detect(self, path: Path, text: str) -> float:
        return (
            0.9 if looks_like_jsonl(path, text) and _is_agent_line(first_json_line(text)) else 0.0
        )

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        fallback = _file_minute(path)
        undated = 0  # turns dated by the file
        clock: datetime | None = None  # the time of the last line dated by its own
        sid = file_session_id("cursor", path.stem)
        draft = SessionDraft(session_id=sid, channel="cursor", source=f"cursor:{path.name}")
        calls = ToolCalls()
        for n, obj in json_lines(text, str(path), report):
            if not _is_agent_line(obj):
                if isinstance(obj.get("type"), str) and "role" not in obj:
                    continue  # turn_ended and other bookkeeping
                report.skip_line(
                    str(path), n, "not a Cursor message line (role and message.content)"
                )
                continue
            stamp = obj.get("timestamp", obj.get("createdAt"))
            undated += stamp is None
            dated = (
                fallback
                if stamp is None
                else report.line_time(str(path), n, stamp, before=clock or fallback)
            )
            if dated is None:
                continue
            when = dated
            clock = dated if stamp is not None else clock
            if draft.model is None and nonempty_str(obj.get("model")):
                draft.model = obj["model"]
            role = "user" if obj["role"] == "user" else "agent"
            items = _blocks(obj["message"]["content"], role, calls)
            if not items:
                continue
            if role == "user" and all(isinstance(i, tf.ToolCall) for i in items):
                role = "agent"  # results of calls nobody asked for belong with the agent
            if (
                role == "agent"
                and draft.turns
                and draft.turns[-1].role == "agent"
                and all(isinstance(i, tf.ToolCall) for i in items)
            ):
                draft.turns[-1].items.extend(items)
            else:
                draft.add_turn(when, role, items)
        if not draft.turns:
            raise ImportFormatError(
                f"{path}: this Cursor transcript holds no user or agent message; nothing to import."
            )
        draft.started = draft.turns[0].time
        draft.cwd = project_folder(path)
        if undated:
            report.warnings.append(
                f"{path}: Cursor writes no times; {counted(undated, 'message')} "
                f"{noun(undated, 'is', 'are')} dated by the file's "
                f"modification time ({fallback.strftime('%Y-%m-%d %H:%M')} UTC)"
            )
        return [draft]


def project_folder(path: Path) -> str | None:
    """The workspace folder of an agent transcript at PATH, read back from the name of
    its `~/.cursor/projects/<folder>/agent-transcripts/` folder: Cursor names it after the
    workspace's path with every '/' written '-' (`Users-me-code-my-app`). A '-' of the
    path's own is indistinguishable from a '/', so the name is matched against the folders
    that exist on this machine, the longest existing name first; None when none fits."""
    encoded = next((p.parent.name for p in path.parents if p.name == "agent-transcripts"), "")
    words = encoded.split("-")
    if not encoded or not all(words):
        return None
    folder, start = Path("/"), 0
    while start < len(words):
        for end in range(len(words), start, -1):
            candidate = folder / "-".join(words[start:end])
            if candidate.is_dir():
                folder, start = candidate, end
                break
        else:
            return None
    return str(folder)


def _user_text(text: str) -> str:
    """What the user typed: the `<user_query>` when Cursor wrapped it in context."""
    queries = _USER_QUERY.findall(text)
    return "\n\n".join(queries) if queries else text


def _blocks(content: Any, role: str, calls: ToolCalls) -> list[tf.Item]:
    items: list[tf.Item] = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            text = _user_text(block) if role == "user" else block
            if text.strip():
                items.append(tf.Text(text))
            continue
        if not isinstance(block, dict):
            continue
        kind = string(block.get("type"))
        if kind in SKIPPED_BLOCKS:
            continue
        if kind in CALL_BLOCKS:
            call = tf.ToolCall(
                str(block.get("name") or block.get("toolName") or "tool"),
                args_summary(block.get("input", block.get("args"))),
                None,
            )
            calls.add(block.get("id") or block.get("toolCallId"), items, call)
        elif kind in RESULT_BLOCKS:
            result = content_text(block.get("content", block.get("result"))) or None
            if block.get("is_error") and result:
                result = f"error: {result}"
            call_id = block.get("tool_use_id") or block.get("toolCallId")
            name = nonempty_str(block.get("name"))
            if not (call_id and calls.resolve(call_id, result)) and not calls.resolve_oldest(
                name, result
            ):
                items.append(tf.ToolCall(name or "result", str(call_id or ""), result))
        elif kind == "image":
            items.append(tf.Attachment("image (not stored)"))
        elif isinstance(block.get("text"), str) and block["text"].strip():
            items.append(tf.Text(_user_text(block["text"]) if role == "user" else block["text"]))
    return items


# ── the Markdown export ──
_EXPORTED = re.compile(
    r"^_Exported on (?P<when>.+?) from Cursor(?: \((?P<version>[^)]*)\))?_\s*$", re.MULTILINE
)
_SPEAKER = re.compile(r"^\*\*(User|Cursor)\*\*\s*$")
_ZONES = {
    "UTC": 0,
    "GMT": 0,
    "Z": 0,
    "BST": 1,
    "CET": 1,
    "CEST": 2,
    "EET": 2,
    "EEST": 3,
    "MSK": 3,
    "IST": 5.5,
    "CST": -6,
    "CDT": -5,
    "EST": -5,
    "EDT": -4,
    "MST": -7,
    "MDT": -6,
    "PST": -8,
    "PDT": -7,
    "AKST": -9,
    "AKDT": -8,
    "HST": -10,
    "JST": 9,
    "KST": 9,
    "AEST": 10,
    "AEDT": 11,
    "NZST": 12,
    "NZDT": 13,
}


def export_time(text: str) -> datetime | None:
    """The time in an `_Exported on ..._` line, in UTC; None when it cannot be read.
    Cursor writes it in the user's locale (`12/29/2025 at 15:57:23 GMT-3`,
    `4/11/2026 at 10:29:42 PDT`, `2025/12/16 at GMT+8 16:06:09`, `2025. 7. 6. at 18시 15분 42초
    GMT+9`)."""
    ymd = re.search(r"(\d{4})\s*[./-]\s*(\d{1,2})\s*[./-]\s*(\d{1,2})", text)
    dmy = re.search(r"(\d{1,2})[./](\d{1,2})[./](\d{4})", text)
    if ymd:
        year, month, day = (int(x) for x in ymd.groups())
    elif dmy:
        first, second, year = (int(x) for x in dmy.groups())
        month, day = (
            (second, first) if first > 12 else (first, second)
        )  # US month-first unless it cannot be
    else:
        return None
    clock = re.search(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", text) or re.search(
        r"(\d{1,2})\s*시\s*(\d{1,2})\s*분\s*(?:(\d{1,2})\s*초)?", text
    )
    hour, minute, second = (
        (int(clock.group(1)), int(clock.group(2)), int(clock.group(3) or 0)) if clock else (0, 0, 0)
    )
    if clock and re.search(r"\bPM\b|오후|下午", text) and hour < 12:
        hour += 12
    elif clock and re.search(r"\bAM\b|오전|上午", text) and hour == 12:
        hour = 0
    offset = 0.0
    zone = re.search(r"(?:GMT|UTC)\s*([+-])(\d{1,2})(?::?(\d{2}))?", text)
    if zone:
        offset = (1 if zone.group(1) == "+" else -1) * (
            int(zone.group(2)) + int(zone.group(3) or 0) / 60
        )
    else:
        for word in re.findall(r"\b[A-Z]{1,4}\b", text):
            if word in _ZONES:
                offset = _ZONES[word]
                break
    try:
        local = datetime(
            year, month, day, hour, minute, second, tzinfo=timezone(timedelta(hours=offset))
        )
        return parse_ts(local.astimezone(UTC), "export time")
    except (ValueError, TimestampError):
        return None


class CursorMarkdownImporter:
    name = "cursor-md"
    description = "Cursor's Markdown chat export (**User** / **Cursor** sections)"

    def detect(self, path: Path, text: str) -> float:
        head = text[:2000]
        if _EXPORTED.search(head):
            return 0.95
        if (
            path.suffix.lower() in (".md", ".markdown")
            and re.search(r"^\*\*User\*\*\s*$", text, re.MULTILINE)
            and re.search(r"^\*\*Cursor\*\*\s*$", text, re.MULTILINE)
        ):
            return 0.7
        return 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        lines = text.replace("\r\n", "\n").split("\n")
        exported = _EXPORTED.search(text[:2000])
        when = (export_time(exported.group("when")) if exported else None) or _file_minute(path)
        titles = [ln[2:].strip() for ln in lines[:10] if ln.startswith("# ")]
        turns: list[tuple[str, list[str]]] = []
        for ln in lines:
            m = _SPEAKER.match(ln)
            if m:
                while turns and turns[-1][1] and turns[-1][1][-1].strip() in ("", "---"):
                    turns[-1][1].pop()  # the separator before the next speaker
                turns.append(("user" if m.group(1) == "User" else "agent", []))
            elif turns:
                turns[-1][1].append(ln)
        if turns:
            while turns[-1][1] and turns[-1][1][-1].strip() in ("", "---"):
                turns[-1][1].pop()
        messages = [(role, "\n".join(body).strip("\n")) for role, body in turns]
        messages = [(role, body) for role, body in messages if body.strip()]
        if not messages:
            raise ImportFormatError(
                f"{path}: no **User** or **Cursor** message in this Cursor export; nothing to "
                "import."
            )
        title = titles[-1] if titles else None
        draft = SessionDraft(
            session_id=stable_id("cursor", title, messages[0][1]),
            channel="cursor",
            topic=title,
            source=f"cursor-md:{path.name}",
            started=when,
        )
        for role, body in messages:
            draft.add_turn(when, role, [tf.Text(body)])
        return [draft]
