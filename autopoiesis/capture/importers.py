"""Import finished sessions: the neutral JSON format, OpenAI chat-completions messages,
and Claude Code JSONL session logs.

The neutral format (one session per object; a file may hold one object, a list of them,
or one per line)::

    {"session_id": "ses_1", "started": "2026-02-16T18:45:00Z", "ended": "...",
     "model": "gpt-4o", "channel": "webchat", "topic": "optional", "tags": ["optional"],
     "messages": [{"role": "user", "name": "optional speaker", "content": "...",
                   "timestamp": "2026-02-16T18:45:10Z",
                   "tool_calls": [{"tool": "exec", "args": "ls", "result": "3 files"}]}]}

Every importer builds a closed Transcript in memory (redacted), then `file_sessions`
writes each under its own date and commits them together. A session already imported
with the same content is skipped; one with the same id but other content is refused,
because transcripts are immutable.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from autopoiesis.core.redact import Redactor, redactor_from_config
from autopoiesis.capture.session import find_transcripts, normalize_role
from autopoiesis.errors import CaptureError, ImportFormatError, TranscriptFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.core.paths import MemoryRepo, atomic_write

FORMATS = ("auto", "neutral", "openai", "claude-code")
CLAUDE_CODE_SKIPPED_TYPES = {"file-history-snapshot", "queue-operation", "mode", "system", "progress"}


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)  # repo-relative paths written
    skipped_duplicates: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # messages
    warnings: list[str] = field(default_factory=list)
    bad_lines: int = 0
    commit: str | None = None


@dataclass
class _Draft:
    """A session being assembled before it becomes a Transcript."""

    session_id: str
    model: str | None = None
    channel: str | None = None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    started: datetime | None = None
    ended: datetime | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    turns: list[dict[str, Any]] = field(default_factory=list)  # {time, role, name, items: list}
    source: str | None = None

    def add_turn(self, when: datetime, role: str, items: list[tf.Item], name: str | None = None) -> dict[str, Any]:
        turn = {"time": when, "role": role, "name": name, "items": items}
        self.turns.append(turn)
        return turn


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI content parts / Claude blocks
        parts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


def _args_summary(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, TypeError):
            return value
    if isinstance(value, dict):
        # the most telling argument first: a command, a path, a query
        for key in ("command", "file_path", "path", "query", "url", "pattern", "description"):
            if isinstance(value.get(key), str):
                rest = {k: v for k, v in value.items() if k != key}
                return value[key] + (f" {json.dumps(rest, ensure_ascii=False)}" if rest and key != "command" else "")
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value is not None else ""


# ── neutral ──
def parse_neutral(data: Any, source: str) -> list[_Draft]:
    objs = data if isinstance(data, list) else [data]
    drafts = []
    for n, obj in enumerate(objs):
        where = f"{source}[{n}]" if isinstance(data, list) else source
        if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
            raise ImportFormatError(f"{where}: a neutral session is an object with session_id, started and a messages list.")
        if not obj.get("session_id"):
            raise ImportFormatError(f"{where}: session_id is missing; give each session a stable id.")
        d = _Draft(
            session_id=str(obj["session_id"]),
            model=obj.get("model"),
            channel=obj.get("channel"),
            topic=obj.get("topic"),
            tags=tuple(str(t) for t in obj.get("tags") or ()),
            started=tf.parse_ts(obj["started"], f"{where}: started") if obj.get("started") else None,
            ended=tf.parse_ts(obj["ended"], f"{where}: ended") if obj.get("ended") else None,
            tokens_in=int(obj.get("tokens_in") or 0),
            tokens_out=int(obj.get("tokens_out") or 0),
        )
        clock = d.started
        for i, msg in enumerate(obj["messages"]):
            if not isinstance(msg, dict):
                raise ImportFormatError(f"{where}: messages[{i}] must be an object with role and content.")
            try:
                role = normalize_role(msg.get("role"))
            except CaptureError as exc:
                raise ImportFormatError(f"{where}: messages[{i}]: {exc}") from None
            when = tf.parse_ts(msg["timestamp"], f"{where}: messages[{i}].timestamp") if msg.get("timestamp") else clock
            if when is None:
                raise ImportFormatError(f"{where}: messages[{i}] has no timestamp and the session no started time.")
            clock = when
            items: list[tf.Item] = []
            if _text(msg.get("content")):
                items.append(tf.Text(_text(msg.get("content"))))
            for call in msg.get("tool_calls") or []:
                if isinstance(call, dict):
                    items.append(tf.ToolCall(str(call.get("tool") or call.get("name") or "tool"),
                                             _args_summary(call.get("args")), _text(call.get("result")) or None))
            for att in msg.get("attachments") or []:
                items.append(tf.Attachment(str(att)))
            d.add_turn(when, role, items, msg.get("name"))
        drafts.append(d)
    return drafts


# ── OpenAI chat-completions ──
def parse_openai(data: Any, source: str, fallback_time: datetime) -> list[_Draft]:
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        messages, info = data["messages"], data
    elif isinstance(data, list) and all(isinstance(m, dict) and "role" in m for m in data):
        messages, info = data, {}
    else:
        raise ImportFormatError(f"{source}: expected a list of chat messages or an object with a messages list.")
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")
    sid = str(info.get("session_id") or info.get("id") or "oai_" + hashlib.sha256(canonical).hexdigest()[:16])
    started = tf.parse_ts(info["created"], "created") if info.get("created") else fallback_time
    d = _Draft(session_id=sid, model=info.get("model"), channel=info.get("channel") or "openai", started=started)
    tool_slots: dict[str, tuple[list[tf.Item], int]] = {}
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "tool":
            key = str(msg.get("tool_call_id"))
            if key in tool_slots:
                items, idx = tool_slots[key]
                call = items[idx]
                assert isinstance(call, tf.ToolCall)
                items[idx] = tf.ToolCall(call.tool, call.args, _text(msg.get("content")) or None)
            continue
        try:
            norm = normalize_role(role)
        except CaptureError as exc:
            raise ImportFormatError(f"{source}: messages[{i}]: {exc}") from None
        items: list[tf.Item] = []
        if _text(msg.get("content")):
            items.append(tf.Text(_text(msg.get("content"))))
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or {}
            items.append(tf.ToolCall(str(fn.get("name") or "tool"), _args_summary(fn.get("arguments")), None))
            tool_slots[str(call.get("id"))] = (items, len(items) - 1)
        d.add_turn(started, norm, items, msg.get("name"))
    return [d]


# ── Claude Code JSONL ──
def parse_claude_code(lines: Iterable[str], source: str, report: ImportReport) -> list[_Draft]:
    drafts: dict[str, _Draft] = {}
    calls: dict[str, tuple[list[tf.Item], int]] = {}
    summaries: list[tuple[str, str | None]] = []  # (summary, leafUuid)
    session_of_uuid: dict[str, str] = {}

    def bad(n: int, why: str) -> None:
        report.bad_lines += 1
        report.warnings.append(f"{source}:{n}: skipped ({why})")

    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad(n, "not JSON")
            continue
        if not isinstance(obj, dict):
            bad(n, f"a JSON {type(obj).__name__}, not an object")
            continue
        kind = obj.get("type")
        if kind == "summary":
            if isinstance(obj.get("summary"), str):
                summaries.append((obj["summary"], obj.get("leafUuid")))
            continue
        if kind in CLAUDE_CODE_SKIPPED_TYPES:
            continue
        if kind not in ("user", "assistant"):
            bad(n, f"unknown line type {kind!r}")
            continue
        msg = obj.get("message")
        if not isinstance(msg, dict) or "content" not in msg:
            bad(n, "no message.content")
            continue
        sid = obj.get("sessionId")
        if not isinstance(sid, str) or not sid:
            bad(n, "no sessionId")
            continue
        try:
            tf.validate_session_id(sid)
            when = tf.parse_ts(obj.get("timestamp"), "timestamp")
        except TranscriptFormatError as exc:
            bad(n, str(exc).split(";")[0])
            continue
        d = drafts.get(sid)
        if d is None:
            d = drafts[sid] = _Draft(session_id=sid, channel="claude-code", source=f"claude-code:{Path(source).name}")
        if isinstance(obj.get("uuid"), str):
            session_of_uuid[obj["uuid"]] = sid
        if kind == "assistant" and msg.get("model") and not d.model:
            d.model = str(msg["model"])
        usage = msg.get("usage") if isinstance(msg.get("usage"), dict) else {}
        d.tokens_in += int(usage.get("input_tokens") or 0) if isinstance(usage.get("input_tokens"), int) else 0
        d.tokens_out += int(usage.get("output_tokens") or 0) if isinstance(usage.get("output_tokens"), int) else 0
        content = msg["content"]
        items: list[tf.Item] = []
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, str):
                if block.strip():
                    items.append(tf.Text(block))
            elif not isinstance(block, dict):
                continue
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                items.append(tf.Text(block["text"]))
            elif block.get("type") == "tool_use":
                items.append(tf.ToolCall(str(block.get("name") or "tool"), _args_summary(block.get("input")), None))
                calls[str(block.get("id"))] = (items, len(items) - 1)
            elif block.get("type") == "tool_result":
                key = str(block.get("tool_use_id"))
                result = _text(block.get("content")) or ("error" if block.get("is_error") else "")
                if block.get("is_error"):
                    result = f"error: {result}" if not result.startswith("error") else result
                if key in calls:
                    target, idx = calls[key]
                    old = target[idx]
                    assert isinstance(old, tf.ToolCall)
                    target[idx] = tf.ToolCall(old.tool, old.args, result or None)
                else:
                    items.append(tf.ToolCall("result", key, result or None))
            elif block.get("type") == "image":
                items.append(tf.Attachment("image (not stored)"))
            # "thinking" blocks are left out on purpose (design §2.1: reasoning is excluded)
        if not items:
            continue
        role = "agent" if kind == "assistant" else "user"
        if role == "user" and all(isinstance(i, tf.ToolCall) for i in items):
            role = "agent"  # orphan tool results belong with the agent's tool use
        d.add_turn(when, role, items)
    # A summary line names the session that holds its leaf message; with no leaf to go
    # by, it can only be attributed when the file holds a single session.
    for summary, leaf in summaries:
        sid = session_of_uuid.get(leaf) if isinstance(leaf, str) else None
        if sid is None and len(drafts) == 1:
            sid = next(iter(drafts))
        if sid is not None and drafts[sid].topic is None:
            drafts[sid].topic = summary
    return [d for d in drafts.values() if d.turns]


def _detect(path: Path, text: str) -> str:
    stripped = text.lstrip()
    if path.suffix == ".jsonl" or ("\n{" in stripped and not stripped.startswith("[")):
        first = stripped.splitlines()[0] if stripped else ""
        try:
            obj = json.loads(first)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "messages" in obj and "session_id" in obj:
            return "neutral"
        return "claude-code"
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ImportFormatError(f"{path}: not JSON ({exc}); pass --format claude-code for a JSONL log.") from None
    probe = data[0] if isinstance(data, list) and data else data
    if isinstance(probe, dict) and "session_id" in probe and "messages" in probe:
        return "neutral"
    if isinstance(probe, dict) and ("role" in probe or "messages" in probe):
        return "openai"
    raise ImportFormatError(
        f"{path}: cannot tell the format; pass --format neutral, openai or claude-code."
    )


def read_sessions(path: Path, fmt: str, report: ImportReport) -> list[_Draft]:
    if fmt not in FORMATS:
        raise ImportFormatError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise ImportFormatError(f"{path} looks binary (NUL bytes); import takes JSON or JSONL text.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path} is not valid UTF-8 (byte {exc.start}); re-encode it as UTF-8.") from None
    if fmt == "auto":
        fmt = _detect(path, text)
    if fmt == "claude-code":
        return parse_claude_code(text.splitlines(), str(path), report)
    if fmt == "neutral" and path.suffix == ".jsonl":
        drafts = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    drafts.extend(parse_neutral(json.loads(line), f"{path}:{n}"))
                except ValueError:
                    report.bad_lines += 1
                    report.warnings.append(f"{path}:{n}: skipped (not JSON)")
        return drafts
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
    if fmt == "neutral":
        return parse_neutral(data, str(path))
    mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc).replace(second=0, microsecond=0)
    return parse_openai(data, str(path), mtime)


def draft_to_transcript(draft: _Draft, redactor: Redactor, max_bytes: int) -> tf.Transcript:
    tf.validate_session_id(draft.session_id)
    redactor.counts.clear()
    red = redactor.redact
    turns = []
    for t in draft.turns:
        items: list[tf.Item] = []
        for it in t["items"]:
            if isinstance(it, tf.Text):
                content = it.content
                if len(content.encode("utf-8", "replace")) > max_bytes:
                    content = content.encode("utf-8", "replace")[:max_bytes].decode("utf-8", "ignore") + "\n[truncated]"
                items.append(tf.Text(red(content)))
            elif isinstance(it, tf.ToolCall):
                items.append(tf.ToolCall(red(tf.one_line(it.tool, 80)), red(tf.one_line(it.args)), red(tf.one_line(it.result)) if it.result else None))
            else:
                items.append(it)
        turns.append(tf.Turn(time=tf.utc(t["time"]), role=t["role"], items=tuple(items), name=t["name"]))
    turns.sort(key=lambda t: t.time)  # stable: equal times keep their order
    started = draft.started or turns[0].time
    ended = draft.ended or (turns[-1].time if turns else started)
    meta = tf.TranscriptMeta(
        session_id=draft.session_id,
        started=started,
        ended=max(ended, started),
        model=draft.model,
        channel=draft.channel,
        topic=red(tf.one_line(draft.topic, 200)) if draft.topic else None,
        tags=draft.tags,
        tokens_in=draft.tokens_in,
        tokens_out=draft.tokens_out,
        status="closed",
        source=draft.source,
        redactions=tuple(sorted(redactor.counts.items())),
    )
    slug = tf.slug_from_turns(turns, meta.topic)
    # render-normalise once so the in-memory transcript equals what is on disk
    rendered = tf.render(tf.Transcript(meta, tf.title_from_slug(slug, meta.session_id), tuple(turns)))
    return tf.parse(rendered)


def _same_content(a: tf.Transcript, b: tf.Transcript) -> bool:
    def shape(t: tf.Transcript) -> list[Any]:
        return [(x.role, x.name, x.memory, x.items) for x in t.turns]

    return shape(a) == shape(b)


def file_sessions(repo: MemoryRepo, transcripts: list[tf.Transcript], report: ImportReport, *, commit: bool = True) -> None:
    """Write each transcript under its own date; skip exact re-imports; commit them together."""
    written: list[str] = []
    for t in transcripts:
        sid = t.meta.session_id
        existing = find_transcripts(repo, sid, t.meta.started) or find_transcripts(repo, sid)
        if existing:
            try:
                old = tf.parse(existing[0].read_text(encoding="utf-8"), repo.rel(existing[0]))
            except (TranscriptFormatError, UnicodeDecodeError):
                old = None
            if old is not None and _same_content(old, t):
                report.skipped_duplicates.append(repo.rel(existing[0]))
                continue
            report.refused.append(
                f"session {sid} already exists as {repo.rel(existing[0])} with other content; transcripts are "
                "immutable, so import the new version under another session_id."
            )
            continue
        if not t.turns:
            report.warnings.append(f"session {sid} has no messages; nothing imported")
            continue
        slug = tf.slug_from_turns(t.turns, t.meta.topic)
        rel = tf.transcript_relpath(sid, t.meta.started, slug)
        atomic_write(repo.root / rel, tf.render(t))
        written.append(rel)
    report.imported.extend(written)
    if commit and written:
        from autopoiesis.gitops import MemoryGit

        if len(written) == 1:
            stem = Path(written[0]).stem
            msg = f"conversation: {stem[5:]}\n\nSession: {written[0]}\n"
        else:
            msg = f"conversation: import {len(written)} sessions\n\n" + "".join(f"Session: {p}\n" for p in written)
        report.commit = MemoryGit(repo).commit_paths(written, msg).sha


def import_files(repo: MemoryRepo, paths: Iterable[str | os.PathLike[str]], fmt: str = "auto", *, commit: bool = True) -> ImportReport:
    report = ImportReport()
    redactor = redactor_from_config(repo.config)
    transcripts: list[tf.Transcript] = []
    for p in paths:
        path = Path(p)
        if not path.is_file():
            report.refused.append(f"{path}: no such file")
            continue
        try:
            drafts = read_sessions(path, fmt, report)
        except (ImportFormatError, TranscriptFormatError) as exc:
            report.refused.append(str(exc))
            continue
        if not drafts:
            report.warnings.append(f"{path}: no conversation found")
        for d in drafts:
            try:
                transcripts.append(draft_to_transcript(d, redactor, repo.config.capture.max_message_bytes))
            except (TranscriptFormatError, IndexError) as exc:
                report.refused.append(f"{path}: session {d.session_id!r}: {exc}")
    file_sessions(repo, transcripts, report, commit=commit)
    return report
