"""MemoryCondenser (docs/design.md#condense, docs/design.md#flow-condense): episodic memory ->
curated memory.

* daily_summary: the day's journal from the day's transcripts. Updating, not
  duplicating: bullets already in the journal are skipped by the writer.
* weekly_rollup: the week's journals -> MEMORY.md: their decisions, lessons and
  preferences that still stand (a superseded fact is never brought back; a project's
  decision gets a derived MEMORY.md line with the canonical entry's id). Then the
  MEMORY.md cap.
* monthly_distillation: archive old journals, evict stale knowledge, enforce the cap,
  compact files flagged `needs_compact` (a compaction the model cannot give is skipped,
  the file stays flagged, and the rest is committed: `MemoryPruner.compact`).

Offline by default (extractive, cited); with `llm.provider: openai` the daily and weekly
steps ask the condense stage for bullets (JSON), which still go through the writer. A
weekly item is taken only when a journal line of the week says it, and cites that line's
session (`_said_in`); what no line says is left out, and the run says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from autopoiesis.core.clock import iso_week, parse_ts, utc_now
from autopoiesis.core.paths import INDEX_FILES, MEMORY_FILE, MemoryRepo
from autopoiesis.core.text import counted, slugify
from autopoiesis.errors import LLMResponseError, LLMUnavailableError
from autopoiesis.formats import knowledge as kf
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance, entry_id_for
from autopoiesis.knowledge.extractors.base import NAME_SLUG_LEN, SourceTranscript, reply_items
from autopoiesis.knowledge.extractors.journal import JOURNAL
from autopoiesis.knowledge.prune import MaintenanceResult, MemoryPruner
from autopoiesis.knowledge.stage import LLMStage
from autopoiesis.knowledge.writer import ARCHIVE_MEMORY, KnowledgeWriter, WritePolicy

PROMPTS = Path(__file__).parent / "prompts"
DAILY = WritePolicy("condense.daily@1", ("knowledge/journal/*.md",), frozenset({"append"}))
WEEKLY = WritePolicy("condense.weekly@1", (MEMORY_FILE,), frozenset({"append", "supersede"}))
_PREFIX = re.compile(r"^(Decided|Lesson|Preference): ")
_SECTIONS = {"Decided": "Key Decisions", "Lesson": "Lessons Learned", "Preference": "Preferences"}


class MemoryCondenser(LLMStage):
    def __init__(
        self,
        repo: MemoryRepo,
        *,
        llm: Any = None,
        now: Callable[[], datetime] | None = None,
        use_llm: bool | None = None,
        writer: KnowledgeWriter | None = None,
        usage: Mapping[str, int] | None = None,
    ):
        """USAGE: the compiler's inclusion counts, for the monthly eviction (see MemoryPruner)."""
        self.repo = repo
        self._init_llm(llm)
        self.now = now or utc_now
        self.use_llm = (repo.config.llm.provider != "offline") if use_llm is None else use_llm
        self.writer = writer or KnowledgeWriter(repo)
        self.pruner = MemoryPruner(repo, llm=llm, now=self.now, writer=self.writer, usage=usage)

    @property
    def llm(self) -> Any:
        client = super().llm
        self.pruner._llm = client  # one client for the condenser and its pruner
        return client

    def _commit(
        self, result: MaintenanceResult, subject: str, commit: bool, ctype: str
    ) -> MaintenanceResult:
        return self.pruner._commit(result, subject, commit, ctype)

    # ── daily ──
    def _transcripts_of(self, day: date) -> list[SourceTranscript]:
        base = (
            self.repo.conversations_dir / f"{day.year:04d}" / f"{day.month:02d}" / f"{day.day:02d}"
        )
        out = []
        for p in sorted(base.glob("*.md")) if base.is_dir() else []:
            src = SourceTranscript.from_text(
                self.repo.rel(p), p.read_text(encoding="utf-8"), self.repo.root
            )
            if src.transcript.meta.status != "open":
                out.append(src)
        return out

    def daily_summary(self, day: date | None = None, *, commit: bool = True) -> MaintenanceResult:
        day = day or self.now().date()
        archived = sorted((self.repo.root / "archive" / "journal").glob(f"{day.isoformat()}*.md"))
        if archived and not (self.repo.root / f"knowledge/journal/{day.isoformat()}.md").exists():
            # the day's journal is in the archive already: written again, the next prune
            # would only archive it again (merged into that file, `MemoryPruner._move`)
            return MaintenanceResult(
                (
                    f"the journal of {day.isoformat()} is archived "
                    f"({self.repo.rel(archived[0])}); not written again",
                )
            )
        srcs = self._transcripts_of(day)
        if not srcs:
            return MaintenanceResult((f"no transcripts on {day.isoformat()}; no journal written",))
        changes: list[KnowledgeChange] = []
        unsaid: list[str] = []
        if self.use_llm:
            changes, unsaid = self._daily_llm(day, srcs)
        if not changes:
            changes = [c for s in srcs for c in JOURNAL.run_offline(s)]
        changes = [
            KnowledgeChange(
                **{
                    **c.__dict__,
                    "provenance": Provenance(
                        c.provenance.source, c.provenance.at, DAILY.producer, c.provenance.session
                    ),
                }
            )
            for c in changes
        ]
        with self.writer.batch():  # from its write to its commit (`KnowledgeWriter.commit`)
            return self._commit_daily(day, srcs, changes, unsaid, commit)

    def _commit_daily(
        self,
        day: date,
        srcs: list[SourceTranscript],
        changes: list[KnowledgeChange],
        unsaid: list[str],
        commit: bool,
    ) -> MaintenanceResult:
        report = self.writer.apply(changes, DAILY)
        left_out = (
            f"; left out {counted(len(unsaid), 'bullet')} of the model that no transcript of the "
            "day says: " + "; ".join(t[:80] for t in unsaid)
            if unsaid
            else ""
        )
        result = MaintenanceResult(
            (
                f"journal {day.isoformat()}: {counted(len(report.added), 'bullet')} added, "
                f"{report.duplicates} already there, "
                f"from {counted(len(srcs), 'transcript')}{left_out}",
            ),
            tuple(report.paths) or (),
        )
        # committed even when this run added nothing: a run killed after it wrote the
        # journal, before its commit, finds every bullet "already there" the next time,
        # and its journal is committed by this one (`MemoryPruner._commit`)
        return self._commit(result, f"daily journal {day.isoformat()}", commit, "memory")

    def _daily_llm(
        self, day: date, srcs: list[SourceTranscript]
    ) -> tuple[list[KnowledgeChange], list[str]]:
        """The journal bullets the model writes for DAY, each cited with the transcript
        that says most of it, and the bullets no transcript says (left out: at least half
        of a bullet's content words must be in the transcript it is credited to, or it
        would cite a session for what was never said there)."""
        path = f"knowledge/journal/{day.isoformat()}.md"
        existing = self.repo.root / path
        transcripts = "\n\n".join(
            f"### {s.path}\n{s.text.split(chr(10) + '---' + chr(10), 1)[-1][: 8000 // len(srcs)]}"
            for s in srcs
        )
        prompt = (
            (PROMPTS / "condense_daily.v1.md")
            .read_text(encoding="utf-8")
            .replace(
                "{journal}",
                existing.read_text(encoding="utf-8") if existing.exists() else "(empty)",
            )
            .replace("{date}", day.isoformat())
            .replace("{transcripts}", transcripts)
        )
        try:
            data = self.llm.complete_json(
                "condense", prompt, schema=lambda d: reply_items(d, "bullet")
            ).data
        except (LLMUnavailableError, LLMResponseError):
            return [], []  # the offline summary runs instead; never blocks on a model
        out = []
        unsaid: list[str] = []
        said = [kf.fact_words(s.text)[0] for s in srcs]
        for d in reply_items(data, "bullet"):
            text = str(d["bullet"]).strip()
            words = kf.fact_words(text)[0]
            at = max(range(len(said)), key=lambda i: len(words & said[i]))
            if not words or 2 * len(words & said[at]) < len(words):
                unsaid.append(text)
                continue
            src = srcs[at]
            topic = (
                slugify(str(d.get("topic") or "general").replace("/", " "), NAME_SLUG_LEN)
                or "general"
            )
            out.append(
                KnowledgeChange(
                    path,
                    "append",
                    topic,
                    text,
                    src.provenance(src.locate(text), DAILY.producer),
                    dated=False,
                    section_level=3,
                )
            )
        return out, unsaid

    # ── weekly ──
    def _journals_of_week(self, day: date) -> list[tuple[date, str, kf.KnowledgeDoc]]:
        monday = day - timedelta(days=day.isoweekday() - 1)
        out = []
        for i in range(7):
            d = monday + timedelta(days=i)
            rel = f"knowledge/journal/{d.isoformat()}.md"
            doc = self.writer.read(rel)
            if doc is not None:
                out.append((d, rel, doc))
        return out

    def weekly_rollup(self, day: date | None = None, *, commit: bool = True) -> MaintenanceResult:
        day = day or self.now().date()
        label = iso_week(day)
        journals = self._journals_of_week(day)
        if not journals:
            return MaintenanceResult((f"no journals in {label}; MEMORY.md unchanged",))
        changes, unsaid = self._weekly_llm(label, journals) if self.use_llm else ([], [])
        if not changes:
            changes = self._weekly_offline(label, journals)
        with self.writer.batch():  # from its write to its commit (`KnowledgeWriter.commit`)
            return self._commit_weekly(label, changes, unsaid, commit)

    def _commit_weekly(
        self, label: str, changes: list[KnowledgeChange], unsaid: list[str], commit: bool
    ) -> MaintenanceResult:
        report = self.writer.apply(changes, WEEKLY)
        actions = [
            f"weekly rollup {label}: {len(report.added)} MEMORY.md entries added, "
            f"{len(report.superseded)} superseded, "
            f"{report.duplicates} already there"
        ]
        if unsaid:
            actions.append(
                f"left out {counted(len(unsaid), 'item')} of the model that no journal line of "
                f"{label} says: {'; '.join(t[:80] for t in unsaid[:3])}"
            )
        result = MaintenanceResult(tuple(actions), tuple(report.paths))
        result = result + self.pruner.prune_memory(commit=False)
        # as the daily run: what a killed run wrote is committed by the next one
        return self._commit(result, f"weekly rollup {label} into MEMORY.md", commit, "memory")

    def _weekly_offline(
        self, label: str, journals: list[tuple[date, str, kf.KnowledgeDoc]]
    ) -> list[KnowledgeChange]:
        """The week's "Decided:", "Lesson:" and "Preference:" journal lines, as MEMORY.md
        lines for the facts that still stand (see `_promote`). No per-topic session
        counts: those are noise, and the journals keep them."""
        known = self._known_entries()
        changes: list[KnowledgeChange] = []
        for _, _, doc in journals:
            for s in doc.sections:
                if s.level != 3:
                    continue
                for e in s.entries():
                    m = _PREFIX.match(e.text)
                    if e.source and e.active and m:
                        change = self._promote(
                            known, _SECTIONS[m.group(1)], e.text[m.end() :], self._prov(e), e.id
                        )
                        if change is not None:
                            changes.append(change)
        return changes

    def _known_entries(self) -> list[tuple[str, kf.Entry]]:
        """Every entry, live or superseded, of the current-state knowledge files, and
        those the MEMORY.md cap moved to its archive (`_promote` brings none back)."""
        out = []
        for p in self.repo.iter_markdown("knowledge"):
            rel = self.repo.rel(p)
            if kf.is_current_state(rel):
                doc = self.writer.read_in_sweep(rel)
                out += [(rel, e) for _, e in doc.entries()] if doc is not None else []
        archive = self.writer.read_in_sweep(ARCHIVE_MEMORY)
        out += [(ARCHIVE_MEMORY, e) for _, e in archive.entries()] if archive is not None else []
        return out

    @staticmethod
    def _promote(
        known: list[tuple[str, kf.Entry]],
        section: str,
        text: str,
        prov: Provenance,
        entry_id: str | None = None,
    ) -> KnowledgeChange | None:
        """The MEMORY.md line for a fact of the week, or None when it must not be added.

        The fact is looked up among the current-state entries, by the id the journal line
        carries, else by its words (`knowledge.restates`, either way round): a fact that
        was superseded is never brought back; one that stands in a project file gets a
        derived line in MEMORY.md with that entry's id; one MEMORY.md already holds is
        left alone; a fact known nowhere else becomes a MEMORY.md entry of its own. An
        entry MEMORY.md's cap moved to its archive (that id) is not rolled up again: a
        second rollup of the week brought it back, in both files, and moved out another."""
        archived = {e.id for p, e in known if p == ARCHIVE_MEMORY}
        known = [(p, e) for p, e in known if p != ARCHIVE_MEMORY]

        def unless_archived(change: KnowledgeChange) -> KnowledgeChange | None:
            return None if (change.entry_id or entry_id_for(change)) in archived else change

        same = [(p, e) for p, e in known if e.id == entry_id] if entry_id else []
        if not same:
            same = [
                (p, e) for p, e in known if kf.restates(text, e.text) or kf.restates(e.text, text)
            ]
        live = [(p, e) for p, e in same if e.active]
        if same and not live:
            return None
        if any(p == MEMORY_FILE for p, _ in live):
            return None
        if live:  # the canonical entry: not an index file's derived line
            path, canonical = min(live, key=lambda pe: (pe[0] in INDEX_FILES, pe[0]))
            at = parse_ts(canonical.turn_at, "the entry's time")
            parts = PurePosixPath(path).parts
            text = (
                f"{parts[2]}: {canonical.text}"
                if len(parts) == 4 and parts[1] == "projects"
                else canonical.text
            )
            return unless_archived(
                KnowledgeChange(
                    MEMORY_FILE,
                    "append",
                    section,
                    text,
                    Provenance(canonical.source or prov.source, at, WEEKLY.producer),
                    entry_id=canonical.id,
                )
            )
        return unless_archived(KnowledgeChange(MEMORY_FILE, "append", section, text, prov))

    @staticmethod
    def _prov(e: kf.Entry) -> Provenance:
        at = parse_ts(e.turn_at, "the entry's time") if e.turn_at else utc_now()
        return Provenance(e.source or "", at, WEEKLY.producer)

    @staticmethod
    def _said_in(text: str, entries: list[kf.Entry]) -> kf.Entry | None:
        """The journal entry that says TEXT, an item the model proposes for MEMORY.md: of
        the entries TEXT restates (`kf.restates`: nothing but their words and numbers,
        the same negations), the one sharing most of its words. None when no entry says
        it: such an item is no fact of the week, and crediting it to the closest entry
        would cite a session for what was never said there."""
        words, _ = kf.fact_words(text)
        saying = [e for e in entries if kf.restates(text, e.text)]
        return max(saying, key=lambda e: len(words & kf.fact_words(e.text)[0]), default=None)

    def _weekly_llm(
        self, label: str, journals: list[tuple[date, str, kf.KnowledgeDoc]]
    ) -> tuple[list[KnowledgeChange], list[str]]:
        """The MEMORY.md changes the model proposes for the week, and the items it proposed
        that no journal line says (left out)."""
        memory_path = self.repo.root / MEMORY_FILE
        prompt = (
            (PROMPTS / "condense_weekly.v2.md")
            .read_text(encoding="utf-8")
            .replace(
                "{memory}",
                memory_path.read_text(encoding="utf-8") if memory_path.exists() else "(empty)",
            )
            .replace("{week}", label)
            .replace("{journals}", "\n\n".join(kf.render(d) for _, _, d in journals)[:12000])
        )

        def check(data: Any) -> None:
            for item in reply_items(data, "text"):
                if item.get("section") not in (
                    "Key Decisions",
                    "Lessons Learned",
                    "Active Context",
                    "Preferences",
                ):
                    raise ValueError(
                        "each item's section must be Key Decisions, Lessons Learned, Preferences "
                        "or Active Context"
                    )

        try:
            data = self.llm.complete_json("condense", prompt, schema=check).data
        except (LLMUnavailableError, LLMResponseError):
            return [], []
        entries = [e for _, _, d in journals for _, e in d.entries() if e.source]
        known = self._known_entries()
        out, unsaid = [], []
        for item in reply_items(data, "text"):
            text = str(item["text"])
            source = self._said_in(text, entries)
            if source is None:
                unsaid.append(text)
                continue
            change = self._promote(known, str(item["section"]), text, self._prov(source))
            if change is not None:
                out.append(change)
        return out, unsaid

    # ── monthly ──
    def monthly_distillation(
        self, day: date | None = None, *, commit: bool = True
    ) -> MaintenanceResult:
        # the model is asked for every rewrite first, with the writer's lock not held
        # (docs/design.md#writer-passes); each is judged against its file as it is then
        rewrites: dict[str, tuple[str | None, str | None]] = {}
        for p in self.repo.iter_markdown("knowledge") if self.use_llm else ():
            rel = self.repo.rel(p)
            if rel.startswith("knowledge/identity/"):
                continue
            doc = self.writer.read_in_sweep(rel)
            if doc is not None and doc.meta().get("needs_compact") is True:
                rewrites[rel] = self.pruner.ask_rewrite(rel)
        with self.writer.batch():  # from its first write to its commit
            result = (
                self.pruner.prune_journals(commit=False)
                + self.pruner.score_and_evict(commit=False)
                + self.pruner.prune_memory(commit=False)
            )
            for rel, (rewritten, unanswered) in rewrites.items():
                if (self.repo.root / rel).is_file():  # not evicted just now
                    _, r = self.pruner.judge_rewrite(rel, rewritten, unanswered, commit=False)
                    result = result + r
            if not result.actions:
                result = MaintenanceResult(
                    ("monthly distillation: nothing to archive, evict or compact",)
                )
            return self._commit(result, "monthly distillation", commit, "maintenance")


__all__ = ["MemoryCondenser"]
