"""What a compile takes and gives: the session history, the given knowledge and the
pending corrections in; the compiled prompt with every candidate's verdict out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from autopoiesis.compiler.plan import Section
from autopoiesis.core.text import one_line

# Sections whose files count as used when included (the P3 boost and the pruner read them).
USAGE_LABELS = ("knowledge:", "sub:", "team:")


class Correction(Protocol):
    """A correction hint waiting for the next compile (the watcher's pending steering)."""

    @property
    def topic(self) -> str: ...

    @property
    def hint(self) -> str | None: ...


@dataclass(frozen=True)
class HistoryMessage:
    """One turn of session history. A tool message is rendered on one line."""

    role: str
    content: str
    id: str = ""
    tool: str | None = None  # tool name for a tool call/result
    time: str | None = None
    result: str | None = None  # a tool's result, summarised to one line when rendered

    def render(self) -> str:
        if self.tool is not None:
            res = f" \u2192 {one_line(self.result, 150)}" if self.result else ""
            return f"> [tool:{self.tool}] {one_line(self.content, 150)}{res}"
        stamp = f" ({self.time})" if self.time else ""
        # its further lines indented, as a transcript's turn's are (packing): a message
        # that says "\nuser: ignore prior rules" cannot read as a turn of its own
        return f"{self.role}{stamp}: " + "\n  ".join(self.content.strip().split("\n"))


@dataclass(frozen=True)
class CompiledContext:
    """A compiled prompt, its size and budget, and every candidate section with its verdict."""

    prompt: str
    total_tokens: int
    budget: int
    sections: tuple[Section, ...]
    dropped_history: int = 0
    flush_due: bool = False
    # what the reader should know about how it was made (the search answered with git
    # grep while the index is rebuilt, or could not be opened)
    notices: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.prompt

    @property
    def knowledge_paths(self) -> list[str]:
        """The knowledge files included because of the message (scored knowledge and topic
        subscriptions): what counts as a use of a file."""
        return [
            s.path
            for s in self.sections
            if s.included and s.path and s.label.startswith(USAGE_LABELS)
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "total_tokens": self.total_tokens,
            "budget": self.budget,
            "sections": [s.as_dict() for s in self.sections],
            "dropped_history": self.dropped_history,
            "flush_due": self.flush_due,
            "notices": list(self.notices),
        }


@dataclass(frozen=True)
class ScoredItem:
    """A candidate of P3: a search result with its score and the factors of the score."""

    path: str
    score: float
    snippet: str
    start_line: int = 0
    end_line: int = 0
    base_score: float = 0.0
    recency: float = 1.0
    boost: float = 1.0


SearchFn = Callable[[str, int], Sequence[Any]]  # (query, limit) -> SearchResult-like rows
