"""The memory's own parts of `autopoiesis status` (core.health.StatusPart): the repository,
its sessions (per project, harness and day), knowledge entries per kind, extraction and
the work pending, the search index, the remote. The daemon's part is the daemon
package's (daemon/health.py); memory.health runs them all.

Each part reads files and asks git locally: no network, no history walk, so `status`
answers in a fraction of a second on thousands of transcripts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from autopoiesis.core.health import StatusPart
from autopoiesis.core.text import counted
from autopoiesis.plugins import hookimpl

# A transcript's frontmatter fits in this many bytes (memory/projects.py reads as much).
_HEAD_BYTES = 4096
_FIELD = re.compile(r"^(source|channel|project|status|started):[ \t]*(.*?)[ \t]*$", re.M)
_DAY_PATH = re.compile(r"raw/conversations/(\d{4})/(\d\d)/(\d\d)/")
_ENTRY = re.compile(r"^[-*+] .*\{id: \d{8}-\d{4}-[0-9a-f]{6}\}")
DAYS_SHOWN = 14  # the days `status` lists, up to today


def _git(root: Any, *args: str) -> str | None:
    from autopoiesis.git.runner import call

    proc = call(root, *args, text=True, stdin_devnull=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


# ── the repository ──
def read_repo(memory: Any) -> dict[str, Any]:
    root = memory.root
    head = _git(root, "rev-parse", "--short=10", "HEAD")
    commits = _git(root, "rev-list", "--count", "HEAD") if head else None
    from autopoiesis.git.repo import MemoryGit

    return {
        "root": str(root),
        "branch": _git(root, "symbolic-ref", "--quiet", "--short", "HEAD"),
        "head": head,
        "commits": int(commits) if commits and commits.isdigit() else 0,
        # a merge or rebase left half-done: what writes refuses to run until it ends
        "operation": MemoryGit(memory.repo).operation_in_progress(),
    }


def repo_lines(f: Mapping[str, Any]) -> Iterable[str]:
    from autopoiesis.git.commits import how_to_end

    where = f"on {f['branch']}" if f.get("branch") else "detached HEAD"
    yield f"memory     {f['root']} ({where}, {counted(f['commits'], 'commit')})"
    if f.get("operation"):
        yield f"  git      {f['operation']} is in progress: {how_to_end(f['operation'])}"


# ── the sessions ──
def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return "" if value in ("null", "~") else value


def _harness(fields: dict[str, str]) -> str:
    source = fields.get("source", "")
    if source and ":" in source:
        return source.split(":", 1)[0]
    return fields.get("channel") or source or "unknown"


def read_sessions(memory: Any) -> dict[str, Any]:
    """The transcripts: in all, open (a session still being written), per harness (the
    `source:` it was imported from, else its channel), per project and per day."""
    repo = memory.repo
    harnesses: Counter[str] = Counter()
    projects: Counter[str] = Counter()
    days: Counter[str] = Counter()
    total = open_ = 0
    for path in repo.iter_markdown("raw/conversations"):
        try:
            with path.open("rb") as fh:
                head = fh.read(_HEAD_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        rel = path.relative_to(repo.root).as_posix()
        if not head.startswith("---"):
            continue
        fields = {k: _unquote(v) for k, v in _FIELD.findall(head.split("\n---", 1)[0])}
        total += 1
        open_ += fields.get("status") == "open"
        harnesses[_harness(fields)] += 1
        if fields.get("project"):
            projects[fields["project"]] += 1
        m = _DAY_PATH.match(rel)
        if m:
            days["-".join(m.groups())] += 1
    today = datetime.now(UTC).date()
    recent = {
        d.isoformat(): days.get(d.isoformat(), 0)
        for d in (today - timedelta(days=n) for n in range(DAYS_SHOWN - 1, -1, -1))
    }
    return {
        "transcripts": total,
        "open": open_,
        "by_harness": dict(harnesses.most_common()),
        "by_project": dict(projects.most_common()),
        "by_day": dict(sorted(days.items())),
        "recent_days": recent,
        "last_day": max(days) if days else None,
    }


def _top(counts: Mapping[str, int], n: int = 6) -> str:
    items = list(counts.items())
    shown = ", ".join(f"{k} {v:,}" for k, v in items[:n])
    return shown + (f", and {len(items) - n} more" if len(items) > n else "")


def session_lines(f: Mapping[str, Any]) -> Iterable[str]:
    still = f", {f['open']} still open" if f.get("open") else ""
    yield f"sessions   {counted(f['transcripts'], 'transcript')}{still}"
    if f["by_harness"]:
        yield f"  harness  {_top(f['by_harness'])}"
    projects = f["by_project"]
    yield "projects   " + (
        f"{counted(len(projects), 'project')}: {_top(projects)}" if projects else "none named yet"
    )
    recent = f.get("recent_days") or {}
    if any(recent.values()):
        shown = "  ".join(
            f"{date.fromisoformat(d).strftime('%a %d')}: {n}" for d, n in recent.items() if n
        )
        yield f"  per day  {shown} (last {DAYS_SHOWN} days)"
    elif f.get("last_day"):
        yield f"  per day  none in the last {DAYS_SHOWN} days; the last on {f['last_day']}"


# ── knowledge ──
def read_knowledge(memory: Any) -> dict[str, Any]:
    """Entries per kind (the folder under knowledge/: memory, projects, people, ...),
    live and superseded, and the files."""
    repo = memory.repo
    kinds: Counter[str] = Counter()
    superseded = files = 0
    for path in repo.iter_markdown("knowledge"):
        parts = path.relative_to(repo.knowledge_dir).parts
        if len(parts) < 2 or parts[0] == "identity":
            continue
        files += 1
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if not _ENTRY.match(line):
                continue
            if "#superseded-by:" in line:
                superseded += 1
            else:
                kinds[parts[0]] += 1
    return {
        "entries": sum(kinds.values()),
        "by_kind": dict(kinds.most_common()),
        "superseded": superseded,
        "files": files,
    }


def knowledge_lines(f: Mapping[str, Any]) -> Iterable[str]:
    kinds = f": {_top(f['by_kind'], 8)}" if f["by_kind"] else ""
    old = f" ({f['superseded']:,} superseded, kept)" if f.get("superseded") else ""
    yield f"knowledge  {counted(f['entries'], 'live entry', 'live entries')}{kinds}{old}"


# ── extraction and the work pending ──
def read_extraction(memory: Any) -> dict[str, Any]:
    """When extraction last committed, the transcripts it has not read, its retries, and
    the finished transcripts waiting for a commit."""
    from autopoiesis.git.runner import uncommitted
    from autopoiesis.knowledge.state import EXTRACTED_FILE, ExtractedRecord

    repo = memory.repo
    done = {path for path, _ in ExtractedRecord(repo.root / EXTRACTED_FILE).pairs()}
    transcripts = {
        path.relative_to(repo.root).as_posix() for path in repo.iter_markdown("raw/conversations")
    }
    retries = 0
    state_file = repo.state_file("extract_state")
    if state_file.exists():
        from autopoiesis.knowledge.state import ExtractionState

        with ExtractionState.for_repo(repo) as state:
            retries = len(state.rows("pending"))
    last = _git(repo.root, "log", "-1", "--format=%cI", "--", EXTRACTED_FILE)
    waiting = [p for p in uncommitted(repo.root, ["raw/conversations"]) if p.endswith(".md")]
    return {
        "last_extraction": last or None,
        "extracted": len(transcripts & done),
        "not_extracted": len(transcripts - done),
        "retries_pending": retries,
        "uncommitted_transcripts": len(waiting),
    }


def extraction_lines(f: Mapping[str, Any]) -> Iterable[str]:
    last = f["last_extraction"][:16].replace("T", " ") if f.get("last_extraction") else "never"
    yield f"extracted  {counted(f['extracted'], 'transcript')}; last {last}"
    pending = []
    if f["not_extracted"]:
        pending.append(
            f"{counted(f['not_extracted'], 'transcript')} not extracted yet "
            "(`autopoiesis extract --pending`)"
        )
    if f["retries_pending"]:
        pending.append(f"{counted(f['retries_pending'], 'extraction')} to retry")
    if f["uncommitted_transcripts"]:
        pending.append(
            f"{counted(f['uncommitted_transcripts'], 'transcript')} not committed "
            "(`autopoiesis commit`)"
        )
    yield "pending    " + ("; ".join(pending) if pending else "nothing")


# ── the search index ──
def index_facts(repo: Any, *, integrity: bool = False) -> dict[str, Any]:
    """memory.db against the files: rows, chunks, the commit it reflects, freshness (and,
    with INTEGRITY, SQLite's quick_check)."""
    if not repo.index_path.exists():
        return {
            "exists": False,
            "db_path": str(repo.index_path),
            "files_in_repo": sum(1 for _ in repo.iter_markdown()),
            "files_indexed": 0,
            "fresh": False,
        }
    from autopoiesis.index import SearchIndex

    with SearchIndex(repo) as index:
        damage = index.integrity() if integrity else None
        try:
            st = index.status()
        except index.store.db_error:
            if not damage:
                raise
            # a damaged page under the files' rows: what quick_check found is the answer
            return {
                "exists": True,
                "db_path": str(repo.index_path),
                "files_in_repo": None,
                "files_indexed": None,
                "fresh": False,
                "integrity": damage,
            }
    data: dict[str, Any] = {
        "exists": st.exists,
        "db_path": st.db_path,
        "files_in_repo": st.files_in_repo,
        "files_indexed": st.files_indexed,
        "chunks": st.chunks,
        "fresh": st.fresh,
        "head_indexed": st.head_indexed,
        "head_now": st.head_now,
        "embedder": st.embedder,
        "dimensions": st.dimensions,
        "chunker_version": st.chunker_version,
        "stale_paths": list(st.stale_paths[:50]),
        "stale_count": len(st.stale_paths),
    }
    if integrity:
        data["integrity"] = damage or "ok"
        if damage:  # answers may still come, but from a file SQLite says is damaged
            data["fresh"] = False
    return data


def index_lines(f: Mapping[str, Any]) -> Iterable[str]:
    if not f["exists"]:
        yield (
            f"index      none yet ({counted(f['files_in_repo'], 'file')} to index: "
            "`autopoiesis index rebuild`)"
        )
        return
    fresh = (
        "fresh"
        if f["fresh"]
        else f"{counted(f['stale_count'], 'file')} behind (the next search catches up)"
    )
    yield (
        f"index      {counted(f['files_indexed'], 'file')} ({counted(f['chunks'], 'chunk')}), "
        f"{fresh}; embedder {f['embedder']}"
    )


# ── the remote ──
def read_remote(memory: Any) -> dict[str, Any]:
    """The remotes, the branch's upstream and how far apart they were at the last fetch
    (no network: `sync` and `doctor` talk to the remote)."""
    root = memory.root
    names = (_git(root, "remote") or "").split()
    upstream = _git(root, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
    ahead = behind = None
    if upstream:
        counts = _git(root, "rev-list", "--left-right", "--count", "HEAD...@{upstream}") or ""
        if len(counts.split()) == 2:
            ahead, behind = (int(x) for x in counts.split())
    fetched = None
    git_dir = _git(root, "rev-parse", "--absolute-git-dir")
    if git_dir:
        from pathlib import Path

        fetch_head = Path(git_dir) / "FETCH_HEAD"
        if fetch_head.exists():
            when = datetime.fromtimestamp(fetch_head.stat().st_mtime, UTC)
            fetched = when.isoformat(timespec="seconds").replace("+00:00", "Z")
    from autopoiesis.memory.sync_report import health_problem, sync_health

    return {
        "remotes": {n: _git(root, "remote", "get-url", n) for n in names},
        "upstream": upstream,
        "ahead": ahead,
        "behind": behind,
        "last_fetch": fetched,
        "sync_stopped": health_problem(sync_health(memory.repo)),
    }


def remote_lines(f: Mapping[str, Any]) -> Iterable[str]:
    if not f["remotes"]:
        yield "remote     none (a memory of this machine only; `autopoiesis sync` shares one)"
        return
    urls = ", ".join(f"{n} {u}" for n, u in f["remotes"].items())
    if not f.get("upstream"):
        yield f"remote     {urls}; this branch has no upstream (`autopoiesis sync` sets it)"
    else:
        when = f["last_fetch"][:16].replace("T", " ") if f["last_fetch"] else None
        at = f" at the last fetch ({when})" if when else ""
        yield f"remote     {urls}; {f['ahead']} ahead, {f['behind']} behind {f['upstream']}{at}"
    if f.get("sync_stopped"):
        yield f"sync       STOPPED: {f['sync_stopped']}"


PARTS = (
    StatusPart("repo", read_repo, repo_lines),
    StatusPart("sessions", read_sessions, session_lines),
    StatusPart("knowledge", read_knowledge, knowledge_lines),
    StatusPart("extraction", read_extraction, extraction_lines),
    StatusPart("index", lambda memory: index_facts(memory.repo), index_lines),
    StatusPart("remote", read_remote, remote_lines),
)


@hookimpl
def register_status_parts(register: Any) -> None:
    for part in PARTS:
        register(part)
