"""MemoryPruner (docs/design.md#prune, docs/design.md#archive): size caps, journal archiving, decay
eviction, and
compaction guarded by a fact-preservation check (docs/design.md#entry-ids).

Nothing is deleted: what leaves knowledge/ goes to archive/ (git-tracked, searchable, not
auto-loaded), and git history keeps everything else.

* prune_memory: MEMORY.md over `lifecycle.memory_line_cap` lines (a hand edit, a merge)
  -> superseded entries first, then the oldest entries (Active Context before
  Lessons/Decisions) move to archive/memory/MEMORY.md under the same sections, until it
  fits. The rule is the writer's (`KnowledgeWriter.hold_memory_cap`), which holds the cap
  the same way as it adds each entry, so a new fact makes room rather than being refused.
* prune_journals: journals older than `lifecycle.journal_retention_days` -> archive/journal/
  (a day archived before: merged into its archive file, never over it; `_move`).
* score_and_evict: score = exp(-0.05 × days since `updated`) × references (1 + recent
  transcripts that mention the file's subject + the times the context compiler included
  it); below 0.01 and older than 30 days -> archive/ (same path below knowledge/). The
  inclusion counts are the Memory facade's (`autopoiesis.memory.usage`): the caller passes them
  in as `usage`, so the lifecycle never imports the compiler.
* compact: a rewrite (by the compact LLM stage, or given) is accepted only when it keeps
  at least 95% of the file's distinct noun phrases, states no superseded fact as
  current (`revived_facts`) and adds nothing the file had not: no id, no citation, no
  line the file does not say, no entry line, no character (`added_claims`; the one rule
  is `judge_compaction`); otherwise the file is left as it was and flagged
  `needs_compact: true` for a person to look at. A compact model that gives no rewrite
  (down, in its backoff, an answer of the wrong shape) leaves the file as it was, flagged,
  and the run goes on: the archiving and eviction beside it are still committed.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any, Concatenate, ParamSpec, TypeVar

from autopoiesis.core import frontmatter
from autopoiesis.core.clock import format_ts_micro, parse_day, parse_ts, utc_now
from autopoiesis.core.paths import INDEX_FILES, MEMORY_FILE, MemoryRepo
from autopoiesis.core.text import STOPWORDS, counted, words
from autopoiesis.errors import (
    FrontmatterError,
    GitError,
    LLMResponseError,
    LLMUnavailableError,
    TimestampError,
)
from autopoiesis.formats import knowledge as kf
from autopoiesis.git.merge_driver import merge_texts
from autopoiesis.git.repo import MemoryGit
from autopoiesis.knowledge.documents import note_written, written_not_committed
from autopoiesis.knowledge.extract import list_transcripts
from autopoiesis.knowledge.stage import LLMStage
from autopoiesis.knowledge.writer import ARCHIVE_MEMORY, KnowledgeWriter

MAX_PHRASE_LOSS = 0.05
DECAY_RATE = 0.05  # half-life ~14 days (docs/design.md#prune)
EVICT_SCORE = 0.01
EVICT_MIN_DAYS = 30
REFERENCE_WINDOW_DAYS = 90
PROTECTED = frozenset(INDEX_FILES)
_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True)
class MaintenanceResult:
    """What a condense/prune/archive run did."""

    actions: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    commit: str | None = None
    flagged: tuple[str, ...] = ()

    def summary(self) -> str:
        if not self.actions:
            return "nothing to do"
        text = "\n".join(self.actions)
        if self.commit:
            text += f"\ncommitted {self.commit[:10]}"
        return text

    def __add__(self, other: MaintenanceResult) -> MaintenanceResult:
        return MaintenanceResult(
            self.actions + other.actions,
            tuple(dict.fromkeys(self.paths + other.paths)),
            other.commit or self.commit,
            self.flagged + other.flagged,
        )


@dataclass(frozen=True)
class CompactionVerdict:
    accepted: bool
    phrases_before: int
    lost: tuple[str, ...]
    revived: tuple[str, ...] = ()  # superseded facts the rewrite states as current (never accepted)
    unanswered: str = ""  # why the compact model gave no rewrite (the file was not rewritten)
    added: tuple[str, ...] = ()  # what the rewrite has that the file had not (never accepted)

    @property
    def loss(self) -> float:
        return len(self.lost) / self.phrases_before if self.phrases_before else 0.0


# ── noun phrases (a regex chunker, as docs/design.md#entry-ids's check) ──
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9'_.+#-]*[A-Za-z0-9+#]|[A-Za-z]|\d[\d.,:/%-]*")


def _is_stopword(token: str) -> bool:
    """A stopword of core.text, or a contraction made of them ("it's" is "it" + "s")."""
    return token in STOPWORDS or all(w in STOPWORDS for w in words(token))


def _strip_markup(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---\n", 3)
        if end != -1:
            text = text[end + 5 :]
    text = re.sub(
        r"\(source: [^)]*\)|\(via [^)]*\)|\{id: [^}]*\}|#superseded-by:\S+|#about:\S+|~~|\*\*|`",
        " ",
        text,
    )
    return text


def noun_phrases(text: str) -> set[str]:
    """Distinct candidate noun phrases: maximal runs (1-4 words) of non-stopwords,
    lowercased; a number or date is a phrase of its own."""
    out: set[str] = set()
    for line in _strip_markup(text).splitlines():
        run: list[str] = []
        for tok in _TOKEN.findall(line) + [""]:
            low = tok.lower().strip(".,:;")
            numeric = bool(low) and low[0].isdigit()
            if not low or numeric or _is_stopword(low):
                if run:
                    phrase = " ".join(run[:4])
                    if len(phrase) >= 3:
                        out.add(phrase)
                run = []
                if numeric:
                    out.add(low)
            else:
                run.append(low)
    return out


def check_fact_preservation(
    before: str, after: str, max_loss: float = MAX_PHRASE_LOSS
) -> CompactionVerdict:
    """Accept AFTER as a rewrite of BEFORE only if it keeps at least 1 - MAX_LOSS of
    BEFORE's distinct noun phrases (a phrase counts as kept when its words appear, in
    order, anywhere in AFTER)."""
    old = noun_phrases(before)
    flat = (
        " " + " ".join(t.lower().strip(".,:;") for t in _TOKEN.findall(_strip_markup(after))) + " "
    )
    lost = tuple(sorted(p for p in old if f" {p} " not in flat))
    accepted = (len(lost) / len(old) if old else 0.0) <= max_loss
    return CompactionVerdict(accepted, len(old), lost)


def revived_facts(before: str, after: str) -> tuple[str, ...]:
    """The lines of AFTER that state, as current, a fact BEFORE had superseded: a live
    line that says nothing but a struck entry's fact (and is not also a live fact of
    BEFORE). A rewrite must never bring back what was replaced."""
    old = kf.parse(before)
    struck = [e.text for _, e in old.entries() if not e.active]
    if not struck:
        return ()
    live_before = [e.text for _, e in old.entries() if e.active]
    out = []
    for sec in kf.parse(after).sections:
        for line in sec.lines:
            if isinstance(line, kf.Entry):
                if not line.active:
                    continue
                text = line.text
            elif line.lstrip().startswith(("- ", "* ")) and "~~" not in line:
                text = line.lstrip()[2:]
            else:
                continue
            if any(kf.restates(text, t) for t in struck) and not any(
                kf.restates(text, t) for t in live_before
            ):
                out.append(text)
    return tuple(out)


_ID_MARK = re.compile(r"\{id: [^}]*\}")
_CITATION = re.compile(r"\((?:via|source:) [^)]*\)")
_BULLET = re.compile(r"^\s*[-*+] ")
MAX_NEW_WORDS = 0.2  # a rewritten line may reword: up to this share of its words new (restates)


def added_claims(before: str, after: str) -> tuple[str, ...]:
    """What AFTER, a rewrite of the body of BEFORE, has that BEFORE had not, each said in
    words: an entry id, a citation, a line that says what the file did not (a number, a
    negation, or more than MAX_NEW_WORDS of its content words are nowhere in BEFORE), more
    entry lines than BEFORE, more characters. A compaction merges, shortens and folds; what
    it adds no source said, and an id or a citation it adds credits a session with it."""
    out: list[str] = []
    for label, mark in (("id", _ID_MARK), ("citation", _CITATION)):
        known = set(mark.findall(before))
        out += [f"new {label} {m}" for m in dict.fromkeys(mark.findall(after)) if m not in known]
    source_words, source_numbers = kf.fact_words(_strip_markup(before))
    lines = [line for line in after.splitlines() if _BULLET.match(line)]
    for line in lines:
        words, numbers = kf.fact_words(line)
        new = words - source_words
        if (
            numbers - source_numbers
            or any(w.startswith("¬") for w in new)
            or len(new) > MAX_NEW_WORDS * len(words)
        ):
            out.append(f"a line the file does not say: {line.strip()[:120]}")
    had = sum(1 for line in before.splitlines() if _BULLET.match(line))
    if len(lines) > had:
        out.append(f"{len(lines)} entry lines where the file had {had}")
    if len(after) > len(before):
        out.append(f"it grew from {len(before)} to {len(after)} characters")
    return tuple(out)


def _split(text: str) -> tuple[str | None, str]:
    """(frontmatter, body) of TEXT; a fence never closed is no frontmatter (as kf reads it)."""
    try:
        return frontmatter.split(text)
    except FrontmatterError:
        return None, text


def judge_compaction(before: str, after: str) -> CompactionVerdict:
    """The one rule of a compaction: AFTER may replace BEFORE only when it keeps BEFORE's
    noun phrases (`check_fact_preservation`), states no superseded fact as current
    (`revived_facts`) and adds nothing (`added_claims`). Both are whole files; their
    frontmatter is not judged (a compaction keeps the file's own, `MemoryPruner.compact`)."""
    kept = check_fact_preservation(before, after)
    revived = revived_facts(before, after)
    added = added_claims(_split(before)[1], _split(after)[1])
    return CompactionVerdict(
        kept.accepted and not revived and not added,
        kept.phrases_before,
        kept.lost,
        revived,
        added=added,
    )


def _as_date(value: Any) -> date | None:
    """The UTC day of a frontmatter date or timestamp; None for anything else."""
    if not isinstance(value, (date, str)):
        return None
    try:
        return parse_ts(value, "updated").date()
    except TimestampError:
        pass
    try:
        return parse_day(value[:10], "updated") if isinstance(value, str) else None
    except TimestampError:
        return None


def _one_batch(
    method: Callable[Concatenate[MemoryPruner, _P], _R],
) -> Callable[Concatenate[MemoryPruner, _P], _R]:
    """A pass of the pruner in one batch of its writer, from its first write to its
    commit (`_commit`, through `KnowledgeWriter.commit`): another writer never changes the
    files it moves or trims between the two (its commit would carry the other's lines)."""

    @functools.wraps(method)
    def in_batch(self: MemoryPruner, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.writer.batch():
            return method(self, *args, **kwargs)

    return in_batch


class MemoryPruner(LLMStage):
    """Pruning and archiving of one memory repo. `now` is injectable for tests."""

    def __init__(
        self,
        repo: MemoryRepo,
        *,
        llm: Any = None,
        now: Callable[[], datetime] | None = None,
        writer: KnowledgeWriter | None = None,
        usage: Mapping[str, int] | None = None,
    ):
        """USAGE: {knowledge path: times the context compiler included it} (the Memory facade's
        `inclusion_counts(repo)`); None means no usage evidence, only transcript mentions count."""
        self.repo = repo
        self._init_llm(llm)
        self.now = now or utc_now
        self.writer = writer or KnowledgeWriter(repo)
        self.usage: Mapping[str, int] = usage or {}
        cfg = repo.config.lifecycle
        self.cap = cfg.memory_line_cap  # validated: 10 lines or more
        self.retention = cfg.journal_retention_days  # validated: 1 day or more

    # ── committing ──
    def _commit(
        self, result: MaintenanceResult, subject: str, commit: bool, ctype: str = "maintenance"
    ) -> MaintenanceResult:
        self.writer.flush()
        if not commit:
            return result
        # what a run killed before its commit wrote or moved (or one whose commit was refused)
        earlier = [p for p in written_not_committed(self.repo) if p not in result.paths]
        if not result.paths and not earlier:
            return result
        git = MemoryGit(self.repo)
        # a path that is gone and was never tracked (moved before its first commit) is no pathspec
        candidates = [*result.paths, *earlier]
        tracked = set(git.run("ls-files", "--", *candidates).stdout.splitlines())
        paths = [p for p in candidates if p in tracked or (self.repo.root / p).exists()]
        if not paths:
            return result
        if result.paths:
            body = "\n".join(f"- {a}" for a in result.actions[:30])
            message = f"{ctype}: {subject}\n\n{body}\n"
        else:
            message = (
                f"{ctype}: commit {counted(len(earlier), 'knowledge file')} an interrupted run "
                "wrote or moved\n"
            )
        try:
            sha = self.writer.commit(paths, message).sha
        except GitError as exc:
            # the files are changed on disk already (a journal moved to archive/): nothing is
            # lost, and the next commit takes them; the user must know both
            raise GitError(
                f"{exc} The files are changed on disk and kept ({', '.join(paths[:3])}"
                f"{' ...' if len(paths) > 3 else ''}); once what it names is fixed, "
                "`autopoiesis commit` commits them."
            ) from None
        actions = result.actions
        left = [p for p in earlier if p in paths]
        if sha and left:  # said, or a run with nothing of its own to do said "nothing to do"
            actions += (
                f"committed {counted(len(left), 'file')} an interrupted or refused run left "
                "uncommitted: " + ", ".join(left[:3]) + (" ..." if len(left) > 3 else ""),
            )
        return MaintenanceResult(actions, result.paths, sha, result.flagged)

    def _move(self, rel: str, dest: str) -> str:
        """Move REL out of knowledge/ to DEST under archive/; returns the path it went to.

        Nothing already archived is overwritten: a path archived before (a day's journal
        written again after its first archive, by a late extraction) is merged into its
        archive file, entry by entry as a merge of two clones is (`merge_texts` over an
        empty base: the entries of both, `sessions` united, `updated` the later); when
        the two cannot merge cleanly (prose both wrote differently), the file goes to a
        free name beside it, `NAME.YYYYMMDD[-N].md`, and that is the path returned."""
        src, dst = (
            self.repo.resolve_inside(rel, under="knowledge"),
            self.repo.resolve_inside(dest, under="archive"),
        )
        self.writer.flush()
        self.writer.forget(rel)
        self.writer.forget(dest)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.exists():
            merged = merge_texts(
                "",
                dst.read_text(encoding="utf-8"),
                src.read_text(encoding="utf-8"),
                dest,
            )
            if not merged.conflicts:
                note_written(self.repo, {}, removed=[rel])
                self.writer.write_doc(dest, kf.parse(merged.text))
                self.writer.flush()
                src.unlink()
                return dest
            dst = self._free_name(dst)
        # a run killed between the move and its commit: the next one commits it
        note_written(self.repo, {self.repo.rel(dst): src.read_text(encoding="utf-8")}, [rel])
        os.replace(src, dst)
        return self.repo.rel(dst)

    def _free_name(self, taken: Path) -> Path:
        """A name beside TAKEN that no file has: its stem dated today, then numbered."""
        stem = taken.stem + "." + self.now().strftime("%Y%m%d")
        candidate, n = taken.with_name(stem + taken.suffix), 1
        while candidate.exists():
            n += 1
            candidate = taken.with_name(f"{stem}-{n}{taken.suffix}")
        return candidate

    # ── MEMORY.md cap ──
    @_one_batch
    def prune_memory(self, *, commit: bool = True) -> MaintenanceResult:
        """MEMORY.md over its cap (a hand edit, a merge of two clones) held to it by the
        writer's one rule of that cap (`KnowledgeWriter.hold_memory_cap`), committed."""
        moved = self.writer.hold_memory_cap()
        if not moved:
            return MaintenanceResult()
        result = MaintenanceResult(
            (
                f"MEMORY.md over its cap of {self.cap} lines: moved "
                f"{counted(len(moved), 'entry', 'entries')} to {ARCHIVE_MEMORY}",
            ),
            (MEMORY_FILE, ARCHIVE_MEMORY),
        )
        return self._commit(result, f"cap MEMORY.md at {self.cap} lines", commit)

    # ── journals ──
    @_one_batch
    def prune_journals(self, *, commit: bool = True) -> MaintenanceResult:
        cutoff = self.now().date() - timedelta(days=self.retention)
        base = self.repo.knowledge_dir / "journal"
        actions, paths = [], []
        for p in sorted(base.glob("*.md")) if base.is_dir() else []:
            try:
                day = date.fromisoformat(p.stem)
            except ValueError:
                continue
            if day < cutoff:
                rel = self.repo.rel(p)
                dest = self._move(rel, f"archive/journal/{p.name}")
                actions.append(f"archived {rel} -> {dest}")
                paths += [rel, dest]
        result = MaintenanceResult(tuple(actions), tuple(paths))
        return self._commit(
            result,
            f"archive {counted(len(actions), 'journal')} older than {self.retention} days",
            commit,
        )

    # ── decay eviction ──
    def _subject(self, rel: str, doc: kf.KnowledgeDoc) -> str:
        meta = doc.meta()
        for k in ("name", "project"):
            if isinstance(meta.get(k), str) and meta[k].strip():
                return meta[k].strip().lower()
        p = PurePosixPath(rel)
        stem = p.parent.name if p.name in ("context.md", "progress.md", "notes.md") else p.stem
        return stem.replace("-", " ").lower()

    def _last_changed(self) -> dict[str, date]:
        """The day each knowledge file last changed in git (one `git log` for all files)."""
        out = (
            MemoryGit(self.repo)
            .run("log", "--format=%x1e%ct", "--name-only", "--", "knowledge/", check=False)
            .stdout
        )
        changed: dict[str, date] = {}
        for record in out.split("\x1e"):
            head, _, files = record.partition("\n")
            if head.strip().isdigit():
                day = datetime.fromtimestamp(int(head), UTC).date()
                for f in files.split():
                    changed.setdefault(f, day)  # newest first
        return changed

    def scores(self) -> list[tuple[str, float, int, int]]:
        """(path, score, days since last changed, references) of every evictable file.

        Recency counts from the last time the file changed (its `updated` field — the
        time of the turn it cites — or its last commit, whichever is later), so knowledge
        just learned from an old conversation is not stale on arrival. References are
        the file's own 1, mentions of its subject in recent transcripts, and how often
        the context compiler included it (`usage`)."""
        today = self.now().date()
        last_changed = self._last_changed()
        included = self.usage
        recent_since = self.now() - timedelta(days=REFERENCE_WINDOW_DAYS)
        texts = [
            (self.repo.root / rel).read_text(encoding="utf-8").lower()
            for started, rel in list_transcripts(self.repo)
            if started >= recent_since
        ]
        out = []
        for top in ("projects", "people", "procedures", "reference"):
            for p in self.repo.iter_markdown(f"knowledge/{top}"):
                rel = self.repo.rel(p)
                if rel in PROTECTED or p.name.startswith("_"):
                    continue
                doc = self.writer.read_in_sweep(rel)
                if doc is None:
                    continue
                candidates = [
                    d for d in (_as_date(doc.meta().get("updated")), last_changed.get(rel)) if d
                ]
                updated = (
                    max(candidates)
                    if candidates
                    else datetime.fromtimestamp(p.stat().st_mtime, UTC).date()
                )
                days = max(0, (today - updated).days)
                subject = self._subject(rel, doc)
                refs = 1 + sum(1 for t in texts if subject and subject in t) + included.get(rel, 0)
                out.append((rel, math.exp(-DECAY_RATE * days) * refs, days, refs))
        return out

    @_one_batch
    def score_and_evict(self, *, commit: bool = True) -> MaintenanceResult:
        actions, paths = [], []
        for rel, score, days, refs in self.scores():
            if score < EVICT_SCORE and days > EVICT_MIN_DAYS:
                dest = self._move(rel, "archive/" + rel[len("knowledge/") :])
                actions.append(
                    f"evicted {rel} -> {dest} (score {score:.4f}: {days} days old, "
                    f"{counted(refs, 'reference')})"
                )
                paths += [rel, dest]
        result = MaintenanceResult(tuple(actions), tuple(paths))
        return self._commit(
            result, f"evict {counted(len(actions), 'stale knowledge file')} to archive/", commit
        )

    # ── compaction ──
    def compact(
        self, rel: str, rewritten: str | None = None, *, commit: bool = True
    ) -> tuple[CompactionVerdict, MaintenanceResult]:
        """Rewrite REL (by the compact LLM stage when REWRITTEN is None) if the rewrite keeps
        the file's facts; otherwise flag the file (needs_compact: true) and keep it. So too
        when the model gives no rewrite (`verdict.unanswered` says why): never an error."""
        unanswered = None
        if rewritten is None:
            rewritten, unanswered = self.ask_rewrite(rel)
        return self.judge_rewrite(rel, rewritten, unanswered, commit=commit)

    def ask_rewrite(self, rel: str) -> tuple[str | None, str | None]:
        """The compact model's rewrite of REL, and None; or None and why it gave none. Asked
        with the writer's lock not held (docs/design.md#writer-passes): `judge_rewrite`
        judges it against the file as it is once the lock is taken."""
        full = self.repo.resolve_inside(rel, under="knowledge")
        prompt = (Path(__file__).parent / "prompts" / "compact.v2.md").read_text(encoding="utf-8")
        prompt = prompt.replace("{path}", rel).replace(
            "{content}", full.read_text(encoding="utf-8")
        )
        try:
            return self.llm.complete("compact", prompt, max_tokens=4000).text, None
        except (LLMUnavailableError, LLMResponseError) as exc:
            # as the daily and weekly runs do: a model that does not answer leaves the
            # file as it is, never the run that archived and evicted half-done
            return None, str(exc)

    def judge_rewrite(
        self, rel: str, rewritten: str | None, unanswered: str | None, *, commit: bool = True
    ) -> tuple[CompactionVerdict, MaintenanceResult]:
        """REL replaced by REWRITTEN if it keeps the facts of the file as it is now, else
        flagged (and so when the model gave none: UNANSWERED says why); committed, under
        the writer's lock from the write to the commit."""
        with self.writer.batch():
            full = self.repo.resolve_inside(rel, under="knowledge")
            before = full.read_text(encoding="utf-8")
            if rewritten is None:
                return self._keep_flagged(rel, before, unanswered or "no answer", commit)
            return self._judge(rel, before, rewritten, commit)

    def _judge(
        self, rel: str, before: str, rewritten: str, commit: bool
    ) -> tuple[CompactionVerdict, MaintenanceResult]:
        fm, _ = _split(before)
        try:
            _, body = frontmatter.split(rewritten, f"the compaction of {rel}")
        except FrontmatterError as exc:
            return self._keep_flagged(rel, before, str(exc), commit)
        # the file's own frontmatter, whatever the rewrite's: its fields (sessions, type)
        # are bookkeeping, not the model's to change
        candidate = ("" if fm is None else f"---\n{fm}---\n") + body
        verdict = judge_compaction(before, candidate)
        if verdict.accepted:
            doc = kf.parse(candidate)
            self.writer.write_doc(rel, doc.with_meta(needs_compact=False))
            action = (
                f"compacted {rel}: {len(before)} -> {len(candidate)} characters, "
                f"{verdict.loss:.1%} of noun phrases lost"
            )
            result = MaintenanceResult((action,), (rel,))
        else:
            self._flag(rel, before)
            reasons = []
            if verdict.added:
                reasons.append(
                    f"it adds what the file did not have ({'; '.join(verdict.added[:4])})"
                )
            if verdict.revived:
                reasons.append(
                    f"it states superseded facts as current ({'; '.join(verdict.revived[:3])})"
                )
            if verdict.loss > MAX_PHRASE_LOSS:
                reasons.append(
                    f"it lost {verdict.loss:.1%} of its noun phrases "
                    f"(limit {MAX_PHRASE_LOSS:.0%}): " + ", ".join(verdict.lost[:8])
                )
            action = (
                f"rejected the compaction of {rel}: {'; and '.join(reasons)}; the file is kept as "
                "it was, flagged needs_compact for review"
            )
            self._log_rejection(rel, verdict)
            result = MaintenanceResult((action,), (rel,), None, (rel,))
        return verdict, self._commit(result, f"compact {rel}", commit)

    def _flag(self, rel: str, before: str) -> None:
        """REL, whose text is BEFORE, flagged `needs_compact: true`; untouched if it is."""
        doc = kf.parse(before)
        if doc.meta().get("needs_compact") is not True:
            self.writer.write_doc(rel, doc.with_meta(needs_compact=True))

    def _keep_flagged(
        self, rel: str, before: str, reason: str, commit: bool
    ) -> tuple[CompactionVerdict, MaintenanceResult]:
        """REL kept as it is and flagged `needs_compact` for a later run or a person, when
        the compact model gave no rewrite to judge (REASON: its error)."""
        self._flag(rel, before)
        reason = reason.rstrip(".")
        verdict = CompactionVerdict(False, len(noun_phrases(before)), (), unanswered=reason)
        action = (
            f"skipped the compaction of {rel}: the compact model gave no usable rewrite "
            f"({reason}); the file is kept as it was, flagged needs_compact for the next run"
        )
        result = MaintenanceResult((action,), (rel,), None, (rel,))
        return verdict, self._commit(result, f"compact {rel}", commit)

    def _log_rejection(self, rel: str, verdict: CompactionVerdict) -> None:
        self.repo.state_log("lifecycle_log").append(
            {
                "ts": format_ts_micro(self.now()),
                "event": "compaction_rejected",
                "path": rel,
                "loss": round(verdict.loss, 4),
                "lost": list(verdict.lost[:50]),
                "revived": list(verdict.revived[:20]),
                "added": list(verdict.added[:20]),
            }
        )

    @_one_batch
    def prune_all(self, *, commit: bool = True) -> MaintenanceResult:
        """prune_memory + prune_journals + score_and_evict, in one maintenance commit."""
        result = (
            self.prune_memory(commit=False)
            + self.prune_journals(commit=False)
            + self.score_and_evict(commit=False)
        )
        return self._commit(result, "prune memory and archive stale knowledge", commit)


__all__ = [
    "CompactionVerdict",
    "MaintenanceResult",
    "MemoryPruner",
    "added_claims",
    "check_fact_preservation",
    "judge_compaction",
    "noun_phrases",
    "revived_facts",
]
