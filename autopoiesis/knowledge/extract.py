"""KnowledgeExtractor: runs extractors over transcripts, exactly once per version.

    from autopoiesis.knowledge.extract import KnowledgeExtractor
    with KnowledgeExtractor(repo) as ex, ex.committing():
        report = ex.extract_pending()          # what cron runs (`autopoiesis extract --pending`)
        ex.commit(report)                      # memory: ... with a Session: line

A run and its commit go inside `committing()`: another process's extraction, `remember`
or pruning writing the same files between this run's writes and its commit would have
its entries committed under this run's message (`KnowledgeExtractor.committing`).

What is done is recorded twice (knowledge/state.py): in the local SQLite state (with the
retry queue) and in the tracked record `knowledge/.extracted`, committed with the
extraction, so a clone knows it too.

Flavour: the LLM flavour when `llm.provider` is not offline, else the offline flavour
(called directly: it works on the parsed turns, so its citations carry exact turn
times, and a thousand-transcript replay spends nothing on prompts).

Failures (endpoint down, a reply that is not JSON or has the wrong shape, a change the
writer's guard refuses) are logged to the lifecycle log (`repo.state_file("lifecycle_log")`), and
the
(transcript, extractor) pair goes to the retry queue with docs/design.md#extraction-bookkeeping's
backoff; after the
last retry the offline flavour runs instead. Nothing is skipped silently.

Transcripts are read oldest first, in waves, each with what the waves before it taught:
an LLM extractor is shown the live entries related to the transcript (a search over the
current-state files, `lifecycle.related`) and may answer that an item is already known
(skip) or replaces one of them (supersede, applied by the writer across files). A wave is
one transcript offline, and with a model just enough transcripts to fill the client's
concurrency limit; its extractions run concurrently and its changes are applied by the
single writer in order, so results do not depend on timing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Self

from autopoiesis.core.clock import utc_now
from autopoiesis.core.paths import CONVERSATIONS_DIR, FileLock, MemoryRepo
from autopoiesis.core.text import counted
from autopoiesis.errors import (
    AutopoiesisError,
    ChangeRejectedError,
    ExtractionError,
    LLMResponseError,
    LLMUnavailableError,
    TranscriptFormatError,
    UnsafePathError,
)
from autopoiesis.formats.commit_message import extraction_commit_message
from autopoiesis.formats.transcript import parse_meta
from autopoiesis.knowledge.changes import ApplyReport
from autopoiesis.knowledge.documents import written_not_committed
from autopoiesis.knowledge.extractors import (
    ExtractorPlugin,
    ExtractorRegistry,
    SourceTranscript,
    default_registry,
)
from autopoiesis.knowledge.extractors.base import said_changes, session_project
from autopoiesis.knowledge.related import related_entries
from autopoiesis.knowledge.stage import LLMStage
from autopoiesis.knowledge.state import EXTRACTED_FILE, ExtractionState, is_done
from autopoiesis.knowledge.writer import KnowledgeWriter

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Failure:
    path: str
    extractor: str
    error: str
    next_retry_at: str | None


@dataclass(frozen=True)
class ExtractionReport:
    """What one run did. `processed` holds (transcript, extractor@version, flavour)."""

    processed: tuple[tuple[str, str, str], ...] = ()
    already_done: int = 0
    waiting: int = 0  # pending retries not due yet
    failed: tuple[Failure, ...] = ()
    fell_back: tuple[tuple[str, str], ...] = ()
    added: int = 0
    superseded: int = 0
    duplicates: int = 0
    paths: tuple[str, ...] = ()
    transcripts: tuple[str, ...] = ()
    commit: str | None = None
    learned: tuple[tuple[str, str], ...] = ()  # (path, entry text) of every entry added
    archived: int = 0  # older entries of MEMORY.md moved to archive/ to make room under its cap
    # (transcript, extractor@version, text) of every item a model proposed that its
    # transcript does not say (extractors.base.said_changes): left out, never written
    left_out: tuple[tuple[str, str, str], ...] = ()

    def summary(self) -> str:
        parts = [
            f"{counted(len(self.processed), 'extraction')} over "
            f"{counted(len(self.transcripts), 'transcript')}",
            f"{counted(self.added, 'entry', 'entries')} added",
            f"{self.superseded} superseded",
            f"{counted(self.duplicates, 'duplicate')} skipped",
        ]
        if self.archived:
            parts.append(
                f"{counted(self.archived, 'older entry', 'older entries')} of MEMORY.md moved "
                "to archive/ to hold its line cap"
            )
        if self.already_done:
            parts.append(f"{self.already_done} already done")
        if self.waiting:
            parts.append(f"{self.waiting} waiting for their retry time")
        if self.failed:
            parts.append(f"{len(self.failed)} failed (pending retry)")
        if self.fell_back:
            parts.append(f"{len(self.fell_back)} fell back to the offline flavour")
        if self.left_out:
            parts.append(
                f"{counted(len(self.left_out), 'item')} of the model left out, which "
                "the transcript does not say: "
                + "; ".join(text[:80] for _, _, text in self.left_out[:3])
            )
        return ", ".join(parts)


@dataclass
class _Acc:
    processed: list[tuple[str, str, str]] = field(default_factory=list)
    already_done: int = 0
    waiting: int = 0
    failed: list[Failure] = field(default_factory=list)
    fell_back: list[tuple[str, str]] = field(default_factory=list)
    apply: ApplyReport = field(default_factory=ApplyReport)
    transcripts: list[str] = field(default_factory=list)
    to_mark: list[tuple[str, str, str, str]] = field(default_factory=list)  # done, not yet recorded
    left_out: list[tuple[str, str, str]] = field(default_factory=list)

    def freeze(self) -> ExtractionReport:
        return ExtractionReport(
            tuple(self.processed),
            self.already_done,
            self.waiting,
            tuple(self.failed),
            tuple(self.fell_back),
            len(self.apply.added),
            len(self.apply.superseded),
            self.apply.duplicates,
            tuple(self.apply.paths),
            tuple(dict.fromkeys(self.transcripts)),
            learned=tuple(self.apply.learned),
            archived=len(self.apply.archived),
            left_out=tuple(self.left_out),
        )


@dataclass(frozen=True)
class _Outcome:
    changes: list[Any] | None
    flavour: str
    error: str | None = None
    unsaid: tuple[str, ...] = ()  # a model's items the transcript does not say: left out


def list_transcripts(repo: MemoryRepo) -> list[tuple[datetime, str]]:
    """(started, repo-relative path) of every closed transcript, oldest first."""
    out = []
    # never through a link (one to /etc/passwd was read; one to a transcript outside the
    # repository stopped the whole run at its path): `iter_markdown` passes links over
    for p in repo.iter_markdown(CONVERSATIONS_DIR):
        try:
            text = p.read_text(encoding="utf-8")
            meta = parse_meta(text, str(p))
        except (OSError, TranscriptFormatError, UnicodeDecodeError) as exc:
            log.warning("skipping unreadable transcript %s: %s", p, exc)
            continue
        if meta.status == "open":
            continue
        out.append((meta.started, repo.rel(p)))
    out.sort()
    return out


def _held_back(repo: MemoryRepo) -> bool:
    """Whether the repo's config names a model this machine has not approved
    (core/approval.py)."""
    from autopoiesis.core.approval import held_back
    from autopoiesis.errors import ConfigError

    try:
        return bool(held_back(repo.root))
    except (ConfigError, OSError):
        return False


class KnowledgeExtractor(LLMStage):
    """Extraction over one memory repo (or a replay worktree of it)."""

    def __init__(
        self,
        repo: MemoryRepo,
        *,
        llm: Any = None,
        registry: ExtractorRegistry | None = None,
        model: str | None = None,
        state: ExtractionState | None = None,
        use_llm: bool | None = None,
        now: Callable[[], datetime] = utc_now,
        log_repo: MemoryRepo | None = None,
        progress: Progress | None = None,
    ):
        self.repo = repo
        # (transcripts done, of how many, the last one) after each wave of a run
        self.progress = progress
        self.registry = registry or default_registry()
        self.model = model
        self._init_llm(llm)
        self.use_llm = (repo.config.llm.provider != "offline") if use_llm is None else use_llm
        self._say_why_offline(chosen=use_llm is not None or llm is not None)
        self.state = state or ExtractionState.for_repo(repo)
        self._own_state = state is None
        self.now = now
        self.writer = KnowledgeWriter(repo)
        self._log = (log_repo or repo).state_log("lifecycle_log")
        self._extract_lock: FileLock | None = None  # held by `committing`, for its runs

    @contextlib.contextmanager
    def committing(self) -> Iterator[Self]:
        """Around the runs of one extraction and its `commit`: what they write is committed
        before any other writer may change the same files. The extraction lock is taken
        first (as a run takes it, so two extractions never wait on each other's locks in
        opposite orders), then, offline, the knowledge writer's lock, held from the first
        write to the commit. Released between the two (as it was), a second extraction,
        a `remember` or the pruner wrote the same journal or MEMORY.md meanwhile, and the
        first commit carried its entries under the first's message, the second commit
        nothing; or the first commit took the files the other had recorded as written and
        not committed yet (`written_not_committed`). With a model, the writer's lock is
        not held while the model answers (docs/design.md#writer-passes): only each
        wave's reads and writes, and the commit, hold it."""
        lock = self.repo.lock("extract")
        if not lock.acquire(timeout=300):
            raise ExtractionError(
                "Another extraction holds the lock for 5 minutes; try again when it has finished."
            )
        self._extract_lock = lock
        try:
            with contextlib.nullcontext() if self.use_llm else self.writer.batch():
                yield self
        finally:
            self._extract_lock = None
            lock.release()

    # ── resources ──
    def close(self) -> None:
        super().close()
        if self._own_state:
            self.state.close()

    def _say_why_offline(self, *, chosen: bool) -> None:
        """Offline because this machine has not approved the configured model (not because
        the caller CHOSE the flavour or the client): build the client, whose notice says so
        once (the CLI prints it)."""
        if not chosen and not self.use_llm and _held_back(self.repo):
            _ = self.llm

    # ── public runs ──
    def extract_from_session(
        self,
        transcript_path: str | Path,
        extractors: Sequence[str] | None = None,
        *,
        force: bool = False,
    ) -> ExtractionReport:
        """Run EXTRACTORS (default: all) on one transcript. Done pairs are skipped unless
        FORCE; a pending retry runs now (the user asked for it)."""
        full = self.repo.resolve_inside(
            transcript_path
            if Path(transcript_path).is_absolute()
            else self._relative(transcript_path),
            under=CONVERSATIONS_DIR,
        )
        rel = self.repo.rel(full)
        hint = (
            "`git ls-files raw/conversations` lists the transcripts; `autopoiesis extract "
            "--pending` runs every one not yet extracted."
        )
        if not full.is_file():
            what = "is a folder, not a transcript" if full.is_dir() else "does not exist"
            raise ExtractionError(f"{rel} {what}. Name a transcript file: {hint}")
        try:
            src = self._load(rel)
        except UnicodeDecodeError:
            raise ExtractionError(
                f"{rel} is not UTF-8 text, so it is no transcript. {hint}"
            ) from None
        except TranscriptFormatError as exc:
            raise ExtractionError(f"{rel} cannot be read as a transcript ({exc}). {hint}") from None
        except OSError as exc:
            raise ExtractionError(f"{rel} cannot be read ({exc.strerror or exc}). {hint}") from None
        return self._run(
            [src], self.registry.select(extractors), force=force, respect_backoff=False
        )

    def extract_pending(self, extractors: Sequence[str] | None = None) -> ExtractionReport:
        """Every transcript not yet processed by every selected extractor version, plus the
        retries that are due. What `autopoiesis extract --pending` (hourly cron) runs."""
        exs = self.registry.select(extractors)
        done = self.state.done_keys()
        paths = [p for _, p in list_transcripts(self.repo)]
        todo = []
        for rel in paths:
            src = self._load(rel)
            if all(is_done(done, src.content_hash, rel, e.key) for e in exs):
                continue
            todo.append(src)
        report = self._run(todo, exs, respect_backoff=True)
        skipped = (len(paths) - len(todo)) * len(exs)
        return ExtractionReport(
            **{**report.__dict__, "already_done": report.already_done + skipped}
        )

    def replay_all(
        self,
        extractor_names: Sequence[str] | None = None,
        *,
        progress: Progress | None = None,
        chunk: int | None = None,
        stop_after: int | None = None,
    ) -> ExtractionReport:
        """Every transcript, oldest first, through the extractors (docs/design.md#replay). Pairs
        already done (by this state) are skipped, which is how a crashed replay resumes
        from its last finished chunk. LLM failures fall back to the offline flavour at
        once (a replay cannot wait hours for a retry) and are reported."""
        exs = self.registry.select(extractor_names)
        paths = [p for _, p in list_transcripts(self.repo)]
        size = chunk or (max(16, 4 * int(self.llm.concurrency)) if self.use_llm else 50)
        acc = _Acc()
        done = self.state.done_keys()
        total = len(paths)
        # One writer batch for the whole replay (each file read once, written after each
        # chunk): a replay runs in a worktree of its own, whose lock no other writer needs.
        with self.writer.batch():
            for start in range(0, total, size):
                srcs = [self._load(p) for p in paths[start : start + size]]
                self._run_chunk(
                    srcs, exs, acc, done, fallback_now=True, respect_backoff=False, force=False
                )
                finished = min(start + size, total)
                if progress:
                    progress(finished, total, paths[finished - 1])
                if stop_after is not None and finished >= stop_after:
                    break
        return acc.freeze()

    # ── internals ──
    def _relative(self, p: str | Path) -> str:
        text = str(p)
        return text if text.startswith("raw/") else str(Path(text))

    def _load(self, rel: str) -> SourceTranscript:
        text = (self.repo.root / rel).read_text(encoding="utf-8")
        return SourceTranscript.from_text(rel, text, self.repo.root)

    def _run(
        self,
        srcs: list[SourceTranscript],
        exs: list[ExtractorPlugin],
        *,
        force: bool = False,
        respect_backoff: bool,
    ) -> ExtractionReport:
        acc = _Acc()
        with contextlib.nullcontext() if self._extract_lock is not None else self.committing():
            self._run_chunk(
                srcs,
                exs,
                acc,
                self.state.done_keys(),
                fallback_now=False,
                respect_backoff=respect_backoff,
                force=force,
            )
        return acc.freeze()

    def _mark_done_from(self, acc: _Acc) -> None:
        # after the writer flushed: a row never says done for changes that are not on disk
        self.state.mark_done(acc.to_mark, self.now())
        acc.to_mark = []

    def _run_chunk(
        self,
        srcs: list[SourceTranscript],
        exs: list[ExtractorPlugin],
        acc: _Acc,
        done: set[tuple[str, str]],
        *,
        fallback_now: bool,
        respect_backoff: bool,
        force: bool,
    ) -> None:
        now = self.now()
        jobs: list[tuple[SourceTranscript, ExtractorPlugin]] = []
        for src in srcs:
            acc.transcripts.append(src.path)
            for ex in exs:
                if not force and is_done(done, src.content_hash, src.path, ex.key):
                    acc.already_done += 1
                    continue
                if respect_backoff:
                    row = self.state.get(src.content_hash, ex.key)
                    if (
                        row is not None
                        and row.status == "pending"
                        and not self.state.is_due(row, now)
                    ):
                        acc.waiting += 1
                        continue
                jobs.append((src, ex))
        # In waves, oldest first: each transcript is read with what the waves before it taught
        # (the related entries an LLM extractor is shown, the people known), and a wave's
        # changes are applied, in order, before the next wave is read. Offline, a wave is one
        # transcript; with a model, just enough transcripts to keep the client's concurrency
        # busy (one, when a transcript has as many extractors as calls may run at once).
        groups: dict[str, list[tuple[SourceTranscript, ExtractorPlugin]]] = {}
        for src, ex in jobs:
            groups.setdefault(src.path, []).append((src, ex))
        width = max(1, int(self.llm.concurrency)) if self.use_llm else 1
        ordered = list(groups.values())
        waves: list[list[list[tuple[SourceTranscript, ExtractorPlugin]]]] = []
        for group in ordered:
            if not waves or sum(len(g) for g in waves[-1]) >= width:
                waves.append([])
            waves[-1].append(group)
        # A writer batch holds the knowledge-writer lock, which every other writer waits
        # for (an agent's `remember`, the condenser, a sync's merge). Offline, the chunk is
        # one batch: each file read and written once. With a model, a wave's reads and its
        # writes are batches of their own and the model is asked between them with no lock
        # held, for as long as it takes; its changes are then checked against the files
        # as they are by then (a batch starts from what is on disk).
        finished = 0
        with contextlib.nullcontext() if self.use_llm else self.writer.batch():
            for groups_of_wave in waves:
                wave: list[tuple[SourceTranscript, ExtractorPlugin]] = []
                with self.writer.batch():  # the repo as the waves before left it
                    for group in groups_of_wave:
                        src = self._with_context(group[0][0])
                        wave += [(src, ex) for _, ex in group]
                outcomes = self._extract_all(wave)
                with self.writer.batch():
                    self._apply_outcomes(wave, outcomes, acc, done, now, fallback_now=fallback_now)
                if self.use_llm:
                    self.writer.flush()
                    self._mark_done_from(acc)
                finished += len(groups_of_wave)
                if self.progress is not None:
                    self.progress(finished, len(ordered), wave[-1][0].path)
        self.writer.flush()  # what a batch around this chunk holds (a replay's) is written
        self._mark_done_from(acc)  # after the writes reached the files

    def _with_context(self, src: SourceTranscript) -> SourceTranscript:
        """SRC with what the repo already knows about it: the people it has files for,
        and (for the LLM flavours) the live entries a search finds related to it."""
        files = {
            rel
            for rel in map(self.repo.rel, self.repo.iter_markdown("knowledge/people"))
            if rel.count("/") == 2
        }
        files |= set(
            self.writer.files_with_entries("knowledge/people/")
        )  # written in this batch, not flushed yet
        people = []
        for rel in sorted(files):
            if not Path(rel).name.startswith("_"):
                doc = self.writer.read(rel)
                name = doc.meta().get("name") if doc is not None else None
                people.append(str(name) if name else Path(rel).stem.replace("-", " ").title())
        related = (
            tuple(related_entries(self.writer, src.text, project=session_project(src)))
            if self.use_llm
            else ()
        )
        return replace(src, known_people=tuple(people), related=related)

    def _apply_outcomes(
        self,
        jobs: list[tuple[SourceTranscript, ExtractorPlugin]],
        outcomes: list[_Outcome],
        acc: _Acc,
        done: set[tuple[str, str]],
        now: datetime,
        *,
        fallback_now: bool,
    ) -> None:
        to_mark = acc.to_mark
        for (src, ex), out in zip(jobs, outcomes):
            error = out.error
            if error is None:
                error = self._apply_changes(out.changes or [], ex, acc)
            if error is None:
                acc.processed.append((src.path, ex.key, out.flavour))
                for text in out.unsaid:
                    self._note("left_out", path=src.path, extractor=ex.key, text=text)
                    acc.left_out.append((src.path, ex.key, text))
                to_mark.append((src.content_hash, ex.key, src.path, out.flavour))
                done.add((src.content_hash, ex.key))
                continue
            self._note(
                "extract_failed", path=src.path, extractor=ex.key, flavour=out.flavour, error=error
            )
            row = self.state.record_failure(src.content_hash, ex.key, src.path, error, now)
            if fallback_now or self.state.exhausted(row):
                refused = self._apply_changes(ex.run_offline(src), ex, acc)
                if refused is not None:
                    self._note("fallback_failed", path=src.path, extractor=ex.key, error=refused)
                    acc.failed.append(
                        Failure(
                            src.path,
                            ex.key,
                            f"{error}; offline fallback refused too: {refused}",
                            None,
                        )
                    )
                    continue
                self._note("fell_back", path=src.path, extractor=ex.key)
                acc.fell_back.append((src.path, ex.key))
                acc.processed.append((src.path, ex.key, "offline-fallback"))
                to_mark.append((src.content_hash, ex.key, src.path, "offline-fallback"))
                done.add((src.content_hash, ex.key))
            else:
                acc.failed.append(Failure(src.path, ex.key, error, row.next_retry_at))

    def _apply_changes(self, changes: list[Any], ex: ExtractorPlugin, acc: _Acc) -> str | None:
        """Apply an extractor's CHANGES; None when every one was written or already known,
        else why not: the writer refused the batch, or a cap kept an entry out (a
        MEMORY.md of hand-written lines, a file at the byte cap). Such a transcript is
        not done: it is retried, so the entry is written once the cause is fixed."""
        try:
            report = self.writer.apply(changes, ex.policy)
        except (ChangeRejectedError, UnsafePathError) as exc:
            return str(exc)
        acc.apply.merge(report)
        if report.capped:
            path, why = report.capped[0]
            return f"{counted(len(report.capped), 'entry', 'entries')} not written to {path}: {why}"
        return None

    def _extract_all(self, jobs: list[tuple[SourceTranscript, ExtractorPlugin]]) -> list[_Outcome]:
        if not jobs:
            return []
        if not self.use_llm:
            return [self._extract_one(j) for j in jobs]
        return self.llm.map_concurrent(self._extract_one, jobs)

    def _extract_one(self, job: tuple[SourceTranscript, ExtractorPlugin]) -> _Outcome:
        src, ex = job
        flavour = "llm" if (self.use_llm and ex.has_llm_flavour) else "offline"
        try:
            if flavour == "llm":
                # a reply is data: what the transcript does not say is no fact of it
                kept, unsaid = said_changes(ex.run_llm(src, self.llm, self.model), src)
                return _Outcome(kept, flavour, unsaid=tuple(unsaid))
            return _Outcome(ex.run_offline(src), flavour)
        except (LLMUnavailableError, LLMResponseError, ValueError, ChangeRejectedError) as exc:
            return _Outcome(None, flavour, f"{type(exc).__name__}: {exc}")

    def _note(self, event: str, **fields: Any) -> None:
        """EVENT in the lifecycle log; the command's report says it to a person (a warning
        here printed it a second time, as a Python dict)."""
        log.debug("%s: %s", event, fields)
        self._log.append({"event": event, **fields})

    # ── committing ──
    def commit(
        self,
        report: ExtractionReport,
        *,
        commit_type: str = "memory",
        summarize: Callable[[str, str], str | None] | None = None,
    ) -> str | None:
        """Commit exactly the files this run wrote (nothing else the user has pending), with
        a message that names what was learned (formats.commit_message). SUMMARIZE, the
        commit_message stage when a model is configured (the Memory facade passes it), may write
        the subject; it is asked before the git lock is taken."""
        record = [EXTRACTED_FILE] if self.state.record is not None else []
        msg = (
            extraction_commit_message(
                report.learned,
                report.transcripts,
                report.summary(),
                commit_type=commit_type,
                superseded=report.superseded,
                summarize=summarize,
            )
            if report.paths
            else None
        )  # asked first: a model's subject is never waited for with the writer's lock held
        with self.writer.batch():  # `committing()`'s, or (with a model) one of its own
            # what a run killed before its commit wrote (or one whose commit was refused)
            earlier = [p for p in written_not_committed(self.repo) if p not in report.paths]
            if msg is None and not earlier:
                return self._commit_record(report) if record else None
            if msg is None:
                message = (
                    f"memory: commit {counted(len(earlier), 'knowledge file')} an interrupted "
                    "extraction wrote\n"
                )
                return self.writer.commit([*earlier, *record], message).sha
            paths = [*report.paths, *earlier, *record]
            return self.writer.commit(paths, self.repo.redactor().redact(msg)).sha

    def _commit_record(self, report: ExtractionReport) -> str | None:
        """Nothing learned, but what was done travels with the repository all the same.
        Extractions that failed are said too: they stay pending and are retried, and the
        history must not read "nothing learned" when nothing could be."""
        done = len({path for path, _, _ in report.processed})
        if not done:
            return None
        noun = "transcript" if done == 1 else "transcripts"
        if not report.failed:
            message = f"maintenance: record the extraction of {done} {noun} (nothing learned)\n"
        else:
            failed = counted(len(report.failed), "extraction")
            message = (
                f"maintenance: record the extraction of {done} {noun} (nothing learned; "
                f"{failed} failed, pending retry)\n\n{report.summary()}\n\n"
                + "".join(
                    f"failed: {f.extractor} on {f.path}: {_line(f.error)}\n" for f in report.failed
                )
            )
        message = self.repo.redactor().redact(message)
        return self.writer.commit([EXTRACTED_FILE], message).sha


def on_session_end(
    repo: MemoryRepo,
    transcript_path: str | Path,
    *,
    commit: bool = True,
    summarize: Callable[[str, str], str | None] | None = None,
) -> ExtractionReport | None:
    """The session-end callback: the Memory facade hands this function to capture, which calls
    it after a transcript is committed (capture never imports the lifecycle). Runs the extractors on
    it when
    `lifecycle.extraction_trigger` is `on_session_end` (else returns None), commits what
    they wrote as `memory:`. Never raises: a failure is logged and the transcript stays
    pending for `autopoiesis extract --pending`."""
    try:
        if repo.config.lifecycle.extraction_trigger != "on_session_end":
            return None
        with KnowledgeExtractor(repo) as ex, ex.committing():
            report = ex.extract_from_session(transcript_path)
            sha = ex.commit(report, summarize=summarize) if commit else None
        if report.failed:  # capture's only report of them: its output is the events'
            first = report.failed[0]
            log.warning(
                "%d of the extractions of %s failed (%s: %s); they stay pending and are "
                "retried later (`autopoiesis extract --pending`; `autopoiesis status` counts "
                "them)",
                len(report.failed),
                transcript_path,
                first.extractor,
                _line(first.error),
            )
        return ExtractionReport(**{**report.__dict__, "commit": sha})
    except (AutopoiesisError, OSError) as exc:
        log.warning(
            "extraction after session end failed for %s: %s It stays pending (`autopoiesis "
            "extract --pending` retries it).",
            transcript_path,
            str(exc).rstrip(". ") + ".",
        )
        try:
            repo.state_log("lifecycle_log").append(
                {"event": "on_session_end_failed", "path": str(transcript_path), "error": str(exc)}
            )
        except OSError:
            pass
        return None


def _line(error: str, limit: int = 200) -> str:
    """ERROR on one line of at most LIMIT characters (a commit message's, a warning's)."""
    text = " ".join(error.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = [
    "ExtractionReport",
    "Failure",
    "KnowledgeExtractor",
    "list_transcripts",
    "on_session_end",
]
