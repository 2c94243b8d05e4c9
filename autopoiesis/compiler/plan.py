"""The budget plan: sections placed one by one against a token budget.

Each section is counted as it is rendered in the prompt (its ``<!-- label -->`` line and
the blank line that joins it to the next), so the sum of what `offer` and `fixed` accept
is the size of the assembled prompt and the budget cannot be overrun.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autopoiesis.compiler.standing import entry_ids
from autopoiesis.core.text import count_tokens

# What the context's own lines look like, which no line of a record may pass for: a turn
# of the history ("10:05 system: ..."), a day line ("[2026-02-19, Thursday]") and the gap
# or mark that opens a run ("[\u2026]", "[earlier; restated ...]"), each at a line's start.
_CONTEXT_LINE = re.compile(
    r"^(?=\d{1,2}:\d\d [^\n:]{1,120}:|\[\d{4}-\d\d-\d\d\b|\[\u2026\]|\[earlier\b)", re.M
)
# A label is one line of a file's path and lines: no control character (a line break
# would end the label's `-->` early) and no `-->` of its own.
_LABEL_UNSAFE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]|-->|<!--")


def as_record(text: str) -> str:
    """TEXT, a file of the memory as the context quotes it: each line that could pass for
    one of the context's own (a turn, a day line, a gap or a mark) indented by two
    spaces, so a note cannot make a turn of the user's or of the system appear (recalled
    memory is data). Line for line: the lines keep their numbers."""
    return _CONTEXT_LINE.sub("  ", text)


def label_line(label: str) -> str:
    """The line that opens a section labelled LABEL: `<!-- LABEL -->`, with a control
    character in LABEL (a path may hold any but `/` and NUL) shown as `?` and a `-->` or
    `<!--` in it broken, so a file's name cannot close the label and open a section."""

    def safe(m: re.Match[str]) -> str:
        return {"-->": "-- >", "<!--": "<! --"}.get(m[0], "?")

    return f"<!-- {_LABEL_UNSAFE.sub(safe, label)} -->"


@dataclass(frozen=True)
class Section:
    """One candidate of a compiled context: included or not, and why."""

    label: str
    priority: int
    tokens: int
    included: bool
    reason: str
    path: str | None = None
    content: str = field(default="", repr=False)
    # the file lines the section holds (scored knowledge); () for a whole or cut file
    spans: tuple[tuple[int, int], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "label": self.label,
            "priority": self.priority,
            "tokens": self.tokens,
            "included": self.included,
            "reason": self.reason,
            "path": self.path,
        }
        if self.spans:
            data["spans"] = [list(s) for s in self.spans]
        return data


class Plan:
    """Sections being placed against BUDGET tokens."""

    def __init__(self, budget: int, redact: Callable[[str], str] | None = None):
        self.budget = budget
        # what every section's content passes through before it is counted and placed:
        # the secrets of the memory's files are redacted as they are at capture, since a
        # note pulled from a collaborator was never captured here (core/redact.py)
        self._redact = redact or (lambda text: text)
        self.used = 0
        self.sections: list[Section] = []
        self.paths: dict[str, str] = {}  # path -> label of the section that included it
        # the ids of the knowledge entries the included sections show (`{id: ...}`): a
        # standing file placed after them leaves those entries out (one fact, one place)
        self.shown_ids: frozenset[str] = frozenset()
        self._history_pos: dict[int, int] = {}

    @property
    def left(self) -> int:
        return self.budget - self.used

    @staticmethod
    def render(label: str, content: str) -> str:
        """A section as the prompt shows it: its label line, then its content, in which
        no `<!--` can open a label of its own (a transcript that says `<!-- system -->`
        must not pose as a section of the context: recalled memory is data), and whose
        label is one line (`label_line`)."""
        return f"{label_line(label)}\n{content.replace('<!--', '<! --')}"

    def cost(self, label: str, content: str) -> int:
        """Tokens of the section as rendered; +1 for the blank line that joins sections."""
        return count_tokens(self.render(label, content)) + 1

    def cost_parts(self, label: str, parts: Sequence[str]) -> int:
        """`cost(label, "\\n".join(parts))`, from the tokens of each part (cached by
        `count_tokens`), so a section that grows a part at a time is not counted whole
        again each time. Exact when no part starts or ends with a line break: a token
        never spans one, so the count of joined lines is the sum of theirs plus one per
        line break."""
        body = sum(count_tokens(p) for p in parts) + max(0, len(parts) - 1)
        return count_tokens(label_line(label)) + 1 + body + 1

    def fixed(self, label: str, priority: int, content: str, path: str | None) -> None:
        """Include a section whatever it costs (P0); the caller checks the budget after."""
        content = self._redact(content)
        cost = self.cost(label, content)
        self.used += cost
        self.sections.append(
            Section(label, priority, cost, True, "always included (P0)", path, content)
        )
        self._included(label, content, path)

    def offer(
        self,
        label: str,
        priority: int,
        content: str,
        path: str | None,
        *,
        reason: str = "",
        history_pos: int | None = None,
        spans: tuple[tuple[int, int], ...] = (),
    ) -> bool:
        """Include the section when it fits what is left; True when it was included."""
        content = self._redact(content)
        cost = self.cost(label, content)
        if cost > self.left:
            self.sections.append(
                Section(
                    label,
                    priority,
                    cost,
                    False,
                    f"over budget ({cost} tokens, {self.left} left)",
                    path,
                )
            )
            return False
        self.used += cost
        self.sections.append(
            Section(label, priority, cost, True, reason or "fits", path, content, spans)
        )
        self._included(label, content, path)
        if history_pos is not None:
            self._history_pos[len(self.sections) - 1] = history_pos
        return True

    def _included(self, label: str, content: str, path: str | None) -> None:
        """Record what an included section holds: its file, its entries' ids."""
        if path:
            self.paths[path] = label
        if "{id: " in content:
            self.shown_ids |= entry_ids(content)

    def skip(
        self, label: str, priority: int, reason: str, path: str | None, *, tokens: int = 0
    ) -> None:
        """Record a candidate that was left out, and why."""
        self.sections.append(Section(label, priority, tokens, False, reason, path))

    def assemble(self) -> str:
        """The prompt: included sections in priority order, history back in chronological order."""
        chosen = [(i, s) for i, s in enumerate(self.sections) if s.included]
        chosen.sort(
            key=lambda p: (
                p[1].priority,
                self._history_pos.get(p[0], 0) if p[1].priority == 4 else p[0],
            )
        )
        return "\n\n".join(self.render(s.label, s.content) for _, s in chosen)
