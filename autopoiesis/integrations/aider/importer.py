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
M received` adds to the counts; the rest (banners, prompts, warnings) is skipped. Aider
quotes an output of several lines once, so only its first line starts with `> ` and only
its last ends with the two spaces: such a block (pytest's output after `/test`, a repo map,
a verbose dump) is the result of the `/run`/`/test` it follows, else bookkeeping; never
the agent's words. It follows aider's own lines directly, where a reply (and a quote in
it) follows a blank line.

A file is aider's by its name, a session line anywhere in it, or aider's markup; lines
before its first session line (a history cut from a longer one) are a session of their
own, dated by that line (or, with none, by the file's modification minute), with a warning.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    first_json_line,
    log_lines,
)
from autopoiesis.capture.importers.shapes import stable_id
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.text import counted
from autopoiesis.errors import ImportFormatError, TranscriptFormatError
from autopoiesis.formats import transcript as tf

HISTORY_NAME = ".aider.chat.history.md"
_HEADER_RE = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
# a session line whose time is not aider's (a damaged or hand-edited file): a session still
_ANY_HEADER_RE = re.compile(r"^# aider chat started at (.*?)\s*$")
_BANNER_RE = re.compile(r"^> (?:Aider v\d|Main model: \S+ with \S+ edit format)")
_MESSAGE_COMMANDS = frozenset({"ask", "code", "architect", "context", "copy-context"})
_RUN_COMMANDS = frozenset({"run", "test", "lint", "web", "git", "commit"})
_RUN_TOOLS = _RUN_COMMANDS - {"commit"}  # the tool lines whose output aider prints
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
        if isinstance(first_json_line(text), (dict, list)):
            return 0.0  # a JSON log (its head is parsed once for every detector)
        lines = log_lines(text[:65536])
        if any(_HEADER_RE.match(line) for line in lines):
            return 0.95
        # aider's own markup, in a file cut from a longer history (no session line in it)
        if any(_BANNER_RE.match(line) for line in lines):
            return 0.9
        user = sum(1 for line in lines if line.startswith("#### ") and line.endswith("  "))
        quoted = sum(1 for line in lines if line.startswith("> ") and line.endswith("  "))
        return 0.85 if user and quoted >= 2 else 0.0

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        before: list[str] = []  # lines ahead of the first session line
        sessions: list[tuple[datetime | None, list[str]]] = []
        for n, line in enumerate(log_lines(text), 1):
            m = _HEADER_RE.match(line) or _ANY_HEADER_RE.match(line)
            if m is not None:
                try:
                    local = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").astimezone()
                    start: datetime | None = parse_ts(
                        local.astimezone(UTC), "aider chat started at"
                    )
                except (ValueError, OverflowError, OSError, TranscriptFormatError):
                    # its lines are still a session of their own, not the one before's
                    report.warnings.append(
                        f"{path}: line {n}: a session line whose time is no time "
                        f"({m.group(1)[:40]!r}); its session is dated by the one before it"
                    )
                    start = None
                sessions.append((start, []))
            elif sessions:
                sessions[-1][1].append(line)
            else:
                before.append(line)
        drafts: list[SessionDraft] = []
        # aider writes its history into the folder it runs in: a file under its own name
        # is where the sessions ran (a renamed copy says nothing about it)
        folder = str(path.resolve().parent) if path.name == HISTORY_NAME else None
        fragment = _fragment(path, before, sessions, folder, report)
        if fragment is not None:
            drafts.append(fragment)
        used: set[str] = set()
        known: datetime | None = None
        for when, lines in sessions:
            if when is None:  # dated by the session before it, else by the file
                start = known or parse_ts(path.stat().st_mtime, f"{path}: modification time")
                stamp = f"{start.strftime('%Y%m%dT%H%M%SZ')}-{stable_id('x', lines[:40])[-8:]}"
            else:
                start = known = when
                stamp = start.strftime("%Y%m%dT%H%M%SZ")
            sid = f"aider-{stamp}"
            n = 2
            while sid in used:
                sid, n = f"aider-{stamp}-{n}", n + 1
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
                f"{path}: {counted(len(sessions), 'aider session')}, none with a message: only "
                "aider's own output and commands such as /add; nothing to import."
                if sessions
                else f"{path}: no `# aider chat started at` line and no message, so no aider "
                "session in it."
            )
        return drafts


def _fragment(
    path: Path,
    lines: list[str],
    sessions: list[tuple[datetime | None, list[str]]],
    folder: str | None,
    report: ImportReport,
) -> SessionDraft | None:
    """The conversation ahead of a file's first session line (a history cut from a longer
    one), dated by that line's time (it can be no later), or by the file's modification
    minute when there is none; None when those lines hold no message."""
    if not any(line.strip() for line in lines):
        return None
    first = sessions[0][0] if sessions else None
    if first is not None:
        start, why = first, "the session line after them"
    else:
        start = parse_ts(path.stat().st_mtime, f"{path}: modification time").replace(
            second=0, microsecond=0
        )
        why = "the file's modification time"
    draft = SessionDraft(
        session_id=stable_id("aider", lines[:40]),
        channel="aider",
        source=f"aider:{path.name}",
        started=start,
        cwd=folder,
    )
    _read_session(draft, lines, start)
    if not draft.turns:
        return None
    report.warnings.append(
        f"{path}: {len(lines)} lines before any `# aider chat started at` line are a session "
        f"of their own, dated by {why}"
    )
    return draft


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

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("####") and line.endswith("  "):
            flush_reply()
            user.append(line[5:].rstrip() if line.startswith("#### ") else "")
            continue
        flush_user()
        if line.startswith(">") and line.endswith("  "):
            flush_reply()
            _output(line[1:].strip(), draft, when)
            continue
        # aider's output of several lines quotes its first line alone; it follows aider's
        # own lines directly, where the model's reply (and any quote in it) follows a blank
        starts = line.startswith("> ") and i > 1 and lines[i - 2].strip() != ""
        end = _block_end(lines, i - 1) if starts and not reply_open(reply) else None
        if end is not None:
            flush_reply()
            _block(lines[i - 1 : end + 1], draft, when)
            i = end + 1
            continue
        reply.append(line)
    flush_user()
    flush_reply()


def reply_open(reply: list[str]) -> bool:
    """Whether a reply is being read (a `> ` line inside it is the model's quote)."""
    return any(line.strip() for line in reply)


def _block_end(lines: list[str], start: int) -> int | None:
    """The index of the last line of the output block aider began at START (a quoted first
    line without the two trailing spaces): the next line that ends with them. None when a
    user line, a session line or the end comes first: then START was the model's quote."""
    for j in range(start + 1, len(lines)):
        line = lines[j]
        if line.startswith("####") or _HEADER_RE.match(line):
            return None
        if line.endswith("  "):
            return j
    return None


def _block(block: list[str], draft: SessionDraft, when: datetime) -> None:
    """Aider's output of several lines (a command's output after `/run` or `/test`, a
    repo map, a verbose dump): the result of the command it follows, else bookkeeping."""
    text = "\n".join([block[0][2:], *block[1:]]).strip()
    if not draft.turns or draft.turns[-1].role != "agent" or not draft.turns[-1].items:
        return
    items = draft.turns[-1].items
    call = items[-1]
    if isinstance(call, tf.ToolCall) and call.tool in _RUN_TOOLS and call.result is None:
        items[-1] = tf.ToolCall(call.tool, call.args, text)


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
