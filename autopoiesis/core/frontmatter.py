"""YAML frontmatter, once: split a Markdown file into (frontmatter, body), load the YAML
into a mapping (python-frontmatter's YAML handler), and write values back.

Writers lay frontmatter out line by line — a transcript in its fixed key order, a
knowledge file by editing only the keys that change, so a hand-edited file keeps its
formatting — and every string they write goes through `scalar`.

Three rules every caller gets for free:

* **BOM and CRLF are handled here.** A leading byte-order mark is dropped and CRLF line
  ends become LF before anything looks for the `---` fences, so a file saved by an
  editor on Windows reads like any other.
* **Strings stay strings.** YAML 1.1 (PyYAML's dialect) reads `1:30` as the integer 90
  (base 60), `0x1F` as 31 and `1_000` as 1000. The loader here knows only plain decimal
  integers and floats, so a model, tag, id or name that looks like a number in another
  base stays the text it was. The dumper quotes every string that any YAML 1.1 reader
  would take for something else.
* **Errors say where and what.** A fence that is not closed, YAML that does not parse or
  a frontmatter that is not a mapping raise FrontmatterError naming the file.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from autopoiesis.errors import FrontmatterError

BOM = "\ufeff"
FENCE = "---"
_CLOSE = re.compile(r"^---[ \t]*$", re.MULTILINE)
# \Z, not $: $ also matches before a final newline, and "A\n" written plain reads back "A".
_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ .:/@+-]*\Z")
# The only plain texts starting with a letter that a YAML 1.1 reader takes for no string
# (_letter_first_str): a number, date, time or merge key starts with a digit, a sign or a dot.
_YAML11_WORDS = frozenset("y n yes no true false on off null".split())
_NONPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
# How deep a frontmatter's lists and mappings may nest: the memory writes two levels (a
# topic's triggers), and every reader walks values recursively (JSON, the index's chunks)
MAX_DEPTH = 64


class _Yaml:
    """PyYAML and python-frontmatter, loaded when a frontmatter is first parsed or a value
    first written: splitting a file (the compiler, search) never needs them, and importing
    them costs ~25 ms, most of it PyYAML building its reader's patterns.

    LOADER is PyYAML's safe loader (C-accelerated when available) without YAML 1.1's
    base-60, hex, octal, binary and underscore numbers. python-frontmatter parses the
    YAML (its handler, with that loader); the split stays ours: its fence pattern
    (`^-{3,}\\s*$`) also takes `----` and the blank lines after the closing fence, which
    would break the byte-exact round trip transcripts promise. RESOLVER is YAML 1.1's
    own: what any PyYAML reader would make of a plain scalar."""

    def __init__(self) -> None:
        import frontmatter as python_frontmatter
        import yaml

        base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class StringsLoader(base):
            pass

        StringsLoader.yaml_implicit_resolvers = {
            first: [
                (tag, rx)
                for tag, rx in resolvers
                if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
            ]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        StringsLoader.add_implicit_resolver(
            "tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789")
        )
        StringsLoader.add_implicit_resolver(
            "tag:yaml.org,2002:float",
            re.compile(
                r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
            ),
            list("-+0123456789."),
        )
        self.yaml = yaml
        self.loader = StringsLoader
        self.handler = python_frontmatter.YAMLHandler()
        self.resolver = yaml.resolver.Resolver()


@cache
def _yaml() -> _Yaml:
    return _Yaml()


def normalize(text: str) -> str:
    """TEXT without a leading BOM, with LF line ends."""
    if text.startswith(BOM):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text


def split(text: str, where: str = "file") -> tuple[str | None, str]:
    """(the frontmatter's YAML text or None when there is none, the body), both LF.

    The YAML text keeps its final newline ("" for an empty `---`/`---` block); the body is
    everything after the closing fence's line. Raises FrontmatterError when the opening
    fence is never closed."""
    text = normalize(text)
    if not (text.startswith(FENCE + "\n") or text == FENCE):
        return None, text
    close = _CLOSE.search(text, 4)
    if close is None:
        raise FrontmatterError(f"{where}: the frontmatter is not closed by a '---' line.")
    end = close.end() + 1 if close.end() < len(text) else close.end()
    return text[4 : close.start()], text[end:]


def _has_alias(y: _Yaml, source: str) -> bool:
    """Whether SOURCE's YAML events hold an alias (read without building a node)."""
    try:
        return any(isinstance(e, y.yaml.AliasEvent) for e in y.yaml.parse(source, Loader=y.loader))
    except y.yaml.YAMLError:
        return False  # the load below says what is wrong with it


def parse_yaml(source: str, where: str = "file") -> dict[str, Any]:
    """The mapping of a frontmatter's YAML text ({} when empty). An alias (`*name` of an
    `&name` anchor) is refused: no frontmatter the memory writes has one, and nine lines
    of them nested ("billion laughs") expand to billions of nodes: a pulled topic file
    held one, and `compile` and every prompt hook grew past 24 GB."""
    y = _yaml()
    if "&" in source and "*" in source and _has_alias(y, source):
        raise FrontmatterError(
            f"{where}: the frontmatter uses a YAML alias (`*name`); write each value out."
        )
    try:
        data = y.handler.load(source, Loader=y.loader)
    except RecursionError:  # PyYAML's pure-Python composer, without libyaml's own limit
        raise _too_deep(where) from None
    except y.yaml.YAMLError as exc:
        raise FrontmatterError(
            f"{where}{_line_of(exc)}: the frontmatter is not valid YAML ({_problem(exc)})."
        ) from exc
    except (ValueError, OverflowError) as exc:
        # a value YAML reads as a date or time that cannot be (`started: 2026-13-01`):
        # PyYAML's constructor raises a plain ValueError, which no reader expects
        raise FrontmatterError(
            f"{where}: the frontmatter holds a date or time that does not exist ({exc}); "
            "correct it, or quote it to keep it as text."
        ) from exc
    if data is None:
        return {}
    if _nested_deeper_than(data, MAX_DEPTH):
        # 990 levels of `[[[...]]]` in a pulled note crashed search, compile and the index
        # with RecursionError in whichever reader walked it first
        raise _too_deep(where)
    if not isinstance(data, dict):
        raise FrontmatterError(
            f"{where}: the frontmatter must be a YAML mapping (key: value lines)."
        )
    return data


def _line_of(exc: Exception) -> str:
    """', line N' of the file for a YAML error that knows where it is: the frontmatter's
    YAML starts on the file's line 2, after the opening fence."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f", line {mark.line + 2}" if mark is not None else ""


def _problem(exc: Exception) -> str:
    """What a YAML error says is wrong (`found character '\\t' that cannot start any
    token`), not only what the reader was doing (`while scanning a plain scalar`)."""
    problem = getattr(exc, "problem", None)
    if problem:
        return str(problem)
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _too_deep(where: str) -> FrontmatterError:
    return FrontmatterError(
        f"{where}: the frontmatter nests lists or mappings more than {MAX_DEPTH} levels "
        "deep; write its values flat (`key: value`, `tags: [a, b]`)."
    )


def _nested_deeper_than(data: Any, limit: int) -> bool:
    """Whether DATA's lists and mappings nest more than LIMIT levels (walked without
    recursion, so any depth is measured)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack += [(child, depth + 1) for child in children]
    return False


def load(text: str, where: str = "file") -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body); ({}, text) for a file without frontmatter."""
    source, body = split(text, where)
    return ({} if source is None else parse_yaml(source, where)), body


def scalar(value: Any) -> str:
    """VALUE as one YAML scalar, for writers that lay out frontmatter line by line.

    A string is written plain only when every YAML 1.1 reader reads it back as the same
    string; otherwise it is double-quoted (a JSON string is a YAML double-quoted scalar)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    if (
        _PLAIN.match(text)
        and not text.endswith((" ", ":"))
        and ": " not in text
        and " #" not in text
        and (_letter_first_str(text) or _reads_as_str(text))
    ):
        return text
    # YAML forbids the C1 controls and a few other code points that JSON leaves alone.
    return _NONPRINTABLE.sub(
        lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(text, ensure_ascii=False)
    )


def _letter_first_str(text: str) -> bool:
    """Whether TEXT (a plain scalar) starts with a letter and is no bool or null word: then
    every YAML 1.1 reader reads it as a string, spaces and colons or not (a date, a time, a
    number and a merge key all start otherwise). Asked before `_reads_as_str`, which loads
    PyYAML (~25 ms): a transcript's title and source are such texts, and the canonical
    frontmatter of each transcript a compile shows is rendered again
    (formats/transcript_meta.py)."""
    return text[:1].isascii() and text[:1].isalpha() and text.lower() not in _YAML11_WORDS


def _reads_as_str(text: str) -> bool:
    """Whether TEXT, written plain, reads back as a string both for any YAML 1.1 reader
    and for StringsLoader (which reads `1e3` as a number where YAML 1.1 does not)."""
    y = _yaml()
    if y.resolver.resolve(y.yaml.ScalarNode, text, (True, False)) != "tag:yaml.org,2002:str":
        return False
    resolvers = y.loader.yaml_implicit_resolvers
    return not any(
        rx.match(text) for _, rx in resolvers.get(text[:1], []) + resolvers.get(None, [])
    )
