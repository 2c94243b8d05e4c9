"""The `code` trigger: code in a message (fenced blocks, indented blocks or code-shaped
lines), optionally of given languages: the fence tag's, else guessed from keyword
signatures (see `detect_code`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from autopoiesis.formats.topic_trigger import Trigger, TriggerType
from autopoiesis.topics.triggers.common import FEATURE_SCAN_CHARS, Message, languages_parser

EXAMPLE = "languages: [python]"
_FENCE = re.compile(
    r"^[ \t]*```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.MULTILINE | re.DOTALL
)
_INDENTED_LINE = re.compile(r"^(?:    |\t)\S", re.MULTILINE)
_CODE_LINE = re.compile(
    r"^[ \t]*(?:def |class \w|import \w|from [\w.]+ import|function\b|const |let |var |"
    r"return\b|if \(|for \(|#include|package \w|func \w|fn \w|pub fn|public |private |"
    r"SELECT |INSERT |CREATE TABLE|\$ \w|#!/)"
    r"|[;{][ \t]*$|^[ \t]*\}",
    re.MULTILINE,
)


@cache
def _language_signatures() -> dict[str, re.Pattern[str]]:
    """Keyword signatures of each language, compiled on first use: the pre-commit hook
    imports this module to parse topics, and never guesses a language."""
    return {
        "python": re.compile(
            r"^[ \t]*(?:def \w+\(|class \w+[(:]|import \w|from [\w.]+ import|"
            r"elif |print[ (]|self\.)",
            re.M,
        ),
        "javascript": re.compile(
            r"\b(?:const|let|var) \w+ =|=>|function\s*\w*\(|console\.log|require\(", re.M
        ),
        "typescript": re.compile(
            r"\binterface \w+ \{|: (?:string|number|boolean)\b|\btype \w+ = ", re.M
        ),
        "go": re.compile(r"^[ \t]*(?:package \w+|func \w+\(|func \(\w)|:= |fmt\.", re.M),
        "rust": re.compile(r"\bfn \w+\(|\blet mut\b|\bimpl\b|println!|::new\(", re.M),
        "java": re.compile(r"\bpublic (?:static )?(?:class|void)\b|System\.out\.", re.M),
        "c": re.compile(r"^#include\s*<|\bprintf\(|\bint main\(", re.M),
        "shell": re.compile(
            r"^[ \t]*(?:\$ |#!/bin/(?:ba)?sh)|\b(?:sudo|apt-get|chmod|grep|echo) ", re.M
        ),
        "sql": re.compile(
            r"\b(?:SELECT\b[^\n]{1,200}?\bFROM|INSERT INTO|CREATE TABLE|UPDATE \w+ SET)\b",
            re.M | re.I,
        ),
        "html": re.compile(r"</?(?:div|span|html|body|p|a|script)\b[^>]*>", re.M),
    }


_FENCE_ALIASES = {
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "golang": "go",
    "rs": "rust",
    "sh": "shell",
    "bash": "shell",
    "zsh": "shell",
    "console": "shell",
    "cpp": "c",
    "c++": "c",
    "h": "c",
    "postgres": "sql",
    "sqlite": "sql",
}


@dataclass(frozen=True)
class CodeInfo:
    has_code: bool
    languages: frozenset[str] = frozenset()
    fenced_blocks: int = 0


def detect_code(text: str) -> CodeInfo:
    """Whether TEXT holds code, and a guess of its languages: the fence tag when there is
    one, else keyword signatures (two or more distinct code-shaped lines count as code)."""
    text = text[:FEATURE_SCAN_CHARS]
    langs: set[str] = set()
    fenced = 0
    bodies: list[str] = []
    if "```" in text:
        for m in _FENCE.finditer(text):
            fenced += 1
            tag = m.group(1).lower()
            if tag:
                langs.add(_FENCE_ALIASES.get(tag, tag))
            bodies.append(m.group(2))
    indented = len(_INDENTED_LINE.findall(text)) >= 2
    code_lines = len(_CODE_LINE.findall(text))
    has_code = fenced > 0 or indented or code_lines >= 2
    if has_code and not langs:
        sample = "\n".join(bodies) if bodies else text
        scores = {lang: len(rx.findall(sample)) for lang, rx in _language_signatures().items()}
        best = max(scores.values()) if scores else 0
        if best:
            langs.update(lang for lang, s in scores.items() if s == best)
    return CodeInfo(has_code, frozenset(langs), fenced)


def feature(message: Message) -> CodeInfo:
    return detect_code(message.text)


def match(trig: Trigger, _: Any, info: CodeInfo) -> str | None:
    if info.has_code and (not trig.languages or info.languages & set(trig.languages)):
        return ", ".join(sorted(info.languages)) or "code"
    return None


CODE = TriggerType(
    "code",
    True,
    languages_parser(EXAMPLE, iso=False),
    lambda t: ", ".join(t.languages) or "any code",
    EXAMPLE,
    (),
    ("languages",),
    feature=feature,
    match=match,
)
