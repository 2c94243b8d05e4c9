"""Knowledge entry files (docs/design.md#knowledge-files, docs/design.md#entry-ids): parse and
render, losslessly. No I/O.

A knowledge file is optional YAML frontmatter, then Markdown. Headings (`#` .. `######`)
split it into sections; a line of a section is either an **entry** or plain text::

    ---
    type: project_context
    project: autopoiesis
    updated: 2026-02-16T18:50:00Z
    entry_count: 2
    ---

    # Autopoiesis — Context

    ## Key Decisions
    - ~~2026-02-14: Keep SQLite (via ses_a1)~~ {id: 20260214-0905-0a1b2c}
    #superseded-by:20260216-1850-a1b2c3
    - 2026-02-16: Files are the source of truth (via ses_b2) {id: 20260216-1850-a1b2c3}
    #about:storage
    - a hand-written bullet, kept as it is

An entry is one bullet line ending in `{id: YYYYMMDD-HHMM-xxxxxx}` (docs/design.md#entry-ids's ids)
and
optional `#tags`. It may carry a date prefix (`2026-02-16: `, the design's MEMORY.md
style) and a citation. Superseding wraps the old body in `~~...~~` and appends
`#superseded-by:NEWID`; nothing is deleted.

**Citations are compact**: `(via SESSION)` names the session the fact was said in (its
transcript is `raw/conversations/**/HHMM-SESSION*.md`), and the id's `YYYYMMDD-HHMM` is
the time of the turn. So a citation costs a few tokens, and it holds no word of the
transcript's title slug for a search to match ("via" is a stopword). The older form
`(source: PATH @ TIME)` still reads and renders as it was written.

**One fact, one id.** An id is derived from the turn, the source and the fact, so the
same fact keeps its id wherever it is restated: a derived line (MEMORY.md, an index file,
a journal) carries the id of the canonical entry it restates. **`#about:SUBJECT`** tags an
entry that holds the current value of one subject (a date, a role, a preference): a
later value of that subject supersedes it.

**Current-state files** (everything under knowledge/ but journal/ and identity/) never
hold two live versions of a fact; journals are dated history and stay as written.

Lossless by construction: a line becomes an :class:`Entry` only when rendering that
entry gives back the very same line; anything else stays a plain string. So
`render(parse(text)) == text` for every text, hand edits included.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from autopoiesis.core.clock import format_minute, format_ts, utc
from autopoiesis.core.frontmatter import BOM, parse_yaml, scalar
from autopoiesis.core.paths import MEMORY_FILE
from autopoiesis.core.text import STOPWORDS
from autopoiesis.errors import FrontmatterError
from autopoiesis.formats.wikilinks import plain_text

ENTRY_ID_RE = re.compile(r"^\d{8}-\d{4}-[0-9a-f]{6}\Z")
_ENTRY_RE = re.compile(
    r"^- (?P<strike>~~)?(?:(?P<date>\d{4}-\d\d-\d\d): )?(?P<text>\S.*?)"
    r"(?: \(source: (?P<source>[^\s()]+) @ (?P<at>[0-9TZ:-]+)\)| \(via "
    r"(?P<ref>[^\s()]+)\))?(?(strike)~~)"
    r" \{id: (?P<id>\d{8}-\d{4}-[0-9a-f]{6})\}(?P<tags>(?: #[A-Za-z0-9_:.-]+)*)$"
)
_HEADING_RE = re.compile(r"^(?P<hashes>#{1,6}) (?P<title>.*)$")
_FM_KEY_RE = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_-]*):(?P<rest>.*)$")
SUPERSEDED_TAG = "superseded-by:"
SUBJECT_TAG = "about:"
CITATION_REF_CHARS = 24  # a session id longer than this (a UUID) is cited by its head
_REF_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")
HISTORY_DIRS = ("knowledge/journal/",)  # dated history: written once, never superseded
# A project file's sections that record what a session did (the files it changed, an error
# and its fix), not what stands: found when a message asks for them, never a convention
# that every prompt in the project carries (compiler/standing)
SECTION_CHANGES = "Changes"
SECTION_FIXES = "Errors and Fixes"
HISTORY_SECTIONS = frozenset({SECTION_CHANGES, SECTION_FIXES})
NOT_WRITABLE_DIRS = ("knowledge/identity/",)  # edited by people


def is_current_state(relpath: str) -> bool:
    """Whether RELPATH is a current-state knowledge file (MEMORY.md, projects, people,
    procedures, reference, the index files): one live version of each fact. Journals are
    dated history; identity files are people's."""
    return (
        relpath.startswith("knowledge/")
        and relpath.endswith(".md")
        and not relpath.startswith(HISTORY_DIRS + NOT_WRITABLE_DIRS)
    )


def id_turn_at(entry_id: str) -> str | None:
    """The turn time an entry id was made from, `YYYY-MM-DDTHH:MMZ` (None: not an id)."""
    if not ENTRY_ID_RE.match(entry_id):
        return None
    d, t = entry_id[:8], entry_id[9:13]
    return f"{d[:4]}-{d[4:6]}-{d[6:8]}T{t[:2]}:{t[2:]}Z"


def citation_ref(session: str) -> str:
    """How an entry cites the session SESSION: its id, one token, at most
    CITATION_REF_CHARS characters (a UUID is cited by its first 8 hex digits, which with
    the entry's date picks out its transcript)."""
    ref = _REF_UNSAFE.sub("-", session.strip()).strip("-.:") or "unknown"
    if len(ref) > CITATION_REF_CHARS:
        head = re.match(r"[0-9a-fA-F]{8}(?=-)", ref)
        ref = head.group(0) if head else ref[:CITATION_REF_CHARS].rstrip("-.:")
    return ref


def subject_slug(subject: str) -> str:
    """The tag form of a subject: its words but stopwords, lowercase, joined by '-', at
    most 32 characters (cut at a word): a tag costs a few tokens."""
    words = [
        w for w in re.findall(r"[a-z0-9]+", subject.lower()) if w not in STOPWORDS
    ] or re.findall(r"[a-z0-9]+", subject.lower())
    slug = ""
    for w in words:
        if slug and len(slug) + 1 + len(w) > 32:
            break
        slug = f"{slug}-{w}" if slug else w[:32]
    return slug


def make_entry_id(when: datetime, *salt: str) -> str:
    """Seed 002's id shape, `YYYYMMDD-HHMM-xxxxxx`, with the 6 hex digits derived from
    SALT (the source and the text) instead of os.urandom: replaying the same transcripts
    then gives the same ids, so two replays diff only where their knowledge differs."""
    digest = hashlib.blake2s("\x00".join(salt).encode("utf-8"), digest_size=3).hexdigest()
    return f"{utc(when).strftime('%Y%m%d-%H%M')}-{digest}"


def format_at(when: datetime) -> str:
    """Turn time of a citation: UTC, minute precision (transcript turns have minutes)."""
    return format_minute(when)


@lru_cache(maxsize=65536)
def normalize_fact(text: str) -> str:
    """The comparison form of an entry's fact: lowercase words only. Two entries with the
    same normalized fact say the same thing, whatever their punctuation, links or citation."""
    text = re.sub(r"\(source: [^)]*\)|\(via [^)]*\)", " ", plain_text(text))
    text = re.sub(r"\{id: [^}]*\}|#superseded-by:\S+|~~", " ", text)
    text = re.sub(r"^\s*[-*]\s+", "", text)
    text = re.sub(r"^\s*\d{4}-\d\d-\d\d:\s*", "", text)
    text = re.sub(r"\*\*", "", text)
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def bullet_fact(line: str) -> str | None:
    """The fact a bullet line states, as readable text: an entry's body (or a hand-written
    bullet) without its date prefix, citation, id, tags and markup. None when LINE is no
    bullet. What a commit message names when it says what was learned."""
    m = re.match(r"^\s*[-*]\s+(\S.*)$", line)
    if not m:
        return None
    text = re.sub(r"\s*\{id: [^}]*\}(?:\s+#[A-Za-z0-9_:.-]+)*\s*$", "", m.group(1))
    text = re.sub(r"\s*\((?:source: [^)]*|via [^)]*|raw/conversations/[^)\s]*)\)", "", text)
    text = text.replace("~~", "").replace("**", "")
    text = re.sub(r"^\d{4}-\d\d-\d\d:\s*", "", text)
    text = " ".join(text.split())
    return text or None


_NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "none",
        "nobody",
        "nothing",
        "without",
        "cannot",
        "dont",
        "don",
        "won",
        "isn",
        "aren",
        "wasn",
        "doesn",
        "didn",
        "shouldn",
    }
)
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
# Verbs that say where or how a thing is, not which thing: "X runs on port 5" and "X
# listens on port 5" state one fact. And short forms people use for the same word.
_LIGHT_VERBS = frozenset(
    """run runs running ran listen listens listening live lives living sit sits sitting stay stays
located locate host hosted hosting use uses using used keep kept set find found make made put
located reside resides residing remember note fyi way know""".split()
)
_SHORT_FORMS = {
    "db": "database",
    "dbs": "database",
    "prod": "production",
    "env": "environment",
    "repo": "repository",
    "config": "configuration",
    "docs": "documentation",
    "k8s": "kubernetes",
    "pg": "postgres",
    "postgresql": "postgres",
    "info": "information",
    "app": "application",
    "auth": "authentication",
}


@lru_cache(maxsize=65536)
def fact_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(content words, numbers) of a fact: what two phrasings of one fact share. Stopwords
    and light verbs go ("runs on", "listens on"), negations stay ("use X" and "no longer
    use X" differ), plurals, ordinals and short forms ("db", "prod") fold."""
    out: set[str] = set()
    nums: set[str] = set()
    for w in re.findall(r"[a-z0-9]+", normalize_fact(text)):
        m = _ORDINAL.match(w)
        if m or w.isdigit():
            nums.add(str(int(m.group(1) if m else w)) if len(w) < 12 else w)
            continue
        if w in _NEGATIONS:
            out.add("¬" + w)
            continue
        w = _SHORT_FORMS.get(w, w)
        if len(w) < 3 or w in STOPWORDS or w in _LIGHT_VERBS:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return frozenset(out), frozenset(nums)


def restates(new: str, old: str, *, share: float = 0.8) -> bool:
    """Whether NEW says nothing OLD does not: at least SHARE of NEW's content words are in
    OLD, its numbers all are, and both carry the same negations."""
    nw, nn = fact_words(new)
    ow, on = fact_words(old)
    if len(nw) + len(nn) < 2 or not nn <= on:
        return False
    if {w for w in nw if w[0] == "¬"} != {w for w in ow if w[0] == "¬"}:
        return False
    return len(nw & ow) >= share * len(nw)


@dataclass(frozen=True)
class Entry:
    """One bullet fact. `text` is the body without strike markup, date or citation.
    `source` is what the citation names (a session, or a transcript path in the older
    form); `at` is the older form's turn time (None in the compact form)."""

    id: str
    text: str
    date: str | None = None
    source: str | None = None
    at: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def turn_at(self) -> str:
        """The turn the fact was said in, `YYYY-MM-DDTHH:MMZ`: the citation's time, else
        the id's (an id is made from the turn's minute)."""
        if self.at and self.at != "-":
            return self.at
        return id_turn_at(self.id) or ""

    def said_order(self, latest: str) -> tuple[bool, str, str]:
        """Where this entry sorts among statements of one subject, the later last: by the
        turn it was said in, the id breaking a tie (so every clone orders alike). One
        dated past LATEST (now plus the clock's slack, as `YYYY-MM-DDTHH:MMZ`) sorts
        first: no clock said it then (a pulled entry dated 2099 superseded every value
        said since), so it never wins."""
        at = self.turn_at
        return (at <= latest, at if at <= latest else "", self.id)

    @property
    def subject(self) -> str | None:
        for t in self.tags:
            if t.startswith(SUBJECT_TAG):
                return t[len(SUBJECT_TAG) :]
        return None

    @property
    def superseded_by(self) -> str | None:
        for t in self.tags:
            if t.startswith(SUPERSEDED_TAG):
                return t[len(SUPERSEDED_TAG) :]
        return None

    @property
    def active(self) -> bool:
        return self.superseded_by is None

    def superseded(self, new_id: str) -> Entry:
        tags = tuple(t for t in self.tags if not t.startswith(SUPERSEDED_TAG)) + (
            SUPERSEDED_TAG + new_id,
        )
        return replace(self, tags=tags)

    def render(self) -> str:
        body = (f"{self.date}: " if self.date else "") + self.text
        if self.source and self.at is not None:
            body += f" (source: {self.source} @ {self.at})"
        elif self.source:
            body += f" (via {self.source})"
        if not self.active:
            body = f"~~{body}~~"
        return f"- {body} {{id: {self.id}}}" + "".join(f" #{t}" for t in self.tags)


Line = Entry | str


@dataclass(frozen=True)
class Section:
    """A heading and the lines up to the next heading. The preamble (lines before the
    first heading) is a Section with level 0 and no heading line."""

    level: int
    title: str
    lines: tuple[Line, ...] = ()

    def heading(self) -> str | None:
        return None if self.level == 0 else "#" * self.level + " " + self.title

    def entries(self) -> Iterator[Entry]:
        return (l for l in self.lines if isinstance(l, Entry))


@dataclass(frozen=True)
class KnowledgeDoc:
    """A parsed knowledge file. `frontmatter` is the raw YAML text between the `---`
    fences (None when the file has none); sections[0] is the preamble."""

    frontmatter: str | None
    sections: tuple[Section, ...] = field(default_factory=lambda: (Section(0, ""),))
    final_newline: bool = True
    bom: bool = False  # the file began with a byte order mark (Notepad's), kept in front

    # ── reading ──
    def meta(self) -> dict[str, Any]:
        """The frontmatter as a mapping ({} when absent or not a mapping)."""
        if not self.frontmatter:
            return {}
        try:
            return parse_yaml(self.frontmatter, "knowledge file")
        except FrontmatterError:
            return {}  # a hand edit broke the YAML: the file still reads, its metadata does not

    def entries(self) -> Iterator[tuple[Section, Entry]]:
        for s in self.sections:
            for e in s.entries():
                yield s, e

    def find_section(self, title: str) -> int | None:
        want = title.strip().lower()
        for i, s in enumerate(self.sections):
            if s.level and s.title.strip().lower() == want:
                return i
        return None

    def find_entry(self, entry_id: str) -> tuple[int, int] | None:
        for si, s in enumerate(self.sections):
            for li, l in enumerate(s.lines):
                if isinstance(l, Entry) and l.id == entry_id:
                    return si, li
        return None

    def facts(self, *, include_superseded: bool = False) -> set[str]:
        """Normalized facts of the file: entries, and hand-written bullet lines too."""
        out: set[str] = set()
        for s in self.sections:
            for l in s.lines:
                if isinstance(l, Entry):
                    if l.active or include_superseded:
                        out.add(normalize_fact(l.text))
                elif l.lstrip().startswith(("- ", "* ")):
                    n = normalize_fact(l)
                    if n:
                        out.add(n)
        out.discard("")
        return out

    def line_count(self) -> int:
        return render(self).count("\n")

    # ── changing (pure: each returns a new doc) ──
    def with_section(self, title: str, level: int = 2) -> tuple[KnowledgeDoc, int]:
        """(doc, index) of the section TITLE, appended at the end when missing."""
        i = self.find_section(title)
        if i is not None:
            return self, i
        sections = list(self.sections)
        last = sections[-1]
        # keep one blank line between the previous content and the new heading
        if last.lines and last.lines[-1] != "" or not last.lines and last.level > 0:
            sections[-1] = replace(last, lines=last.lines + ("",))
        elif not last.lines and last.level == 0 and self.frontmatter is not None:
            sections[-1] = replace(last, lines=("",))
        sections.append(Section(level, title, ()))
        return replace(self, sections=tuple(sections)), len(sections) - 1

    def append_line(self, section_index: int, line: Line) -> KnowledgeDoc:
        """LINE at the end of the section's content (before its trailing blank lines)."""
        s = self.sections[section_index]
        lines = list(s.lines)
        end = len(lines)
        while end > 0 and lines[end - 1] == "":
            end -= 1
        if end == 0 and not lines and section_index + 1 < len(self.sections):
            lines = [line, ""]
        else:
            lines.insert(end, line)
        sections = list(self.sections)
        sections[section_index] = replace(s, lines=tuple(lines))
        return replace(self, sections=tuple(sections))

    def replace_line(self, section_index: int, line_index: int, line: Line) -> KnowledgeDoc:
        s = self.sections[section_index]
        lines = list(s.lines)
        lines[line_index] = line
        sections = list(self.sections)
        sections[section_index] = replace(s, lines=tuple(lines))
        return replace(self, sections=tuple(sections))

    def remove_line(self, section_index: int, line_index: int) -> KnowledgeDoc:
        s = self.sections[section_index]
        lines = list(s.lines)
        del lines[line_index]
        sections = list(self.sections)
        sections[section_index] = replace(s, lines=tuple(lines))
        return replace(self, sections=tuple(sections))

    def with_meta(self, **values: Any) -> KnowledgeDoc:
        """Set top-level frontmatter keys to one-line YAML values, keeping every other
        line (comments, order, nested keys) as it was."""
        lines = self.frontmatter[:-1].split("\n") if self.frontmatter else []
        for key, value in values.items():
            rendered = f"{key}: {meta_value(value)}"
            for i, line in enumerate(lines):
                m = _FM_KEY_RE.match(line)
                if m and m["key"] == key:
                    # drop the block value lines of a nested or multi-line old value
                    j = i + 1
                    while j < len(lines) and (lines[j].startswith((" ", "\t", "- "))):
                        j += 1
                    lines[i:j] = [rendered]
                    break
            else:
                lines.append(rendered)
        return replace(self, frontmatter="".join(l + "\n" for l in lines))


_DATE_OR_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\dZ)?")


def meta_value(value: Any) -> str:
    """A one-line YAML value for a frontmatter key: core.frontmatter's scalar, except that
    sequences are flow lists and dates and UTC timestamps stay plain (as the design writes
    them, and so that they read back as dates)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(meta_value(v) for v in value) + "]"
    if isinstance(value, datetime):
        return format_ts(value)
    if isinstance(value, str) and _DATE_OR_TIMESTAMP.fullmatch(value):
        return value
    return scalar(value)


def refresh_counts(relpath: str, doc: KnowledgeDoc) -> KnowledgeDoc:
    """DOC with its frontmatter counts current: `entry_count` (when the file has entries or
    the key), and `line_count` for MEMORY.md (or when the key is there). The knowledge
    writer and the merge driver both call this, so a merged file counts as a written one."""
    if doc.frontmatter is None:
        return doc
    meta_keys = {m.group(1) for m in re.finditer(r"^([A-Za-z_][\w-]*):", doc.frontmatter, re.M)}
    count = sum(1 for _ in doc.entries())
    if count or "entry_count" in meta_keys:
        doc = doc.with_meta(entry_count=count)
    if relpath == MEMORY_FILE or "line_count" in meta_keys:
        if "line_count" not in meta_keys:
            doc = doc.with_meta(line_count=0)  # the key's own line counts too
        doc = doc.with_meta(line_count=doc.line_count())
    return doc


def parse_line(line: str) -> Line:
    """An Entry when LINE is one in canonical form, else LINE itself."""
    if not line.startswith("- ") or "{id: " not in line:
        return line
    m = _ENTRY_RE.match(line)
    if m is None:
        return line
    tags = tuple(t[1:] for t in m["tags"].split()) if m["tags"] else ()
    entry = Entry(m["id"], m["text"], m["date"], m["source"] or m["ref"], m["at"], tags)
    if bool(m["strike"]) == entry.active:  # strike markup and superseded-by tag disagree
        return line
    return entry if entry.render() == line else line


def parse(text: str) -> KnowledgeDoc:
    """Parse any text into a KnowledgeDoc; never fails (unknown shapes stay plain lines).

    The fences are found here, not by core.frontmatter.split: that one normalises BOM and
    CRLF and refuses an unclosed fence, and this parse must give back every byte. A
    leading byte order mark is set aside (`bom`), so the fence and a heading behind it
    are still found: a file an editor saved with one keeps its frontmatter, which a
    writer updates in place rather than putting a second one above it."""
    bom = text.startswith(BOM)
    if bom:
        text = text[len(BOM) :]
    frontmatter: str | None = None
    body = text
    if text.startswith("---\n"):
        end = text.find("\n---\n", 3)
        if end != -1:
            frontmatter = text[4 : end + 1]  # every line with its newline: "" for "---\n---\n"
            body = text[end + 5 :]
    final_newline = body.endswith("\n")
    raw_lines = body[:-1].split("\n") if final_newline else (body.split("\n") if body else [])
    sections: list[Section] = []
    current_level, current_title = 0, ""
    current: list[Line] = []
    in_fence = False
    for line in raw_lines:
        if line.startswith("```"):
            in_fence = not in_fence
            current.append(line)
            continue
        m = _HEADING_RE.match(line) if not in_fence else None
        if m is not None:
            sections.append(Section(current_level, current_title, tuple(current)))
            current_level, current_title, current = len(m["hashes"]), m["title"], []
            continue
        current.append(line if in_fence else parse_line(line))
    sections.append(Section(current_level, current_title, tuple(current)))
    return KnowledgeDoc(frontmatter, tuple(sections), final_newline, bom)


def render(doc: KnowledgeDoc) -> str:
    out: list[str] = []
    for s in doc.sections:
        h = s.heading()
        if h is not None:
            out.append(h)
        out.extend(l.render() if isinstance(l, Entry) else l for l in s.lines)
    body = "\n".join(out) + ("\n" if doc.final_newline else "")
    head = BOM if doc.bom else ""
    if doc.frontmatter is None:
        return head + body
    return f"{head}---\n{doc.frontmatter}---\n" + body


# A struck-through bullet that names its successor: the canonical entry, and the short
# form a person or another writer may use (`- ~~old~~ #superseded-by:ID`).
_SUPERSEDED_LINE_RE = re.compile(r"^\s*[-*+] .*~~.*\s#" + re.escape(SUPERSEDED_TAG) + r"\S+")


def is_superseded_line(line: str) -> bool:
    """True when LINE is a superseded entry (`- ~~old~~ ... #superseded-by:ID`): a fact
    that is history, not current."""
    return SUPERSEDED_TAG in line and _SUPERSEDED_LINE_RE.match(line) is not None


def current_text(text: str) -> str:
    """TEXT without its superseded entries: what a reader may take as current."""
    if SUPERSEDED_TAG not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not is_superseded_line(line))


# A live bullet that carries an entry id, canonical or hand-edited (a pasted copy may be
# reworded and still carry the id): `- ... {id: ID} ...`
_ID_BULLET_RE = re.compile(r"^\s*[-*+] .*\{id: (\d{8}-\d{4}-[0-9a-f]{6})\}")


def repeated_ids(text: str) -> list[tuple[str, int, int]]:
    """Each id that two live entries of TEXT carry, as (id, line of its first entry, line
    of the other), lines counted from 1 as an editor shows them: a copy-pasted entry. One
    id names one fact; with two, what finds an entry by its id (the viewer, a
    supersede's target) cannot tell them apart."""
    first: dict[str, int] = {}
    repeats: list[tuple[str, int, int]] = []
    in_fence = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        m = _ID_BULLET_RE.match(line) if not in_fence and "{id: " in line else None
        if m is None or is_superseded_line(line):
            continue
        if m[1] in first:
            repeats.append((m[1], first[m[1]], number))
        else:
            first[m[1]] = number
    return repeats


def new_doc(
    meta: dict[str, Any], title: str | None, sections: tuple[str, ...] = (), level: int = 2
) -> KnowledgeDoc:
    """A fresh file: frontmatter, `# TITLE`, empty sections separated by blank lines."""
    fm = "".join(f"{k}: {meta_value(v)}\n" for k, v in meta.items())
    pre: list[Line] = [""]
    if title:
        pre.append(f"# {title}")
    secs = [Section(0, "", tuple(pre + ([""] if sections and title else [])))]
    for i, name in enumerate(sections):
        secs.append(Section(level, name, ("",) if i < len(sections) - 1 else ()))
    return KnowledgeDoc(fm, tuple(secs), True)


__all__ = [
    "SUBJECT_TAG",
    "Entry",
    "KnowledgeDoc",
    "Line",
    "Section",
    "citation_ref",
    "current_text",
    "fact_words",
    "format_at",
    "id_turn_at",
    "is_current_state",
    "is_superseded_line",
    "make_entry_id",
    "meta_value",
    "new_doc",
    "normalize_fact",
    "parse",
    "parse_line",
    "refresh_counts",
    "render",
    "repeated_ids",
    "restates",
    "subject_slug",
]
