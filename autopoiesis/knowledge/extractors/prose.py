"""What in a coding session's text is somebody's own words (the v3 extractors read only
that): a message's prose, without what was pasted into it or printed by a tool.

A coding session's turns carry much that is not said by anyone: fenced code, diffs, stack
traces, linter and test output, tables, a form's field labels pasted as instructions,
headings. The v2 extractors read every sentence, so a pasted ESLint error became a
preference and a heading ("Makes Sense", "Web Search") a person; `prose_of` keeps the
sentences a person wrote, and `is_statement` refuses what is not a whole statement
(fragments such as "The setting is located in", bare imperatives such as "Let's
implement the plan.").

Pure functions over strings.
"""

from __future__ import annotations

import functools
import re

from autopoiesis.core.text import HARNESS_RECORD, said_by_the_harness, without_elements

_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_OPEN_FENCE = re.compile(r"^\s*(```|~~~).*\Z", re.MULTILINE | re.DOTALL)  # an unclosed one
# elements whose text nobody wrote as prose: HTML's code and folded blocks, and what a
# harness wraps around a message (core.text.HARNESS_RECORD: a slash command's words are a
# request, no statement)
_ELEMENTS = ("details", "summary", "pre", "code", *HARNESS_RECORD)


# a line that is output, code or markup rather than a sentence somebody wrote
_NOT_PROSE_LINE = re.compile(
    r"^\s*(?:#{1,6}\s|\||>|\$ |>>> |[+-]{3}|@@|at [\w.$<>]+ ?\(|File \"|Traceback\b|"
    r"[\w./-]+:\d+(?::\d+)?\b|\d+:\d+\s+(?:error|warning)\b|npm (?:ERR|WARN)|E\s{2,}|={3,}|"
    r"-{3,}|\*{3,}|_{3,}|[{}\[\]();]+\s*$|(?:import|from|def|class|const|let|var|function|"
    r"return|export|if|for|while)\b[^.!?]*[:{(=;]\s*$)"
    r"|(?:error|warning|exception|failed)(?:\[\w+\])?:\s|\b(?:Error|Exception)\b:"
    r"|\b[\w-]+/[\w-]+\b\s*\(?(?:eslint|ts\d+)",
    re.IGNORECASE,
)
# what code has and prose rarely does (a backtick, a semicolon or brackets are common in a
# developer's prose: "use `bun`; not node (it is slow)")
_CODEISH = re.compile(r"[{}\[\]=<>\\]|::|->|=>|\b\w+\.\w+\(|\b[a-z]+_[a-z_]+\b|\w\(\)?")
_FORM_LABEL = re.compile(r"\*\s*$")  # a pasted form's field label: "Prompt Type *"
_TITLE_WORD = re.compile(r"^[A-Z0-9][\w'’-]*$")
_LINK_ONLY = re.compile(r"^\W*(?:https?://|@)\S+\W*$")


# What the extractors read of one message: its head and its tail. A person's words are
# at the start of a message or at its end, around what they paste; a message of a MB is a
# paste or a log (500,000 short lines made its session's end wait 20 s for the extraction,
# each line tested as prose and each "sentence" against every cue).
READ_HEAD_CHARS = 48_000
READ_TAIL_CHARS = 16_000


def readable_part(text: str) -> str:
    """TEXT, or of a longer one its first READ_HEAD_CHARS and last READ_TAIL_CHARS
    characters, each cut at a line's end, a blank line between them."""
    if len(text) <= READ_HEAD_CHARS + READ_TAIL_CHARS:
        return text
    head = text[:READ_HEAD_CHARS]
    tail = text[-READ_TAIL_CHARS:]
    head = head[: head.rfind("\n") + 1] or head
    tail = tail[tail.find("\n") + 1 :] or tail
    return head + "\n" + tail


# Each extractor asks of the same turns (the journal, the lessons, the facts): the answer
# for a text is kept for the next one. A 1 MB message of 500,000 short lines was read line
# by line nine times over, and its session's end waited 20 s for the extraction.
def prose_of(text: str) -> str:
    """TEXT without fenced code, HTML blocks, and lines that are output, code, markup or a
    pasted form's labels; what is left is joined line by line as it was. Of a long TEXT,
    its readable part (`readable_part`)."""
    return _prose_of(readable_part(text))


@functools.lru_cache(maxsize=256)  # keys of at most 64 KB: readable parts
def _prose_of(text: str) -> str:
    text = _OPEN_FENCE.sub("", _FENCE.sub("", without_elements(text, _ELEMENTS)))
    kept = []
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            kept.append("")
            continue
        if (
            _NOT_PROSE_LINE.search(stripped)
            or _FORM_LABEL.search(stripped)
            or _LINK_ONLY.match(stripped)
            or is_heading(stripped)
            or line.startswith(("    ", "\t"))
            or code_share(stripped) > 0.3
        ):
            kept.append("")
            continue
        kept.append(line)
    return "\n".join(kept)


def looks_pasted(text: str) -> bool:
    """Whether a message is a pasted document rather than somebody writing: a form (field
    labels ending in "*"), or several headings (a task description, a README, a PR
    template), or a terminal's session copied whole (it opens with a shell's prompt:
    `SHELL_PROMPT`), or a message the harness sent in the user's role, as the summary that
    carries a compacted session on (`said_by_the_harness`). Nothing in it is its
    sender's own decision or preference."""
    return _looks_pasted(readable_part(text))


@functools.lru_cache(maxsize=256)  # keys of at most 64 KB: readable parts
def _looks_pasted(text: str) -> bool:
    if said_by_the_harness(text):
        return True
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    if lines and SHELL_PROMPT.match(lines[0]):
        return True
    labels = sum(bool(_FORM_LABEL.search(ln)) for ln in lines)
    titles = sum(is_heading(ln) for ln in lines)
    marked = sum(bool(_EMOJI_LEAD.match(ln)) for ln in lines)  # "🚨 Have you ...", "🔧 Code"
    questions = sum(ln.endswith("?") for ln in lines)  # a checklist: "Did you ...?"
    return (
        labels >= 1
        or titles >= 2
        or (len(lines) > 12 and titles >= 1)
        or (marked >= 1 and len(lines) >= 4)
        or (questions >= 3 and len(lines) >= 8)
    )


def lead_of(text: str) -> str:
    """The lines of TEXT before the first that opens something pasted: a heading, a code
    fence, a markup tag, a rule. What a user writes above a document they paste ("Always
    assume the fg video is the better one ... [the codebase, merged into one file]")."""
    lead = []
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped and (
            is_heading(stripped) or stripped.startswith(("```", "~~~", "<", "---", "==="))
        ):
            break
        lead.append(line)
    return "\n".join(lead).strip()


# A shell's prompt opening a line, a command or nothing after it: bash's
# "user@host:~/src$", zsh's "user@host folder %", macOS bash's "Host:folder user$", a
# virtualenv's "(venv) " before it, starship's "❯", PowerShell's "PS C:\src>".
SHELL_PROMPT = re.compile(
    r"^(?:\([\w.-]+\)\s+)?(?:[\w.-]+@[\w.-]+(?::\S*)?\s?[$#%]|[\w.-]+@[\w.-]+ \S+ [$#%]"
    r"|[\w.-]+:\S+ [\w.-]+[$#]|[❯➜]|PS [A-Za-z]:\\[^>\n]*>)(?:\s|$)"
)
_EMOJI_LEAD = re.compile(r"^[\u2190-\u2bff\u2700-\u27bf\U0001f000-\U0001faff]")


def code_share(text: str) -> float:
    """How much of TEXT is code punctuation and identifiers (0 for plain prose)."""
    return len(_CODEISH.findall(text)) / max(1, len(text.split()))


_BOLD_LINE = re.compile(r"\*\*[^*]+\*\*:?")
_LEAD_MARK = re.compile(r"^[^\w]+")


def is_heading(text: str) -> bool:
    """A line that titles rather than says: a Markdown heading, a bold line, or a few words
    each capitalised with no sentence end ("Makes Sense", "Web Search", "Cursor Response")."""
    t = text.strip()
    if t.startswith("#") or _BOLD_LINE.fullmatch(t):
        return True
    t = _LEAD_MARK.sub("", t)  # an emoji or a list mark before a title
    words = t.rstrip(":").split()
    return (
        0 < len(words) <= 6
        and not t.endswith((".", "!", "?"))
        and all(_TITLE_WORD.match(w) or w.lower() in _SMALL_WORDS for w in words)
    )


_SMALL_WORDS = {"a", "an", "and", "the", "of", "for", "to", "in", "on", "or", "with", "&", "-"}
# a sentence cut short: "The setting is located in"; with its full stop, only the words
# no sentence ends on ("I went to.", "push on." and "looking into." are whole)
# the words that announce a list, which came after the sentence ("Your scripts are in
# `scripts/` and include:")
_LIST_WORDS = r"includes?|including|contains?|containing|such as|namely"
_DANGLING = re.compile(
    r"\b(?:a|an|the|of|in|on|at|to|for|with|from|by|and|or|but|is|are|was|located|into|"
    r"that|which|this|these|our|your|its|their|as|than|via|like|following|"
    + _LIST_WORDS
    + r")\s*[:,]?$",
    re.IGNORECASE,
)
_DANGLING_STOPPED = re.compile(
    r"\b(?:a|an|the|of|and|or|but|is|are|was|located in|our|your|their|than|via)\s*[.!]$",
    re.IGNORECASE,
)
# plans whose object says nothing ("Let's implement the plan.", "let's proceed now")
_EMPTY_PLAN = re.compile(
    r"^(?:ok(?:ay)?[,.]?\s+|so[,]?\s+|now[,]?\s+|great[,.!]?\s+)?(?:let'?s|we(?:'ll| will)|i'?ll|"
    r"please)\s+(?:now\s+)?(?:\w+\s+){0,1}?(?:(?:it|this|that|these|those|them|the "
    r"(?:plan|changes?|fix(?:es)?|steps?|tasks?|implementation|code|above|rest|next step|same|"
    r"suggestions?|improvements?|issues?|tests?|todo|following))\b|now\b|again\b|ahead\b|on\b|"
    r"forward\b)[\s\w,]{0,20}[.!]?$",
    re.IGNORECASE,
)
# A plan whose object only points at what was said before or moves the conversation on:
# "let's add these updates to the task spec", "let's go with option 2", "let's switch
# gears", "let's switch back to the session workspace", "let's move onto our final to-dos".
# Read later, it decides nothing.
_POINTER_PLAN = re.compile(
    r"^(?:\w+[,.]?\s+){0,2}?(?:let'?s|we(?:'ll| will))\s+(?:\w+\s+){1,2}?"
    r"(?:(?:these|those)\s+\w+(?:\s+(?:to|in|into)\s+the\s+\w+(?:\s+\w+)?)?[.!]?$|"
    r"option\s+\w+[.!]?$|(?:the\s+)?(?:first|second|third|last|other)\s+one[.!]?$|gears\b|"
    r"back\s+to\b|onto\b)",
    re.IGNORECASE,
)


# an inline code span with nothing in it: an export that dropped what stood there ("the
# tests are located in the `` directory")
_EMPTY_CODE = re.compile(r"(?<!`)``(?!`)")


# the clause that announces a list the sentence does not hold ("Your scripts are located
# in `scripts/` and include:"); what comes before it may be whole
_LIST_ANNOUNCED = re.compile(
    r",?\s+(?:and\s+|which\s+|that\s+)?(?:"
    + _LIST_WORDS
    + r"|(?:are|is|were|was) the following)\s*:?\s*$",
    re.IGNORECASE,
)


def without_list_announcement(text: str) -> str:
    """TEXT without a last clause that announces a list it does not hold, when what is left
    is a whole statement ("Your scripts are located in `scripts/` and include" -> "Your
    scripts are located in `scripts/`."); else TEXT."""
    m = _LIST_ANNOUNCED.search(text)
    if m is None or m.start() == 0:
        return text
    head = text[: m.start()].rstrip(" ,;")
    # a clause of its own: a subject and what is said of it, not "The suite"
    whole = len(re.findall(r"[^\W\d_]{3,}", head)) >= 3 and is_statement(head)
    return head + "." if whole else text


def is_statement(text: str) -> bool:
    """Whether TEXT is a whole statement worth keeping: not a fragment ending on "in" or
    "the", not a heading, not a plan with no object ("Let's implement the plan.") or
    one that only points back or moves on ("Let's go with option 2."), not code or
    output, not a sentence whose code the export lost."""
    t = text.strip()
    if not t or is_heading(t) or t.endswith("…") or _EMPTY_CODE.search(t):
        return False
    if _DANGLING_STOPPED.search(t) if t.endswith((".", "!")) else _DANGLING.search(t):
        return False
    if _EMPTY_PLAN.match(t) or _POINTER_PLAN.match(t) or code_share(t) > 0.3:
        return False
    return not _NOT_PROSE_LINE.search(t)


__all__ = [
    "code_share",
    "is_heading",
    "is_statement",
    "lead_of",
    "looks_pasted",
    "prose_of",
    "without_list_announcement",
]
