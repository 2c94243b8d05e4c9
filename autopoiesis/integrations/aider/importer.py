"""Aider chat histories (`.aider.chat.history.md` in the project folder), as aider's
`InputOutput` appends them::

    # aider chat started at 2025-10-23 17:04:56     a session; aider's local time
    > Aider v0.86.1                                  aider's own output: `> ` and two trailing
    spaces
    #### the user's message                          user input: every line `#### `, two trailing
    spaces
    the model's reply                                plain Markdown

A file holds every session ever run in that project; each becomes its own transcript,
`aider-<UTC start>`. The times are read in this machine's time zone (aider writes local
time without saying which; set TZ when importing another machine's file), and every turn
of a session carries its start time (aider writes no other).

Commands the user typed are bookkeeping (`/add`, `/drop`, `/model`, ...) except those that
carry a message (`/ask`, `/code`, `/architect`, `/context`, `/copy-context`: their text is
the user's turn) and those that run something (`/run`, `!cmd`, `/test`, `/lint`, `/web`,
`/git`, `/commit`: a tool line). Of aider's output, `Applied edit to FILE`, `Commit HASH
MSG` and `Running CMD` are tool lines, `Main model:` names the model and `Tokens: N sent,
M received` adds to the counts; the rest (banners, prompts, warnings) is skipped.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from autopoiesis.capture.importers.base import ImportReport, SessionDraft
from autopoiesis.core.clock import parse_ts
from autopoiesis.errors import ImportFormatError, TranscriptFormatError
from autopoiesis.formats import transcript as tf

HISTORY_NAME = ".aider.chat.history.md"
_HEADER_RE = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_MESSAGE_COMMANDS = frozenset({"ask", "code", "architect", "context", "copy-context"})
_RUN_COMMANDS = frozenset({"run", "test", "lint", "web", "git", "commit"})
_APPLIED_RE = re.compile(r"^Applied edit to (.+)$")
_COMMIT_RE = re.compile(r"^Commit ([0-9a-f]{7,40}) (.+)$")
_RUNNING_RE = re.compile(r"^Running (.+)$")
_MODEL_RE = re.compile(r"^(?:Main model|Model): (\S+)")
_TOKENS_RE = re.compile(r"^Tokens: ([\d.]+)([kKmM]?) sent, ([\d.]+)([kKmM]?) received")


def _count(number: str, unit: str) -> int:
    return int(float(number) * {"": 1, "k": 1_000, "m": 1_000_000}[unit.lower()])


class AiderImporter:
    name = "aider"
    description = "Aider chat histories (.aider.chat.history.md)"

    def detect(self, path: Path, text: str) -> float:
        if path.name.endswith(HISTORY_NAME):
            return 1.0
        head = text.lstrip()[:4000]
        return 0.95 if any(_HEADER_RE.match(line) for line in head.splitlines()[:20]) else 0.0

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        sessions: list[tuple[datetime, list[str]]] = []
        for n, line in enumerate(text.splitlines(), 1):
            m = _HEADER_RE.match(line)
            if m is not None:
                try:
                    local = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").astimezone()
                    start = parse_ts(local.astimezone(UTC), "aider chat started at")
                except (ValueError, OverflowError, OSError, TranscriptFormatError) as exc:
                    report.skip_line(
                        str(path), n, f"session header with an impossible time ({exc})"
                    )
                    continue
                sessions.append((start, []))
            elif sessions:
                sessions[-1][1].append(line)
        if not sessions:
            raise ImportFormatError(
                f"{path}: no `# aider chat started at` line, so no aider session in it."
            )
        drafts: list[SessionDraft] = []
        used: set[str] = set()
        # aider writes its history into the folder it runs in: a file under its own name
        # is where the sessions ran (a renamed copy says nothing about it)
        folder = str(path.resolve().parent) if path.name == HISTORY_NAME else None
        for start, lines in sessions:
            sid = f"aider-{start.strftime('%Y%m%dT%H%M%SZ')}"
            n = 2
            while sid in used:
                sid, n = f"aider-{start.strftime('%Y%m%dT%H%M%SZ')}-{n}", n + 1
            used.add(sid)
            draft = SessionDraft(
                session_id=sid,
                channel="aider",
                source=f"aider:{path.name}",
                started=start,
                cwd=folder,
            )
            _read_session(draft, lines, start)
            if draft.turns:
                drafts.append(draft)
        if not drafts:
            raise ImportFormatError(
                f"{path}: {len(sessions)} aider session(s), none with a message: only aider's own "
                "output and commands such as /add; nothing to import."
            )
        return drafts


def _read_session(draft: SessionDraft, lines: list[str], when: datetime) -> None:
    user: list[str] = []
    reply: list[str] = []

    def flush_user() -> None:
        if user:
            _user_message("\n".join(user), draft, when)
            user.clear()

    def flush_reply() -> None:
        text = "\n".join(reply).strip("\n")
        reply.clear()
        if text.strip():
            draft.add_turn(when, "agent", [tf.Text(text)])

    for line in lines:
        if line.startswith("####") and line.endswith("  "):
            flush_reply()
            user.append(line[5:].rstrip() if line.startswith("#### ") else "")
            continue
        flush_user()
        if line.startswith(">") and line.endswith("  "):
            flush_reply()
            _output(line[1:].strip(), draft, when)
            continue
        reply.append(line)
    flush_user()
    flush_reply()


def _agent_item(draft: SessionDraft, when: datetime, item: tf.Item) -> None:
    if draft.turns and draft.turns[-1].role == "agent":
        draft.turns[-1].items.append(item)
    else:
        draft.add_turn(when, "agent", [item])


def _user_message(text: str, draft: SessionDraft, when: datetime) -> None:
    if text.strip() == "<blank>":
        return
    if text.startswith("!"):
        _agent_item(draft, when, tf.ToolCall("run", text[1:].strip(), None))
        return
    if not text.startswith("/"):
        draft.add_turn(when, "user", [tf.Text(text)])
        return
    command, _, args = text[1:].partition(" ")
    command, args = command.strip().lower(), args.strip()
    if command in _MESSAGE_COMMANDS and args:
        draft.add_turn(when, "user", [tf.Text(args)])
    elif command == "ok":
        draft.add_turn(
            when, "user", [tf.Text(args or "Ok, please go ahead and make those changes.")]
        )
    elif command in _RUN_COMMANDS:
        _agent_item(draft, when, tf.ToolCall(command, args, None))


def _output(text: str, draft: SessionDraft, when: datetime) -> None:
    if (m := _APPLIED_RE.match(text)) is not None:
        _agent_item(draft, when, tf.ToolCall("edit", m.group(1), None))
    elif (m := _COMMIT_RE.match(text)) is not None:
        _agent_item(draft, when, tf.ToolCall("commit", m.group(2), m.group(1)))
    elif (m := _RUNNING_RE.match(text)) is not None:
        _agent_item(draft, when, tf.ToolCall("run", m.group(1), None))
    elif (m := _MODEL_RE.match(text)) is not None:
        draft.model = draft.model or m.group(1)
    elif (m := _TOKENS_RE.match(text)) is not None:
        draft.tokens_in += _count(m.group(1), m.group(2))
        draft.tokens_out += _count(m.group(3), m.group(4))
