"""The ChatGPT data export's `conversations.json`: a list of conversations (or one), each
a tree of message nodes in `mapping` (`id`, `parent`, `children`, `message`).

Each conversation is one transcript. Its turns are the branch the user last saw: from
`current_node` up through the parents to the root, then read root first; the other
branches (regenerated answers, edited prompts) stay out. When `current_node` is missing
the newest leaf stands in for it.

An assistant message addressed to a tool (`recipient` other than `all`) is a tool call,
and the `tool` message that answers it fills in its result. Thoughts, reasoning recaps,
the user's custom instructions (`user_editable_context`) and system messages are not
conversation and are left out. Image pointers and uploaded files become attachment
lines. Times are the messages' `create_time`; a message without one takes the time
before it (the first, the conversation's, else the first message's that has one), and no
turn is placed before the one it answers.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    advise_format,
    json_probe,
    looks_like_jsonl,
)
from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    first_time,
    mapping,
    nonempty_str,
    read_export,
    safe_session_id,
    sequence,
    stable_id,
    string,
)
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import ImportFormatError, TimestampError
from autopoiesis.formats import transcript as tf
from autopoiesis.integrations.responses.importer import call_args

SKIPPED_CONTENT = frozenset(
    {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}
)


def _is_conversation(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("mapping"), dict)


def _active_path(tree: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from the root to CURRENT (else the newest leaf), root first."""
    if not isinstance(current, str) or current not in tree:
        leaves = [k for k, n in tree.items() if isinstance(n, dict) and not n.get("children")]
        # the newest leaf: the one whose branch holds the latest create_time
        current = max(
            leaves,
            key=lambda leaf: max((_created(n) for n in _walk_up(tree, leaf)), default=0.0),
            default=None,
        )
    return _walk_up(tree, current)[::-1]


def _created(node: dict[str, Any]) -> float:
    value = mapping(node.get("message")).get("create_time")
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
        else 0.0
    )


def _walk_up(tree: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from CURRENT up to the root (a cycle ends the walk)."""
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(current, str) and current in tree and current not in seen:
        seen.add(current)
        node = tree[current]
        if not isinstance(node, dict):
            break
        path.append(node)
        current = node.get("parent")
    return path


def _content(content: dict[str, Any]) -> tuple[str, list[tf.Item]]:
    """(text, attachments) of a message's content, whatever its content_type."""
    texts: list[str] = []
    attachments: list[tf.Item] = []
    for part in sequence(content.get("parts")):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif "asset_pointer" in part:
                attachments.append(
                    tf.Attachment(str(part.get("asset_pointer") or "image (not stored)"))
                )
    if not any(t.strip() for t in texts):
        for key in ("text", "result", "output_str"):
            if isinstance(content.get(key), str) and content[key].strip():
                texts = [content[key]]
                break
    return "\n\n".join(t for t in texts if t.strip()), attachments


class ChatGPTImporter:
    name = "chatgpt"
    description = "ChatGPT export conversations.json (mapping trees, current branch only)"

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text):
            return 0.0
        probe = json_probe(text)
        if not _is_conversation(probe):
            return 0.0
        if "current_node" in probe or "create_time" in probe:
            return 0.95
        # one conversation as the web app's API gives it (`id`, `title`, `mapping`), or any
        # object whose mapping is ChatGPT's tree of message nodes
        nodes = list(probe["mapping"].values())[:20]
        tree = any(isinstance(n, dict) and "children" in n and "message" in n for n in nodes)
        return 0.9 if tree or ("id" in probe and "title" in probe) else 0.0

    @advise_format
    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        return read_export(
            path,
            text,
            report,
            export="ChatGPT",
            is_conversation=_is_conversation,
            needs="a mapping",
            read_one=lambda conv, where: _conversation(conv, where, path.name, report),
            refusals=(ImportFormatError, TimestampError),
        )


def _conversation(
    conv: dict[str, Any], where: str, filename: str, report: ImportReport
) -> SessionDraft:
    title = nonempty_str(conv.get("title"))
    sid = safe_session_id(conv.get("conversation_id"), conv.get("id")) or stable_id(
        "chatgpt", title, conv.get("create_time")
    )
    draft = SessionDraft(
        session_id=sid,
        channel="chatgpt",
        topic=title,
        source=f"chatgpt:{filename}",
        model=nonempty_str(conv.get("default_model_slug")),
    )
    path = _active_path(conv["mapping"], conv.get("current_node"))
    # without a readable time of its own, the conversation starts at its first message's
    # that has one: a first message without one then takes it, rather than refuse every
    # message of the conversation for the want of one time
    draft.started = first_time(
        conv.get("create_time"),
        *(mapping(node.get("message")).get("create_time") for node in path),
        conv.get("update_time"),
        field="create_time",
    )
    reader = _Branch(draft, where, report, draft.started)
    for node in path:
        reader.node(node)
    return draft


def _is_shown(msg: dict[str, Any], role: str | None, meta: dict[str, Any]) -> bool:
    """Whether MSG is conversation: not the system prompt, thoughts, custom instructions
    or a message the ChatGPT UI hides."""
    hidden = meta.get("is_visually_hidden_from_conversation")
    skipped = string(msg["content"].get("content_type")) in SKIPPED_CONTENT
    return role != "system" and not skipped and not hidden


class _Branch:
    """The turns of one conversation's active branch, read node by node into DRAFT.
    CLOCK is the time of the message before: a message without a readable time takes it."""

    def __init__(
        self, draft: SessionDraft, where: str, report: ImportReport, clock: datetime | None
    ) -> None:
        self.draft, self.where, self.report, self.clock = draft, where, report, clock
        self.calls = ToolCalls()

    def node(self, node: dict[str, Any]) -> None:
        msg = node.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), dict):
            return
        author = mapping(msg.get("author"))
        role = string(author.get("role"))
        meta = mapping(msg.get("metadata"))
        if not _is_shown(msg, role, meta):
            return
        when = self._time(msg)
        text, items = _content(msg["content"])
        if role == "user":
            self._user(when, meta, text, items)
        elif role == "assistant":
            self._assistant(when, node, msg, meta, text, items)
        elif role == "tool":
            self._tool(when, node, nonempty_str(author.get("name")), text, items)

    def _time(self, msg: dict[str, Any]) -> datetime:
        """MSG's create_time, else the time before it; ImportFormatError when neither is."""
        try:
            if msg.get("create_time") is not None:
                self.clock = parse_ts(msg["create_time"], "create_time")
        except TimestampError as exc:  # an unreadable time: the message keeps the time before it
            why = str(exc).split(";")[0]
            self.report.warnings.append(
                f"{self.where}: message {msg.get('id')!r}: {why}; it keeps the time before it"
            )
        if self.clock is None:
            raise ImportFormatError(
                f"message {msg.get('id')!r} has no readable create_time and "
                "neither has the conversation; it was not imported."
            )
        return self.clock

    def _user(self, when: datetime, meta: dict[str, Any], text: str, items: list[tf.Item]) -> None:
        names = [a.get("name") for a in sequence(meta.get("attachments")) if isinstance(a, dict)]
        items += [tf.Attachment(str(n)) for n in names if n]
        if text or items:
            self.draft.add_turn(when, "user", ([tf.Text(text)] if text else []) + items)

    def _assistant(
        self,
        when: datetime,
        node: dict[str, Any],
        msg: dict[str, Any],
        meta: dict[str, Any],
        text: str,
        items: list[tf.Item],
    ) -> None:
        if self.draft.model is None and nonempty_str(meta.get("model_slug")):
            self.draft.model = meta["model_slug"]
        recipient = msg.get("recipient")
        if isinstance(recipient, str) and recipient not in ("all", ""):  # to a tool: a call
            call = tf.ToolCall(recipient, call_args(text), None)
            self.calls.add(node.get("id") or msg.get("id"), _agent_items(self.draft, when), call)
        elif text or items:
            self.draft.add_turn(when, "agent", ([tf.Text(text)] if text else []) + items)

    def _tool(
        self,
        when: datetime,
        node: dict[str, Any],
        name: str | None,
        text: str,
        items: list[tf.Item],
    ) -> None:
        result = text or ("image (not stored)" if items else "")
        if self.calls.resolve(node.get("parent"), result or None):
            return  # the answer to the call its parent node made
        if self.calls.resolve_oldest(name, result or None):
            return
        if result:
            _agent_items(self.draft, when).append(tf.ToolCall(name or "tool", "", result))


def _agent_items(draft: SessionDraft, when: datetime) -> list[tf.Item]:
    if draft.turns and draft.turns[-1].role == "agent":
        return draft.turns[-1].items
    return draft.add_turn(when, "agent", []).items
