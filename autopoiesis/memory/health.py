"""`status` and `doctor` of a memory: every registered StatusPart and Check
(core.health; autopoiesis.plugins' `register_status_parts` and `register_checks`), run
for one Memory, each on its own: a part or a check that fails is told, and the rest
still run. The CLI prints what this returns; the MCP server and the web viewer read its
`to_dict()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autopoiesis.core.health import Finding, problem


@dataclass
class Status:
    """What the memory holds: each part's facts by name, and what went wrong reading one."""

    root: str
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    _lines: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, **self.parts, "errors": self.errors}

    def lines(self) -> list[str]:
        out: list[str] = []
        for name, facts in self.parts.items():
            out.extend(self._lines[name](facts))
        for name, error in self.errors.items():
            out.append(f"{name:<10} could not be read: {error}")
        return out


@dataclass
class Diagnosis:
    """Every finding of every check, in the order the checks are registered."""

    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.problem]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for f in self.findings:
            data.update(f.data)
        data["checks"] = [f.to_dict() for f in self.findings]
        data["problems"] = [_problem_text(f) for f in self.problems]
        data["ok"] = self.ok
        return data

    def lines(self) -> list[str]:
        out = [f"{f.name:<11} {f.summary}" for f in self.findings if f.summary]
        out += [f"problem     {_problem_text(f)}" for f in self.problems]
        return out


def _problem_text(f: Finding) -> str:
    text = f"{f.name}: {f.summary}"
    return f"{text}; {f.fix}" if f.fix else text


def status(memory: Any, only: Sequence[str] | None = None) -> Status:
    """Every status part's facts (ONLY: just these parts)."""
    from autopoiesis import plugins

    out = Status(str(memory.root))
    for name, part in plugins.status_parts().items():
        if only and name not in only:
            continue
        try:
            out.parts[name] = dict(part.read(memory))
            out._lines[name] = part.lines
        except Exception as exc:  # status reports, it does not crash
            out.errors[name] = _say(exc)
    return out


def diagnose(memory: Any, only: Sequence[str] | None = None) -> Diagnosis:
    """Every check's findings (ONLY: just these checks)."""
    from autopoiesis import plugins

    out = Diagnosis()
    for name, check in plugins.checks().items():
        if only and name not in only:
            continue
        out.findings.extend(_run(name, check.run, memory))
    return out


def _run(name: str, run: Any, memory: Any) -> Iterable[Finding]:
    try:
        return list(run(memory))
    except Exception as exc:  # a check that breaks is a finding, the others still run
        return [problem(name, f"the check failed: {_say(exc)}")]


def _say(exc: BaseException) -> str:
    """EXC for a person: its message, and its kind only when it has none."""
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f" ({exc.filename})" if exc.filename else "")
    return text or type(exc).__name__
