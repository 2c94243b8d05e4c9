"""Secret redaction: the one owner every path to disk, git, memory.db or a model goes through.

`Redactor.redact(text)` replaces each secret, and only the secret, with `[redacted:KIND]`
and counts it per kind. Detection has three layers:

1. Anchors (redact_rules.ANCHORS), compiled with RE2 and run on the text's UTF-8 bytes:
   provider prefixes, a keyword next to an assignment, an assignment of a long token,
   `://` with an `@`, a password on a command line or in prose. Ordinary prose has none
   and returns untouched in microseconds (appending a message to a transcript stays well
   under a millisecond); otherwise each anchor flags its line, and only the rules of its
   family read it (one linear pass per family, so one family's anchor cannot hide
   another's).
2. Our own rules for the shapes providers issue (anchored on prefixes, lengths and
   alphabets; a prefix is found glued after `_` or letters, as in `MY_TOKEN_ghp_...`),
   for PEM and PuTTY blocks, credentials in URLs and on command lines, keyword
   assignments (`password=`, `api_key:`, `DB_PASSWORD=`, JDBC and INI), passwords said in
   prose, AWS STS JSON and console CSV, and high-entropy assignments.
3. detect-secrets' plugins (https://github.com/Yelp/detect-secrets): its regex detectors
   on the lines a provider anchor flags, its keyword detector and keyword plugins on the
   lines a keyword anchor flags and that hold their words, its Shannon-entropy measure;
   loaded on the first text that needs them (the library costs ~0.3 s to import).

Every finding is a span of the text. Spans are validated (look-alikes such as git SHAs,
UUIDs, digests, base64 images, `sk-learn`, `xoxo-hugs`, `mailto://john:doe@`, a prose
mention of a PEM header, templates like `${VAR}`, a keyword's value that is a call, a
number or another name (`password = input(...)`, `api_key = config.api_key`) are refused),
merged, and only they are replaced: the text around a secret stays byte for byte.
Detection runs on a same-length view of the text where JSON escapes (`\\n`, `\\t`,
`\\"`) read as what they stand for, so an escaped newline before
`aws_secret_access_key` does not hide it.

Extra patterns from `capture.redaction.extra_patterns` are compiled with RE2, whose
matching time is linear in the text: a pattern like `ID-(\\w+)+-X` cannot hang capture.

The pattern tables and the look-alike checks are redact_rules.py.
"""

from __future__ import annotations

import bisect
import functools
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autopoiesis.core.redact_checks import _VALIDATORS
from autopoiesis.core.redact_library import (
    _Anchors,
    _library_findings,
    _Span,
    compile_extra_pattern,
)
from autopoiesis.core.redact_rules import (
    BUILTIN_RULES,
    ESCAPE_VIEW,
    IMAGE_MAGIC,
    MARKER,
    PEM_BODY_LINE,
    PEM_BODY_WORD,
    PEM_FOOTER,
    PEM_LINE_MIN,
    PEM_QUOTE_PREFIX,
    WORDS_NEEDED,
    decoded_text,
)

if TYPE_CHECKING:
    from autopoiesis.core.config import Config


CONTEXT = 1024  # characters either side of a new marker that the next pass reads
# A secret one field of a record holds is looked for in its other fields (redact_fields)
# when it has KNOWN_MIN characters or more: a shorter one, `hunter2`, may be a word there.
KNOWN_MIN = 12


@dataclass
class Redactor:
    """Replace secrets in text with `[redacted:KIND]`; keeps a running count per kind.

    `extra` are (KIND, RE2 pattern) pairs from the config; `enabled=False` turns redaction off."""

    extra: Iterable[tuple[str, str]] = ()
    enabled: bool = True
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._extra = [(name, compile_extra_pattern(pattern)) for name, pattern in self.extra]
        # while redact_fields reads one record: each secret found, by its kind
        self._found: dict[str, str] | None = None

    def redact(self, text: str) -> str:
        """TEXT with every secret replaced by its marker. Idempotent by construction: a
        marker can change what a rule sees around it (`...secret]A=0000001234567A` reads
        as a fresh assignment once the token before `=` is a marker; a token glued to the
        secret after it ends only where that secret's marker begins), so the text around
        each new marker is passed again until no pass makes one. A later pass reads only
        the lines around the markers of the pass before, each cut to CONTEXT characters
        either side: a chain of N glued secrets takes N passes over a few KB each, never N
        passes over its whole line. It ends: a pass only turns text into markers, which no
        rule matches."""
        if not self.enabled or not text:
            return text
        text, marks = self._redact_piece(text)
        while marks:
            out: list[str] = []
            new: list[tuple[int, int]] = []
            pos = size = 0
            for start, end in _around(text, marks):
                out.append(text[pos:start])
                size += start - pos
                piece, found = self._redact_piece(text[start:end])
                new += [(a + size, b + size) for a, b in found]
                out.append(piece)
                size += len(piece)
                pos = end
            out.append(text[pos:])
            text, marks = "".join(out), new
        return text

    def redact_fields(self, texts: Sequence[str]) -> list[str]:
        """TEXTS, the fields of one record (a tool call's arguments and its result), each
        redacted, and a secret found in one redacted in all: no rule sees the bare token
        of `echo KEY | aws configure set aws_secret_access_key`, and its result
        `AWS_SECRET_ACCESS_KEY=KEY` says what it is. Only a secret of KNOWN_MIN
        characters or more is looked for in the others (a short one may be a word)."""
        self._found = {}
        try:
            out = [self.redact(t) for t in texts]
            found = self._found
        finally:
            self._found = None
        for value, kind in found.items():
            for i, text in enumerate(out):
                if value in text:
                    self.counts[kind] += text.count(value)
                    out[i] = text.replace(value, f"[redacted:{kind}]")
        return out

    def _redact_piece(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """TEXT redacted once, and the (start, end) of each new marker in the result."""
        seen = _Unhidden.of(text)
        # RE2 matches UTF-8: a lone surrogate reads as U+FFFD, same offsets
        safe = _encodable(seen.text if seen else text)
        _Anchors.load_prefilter()
        spans: list[_Span] = list(find_secrets(safe)) if _Anchors.prefilter.search(safe) else []
        spans.extend(_key_body_alone(safe))
        if self._extra:
            spans.extend(self._extra_findings(safe))
        if seen:
            spans = [seen.in_original(sp) for sp in spans]
        if spans and "[redacted:" in text:
            # a marker of an earlier pass is never (part of) a secret: redaction is idempotent
            spans = _outside_markers(text, spans)
        if not spans:
            return text, []
        out: list[str] = []
        marks: list[tuple[int, int]] = []
        pos = size = 0
        for span in _merge(spans):
            out.append(text[pos : span.start])
            size += span.start - pos
            if self._found is not None and span.end - span.start >= KNOWN_MIN:
                self._found.setdefault(text[span.start : span.end], span.kind)
            marker = f"[redacted:{span.kind}]"
            out.append(marker)
            marks.append((size, size + len(marker)))
            size += len(marker)
            self.counts[span.kind] += 1
            pos = span.end
        out.append(text[pos:])
        return "".join(out), marks

    def _extra_findings(self, safe: str) -> Iterable[_Span]:
        """The spans of the extra patterns, matched on the UTF-8 bytes of SAFE (RE2's own
        text: no translation of offsets per match; a pattern may match every word)."""
        data = safe.encode("utf-8")
        to_char = _CharOffsets(data, len(data) == len(safe))
        for rank, (kind, rx) in enumerate(self._extra, start=len(BUILTIN_RULES) + 10):
            to_char.rewind()
            for m in rx.finditer(data):
                start, end = m.span()
                if end > start:
                    yield _Span(to_char(start), to_char(end), kind, rank)


# What a reader of a secret does not see, or reads as another character: characters of
# no width (a zero-width space or joiner, a soft hyphen, a byte order mark, direction
# marks) inside a key, and a JSON `\\uXXXX` escape (`\\u0073k-ant-...`). Copied from a
# page or a log, the key is whole again: detection reads the text without them.
_HIDDEN_CHAR = re.compile(
    "[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
# searched apart from the characters: one pattern of both scans a MB in ~8 ms, the two
# (a class; a literal prefix) in ~3 ms, and every text with a character not ASCII pays it
_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}")


@dataclass(frozen=True)
class _Unhidden:
    """A text as detection reads it (_HIDDEN_CHAR characters out, escapes decoded), with what
    takes each of its offsets back to the text's: for each point where the two part, the
    offset in the read text from which on the original is SHIFTS[i] characters further."""

    text: str
    points: list[int]
    shifts: list[int]

    @staticmethod
    def of(text: str) -> _Unhidden | None:
        """TEXT as detection reads it, or None when it reads as it is (most texts: an ASCII
        text without a backslash is not searched)."""
        ascii_only = text.isascii()
        if ascii_only and "\\u" not in text:
            return None
        out: list[str] = []
        points: list[int] = []
        shifts: list[int] = []
        pos = size = shift = 0
        found = sorted(
            # (the escapes' own search is faster than `in` on a text not ASCII)
            [*(() if ascii_only else _HIDDEN_CHAR.finditer(text)), *_ESCAPE.finditer(text)],
            key=lambda m: m.start(),
        )
        for m in found:
            out.append(text[pos : m.start()])
            size += m.start() - pos
            seen = ""  # a hidden character is left out; an escape reads as its character
            if len(m.group()) > 1:  # (unless that is hidden too)
                seen = chr(int(m.group()[2:], 16))
                seen = "" if _HIDDEN_CHAR.fullmatch(seen) else seen
            out.append(seen)
            size += len(seen)
            shift += len(m.group()) - len(seen)
            points.append(size)
            shifts.append(shift)
            pos = m.end()
        if not points:
            return None
        out.append(text[pos:])
        return _Unhidden("".join(out), points, shifts)

    def offset(self, at: int) -> int:
        """The offset in the original text of offset AT of the read text. Hidden
        characters left out at AT lie before it: a span's start is its first character,
        and its end takes hidden characters or an escape that end it."""
        i = bisect.bisect_right(self.points, at) - 1
        return at + (self.shifts[i] if i >= 0 else 0)

    def in_original(self, span: _Span) -> _Span:
        return _Span(self.offset(span.start), self.offset(span.end), span.kind, span.rank)


def _outside_markers(text: str, spans: list[_Span]) -> list[_Span]:
    """The SPANS that overlap no `[redacted:KIND]` marker of TEXT: one bisection per span
    (a frequent extra pattern finds as many spans as there are markers)."""
    marks = [m.span() for m in MARKER.finditer(text)]
    if not marks:
        return spans
    starts = [b for b, _ in marks]
    kept = []
    for sp in spans:
        i = bisect.bisect_left(starts, sp.end) - 1  # the last marker starting before sp.end
        if i >= 0 and marks[i][1] > sp.start:
            continue
        kept.append(sp)
    return kept


def _around(text: str, marks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The stretches of TEXT a later pass reads around MARKS (in order): each mark's line
    with the line before and after it (a rule may read across one line break), cut to
    CONTEXT characters either side of the mark, at a space where there is one (a rule's
    start or end is never invented in the middle of a word), merged. Each search stops at
    the stretch already taken: linear, even for one long line full of markers."""
    out: list[tuple[int, int]] = []
    for start, end in marks:
        if out and end <= out[-1][1]:
            continue  # in the stretch already taken
        lo = max(out[-1][1] if out else 0, start - CONTEXT)
        nl = text.rfind("\n", lo, start)
        ls = lo if nl < 0 else max(lo, text.rfind("\n", lo, nl) + 1)
        if ls == start - CONTEXT and ls > 0:
            space = text.find(" ", ls, start)
            ls = ls if space < 0 else space + 1
        hi = min(len(text), end + CONTEXT)
        nl = text.find("\n", end, hi)
        nxt = -1 if nl < 0 else text.find("\n", nl + 1, hi)
        le = hi if nxt < 0 else nxt
        if le == end + CONTEXT and le < len(text):
            space = text.rfind(" ", end, le)
            le = le if space < 0 else space
        if out and ls <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], le))
        else:
            out.append((ls, le))
    return out


def marker_kinds(text: str) -> list[str]:
    """The KIND of every `[redacted:KIND]` marker in TEXT, in order: how a piece of an
    already redacted transcript (a continuation part) counts its own redactions."""
    return [m.group()[len("[redacted:") : -1] for m in MARKER.finditer(text)]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _merge(spans: list[_Span]) -> list[_Span]:
    spans.sort(key=lambda s: (s.start, s.rank, -s.end))
    merged: list[_Span] = []
    for s in spans:
        if merged and s.start < merged[-1].end:
            last = merged[-1]
            if s.end > last.end:
                merged[-1] = _Span(last.start, s.end, last.kind, last.rank)
            continue
        merged.append(s)
    return merged


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _lowercase(view: str) -> str:
    """VIEW in lowercase, same length and offsets (ASCII letters only where full lowercase
    would change a length, as `İ` does)."""
    low = view.lower()
    return low if len(low) == len(view) else view.translate(_ASCII_LOWER)


_ESCAPED = re.compile("\\\\[" + re.escape("".join(ESCAPE_VIEW)) + "]")


def _seen_escape(m: re.Match[str]) -> str:
    return ESCAPE_VIEW[m.group()[1]]


# `%3D` after a name and before a value, and `%26` before a name, read as `  =` and `  &`:
# three characters as three, so a span found in the view is the same span of the text. A
# value's own escaped padding (a signature's `...%3D%3D`) stays as it is, part of it.
_URL_ESCAPED = re.compile(r"%(?:(?<=\w%)3[dD](?=[^\s%&])|26(?=[A-Za-z_]))")


def _seen_url_escape(m: re.Match[str]) -> str:
    return "  =" if m.group()[1] == "3" else "  &"


def _url_unescaped(view: str, lines: Iterable[tuple[int, int]]) -> str:
    """VIEW with the URL escapes of `=` and `&` read as them (_URL_ESCAPED) on LINES, the
    lines a keyword anchor flags: a logged query string, `password%3DXq9z%26user%3Dbob`,
    is an assignment. Only those lines: a MB of text holds hundreds of `%`."""
    out: list[str] = []
    pos = 0
    for start, end in _close_ranges(sorted(lines)):
        if view.find("%", start, end) < 0:
            continue
        out.append(view[pos:start])
        out.append(_URL_ESCAPED.sub(_seen_url_escape, view[start:end]))
        pos = end
    if not out:
        return view
    out.append(view[pos:])
    return "".join(out)


def _lowercase_lines(view: str, lines: dict[str, list[tuple[int, int]]]) -> str:
    """VIEW with the lines its anchors flag (LINES, by family) in lowercase (_lowercase),
    the rest as it is: the rules read only those lines (and the line break before each),
    and lowercasing a MB that holds a character not ASCII costs ~2 ms."""
    flagged = _close_ranges(sorted(r for family in lines.values() for r in family))
    if not flagged:
        return view
    out: list[str] = []
    pos = 0
    for start, end in flagged:
        out.append(view[pos:start])
        out.append(_lowercase(view[start:end]))
        pos = end
    out.append(view[pos:])
    return "".join(out)


def _view(text: str) -> str:
    """TEXT as the detectors read it, same length: JSON escapes read as what they stand for,
    and the markers of an earlier pass are blanked (their KIND is no keyword to match)."""
    if "\\" in text:
        # two characters each, never overlapping (none ends with a backslash): one pass
        # for all of them (a str.replace per escape was five passes, ~7 ms a MB)
        text = _ESCAPED.sub(_seen_escape, text)
    if "[redacted:" in text:
        text = MARKER.sub(lambda m: "[" + " " * (len(m.group(0)) - 2) + "]", text)
    return text


# a case-insensitive rule runs without the flag on the lowercase copy of the text: its
# pattern's letters are lowercase (redact_rules), and case folding per character is what
# makes IGNORECASE slow; its validator reads the values from the text itself
_CASELESS = "(?i)"
_ON_LOWERCASE = {i for i, (*_, p) in enumerate(BUILTIN_RULES) if p.startswith(_CASELESS)}
# the rules whose match runs over several lines: matched where their first line starts
_MULTILINE = {"private_key": "-----BEGIN ", "putty_private_key": "Private-Lines:"}
# kind, check, rank, compiled pattern, what finds one of the words it needs (lowercase;
# one search of an alternation rather than a str.find per word) or None
_Rule = tuple[str, str, int, re.Pattern[str], re.Pattern[str] | None]


@functools.cache
def _by_family(multiline: bool) -> dict[str, list[_Rule]]:
    """The built-in rules of each family (those matched over several lines, or the
    others), compiled on the first text an anchor flags: compiling them all takes ~22 ms,
    which every process that imports the redactor paid, and most texts (a prompt's
    compiled context, a message of prose) have no anchor at all."""
    table: dict[str, list[_Rule]] = {}
    for rank, (kind, check, family, pattern) in enumerate(BUILTIN_RULES):
        if (kind in _MULTILINE) == multiline:
            words = WORDS_NEEDED.get((family, kind), ())
            needs = re.compile("|".join(map(re.escape, words))) if words else None
            rx = re.compile(pattern.removeprefix(_CASELESS))
            table.setdefault(family, []).append((kind, check, rank, rx, needs))
    return table


def find_secrets(text: str) -> list[_Span]:
    """Every secret span in TEXT, validated, not yet merged. Each family's anchors flag
    lines; the family's rules read only those lines, and a range of lines met again (a
    file read twice) is not read again: a rule's findings in it depend only on its text."""
    _Anchors.load()
    view = _view(text)
    lines = _flagged_lines(view)
    view = _url_unescaped(view, lines.get("keyword", ()))
    low = _lowercase_lines(view, lines)
    spans: list[_Span] = []
    for family, rules in _by_family(False).items():
        seen: dict[str, list[tuple[int, int, str, int]]] = {}
        for ls, le in lines.get(family, ()):
            piece = view[ls:le]
            found = seen.get(piece)
            if found is None:
                found = seen[piece] = [
                    (start - ls, end - ls, kind, rank)
                    for start, end, kind, rank in _rule_findings(rules, view, low, ls, le)
                ]
            spans.extend(
                _Span(ls + start, ls + end, kind, rank) for start, end, kind, rank in found
            )
        spans.extend(_multiline_findings(family, view, lines.get(family, [])))
    spans.extend(_pem_tail_findings(view, lines.get("provider", [])))
    spans.extend(_library_findings(view, lines["library:provider"], lines["library:keyword"]))
    return spans


def _multiline_findings(family: str, view: str, lines: list[tuple[int, int]]) -> list[_Span]:
    """What FAMILY's rules that run over several lines (a PEM block) find, matched where
    their first line is one of LINES."""
    spans: list[_Span] = []
    for kind, check, rank, rx, _ in _by_family(True).get(family, ()):
        first = _MULTILINE[kind]
        for ls, le in lines:
            at = view.find(first, ls, le)
            while at >= 0:
                m = rx.match(view, at)
                span = None if m is None else _VALIDATORS[check](m, view)
                if span is not None and span[1] > span[0]:
                    spans.append(_Span(span[0], span[1], kind, rank))
                at = view.find(first, at + 1, le)
    return spans


_PEM_RANK = next(rank for rank, (kind, *_) in enumerate(BUILTIN_RULES) if kind == "private_key")
_KEY_MATERIAL = re.compile(rf"[A-Za-z0-9+/]{{{PEM_LINE_MIN},}}")


def _pem_tail_findings(view: str, lines: list[tuple[int, int]]) -> list[_Span]:
    """The end of a private key whose header is not in VIEW (pasted over two messages, the
    first of which took the header): from the first line of its base64 body through its
    footer, found on LINES (a footer flags its line). A footer after prose, or alone, has
    no body before it and is left alone."""
    spans: list[_Span] = []
    for ls, le in lines:
        for footer in PEM_FOOTER.finditer(view, ls, le):
            start = _pem_body_start(view, footer.start())
            if start is not None:
                spans.append(_Span(start, footer.end(), "private_key", _PEM_RANK))
    return spans


# A text that is nothing but lines of base64: the middle of a private key pasted over three
# messages or more (or a reply streamed a message a step), whose header went with the first
# and whose footer will come with the last. The fullmatch fails at the first character of
# prose: the check costs nothing on other texts.
_BODY_ALONE = re.compile(r"\s*(?:[A-Za-z0-9+/]{40,}[ \t]*\r?\n)+[A-Za-z0-9+/]*={0,2}\s*")
_BODY_LINE_LENGTHS = range(60, 77)  # PEM's and PuTTY's 64, OpenSSH's 70, MIME's 76


def _key_body_alone(view: str) -> list[_Span]:
    """VIEW whole as a private key's material when it is only a key body's lines: two or
    more, all but the last of one length a key's lines have, the last no longer, holding
    a digit, `+` or `/`, and neither an image nor base64 of text (a key's DER is binary).
    A middle that is one line alone cannot be told from other data and stays."""
    if _BODY_ALONE.fullmatch(view) is None:
        return []
    lines = view.split()
    width = len(lines[0])
    if (
        width not in _BODY_LINE_LENGTHS
        or any(len(line) != width for line in lines[1:-1])
        or len(lines[-1]) > width
        or not re.search(r"[0-9+/]", view)
        or lines[0].startswith(IMAGE_MAGIC)
        or decoded_text("".join(lines)) is not None
    ):
        return []
    start = len(view) - len(view.lstrip())
    return [_Span(start, len(view.rstrip()), "private_key", _PEM_RANK)]


def _pem_body_start(view: str, footer: int) -> int | None:
    """Where the base64 body that ends at FOOTER begins, read back from it: the words of
    the footer's own line (a body whose line breaks were lost), then lines of one base64
    word each, up to a line of anything else. Only the last of the body's lines, or of its
    words, may be shorter than PEM_LINE_MIN. A quote mark that opens a word ends the body
    there. None when what is found holds no key material (a run of 16 base64 characters
    with a digit, `+` or `/`: not a word of prose)."""
    line_start = view.rfind("\n", 0, footer) + 1
    quoted = PEM_QUOTE_PREFIX.match(view, line_start, footer)  # a Markdown quote's `> `
    words_from = quoted.end() if quoted else line_start
    start = None
    ended = False
    for word in reversed(list(re.finditer(r"\S+", view[words_from:footer]))):
        m = PEM_BODY_WORD.fullmatch(word.group())
        if m is None or (start is not None and len(m.group("body")) < PEM_LINE_MIN):
            ended = True  # prose before the body on the footer's line: nothing above it
            break
        start = words_from + word.start() + m.start("body")
        if m.group("open"):
            ended = True
            break
    end = line_start - 1
    while not ended and end > 0:
        above = view.rfind("\n", 0, end) + 1
        m = PEM_BODY_LINE.fullmatch(view, above, end)
        if m is None or (start is not None and len(m.group("body")) < PEM_LINE_MIN):
            break
        start = m.start("body")
        ended = bool(m.group("lead").strip(" \t>"))  # a quote mark opened the body
        end = above - 1
    if start is None:
        return None
    material = any(
        re.search(r"[0-9+/]", run.group()) for run in _KEY_MATERIAL.finditer(view, start, footer)
    )
    return start if material else None


def _rule_findings(
    rules: list[_Rule], view: str, low: str, start: int, end: int
) -> Iterable[tuple[int, int, str, int]]:
    """What RULES find in VIEW[START:END] (whole lines): (start, end, kind, rank). LOW is
    VIEW in lowercase, what the case-insensitive rules read."""
    for kind, check, rank, rx, needs in rules:
        if needs is not None and needs.search(low, start, end) is None:
            continue
        validate = _VALIDATORS[check]
        for m in rx.finditer(low if rank in _ON_LOWERCASE else view, start, end):
            span = validate(m, view)
            if span is not None and span[1] > span[0]:
                yield span[0], span[1], kind, rank


def _flagged_lines(view: str) -> dict[str, list[tuple[int, int]]]:
    """For each rule family, the (start, end) of the lines of VIEW its anchors flag, in
    order. A line that ends with an assignment (`key =`, the value on the next line) takes
    the next line too.

    The anchors run on the UTF-8 bytes of VIEW (RE2's own text: no offset translation per
    match), from one flagged line to the start of the next (a line is flagged once,
    whatever its number of anchors); a line's byte offsets become character offsets as
    the lines go by."""
    data = view.encode("utf-8")
    ascii_only = len(data) == len(view)
    to_char = _CharOffsets(data, ascii_only)
    found: dict[str, set[tuple[int, int]]] = {}
    size = len(data)
    for _name, first_match, families in _Anchors.families:
        to_char.rewind()
        flagged: list[tuple[int, int]] = []
        pos = 0
        while pos < size:
            span = first_match(data, pos)
            if span is None:
                break
            start, end = span
            ls = data.rfind(b"\n", 0, start) + 1
            le = data.find(b"\n", end)
            if le < 0:
                le = size
            pos = le + 1
            if data[ls:le].rstrip().endswith((b"=", b":", b"=>")) and le < size:
                nxt = data.find(b"\n", le + 1)
                le = size if nxt < 0 else nxt
            flagged.append((ls, le) if ascii_only else (to_char(ls), to_char(le)))
        for family in families:
            found.setdefault(family, set()).update(flagged)
    lines = {family: _close_ranges(sorted(r)) for family, r in found.items()}
    # detect-secrets reads only the flagged lines themselves (it costs more per line)
    lines["library:provider"] = sorted(found.get("provider", ()))
    lines["library:keyword"] = sorted(found.get("keyword", ()))
    return lines


_GAP = 1  # flagged lines that touch are read in one go (a wider gap costs more than it saves)


def _close_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """RANGES (sorted) with the ones that overlap or lie within _GAP of each other joined:
    a rule reads the few lines between too, as it would read the whole text."""
    joined: list[tuple[int, int]] = []
    for start, end in ranges:
        if joined and start - joined[-1][1] <= _GAP:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


class _CharOffsets:
    """Byte offsets of DATA (UTF-8) as character offsets, for offsets that mostly increase
    (at character boundaries): each call decodes only the bytes between it and the last
    one, so a whole pass costs about one decoding of DATA."""

    def __init__(self, data: bytes, ascii_only: bool) -> None:
        self.data = data
        self.ascii_only = ascii_only
        self.rewind()

    def rewind(self) -> None:
        self.byte = self.char = 0

    def __call__(self, offset: int) -> int:
        if self.ascii_only:
            return offset
        if offset < self.byte:  # back to the line after a flagged one: decode the way back
            self.char -= len(self.data[offset : self.byte].decode("utf-8"))
        else:
            self.char += len(self.data[self.byte : offset].decode("utf-8"))
        self.byte = offset
        return self.char


def redactor_from_config(config: Config) -> Redactor:
    cap = config.capture
    return Redactor(
        extra=[(p.name, p.pattern) for p in cap.extra_patterns], enabled=cap.redaction_enabled
    )
