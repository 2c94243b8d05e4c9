"""What `autopoiesis status` and `autopoiesis doctor` are made of: status parts and checks,
registered through the plugin door (autopoiesis.plugins: `register_status_parts`,
`register_checks`), each package adding its own in one place.

* A **StatusPart** reads facts about the memory (JSON-able, for `status --json`, the web
  viewer, a script) and says them in a few lines for a person. Reading is cheap: no
  network, no full scan of history.
* A **Check** looks for something wrong and answers Findings. A finding is `ok`, a
  `note` (worth knowing, nothing broken: the daemon is not running) or a `problem`
  (`doctor` exits 1). A problem says what fixes it.

Both take the Memory (autopoiesis.memory.Memory) they are run for. This module is the
vocabulary only; autopoiesis.memory.health runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

LEVELS = ("ok", "note", "problem")


@dataclass(frozen=True)
class Finding:
    """One result of a check. NAME labels the line ("index", "git hooks"); SUMMARY is one
    line for a person; FIX the command or step that mends a problem; DATA the facts
    behind it, merged into `doctor --json` under their own keys."""

    name: str
    level: str
    summary: str
    fix: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level {self.level!r} is not one of {', '.join(LEVELS)}")

    @property
    def problem(self) -> bool:
        return self.level == "problem"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "level": self.level, "summary": self.summary, "fix": self.fix}


def ok(name: str, summary: str, **data: Any) -> Finding:
    return Finding(name, "ok", summary, None, data)


def note(name: str, summary: str, fix: str | None = None, **data: Any) -> Finding:
    return Finding(name, "note", summary, fix, data)


def problem(name: str, summary: str, fix: str | None = None, **data: Any) -> Finding:
    return Finding(name, "problem", summary, fix, data)


@dataclass(frozen=True)
class Check:
    """A check of `doctor`: RUN(memory) -> its findings. A check that raises is reported
    as a problem of its own, and the others still run. LABELS: the other names its
    findings are printed under (the search check's `sqlite`, `embedder`), which
    `doctor --check` takes for it too."""

    name: str
    run: Callable[[Any], Iterable[Finding]]
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class StatusPart:
    """A part of `status`: READ(memory) -> JSON-able facts; LINES(facts) -> what a person
    reads (each line starts with a label of up to 10 characters)."""

    name: str
    read: Callable[[Any], Mapping[str, Any]]
    lines: Callable[[Mapping[str, Any]], Iterable[str]]
