"""Question sets for `autopoiesis eval`: LoCoMo's JSON or JSONL, read into `Question`s.

JSONL, one object a line (every key optional but `question`, or `stale` alone)::

    {"id": "q001", "question": "Which pooler do we use?", "answer": "HikariCP",
     "answer_pattern": "hikari ?cp", "kind": "lexical", "project": "billing",
     "evidence": ["raw/conversations/2026/03/02/0900-s1-pool.md:14", "we use HikariCP"],
     "stale": ["PgBouncer in transaction mode"]}

`answer_pattern` is a regex in RE2's syntax (Python's, without backreferences or
lookaround), matched case-insensitively against a context's text in linear time;
a question with an `answer` but no pattern gets the pattern `answer_pattern_of` derives
from it. `kind` (lexical, paraphrase, temporal, preference, ... any name) and `project`
(a project's slug) group the figures. A key the loader does not know is reported as a
warning (`QuestionSet.warnings`, printed by the command), not silently ignored.

LoCoMo: a list of samples with `conversation` and `qa`; the evidence ids become the text
of those turns; categories 1-4, each question's `kind` its category's name.

**The derived answer pattern** (`answer_pattern_of`): every content word of the answer
(`knowledge_recall.answer_words`: lower-cased, stopwords out, plurals folded), each as a
whole word with an optional plural ending, in any order anywhere in the context. Chosen
over "the exact answer ignoring case and punctuation" because LoCoMo's answers are
written by annotators, not quoted ("Adoption agencies" when the turn says "looking into
agencies for adoption"; "7 May 2023" beside "May 7"): the exact form would score the
annotator's wording, the content words score the facts. It is the same rule as the
answer recall in knowledge/, so the two figures read alike, and the same for every
context (compiled and baseline), so it can only favour neither. One allowance for the
form: a date in the answer ("7 May 2023", "May 2023") also counts as its ISO form
("2023-05-07", "2023-05"), the form in which a context dates its turns.
"""

from __future__ import annotations

import codecs
import functools
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopoiesis.errors import QuestionSetError
from autopoiesis.eval.knowledge_recall import answer_words
from autopoiesis.formats.topic_trigger import check_regex, re2_options

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
JSONL_KEYS = (
    "id",
    "question",
    "answer",
    "answer_pattern",
    "evidence",
    "kind",
    "project",
    "stale",
    "category",
)


@dataclass(frozen=True)
class Question:
    question: str | None
    answer: str | None = None
    evidence: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    category: int | None = None
    id: str | None = None
    kind: str | None = None
    project: str | None = None
    # the regex the context's text must match (case-insensitive); None: not scored
    answer_pattern: str | None = None
    # where the question set has it (`file:line`), for what a warning about it names
    where: str | None = field(default=None, compare=False)

    def answer_in(self, text: str) -> bool | None:
        """Does TEXT hold the answer (its pattern matches what it says, not its addresses:
        see `_ADDRESSES`)? None without a pattern."""
        if self.answer_pattern is None:
            return None
        said = _ADDRESSES.sub(" ", text)
        return _matcher(self.answer_pattern)(said.encode("utf-8", "replace").decode())


@functools.lru_cache(maxsize=1024)
def _matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a text holds PATTERN, case-insensitively. A question set's own pattern runs
    on RE2, in time linear in the context: on Python's backtracking engine `(a+)+$`
    against a context with a long run of a's never ended, and neither did the eval
    (`_pattern` refuses at load what RE2 cannot run). The one kind RE2 refuses that is
    matched here is the derived pattern (`answer_pattern_of`), whose lookaheads of escaped
    words, one scan each, cannot backtrack."""
    import re2

    options = re2_options()
    options.case_sensitive = False
    try:
        linear = re2.compile(pattern, options)
    except re2.error:
        derived = re.compile(pattern, re.IGNORECASE)
        return lambda text: derived.search(text) is not None
    return lambda text: linear.search(text) is not None


# What a compiled context says where something is, not what: a section's label (its file
# and lines, `<!-- knowledge:raw/conversations/2025/07/28/1427-...-slug.md:9-12 -->`), an
# entry's id and citation (`{id: 20250728-1427-dc0c17}`, `(via specstory_0298f9e2a674)`)
# and its tags; and its notes of what it left out (`[… left out for room: 22 of the 29
# entries of "Preferences" (1238 tokens); read knowledge/memory/MEMORY.md]`, `[… truncated:
# 812 more bytes in ...]`, `[…]`). An answer pattern met only there ("17" in an id's hex,
# a word of a file's slug, "22" in a count of entries left out) is no answer, and BM25's
# packed turns, which it is compared with, carry none.
_ADDRESSES = re.compile(
    r"<!--[^\n]*?-->|\{id: [^}\n]*\}|\(via [^)\s]*\)|#(?:about|superseded-by):\S+"
    r"|\[\u2026[^\]\n]*\]"
)


_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_MONTH = "(?P<month>" + "|".join(_MONTHS) + ")"
_DATES = (  # "7 May 2023", "May 7, 2023", "May 2023"
    re.compile(rf"\b(?P<day>\d{{1,2}}) {_MONTH},? (?P<year>\d{{4}})\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH} (?P<day>\d{{1,2}}),? (?P<year>\d{{4}})\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH},? (?P<year>\d{{4}})\b", re.IGNORECASE),
)


def _all_words(found: set[str] | frozenset[str]) -> str:
    return "".join(rf"(?=[\s\S]*?\b{re.escape(w)}(?:e?s)?\b)" for w in sorted(found))


def answer_pattern_of(answer: str) -> str | None:
    """The answer pattern derived from ANSWER (see the module docstring): all its content
    words, whole words, plural endings allowed, in any order; a date's words may stand
    instead as its ISO form (`2023-05-07`, `2023-05` for a month), as contexts date their
    turns. None when the answer has no content word."""
    rest = set(answer_words(answer))
    if not rest:
        return None
    dates = []
    text = answer
    for form in _DATES:
        for m in form.finditer(text):
            month = _MONTHS.index(m["month"].lower()) + 1
            day = m.groupdict().get("day")
            iso = f"{m['year']}-{month:02d}" + (f"-{int(day):02d}" if day else "")
            parts = answer_words(m.group(0))
            rest -= parts
            dates.append(rf"(?:{_all_words(parts)}|(?=[\s\S]*?\b{iso}\b))")
        text = form.sub(" ", text)  # a date is read once, by its longest form
    return r"\A" + _all_words(rest) + "".join(dates)


@dataclass(frozen=True)
class QuestionSet:
    """Questions from one file: one group for JSONL, one per conversation for LoCoMo."""

    source: str
    kind: str  # "jsonl" | "locomo"
    groups: tuple[tuple[Question, ...], ...]
    # LoCoMo: turn texts of each conversation, to find the one a repo holds
    probes: tuple[tuple[str, ...], ...] = ()
    warnings: tuple[str, ...] = ()  # keys the loader does not know, where first seen


def _locomo(data: list[Any], source: str) -> QuestionSet:
    from autopoiesis.eval.locomo import normalise_evidence, sessions_of

    groups, probes = [], []
    for n, sample in enumerate(data):
        conv = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conv, dict) or not isinstance(sample.get("qa"), list):
            raise QuestionSetError(
                f"{source}: sample {n} has no 'conversation' and 'qa'; is this LoCoMo's JSON?"
            )
        turns = {}
        for s in sessions_of(conv):
            for t in conv[f"session_{s}"]:
                found = normalise_evidence([str(t.get("dia_id", ""))])
                if found and isinstance(t.get("text"), str):
                    turns[found[0]] = t["text"]
        qs = []
        for k, q in enumerate(sample["qa"]):
            if (
                not isinstance(q, dict)
                or q.get("category") not in LOCOMO_CATEGORIES
                or not isinstance(q.get("question"), str)
            ):
                continue
            ev = tuple(
                turns[e]
                for e in normalise_evidence([str(x) for x in q.get("evidence") or []])
                if e in turns
            )
            answer = None if q.get("answer") is None else str(q["answer"])
            qs.append(
                Question(
                    q["question"],
                    answer,
                    ev,
                    (),
                    q["category"],
                    id=f"{n}:{k}",
                    kind=LOCOMO_CATEGORIES[q["category"]],
                    answer_pattern=answer_pattern_of(answer) if answer else None,
                )
            )
        groups.append(tuple(qs))
        probes.append(tuple(list(turns.values())[:12]))
    return QuestionSet(source, "locomo", tuple(groups), tuple(probes))


def _strings(value: Any, what: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise QuestionSetError(f"{where}: {what} must be a list of strings.")
    return tuple(v for v in value if v.strip())


def _name(row: dict[str, Any], key: str, where: str) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise QuestionSetError(f"{where}: '{key}' must be a non-empty string.")
    return value.strip()


def _pattern(row: dict[str, Any], answer: str | None, where: str) -> str | None:
    pattern = row.get("answer_pattern")
    if pattern is None:
        return answer_pattern_of(answer) if answer else None
    if not isinstance(pattern, str) or not pattern.strip():
        raise QuestionSetError(f"{where}: 'answer_pattern' must be a non-empty string (a regex).")
    problem = check_regex(pattern)  # RE2 runs it (`_matcher`), so no pattern can hang eval
    if problem:
        raise QuestionSetError(f"{where}: 'answer_pattern' {problem}: {pattern!r}")
    return pattern


def _text_or_number(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _row(row: dict[str, Any], where: str) -> Question:
    question, answer = row.get("question"), row.get("answer")
    if question is not None and (not isinstance(question, str) or not question.strip()):
        raise QuestionSetError(f"{where}: 'question' must be a non-empty string.")
    # a number stands for its digits; `true` is no answer ("True" was looked for) and
    # NaN or Infinity, which Python's JSON reads, none either
    if answer is not None and not _text_or_number(answer):
        raise QuestionSetError(f"{where}: 'answer' must be a string.")
    qid = row.get("id")
    if qid is not None and (not _text_or_number(qid) or isinstance(qid, float)):
        raise QuestionSetError(f"{where}: 'id' must be a string.")
    answer_text = None if answer is None else str(answer)
    q = Question(
        question,
        answer_text,
        _strings(row.get("evidence"), "evidence", where),
        _strings(row.get("stale"), "stale", where),
        row.get("category") if isinstance(row.get("category"), int) else None,
        id=None if qid is None else str(qid),
        kind=_name(row, "kind", where),
        project=_name(row, "project", where),
        answer_pattern=_pattern(row, answer_text, where),
        where=where,
    )
    if q.question is None and not q.stale:
        raise QuestionSetError(f"{where}: give a 'question' (or only 'stale' facts).")
    return q


# what a file saved as UTF-16 starts with (PowerShell's `>`, Notepad's "Unicode")
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _text_of(p: Path) -> str:
    """The text of the question set P, read as UTF-8 (a byte order mark, which Notepad and
    PowerShell write, left out); QuestionSetError saying what to do when it is not."""
    try:
        data = p.read_bytes()
    except OSError as exc:
        why = "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc)
        raise QuestionSetError(f"cannot read the question set {p}: {why}.") from None
    # UTF-16 with no byte order mark decodes as UTF-8 when its text is ASCII, a NUL
    # between every two characters: told as UTF-16 too, not as a JSON error
    utf16 = (
        "UTF-16 text, and a question set is read as UTF-8: save it as UTF-8 (in Notepad: "
        "Save As, Encoding UTF-8; in PowerShell: `Out-File -Encoding utf8`)"
    )
    if data.startswith(_UTF16_BOMS) or b"\0" in data:
        raise QuestionSetError(f"cannot read the question set {p}: {utf16}.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuestionSetError(
            f"cannot read the question set {p}: not UTF-8 text (byte {exc.start}); save it as "
            "UTF-8."
        ) from None


def load_questions(path: str | os.PathLike[str]) -> QuestionSet:
    """A question set from LoCoMo's JSON or from JSONL (see the module docstring)."""
    p = Path(path)
    text = _text_of(p)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError) as exc:
            why = "nested deeper than can be read" if isinstance(exc, RecursionError) else exc
            raise QuestionSetError(
                f"{p}: not valid JSON ({why}); give LoCoMo's JSON or JSONL."
            ) from None
        if data and all(isinstance(x, dict) and "conversation" in x for x in data):
            return _locomo(data, str(p))
        raise QuestionSetError(
            f"{p}: a JSON list that is not LoCoMo's (samples with 'conversation' and 'qa'); "
            'write other question sets as JSONL, one {"question": ...} a line.'
        )
    qs = []
    unknown: dict[str, str] = {}  # key -> where it was first seen
    ids: dict[str, str] = {}  # id -> its line: a score is told apart by its id (`--json`)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{p}:{n}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            why = "nested deeper than can be read" if isinstance(exc, RecursionError) else exc
            raise QuestionSetError(f"{where}: not a JSON object ({why}).") from None
        if not isinstance(row, dict):
            raise QuestionSetError(
                f'{where}: expected an object like {{"question": ..., "answer": ...}}.'
            )
        for key in row:
            if key not in JSONL_KEYS:
                unknown.setdefault(key, where)
        q = _row(row, where)
        if q.id is not None and q.id in ids:
            raise QuestionSetError(
                f"{where}: the id {q.id!r} is also that of {ids[q.id]}; give each question "
                "its own id."
            )
        if q.id is not None:
            ids[q.id] = where
        qs.append(q)
    if not qs:
        raise QuestionSetError(f"{p}: no questions in it.")
    warnings = tuple(
        f"{where}: unknown key {key!r} ignored (known: {', '.join(JSONL_KEYS)})."
        for key, where in unknown.items()
    )
    return QuestionSet(str(p), "jsonl", (tuple(qs),), (), warnings)
