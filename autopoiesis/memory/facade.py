"""`Memory(root)`: the composition root. The one object the entry points (the CLI, the
MCP server, the daemon's jobs, scripts/) hold: it reads the config once and wires the
service packages together, so each wiring (the usage counts given to the condenser and
the pruner, capture's extraction after a commit, the commit model's summary) is written
once, here.

Constructing a Memory costs nothing: every method imports what it wires when called, so
the CLI and the git hooks start fast and a search never loads the extractors.

    memory = Memory.locate()            # -C DIR, $AUTOPOIESIS_REPO, else the git top level
    memory.search("billing retries")
    context, activations = memory.compile("why did the deploy fail?")
    memory.prune()

The services below still take a MemoryRepo (`memory.repo`), and some of them still read
their own settings from it; a Memory is where the entry points get theirs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from autopoiesis.core.paths import MemoryRepo

if TYPE_CHECKING:
    from datetime import date

    from autopoiesis.capture.importers import ImportReport
    from autopoiesis.capture.session import ClosedSession, ConversationCapture
    from autopoiesis.capture.stream import StreamReport
    from autopoiesis.compiler import CompiledContext, ContextCompiler
    from autopoiesis.core.config import Config
    from autopoiesis.git.repo import CommitResult
    from autopoiesis.git.verify import VerifyResult
    from autopoiesis.index import SearchIndex, SearchResult
    from autopoiesis.index.links import Link
    from autopoiesis.index.searchindex import SearchOutcome
    from autopoiesis.knowledge.condense import MemoryCondenser
    from autopoiesis.knowledge.extract import ExtractionReport
    from autopoiesis.knowledge.maintenance import MaintenanceResult
    from autopoiesis.knowledge.prune import MemoryPruner
    from autopoiesis.knowledge.rename import Move
    from autopoiesis.knowledge.replay import Comparison, ReplayResult
    from autopoiesis.llm import LLMClient
    from autopoiesis.memory.forget import ForgetReport
    from autopoiesis.memory.health import Diagnosis, Status
    from autopoiesis.memory.identity import IdentityUpdate
    from autopoiesis.memory.private import PrivateKnowledge
    from autopoiesis.memory.projects import ProjectCount
    from autopoiesis.memory.subagents import Subagents
    from autopoiesis.memory.sync_report import SyncReport
    from autopoiesis.memory.teams import TeamMemory
    from autopoiesis.topics.pipeline import TopicActivation, WatcherPipeline

PERIODS = ("daily", "weekly", "monthly")


class Extraction(NamedTuple):
    """What `Memory.extract` did: the report, the commit (None without one), the LLM
    client's notice for the user (a fallback to the offline extractors, ...) and the
    earliest time a failed extraction is due for its retry (ISO-8601, None if none)."""

    report: ExtractionReport
    commit: str | None
    notice: str | None
    next_retry_at: str | None


class Commits(NamedTuple):
    """What `Memory.commit` made: the conversation: commit of the finished transcripts
    (None when it was not asked for) and the knowledge commit (its sha None if nothing
    was pending)."""

    conversations: CommitResult | None
    knowledge: CommitResult


class Memory:
    """A memory repository and everything that works on it, wired from its config."""

    def __init__(self, root: MemoryRepo | str | os.PathLike[str]):
        self.repo = root if isinstance(root, MemoryRepo) else MemoryRepo(root)

    @classmethod
    def locate(
        cls, explicit: str | os.PathLike[str] | None = None, *, must_exist: bool = True
    ) -> Memory:
        """The memory named by EXPLICIT (-C DIR), else $AUTOPOIESIS_REPO, else the git top
        level of the current folder; NotAMemoryRepo (with what to do) when there is none."""
        from autopoiesis.git.locate import locate_repo

        return cls(locate_repo(explicit, must_exist=must_exist))

    def __repr__(self) -> str:
        return f"Memory({str(self.root)!r})"

    @property
    def root(self) -> Path:
        return self.repo.root

    @property
    def private(self) -> PrivateKnowledge:
        """Private knowledge, encrypted in git by git-crypt (memory.private)."""
        from autopoiesis.memory.private import PrivateKnowledge

        return PrivateKnowledge(self.repo)

    @property
    def teams(self) -> TeamMemory:
        """The teams' shared memories mounted at shared/<team>/ (memory.teams)."""
        from autopoiesis.memory.teams import TeamMemory

        return TeamMemory(self.repo)

    @property
    def subagents(self) -> Subagents:
        """Sub-agents' sparse checkouts of this memory, merged back for review."""
        from autopoiesis.memory.subagents import Subagents

        return Subagents(self.repo)

    @property
    def config(self) -> Config:
        """memory-config.yaml, read on first use and kept (the repo caches it)."""
        return self.repo.config

    # ── capture ──
    def after_commit(self) -> Callable[[str], None] | None:
        """The `on_committed` callback of capture (ConversationCapture, process_stream): the
        extraction of each transcript as soon as it is committed when
        `lifecycle.extraction_trigger` is `on_session_end`
        (docs/design.md#flow-conversation), else None. Capture never imports the knowledge
        package; this is where the two meet. The extraction never raises: a failure is
        logged and the transcript stays pending for `autopoiesis extract --pending`."""
        repo = self.repo
        if self.config.lifecycle.extraction_trigger != "on_session_end":
            return None

        def extract(transcript_path: str) -> None:
            # imported on the first commit, not at start-up: a harness's capture process
            # must start fast, and many never close a session
            from autopoiesis.knowledge.extract import on_session_end
            from autopoiesis.memory.commit import llm_summarizer

            on_session_end(repo, transcript_path, summarize=llm_summarizer(repo))

        return extract

    def capture(self, **options: Any) -> ConversationCapture:
        """A ConversationCapture of this memory, with the extraction after each commit
        wired in; OPTIONS go to ConversationCapture (auto_commit, recover, on_closed)."""
        from autopoiesis.capture.session import ConversationCapture

        return ConversationCapture(self.repo, on_committed=self.after_commit(), **options)

    def capture_stream(self, lines: Iterable[bytes], out: IO[str] | None = None) -> StreamReport:
        """Capture newline-delimited JSON events (`autopoiesis capture` reads stdin)."""
        from autopoiesis.capture.stream import process_stream

        return process_stream(self.repo, lines, out=out, on_committed=self.after_commit())

    def recover(self) -> list[ClosedSession]:
        """Close (and with git.auto_commit, commit) transcripts a killed harness left open."""
        from autopoiesis.capture.closing import recover_abandoned

        return recover_abandoned(self.repo, commit=self.config.git.auto_commit)

    def import_files(
        self,
        paths: Iterable[str | os.PathLike[str]],
        fmt: str = "auto",
        *,
        commit: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """File finished session logs as transcripts (capture.importers.import_files);
        PROGRESS(done, total) after each file read."""
        from autopoiesis.capture.importers import import_files

        return import_files(self.repo, paths, fmt, commit=commit, progress=progress)

    # ── search ──
    def open_index(self, *, many_searches: bool = False) -> SearchIndex | None:
        """The search index, open (close it, or use it in a `with`); None when none is
        built yet (a search then answers with git grep). MANY_SEARCHES: for a batch."""
        if not self.repo.index_path.exists():
            return None
        from autopoiesis.index import SearchIndex

        index = SearchIndex(self.repo)
        return index.expect_many_searches() if many_searches else index

    def search_outcome(
        self,
        query: str,
        limit: int = 10,
        category: str | None = None,
        *,
        merge: str | None = None,
        explain: bool = False,
        index: SearchIndex | None = None,
        mode: str = "hybrid",
        project: str | None = None,
    ) -> SearchOutcome:
        """The results with where they came from and the notices (what the CLI prints)."""
        from autopoiesis.index import search_outcome

        return search_outcome(
            query,
            limit,
            category,
            repo=self.repo,
            merge=merge,
            explain=explain,
            index=index,
            mode=mode,
            project=project,
        )

    def search(
        self,
        query: str,
        limit: int = 10,
        category: str | None = None,
        *,
        merge: str | None = None,
        explain: bool = False,
        mode: str = "hybrid",
        project: str | None = None,
    ) -> list[SearchResult]:
        """Hybrid search (BM25 + vectors); git grep, with a warning, when there is no index.
        PROJECT (a project's name, core/project.py): its items and global ones first."""
        from autopoiesis.index import search

        return search(
            query,
            limit,
            category,
            repo=self.repo,
            merge=merge,
            explain=explain,
            mode=mode,
            project=project,
        )

    # ── linked notes ──
    def links(self, path: str) -> tuple[list[Link], list[Link]]:
        """(the [[links]] written in PATH, the links of other notes to it), from the index
        (built when missing)."""
        full = self.repo.resolve_inside(path)
        rel = self.repo.rel(full)
        if not full.is_file():  # a typo would otherwise read as a note nothing links to
            from autopoiesis.errors import InvalidArgumentError

            raise InvalidArgumentError(
                f"there is no note {rel}; `autopoiesis search` finds one by its words."
            )
        with self._index_for_links() as index:
            return index.links(rel)

    def broken_links(self) -> list[Link]:
        """Every [[link]] that finds no note (doctor reports them)."""
        with self._index_for_links() as index:
            return index.broken_links()

    def _index_for_links(self) -> SearchIndex:
        from autopoiesis.index import SearchIndex

        index = SearchIndex(self.repo)
        if not self.repo.index_path.exists() or index.needs_rebuild():
            index.rebuild_full()
        return index

    def move(self, old: str, new: str, *, commit: bool = True, make_public: bool = False) -> Move:
        """Move a note and rewrite every [[link]] to it, in one commit (knowledge.rename)."""
        from autopoiesis.knowledge.rename import move_note

        return move_note(self.repo, old, new, commit=commit, make_public=make_public)

    def projects(self) -> list[ProjectCount]:
        """The projects the memory knows, each with its transcripts and knowledge files."""
        from autopoiesis.memory.projects import project_counts

        return project_counts(self.repo)

    def known_project(self, name: str) -> str:
        """NAME as the name of a project this memory knows (`projects()`); an
        InvalidArgumentError naming the known ones when it knows none by that name."""
        from autopoiesis.core.project import project_slug
        from autopoiesis.core.text import one_line
        from autopoiesis.errors import InvalidArgumentError
        from autopoiesis.index.projects import memory_has_project

        slug = project_slug(name)
        if slug and memory_has_project(self.repo, slug):
            return slug  # known without reading every transcript
        known = [p.name for p in self.projects()]
        if slug not in known:
            raise InvalidArgumentError(
                f"no project {one_line(name, 80)!r} in this memory (known: "
                f"{', '.join(known[:20]) or 'none yet'}{' ...' if len(known) > 20 else ''}); "
                "`autopoiesis projects` lists them."
            )
        return slug

    def project_here(self, folder: str | os.PathLike[str] | None) -> str | None:
        """The project of FOLDER (the current folder of a command, a hook's `cwd`): the git
        repository it is in (a worktree of a code repository: that repository's), unless
        that is this memory repo itself or a worktree of it, where it is the project the
        worktree declares (a sub-agent's checkout) or None: global (also for no folder or a
        relative one)."""
        from autopoiesis.core.project import in_memory, project_of

        if folder is None or not os.path.isabs(folder):
            return None
        found = project_of(folder)
        return None if found is None else in_memory(found, self.root)

    # ── the compiled context ──
    def compiler(self, index: SearchIndex | None = None) -> ContextCompiler:
        """A context compiler to keep open across many `compile(..., compiler=)` calls;
        INDEX: an open search index (`open_index`) it searches with instead of its own."""
        from autopoiesis.compiler import ContextCompiler

        return ContextCompiler(self.repo, index=index)

    def watchers(self, **options: Any) -> WatcherPipeline:
        """The topics' watcher pipeline (OPTIONS: log_decisions, persist_steering)."""
        from autopoiesis.topics.pipeline import WatcherPipeline

        return WatcherPipeline(self.repo, **options)

    def compile(
        self, message: str, *, project: str | None = None, **options: Any
    ) -> tuple[CompiledContext, list[TopicActivation]]:
        """The context for MESSAGE: the watchers, the pending steering, the compiler and
        the usage counts (memory.compile_message; OPTIONS are its keywords). PROJECT, the
        current project's name: its knowledge and transcripts before other projects'."""
        from autopoiesis.memory.compile_message import compile_for_message

        return compile_for_message(self.repo, message, project=project, **options)

    def usage(self) -> dict[str, int]:
        """How often each knowledge file was included in a compiled context."""
        from autopoiesis.memory.usage import inclusion_counts

        return inclusion_counts(self.repo)

    # ── the lifecycle ──
    def summarizer(self, llm: LLMClient | None = None) -> Callable[[str, str], str | None] | None:
        """The commit model's summary of a diff, as a commit message (None offline)."""
        from autopoiesis.memory.commit import llm_summarizer

        return llm_summarizer(self.repo, llm)

    def extract(
        self,
        transcripts: Sequence[str] = (),
        *,
        pending: bool = False,
        extractors: Sequence[str] | None = None,
        force: bool = False,
        commit: bool = True,
        llm: LLMClient | None = None,
        progress: Callable[[int, int, str], None] | None = None,
    ) -> Extraction:
        """Run the extractors on TRANSCRIPTS, or (PENDING) on every transcript not yet
        extracted plus the retries that are due, and commit what they wrote.
        PROGRESS(done, total, transcript) as transcripts are done."""
        from autopoiesis.knowledge.extract import KnowledgeExtractor

        if commit:
            self._refuse_during_git_operation()
        with (
            KnowledgeExtractor(self.repo, llm=llm, progress=progress if pending else None) as ex,
            ex.committing(),  # what it writes is committed before another writer writes
        ):
            if pending:
                report = ex.extract_pending(extractors)
            else:
                reports = []
                for t in transcripts:
                    reports.append(ex.extract_from_session(t, extractors, force=force))
                    if progress is not None:
                        progress(len(reports), len(transcripts), str(t))
                report = _merged(reports)
            sha = ex.commit(report, summarize=self.summarizer(llm)) if commit else None
            notice = getattr(ex._llm, "notice", None)
            retries = [r.next_retry_at for r in ex.state.rows("pending") if r.next_retry_at]
        return Extraction(report, sha, notice, min(retries) if retries else None)

    def condenser(self, llm: LLMClient | None = None) -> MemoryCondenser:
        """The condenser, given the usage counts (its monthly eviction weighs them)."""
        from autopoiesis.knowledge.condense import MemoryCondenser

        return MemoryCondenser(self.repo, llm=llm, usage=self.usage())

    def condense(
        self,
        period: str,
        day: date | None = None,
        *,
        commit: bool = True,
        llm: LLMClient | None = None,
    ) -> MaintenanceResult:
        """The daily journal, the weekly MEMORY.md rollup or the monthly distillation of
        DAY (default today). PERIOD is one of PERIODS (else a ValueError)."""
        if period not in PERIODS:
            raise ValueError(f"unknown period {period!r}; use daily, weekly or monthly.")
        if commit:
            self._refuse_during_git_operation()
        with self.condenser(llm) as c:
            steps = {
                "daily": c.daily_summary,
                "weekly": c.weekly_rollup,
                "monthly": c.monthly_distillation,
            }
            return steps[period](day, commit=commit)

    def pruner(self, llm: LLMClient | None = None) -> MemoryPruner:
        """The pruner, given the usage counts as evidence that a file is still in use."""
        from autopoiesis.knowledge.prune import MemoryPruner

        return MemoryPruner(self.repo, llm=llm, usage=self.usage())

    def prune(self, *, commit: bool = True, llm: LLMClient | None = None) -> MaintenanceResult:
        """The MEMORY.md cap, old journals to archive/, stale knowledge evicted."""
        if commit:
            self._refuse_during_git_operation()
        with self.pruner(llm) as p:
            return p.prune_all(commit=commit)

    def archive_journals(self, *, commit: bool = True) -> MaintenanceResult:
        """Journals older than lifecycle.journal_retention_days moved to archive/journal/."""
        if commit:
            self._refuse_during_git_operation()
        with self.pruner() as p:
            return p.prune_journals(commit=commit)

    def replay(self, branch: str, **options: Any) -> ReplayResult:
        """Rebuild knowledge from every transcript on extract/BRANCH (knowledge.replay;
        OPTIONS are replay_branch's keywords)."""
        from autopoiesis.knowledge.replay import replay_branch

        return replay_branch(self.repo, branch, **options)

    def compare(self, a: str, b: str) -> Comparison:
        """Entries added and removed going from branch A to branch B."""
        from autopoiesis.knowledge.replay import compare_refs

        return compare_refs(self.repo, a, b)

    # ── git ──
    def _refuse_during_git_operation(self) -> None:
        """GitError before a command writes anything while a person's git operation (a
        merge with conflicts, a rebase) is half-done in the memory (GitCore)."""
        from autopoiesis.git.repo import MemoryGit

        if (self.repo.root / ".git").exists():
            MemoryGit(self.repo).refuse_during_operation()

    def commit(
        self,
        message: str | None = None,
        *,
        session: str | None = None,
        transcripts: bool = True,
        llm: LLMClient | None = None,
    ) -> Commits:
        """Commit the finished transcripts waiting for it (with TRANSCRIPTS), then the
        pending knowledge/, topics/ and archive/ changes, under MESSAGE or the commit
        model's summary."""
        from autopoiesis.git.repo import MemoryGit
        from autopoiesis.memory.commit import commit_knowledge

        self._refuse_during_git_operation()
        if session is not None:
            _check_session_line(self.repo, session)
        conversations = MemoryGit(self.repo).commit_finished_transcripts() if transcripts else None
        knowledge = commit_knowledge(self.repo, message, session=session, llm=llm)
        return Commits(conversations, knowledge)

    def push_after_commit(self) -> tuple[SyncReport | None, str | None]:
        """With git.auto_push, a sync round after a commit (memory.sync.push_after_commit)."""
        from autopoiesis.memory.sync import push_after_commit

        return push_after_commit(self.repo)

    def sync(self, **options: Any) -> SyncReport:
        """Commit, pull, merge, verify and push (memory.sync.sync_once; OPTIONS its keywords)."""
        from autopoiesis.memory.sync import sync_once

        return sync_once(self.repo, **options)

    def forget(
        self, *, text: str | None = None, transcript: str | None = None, reason: str
    ) -> ForgetReport:
        """Remove TEXT or TRANSCRIPT from all history (the one sanctioned rewrite)."""
        from autopoiesis.memory.forget import forget

        return forget(self.repo, text=text, transcript=transcript, reason=reason)

    def verify(
        self, *, branch: str | None = None, full: bool = False, accept: bool = False
    ) -> VerifyResult:
        """Check that no transcript was modified, renamed or deleted on BRANCH (a branch
        name or a full ref; default the one checked out). GitError when there is no such
        branch."""
        from autopoiesis.git.history import resolve
        from autopoiesis.git.verify import verify

        ref = None
        if branch:
            full_name = branch.startswith("refs/") or branch == "HEAD"
            ref = branch if full_name else f"refs/heads/{branch}"
            if not resolve(self.root, ref):
                from autopoiesis.errors import GitError

                raise GitError(f"There is no branch {branch!r}; `git branch` lists them.")
        result = verify(self.repo, ref=ref, full=full, accept=accept)
        result.findings += self.teams.findings()  # the teams' memories hold notes only
        if ref is None:  # the branch checked out: its files as the working tree holds them
            from autopoiesis.git.verify import worktree_findings

            result.findings += worktree_findings(self.root)
        return result

    # ── identity ──
    def identity_is_template(self) -> bool:
        """Whether knowledge/identity/USER.md is still the template of a new memory."""
        from autopoiesis.memory.identity import is_template

        return is_template(self.repo)

    def fill_identity(self, values: dict[str, str | None]) -> IdentityUpdate:
        """Write who the user is into USER.md (name, role, timezone, preferences; a blank
        value leaves its line) and commit it (memory/identity.py)."""
        from autopoiesis.memory.identity import fill_user

        return fill_user(self.repo, values)

    # ── health ──
    def status(self, only: Sequence[str] | None = None) -> Status:
        """What the memory holds: sessions per harness, project and day, knowledge per
        kind, extraction and pending work, the index, the daemon, the remote (every
        registered status part, core.health; ONLY: just these). `.to_dict()` for JSON,
        `.lines()` for a person."""
        from autopoiesis.memory.health import status

        return status(self, only)

    def doctor(self, only: Sequence[str] | None = None) -> Diagnosis:
        """Every registered check (core.health): the search machinery, the index, the
        history, the git hooks, the harness integrations, the daemon, the remote (ONLY:
        just these). `.ok` is False when one found a problem."""
        from autopoiesis.memory.health import diagnose

        return diagnose(self, only)

    def index_status(self, *, integrity: bool = False) -> dict[str, Any]:
        """memory.db against the files (rows, chunks, commit, freshness; with INTEGRITY,
        SQLite's quick_check)."""
        from autopoiesis.memory.health_parts import index_facts

        return index_facts(self.repo, integrity=integrity)


def _merged(reports: list[ExtractionReport]) -> ExtractionReport:
    """One report for several transcripts' runs: the tuples joined, the counts summed."""
    from autopoiesis.knowledge.extract import ExtractionReport

    if len(reports) == 1:
        return reports[0]
    if not reports:
        return ExtractionReport()

    def joined(field: str) -> tuple[Any, ...]:
        return tuple(x for r in reports for x in getattr(r, field))

    def summed(field: str) -> int:
        return sum(getattr(r, field) for r in reports)

    return ExtractionReport(
        processed=joined("processed"),
        already_done=summed("already_done"),
        waiting=summed("waiting"),
        failed=joined("failed"),
        fell_back=joined("fell_back"),
        added=summed("added"),
        superseded=summed("superseded"),
        duplicates=summed("duplicates"),
        paths=tuple(sorted(set(joined("paths")))),
        transcripts=joined("transcripts"),
        learned=joined("learned"),
    )


def _check_session_line(repo: MemoryRepo, session: str) -> None:
    """SESSION, what a commit's `Session:` line names, is a transcript of the memory: a
    value of two lines wrote a trailer of its own (`Co-authored-by: ...`) into the commit,
    and one that names no transcript links the commit to nothing."""
    from autopoiesis.core.paths import CONVERSATIONS_DIR, ODD_NAME
    from autopoiesis.errors import AutopoiesisError

    if ODD_NAME.search(session):
        raise AutopoiesisError(
            f"--session {session!r} holds a line break or a control character; give the "
            "path of one transcript under raw/conversations/."
        )
    transcript = session.startswith(CONVERSATIONS_DIR + "/") and session.endswith(".md")
    if not transcript or not (repo.root / session).is_file():
        raise AutopoiesisError(
            f"--session {session}: no transcript there; give the path of one under "
            f"{CONVERSATIONS_DIR}/ (`git ls-files {CONVERSATIONS_DIR}` lists them)."
        )
