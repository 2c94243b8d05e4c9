"""The pages that ask the memory something: search (the CLI's ranking), what the compiler
would give for a message, two refs compared, the health checks; the live pulse and the
one write action (`--write`)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from autopoiesis.errors import InvalidArgumentError
from autopoiesis.viewer.app import Viewer, page
from autopoiesis.viewer.pages_memory import _number, _param

SLOTS = {
    0: "P0 identity",
    1: "P1 memory & journal",
    2: "P2 topics",
    3: "P3 scored knowledge",
    4: "P4 session history",
}
MAX_BUDGET = 200_000


def _viewer(request: Request) -> Viewer:
    return request.app.state.viewer


def _project(v: Viewer, name: str) -> str | None:
    return v.memory.known_project(name) if name else None


def search(request: Request) -> Response:
    """Hybrid search, ranked as `autopoiesis search` ranks (Memory.search_outcome)."""
    from autopoiesis.core.paths import CATEGORIES
    from autopoiesis.index.query import MODES

    v = _viewer(request)
    q = _param(request, "q", 2000)
    category, mode = _param(request, "category", 40), _param(request, "mode", 20) or "hybrid"
    if category and category not in CATEGORIES:
        raise InvalidArgumentError(f"category {category!r}: use one of {', '.join(CATEGORIES)}.")
    if mode not in MODES:
        raise InvalidArgumentError(f"mode {mode!r}: use {' or '.join(MODES)}.")
    project = _project(v, _param(request, "project", 200))
    limit = _number(request, "limit", 20, 1, 200)
    outcome = None
    if q:
        with v.searching() as index:
            outcome = v.memory.search_outcome(
                q, limit, category or None, explain=True, mode=mode, project=project, index=index
            )
    return page(
        request,
        "search",
        q=q,
        category=category,
        categories=CATEGORIES,
        mode=mode,
        modes=MODES,
        project=project or "",
        limit=limit,
        outcome=outcome,
    )


def compile_view(request: Request) -> Response:
    """What the compiler would give for a message: each section, and each slot's share of
    the budget (a dry run: no steering taken, no usage recorded, no gate decision logged)."""
    from autopoiesis.viewer.charts import budget_bar

    v = _viewer(request)
    message = _param(request, "message", 20_000)
    budget = _number(
        request, "budget", v.memory.config.context_compiler.token_budget, 64, MAX_BUDGET
    )
    project = _project(v, _param(request, "project", 200))
    result = activations = chart = None
    slots: list[tuple[str, int]] = []
    if message:
        result, activations = v.compile(
            message,
            budget=budget,
            project=project,
            take_steering=False,
            record=False,
            log_decisions=False,
        )
        used: dict[int, int] = {}
        for s in result.sections:
            if s.included:
                used[s.priority] = used.get(s.priority, 0) + s.tokens
        slots = [(SLOTS.get(p, f"P{p}"), t) for p, t in sorted(used.items())]
        chart = budget_bar(slots, result.budget, result.total_tokens)
    return page(
        request,
        "compile",
        message=message,
        budget=budget,
        project=project or "",
        result=result,
        activations=activations or [],
        slots=slots,
        chart=chart,
    )


def compare(request: Request) -> Response:
    """Two refs side by side: the facts each has (replay --compare) and, with a question
    set, their eval scores per question kind."""
    from autopoiesis.viewer import scores
    from autopoiesis.viewer.charts import grouped_bars

    v = _viewer(request)
    refs = scores.refs(v.git)
    a, b = _param(request, "a", 200), _param(request, "b", 200)
    qname = _param(request, "questions", 200)
    if qname and qname not in v.questions:
        raise InvalidArgumentError(
            f"no question set {qname!r}: start the viewer with `--questions FILE` to score one."
        )
    values: dict[str, Any] = {"refs": refs, "a": a, "b": b, "qname": qname}
    values.update(questions=sorted(v.questions), comparison=None, jobs=None, charts=[])
    if a and b:
        shas = [_commit(v, r) for r in (a, b)]
        comparison = v.compared(shas[0], shas[1], lambda: v.memory.compare(a, b))
        values["comparison"] = comparison
        values["changed"] = [row for row in comparison.per_category if row[1] or row[2]]
        if qname:
            jobs = [v.jobs.get(sha, qname) for sha in shas]
            values["jobs"] = jobs
            reports = [j.report for j in jobs]
            if reports[0] is not None and reports[1] is not None:
                budget = max(s.budget for s in reports[0].budgets)
                for figure, title in (
                    ("evidence_compiled", f"Evidence in the compiled context at {budget} tokens"),
                    ("answer_compiled", f"Answer in the compiled context at {budget} tokens"),
                ):
                    rows = scores.kind_groups(reports[0], reports[1], budget, figure)
                    values["charts"].append((title, grouped_bars(rows, [a, b], title=title)))
    return page(request, "compare", **values)


def _commit(v: Viewer, ref: str) -> str:
    proc = v.git.run("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
    if proc.returncode != 0 or ref.startswith("-"):
        raise InvalidArgumentError(f"{ref!r} is not a branch, tag or commit of this memory.")
    return proc.stdout.strip()


def health(request: Request) -> Response:
    """The doctor's checks and the daemon's status (viewer/health.py), as the last check
    found them; ?recheck=1 checks again."""
    v = _viewer(request)
    report, age, checking = v.health.current(fresh=bool(_param(request, "recheck", 1)))
    return page(request, "health", report=report, age=int(age), checking=checking)


def pulse(request: Request) -> Response:
    """What the live notice polls: changes when a session or a commit arrives."""
    return JSONResponse({"pulse": _viewer(request).pulse()})


async def rebuild_index(request: Request) -> Response:
    """POST, with --write only (guard.py refuses it otherwise): rebuild memory.db."""
    from starlette.concurrency import run_in_threadpool

    from autopoiesis.viewer.guard import token_matches

    v = _viewer(request)
    form = await request.form()
    if not token_matches(form.get("token"), v.token):
        return page(request, "error", 403, title="Refused", message="the form's token is wrong.")

    def rebuild() -> None:
        from autopoiesis.index import SearchIndex

        with SearchIndex(v.memory.repo) as index:
            index.rebuild_full()

    await run_in_threadpool(rebuild)
    return RedirectResponse("/health?rebuilt=1&recheck=1", 303)


ROUTES: list[tuple[str, Any, list[str]]] = [
    ("/search", search, ["GET"]),
    ("/compile", compile_view, ["GET"]),
    ("/compare", compare, ["GET"]),
    ("/health", health, ["GET"]),
    ("/api/pulse", pulse, ["GET"]),
    ("/actions/rebuild-index", rebuild_index, ["POST"]),
]
