"""A user message of a Cline, Roo Code or Kilo Code task, read back into the conversation.

Every user message after the first is what the harness sends the model after an
assistant message: the results of that message's tool calls, what the user said, and
the harness's own notices and reminders, as text blocks (or `tool_result` blocks):

* `[read_file for 'a.py'] Result:` and the output (in the same block, or the next; text
  blocks after it until the next marker continue it) answers the first call of that tool
  the assistant message made that is still waiting; a name that no waiting call has
  (`[subagents]` for `use_subagents`) answers the oldest. Calls a message leaves
  unanswered (a task interrupted at a question, resumed days later) keep their line
  without a result: a later result never fills them.
* The user's words are wrapped: `<task>`, `<feedback>`, `<answer>` (a question's answer,
  inside its result), `<user_message>` (a resumption's new instructions); they are the
  user's turn, in the order they came, and the harness's wording around them is dropped.
  `<file_content path=...>` (a file the user mentioned or attached) is an attachment line.
* Notices the harness writes to the model (`[TASK RESUMPTION] ...`, `[ERROR] ...`) are
  system items, by their first sentence; reminders it injects (`# task_progress ...`,
  `# TODO LIST UPDATE REQUIRED ...`, "(The user did not provide a new message ...)",
  "The user has provided feedback on the results ...") are dropped, as is
  `<environment_details>`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autopoiesis.capture.importers.shapes import (
    ToolCalls,
    anthropic_attachment,
    anthropic_tool_result,
)
from autopoiesis.formats import transcript as tf

ENV_RE = re.compile(r"<environment_details>.*?(?:</environment_details>|\Z)", re.S)
_RESULT_HEAD_RE = re.compile(r"^\s*\[([A-Za-z0-9_.:-]+)(?: for '(.*?)')?\] Result:[ \t]*\n?", re.S)
_USER_TAG_RE = re.compile(r"<(task|feedback|answer|user_message)>\n?(.*?)\n?</\1>", re.S)
_FILE_RE = re.compile(r'<file_content path="([^"\n]*)">.*?(?:</file_content>|\Z)', re.S)
# The harness's reminders: from their heading to the end of the block they end.
_REMINDER_RE = re.compile(
    r"[ \t\n]*# (?:task_progress (?:List|RECOMMENDED)|TODO LIST UPDATE REQUIRED)\b.*\Z", re.S
)
_DROPPED_RE = re.compile(
    r"^\s*(?:\(The user did not provide a new message\..*\)"
    r"|The user has provided feedback on the results\. Consider their input.*"
    r"|Files attached by the user:)\s*$",
    re.S,
)
# The harness's words around a user's wrapped message (what is left once it is taken out).
_PREAMBLE_RE = re.compile(
    r"(?:The user (?:has )?provided the following feedback(?: to help guide you)?:"
    r"|You seem to be having trouble proceeding\.(?: The user has provided the following "
    r"feedback to help guide you:)?"
    r"|New instructions for task continuation:"
    r"|New message to respond to with plan_mode_respond tool \([^)]*\):"
    r"|Files attached by the user:)\s*"
)
_NOTICE_RE = re.compile(r"^\s*\[(TASK RESUMPTION|ERROR|NOTE)\]\s*(.*?)(?:\n\n|\Z)", re.S)
_NOT_RUN_RE = re.compile(r"^\s*Tool \[([A-Za-z0-9_.:-]+)\] was not executed because (.*?)\.", re.S)


@dataclass
class _Result:
    """A `[tool] Result:` being read: its text may go on in the blocks after it."""

    tool: str
    args: str
    parts: list[str] = field(default_factory=list)
    images: list[tf.Item] = field(default_factory=list)


class UserMessage:
    """The segments of one user message, in order: (role, items) with role agent (results
    that answer no call seen), user or system."""

    def __init__(self, calls: ToolCalls) -> None:
        self.calls = calls
        self.segments: list[tuple[str, list[tf.Item]]] = []
        self._open: _Result | None = None

    def emit(self, role: str, item: tf.Item) -> None:
        if self.segments and self.segments[-1][0] == role:
            self.segments[-1][1].append(item)
        else:
            self.segments.append((role, [item]))

    def user_text(self, text: str) -> None:
        """Text the user wrote, with the files it names as attachment lines."""
        for path in _FILE_RE.findall(text):
            self.emit("user", tf.Attachment(path))
        rest = _PREAMBLE_RE.sub("", _FILE_RE.sub("", text)).strip()
        if rest:
            self.emit("user", tf.Text(rest))

    def take_user_parts(self, text: str) -> str:
        """Emit the user's wrapped words in TEXT; what is left of it."""
        found = False
        for _, body in _USER_TAG_RE.findall(text):
            self.user_text(body)
            found = True
        if not found:
            return text
        rest = _USER_TAG_RE.sub("", text)
        for path in _FILE_RE.findall(rest):  # the files the user's words mention
            self.emit("user", tf.Attachment(path))
        return _PREAMBLE_RE.sub("", _FILE_RE.sub("", rest)).strip()

    def close(self) -> None:
        """Answer the call of the result being read."""
        r, self._open = self._open, None
        if r is None:
            return
        text = self.take_user_parts(_REMINDER_RE.sub("", "\n\n".join(r.parts)).strip())
        text = _FILE_RE.sub(lambda m: f"[file {m.group(1)}]", text).strip()
        if self.calls.resolve_oldest(r.tool, text or None, any_tool=True):
            for image in r.images:
                self.calls.attach_to_last(image)
            return
        self.emit("agent", tf.ToolCall(r.tool, r.args, text or None))
        for image in r.images:
            self.emit("agent", image)

    def block(self, block: Any) -> None:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            self.close()
            orphans: list[tf.Item] = []
            anthropic_tool_result(block, self.calls, orphans, self._clean_result())
            for item in orphans:
                self.emit("agent", item)
            return
        if isinstance(block, dict) and block.get("type") in ("image", "document"):
            image = anthropic_attachment(block)
            if self._open is not None:
                self._open.images.append(image)
            else:
                self.emit("user", image)
            return
        text = block if isinstance(block, str) else as_text(block)
        if text is not None:
            self.text(ENV_RE.sub("", text))

    def _clean_result(self) -> Callable[[str], str]:
        def clean(text: str) -> str:
            return self.take_user_parts(_REMINDER_RE.sub("", ENV_RE.sub("", text)).strip())

        return clean

    def text(self, text: str) -> None:
        if not text.strip():
            return
        head = _RESULT_HEAD_RE.match(text)
        if head is not None:
            self.close()
            self._open = _Result(head.group(1), head.group(2) or "", [text[head.end() :]])
            return
        cut = _REMINDER_RE.sub("", text)
        if not cut.strip() or _DROPPED_RE.match(cut):
            self.close()
            return
        notice = _NOTICE_RE.match(cut)
        not_run = _NOT_RUN_RE.match(cut)
        if notice is not None or not_run is not None or _USER_TAG_RE.search(cut):
            self.close()
        if notice is not None:
            first = re.split(r"(?<=[.!?])\s", notice.group(2).strip(), maxsplit=1)[0]
            self.emit("system", tf.Text(f"[{notice.group(1)}] {first}"))
        elif not_run is not None:
            why = f"not executed: {not_run.group(2)}"
            if not self.calls.resolve_oldest(not_run.group(1), why):
                self.emit("system", tf.Text(cut.strip()))
        elif self._open is not None:
            self._open.parts.append(cut)  # the result goes on
        else:
            rest = self.take_user_parts(cut)
            if rest:
                self.user_text(rest)


def as_text(block: Any) -> str | None:
    """The text of a text block (or a block holding text), else None."""
    if isinstance(block, dict) and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def read_user_message(blocks: list[Any], calls: ToolCalls) -> list[tuple[str, list[tf.Item]]]:
    """The (role, items) segments of a user message's BLOCKS; the calls it leaves
    unanswered wait no longer."""
    message = UserMessage(calls)
    for block in blocks:
        message.block(block)
    message.close()
    calls.unanswered()
    return message.segments
