"""`status` and `doctor` of a memory: every registered StatusPart and Check
(core.health; autopoiesis.plugins' `register_status_parts` and `register_checks`), run
for one Memory, each on its own: a part or a check that fails is told, and the rest
still run. The CLI prints what this returns; the MCP server and the web viewer read its
`to_dict()`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autopoiesis.core.health import Check, Finding, ok, problem
from autopoiesis.errors import InvalidArgumentError, ProgramNotFoundError


@dataclass
class Status:
    """What the memory holds: each part's facts by name, and what went wrong reading one."""

    root: str
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    _lines: dict[str, Any] = field(default_factory=dict, repr=False)
    # the parts each missing program (git, not on PATH) left unread: said once, not per part
    _unread_for_want_of: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, **self.parts, "errors": self.errors}

    def lines(self) -> list[str]:
        out: list[str] = []
        for name, facts in self.parts.items():
            out.extend(self._lines[name](facts))
        unread_for_want_of = {n for names in self._unread_for_want_of.values() for n in names}
        for name, error in self.errors.items():
            if name not in unread_for_want_of:
                out.append(f"{name:<10} could not be read: {error}")
        for program, names in self._unread_for_want_of.items():
            out.append(
                f"{program:<10} not installed, or not on PATH: {', '.join(names)} could not be "
                f"read; {ProgramNotFoundError(program).fix}."
            )
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
            missing = ProgramNotFoundError.behind(exc)
            out.errors[name] = _say(exc) if missing is None else str(missing)
            if missing is not None:
                out._unread_for_want_of.setdefault(missing.program, []).append(name)
    return out


def diagnose(memory: Any, only: Sequence[str] | None = None) -> Diagnosis:
    """Every check's findings (ONLY: just these checks, by the names `select_checks`
    takes; InvalidArgumentError for a name no check has)."""
    from autopoiesis import plugins

    checks = plugins.checks()
    chosen = select_checks(checks, only) if only else set(checks)
    out = Diagnosis()
    # the checks each missing program (git, not on PATH) stopped, and where the first of
    # them stood: told in one finding there, as five "the check failed: No such file or
    # directory (git)" hid the one thing to do
    stopped_for_want_of: dict[str, tuple[int, list[str]]] = {}
    for name, check in checks.items():
        if name not in chosen:
            continue
        try:
            found = list(check.run(memory))
        except Exception as exc:  # a check that breaks is a finding, the others still run
            missing = ProgramNotFoundError.behind(exc)
            if missing is not None:
                where = stopped_for_want_of.setdefault(missing.program, (len(out.findings), []))
                where[1].append(name)
                continue
            found = [problem(name, f"the check failed: {_say(exc)}")]
        # a check with nothing to say is left out of the whole report; asked for by
        # name, it says it ran (an empty answer read as a check that never ran)
        out.findings.extend(found or ([ok(name, "no problem found")] if only else []))
    for program, (at, names) in reversed(stopped_for_want_of.items()):
        out.findings.insert(at, _program_missing(program, names))
    return out


def _program_missing(program: str, checks: list[str]) -> Finding:
    """The one finding of the CHECKS that could not run without PROGRAM."""
    return problem(
        program,
        f"not installed, or not on PATH: {', '.join(checks)} could not be checked",
        ProgramNotFoundError(program).fix,
    )


def _spelled(name: str) -> str:
    """NAME as `doctor --check` compares it: any case, a hyphen or underscore for a space."""
    return " ".join(name.casefold().replace("-", " ").replace("_", " ").split())


def select_checks(checks: Mapping[str, Check], names: Sequence[str]) -> set[str]:
    """The names of the CHECKS that NAMES ask for: a check's own name, or a label its
    findings are printed under (`sqlite` is the search check's), in any case, with a
    hyphen for a space (`git-hooks`). A name no check answers to is refused with the
    valid ones: run as asked, it ran nothing and reported success."""
    by_name: dict[str, str] = {}
    for name, check in checks.items():
        for spelling in (*check.labels, name):
            by_name[_spelled(spelling)] = name
    unknown = [n for n in names if _spelled(n) not in by_name]
    if unknown:
        valid = ", ".join(
            f"{name} ({', '.join(check.labels)})" if check.labels else name
            for name, check in checks.items()
        )
        raise InvalidArgumentError(
            f"no check is named {', '.join(repr(n) for n in unknown)}; the checks are: {valid}."
        )
    return {by_name[_spelled(n)] for n in names}


def _say(exc: BaseException) -> str:
    """EXC for a person: its message, and its kind only when it has none."""
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f" ({exc.filename})" if exc.filename else "")
    return text or type(exc).__name__
