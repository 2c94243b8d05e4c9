"""Split a memory file into the chunks the index stores, each with its line range, so a
hit points at `path:start-end` rather than at a whole file.

* A transcript (docs/design.md#transcript-format) is chunked by turn. A chunk's text starts with who
spoke and
  when ("Caroline (user), 8 May 2023:") because questions name people and times; a
  very long turn (tool-heavy agent output) is cut into pieces at paragraph breaks.
* Any other Markdown file is chunked by heading section, the chunk text prefixed with
  the file's title and the section's heading path; long sections are cut the same way.

Pure functions: text in, chunks out. A file that is not a valid transcript is chunked
as Markdown, and broken frontmatter is indexed as text: indexing never raises on
content.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from autopoiesis.core.text import (
    HARNESS_RECORD,
    count_tokens,
    said_by_the_harness,
    without_bookkeeping,
    without_elements,
)
from autopoiesis.errors import FrontmatterError

# Bump when chunk boundaries or chunk text change: the index rebuilds itself.
# 6: frontmatter is found by core.frontmatter (a leading BOM, fences with trailing blanks).
# 7: a long neighbour no longer joins a short turn's chunk (see _exchange).
# 8: a turn chunk's body_hash (the same words said again elsewhere; see Chunk).
# 9: a neighbour over NEIGHBOUR_RATIO times the turn's length stays out (see _exchange).
# 10: a speaker's consecutive messages are one turn (see _turn_units).
# 11: a captured export's thinking and markup tags are left out of the text (see
#     _turn_units).
# 12: so is a lookup's result in such a turn (a search's paths, a listing, a file read).
# 13: and a lookup's summary that names only the tool (a Claude Code export's
#     "Tool use: **Read**").
# 14: a subagent's user turns are its parent agent's (PARENT_AGENT).
# 15: a user's turn that holds a slash command's expansion is headed SLASH_COMMAND.
# 16: a user's turn is read without the harness's bookkeeping (see _turn_units).
# 17: a message the harness sent in the user's role (a compacted session's summary, an
#     instructions file) is headed FROM_HARNESS.
# 18: a long section's piece of headings alone joins the piece after it (see
#     _section_chunks).
# 19: a slash command's record keeps what the user typed (core.text.slash_words).
# 20: a long turn's or section's pieces are up to 3,000 characters (MAX_CHUNK_CHARS).
# 21: a turn chunk says whether its turn is the user's of an agent session (Chunk.user_turn).
CHUNKER_VERSION = "21"
CONTEXT_TURNS = 1  # a turn chunk holds this many turns before and after it, when they fit:
# a neighbour joins when it is at most SHORT_NEIGHBOUR_CHARS long (the question beside its
# long answer) or the window stays under WIDE_CONTEXT_CHARS with it
SHORT_NEIGHBOUR_CHARS = 600
# ... but a longer neighbour joins only a turn at least 1/NEIGHBOUR_RATIO of its length: a
# 100-character instruction of the user beside 1,700 characters of the agent's output would
# be a twentieth of its own chunk, and BM25's length normalisation would bury its words
# (coding questions, bench/bench_coding.py: --mode bm25 turn recall@10 0.699 -> 0.740).
NEIGHBOUR_RATIO = 6
# ... and up to WIDE_CONTEXT_TURNS while its text stays under WIDE_CONTEXT_CHARS: short
# chat turns ("Yes, last Tuesday!") need more of the exchange around them than long ones.
WIDE_CONTEXT_TURNS = 2
WIDE_CONTEXT_CHARS = 1800
# Longer turns and sections are split at paragraph breaks into pieces of at most this many
# characters: the index's chunks and the compiler's units (split_long). A coding agent's
# turn carries its tool calls and their output; with 2,400 its sentences and the output
# they speak of fell into two pieces more often. Turn recall@10 of the three coding sets
# (bench/coding*; 123, 101-102 and 54 questions), imported / as Markdown turns, hybrid:
# 99 / 99, 80 / 83, 47 / 46 -> 102 / 100, 81 / 82, 48 / 46 (2,700: 102 / 100, 82 / 81,
# 47 / 48; 3,300 and 3,600 fewer; 4,800 more on two sets, under bm25's on the paraphrased
# questions of the other); on the paraphrased, hybrid now at least bm25's on all six
# memories (2,400: two under). Part of it is that a piece covers more lines. The compiled
# context: the same within two questions a budget (evidence -2, answers +3 over the nine
# figures); LoCoMo's chat turns are shorter than either, and unchanged.
MAX_CHUNK_CHARS = 3000
HEADINGS_JOINED_LINES = 8  # a piece of headings alone this short joins the next one

_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_STARTED_RE = re.compile(r"^started:\s*['\"]?(\d{4}-\d\d-\d\d)", re.M)
_PARENT_RE = re.compile(r"^parent_session:", re.M)
# Who speaks a user turn of a subagent's transcript: the agent that started it (a Task's
# prompt), not the person the memory serves; so it gets no user-turn prior (index/query)
PARENT_AGENT = "parent agent"
# The heading of a user turn that runs a slash command and holds what the harness expanded
# it to (Claude Code records `<command-message>`/`<command-name>` and then the command's
# prompt file: a PR's description and diff, a review checklist): the user ran it, but its
# words are the command's, and get no user-turn prior either. Its text still says "user".
SLASH_COMMAND = "user, slash command"
# The heading of a user turn that the harness sent (core.text.said_by_the_harness): the
# summary that carries a compacted session on, the summarising model's words, long and
# about everything; Codex's environment block or AGENTS.md. No user-turn prior either.
FROM_HARNESS = "user, from the harness"
USER_HEADING = "user"
AGENT_HEADING = "agent"  # an agent turn with no name: an AI agent
_COMMAND_RUN = re.compile(r"\A\s*<command-(?:message|name)>")
_TAGS_INLINE_RE = re.compile(r"^tags:\s*\[(.*)\]\s*$", re.M)


@dataclass(frozen=True)
class Chunk:
    kind: str  # "turn" | "section"
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str  # what FTS and the embedder see
    heading: str | None = None
    turn_time: str | None = None  # ISO-8601 UTC of a transcript turn
    # A turn chunk's words without who said them when: equal for the same exchange pasted
    # into many sessions (a harness's rules, a file read again), so search shows it once.
    body_hash: str = ""
    # A turn chunk's own turn (or piece of a long one), the lines START..END hold it in
    # its exchange: what a compiled context shows of the hit when the turns around it do
    # not fit, or before them. 0 for a section (all of its lines are its own).
    own_start: int = 0
    own_end: int = 0
    # Its own turn is the user's of an agent session (_is_users_turn): search's user-turn
    # prior (index/query.USER_TURN_FACTOR), read from the index, not from the headings of
    # a query's candidates and their sessions'.
    user_turn: bool = False

    @property
    def content_hash(self) -> str:
        return hashlib.blake2b(
            self.text.encode("utf-8", "surrogatepass"), digest_size=16
        ).hexdigest()


@dataclass(frozen=True)
class FileChunks:
    chunks: tuple[Chunk, ...]
    title: str | None
    tags: tuple[str, ...]
    line_count: int
    token_count: int
    warnings: tuple[str, ...] = ()


def _frontmatter(
    relpath: str, text: str, read_tags: bool = True
) -> tuple[int, tuple[str, ...], str | None]:
    """(index of the closing '---' line or -1, tags, a warning or None). Lenient: broken
    YAML still yields the tags of an inline `tags: [a, b]` line. Without READ_TAGS the
    YAML is not parsed (no tags, no warning about it): the chunk lines do not depend on it."""
    from autopoiesis.core import (
        frontmatter,
    )  # PyYAML: only when a file is indexed, not for a search

    try:
        source, _ = frontmatter.split(text, relpath)
    except FrontmatterError:
        return -1, (), f"{relpath}: frontmatter is not closed by a '---' line; indexed as text"
    if source is None:
        return -1, (), None
    front_end = source.count("\n") + 1  # line 0 is the opening fence, then the YAML lines
    if not read_tags:
        return front_end, (), None
    try:
        data = frontmatter.parse_yaml(source, relpath)
    except FrontmatterError as exc:  # broken frontmatter: index the text, say so
        m = _TAGS_INLINE_RE.search(source)
        tags = tuple(t.strip(" '\"") for t in m.group(1).split(",") if t.strip()) if m else ()
        return front_end, tags, f"{str(exc).rstrip('.')}; indexed as text"
    raw_tags = data.get("tags")
    return front_end, (tuple(str(t) for t in raw_tags) if isinstance(raw_tags, list) else ()), None


def split_long(lines: list[str], first_line: int) -> list[tuple[int, int]]:
    """Cut LINES (starting at FIRST_LINE) into ranges of at most MAX_CHUNK_CHARS,
    preferring blank lines as cut points. Returns inclusive (start, end) line numbers.
    The pieces of a long turn, for the index's chunks and the compiler's units alike."""
    ranges: list[tuple[int, int]] = []
    start = 0
    size = 0
    last_blank = -1
    for i, line in enumerate(lines):
        size += len(line) + 1
        if not line.strip():
            last_blank = i
        if size > MAX_CHUNK_CHARS and i > start:
            cut = last_blank if last_blank > start else i
            ranges.append((first_line + start, first_line + cut))
            start = cut + 1
            size = sum(len(x) + 1 for x in lines[start : i + 1])
            last_blank = -1
    if start < len(lines):
        ranges.append((first_line + start, first_line + len(lines) - 1))
    return ranges


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """Shrink the 1-based inclusive range so it neither starts nor ends on a blank line."""
    while start < end and not lines[start - 1].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start, end


def _human_date(d: date) -> str:
    return f"{d.day} {d.strftime('%B %Y')}"


# What a turn's text opens with in its chunk once a search snippet flattened its lines
# (`_turn_units`: "{speaker}, {day}:", "agent, 25 January 2026: ", "Melanie (agent), 8 May
# 2023: "): for a reader of snippets that wants only what was said (compiler/restated). A
# speaker's name of several words is matched by its last.
TURN_PREFIX = (
    r"(?<!\S)(?:" + re.escape(PARENT_AGENT) + r"|\S+(?: \((?:user|agent|system)\))?)"
    r", \d{1,2} [A-Z][a-z]+ \d{4}: "
)


def chunk_transcript(lines: list[str], front_end: int) -> tuple[list[Chunk], str | None]:
    """Turn chunks of a transcript, or ([], None) when LINES hold no turn headers."""
    headers, title = _turn_headers(lines, front_end)
    if not headers:
        return [], title
    front = "\n".join(lines[1:front_end]) if front_end > 0 else ""
    units = _turn_units(lines, headers, _started_day(front), bool(_PARENT_RE.search(front)))
    return _exchange_chunks(units), title


def _started_day(front: str) -> date | None:
    """The day of the `started:` of FRONT, a transcript's frontmatter (the date of the
    turns until one names its own), or None."""
    m = _STARTED_RE.search(front)
    try:
        return date.fromisoformat(m.group(1)) if m else None
    except ValueError:
        return None


def _turn_headers(lines: list[str], front_end: int) -> tuple[list[_Header], str | None]:
    """(line index, match) of each turn header after the frontmatter, and the title."""
    # only when a file is indexed, not for a search
    from autopoiesis.formats.transcript import HEADER_RE

    title = None
    headers: list[_Header] = []
    for i in range(front_end + 1, len(lines)):
        line = lines[i]
        if title is None and line.startswith("# "):
            title = line[2:].strip()
        if line.startswith("## "):
            hm = HEADER_RE.match(line)
            if hm is not None:
                headers.append((i, hm))
    return headers, title


_Header = tuple[int, re.Match[str]]  # a turn header: its line index and match
# A turn, or a piece of a long one: (start line, end line, its text under the speaker line,
# time, heading: its speaker, or what the turn is, SLASH_COMMAND or FROM_HARNESS).
_Unit = tuple[int, int, str, datetime | None, str]


def _turn_units(
    lines: list[str], headers: list[_Header], day: date | None, subagent: bool = False
) -> list[_Unit]:
    """The units of the turns HEADERS start: each turn's body under "speaker, date:", cut
    at paragraph breaks when long. A header's own date holds for the turns after it. An
    agent's turn is read as a reader of an export sees it (`specstory_markup.as_read`:
    its thinking, a lookup's result and the markup's tags out, line for line), as its
    import reads it; a user's turn without the harness's bookkeeping (the record of a
    command they ran, its output, Claude Code's caveat before it: `/exit`'s three lines
    and "See ya!"), as Claude Code's own log is imported.

    A speaker's consecutive messages are one turn (their headers after the first read as
    blank lines): a harness streams a reply a message a step, and each step alone, short
    beside the user's line, would join its chunk and bury the user's words; imported, the
    same reply is one turn. In a SUBAGENT's transcript a user turn is its parent agent's
    prompt (PARENT_AGENT); a user's turn that runs a slash command and holds its
    expansion is headed SLASH_COMMAND, a message the harness sent (a compacted session's
    summary) FROM_HARNESS."""
    from autopoiesis.formats.specstory_markup import as_read, has_markup

    marked = has_markup("\n".join(lines))
    units: list[_Unit] = []
    text_of = lines
    copied = False
    n = 0
    while n < len(headers):
        i, hm = headers[n]
        last = n
        while last + 1 < len(headers) and _same_speaker(headers[last + 1][1], hm):
            last += 1
            if not copied:
                text_of, copied = list(text_of), True
            text_of[headers[last][0]] = ""
        day = _day_of(hm, day)
        body_end = headers[last + 1][0] - 1 if last + 1 < len(headers) else len(lines) - 1
        if marked and hm["role"] == "agent":
            read = as_read("\n".join(text_of[i + 1 : body_end + 1])).split("\n")
            if read != text_of[i + 1 : body_end + 1]:  # as many lines: as_read keeps them
                if not copied:
                    text_of, copied = list(text_of), True
                text_of[i + 1 : body_end + 1] = read
        when = None
        if day is not None:
            hh, mm = (int(x) for x in hm["time"].split(":"))
            if hh < 24 and mm < 60:
                when = datetime(day.year, day.month, day.day, hh, mm, tzinfo=UTC)
        speaker = f"{hm['name']} ({hm['role']})" if hm["name"] else hm["role"]
        if subagent and hm["role"] == "user":
            speaker = PARENT_AGENT
        prefix = f"{speaker}, {_human_date(when.date())}:" if when else f"{speaker}:"
        body = text_of[i + 1 : body_end + 1]
        heading = speaker
        if hm["role"] == "user":
            written = "\n".join(body)
            said = without_bookkeeping(written)
            if speaker == "user":
                heading = _user_turn_heading(written, said)
            if said != written:
                if not copied:
                    text_of, copied = list(text_of), True
                text_of[i + 1 : body_end + 1] = said.split("\n")
                body = text_of[i + 1 : body_end + 1]
        for start, end in split_long(body, i + 2) or [(i + 2, i + 1)]:
            s, e = _trim(text_of, start, end)
            text = "\n".join(text_of[s - 1 : e]) if e >= s else ""
            first = start == i + 2
            units.append(
                (i + 1 if first else s, max(e, i + 1), f"{prefix}\n{text}".strip(), when, heading)
            )
        for _, later in headers[n + 1 : last + 1]:  # a later message's date holds after it
            day = _day_of(later, day)
        n = last + 1
    return units


def _user_turn_heading(written: str, said: str) -> str:
    """What the user's turn WRITTEN (SAID: without the harness's bookkeeping) is to search:
    SLASH_COMMAND when it runs a slash command and holds its expansion (it opens with the
    harness's record of the command, and says more than that record), FROM_HARNESS when
    the harness sent it (`said_by_the_harness`), else the user's."""
    if _COMMAND_RUN.match(written) and without_elements(written, HARNESS_RECORD).strip():
        return SLASH_COMMAND
    return FROM_HARNESS if said_by_the_harness(said) else "user"


def _day_of(header: re.Match[str], day: date | None) -> date | None:
    """The day a turn HEADER names, else DAY (the one before it)."""
    if header["date"]:
        try:
            return date.fromisoformat(header["date"])
        except ValueError:
            pass
    return day


def _same_speaker(a: re.Match[str], b: re.Match[str]) -> bool:
    return a["role"] == b["role"] and a["name"] == b["name"]


def _exchange_chunks(units: list[_Unit]) -> list[Chunk]:
    """One chunk a unit, holding the turn *in its exchange*: the turn before and after it
    too. A question and its answer sit in neighbouring turns, and a turn's words often only
    make sense with the line it answers ("Yes, last Tuesday!")."""
    chunks: list[Chunk] = []
    agent_session = any(u[4] == AGENT_HEADING for u in units)
    for n, (own_start, own_end, _, when, speaker) in enumerate(units):
        lo, hi = _exchange(units, n)
        chunks.append(
            Chunk(
                kind="turn",
                start_line=units[lo][0],
                end_line=units[hi - 1][1],
                text="\n".join(u[2] for u in units[lo:hi]),
                heading=speaker,
                turn_time=when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else None,
                body_hash=_body_hash(u[2] for u in units[lo:hi]),
                own_start=own_start,
                own_end=own_end,
                user_turn=_is_users_turn(speaker, agent_session),
            )
        )
    return chunks


def _is_users_turn(heading: str, agent_session: bool) -> bool:
    """Whether a turn of HEADING is the user's of an agent session: the `user` role (the
    user may be named, "David (user)") in a session whose agent turns carry no name
    (AGENT_SESSION: an AI agent's). Between named people ("Caroline (user)" and "Melanie
    (agent)", an imported chat) no speaker is an agent's user; a subagent's prompt
    (PARENT_AGENT), a slash command's expansion and what the harness sent are not the
    user's words."""
    return heading == USER_HEADING or (agent_session and heading.endswith(f" ({USER_HEADING})"))


def _body_hash(texts: Iterable[str]) -> str:
    """The hash of unit TEXTS (a chunk's window of turns) without their first lines (who
    spoke, and when), whitespace collapsed."""
    bodies = (" ".join(t.split("\n", 1)[1].split()) if "\n" in t else "" for t in texts)
    joined = "\n".join(bodies)
    return hashlib.blake2b(joined.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _exchange(units: list[_Unit], n: int) -> tuple[int, int]:
    """The units [lo, hi) of unit N's chunk: up to CONTEXT_TURNS on each side, each joining
    when it is short or the window stays under WIDE_CONTEXT_CHARS, then widened up to
    WIDE_CONTEXT_TURNS while the text stays under WIDE_CONTEXT_CHARS.

    A long neighbour stays out of a short turn's chunk: in a coding session a one-line
    instruction of the user ("use bun, not node") sits between agent turns of thousands of
    characters, and BM25's length normalisation would bury its words under theirs. The
    long turn's own chunk still holds the short one beside it."""
    size = len(units[n][2])
    own = size
    lo, hi = n, n + 1
    for _ in range(CONTEXT_TURNS):
        if lo > 0 and _joins(len(units[lo - 1][2]), size, own):
            lo, size = lo - 1, size + len(units[lo - 1][2])
        if hi < len(units) and _joins(len(units[hi][2]), size, own):
            hi, size = hi + 1, size + len(units[hi][2])
    if (lo, hi) != (max(0, n - CONTEXT_TURNS), min(len(units), n + CONTEXT_TURNS + 1)):
        return lo, hi  # a neighbour was left out: the window is not widened past it
    for _ in range(CONTEXT_TURNS, WIDE_CONTEXT_TURNS):
        # widen by one turn on each side (one side at an edge) while the window stays short
        extra = (len(units[lo - 1][2]) if lo > 0 else 0) + (
            len(units[hi][2]) if hi < len(units) else 0
        )
        if extra == 0 or size + extra > WIDE_CONTEXT_CHARS:
            break
        lo, hi, size = max(0, lo - 1), min(len(units), hi + 1), size + extra
    return lo, hi


def _joins(neighbour: int, window: int, own: int) -> bool:
    """Whether a neighbour of NEIGHBOUR characters joins a window of WINDOW characters
    around a turn of OWN characters."""
    if neighbour <= SHORT_NEIGHBOUR_CHARS:
        return True
    return neighbour <= NEIGHBOUR_RATIO * own and window + neighbour <= WIDE_CONTEXT_CHARS


def chunk_markdown(lines: list[str], front_end: int) -> tuple[list[Chunk], str | None]:
    """Heading-section chunks of a Markdown file."""
    starts, title = _section_starts(lines, front_end + 1)
    return _section_chunks(lines, starts, title), title


def _section_starts(
    lines: list[str], body_start: int
) -> tuple[list[tuple[int, str | None]], str | None]:
    """(line index, heading path) where each section starts (the text before the first
    heading too, with no heading), skipping fenced code; and the first level-1 heading."""
    path: list[tuple[int, str]] = []
    title = None
    in_fence = False
    starts: list[tuple[int, str | None]] = [(body_start, None)]
    for i in range(body_start, len(lines)):
        line = lines[i]
        # the cheap tests first (most lines are neither): what the patterns need to start with
        if ("```" in line or "~~~" in line) and _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or not line.startswith("#"):
            continue
        hm = _HEADING_RE.match(line)
        if hm is None:
            continue
        level, text = len(hm.group(1)), hm.group(2)
        if title is None and level == 1:
            title = text
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, text))
        starts.append((i, " > ".join(t for _, t in path)))
    return starts, title


def _section_chunks(
    lines: list[str], starts: list[tuple[int, str | None]], title: str | None
) -> list[Chunk]:
    """The chunks of the sections STARTS begin, long ones cut at paragraph breaks, each
    text under the file's title and its heading path. A heading with no text of its own
    (directly followed by a sub-heading) goes into the next chunk's range; one that is
    all the file has is a chunk of its own."""
    chunks: list[Chunk] = []
    pending_heading: tuple[int, str | None] | None = None  # a heading whose section is empty
    for n, (i, heading) in enumerate(starts):
        end = starts[n + 1][0] - 1 if n + 1 < len(starts) else len(lines) - 1
        if end < i:
            continue
        body = lines[i : end + 1]
        if not any(x.strip() for x in body):
            continue
        has_text = any(x.strip() for x in (body[1:] if heading is not None else body))
        if not has_text:
            # a heading directly followed by a sub-heading: carried into the next chunk's range
            pending_heading = pending_heading or (i, heading)
            continue
        first = i
        if pending_heading is not None:
            first = pending_heading[0]
            pending_heading = None
        label = _section_label(title, heading)
        for start, stop in _with_headings_joined(
            lines, split_long(lines[first : end + 1], first + 1)
        ):
            s, e = _trim(lines, start, stop)
            text = "\n".join(lines[s - 1 : e])
            if not text.strip():
                continue
            chunks.append(
                Chunk(
                    kind="section",
                    start_line=s,
                    end_line=e,
                    text=(f"{label}\n{text}" if label else text),
                    heading=heading,
                )
            )
    if pending_heading is not None and not chunks:
        i, heading = pending_heading
        chunks.append(
            Chunk(kind="section", start_line=i + 1, end_line=i + 1, text=lines[i], heading=heading)
        )
    return chunks


def _with_headings_joined(lines: list[str], pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """PIECES (1-based inclusive ranges of LINES), a piece that holds headings alone joined
    to the piece after it. A long section is cut at a blank line, and the only one may be
    right after a heading it carries ("## 2025-09-19", blank, "### docgen", 3,000
    characters of entries): a piece of the day's heading alone, under the label "2025-09-19
    > docgen", was the best search hit for "docgen" and brought nothing."""
    out: list[tuple[int, int]] = []
    carried: int | None = None
    for n, (start, stop) in enumerate(pieces):
        first = start if carried is None else carried
        # a few lines (the headings a section carries): a long run of lines that look like
        # headings (a fenced block of shell comments) stays cut, however it is joined
        headings_alone = stop - start < HEADINGS_JOINED_LINES and all(
            not x.strip() or _HEADING_RE.match(x) for x in lines[start - 1 : stop]
        )
        if headings_alone and n + 1 < len(pieces):
            carried = first
            continue
        out.append((first, stop))
        carried = None
    return out


def _section_label(title: str | None, heading: str | None) -> str:
    """What a section chunk's text starts with: the file's title (unless the heading path
    starts with it) and the heading path."""
    lead = title if heading and title and not heading.startswith(title) else None
    return " > ".join(x for x in (lead, heading) if x)


def chunk_file(relpath: str, text: str, category: str | None = None) -> FileChunks:
    """The chunks of one memory file (TEXT already decoded), with what the index keeps of
    the file beside them: its frontmatter's tags, its line and token counts."""
    text, lines, front_end, tags, warning = _file_lines(relpath, text, read_tags=True)
    chunks, title = _chunks(relpath, lines, front_end, category)
    return FileChunks(
        chunks=chunks,
        title=title,
        tags=tags,
        line_count=len(lines),
        token_count=count_tokens(text, remember=False),
        warnings=(warning,) if warning else (),
    )


def chunk_sections(relpath: str, text: str, category: str | None = None) -> tuple[Chunk, ...]:
    """The chunks `chunk_file` cuts, alone: for a reader that needs only the sections (the
    compiler), without parsing the frontmatter's YAML or counting the file's tokens."""
    _, lines, front_end, _, _ = _file_lines(relpath, text, read_tags=False)
    return _chunks(relpath, lines, front_end, category)[0]


def _file_lines(
    relpath: str, text: str, *, read_tags: bool
) -> tuple[str, list[str], int, tuple[str, ...], str | None]:
    """(the text with LF line ends, its lines, the index of the frontmatter's closing line
    or -1, tags, a warning or None)."""
    from autopoiesis.core import frontmatter

    text = frontmatter.normalize(text).replace("\r", "\n").replace("\x00", "")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return (text, lines, *_frontmatter(relpath, text, read_tags))


def _chunks(
    relpath: str, lines: list[str], front_end: int, category: str | None
) -> tuple[tuple[Chunk, ...], str | None]:
    """(chunks, title) of a file's LINES: a transcript by turn, anything else by heading
    section; a file of frontmatter alone (a topic with no body) is its frontmatter."""
    chunks: list[Chunk] = []
    title = None
    if category in ("conversation", "archive", None) or relpath.startswith("raw/"):
        chunks, title = chunk_transcript(lines, front_end)
    if not chunks:
        chunks, title = chunk_markdown(lines, front_end)
    if not chunks and front_end > 0:
        chunks = [
            Chunk(
                kind="section",
                start_line=1,
                end_line=front_end + 1,
                text="\n".join(lines[: front_end + 1]),
            )
        ]
    return tuple(chunks), title


def tags_json(tags: tuple[str, ...]) -> str:
    return json.dumps(list(tags), ensure_ascii=False)
