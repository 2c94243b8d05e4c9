"""MemoryCondenser (design §8.4, §10.3): episodic memory -> curated memory.

* daily_summary: the day's journal from the day's transcripts. Updating, not
  duplicating: bullets already in the journal are skipped by the writer.
* weekly_rollup: the week's journals -> MEMORY.md: their decisions and lessons, and one
  "Active Context" line per topic, which supersedes last week's line for that topic. Then
  the MEMORY.md cap.
* monthly_distillation: archive old journals, evict stale knowledge, enforce the cap,
  compact files flagged `needs_compact`.

Offline by default (extractive, cited); with `llm.provider: openai` the daily and weekly
steps ask the condense stage for bullets (JSON), which still go through the writer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import iso_week, parse_ts, utc_now
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.core.text import slugify
from autopoiesis.errors import LLMResponseError, LLMUnavailableError
from autopoiesis.formats import knowledge as kf
from autopoiesis.lifecycle.extractors.base import NAME_SLUG_LEN, SourceTranscript, reply_items
from autopoiesis.lifecycle.extractors.journal import JOURNAL
from autopoiesis.lifecycle.prune import MaintenanceResult, MemoryPruner
from autopoiesis.lifecycle.stage import LLMStage
from autopoiesis.lifecycle.writer import KnowledgeChange, KnowledgeWriter, Provenance, WritePolicy

PROMPTS = Path(__file__).parent / "prompts"
DAILY = WritePolicy("condense.daily@1", ("knowledge/journal/*.md",), frozenset({"append"}))
WEEKLY = WritePolicy("condense.weekly@1", (MEMORY_FILE,), frozenset({"append", "supersede"}))
_PREFIX = re.compile(r"^(Decided|Lesson): ")


class MemoryCondenser(LLMStage):
    def __init__(self, repo: MemoryRepo, *, llm: Any = None, now: Callable[[], datetime] | None = None,
                 use_llm: bool | None = None, writer: KnowledgeWriter | None = None,
                 usage: Mapping[str, int] | None = None):
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

    def _commit(self, result: MaintenanceResult, subject: str, commit: bool, ctype: str) -> MaintenanceResult:
        return self.pruner._commit(result, subject, commit, ctype)

    # ── daily ──
    def _transcripts_of(self, day: date) -> list[SourceTranscript]:
        base = self.repo.conversations_dir / f"{day.year:04d}" / f"{day.month:02d}" / f"{day.day:02d}"
        out = []
        for p in sorted(base.glob("*.md")) if base.is_dir() else []:
            src = SourceTranscript.from_text(self.repo.rel(p), p.read_text(encoding="utf-8"))
            if src.transcript.meta.status != "open":
                out.append(src)
        return out

    def daily_summary(self, day: date | None = None, *, commit: bool = True) -> MaintenanceResult:
        day = day or self.now().date()
        srcs = self._transcripts_of(day)
        if not srcs:
            return MaintenanceResult((f"no transcripts on {day.isoformat()}; no journal written",))
        changes: list[KnowledgeChange] = []
        if self.use_llm:
            changes = self._daily_llm(day, srcs)
        if not changes:
            changes = [c for s in srcs for c in JOURNAL.run_offline(s)]
        changes = [KnowledgeChange(**{**c.__dict__, "provenance": Provenance(c.provenance.source, c.provenance.at, DAILY.producer,
                                                                                 c.provenance.session)}) for c in changes]
        report = self.writer.apply(changes, DAILY)
        result = MaintenanceResult(
            (f"journal {day.isoformat()}: {len(report.added)} bullet(s) added, {report.duplicates} already there, "
             f"from {len(srcs)} transcript(s)",),
            tuple(report.paths) or (),
        )
        return self._commit(result, f"daily journal {day.isoformat()}", commit, "memory") if report.paths else result

    def _daily_llm(self, day: date, srcs: list[SourceTranscript]) -> list[KnowledgeChange]:
        path = f"knowledge/journal/{day.isoformat()}.md"
        existing = self.repo.root / path
        transcripts = "\n\n".join(f"### {s.path}\n{s.text.split(chr(10) + '---' + chr(10), 1)[-1][:8000 // len(srcs)]}" for s in srcs)
        prompt = ((PROMPTS / "condense_daily.v1.md").read_text(encoding="utf-8")
                  .replace("{journal}", existing.read_text(encoding="utf-8") if existing.exists() else "(empty)")
                  .replace("{date}", day.isoformat()).replace("{transcripts}", transcripts))
        try:
            data = self.llm.complete_json("condense", prompt, schema=lambda d: reply_items(d, "bullet")).data
        except (LLMUnavailableError, LLMResponseError):
            return []  # the offline summary runs instead; condensation never blocks on a model
        out = []
        for d in reply_items(data, "bullet"):
            text = str(d["bullet"]).strip()
            src = max(srcs, key=lambda s: len(set(text.lower().split()) & set(s.text.lower().split())))
            topic = slugify(str(d.get("topic") or "general").replace("/", " "), NAME_SLUG_LEN) or "general"
            out.append(KnowledgeChange(path, "append", topic, text, src.provenance(src.locate(text), DAILY.producer),
                                       dated=False, section_level=3))
        return out

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
        changes = self._weekly_llm(label, journals) if self.use_llm else []
        if not changes:
            changes = self._weekly_offline(label, journals)
        report = self.writer.apply(changes, WEEKLY)
        result = MaintenanceResult(
            (f"weekly rollup {label}: {len(report.added)} MEMORY.md entries added, {len(report.superseded)} superseded, "
             f"{report.duplicates} already there",),
            tuple(report.paths),
        )
        result = result + self.pruner.prune_memory(commit=False)
        return self._commit(result, f"weekly rollup {label} into MEMORY.md", commit, "memory") if result.paths else result

    def _weekly_offline(self, label: str, journals: list[tuple[date, str, kf.KnowledgeDoc]]) -> list[KnowledgeChange]:
        memory = self.writer.read(MEMORY_FILE)
        changes: list[KnowledgeChange] = []
        topics: dict[str, list[kf.Entry]] = {}
        for _, _, doc in journals:
            for s in doc.sections:
                if s.level != 3:
                    continue
                for e in s.entries():
                    if not e.source or not e.active:
                        continue
                    topics.setdefault(s.title, []).append(e)
                    m = _PREFIX.match(e.text)
                    if m:
                        section = "Key Decisions" if m.group(1) == "Decided" else "Lessons Learned"
                        changes.append(KnowledgeChange(MEMORY_FILE, "append", section, e.text[m.end():],
                                                       self._prov(e)))
        for topic, entries in sorted(topics.items()):
            sessions = {e.source for e in entries}
            latest = max((e for e in entries if not _PREFIX.match(e.text)), key=lambda e: e.at or "", default=entries[-1])
            text = f"{topic}: {len(sessions)} session(s) in {label}; latest: {latest.text}"
            old = None
            if memory is not None:
                i = memory.find_section("Active Context")
                if i is not None:
                    old = next((e.id for e in memory.sections[i].entries() if e.active and e.text.startswith(f"{topic}: ")), None)
            changes.append(KnowledgeChange(MEMORY_FILE, "supersede" if old else "append", "Active Context", text,
                                           self._prov(latest), target=old))
        return changes

    @staticmethod
    def _prov(e: kf.Entry) -> Provenance:
        at = parse_ts(e.at, "the entry's time") if e.at else utc_now()
        return Provenance(e.source or "", at, WEEKLY.producer)

    def _weekly_llm(self, label: str, journals: list[tuple[date, str, kf.KnowledgeDoc]]) -> list[KnowledgeChange]:
        memory_path = self.repo.root / MEMORY_FILE
        prompt = ((PROMPTS / "condense_weekly.v1.md").read_text(encoding="utf-8")
                  .replace("{memory}", memory_path.read_text(encoding="utf-8") if memory_path.exists() else "(empty)")
                  .replace("{week}", label).replace("{journals}", "\n\n".join(kf.render(d) for _, _, d in journals)[:12000]))

        def check(data: Any) -> None:
            for item in reply_items(data, "text"):
                if item.get("section") not in ("Key Decisions", "Lessons Learned", "Active Context"):
                    raise ValueError("each item's section must be Key Decisions, Lessons Learned or Active Context")

        try:
            data = self.llm.complete_json("condense", prompt, schema=check).data
        except (LLMUnavailableError, LLMResponseError):
            return []
        entries = [e for _, _, d in journals for _, e in d.entries() if e.source]
        out = []
        for item in reply_items(data, "text"):
            text = str(item["text"])
            words = set(text.lower().split())
            best = max(entries, key=lambda e: len(words & set(e.text.lower().split())), default=None)
            if best is None:
                continue
            out.append(KnowledgeChange(MEMORY_FILE, "append", str(item["section"]), text, self._prov(best)))
        return out

    # ── monthly ──
    def monthly_distillation(self, day: date | None = None, *, commit: bool = True) -> MaintenanceResult:
        result = (self.pruner.prune_journals(commit=False) + self.pruner.score_and_evict(commit=False)
                  + self.pruner.prune_memory(commit=False))
        for p in sorted(self.repo.knowledge_dir.rglob("*.md")):
            rel = self.repo.rel(p)
            if rel.startswith("knowledge/identity/"):
                continue
            doc = self.writer.read(rel) or kf.parse(p.read_text(encoding="utf-8"))
            if doc.meta().get("needs_compact") is True and self.use_llm:
                _, r = self.pruner.compact(rel, commit=False)
                result = result + r
        if not result.actions:
            result = MaintenanceResult(("monthly distillation: nothing to archive, evict or compact",))
        return self._commit(result, "monthly distillation", commit, "maintenance")


__all__ = ["MemoryCondenser"]
