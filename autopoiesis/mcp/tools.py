"""The MCP server's tools as plain methods on one memory repo: every argument checked,
every refusal an AutopoiesisError whose message says what to pass (the server turns it
into an MCP error result), every write through the one knowledge writer.

A long-lived server keeps the search index and the context compiler open between calls,
so a tool call costs a query, not a process start. Calls are served one at a time (the
SDK runs tools in worker threads; the lock keeps the open index to one of them).

`search` and `compile_context` prefer the current project's items: the tool's `project`
argument, else the project of the folder the server was started in (a harness starts it
in the project it works on; core/project.py), '' for none.
"""

from __future__ import annotations

import re
import threading
from pathlib import PurePosixPath
from typing import Any

from autopoiesis.core.config import CONFIG_FILENAME, NUMBERS, check_number
from autopoiesis.core.paths import CATEGORIES, CONTENT_DIRS
from autopoiesis.core.project import current_folder
from autopoiesis.errors import ChangeRejectedError, InvalidArgumentError, UnsafePathError
from autopoiesis.memory import Memory

READABLE_TOPS = CONTENT_DIRS  # raw/ knowledge/ topics/ archive/, plus memory-config.yaml
MAX_READ_LINES = 2000
MAX_READ_BYTES = 8 << 20
MAX_FACT_CHARS = 4000  # the writer keeps one line of 400 characters; more than this is not one fact
MAX_BLAME_LINES = 2000
MAX_SEARCH_FETCH = 1000  # results asked of the index for one search, private ones left out
_SOURCE = re.compile(r"^[^\s()]{1,300}\Z")  # what an entry's citation can hold (formats.knowledge)
_TAG = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
PRODUCER = "mcp@1"
DEFAULT_SOURCE = "mcp:remember"


def _text(value: str, name: str, *, limit: int = 100_000) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{name} is empty; pass some text.")
    if "\x00" in value:
        raise InvalidArgumentError(f"{name} holds a NUL byte; pass plain text.")
    if len(value) > limit:
        raise InvalidArgumentError(f"{name} is {len(value)} characters; pass at most {limit}.")
    return value


def _private(rel: str) -> str:
    """Why REL is refused to a model."""
    return (
        f"{rel} is private (git-crypt) and reaches a model only where private.model_paths "
        "in memory-config.yaml names it."
    )


# Said by every `search`, whatever it found: a notice only when a private note matched
# would tell the model which words a private note holds.
PRIVATE_NOT_SEARCHED = (
    "private notes are withheld from a model's search, except those private.model_paths names"
)


class MemoryTools:
    def __init__(self, memory: Memory, *, folder: str | None = None):
        self.memory = memory
        self.repo = memory.repo
        # the project of the folder the server runs in (FOLDER, default the current one)
        self.project = memory.project_here(folder or current_folder())
        self._lock = threading.Lock()
        self._index: Any = None
        self._compiler: Any = None

    def close(self) -> None:
        with self._lock:
            if self._compiler is not None:
                self._compiler.close()
                self._compiler = None
            if self._index is not None:
                self._index.close()
                self._index = None

    # ── paths ──
    def _readable(self, path: str) -> str:
        """PATH as a repo-relative path inside raw/, knowledge/, topics/ or archive/, or a
        mounted team's notes (`shared/<team>/knowledge/`, which `search` finds), or the
        config file; anything else, a symlink out of the repo included, is refused."""
        path = _text(path, "path", limit=4096)
        full = self.repo.resolve_inside(path)
        rel = self.repo.rel(full)
        top = PurePosixPath(rel).parts[0] if rel not in ("", ".") else ""
        teams = [d for d in self.repo.indexed_dirs() if d.startswith("shared/")]
        if (
            rel != CONFIG_FILENAME
            and top not in READABLE_TOPS
            and not any(rel.startswith(f"{d}/") for d in teams)
        ):
            raise UnsafePathError(
                f"{path} is not memory content; read files under "
                f"{', '.join(f'{t}/' for t in READABLE_TOPS)} "
                f"or {CONFIG_FILENAME}."
            )
        return rel

    def _model_readable(self, path: str) -> str:
        """PATH as _readable has it, refused when it is a private note a model may not see
        (private.model_paths): what `read`, `links`, `history`, `remember` and `supersede`
        reach of a file."""
        rel = self._readable(path)
        if not self.repo.may_reach_model(rel):
            raise UnsafePathError(_private(rel))
        return rel

    def _project(self, project: str | None) -> str | None:
        """The project a call prefers: PROJECT ('' for none; a name the memory knows, else
        refused with the known ones), or the server's folder's when None."""
        if project is None:
            return self.project
        if not isinstance(project, str) or not project.strip():
            return None
        return self.memory.known_project(project)

    # ── reading ──
    def search(
        self,
        query: str,
        limit: int = 10,
        category: str | None = None,
        project: str | None = None,
    ) -> dict[str, Any]:
        query = _text(query, "query", limit=10_000)
        if category is not None and category not in CATEGORIES:
            raise InvalidArgumentError(
                f"category {category!r} is not one of {', '.join(CATEGORIES)}."
            )
        chosen = self._project(project)
        # LIMIT results a model may see: private hits left out do not take their places
        # (fewer results would tell that a private note matched), asked again for more
        # while they did, up to MAX_SEARCH_FETCH
        wanted = limit
        with self._lock:
            if self._index is None:
                self._index = self.memory.open_index()  # None until an index is built
            while True:
                outcome = self.memory.search_outcome(
                    query, wanted, category, index=self._index, project=chosen
                )
                shown = [r for r in outcome.results if self.repo.may_reach_model(r.path)]
                if len(shown) >= limit or len(outcome.results) < wanted:
                    break
                if wanted >= MAX_SEARCH_FETCH:
                    break
                wanted = min(wanted * 4, MAX_SEARCH_FETCH)
        shown = shown[:limit]
        redact = self.repo.redactor().redact  # a collaborator's note was never captured here
        notices = [*outcome.notices, PRIVATE_NOT_SEARCHED]
        return {
            "source": outcome.source,
            "notices": notices,
            "results": [
                {
                    "path": r.path,
                    "start_line": r.start_line,
                    "end_line": r.end_line,
                    "score": round(r.score, 4),
                    "category": r.category,
                    "heading": r.heading,
                    "turn_time": r.turn_time,
                    "archived": r.archived,
                    "project": r.project,
                    "snippet": redact(r.snippet),
                    # a transcript hit spans its turn's exchange; these are the turn itself
                    # (None for a section): what to `read` for just the turn
                    "own_start": r.own_start,
                    "own_end": r.own_end,
                }
                for r in shown
            ],
        }

    def read(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        rel = self._model_readable(path)
        full = self.repo.root / rel
        if not full.is_file():
            raise InvalidArgumentError(
                f"{rel} is not a file of the memory repo; `search` finds files."
            )
        if full.stat().st_size > MAX_READ_BYTES:
            raise InvalidArgumentError(
                f"{rel} is over {MAX_READ_BYTES >> 20} MB; `search` finds the part you need."
            )
        raw = full.read_bytes()
        if b"\x00" in raw[:8192]:
            raise InvalidArgumentError(f"{rel} is not a text file.")
        lines = raw.decode("utf-8", "replace").splitlines()
        total = len(lines)
        if start_line < 1 or (end_line is not None and end_line < start_line):
            raise InvalidArgumentError(
                f"lines {start_line}-{end_line} are no range; lines count from 1 and end_line >= "
                "start_line."
            )
        if start_line > max(total, 1):
            raise InvalidArgumentError(
                f"{rel} has {total} lines; start_line {start_line} is past its end."
            )
        last = total if end_line is None else end_line
        last = min(last, total, start_line + MAX_READ_LINES - 1)
        more = f"; {total - last} more, read on with start_line={last + 1}" if last < total else ""
        header = f"[{rel} lines {start_line}-{last} of {total}{more}]"
        # as the compiled context: a collaborator's note was never redacted on this machine
        return header + "\n" + self.repo.redactor().redact("\n".join(lines[start_line - 1 : last]))

    def compile_context(
        self,
        message: str,
        budget: int | None = None,
        shared: bool = False,
        project: str | None = None,
    ) -> str:
        message = _text(message, "message")
        if budget is not None:
            check_number("budget", budget, NUMBERS[("context_compiler", "token_budget")])
        chosen = self._project(project)
        with self._lock:
            if self._compiler is None:
                self._compiler = self.memory.compiler()
            # steering stays queued for the harness's own compile; the files used count as used
            result, _ = self.memory.compile(
                message,
                budget=budget,
                shared=shared,
                take_steering=False,
                compiler=self._compiler,
                project=chosen,
            )
        return result.prompt

    def links(self, path: str) -> dict[str, Any]:
        """The [[links]] of a note and the notes linking to it, private ones withheld; a
        private note's own links only where private.model_paths names it, as `read` (a
        link's text, its line and the notes it names are what the note says)."""
        rel = self._model_readable(path)
        with self._lock:
            outgoing, incoming = self.memory.links(rel)
        ok = self.repo.may_reach_model
        return {
            "outgoing": [x.to_dict() for x in outgoing if x.resolved is None or ok(x.resolved)],
            "incoming": [x.to_dict() for x in incoming if ok(x.source)],
        }

    def recall(self, text: str, limit: int = 20) -> dict[str, Any]:
        """The commits that added or removed TEXT, as a model may see them: searched in what
        git stores (a private note's ciphertext, not its text), a private note's path left
        out of a commit's files (a commit of private notes alone is left out), and each
        subject redacted as `read` redacts a note (a collaborator's commit was never
        redacted on this machine)."""
        from autopoiesis.git.recall import MAX_RECALL_CHARS
        from autopoiesis.git.repo import MemoryGit

        text = _text(text, "text", limit=MAX_RECALL_CHARS)
        redact = self.repo.redactor().redact
        commits = []
        for c in MemoryGit(self.repo).recall(text, limit, textconv=False):
            files = [f for f in c.files if self.repo.may_reach_model(f)]
            if c.files and not files:
                continue
            commits.append(
                {"sha": c.sha, "date": c.date, "subject": redact(c.subject), "files": files}
            )
        return {"commits": commits}

    def history(self, path: str, limit: int = 20, blame: bool = False) -> dict[str, Any]:
        """PATH's commits (and its blame), subjects and lines redacted; a private note's
        only where private.model_paths names it, as `read`."""
        from autopoiesis.git.repo import MemoryGit

        rel = self._model_readable(path)
        git = MemoryGit(self.repo)
        redact = self.repo.redactor().redact
        out: dict[str, Any] = {
            "path": rel,
            # of a folder, not a commit of its private notes alone (their names are private)
            "commits": [
                {"sha": c.sha, "date": c.date, "subject": redact(c.subject)}
                for c in git.history(rel, limit)
                if not c.files or any(self.repo.may_reach_model(f) for f in c.files)
            ],
        }
        if not out["commits"] and not (self.repo.root / rel).exists():
            raise InvalidArgumentError(f"{rel} has no history and is not in the memory repo.")
        if blame:
            lines = git.blame(rel).splitlines()
            out["blame"] = redact("\n".join(lines[:MAX_BLAME_LINES]))
            if len(lines) > MAX_BLAME_LINES:
                out["blame_cut"] = (
                    f"{len(lines) - MAX_BLAME_LINES} more lines; `read` the file by ranges"
                )
        return out

    def topics(self, message: str | None = None, output: bool = False) -> dict[str, Any]:
        from autopoiesis.topics.loader import load_topics

        if message is None:
            ts = load_topics(self.repo)
            return {
                "topics": [
                    {
                        "name": t.name,
                        "path": t.path,
                        "description": t.description,
                        "activation": t.activation,
                        "priority": t.priority,
                        "triggers": [tr.describe() for tr in t.triggers],
                    }
                    for t in ts.topics
                ],
                "errors": list(ts.errors),
            }
        message = _text(message, "message")
        pipe = self.memory.watchers(log_decisions=False, persist_steering=False)
        acts = pipe.evaluate(
            message, "output" if output else "input", [], all_topics=True, dry_run=True
        )
        return {
            "direction": "output" if output else "input",
            "activations": [
                {
                    "topic": a.topic,
                    "activated": a.activated,
                    "tier": a.tier,
                    "reason": a.reason,
                    "correction_hints": list(a.correction_hints),
                }
                for a in acts
            ],
        }

    def schema(self) -> dict[str, Any]:
        from autopoiesis.mcp.schema import memory_schema

        return memory_schema(self.memory)

    # ── writing: the one knowledge writer, then a commit of exactly what it wrote ──
    def _provenance(self, source: str | None) -> Any:
        from autopoiesis.core.clock import utc_now
        from autopoiesis.knowledge.changes import Provenance

        if source is not None and not _SOURCE.match(source):
            raise InvalidArgumentError(
                f"source {source!r} must be one word without spaces or parentheses: a transcript "
                "path under raw/ "
                "or a session id."
            )
        # The citation says the entry came through MCP, with the session the client named
        # (unchecked): a bare `(via SESSION)` reads as a fact extracted from that session's
        # transcript, and the viewer would quote one of its turns as where it was said.
        named = source or DEFAULT_SOURCE
        if named.startswith("raw/"):  # a transcript path: HHMM-SESSION-slug.md
            named = re.sub(r"^\d{4}-", "", PurePosixPath(named).stem)
        cited = named if named.startswith("mcp:") else f"mcp:{named}"
        return Provenance(
            source=source or DEFAULT_SOURCE,
            at=utc_now().replace(microsecond=0),
            producer=PRODUCER,
            session=cited,
        )

    def _apply(self, change: Any, verb: str) -> Any:
        from autopoiesis.knowledge.writer import KnowledgeWriter, WritePolicy

        policy = WritePolicy("the MCP client", ("knowledge/*",), frozenset({"append", "supersede"}))
        # a duplicate of, or a strike in, a private note would tell the model what it holds
        writer = KnowledgeWriter(self.repo, sees=self.repo.may_reach_model)
        with writer.batch():  # written and committed under one hold of the writer's lock
            report = writer.apply([change], policy)
            if report.capped:
                raise ChangeRejectedError(f"nothing was written: {report.capped[0][1]}.")
            sha = None
            if report.paths:
                msg = self.repo.redactor().redact(
                    f"memory: {verb} in {change.path}\n\n- {change.path}: +1 entry\n\nSource: "
                    f"{change.provenance.source}\n"
                )
                sha = writer.commit(report.paths, msg).sha
        return report, sha

    def _section(self, path: str, section: str | None) -> str:
        """SECTION as the file (or, for a new file, its template) spells it; the file's
        first section when None; an error naming the sections when it has none so named
        (a misspelt section would start a new one, and the fact would be filed apart)."""
        from autopoiesis.knowledge.changes import template_for
        from autopoiesis.knowledge.writer import KnowledgeWriter

        try:
            doc = KnowledgeWriter(self.repo).read(path)
        except (OSError, UnicodeDecodeError):
            doc = None
        sections = (doc or template_for(path)).sections
        titles = [s.title for s in sections if s.level == 2]
        if section is None:
            return titles[0] if titles else "Notes"
        wanted = _text(section, "section", limit=120)
        every = [s.title for s in sections if s.title]
        for title in every:
            if title.strip().lower() == wanted.strip().lower():
                return title
        if not every:  # a file of no section at all takes the one named
            return wanted
        raise InvalidArgumentError(
            f"{path} has no section {wanted!r}; its sections are {', '.join(every)}. Leave "
            "section out for the first, or `read` the file."
        )

    def _knowledge_path(self, path: str) -> str:
        path = _text(path, "path", limit=4096)
        try:
            rel = self.repo.rel(self.repo.resolve_inside(path, under="knowledge"))
        except UnsafePathError as exc:
            raise ChangeRejectedError(
                f"{exc} Nothing was written; `get_schema` shows where things go."
            ) from None
        if not self.repo.may_reach_model(rel):
            # before the file is read: whether a target matches would tell what it holds
            raise ChangeRejectedError(f"{_private(rel)} Nothing was written.")
        return rel

    def remember(
        self,
        path: str,
        content: str,
        section: str | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        from autopoiesis.knowledge.changes import KnowledgeChange
        from autopoiesis.knowledge.writer import MAX_ENTRY_TAGS

        rel = self._knowledge_path(path)
        content = _text(content, "content", limit=MAX_FACT_CHARS)
        bad = [t for t in tags or [] if not isinstance(t, str) or not _TAG.match(t)]
        if bad:
            raise InvalidArgumentError(
                f"tags {bad[:5]!r}: a tag is one word of letters, digits, '_', '.' or '-'."
            )
        tags = list(dict.fromkeys(tags or []))
        if len(tags) > MAX_ENTRY_TAGS:
            raise InvalidArgumentError(
                f"{len(tags)} tags: an entry takes at most {MAX_ENTRY_TAGS}; pass the few "
                "that say what it is about."
            )
        prov = self._provenance(source)
        content, redacted = self._redacted(content)
        with self._lock:
            change = KnowledgeChange(
                rel, "append", self._section(rel, section), content, prov, tags=tuple(tags or ())
            )
            report, sha = self._apply(change, "remember")
        if not report.added:
            return {
                "status": "duplicate",
                "path": rel,
                "note": "the file already holds this fact; nothing was written",
                **redacted,
            }
        return {
            "status": "added",
            "path": rel,
            "section": change.section,
            "entry_id": report.added[0][1],
            "commit": sha,
            **redacted,
        }

    def _redacted(self, content: str) -> tuple[str, dict[str, Any]]:
        """CONTENT with its secrets redacted, and what to tell the client about them."""
        from autopoiesis.core.text import counted

        redactor = self.repo.redactor()
        redactor.counts.clear()
        clean = redactor.redact(content)
        kinds = dict(sorted(redactor.counts.items()))
        if not kinds:
            return clean, {}
        what = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
        return clean, {
            "redacted": kinds,
            "note": f"redacted {counted(sum(kinds.values()), 'secret')} ({what}) before "
            "writing; the entry holds a [REDACTED:...] marker in its place",
        }

    def supersede(
        self,
        path: str,
        target: str,
        content: str,
        section: str | None = None,
        source: str | None = None,
    ) -> dict[str, Any]:
        from autopoiesis.knowledge.changes import KnowledgeChange
        from autopoiesis.knowledge.writer import KnowledgeWriter

        rel = self._knowledge_path(path)
        target = _text(target, "target", limit=1000)
        content = _text(content, "content", limit=MAX_FACT_CHARS)
        prov = self._provenance(source)
        with self._lock:
            found = KnowledgeWriter(self.repo).find_active(rel, target)
            if found is None:
                raise InvalidArgumentError(
                    f"no single active entry of {rel} matches {target!r}; pass its id "
                    "(YYYYMMDD-HHMM-xxxxxx, shown by `read`) "
                    "or a phrase only that entry contains."
                )
            old, old_section = found
            change = KnowledgeChange(
                rel, "supersede", section or old_section, content, prov, target=old.id
            )
            report, sha = self._apply(change, "supersede an entry")
        if not report.superseded:
            return {
                "status": "duplicate",
                "path": rel,
                "note": "the file already holds the new fact; nothing was written",
            }
        return {
            "status": "superseded",
            "path": rel,
            "superseded": old.id,
            "entry_id": report.added[0][1],
            "commit": sha,
        }
