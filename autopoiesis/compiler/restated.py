"""Later statements of the same subject: the later one wins.

A coding session says "limit it to 1 image a day" on Monday and "make it 3 a day" on
Thursday. Both turns match a question about the image limit; the first matches more of
its words and outranks the second, so at a small budget the context offered the stale
value alone. Among P3's hits, two transcript turns state the same subject when they
match the same words of the message (most of them, and at least two), share a good part
of their own words, and a sentence of the later one says it changes one of those words
(`core.text.CHANGE_CUE`: "instead", "now", "no longer", "make it", ...: without it, two
turns of one template about different things — "Omar asked whether the search index can
move", "... the rota can move" — would pass for one subject). Only what was said counts
(`said`): not a tool's output, a fenced block or a turn's heading. Then the later one is
ranked at least as high as the earlier (it enters the context whenever the earlier one
does) and the earlier is marked as earlier in the prompt, with the day of the statement
that replaced it.

Turns only: a knowledge file's entries carry no time of their own, and its superseded
entries are already left out (`formats.knowledge.current_text`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from autopoiesis.compiler.standing import stems
from autopoiesis.core.text import CHANGE_CUE, split_sentences
from autopoiesis.index.chunking import TURN_PREFIX

# How many of the best hits are compared (pairs grow with its square).
COMPARED = 40
# The share of the message's matched words two turns must have in common ...
SAME_QUERY_WORDS = 0.6
MIN_SHARED_QUERY_WORDS = 2
# ... and the share of all their words: the same subject, not two turns about different
# things that happen to use the message's words.
SAME_WORDS = 0.2
MIN_APART_SECONDS = 60.0  # statements closer in time are one exchange, not a change

# What of a hit's snippet (one line: search flattens it) is somebody's statement. A tool's
# output, a file's lines and a diff state nothing: their "has been updated successfully",
# "String to replace not found" and identifiers matched the change cue and the message's
# words: of the 18 restatements found for the third coding set's questions at 2K all were
# such pairs, and at 4K the first set's contexts marked 167 turns "[earlier; restated …]"
# (53 since, a few of them true). Left out: fenced blocks (one the snippet cuts open runs
# to its end), an exported session's tool marker ("Tool use: **Edit**") and an imported
# transcript's tool line but for its input (`> [tool:NAME] input → output`, the output up
# to the next turn's heading).
_FENCED = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
_TOOL_MARKER = re.compile(r"Tool use: \*\*[^*]*\**")
_TOOL_NAME = re.compile(r">?\s*\[tool:[^\]]*\]")
# A turn's heading in a chunk's text (index.chunking.TURN_PREFIX) is not said either: its
# speaker and month are in every turn of a session and made any two of them share the
# message's words ("what did the user want").
_TOOL_OUTPUT = re.compile(r"\s\u2192\s.*?(?=" + TURN_PREFIX + r"|\Z)", re.DOTALL)
_HEADING_RE = re.compile(TURN_PREFIX)


def said(text: str) -> str:
    """TEXT, a hit's snippet, without turn headings and what a tool printed or a file
    holds. A tool call's input stays: the command an agent ran is what it did, and a later
    "stop using python3, just python" changes that."""
    # each pattern only where its mark is: a compile reads forty snippets, most of them prose
    if "[tool:" in text:
        text = _TOOL_NAME.sub(" ", text)
    if "Tool use: " in text:
        text = _TOOL_MARKER.sub(" ", text)
    if "```" in text or "~~~" in text:
        text = _FENCED.sub(" ", text)
    if "\u2192" in text:
        text = _TOOL_OUTPUT.sub(" ", text)
    return _HEADING_RE.sub(" ", text)


@dataclass(frozen=True)
class Statement:
    """A hit as the comparison sees it: its text (the search snippet), when it was said
    (seconds since the epoch; None for no turn) and the project it was said in (None:
    none named). A later statement of one project restates nothing of another: "make it
    3 a day" in one codebase changes nothing another one said."""

    text: str
    when: float | None
    project: str | None = None


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def later_statements(
    query: str, statements: Sequence[Statement]
) -> dict[int, tuple[int, frozenset[str]]]:
    """For each statement that a later one restates, the index of the latest one that
    does and the words of QUERY they share (the subject; stems); indices into
    STATEMENTS, of which the first COMPARED are compared."""
    wanted = stems(query)
    # only turns are compared (a knowledge section has no time): read only theirs
    texts = [said(s.text) if s.when is not None else "" for s in statements[:COMPARED]]
    words = [stems(text) for text in texts]
    matched = [w & wanted for w in words]
    # the words of each statement's sentences that say a change: "make it 3 a day now"
    # changes the limit it names, not whatever else its turn mentions
    changes = [
        set().union(*(stems(x) for x in split_sentences(text) if CHANGE_CUE.search(x)))
        if CHANGE_CUE.search(text)
        else set()
        for text in texts
    ]
    out: dict[int, tuple[int, frozenset[str]]] = {}
    for i in range(len(words)):
        ti = statements[i].when
        if ti is None or len(matched[i]) < MIN_SHARED_QUERY_WORDS:
            continue
        for j in range(len(words)):
            tj = statements[j].when
            if tj is None or tj - ti < MIN_APART_SECONDS or not changes[j]:
                continue  # j must be later, and say that it changes something
            pi, pj = statements[i].project, statements[j].project
            if pi is not None and pj is not None and pi != pj:
                continue  # two codebases: neither changes what the other said
            if (
                matched[i] & matched[j] & changes[j]
                and len(matched[i] & matched[j]) >= MIN_SHARED_QUERY_WORDS
                and _jaccard(matched[i], matched[j]) >= SAME_QUERY_WORDS
                and _jaccard(words[i], words[j]) >= SAME_WORDS
            ):
                best = out.get(i)
                if best is None or (statements[best[0]].when or 0) < tj:
                    out[i] = (j, frozenset(matched[i] & matched[j]))
    return out
