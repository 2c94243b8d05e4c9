"""The strict fidelity check of the importers: a log is imported, and what it says (read
independently: testing.reference_readers) must be in the transcripts it became: the text
of each role in a turn of that role, each tool result on a call line of its own tool
(and arguments), a different line for each. A row per file, for bench/bench_fidelity.py
and the tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from autopoiesis.capture.importers import detect_format, import_files, read_text
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import one_line
from autopoiesis.errors import AutopoiesisError
from autopoiesis.formats import transcript as tf
from autopoiesis.testing.reference_readers import READERS

_KEY = 60  # how much of a text (collapsed) must be found
_RESULT_KEY = 40  # and of a tool result
_REDACTED = re.compile(r"\[redacted:[a-z_]+\]")


@dataclass
class Row:
    """The check of one file."""

    file: str
    fmt: str
    version: str | None
    messages: int
    results_on_call: int
    results: int
    texts_in_role: int
    texts: int
    misses: list[str] = field(default_factory=list)

    @property
    def faithful(self) -> bool:
        return self.results_on_call == self.results and self.texts_in_role == self.texts


def _flat(text: str) -> str:
    return " ".join(_REDACTED.sub(" ", text).split())


def _found(key: str, haystack: list[str]) -> bool:
    return any(key in h for h in haystack)


def check_file(repo: MemoryRepo, path: Path) -> Row | None:
    """Import PATH into REPO (no commit) and check it; None when its format has no
    reference reader (or no importer takes it)."""
    try:
        fmt = detect_format(path, read_text(path)).name
    except AutopoiesisError:
        return None
    reader = READERS.get(fmt)
    if reader is None:
        return None
    expect = reader(path)
    report = import_files(repo, [path], commit=False)
    rels = [*report.imported, *report.skipped_duplicates]
    turns = [t for rel in rels for t in tf.parse((repo.root / rel).read_text(), rel).turns]
    said = {role: [_flat(t.text) for t in turns if t.role == role] for role in ("user", "agent")}
    calls = [i for t in turns for i in t.items if isinstance(i, tf.ToolCall)]
    row = Row(path.name, fmt, expect.version, expect.messages, 0, 0, 0, 0)
    for role, texts in (("user", expect.user), ("agent", expect.agent)):
        for text in texts:
            key = _flat(text)[:_KEY]
            if not key:
                continue
            row.texts += 1
            if _found(key, said[role]):
                row.texts_in_role += 1
            else:
                row.misses.append(f"{role} text not in a {role} turn: {key!r}")
    used: set[int] = set()
    for tool, hint, result in expect.results:
        want = _result_key(result)
        if not want:
            continue
        row.results += 1
        name = one_line(tool, 80).replace("]", ")")
        hint = _bare(_flat(hint.split("' in ")[0])[:39])
        for i, call in enumerate(calls):
            if i in used or not (call.tool == name or call.tool.endswith(f"_{name}")):
                continue
            if not _same_result(_result_key(call.result or ""), want):
                continue
            if hint and hint not in _bare(call.args) and "[redacted:" not in call.args:
                continue
            used.add(i)
            row.results_on_call += 1
            break
        else:
            row.misses.append(f"result of {tool} {hint!r} not on its call: {want!r}")
    return row


def _bare(text: str) -> str:
    """TEXT without quotes and backslashes: a hint read from a log and the same argument
    as a call line shows it (JSON-escaped, or not) compare alike."""
    return re.sub(r"[\\\"']", "", text)


def _result_key(result: str) -> str:
    text = " ".join(one_line(result, 300).split())
    for prefix in ("error: ", "error:"):
        text = text.removeprefix(prefix)
    return text


def _same_result(got: str, want: str) -> bool:
    """Whether a call line's result GOT is the result WANT: their first 40 characters, or
    what comes before a secret redacted in GOT."""
    cut = got.find("[redacted:")
    size = _RESULT_KEY if cut < 0 else min(cut, _RESULT_KEY)
    return got[:size] == want[:size]


def check_files(repo: MemoryRepo, paths: Iterable[Path]) -> list[Row]:
    rows = []
    for path in paths:
        row = check_file(repo, path)
        if row is not None:
            rows.append(row)
    return rows


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    out = [
        "| file | format | harness version | messages | tool results on their call | "
        "role-checked text |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r.file} | {r.fmt} | {r.version or '-'} | {r.messages} | "
            f"{r.results_on_call}/{r.results} | {r.texts_in_role}/{r.texts} |"
        )
    return "\n".join(out)
