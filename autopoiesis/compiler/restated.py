"""Later statements of the same subject: the later one wins.

A coding session says "limit it to 1 image a day" on Monday and "make it 3 a day" on
Thursday. Both turns match a question about the image limit; the first matches more of
its words and outranks the second, so at a small budget the context offered the stale
value alone. Among P3's hits, two transcript turns state the same subject when they
match the same words of the message (most of them, and at least two), share a good part
of their own words, and the later one says it changes something (`core.text.CHANGE_CUE`:
"instead", "now", "no longer", "make it", ...: without it, two turns of one template about
different things — "Omar asked whether the search index can move", "... the rota can
move" — would pass for one subject); then the later one is ranked at least as high as the earlier
(it enters the context whenever the earlier one does) and the earlier is marked as
earlier in the prompt, with the day of the statement that replaced it.

Turns only: a knowledge file's entries carry no time of their own, and its superseded
entries are already left out (`formats.knowledge.current_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from autopoiesis.compiler.standing import stems
from autopoiesis.core.text import CHANGE_CUE

# How many of the best hits are compared (pairs grow with its square).
COMPARED = 40
# The share of the message's matched words two turns must have in common ...
SAME_QUERY_WORDS = 0.6
MIN_SHARED_QUERY_WORDS = 2
# ... and the share of all their words: the same subject, not two turns about different
# things that happen to use the message's words.
SAME_WORDS = 0.2
MIN_APART_SECONDS = 60.0  # statements closer in time are one exchange, not a change


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
    words = [stems(s.text) for s in statements[:COMPARED]]
    matched = [w & wanted for w in words]
    changes = [bool(CHANGE_CUE.search(s.text)) for s in statements[:COMPARED]]
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
                len(matched[i] & matched[j]) >= MIN_SHARED_QUERY_WORDS
                and _jaccard(matched[i], matched[j]) >= SAME_QUERY_WORDS
                and _jaccard(words[i], words[j]) >= SAME_WORDS
            ):
                best = out.get(i)
                if best is None or (statements[best[0]].when or 0) < tj:
                    out[i] = (j, frozenset(matched[i] & matched[j]))
    return out
