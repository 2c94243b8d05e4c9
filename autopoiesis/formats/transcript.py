"""The conversation transcript format (docs/design.md#transcript-format): parse and render,
losslessly.

A transcript is YAML frontmatter, a `# Title` line, then turns::

    ---
    session_id: ses_a1b2c3d4
    started: 2026-02-16T18:45:00Z
    ...
    ---

    # Autopoiesis Restructuring

    ## 18:45 — user
    Read all open issues and give me a summary.

    ## 18:45 — agent
    > [tool:exec] gh issue list → 12 results

    Here are all 12 open issues: ...

    ## 18:52 — agent [memory]
    > [knowledge:updated] knowledge/projects/autopoiesis/context.md — added migration plan

Decisions this module makes (documented in the README too):

* **Times are UTC.** Frontmatter timestamps are ISO-8601 with `Z`; a turn header shows the
  UTC `HH:MM` of the turn.
* **After midnight / multi-day sessions.** A turn whose UTC date differs from the date of
  the turn before it (the first turn: from `started`) carries the full date:
  `## 2026-02-17 00:05 — user`. So every turn's date is known without guessing, and a
  session stays one file (filed under the date it started).
* **Speakers.** Multi-party turns name the speaker: `## 18:45 — user (Caroline)`.
* **Escaping.** A content line that would read as a turn header or as an event line
  (`> [tool:`, `> [knowledge:`, `> [attachment:`) is written with one extra leading
  backslash, and the parser removes exactly one. Content is therefore never mistaken
  for structure, and the round trip is exact.
* **One-line fields.** Tool name, arguments and result, a knowledge event's action, path
  and summary, an attachment path, a speaker's name, and the frontmatter's model, channel,
  topic, tags and source are one line each: the items and the metadata pass them through
  `core.text.one_line` when they are built, so a `\\r` or `\\n` in any of them can never
  break the structure, and what is in memory is what reads back from disk. A knowledge
  path writes `%` and space as `%25` and `%20`.
* **Bytes.** Every transcript is written through `encode`: text that cannot be written as
  UTF-8 (a lone surrogate from a JSON `\\ud83d` escape) gets U+FFFD, once, there. `decode`
  reads one back, dropping a character cut off at the very end by a killed write.
* **Parts and subagents.** A session that went on after it was imported is continued in a
  new file, never by rewriting the old one: the continuation has the same `session_id`,
  `part: N` (the first part has none) and `continues:` the repo-relative path of the part
  before it, and is named after the first part with `+N` (`raw/.../HHMM-{id}-{slug}+2.md`,
  filed under the date of its first turn). `+` is in no session id and no slug, so
  `session_key` reads the session of a file from its name alone. A subagent's transcript
  names its parent in `parent_session`; a resumed session whose log began with a copy of
  another's turns names that session in `resumes` and holds only its own turns.
* **Project.** A session that ran in a git repository says so: `project:` the slug of
  its repository (core/project.py; a worktree or subfolder names its main repository) and
  `cwd:` the working folder, both optional and written only when the harness knew the
  folder. A session without `project:` is global.
* **Layout.** Each turn is `\\n## header\\n` followed by its items; an event item is one
  line, a text item is the message content with leading/trailing newlines removed; a
  blank line separates a text item from a neighbouring event line.

`render(parse(text)) == text` for every transcript this module renders.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from datetime import UTC, date, datetime
from functools import cache
from pathlib import PurePosixPath
from typing import Any, TypeVar, cast

from autopoiesis.core import frontmatter
from autopoiesis.core.clock import utc
from autopoiesis.core.text import decode_utf8_tail, one_line, slugify, utf8_safe
from autopoiesis.errors import FrontmatterError, TranscriptFormatError
from autopoiesis.formats.transcript_meta import (  # noqa: F401 (re-exported: part of the format)
    SESSION_ID_RE,
    STATUSES,
    KnowledgeChangeRef,
    TranscriptMeta,
    given_field,
    meta_from_mapping,
    parse_meta,
    render_frontmatter,
    replace_frontmatter,
    set_normalised,
    split_frontmatter,
    validate_session_id,
    written_session_id,
)
from autopoiesis.formats.transcript_names import (
    session_key as session_key,
)  # re-exported: file names are part of this format

ROLES = ("user", "agent", "system")
DASH = "\u2014"  # the em dash of `## HH:MM — role`

HEADER_RE = re.compile(
    r"^## (?:(?P<date>\d{4}-\d\d-\d\d) )?(?P<time>\d\d:\d\d) "
    + DASH
    + r" (?P<role>[a-z]+)(?: \((?P<name>[^\n]*?)\))?(?P<memory> \[memory\])?$"
)
# Anything that might be taken for structure, escaped or not.
_STRUCTURAL_RE = re.compile(
    r"^\\*(?:## (?:\d{4}-\d\d-\d\d )?\d\d:\d\d " + DASH + r" |> \[(?:tool|knowledge|attachment):)"
)
TOOL_RE = re.compile(r"^> \[tool:(?P<name>[^\]\n]*)\] (?P<args>.*?)(?: \u2192 (?P<result>.*))?$")
KNOWLEDGE_RE = re.compile(
    r"^> \[knowledge:(?P<action>[^\]\n]*)\] (?P<path>\S+)(?: " + DASH + r" (?P<summary>.*))?$"
)
_PATH_ESCAPES = {"%": "%25", " ": "%20"}
_PATH_UNESCAPES = {"%25": "%", "%20": " "}
ATTACHMENT_RE = re.compile(r"^> \[attachment:(?P<path>[^\]\n]*)\]$")


# ── items of a turn ──
# The one-line fields are normalised when an item is built (see "One-line fields" above).
def _line(value: object, limit: int = 300) -> str:
    return one_line(value, limit)


def _opt_line(value: object, limit: int = 300) -> str | None:
    return (one_line(value, limit) or None) if value is not None else None


@dataclass(frozen=True)
class Text:
    content: str


# A call whose result holds the user's own words (`tool_calls.holds_user_words`: their
# answers to a question the agent asked through a tool, or what they typed rejecting a
# call) keeps up to ANSWER_CHARS of its result, and of its arguments (the question and the
# options it offered: what the answer chose among); any other call keeps 300 of each.
ANSWER_CHARS = 4000


def _holds_user_words(tool: object, result: object) -> bool:
    from autopoiesis.formats.tool_calls import holds_user_words  # it reads this module

    return holds_user_words(str(tool), None if result is None else str(result))


@dataclass(frozen=True)
class ToolCall:
    tool: str
    args: str
    result: str | None = None
    _given: dict[str, Any] | None = given_field()

    def __post_init__(self) -> None:
        limit = ANSWER_CHARS if _holds_user_words(self.tool, self.result) else 300
        set_normalised(
            self,
            {
                "tool": _no_bracket_end(_line(self.tool, 80)),
                "args": _line(self.args, limit),
                "result": _opt_line(self.result, limit),
            },
        )

    def with_result(self, result: str | None) -> ToolCall:
        """This call with RESULT (a log pairs a result with its call later), built from what
        the call was given: its arguments are still redacted whole before they are cut."""
        given = self._given or {}
        return ToolCall(given.get("tool", self.tool), given.get("args", self.args), result)


@dataclass(frozen=True)
class KnowledgeOp:
    action: str
    path: str
    summary: str | None = None
    _given: dict[str, Any] | None = given_field()

    def __post_init__(self) -> None:
        set_normalised(
            self,
            {
                "action": _no_bracket_end(_line(self.action, 40)),
                "path": _line(self.path, 500) or "-",
                "summary": _opt_line(self.summary),
            },
        )


@dataclass(frozen=True)
class Attachment:
    path: str
    _given: dict[str, Any] | None = given_field()

    def __post_init__(self) -> None:
        set_normalised(self, {"path": _no_bracket_end(_line(self.path, 500))})


Item = Text | ToolCall | KnowledgeOp | Attachment


@dataclass(frozen=True)
class Turn:
    time: datetime  # UTC, minute precision once rendered
    role: str
    items: tuple[Item, ...] = ()
    name: str | None = None
    memory: bool = False
    _given: dict[str, Any] | None = given_field()

    def __post_init__(self) -> None:
        if self.name is not None:
            name = _line(self.name, 80).replace(")", "]").replace("(", "[")
            set_normalised(self, {"name": name or None})

    @property
    def text(self) -> str:
        return "\n\n".join(i.content for i in self.items if isinstance(i, Text))


@dataclass(frozen=True)
class Transcript:
    meta: TranscriptMeta
    title: str
    turns: tuple[Turn, ...] = ()


# ── body ──
def escape_line(line: str) -> str:
    return "\\" + line if _STRUCTURAL_RE.match(line) else line


def unescape_line(line: str) -> str:
    # the cheap test first: a reader unescapes every line of every turn it shows
    return line[1:] if line.startswith("\\") and _STRUCTURAL_RE.match(line) else line


# Unicode category Cc (C0 and C1 controls, DEL) but tab and newline; one regex pass is
# fifty times faster than asking unicodedata about every character of a long message.
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def normalize_content(content: str) -> str:
    """Message content as a transcript stores it: LF line ends, no NULs or other control
    characters but tab/newline, no leading or trailing blank lines."""
    text = content.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL_RE.sub("", text).strip("\n")


def render_header(turn: Turn, previous_day: date | None) -> str:
    t = utc(turn.time)
    day = (
        f"{t.date().isoformat()} " if previous_day is not None and t.date() != previous_day else ""
    )
    name = f" ({turn.name})" if turn.name else ""
    memory = " [memory]" if turn.memory else ""
    return f"## {day}{t.strftime('%H:%M')} {DASH} {turn.role}{name}{memory}"


def render_item(item: Item) -> str:
    """One item, without a trailing newline."""
    if isinstance(item, Text):
        return "\n".join(escape_line(line) for line in normalize_content(item.content).split("\n"))
    if isinstance(item, ToolCall):
        head = f"> [tool:{item.tool}] {item.args}"
        return head + (f" \u2192 {item.result}" if item.result else "")
    if isinstance(item, KnowledgeOp):
        path = re.sub("[% ]", lambda m: _PATH_ESCAPES[m.group()], item.path) or "-"
        summary = f" {DASH} {item.summary}" if item.summary else ""
        return f"> [knowledge:{item.action}] {path}{summary}"
    if isinstance(item, Attachment):
        return f"> [attachment:{item.path}]"
    raise TypeError(f"not a transcript item: {item!r}")


def item_separator(previous: Item | None, item: Item) -> str:
    """What goes between two items of a turn (after PREVIOUS's own line end)."""
    if previous is None:
        return ""
    if isinstance(previous, Text) or isinstance(item, Text):
        return "\n"
    return ""


def render_turn_start(turn: Turn, previous_day: date | None) -> str:
    return f"\n{render_header(turn, previous_day)}\n"


def render_turn(turn: Turn, previous_day: date | None) -> str:
    out = [render_turn_start(turn, previous_day)]
    prev: Item | None = None
    for item in turn.items:
        if isinstance(item, Text) and not normalize_content(item.content):
            continue
        out.append(item_separator(prev, item) + render_item(item) + "\n")
        prev = item
    return "".join(out)


def render_preamble(meta: TranscriptMeta, title: str) -> str:
    return render_frontmatter(meta) + f"\n# {one_line(title, 200) or meta.session_id}\n"


def render(transcript: Transcript) -> str:
    parts = [render_preamble(transcript.meta, transcript.title)]
    day = utc(transcript.meta.started).date()
    for turn in transcript.turns:
        parts.append(render_turn(turn, day))
        day = utc(turn.time).date()
    return "".join(parts)


def _parse_items(lines: list[str]) -> tuple[Item, ...]:
    items: list[Item] = []
    text_lines: list[str] = []

    def flush_text() -> None:
        while text_lines and text_lines[0] == "":
            text_lines.pop(0)
        while text_lines and text_lines[-1] == "":
            text_lines.pop()
        if text_lines:
            items.append(Text("\n".join(unescape_line(l) for l in text_lines)))
        text_lines.clear()

    for line in lines:
        m = None
        if line.startswith("> ["):
            if (m := TOOL_RE.match(line)) is not None:
                flush_text()
                items.append(ToolCall(m["name"], m["args"], m["result"] or None))
                continue
            if (m := KNOWLEDGE_RE.match(line)) is not None:
                flush_text()
                path = re.sub("%2[05]", lambda m: _PATH_UNESCAPES[m.group()], m["path"])
                items.append(KnowledgeOp(m["action"], path, m["summary"] or None))
                continue
            if (m := ATTACHMENT_RE.match(line)) is not None:
                flush_text()
                items.append(Attachment(m["path"]))
                continue
        text_lines.append(line)
    flush_text()
    return tuple(items)


def parse(text: str, where: str = "transcript") -> Transcript:
    """Parse a transcript. Raises TranscriptFormatError naming what is wrong."""
    data, body = split_frontmatter(text, where)
    meta = meta_from_mapping(data, where)
    if not body.startswith("\n# "):
        raise TranscriptFormatError(
            f"{where}: expected a blank line and a '# Title' line after the frontmatter."
        )
    lines = body[1:].split("\n")
    title = lines[0][2:]
    # lines[-1] is '' because the file ends with a newline
    if lines and lines[-1] == "":
        lines = lines[:-1]
    turns: list[Turn] = []
    day = meta.started.date()
    current: dict[str, Any] | None = None
    body_lines: list[str] = []

    def close_turn() -> None:
        if current is not None:
            # the line before the next header is the blank separator
            if body_lines and body_lines[-1] == "":
                body_lines.pop()
            turns.append(Turn(items=_parse_items(body_lines), **current))

    for line in lines[1:]:
        m = HEADER_RE.match(line) if line.startswith("## ") else None
        if m is None:
            if current is None:
                if line.strip():
                    raise TranscriptFormatError(
                        f"{where}: text before the first '## HH:MM — role' turn: {line[:60]!r}"
                    )
                continue
            body_lines.append(line)
            continue
        close_turn()
        body_lines = []
        if m["role"] not in ROLES:
            raise TranscriptFormatError(
                f"{where}: unknown role {m['role']!r} in {line!r}; use user, agent or system."
            )
        if m["date"]:
            day = date.fromisoformat(m["date"])
        hh, mm = (int(x) for x in m["time"].split(":"))
        when = datetime(day.year, day.month, day.day, hh, mm, tzinfo=UTC)
        current = {
            "time": when,
            "role": m["role"],
            "name": m["name"] or None,
            "memory": bool(m["memory"]),
        }
    close_turn()
    return Transcript(meta=meta, title=title, turns=tuple(turns))


def turn_lines(text: str, where: str = "transcript") -> list[tuple[int, int]]:
    """The 1-based (first, last) file lines of each turn of TEXT, in the order of
    `parse(text).turns`: from its header line to its last non-blank line. What a reader
    needs to map a `path:start-end` location (a search hit) onto turns."""
    try:
        source, body = frontmatter.split(text, where)
    except FrontmatterError as exc:
        raise TranscriptFormatError(str(exc)) from None
    first = 1 if source is None else source.count("\n") + 3  # the fences and the YAML lines
    lines = body.split("\n")
    headers = [
        first + i
        for i, line in enumerate(lines)
        if line.startswith("## ") and HEADER_RE.match(line)
    ]
    spans = []
    for k, start in enumerate(headers):
        last = headers[k + 1] - 1 if k + 1 < len(headers) else first + len(lines) - 1
        while last > start and not lines[last - first].strip():
            last -= 1
        spans.append((start, last))
    return spans


def transcript_relpath(session_id: str, started: datetime, slug: str) -> str:
    """raw/conversations/YYYY/MM/DD/HHMM-{session_id}-{slug}.md (slug may be empty)."""
    t = utc(started)
    name = f"{t.strftime('%H%M')}-{session_id}" + (f"-{slug}" if slug else "") + ".md"
    return f"raw/conversations/{t.strftime('%Y/%m/%d')}/{name}"


def continuation_relpath(first_part: str, started: datetime, part: int) -> str:
    """Where part PART (2, 3, ...) of the session whose first part is FIRST_PART goes: the
    day folder of STARTED (its first turn), named after the first part with `+PART`."""
    if part < 2:
        raise ValueError(f"a continuation is part 2 or later, not {part}")
    t = utc(started)
    stem = PurePosixPath(first_part).name[5:-3].split("+", 1)[0]
    return f"raw/conversations/{t.strftime('%Y/%m/%d')}/{t.strftime('%H%M')}-{stem}+{part}.md"


def continued_turns(
    filed: Sequence[Turn], current: Sequence[Turn], *, reread: bool = False
) -> tuple[Turn, ...] | None:
    """The turns CURRENT adds to FILED (the turns of the parts already filed, in order):
    () when it adds none, None when CURRENT is not FILED grown at its end (an earlier turn
    changed or is gone).

    Turns are compared by role, speaker and items, not by time (a format without times
    dates its turns by the file, which changes as the file grows). Two things a log
    legitimately adds to what was already there are new too: the result of a tool call
    filed without one (it arrived after the import), and items appended to the last filed
    turn (one API message written as several lines). Both go into the continuation, in a
    turn of their own at the time of the turn they belong to.

    A tool call is the same call when the tool is: how a log's tool call reads (its
    arguments, its result) is the reader's, and a newer reader reads more of one than the
    reader that filed it (a Claude Code session exported to Markdown names a command only
    in the block's body, which SpecStory's reader once missed). What was said (the texts)
    and which tools ran, in order, must be the same; with REREAD, a text is the same when
    the words of one are the other's with words left out (`same_words`), and a turn may
    hold fewer of the filed turn's items (`_read_in`): the same log read by another
    version of its reader or redactor, which reads more or less of it.

    A log that holds less than what is filed, and that as the start of it (an older copy
    of the log, a backup), adds nothing: ().

    The turns an earlier continuation split off a turn this way are that turn again where
    CURRENT holds it whole (`_rejoined`), so a log imported while it was written goes on
    being continued, never taken for a rewound one."""
    filed = _rejoined(filed, current)
    if len(current) <= len(filed) and _earlier_copy(filed, current):
        return ()
    if len(current) < len(filed):
        return None
    late: list[Item] = []
    extra: tuple[Item, ...] = ()
    for n, (old, new) in enumerate(zip(filed, current)):
        if (old.role, old.name, old.memory) != (new.role, new.name, new.memory):
            return None
        if len(new.items) < len(old.items):
            # a newer reader may read fewer parts of a turn: a SpecStory export's subagent
            # messages, once the main agent's words and calls, are sessions of their own
            if reread and _read_in(new.items, old.items):
                continue
            return None
        if len(new.items) > len(old.items):
            if n != len(filed) - 1:
                return None
            extra = new.items[len(old.items) :]
        for a, b in zip(old.items, new.items):
            if a == b:
                continue
            if isinstance(a, ToolCall) and isinstance(b, ToolCall) and _same_call(a, b):
                if a.result is None and b.result is not None and a.args == b.args:
                    late.append(b)  # its result arrived after the import
                continue
            if reread and (
                (isinstance(a, Text) and isinstance(b, Text) and _read_again(a.content, b.content))
                or (isinstance(a, Attachment) and isinstance(b, Attachment))
            ):
                continue
            return None
    out: list[Turn] = []
    if late:
        out.append(Turn(current[len(filed) - 1].time, "agent", tuple(late)))
    if extra:
        last = current[len(filed) - 1]
        out.append(Turn(last.time, last.role, extra, last.name, last.memory))
    return tuple(out) + tuple(current[len(filed) :])


def repeated_start(filed: Sequence[Turn], current: Sequence[Turn]) -> int:
    """How many of CURRENT's first turns are FILED's first turns (another session's, as it
    stands) exactly: the same time, speaker and items. A resumed session's log begins
    with a copy of the lines of the one it resumed, so its first turns are that one's as
    they were filed; a log that only says the same words later, or answers otherwise,
    is not a copy. The turns a continuation split off one turn count as that turn again
    (`_rejoined`). 0 when even the first turn differs, or when the turns repeated hold no
    turn of the agent's (a prompt alone is typed alike in two sessions; an answer at the
    same minute is not)."""
    same = 0
    for old, new in zip(_rejoined(filed, current), current):
        if old != new:
            break
        same += 1
    return same if any(turn.role == "agent" for turn in current[:same]) else 0


def _rejoined(filed: Sequence[Turn], current: Sequence[Turn]) -> list[Turn]:
    """FILED with the turns a continuation split off the turn before them folded back into
    it, where CURRENT holds that turn whole: a continuation files the results of a turn's
    calls that arrived after the import, and the items its log appended to the last filed
    turn, as a turn of their own at that turn's time and by its speaker (`continued_turns`).
    A turn is folded in only as far as the result is still the start of CURRENT's turn, so
    a turn of its own that follows (the agent's next message, in the same minute) stays one."""
    out: list[Turn] = []
    rest = list(filed)
    for whole in current:
        if not rest:
            break
        turn = rest.pop(0)
        while rest and _same_speaker(rest[0], turn) and rest[0].time == turn.time:
            merged = _with_results(turn, rest[0]) or replace(turn, items=turn.items + rest[0].items)
            if not _starts(merged, whole):
                break
            turn = merged
            rest.pop(0)
        out.append(turn)
    return out + rest


def _same_speaker(a: Turn, b: Turn) -> bool:
    return (a.role, a.name, a.memory) == (b.role, b.name, b.memory)


def _with_results(turn: Turn, late: Turn) -> Turn | None:
    """TURN with the results LATE brings (a turn of calls only, each with its result) set
    on its calls that were filed without one, the same tool and arguments; None when LATE
    is not that."""
    items = list(turn.items)
    for call in late.items:
        if not isinstance(call, ToolCall) or call.result is None:
            return None
        at = next(
            (
                n
                for n, item in enumerate(items)
                if isinstance(item, ToolCall)
                and item.result is None
                and (item.tool, item.args) == (call.tool, call.args)
            ),
            None,
        )
        if at is None:
            return None
        items[at] = call
    return replace(turn, items=tuple(items))


def _starts(part: Turn, whole: Turn) -> bool:
    """Whether PART is WHOLE or its first items (a call of it perhaps still without its
    result), by the same speaker."""
    if not _same_speaker(part, whole) or len(part.items) > len(whole.items):
        return False
    return all(
        a == b or (isinstance(a, ToolCall) and isinstance(b, ToolCall) and _same_call(a, b))
        for a, b in zip(part.items, whole.items)
    )


# The system's turn that opens a part filed after its log was rewound (Gemini CLI's
# `$rewindTo`, an edited earlier message): the log goes on from its turn N, and the turns
# filed after that one are no longer in it. Readers of the session's parts take the
# conversation as it stands from it (`as_it_stands`).
REWOUND = (
    "The log was rewound: it goes on from its turn {n}; the turns filed after that one are "
    "no longer in it."
)
_REWOUND = re.compile(r"^The log was rewound: it goes on from its turn (\d+);")


def as_it_stands(turns: Sequence[Turn]) -> list[Turn]:
    """TURNS (a session's filed parts, in order) as the conversation stands: after each
    REWOUND note, the turns before its turn N and those after the note; the note and the
    turns it left behind out."""
    out: list[Turn] = []
    for turn in turns:
        m = _REWOUND.match(turn.text) if turn.role == "system" else None
        if m is not None:
            del out[int(m.group(1)) :]
            continue
        out.append(turn)
    return out


def earlier_states(turns: Sequence[Turn]) -> list[list[Turn]]:
    """The conversation as it stood before each REWOUND note of TURNS (a session's filed
    parts, in order): what a copy of its log taken then holds (a backup beside the live
    log), which adds nothing to what is filed."""
    states: list[list[Turn]] = []
    out: list[Turn] = []
    for turn in turns:
        m = _REWOUND.match(turn.text) if turn.role == "system" else None
        if m is not None:
            states.append(list(out))
            del out[int(m.group(1)) :]
            continue
        out.append(turn)
    return states


def rewound_turns(filed: Sequence[Turn], current: Sequence[Turn]) -> tuple[Turn, ...] | None:
    """When CURRENT begins as FILED does and then goes another way (a log rewound to an
    earlier turn, or a turn edited): the turns CURRENT says from there, after a REWOUND
    note of the system's; nothing is lost of either. None when not even its first turn is
    FILED's (another session, or a log read another way: `continued_turns` decides those)."""
    same = 0
    for old, new in zip(filed, current):
        if not _said_alike(old, new):
            break
        same += 1
    if same == 0 or same >= len(current):
        return None
    rest = tuple(current[same:])
    note = Turn(rest[0].time, "system", (Text(REWOUND.format(n=same)),))
    return (note, *rest)


def _said_alike(old: Turn, new: Turn) -> bool:
    """Whether NEW says what OLD does, as a log read again by another version of its reader
    or redactor would (continued_turns' REREAD): the same speaker, and each item the same,
    a call of the same tool, a text with the same words or some left out, an attachment."""
    if (old.role, old.name, old.memory) != (new.role, new.name, new.memory):
        return False
    if len(old.items) != len(new.items):
        return False
    for a, b in zip(old.items, new.items):
        if a == b or (isinstance(a, Attachment) and isinstance(b, Attachment)):
            continue
        if isinstance(a, ToolCall) and isinstance(b, ToolCall) and _same_call(a, b):
            continue
        if isinstance(a, Text) and isinstance(b, Text) and _read_again(a.content, b.content):
            continue
        return False
    return True


def _same_call(filed: ToolCall, new: ToolCall) -> bool:
    """Whether NEW is the call FILED records, as a log read again shows it: the same tool,
    and its arguments as filed, or its result as filed (or not yet there), or, where the
    filed call's arguments were never read (a command an export names only in its body),
    a result clipped another way. A call run again with other arguments and another
    result (a rewound session's) is another call."""
    if filed.tool != new.tool:
        return False
    if filed.args == new.args or filed.result is None or new.result is None:
        return True
    old_said, new_said = (" ".join(r.split()) for r in (filed.result, new.result))
    # its command unread before (empty), its output clipped another way: one holds the other
    return old_said == new_said or (
        not filed.args and (old_said in new_said or new_said in old_said)
    )


def _read_again(filed: str, new: str) -> bool:
    """Whether the text NEW is the text FILED read by another version of its reader or
    redactor: the same words with some left out (`same_words`), or more words only where
    the filed one has a redaction marker (a word its redactor no longer takes for a
    secret). More words anywhere else are an edit of the message (a rewound log's)."""
    if not same_words(filed, new):
        return False
    return len(_WORD.findall(new)) <= len(_WORD.findall(filed)) or bool(
        _REDACTION_MARK.search(filed)
    )


def _earlier_copy(filed: Sequence[Turn], current: Sequence[Turn]) -> bool:
    """Whether CURRENT is FILED as its log held it earlier: FILED's first turns, the last
    of them with all its items or its first ones (a turn its log had not finished), a
    call without the result that came later."""
    if not current:
        return False
    for n, (old, new) in enumerate(zip(filed, current)):
        if (old.role, old.name, old.memory) != (new.role, new.name, new.memory):
            return False
        if len(new.items) > len(old.items):
            return False
        if n < len(current) - 1 and len(new.items) != len(old.items):
            return False
        for a, b in zip(old.items, new.items):
            if a == b:
                continue
            if (
                isinstance(a, ToolCall)
                and isinstance(b, ToolCall)
                and (a.tool, a.args) == (b.tool, b.args)
                and b.result is None
            ):
                continue
            return False
    return True


def _read_in(fewer: Sequence[Item], filed: Sequence[Item]) -> bool:
    """Whether the items FEWER are items of FILED with some left out, in order: each text
    one with the same words or fewer (`same_words`), each call one of the same tool."""
    rest = iter(filed)
    for item in fewer:
        for old in rest:
            if isinstance(item, Text) and isinstance(old, Text):
                if same_words(item.content, old.content):
                    break
            elif isinstance(item, ToolCall) and isinstance(old, ToolCall):
                if item.tool == old.tool:
                    break
            elif type(item) is type(old):
                break
        else:
            return False
    return True


_REDACTION_MARK = re.compile(r"\[redacted:[^\]\s]{1,40}\]")


def _no_bracket_end(text: str) -> str:
    """TEXT as a field that a `]` would end (a tool's name, a knowledge event's action, an
    attachment's path): each `]` shown as `)`, a redaction marker whole as `(redacted:KIND)`
    rather than `[redacted:KIND)`."""
    return _REDACTION_MARK.sub(lambda m: "(" + m[0][1:-1] + ")", text).replace("]", ")")


_WORD = re.compile(r"\w+")


def same_words(a: str, b: str) -> bool:
    """Whether the words of the shorter of A and B are those of the longer with words left
    out, in order (redaction markers aside): what one version of a reader or redactor
    reads of a message next to another's (a part it now leaves out, a secret it no longer
    takes a word for), not something else said. Linear in the texts' length."""
    short, long = sorted((_WORD.findall(_REDACTION_MARK.sub(" ", t)) for t in (a, b)), key=len)
    words = iter(long)
    return all(w in words for w in short)  # `in` on an iterator consumes up to the match


# a tag a harness wraps a message's parts in (Claude Code's `<command-name>/review
# </command-name>` when the user runs a slash command): its name is none of the words said.
# Only a tag that is closed too: "a <div> here" is a word the user wrote.
_MARKUP_TAG = re.compile(r"</?([A-Za-z][\w:-]{0,40})(?:\s[^<>\n]{0,200})?/?>")


def _without_tags(text: str) -> str:
    """TEXT without the markup tags it also closes (`<x>` and `</x>`; their words stay)."""
    closed = {m.group(1) for m in _MARKUP_TAG.finditer(text) if m.group(0)[1] == "/"}
    if not closed:
        return text
    return _MARKUP_TAG.sub(lambda m: " " if m.group(1) in closed else m.group(0), text)


def slug_from_turns(turns: Iterable[Turn], topic: str | None = None, max_len: int = 60) -> str:
    """A slug from the topic, else from the words of the first user messages (markup
    tags left out)."""
    if topic:
        slug = slugify(topic, max_len)
        if slug:
            return slug
    words: list[str] = []
    for turn in turns:
        if turn.role != "user":
            continue
        words.extend(re.findall(r"[^\W_]+(?:['\u2019][^\W_]+)*", _without_tags(turn.text))[:12])
        if len(words) >= 8:
            break
    return slugify(" ".join(words[:8]), max_len)


def title_from_slug(slug: str, session_id: str) -> str:
    return slug.replace("-", " ").title() if slug else f"Session {session_id}"


def name_forms(text: str) -> tuple[str, ...]:
    """The forms TEXT takes, besides itself, where a transcript is named after it (its
    first message or topic): its slug in the file name (whole, and cut as a name is) and
    the words of that slug in the title. `forget` removes these too: a string said first in
    a session is also in its name, lowercased, and in its title, title-cased."""
    forms = []
    for slug in dict.fromkeys((slugify(text, 1000), slugify(text))):
        forms += [slug, title_from_slug(slug, "")] if slug else []
    return tuple(f for f in dict.fromkeys(forms) if f != text and len(f) >= 6)


# ── bytes on disk ──
def encode(text: str) -> bytes:
    """TEXT (a rendered transcript or part of one) as the bytes to write: the one place
    where text that cannot be UTF-8 (lone surrogates) is made writable."""
    return utf8_safe(text).encode("utf-8")


def decode(data: bytes, where: str = "transcript") -> str:
    """A transcript file's bytes as text. A character cut off at the very end (a write
    killed half-way) is dropped; any other invalid UTF-8 is a TranscriptFormatError."""
    try:
        return decode_utf8_tail(data)
    except UnicodeDecodeError as exc:
        raise TranscriptFormatError(
            f"{where}: not valid UTF-8 at byte {exc.start}; a transcript is UTF-8 text."
        ) from None


# ── one pass over every text field (redaction) ──
_NOT_TEXT = frozenset(
    {
        "session_id",
        "status",
        "role",
        "redactions",
        "time",
        "started",
        "ended",
        "parent_session",
        "resumes",
        "part",
        "continues",
        "project",
    }
)
_Mapped = TypeVar("_Mapped")


def map_text(obj: _Mapped, fn: Callable[[str], str]) -> _Mapped:
    """OBJ (a transcript, its meta, a turn, an item) with FN applied to every text field it
    holds, nested ones included: content, tool name/args/result, knowledge action, path and
    summary, attachment path, speaker name, title, model, channel, topic, tags, source. Only
    what names a file or is autopoiesis' own (session_id, parent_session, resumes, part, continues,
    project, status, role, redaction counts, times) is left alone. This is how a sink redacts
    a whole transcript without listing its fields, so a field added later is redacted too."""
    return cast(_Mapped, _map(obj, fn))


@cache
def _text_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls) if f.init and f.name not in _NOT_TEXT)


def _map(value: object, fn: Callable[[str], str]) -> object:
    # What FN leaves as it was (the same object) is kept, not rebuilt: redacting a long
    # transcript with no secret in it builds nothing new. A field normalised when its value
    # was built (one line, cut to a limit) is mapped from what it was given (`_given`), and
    # normalised again: a secret cut in two, or flattened, would slip past a redactor.
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, tuple):
        mapped = tuple(_map(v, fn) for v in value)
        return value if all(a is b for a, b in zip(mapped, value)) else mapped
    if is_dataclass(value) and not isinstance(value, type):
        given = getattr(value, "_given", None) or {}
        changes = {}
        for name in _text_fields(type(value)):
            source = given.get(name, getattr(value, name))
            new = _map(source, fn)
            if new is not source:
                changes[name] = new
        return replace(value, **changes) if changes else value
    return value
