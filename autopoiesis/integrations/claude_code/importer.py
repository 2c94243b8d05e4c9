"""Claude Code session logs (`~/.claude/projects/*/*.jsonl`): one JSON object per line,
`user` and `assistant` lines carrying an Anthropic `message`, plus bookkeeping lines.

What becomes of a line:

* `user`/`assistant` lines are the conversation. Tool results are written into the line
  of the tool use they answer (an image a result carries gets an attachment line there);
  `thinking` blocks are left out on purpose (docs/design.md#transcript-format: reasoning is
  excluded).
  Consecutive lines of one API message (`message.id`: Claude Code writes one line per
  content block) make one turn, and its token usage is counted once.
* Bookkeeping is not conversation: `<command-name>`/`<command-message>`/
  `<local-command-stdout>` lines, `isMeta` lines (the caveat Claude Code injects) and
  `<system-reminder>` blocks are dropped; a compact summary (`isCompactSummary`), an
  interruption notice and a task notification are system items; a line repeating a
  `uuid` already read (a rewound branch written again) counts once; lines named in
  `supersedesUuids`/`retractedMessageUuids` are left out.
* `custom-title`, else `ai-title`, else a `summary` line gives the topic (the last of its
  kind wins). The other line types Claude Code writes (attachment, system, progress,
  permission-mode, pr-link, worktree-state, file-history-snapshot, ...: KNOWN_TYPES)
  are known and skipped; only a line that is not JSON, not an object, or a conversation
  line without its fields counts as malformed.
* Subagents are their own sessions. A line with `isSidechain` belongs to the subagent
  that wrote it: `agent-{agentId}`, or for old logs without agent ids, the sidechain
  chain it starts (`{session}-sidechain-N`). Its transcript names the parent session in
  `parent_session` (the line's `sessionId` when that is the parent's, else the
  `{session}/subagents/` folder the file is in). A sidechain chain that main-conversation
  lines continue from is the main conversation after all.

A file may hold several sessions (by `sessionId`). A malformed line is counted and
skipped; every good line is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    as_dict,
    first_json_line,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    anthropic_attachment,
    anthropic_tool_result,
    args_summary,
    content_text,
    json_lines,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import TranscriptFormatError
from autopoiesis.formats import transcript as tf

# Line types Claude Code writes that are not conversation (seen up to 2.1): skipped, and
# never counted as malformed.
KNOWN_TYPES = frozenset(
    {
        "file-history-snapshot",
        "file-history-delta",
        "queue-operation",
        "mode",
        "permission-mode",
        "system",
        "progress",
        "attachment",
        "last-prompt",
        "agent-name",
        "agent-color",
        "agent-setting",
        "pr-link",
        "worktree-state",
        "atis-latch",
        "bridge-session",
        "relocated",
        "frame-link",
        "fork-context-ref",
        "content-replacement",
        "marble-origami-commit",
        "marble-origami-snapshot",
        "task-summary",
        "tag",
        "todo",
        "diagnostic",
        "checkpoint",
        "compact-boundary",
        "started",
        "result",
    }
)
TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle"}
SYNTHETIC_MODEL = "<synthetic>"  # a local notice (an error, a cancel) no API call produced

_BOOKKEEPING_TAGS = (
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
)
_BOOKKEEPING_RE = re.compile(r"\s*(?:<(" + "|".join(_BOOKKEEPING_TAGS) + r")>.*?</\1>\s*)+", re.S)
_SYSTEM_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_BASH_RE = re.compile(r"<bash-(input|stdout|stderr)>(.*?)</bash-\1>", re.S)
_INTERRUPTED_RE = re.compile(r"^\[Request interrupted by user[^\]]*\]$")
_TASK_NOTE_RE = re.compile(r"^\s*<task-notification>.*</task-notification>\s*$", re.S)
_SUMMARY_TAG_RE = re.compile(r"<summary>(.*?)</summary>", re.S)
_AGENT_FILE_RE = re.compile(r"^agent-([A-Za-z0-9]+)\.jsonl\Z")


class ClaudeCodeImporter:
    name = "claude-code"
    description = (
        "Claude Code JSONL session logs (~/.claude/projects/*/*.jsonl, subagents included)"
    )

    def detect(self, path: Path, text: str) -> float:
        # The JSON-lines format autopoiesis knows best; others that recognise their own
        # first line (neutral sessions) are surer.
        if not looks_like_jsonl(path, text):
            return 0.0
        first = first_json_line(text)
        return 0.9 if isinstance(first, dict) and "sessionId" in first else 0.5

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        return parse_log(text.splitlines(), str(path), report)


def parse_log(lines: list[str], source: str, report: ImportReport) -> list[SessionDraft]:
    """The sessions of a Claude Code log's LINES."""
    records = list(json_lines(lines, source, report))
    return parse_records(records, source, report)


@dataclass
class _Line:
    """A conversation line that passed its checks."""

    n: int
    obj: dict[str, Any]
    kind: str  # user | assistant | tool_use | tool_result (the last two: old logs' own lines)
    session: str
    when: datetime
    uuid: str | None
    parent: str | None
    sidechain: bool


@dataclass
class _Session:
    draft: SessionDraft
    counted: set[str] = field(default_factory=set)  # message ids whose usage was added
    last_message: str | None = None  # message.id of the last turn, while it is an agent turn
    calls: ToolCalls = field(default_factory=ToolCalls)  # tool uses waiting for their results
    shell: ToolCalls = field(
        default_factory=ToolCalls
    )  # the user's `!` commands waiting for output


def parse_records(
    records: Iterable[tuple[int, dict[str, Any]]],
    source: str,
    report: ImportReport,
    *,
    default_session: str | None = None,
) -> list[SessionDraft]:
    """The sessions of Claude Code log lines (already parsed). DEFAULT_SESSION names the
    session of lines that carry no `sessionId` (a loglines export); without one such a
    line is malformed."""
    lines, titles, summaries, dropped = _check(records, source, report, default_session)
    route = _Router(lines, source)
    sessions: dict[str, _Session] = {}
    session_of_uuid: dict[str, str] = {}
    for line in lines:
        if line.uuid is not None and line.uuid in dropped:
            continue
        sid, parent = route.session(line)
        state = sessions.get(sid)
        if state is None:
            draft = SessionDraft(
                session_id=sid,
                channel="claude-code",
                source=f"claude-code:{Path(source).name}",
                parent_session=parent,
            )
            state = sessions[sid] = _Session(draft)
        if state.draft.cwd is None and isinstance(line.obj.get("cwd"), str):
            state.draft.cwd = line.obj["cwd"] or None  # every line says; the first counts
        if line.uuid is not None:
            session_of_uuid[line.uuid] = sid
        if line.kind == "assistant":
            _assistant(state, line)
        elif line.kind == "user":
            _user(state, line)
        else:
            _old_tool_line(state, line)
    for sid, state in sessions.items():
        for kind in ("custom-title", "ai-title"):
            if state.draft.topic is None and titles.get((sid, kind)):
                state.draft.topic = titles[(sid, kind)]
    # A summary line names the session that holds its leaf message; with no leaf to go
    # by, it can only be attributed when the file holds a single session.
    for summary, leaf in summaries:
        target = session_of_uuid.get(leaf) if isinstance(leaf, str) else None
        if target is None and len(sessions) == 1:
            target = next(iter(sessions))
        if target is not None and sessions[target].draft.topic is None:
            sessions[target].draft.topic = summary
    return [s.draft for s in sessions.values() if s.draft.turns]


def _check(
    records: Iterable[tuple[int, dict[str, Any]]],
    source: str,
    report: ImportReport,
    default_session: str | None,
) -> tuple[list[_Line], dict[tuple[str, str], str], list[tuple[str, Any]], set[str]]:
    """The conversation lines that pass their checks (each uuid once); the titles by
    (session, kind); the summary lines; the uuids other lines supersede or retract."""
    lines: list[_Line] = []
    titles: dict[tuple[str, str], str] = {}
    summaries: list[tuple[str, Any]] = []
    dropped: set[str] = set()
    seen: set[str] = set()
    repeated = 0
    for n, obj in records:
        kind = obj.get("type")
        if not isinstance(kind, str):
            report.skip_line(source, n, f"line type {kind!r} is not a string")
            continue
        for key in ("supersedesUuids", "retractedMessageUuids"):
            if isinstance(obj.get(key), list):
                dropped.update(u for u in obj[key] if isinstance(u, str))
        if kind == "summary":
            if isinstance(obj.get("summary"), str):
                summaries.append((obj["summary"], obj.get("leafUuid")))
            continue
        if kind in TITLE_FIELDS:
            title, sid = obj.get(TITLE_FIELDS[kind]), obj.get("sessionId") or default_session
            if isinstance(title, str) and title.strip() and isinstance(sid, str):
                titles[(sid, kind)] = title
            continue
        if kind in KNOWN_TYPES:
            continue
        if kind not in ("user", "assistant", "tool_use", "tool_result"):
            report.skip_line(source, n, f"unknown line type {kind!r}")
            continue
        if kind in ("user", "assistant"):
            msg = obj.get("message")
            if not isinstance(msg, dict) or "content" not in msg:
                report.skip_line(source, n, "no message.content")
                continue
        sid = obj.get("sessionId") or default_session
        if not isinstance(sid, str) or not sid:
            report.skip_line(source, n, "no sessionId")
            continue
        try:
            tf.validate_session_id(sid)
            when = parse_ts(obj.get("timestamp"), "timestamp")
        except TranscriptFormatError as exc:
            report.skip_line(source, n, str(exc).split(";")[0])
            continue
        uuid = obj.get("uuid") if isinstance(obj.get("uuid"), str) else None
        if uuid is not None:
            if uuid in seen:
                repeated += 1
                continue
            seen.add(uuid)
        parent = obj.get("parentUuid") if isinstance(obj.get("parentUuid"), str) else None
        lines.append(_Line(n, obj, kind, sid, when, uuid, parent, obj.get("isSidechain") is True))
    if repeated:
        report.warnings.append(
            f"{source}: {repeated} line(s) repeating an earlier uuid (a rewound branch) counted "
            "once"
        )
    return lines, titles, summaries, dropped


class _Router:
    """Which session each line belongs to: its own, or its subagent's."""

    def __init__(self, lines: list[_Line], source: str):
        self.by_uuid = {line.uuid: line for line in lines if line.uuid is not None}
        self._roots: dict[str, str] = {}
        # sidechain chains that main-conversation lines continue from are the main conversation
        self.main_roots = {
            self.root(self.by_uuid[line.parent])
            for line in lines
            if not line.sidechain
            and line.parent in self.by_uuid
            and self.by_uuid[line.parent].sidechain
        }
        self.numbers: dict[tuple[str, str], int] = {}
        name = Path(source).name
        folder = Path(source).parent
        m = _AGENT_FILE_RE.match(name)
        self.file_agent = m.group(1) if m else None
        # .../{session}/subagents/agent-*.jsonl names its parent session
        self.folder_parent = (
            folder.parent.name
            if folder.name == "subagents" and tf.SESSION_ID_RE.match(folder.parent.name)
            else None
        )

    def root(self, line: _Line) -> str:
        """The uuid (or line number) of the first line of LINE's sidechain chain."""
        path: list[str] = []
        current = line
        while True:
            key = current.uuid or f"line-{current.n}"
            if key in self._roots:
                root = self._roots[key]
                break
            path.append(key)
            parent = self.by_uuid.get(current.parent) if current.parent is not None else None
            if parent is None or not parent.sidechain or (parent.uuid or "") in path:
                root = key
                break
            current = parent
        for key in path:
            self._roots[key] = root
        return root

    def session(self, line: _Line) -> tuple[str, str | None]:
        """(session id, parent session or None) of LINE."""
        if not line.sidechain:
            return line.session, None
        agent = line.obj.get("agentId")
        if isinstance(agent, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,100}", agent):
            sid = agent if agent.startswith("agent-") else f"agent-{agent}"
        elif self.file_agent is not None:
            sid = f"agent-{self.file_agent}"
        else:
            root = self.root(line)
            if root in self.main_roots:
                return line.session, None
            number = self.numbers.setdefault(
                (line.session, root), 1 + sum(1 for s, _ in self.numbers if s == line.session)
            )
            sid = f"{line.session}-sidechain-{number}"
        return sid, (line.session if line.session != sid else self.folder_parent)


def _add_usage(state: _Session, msg: dict[str, Any], line: _Line) -> None:
    """Add MSG's token usage, once per API message (every line of it repeats the usage)."""
    key = str(msg["id"]) if isinstance(msg.get("id"), str) else f"line-{line.n}"
    if key in state.counted:
        return
    state.counted.add(key)
    usage = as_dict(msg.get("usage"))
    state.draft.tokens_in += (
        usage["input_tokens"]
        if isinstance(usage.get("input_tokens"), int) and usage["input_tokens"] > 0
        else 0
    )
    state.draft.tokens_out += (
        usage["output_tokens"]
        if isinstance(usage.get("output_tokens"), int) and usage["output_tokens"] > 0
        else 0
    )


def _clean_result(text: str) -> str:
    return _SYSTEM_REMINDER_RE.sub("", text).strip()


def _assistant(state: _Session, line: _Line) -> None:
    calls = state.calls
    msg = line.obj["message"]
    synthetic = msg.get("model") == SYNTHETIC_MODEL
    if msg.get("model") and not synthetic and not state.draft.model:
        state.draft.model = str(msg["model"])
    _add_usage(state, msg, line)
    mid = msg.get("id") if isinstance(msg.get("id"), str) else None
    turns = state.draft.turns
    # the next content block of the API message the last turn holds goes into that turn
    # (into its very list: a tool call's result is later written where the call is)
    merge = (
        not synthetic
        and mid is not None
        and mid == state.last_message
        and bool(turns)
        and turns[-1].role == "agent"
    )
    items: list[tf.Item] = turns[-1].items if merge else []
    content = msg["content"]
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            if block.strip():
                items.append(tf.Text(block))
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            items.append(tf.Text(block["text"]))
        elif block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
            calls.add(
                block.get("id"),
                items,
                tf.ToolCall(
                    str(block.get("name") or "tool"), args_summary(block.get("input")), None
                ),
            )
        elif str(block.get("type", "")).endswith("tool_result"):
            anthropic_tool_result(block, calls, items, _clean_result)
        elif block.get("type") in ("image", "document"):
            items.append(anthropic_attachment(block))
    if merge or not items:
        return
    if synthetic:
        state.draft.add_turn(line.when, "system", items)
        state.last_message = None
        return
    state.draft.add_turn(line.when, "agent", items)
    state.last_message = mid


def _user_text(text: str, shell: ToolCalls, items: list[tf.Item], system: list[str]) -> None:
    """A user text block: bookkeeping dropped, notices to SYSTEM, the user's `!` shell
    commands as tool calls, the rest as text."""
    text = _SYSTEM_REMINDER_RE.sub("", text)
    if not text.strip() or _BOOKKEEPING_RE.fullmatch(text):
        return
    stripped = text.strip()
    if _INTERRUPTED_RE.match(stripped):
        system.append(stripped)
        return
    if _TASK_NOTE_RE.match(stripped):
        m = _SUMMARY_TAG_RE.search(stripped)
        system.append(m.group(1).strip() if m else stripped)
        return
    commands = _BASH_RE.findall(text)
    if commands:
        for kind, body in commands:
            if kind == "input":
                shell.add(None, items, tf.ToolCall("bash", body.strip(), None))
            elif body.strip():
                shell.resolve(None, body.strip())
        return
    items.append(tf.Text(text))


def _user(state: _Session, line: _Line) -> None:
    calls = state.calls
    content = line.obj["message"]["content"]
    meta = (
        line.obj.get("isMeta") is True
    )  # injected by Claude Code, not typed: only its tool results count
    items: list[tf.Item] = []
    system: list[str] = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            if not meta:
                _user_text(block, state.shell, items, system)
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "tool_result":
            anthropic_tool_result(block, calls, items, _clean_result)
        elif meta:
            continue
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            _user_text(block["text"], state.shell, items, system)
        elif block.get("type") in ("image", "document"):
            items.append(anthropic_attachment(block))
    if line.obj.get("isCompactSummary") is True:
        text = "\n\n".join(i.content for i in items if isinstance(i, tf.Text))
        system.append(text)
        items = [i for i in items if not isinstance(i, tf.Text)]
    if items:
        # results that answer no call seen belong with the agent's tool use
        orphans = all(
            isinstance(i, tf.Attachment) or (isinstance(i, tf.ToolCall) and i.tool == "result")
            for i in items
        )
        role = "agent" if orphans and any(isinstance(i, tf.ToolCall) for i in items) else "user"
        state.draft.add_turn(line.when, role, items)
        state.last_message = None
    for text in system:
        if text.strip():
            state.draft.add_turn(line.when, "system", [tf.Text(text)])
            state.last_message = None


def _old_tool_line(state: _Session, line: _Line) -> None:
    """`tool_use`/`tool_result` lines of their own (logs before tools moved into messages)."""
    calls = state.calls
    obj = line.obj
    if line.kind == "tool_use":
        items: list[tf.Item] = []
        calls.add(
            obj.get("id") or obj.get("tool_use_id"),
            items,
            tf.ToolCall(str(obj.get("name") or "tool"), args_summary(obj.get("input")), None),
        )
        state.draft.add_turn(line.when, "agent", items)
        state.last_message = None
        return
    result = content_text(obj.get("output", obj.get("content"))).strip()
    if obj.get("is_error") and not result.startswith("error"):
        result = f"error: {result}".strip()
    if not calls.resolve(obj.get("tool_use_id") or obj.get("id"), result or None):
        state.draft.add_turn(
            line.when, "agent", [tf.ToolCall(str(obj.get("name") or "result"), "", result or None)]
        )
        state.last_message = None
