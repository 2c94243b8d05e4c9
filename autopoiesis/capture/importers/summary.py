"""The warnings of an import, told once per file.

An importer counts each malformed line it skips (`ImportReport.skip_line`: one warning a
line, "FILE:N: skipped (WHY)"). A log of 65 bad lines is one fact for its reader: "65
lines skipped: 60 not JSON, 5 bad timestamps". `summarize` makes that line for each
file, in the order the files were read, and so for the lines kept though their time
could not be read; it keeps every other warning as it is (once).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

# "SOURCE:N: skipped (WHY)": SOURCE may carry a part after '#' (FILE#history)
_SKIPPED = re.compile(r"^(?P<source>.+?):(?P<line>\d+): skipped \((?P<why>.*)\)$", re.S)
# "SOURCE:N: WHY; the line is kept, dated T (...)": a line whose time could not be read
_KEPT = re.compile(r"^(?P<source>.+?):(?P<line>\d+): (?P<why>.*); the line is kept, dated ", re.S)
_QUOTED = re.compile(r"""'[^']*'|"[^"]*\"""")
_POSITION = re.compile(r"^(?:items?\s*\[?\d+\]?:?\s*)")

# why -> (singular, plural): the common reasons in a reader's words
_KINDS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"not (readable )?JSON", re.I), "not JSON", "not JSON"),
    (
        re.compile(r"timestamp|ISO-8601|is not a time|out of range", re.I),
        "bad timestamp",
        "bad timestamps",
    ),
    (re.compile(r"a JSON \w+, not an object", re.I), "not a JSON object", "not JSON objects"),
    (re.compile(r"unknown (line|event) type", re.I), "of an unknown type", "of unknown types"),
    (re.compile(r"type .* is not a string", re.I), "without a type", "without a type"),
    (re.compile(r"^no (message\.)?content", re.I), "without content", "without content"),
    (re.compile(r"nested deeper", re.I), "nested too deep", "nested too deep"),
    (re.compile(r"not valid UTF-8", re.I), "not UTF-8", "not UTF-8"),
    (re.compile(r"NUL bytes", re.I), "with NUL bytes", "with NUL bytes"),
)


@dataclass
class _File:
    lines: int = 0
    first: int | None = None
    kinds: Counter[str] = field(default_factory=Counter)
    plurals: dict[str, str] = field(default_factory=dict)
    # of a kind told by its reason with the quoted values cut ("session_id … contains …"),
    # the first reason whole: the values say what to mend
    examples: dict[str, str] = field(default_factory=dict)


def reason_kind(why: str) -> tuple[str, str]:
    """WHY (a skipped line's reason) as a kind a reader counts: (singular, plural)."""
    for pattern, one, many in _KINDS:
        if pattern.search(why):
            return one, many
    plain = _QUOTED.sub("…", _POSITION.sub("", why)).strip() or "unreadable"
    return plain, plain


def summarize(warnings: Iterable[str]) -> list[str]:
    """WARNINGS with the skipped lines of each file told in one line, at the place of the
    file's first; other warnings as they are, each once."""
    out: list[str | _File | _Undated] = []
    files: dict[str, _File] = {}
    sources: dict[int, str] = {}
    seen: set[str] = set()
    kept: dict[str, _Undated] = {}  # source -> its lines kept without a readable time
    for w in warnings:
        m = _SKIPPED.match(w)
        undated = _KEPT.match(w) if m is None else None
        if undated is not None:
            source = undated["source"].split("#", 1)[0]
            if source not in kept:
                kept[source] = _Undated()
                out.append(kept[source])  # told at the place of the first of them
            kept[source].warnings.append(w)
            continue
        if m is None:
            if w not in seen:
                seen.add(w)
                out.append(w)
            continue
        source = m["source"].split("#", 1)[0]
        f = files.get(source)
        if f is None:
            f = files[source] = _File()
            sources[id(f)] = source
            out.append(f)
        f.lines += 1
        number = int(m["line"])
        f.first = number if f.first is None else min(f.first, number)
        one, many = reason_kind(m["why"])
        f.kinds[one] += 1
        f.plurals[one] = many
        if "\u2026" in one:
            f.examples.setdefault(one, _POSITION.sub("", m["why"]).strip())
    return [
        x
        if isinstance(x, str)
        else x.told()
        if isinstance(x, _Undated)
        else _line(sources[id(x)], x)
        for x in out
    ]


@dataclass
class _Undated:
    """The lines of one file kept though their time could not be read."""

    warnings: list[str] = field(default_factory=list)

    def told(self) -> str:
        """Told once: the first as it was said, and how many more."""
        more = len(self.warnings) - 1
        return (
            f"{self.warnings[0]}; so were {more} more lines of the file"
            if more
            else self.warnings[0]
        )


def _line(source: str, f: _File) -> str:
    def told(kind: str, n: int) -> str:
        if kind in f.examples:  # the first such reason as it was said
            return f.examples[kind] + (f" (and {n - 1} more like it)" if n > 1 else "")
        return kind if n == 1 else f.plurals[kind]

    if len(f.kinds) == 1:  # "60 lines skipped: not JSON"
        kind = next(iter(f.kinds))
        kinds = told(kind, f.lines)
    else:
        kinds = ", ".join(
            told(kind, n) if kind in f.examples else f"{n} {told(kind, n)}"
            for kind, n in f.kinds.most_common()
        )
    lines = "1 line" if f.lines == 1 else f"{f.lines} lines"
    return f"{source}: {lines} skipped: {kinds} (first at line {f.first}); every good line was kept"
