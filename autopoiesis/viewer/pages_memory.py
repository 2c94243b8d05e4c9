"""The pages of what the memory holds: the timeline of sessions, a session's transcript,
the knowledge files, an entry's provenance and the history of a fact."""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from itertools import islice
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from autopoiesis.core.text import is_utf8
from autopoiesis.errors import AutopoiesisError, InvalidArgumentError
from autopoiesis.formats import knowledge as kf
from autopoiesis.viewer.app import Viewer, page
from autopoiesis.viewer.files import checked_path, read_text

DAYS_PER_PAGE = 14
FILES_IN_FULL = 12  # a project's files rendered on its knowledge page; the rest are links
FILES_LISTED = 300  # a folder's files listed on the knowledge page; the rest are counted
TEXT_SEARCH_HITS = 100
MAX_LINE = 999_999_999  # a line a search hit can name (`?line=`)
_DAY = re.compile(r"^\d{4}-\d\d-\d\d$")


def _viewer(request: Request) -> Viewer:
    return request.app.state.viewer


def _param(request: Request, name: str, limit: int = 2000) -> str:
    """The query parameter NAME (every page reads its parameters here), stripped; refused
    (a 400 page) when over LIMIT characters or holding a NUL, which no path, ref or text
    holds and which git's arguments cannot carry (it was a ValueError: a bare 500)."""
    value = (request.query_params.get(name) or "").strip()
    if len(value) > limit:
        raise InvalidArgumentError(f"{name} is over {limit} characters.")
    if "\x00" in value:
        raise InvalidArgumentError(f"{name} holds a NUL character: take it out and retry.")
    return value


def _number(request: Request, name: str, default: int, low: int, high: int) -> int:
    """The query parameter NAME as a whole number from LOW to HIGH (DEFAULT when not given),
    else a 400 page. ASCII digits only: `str.isdigit` takes "²", which `int` refuses (it
    was a ValueError: a bare 500)."""
    raw = _param(request, name, 12)
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
        raise InvalidArgumentError(f"{name}={raw!r}: give a whole number from {low} to {high}.")
    return int(raw)


def home(request: Request) -> Response:
    return RedirectResponse("/timeline", 303)


def timeline(request: Request) -> Response:
    """Sessions by day, newest first, per project and harness, with a search."""
    v = _viewer(request)
    project, harness = _param(request, "project", 200), _param(request, "harness", 200)
    text, before = _param(request, "q", 500), _param(request, "before", 10)
    if before and not _DAY.match(before):
        raise InvalidArgumentError(f"before={before!r}: give a day as YYYY-MM-DD.")
    sessions = v.catalog.current()
    rows = sessions.rows
    projects = sorted(sessions.projects | set(_knowledge_projects(v)))
    harnesses = sorted(sessions.harnesses)
    chosen = [
        r
        for r in rows
        if (not project or r.project == project) and (not harness or r.harness == harness)
    ]
    hits: dict[str, Any] = {}
    notices: list[str] = []
    if text:
        with v.searching() as index:
            outcome = v.memory.search_outcome(
                text, TEXT_SEARCH_HITS, "conversation", project=project or None, index=index
            )
        notices = list(outcome.notices)
        for hit in outcome.results:
            hits.setdefault(hit.path, hit)
        words = text.lower().split()
        chosen = [r for r in chosen if r.path in hits or r.matches(words)]
    if before:
        chosen = [r for r in chosen if r.day < before]
    from autopoiesis.viewer.sessions import by_day

    days = by_day(chosen, DAYS_PER_PAGE + 1)
    older = days[DAYS_PER_PAGE - 1].day if len(days) > DAYS_PER_PAGE else None
    return page(
        request,
        "timeline",
        days=days[:DAYS_PER_PAGE],
        total=len(chosen),
        all_sessions=len(rows),
        projects=projects,
        harnesses=harnesses,
        project=project,
        harness=harness,
        q=text,
        hits=hits,
        notices=notices,
        older=older,
    )


def _knowledge_projects(v: Viewer) -> list[str]:
    base = v.memory.repo.knowledge_dir / "projects"
    try:
        return [p.name for p in base.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []


def session(request: Request) -> Response:
    """A transcript: its turns, tool calls folded, and what the memory learned from it."""
    from autopoiesis.viewer.render import TURNS_SHOWN, transcript_view

    v = _viewer(request)
    path = checked_path(v.memory, _param(request, "path", 1000), under="raw")
    text = read_text(v.memory, path)
    line = _number(request, "line", 0, 0, MAX_LINE)
    turn = _number(request, "turn", 0, 0, MAX_LINE)
    try:
        shown = transcript_view(text, path, line=line, turn=turn)
    except AutopoiesisError as exc:  # not a transcript: shown as text, with why
        return page(request, "raw_file", path=path, text=text, problem=str(exc))
    transcript = shown.transcript
    return page(
        request,
        "session",
        path=path,
        t=transcript,
        turns=shown.turns,
        hit=shown.hit,
        first=shown.first,
        total=shown.total,
        per_page=TURNS_SHOWN,
        learned=_learned_from(v, transcript.meta.session_id, path),
    )


def _learned_from(v: Viewer, session_id: str, path: str) -> list[tuple[str, int, kf.Entry]]:
    """The entries citing the session (`(via REF)`) or the transcript (older citations)."""
    patterns = [f"(via {kf.citation_ref(session_id)})", f"(source: {path} @"]
    args = ["grep", "-n", "-F", "--untracked"]
    for p in patterns:
        args += ["-e", p]
    proc = v.git.run(*args, "--", "knowledge/", check=False)
    found = []
    for raw in proc.stdout.splitlines()[:500]:
        file, _, rest = raw.partition(":")
        number, _, content = rest.partition(":")
        entry = kf.parse_line(content)
        if isinstance(entry, kf.Entry) and number.isdigit():
            found.append((file, int(number), entry))
    return found


def knowledge(request: Request) -> Response:
    """The knowledge files by folder; with ?project=NAME, that project's files in full."""
    from autopoiesis.viewer.render import knowledge_view

    v = _viewer(request)
    project = _param(request, "project", 200)
    groups: OrderedDict[str, list[str]] = OrderedDict()
    for rel in _knowledge_files(v):
        parts = rel.split("/")
        group = "/".join(parts[1:3]) if parts[1] == "projects" and len(parts) > 3 else parts[1]
        groups.setdefault(group if len(parts) > 2 else "knowledge", []).append(rel)
    shown: list[tuple[str, Any, Any]] = []
    sessions: list[Any] = []
    files = groups.get(f"projects/{project}", []) if project else []
    for rel in files[:FILES_IN_FULL]:
        meta, sections = knowledge_view(read_text(v.memory, rel))
        shown.append((rel, meta, sections))
    if project:
        sessions = list(islice((r for r in v.catalog.rows() if r.project == project), 20))
    return page(
        request,
        "knowledge",
        groups=groups,
        listed=FILES_LISTED,
        project=project,
        projects=sorted(set(_knowledge_projects(v)) | v.catalog.current().projects),
        shown=shown,
        more=len(files) - len(shown),
        sessions=sessions,
    )


def _knowledge_files(v: Viewer) -> list[str]:
    """The Markdown files under knowledge/, repo-relative and sorted, never through a
    symbolic link (a folder walk of `scandir`: 10,000 files in a few milliseconds), nor
    one whose name is not UTF-8: no link can name it (`resolve_inside` refuses it; the
    index warns of it, the pre-commit hook refuses it), and the page's URL quoting raised on it."""
    out: list[str] = []
    stack = [(str(v.memory.repo.knowledge_dir), "knowledge")]
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            if e.is_symlink() or not is_utf8(e.name):
                continue
            if e.is_dir():
                stack.append((e.path, f"{rel}/{e.name}"))
            elif e.name.endswith(".md") and e.is_file():
                out.append(f"{rel}/{e.name}")
    return sorted(out)


def knowledge_file(request: Request) -> Response:
    """One knowledge (or topic, or archived) file: each entry with its provenance link,
    superseded entries struck with their replacement."""
    from autopoiesis.viewer.render import knowledge_view

    v = _viewer(request)
    path = checked_path(v.memory, _param(request, "path", 1000))
    if path.startswith("raw/"):
        return RedirectResponse(f"/session?{urlencode({'path': path})}", 303)
    line = _number(request, "line", 0, 0, MAX_LINE)
    meta, sections = knowledge_view(read_text(v.memory, path))
    return page(request, "knowledge_file", path=path, meta=meta, sections=sections, line=line)


def entry(request: Request) -> Response:
    """An entry's provenance: the turn it came from, the extractors, the commit."""
    from autopoiesis.viewer import facts

    v = _viewer(request)
    entry_id = request.path_params["entry_id"]
    path = _param(request, "path", 1000) or None
    if path:
        path = checked_path(v.memory, path, under="knowledge")
    found = facts.locate(v.memory, v.git, entry_id, path)
    if not found:
        return page(
            request, "error", 404, title="Not found", message=f"no entry {entry_id} in knowledge/"
        )
    prov = facts.provenance(v.memory, v.git, v.catalog, found[0])
    quote = _turn_quote(prov)
    return page(request, "entry", p=prov, e=found[0].entry, quote=quote)


def _turn_quote(prov: Any) -> str:
    text = prov.said
    return text if len(text) <= 1200 else text[:1200] + " …"


def history(request: Request) -> Response:
    """The dated changes of an entry (/history/ID), of a text (?text=), or of a file (?path=)."""
    from autopoiesis.viewer import facts

    v = _viewer(request)
    entry_id = request.path_params.get("entry_id")
    if entry_id:
        path = _param(request, "path", 1000) or None
        if path:
            path = checked_path(v.memory, path, under="knowledge")
        found = facts.locate(v.memory, v.git, entry_id, path)
        if not found:
            text = f"{{id: {entry_id}}}"
            return page(request, "history", subject=text, changes=facts.history(v.git, text))
        located = found[0]
        return page(
            request,
            "history",
            subject=located.entry.text,
            located=located,
            changes=facts.entry_history(v.git, located),
            blame=facts.blame_lines(v.git, located.path, f"{{id: {entry_id}}}"),
        )
    text, path = _param(request, "text", 500), _param(request, "path", 1000)
    if path:
        path = checked_path(v.memory, path)
        commits = v.git.history(path, 100)
        return page(request, "history", subject=path, file=path, commits=commits)
    if not text:
        return page(request, "history", subject="", changes=[])
    return page(request, "history", subject=text, changes=facts.history(v.git, text))


ROUTES: list[tuple[str, Any, list[str]]] = [
    ("/", home, ["GET"]),
    ("/timeline", timeline, ["GET"]),
    ("/session", session, ["GET"]),
    ("/knowledge", knowledge, ["GET"]),
    ("/knowledge/file", knowledge_file, ["GET"]),
    ("/entry/{entry_id}", entry, ["GET"]),
    ("/history", history, ["GET"]),
    ("/history/{entry_id}", history, ["GET"]),
]
