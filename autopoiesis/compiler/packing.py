"""P3 packing (docs/design.md#compilation): whole chunks of knowledge and transcripts, packed into
what
P0-P2 leave down to the history share.

A search hit is a chunk given as `path:start-end`: a turn in its exchange (a window of
turns) or a heading section. Packing works on the *units* of the file that holds it —
the turns of a transcript (a very long turn in pieces cut at paragraph breaks), the
index's heading sections of any other file — so an item is always whole units, never a
snippet cut mid-word. A very long turn is shown by whole lines: its first and those that
hold a word of the message (FOCUS_CHARS).

One queue, best first, holds two kinds of candidates:

* **a hit**, at its score: it adds the units its chunk covers. Hits that overlap or
  touch units already taken from the same file merge into one run, and a file's runs
  form one section. A hit whose turns do not fit what is left comes in as its own turn
  alone when that fits, else it is skipped; smaller ones after it still get their
  chance. There is no fixed number of hits.
* **the unit next to a hit's run**, at the hit's score times CONTEXT_DECAY for each
  unit it lies away: the turn that answers a question sits beside the turn that
  matches its words more often than anywhere else, so the context of a strong hit
  comes before a weak hit, and a weak hit before the far context of a strong one. A
  long unit (over CONTEXT_UNIT_CHARS) waits in proportion to its length: it costs what
  several hits would; the agent's reply to a user's turn waits less (REPLY_NEARNESS).

Packing ends when nothing left fits. (On LoCoMo, any decay from 0.6 to 0.95 holds an
evidence turn at 8K for 0.971 to 0.976 of the questions; filling hits first and context
after holds it for 0.955.)

How a section reads: its label names the path and the line spans it holds. A
transcript's turns are `HH:MM speaker: text` under a `[YYYY-MM-DD, Weekday]` line that
opens every run and every change of day, so every turn carries its date; a gap between
runs is `[…]`. A knowledge file's lines are its own, superseded entries left out (a
fact that was replaced is never offered as current), and a journal states its day
when the lines taken do not show it.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import PurePosixPath

from autopoiesis.compiler.plan import as_record
from autopoiesis.compiler.standing import says_anything, stems, without_shown
from autopoiesis.core.frontmatter import normalize
from autopoiesis.core.paths import category_of, team_of
from autopoiesis.core.text import without_bookkeeping
from autopoiesis.errors import AutopoiesisError
from autopoiesis.formats.knowledge import current_text
from autopoiesis.index.chunking import chunk_sections, split_long

GAP = "[\u2026]"
# How much less a unit is worth for each unit it lies away from a hit's chunk (see pack).
CONTEXT_DECAY = 0.85
# A context unit longer than this many characters comes later in the queue, in proportion
# (`_nearness`): in a coding session the turn beside a short instruction is often a long
# agent turn of tool output, and taking it first left later hits out. Coding questions
# (bench/bench_coding.py), evidence in the compiled context at 2K / 4K / 8K: 0.553 /
# 0.707 / 0.789 -> 0.577 / 0.732 / 0.813; LoCoMo, whose turns are short, 0.900 / 0.953 /
# 0.976 -> 0.897 / 0.953 / 0.975.
CONTEXT_UNIT_CHARS = 300
# ... but the agent's turn right after a user's is the reply to it, and the answer to what
# the user asked or reported is most often there ("I get these 2 warnings from runs: …",
# then the cause and the fix): however long, it waits at most as long as a unit
# 1/REPLY_NEARNESS times CONTEXT_UNIT_CHARS would. Coding questions, evidence / answer in
# the compiled context at 2K / 4K / 8K, each set as imported, streamed from another
# machine and as Markdown turns: 0.5 gained five (third set from elsewhere, 4K and 8K 0.833
# / 0.870 -> 0.852 / 0.889; second set's answers, a question at 4K and at 8K) and lost
# none; 0.4 gained three and 0.6 six, losing none; 0.7 gained ten and lost two, 1.0 lost
# about as many as it gained (a long reply takes the room of other hits).
REPLY_NEARNESS = 0.5
# A turn (or piece of one) longer than this many characters shows, in a compiled context,
# its first line and only the lines that hold a word of the message, each run of lines
# left out marked `[…]`: a long agent turn is mostly tool output and diffs, and taken
# whole at a small budget it cost what several more hits would. Its section names the
# lines it holds, not the whole turn (`Source.spans`). Kept whole when focusing would
# save less than FOCUS_MIN_SAVING of it.
FOCUS_CHARS = 1200
FOCUS_MIN_SAVING = 0.25
# A word of the message on more than this share of a long turn's lines (the project's
# name, "session" in a tool about sessions) singles out none of them: the lines shown
# are those of its rarer words, when the turn holds any (coding questions at 2K / 4K /
# 8K: 0.748 / 0.837 / 0.927 with every word, 0.764 / 0.878 / 0.943 with 0.1; from 0.05
# to 0.2 all within a question or two of that).
FOCUS_COMMON = 0.1
# Besides them, the few lines that hold the most words of the message (at least this many):
# a turn about the message's subject has its words on many lines, each too common to tell
# any apart, and the line that holds them together is the one that answers ("Add a
# `--only-cloud-sync` flag used to skip local save", in a pasted PR of many lines about
# cloud sync flags). Claude Code set, evidence at 2K / 4K / 8K 0.741 / 0.833 / 0.889 ->
# 0.759 / 0.852 / 0.907; the other two sets the same (at least three words: the same but
# for one question at 4K).
FOCUS_MOST_WORDS = 2
_FENCE_ONLY_RE = re.compile(r"^\s*(?:```|~~~)\S*\s*$")
_ISO_DAY_RE = re.compile(r"^\d{4}-\d\d-\d\d\Z")


def day_line(day: date) -> str:
    """The line that dates what follows it: `[2023-05-08, Monday]`."""
    return f"[{day.isoformat()}, {day.strftime('%A')}]"


@dataclass(frozen=True)
class Unit:
    """The smallest whole piece of a file that packing takes: a turn (or a piece of a
    very long one) or a heading section. Lines START..END of the file, 1-based."""

    start: int
    end: int
    text: str  # as rendered in the prompt ("" when nothing current is left of it)
    day: date | None = None  # a transcript turn's day
    minute: str | None = None  # a transcript turn's time of day, "HH:MM"
    # the file line of each line of TEXT: set for a turn longer than FOCUS_CHARS only,
    # which a compiled context may show in part (Source.focused)
    numbers: tuple[int, ...] = ()
    role: str = ""  # a transcript turn's speaker's role (user, agent, system)


@dataclass(frozen=True)
class Source:
    """A file as packing sees it: its units in file order."""

    path: str
    units: tuple[Unit, ...]
    day: date | None = None  # a journal's day (all its lines are of that day)
    turns: bool = False  # a transcript: units carry their own days
    # the stems of the message a long turn is focused on (`focused`); empty: shown whole
    focus: frozenset[str] = frozenset()
    _shown: dict[int, tuple[str, tuple[tuple[int, int], ...]]] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )

    def focused(self, wanted: Iterable[str]) -> Source:
        """This file as a context for a message of the stems WANTED: its long turns shown
        in part (FOCUS_CHARS). The units are shared, not copied."""
        if not self.turns:
            return self
        return replace(self, focus=frozenset(wanted), _shown={})

    def without_entries(self, ids: frozenset[str]) -> Source:
        """This file without its entries of IDS (`{id: ...}`: the ones the context holds
        above, `Plan.shown_ids`): a day's journal says "Decided: ..." with the id of the
        decision MEMORY.md shows, and a hit on it spent its room on the fact twice. A
        unit left with nothing but headings shows nothing. The file is copied only when
        it holds one of IDS; a transcript is shown as it is."""
        if self.turns or not ids:
            return self
        units = list(self.units)
        changed = False
        for i, u in enumerate(units):
            text, left = without_shown(u.text, ids)
            if left:
                units[i] = replace(u, text=text.strip("\n") if says_anything(text) else "")
                changed = True
        return replace(self, units=tuple(units), _shown={}) if changed else self

    def shown(self, i: int) -> tuple[str, tuple[tuple[int, int], ...]]:
        """Unit I as the context shows it, and the file lines that holds."""
        u = self.units[i]
        if not self.focus or not u.numbers:
            return u.text, ((u.start, u.end),)
        got = self._shown.get(i)
        if got is None:
            got = self._shown[i] = _focus_lines(u, self.focus)
        return got

    def covering(self, start: int, end: int) -> set[int]:
        """The units that share a line with START..END."""
        return {i for i, u in enumerate(self.units) if u.start <= end and start <= u.end}

    @staticmethod
    def runs(chosen: Iterable[int]) -> list[list[int]]:
        """CHOSEN unit indices as runs of consecutive ones, in file order."""
        out: list[list[int]] = []
        for i in sorted(chosen):
            if out and out[-1][-1] == i - 1:
                out[-1].append(i)
            else:
                out.append([i])
        return out

    def runs_spans(self, chosen: Iterable[int]) -> tuple[tuple[int, int], ...]:
        """The file lines from the first to the last unit of each run of CHOSEN (what a
        section's label names; a turn shown in part is marked `[…]` in its text)."""
        return tuple((self.units[r[0]].start, self.units[r[-1]].end) for r in self.runs(chosen))

    def spans(self, chosen: Iterable[int]) -> tuple[tuple[int, int], ...]:
        """The file lines CHOSEN shows: each run's, but for the lines a turn shown in part
        leaves out."""
        out: list[tuple[int, int]] = []
        for r in self.runs(chosen):
            start = len(out)
            for i in r:
                for a, b in self.shown(i)[1]:
                    # within a run, the lines between a unit shown to its end and the next
                    # one shown from its start (a blank line) go with them
                    if len(out) > start and (
                        a <= out[-1][1] + 1
                        or (a == self.units[i].start and out[-1][1] == self.units[i - 1].end)
                    ):
                        out[-1] = (out[-1][0], max(out[-1][1], b))
                    else:
                        out.append((a, b))
        return tuple(out)

    def render(self, chosen: Iterable[int], marks: Mapping[int, str] | None = None) -> str:
        return "\n".join(self.parts(chosen, marks))

    def parts(self, chosen: Iterable[int], marks: Mapping[int, str] | None = None) -> list[str]:
        """The lines of the rendering of CHOSEN (none starts or ends with a line break),
        a unit in MARKS opened by its mark (`restated`: "[earlier; restated ...]")."""
        parts: list[str] = []
        for n, run in enumerate(self.runs(chosen)):
            if n:
                parts.append(GAP)
            day: date | None = None
            for i in run:
                u = self.units[i]
                if self.turns and u.day is not None and u.day != day:
                    parts.append(day_line(u.day))
                    day = u.day
                text = self.shown(i)[0]
                if text:
                    parts.append(f"{marks[i]} {text}" if marks and i in marks else text)
        if self.day is not None and not any(self.day.isoformat() in p for p in parts):
            parts.insert(0, day_line(self.day))
        return parts


def _focus_lines(u: Unit, wanted: frozenset[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Unit U shown for a message of the stems WANTED: its first line (who spoke, and how
    the turn begins) and each line holding one of them (but for those on too many of its
    lines to tell any apart, FOCUS_COMMON), and the lines that hold the most of them
    (FOCUS_MOST_WORDS), a run of lines left out as `[…]`;
    and the file lines shown. Whole when no line holds one, or when showing part saves
    less than FOCUS_MIN_SAVING."""
    whole = u.text, ((u.start, u.end),)
    lines = u.text.split("\n")
    if len(lines) != len(u.numbers):
        return whole
    found = [
        stems(line) & wanted if j and not _FENCE_ONLY_RE.match(line) else set()
        for j, line in enumerate(lines)
    ]
    telling = _telling(found, FOCUS_COMMON * len(lines)) or set().union(*found)
    most = _most_words(found, FOCUS_COMMON * len(lines))
    keep = [j for j, words in enumerate(found) if j == 0 or words & telling or j in most]
    if len(keep) == 1:  # no line holds a word of the message (found by meaning): all of it
        return whole
    out: list[str] = []
    for n, j in enumerate(keep):
        if n and j != keep[n - 1] + 1:
            out.append("  " + GAP)
        out.append(lines[j])
    if keep[-1] != len(lines) - 1:
        out.append("  " + GAP)
    text = "\n".join(out)
    if len(text) > (1 - FOCUS_MIN_SAVING) * len(u.text):
        return whole
    spans: list[tuple[int, int]] = []
    for j in keep:
        a = u.start if j == 0 else u.numbers[j]  # the first line: from the turn's header
        b = u.end if j == len(lines) - 1 else u.numbers[j]
        if spans and a <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((a, b))
    return text, tuple(spans)


def _most_words(found: Sequence[set[str]], at_most: float) -> set[int]:
    """The lines of FOUND (each line's words of the message) that hold the most of them,
    when that is FOCUS_MOST_WORDS or more and they are AT_MOST lines."""
    best = max(map(len, found), default=0)
    if best < FOCUS_MOST_WORDS:
        return set()
    most = {j for j, words in enumerate(found) if len(words) == best}
    return most if len(most) <= at_most else set()


def _telling(found: Iterable[set[str]], at_most: float) -> set[str]:
    """The words of FOUND (each line's or step's words of the message) that are on AT_MOST
    of them: the ones that tell some apart."""
    on: dict[str, int] = {}
    for words in found:
        for w in words:
            on[w] = on.get(w, 0) + 1
    return {w for w, n in on.items() if n <= at_most}


def _lines(text: str) -> list[str]:
    # the same normalisation as the index's chunker, so line numbers agree with its hits
    lines = normalize(text).replace("\r", "\n").replace("\x00", "").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def transcript_source(path: str, text: str) -> Source | None:
    """The turns of a transcript as units, or None when TEXT is not one."""
    # the transcript format (its many patterns and classes) only when a transcript is
    # packed: a compile whose hits are all knowledge never needs it
    from autopoiesis.formats.specstory_markup import as_read, has_markup
    from autopoiesis.formats.transcript import HEADER_RE, parse_meta, turn_lines, unescape_line

    try:
        meta = parse_meta(text, path)
        spans = turn_lines(text, path)
    except AutopoiesisError:
        return None
    if not spans:
        return None
    lines = _lines(text)
    marked = has_markup(text)
    day = meta.started.date()
    units: list[Unit] = []
    for start, end in spans:
        m = HEADER_RE.match(lines[start - 1])
        if m is None:  # cannot happen: turn_lines found it with the same pattern
            continue
        if m["date"]:
            try:
                day = date.fromisoformat(m["date"])
            except ValueError:
                pass
        speaker = m["name"] or m["role"]
        body = [unescape_line(line) for line in lines[start:end]]
        read = marked and m["role"] == "agent"
        if read:  # as the index reads it (`as_read`)
            body = as_read("\n".join(body)).split("\n")  # line for line
        elif m["role"] == "user":  # without the harness's bookkeeping, as the index reads it
            said = without_bookkeeping("\n".join(body))
            read = said != "\n".join(body)
            body = said.split("\n")
        while body and not body[0].strip():
            body.pop(0)
        first = end - len(body) + 1
        pieces = split_long(body, first) if body else [(start, start - 1)]
        for k, (a, b) in enumerate(pieces):
            who = f"{m['time']} {speaker}" + (" (continued)" if k else "")
            # a turn's further lines are indented: none of them can read as a turn of its
            # own ("10:00 system: ...") or a day line, whatever the transcript says
            piece = body[a - first : b - first + 1]
            content = "\n  ".join(piece).strip("\n").strip()
            numbers: tuple[int, ...] = ()
            if len(content) > FOCUS_CHARS:  # the file line of each line shown (Unit.numbers)
                filled = [n for n, line in enumerate(piece) if line.strip()]
                numbers = tuple(range(a + filled[0], a + filled[-1] + 1))
            units.append(
                Unit(
                    start if k == 0 else a,
                    end if k == len(pieces) - 1 else b,
                    # a step of an export that says nothing to a reader (its thinking, a
                    # lookup: a Claude Code session's hundreds of them), or a user's turn
                    # of a harness's bookkeeping alone (`/exit`), shows nothing
                    f"{who}: {content}" if content else "" if read else f"{who}:",
                    day,
                    m["time"],
                    numbers,
                    m["role"],
                )
            )
    return Source(path, tuple(units), None, True)


def markdown_source(path: str, text: str) -> Source:
    """The index's heading sections of a Markdown file as units, superseded entries out,
    each as the context quotes a record (`as_record`)."""
    category = category_of(path)
    lines = _lines(text)
    units = []
    for c in chunk_sections(path, text, category):
        body = as_record(current_text("\n".join(lines[c.start_line - 1 : c.end_line])))
        units.append(Unit(c.start_line, c.end_line, body.strip("\n")))
    stem = PurePosixPath(path).stem
    day = date.fromisoformat(stem) if category == "journal" and _ISO_DAY_RE.match(stem) else None
    return Source(path, tuple(units), day)


def source_of(path: str, text: str) -> Source:
    """A file's units: a transcript by turn, anything else by heading section."""
    if path.startswith(("raw/", "archive/")):
        found = transcript_source(path, text)
        if found is not None:
            return found
    return markdown_source(path, text)


@dataclass(frozen=True)
class Hit:
    """A P3 candidate: a chunk of a file and its score (search x recency x frequency)."""

    path: str
    start: int
    end: int
    score: float
    base: float = 0.0
    recency: float = 1.0
    boost: float = 1.0
    # what the hit says (the search snippet) and when (epoch seconds; a transcript turn's),
    # and "[earlier; restated ...]" when a later turn states the same subject (restated.py)
    said: str = ""
    when: float | None = None
    mark: str = ""
    subject: frozenset[str] = frozenset()  # the words of the message the marked turn states
    via: str = ""  # a note no search hit holds, linked from this hit's file (compiler/scored)
    project: str | None = None  # the project of the hit's file (None: global)
    # the lines of the hit's own turn, inside START..END (its exchange), when the index
    # says which it is (SearchResult.own_start/own_end)
    own: tuple[int, int] | None = None

    def why(self) -> str:
        if self.via:
            return f"score {self.score:.4f}: linked from {self.via} ([[link]])"
        return (
            f"score {self.score:.4f} = search {self.base:.4f} x recency {self.recency:.2f} "
            f"x frequency {self.boost:.2f}" + ("; restated later" if self.mark else "")
        )


def section_label(path: str, spans: str, project: str | None = None) -> str:
    """The label of PATH's section holding the line SPANS ("3-9,14-20"): `knowledge:PATH:SPANS`,
    or a team's note as the team's (`team:NAME:knowledge/...:SPANS`); a file of PROJECT,
    another project than the one the context is compiled in, says so (`... (project
    shop)`): "in this repo we use uv" said in shop is no rule of the repository the agent
    is in, and the label is all that tells the two apart."""
    team = team_of(path)
    where = f" (project {project})" if project else ""
    if team is not None:
        return f"team:{team}:" + path.split("/", 2)[2] + ":" + spans + where
    return "knowledge:" + path + ":" + spans + where


@dataclass
class Packed:
    """One file's section: the units taken, why, and what it costs."""

    source: Source
    chosen: set[int] = field(default_factory=set)
    hits: list[Hit] = field(default_factory=list)
    tokens: int = 0
    context_units: int = 0  # units taken around the hits
    marks: dict[int, str] = field(default_factory=dict)  # unit -> its mark (Hit.mark)
    # the project of its file when that is another than the context's (section_label)
    other_project: str | None = None

    @property
    def path(self) -> str:
        return self.source.path

    def label(self, chosen: Iterable[int] | None = None) -> str:
        spans = self.source.runs_spans(self.chosen if chosen is None else chosen)
        return section_label(self.path, ",".join(f"{a}-{b}" for a, b in spans), self.other_project)

    def content(self, chosen: Iterable[int] | None = None) -> str:
        return self.source.render(self.chosen if chosen is None else chosen, self.marks)

    def parts(self, chosen: Iterable[int] | None = None) -> list[str]:
        return self.source.parts(self.chosen if chosen is None else chosen, self.marks)

    def reason(self) -> str:
        best = self.hits[0]
        more = f"; {len(self.hits)} hits" if len(self.hits) > 1 else ""
        around = f"; +{self.context_units} around them" if self.context_units else ""
        return best.why() + more + around


@dataclass
class Packing:
    """The outcome: the files packed, best first, and the hits that did not fit."""

    files: list[Packed]
    # (hit, its cost when it was tried, whether that cost is exact) of the files left out;
    # not exact: its file was not read, and the cost is the floor that was over what was left
    left_out: list[tuple[Hit, int, bool]]
    tokens: int
    crowded: bool = False  # some hit did not fit: more hits would not help


def _focus(src: Source, units: set[int], hit: Hit) -> set[int]:
    """The units of UNITS that are HIT's own turn (a chunk holds a turn and the turns
    around it): the units of its own lines when the index named them, else those of its
    day and minute (a hit given by a caller). Empty when that cannot be told, or when it
    is all of UNITS."""
    if not src.turns:
        return set()
    if hit.own is not None:
        own = src.covering(*hit.own) & units
    elif hit.when is not None:
        at = datetime.fromtimestamp(hit.when, UTC)
        minute = at.strftime("%H:%M")
        own = {i for i in units if src.units[i].minute == minute and src.units[i].day == at.date()}
    else:
        return set()
    return own if own != units else set()


def _steps_that_tell(src: Source, units: set[int], hit: Hit) -> set[int]:
    """UNITS without the steps of HIT's own turn that say nothing of the message: a reply
    a harness streamed a message a step is one turn to the index (its own lines), and
    many units here. Like a long turn's lines (`_focus_lines`), its first step stays, and
    of the rest those holding a word of the message that is not on most of them; all of
    them when none does."""
    if hit.own is None or not src.focus:
        return units
    own = sorted(src.covering(*hit.own) & units)
    if len(own) < 3:
        return units
    found = {i: stems(src.units[i].text) & src.focus for i in own[1:]}
    telling = _telling(found.values(), len(own) // 2)
    if not telling:
        return units
    quiet = {i for i, words in found.items() if not words & telling}
    return units - quiet


def _nearness(src: Source, unit: int, step: int) -> float:
    """What a context unit's size does to its priority: 1 up to CONTEXT_UNIT_CHARS, then
    in inverse proportion to its length. A unit is worth the same beside its hit whatever
    its size, but costs its tokens: a one-line chat turn next to a hit is cheap context, a
    long agent turn of tool output next to a short instruction costs what several more
    hits would. The agent's reply to a user's turn, reached from that turn (STEP 1), is
    never put further back than REPLY_NEARNESS."""
    if not 0 <= unit < len(src.units):
        return 1.0
    near = min(1.0, CONTEXT_UNIT_CHARS / max(1, len(src.units[unit].text)))
    if (
        step == 1
        and unit
        and src.units[unit].role == "agent"
        and src.units[unit - 1].role == "user"
    ):
        return max(near, REPLY_NEARNESS)
    return near


def pack(
    hits: Sequence[Hit],
    source_of_path: Callable[[str], Source | None],
    cap: int,
    cost: Callable[[str, Sequence[str]], int],
    *,
    decay: float = CONTEXT_DECAY,
    project: str | None = None,
) -> Packing:
    """Fill CAP tokens with the units of HITS and the units around them, best first; a
    file of another project than PROJECT (the context's) is labelled with its own.

    One queue orders both: a hit by its score, a unit next to a hit's run by that score
    times DECAY per unit of distance. SOURCE_OF_PATH gives a file's units (asked only
    for the files whose hits are reached and might fit); COST(label, parts) is what a
    section costs as rendered in the prompt (`Plan.cost_parts`), never less when its
    label or parts grow.

    A hit in a file not read yet costs at least its section's label with no spans and
    nothing in it. Once less than that is left, its file is not read (a session's
    transcript is hundreds of kilobytes, and once the budget is full every hit still in
    the queue would be read only to be left out: a cold `compile` on coding sessions read
    28 transcripts for nothing, a third of its time); it is left out at that floor."""
    sources: dict[str, Source | None] = {}
    files: dict[str, Packed] = {}
    order: list[str] = []
    left = cap
    left_out: list[tuple[Hit, int, bool]] = []
    # (-priority, sequence, hit, the unit next to its run, step -1/+1; step 0: the hit itself)
    queue: list[tuple[float, int, Hit, int, int]] = []
    seq = 0

    def push(priority: float, hit: Hit, unit: int, step: int) -> None:
        nonlocal seq
        heapq.heappush(queue, (-priority, seq, hit, unit, step))
        seq += 1

    def grow(p: Packed, add: set[int]) -> bool:
        """Take ADD into P when it fits."""
        nonlocal left
        new = p.chosen | add
        if new == p.chosen:
            return True
        tokens = cost(p.label(new), p.parts(new))
        if tokens - p.tokens > left:
            return False
        left -= tokens - p.tokens
        p.chosen, p.tokens = new, tokens
        return True

    for hit in hits:
        push(hit.score, hit, 0, 0)
    while queue and left > 0:
        negp, _, hit, unit, step = heapq.heappop(queue)
        if hit.path not in sources:
            floor = cost(
                section_label(hit.path, "", hit.project if hit.project != project else None), ()
            )
            if floor > left:
                left_out.append((hit, floor, False))
                continue
            sources[hit.path] = source_of_path(hit.path)
        src = sources[hit.path]
        if src is None:
            continue  # gone since it was indexed, or unreadable
        p = files.get(hit.path) or Packed(
            src, other_project=hit.project if hit.project != project else None
        )
        if step == 0:  # the hit itself: the units its chunk covers
            units = _steps_that_tell(src, src.covering(hit.start, hit.end), hit)
            units = {i for i in units if src.units[i].text}  # none: it shows nothing new
            if not units:
                continue
            marked = _marked_units(p, units, hit)
            p.marks.update(dict.fromkeys(marked, hit.mark))  # counted in the cost
            if not grow(p, units):
                new = p.chosen | units
                needed = cost(p.label(new), p.parts(new)) - p.tokens
                focus = _focus(src, units, hit)
                for at in marked:
                    if at not in focus:
                        del p.marks[at]
                if not (focus and grow(p, focus)):
                    left_out.append((hit, needed, True))
                    for at in marked:
                        p.marks.pop(at, None)
                    continue
                units = focus  # its own turn, when the turns around it do not fit
            if hit.path not in files:
                files[hit.path] = p
                order.append(hit.path)
            p.hits.append(hit)
            for nxt, st in ((min(units) - 1, -1), (max(units) + 1, 1)):
                push(-negp * decay * _nearness(src, nxt, st), hit, nxt, st)
            continue
        while 0 <= unit < len(src.units) and unit in p.chosen:
            unit += step  # another hit took it already: the context goes on beyond
        if not 0 <= unit < len(src.units) or not grow(p, {unit}):
            continue
        p.context_units += 1
        push(-negp * decay * _nearness(src, unit + step, step), hit, unit + step, step)
    packed = [files[p] for p in order]
    return Packing(
        packed, [x for x in left_out if x[0].path not in files], cap - left, bool(left_out)
    )


def _marked_units(p: Packed, units: set[int], hit: Hit) -> list[int]:
    """The units of UNITS that HIT's mark opens: those that state its subject (at least
    two of its words; a chunk holds its turn and the turns around it) and have no mark."""
    if not hit.mark:
        return []
    return [
        i
        for i in sorted(units)
        if i not in p.marks and len(stems(p.source.units[i].text) & hit.subject) >= 2
    ]
