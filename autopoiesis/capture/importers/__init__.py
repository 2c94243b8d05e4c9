"""Import finished sessions: every format through one filing path.

The formats are plugins (base.Importer, registered by name): each reads a file into
SessionDrafts. Filing is the same for all of them: redact, cap each message at
`capture.max_message_bytes`, build a closed Transcript, write it under its own date and
commit the batch together. A session already imported with the same content is skipped;
one with the same id but other content is refused, because transcripts are immutable.

To add a format: one module here with its Importer class, and one entry in
BUILTIN_IMPORTERS below (or `register_importer(...)` from anywhere else).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    AUTO,
    DraftTurn,
    Importer,
    ImportReport,
    SessionDraft,
    detect_format,
    format_names,
    get_importer,
    importers,
    register_importer,
)
from autopoiesis.capture.importers.chatgpt import ChatGPTImporter
from autopoiesis.capture.importers.claude_ai import ClaudeAIImporter
from autopoiesis.capture.importers.claude_code import ClaudeCodeImporter
from autopoiesis.capture.importers.codex import CodexImporter
from autopoiesis.capture.importers.copilot import CopilotImporter
from autopoiesis.capture.importers.cursor import CursorImporter, CursorMarkdownImporter
from autopoiesis.capture.importers.gemini import GeminiImporter
from autopoiesis.capture.importers.neutral import NeutralImporter
from autopoiesis.capture.importers.openai import OpenAIImporter
from autopoiesis.capture.importers.responses import ResponsesImporter
from autopoiesis.capture.session import find_transcripts
from autopoiesis.core.clock import utc
from autopoiesis.core.paths import MemoryRepo, atomic_write
from autopoiesis.core.redact import Redactor
from autopoiesis.core.text import one_line
from autopoiesis.errors import AutopoiesisError, GitError, ImportFormatError, TranscriptFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.gitops import MemoryGit

# In this order: `--format auto` gives a tie to the earlier one, and `--help` lists them so.
BUILTIN_IMPORTERS: tuple[Importer, ...] = (
    NeutralImporter(),
    OpenAIImporter(),
    ClaudeCodeImporter(),
    CodexImporter(),
    ResponsesImporter(),
    CursorImporter(),
    CursorMarkdownImporter(),
    GeminiImporter(),
    ChatGPTImporter(),
    CopilotImporter(),
    ClaudeAIImporter(),
)
for _importer in BUILTIN_IMPORTERS:
    register_importer(_importer)

__all__ = [
    "AUTO", "BUILTIN_IMPORTERS", "DraftTurn", "ImportReport", "Importer", "SessionDraft", "detect_format",
    "draft_to_transcript", "file_sessions", "format_names", "get_importer", "import_files", "importers",
    "read_sessions", "register_importer",
]


def read_text(path: Path) -> str:
    """PATH as UTF-8 text (a BOM dropped); ImportFormatError for binary or other encodings."""
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise ImportFormatError(f"{path} looks binary (NUL bytes); import takes JSON or JSONL text.")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path} is not valid UTF-8 (byte {exc.start}); re-encode it as UTF-8.") from None


def read_sessions(path: Path, fmt: str, report: ImportReport) -> list[SessionDraft]:
    """The sessions of one file in format FMT (`auto`: the importer that recognises it)."""
    importer = None if fmt == AUTO else get_importer(fmt)
    text = read_text(path)
    if importer is None:
        importer = detect_format(path, text)
    return importer.read(path, text, report)


def draft_to_transcript(draft: SessionDraft, redactor: Redactor, max_bytes: int) -> tf.Transcript:
    """DRAFT as a closed, redacted Transcript, exactly as it will read back from disk.
    Every text field (content, tool calls, names, attachments, model, channel, topic,
    tags, source) goes through REDACTOR; text that cannot be UTF-8 is made so once, by
    the transcript format's encode."""
    tf.validate_session_id(draft.session_id)
    turns = []
    for t in draft.turns:
        items: list[tf.Item] = []
        for it in t.items:
            if isinstance(it, tf.Text):
                raw = tf.encode(it.content)
                if len(raw) > max_bytes:
                    it = tf.Text(raw[:max_bytes].decode("utf-8", "ignore") + "\n[truncated]")
            items.append(it)
        turns.append(tf.Turn(time=utc(t.time), role=t.role, items=tuple(items), name=t.name))
    turns.sort(key=lambda t: t.time)  # stable: equal times keep their order
    if not turns and draft.started is None:
        raise ImportFormatError(f"session {draft.session_id} has no messages and no started time.")
    started = draft.started or turns[0].time
    ended = draft.ended or (turns[-1].time if turns else started)
    meta = tf.TranscriptMeta(
        session_id=draft.session_id,
        started=started,
        ended=max(ended, started),
        model=draft.model,
        channel=draft.channel,
        topic=one_line(draft.topic, 200) if draft.topic else None,
        tags=tuple(draft.tags),
        tokens_in=draft.tokens_in,
        tokens_out=draft.tokens_out,
        status="closed",
        source=draft.source,
    )
    redactor.counts.clear()
    redacted = tf.map_text(tf.Transcript(meta, "", tuple(turns)), redactor.redact)
    meta = replace(redacted.meta, redactions=tuple(sorted(redactor.counts.items())))
    slug = tf.slug_from_turns(redacted.turns, meta.topic)
    # render-normalise once so the in-memory transcript equals what is on disk
    rendered = tf.render(tf.Transcript(meta, tf.title_from_slug(slug, meta.session_id), redacted.turns))
    return tf.parse(tf.decode(tf.encode(rendered)))


def _same_content(a: tf.Transcript, b: tf.Transcript) -> bool:
    def shape(t: tf.Transcript) -> list[Any]:
        return [(x.role, x.name, x.memory, x.items) for x in t.turns]

    return shape(a) == shape(b)


def file_sessions(repo: MemoryRepo, transcripts: list[tf.Transcript], report: ImportReport, *, commit: bool = True) -> None:
    """Write each transcript under its own date; skip exact re-imports; commit them together.
    A session that cannot be written is refused on its own."""
    written: list[str] = []
    for t in transcripts:
        sid = t.meta.session_id
        existing = find_transcripts(repo, sid, t.meta.started) or find_transcripts(repo, sid)
        if existing:
            try:
                old = tf.parse(tf.decode(existing[0].read_bytes()), repo.rel(existing[0]))
            except (TranscriptFormatError, OSError):
                old = None
            if old is not None and _same_content(old, t):
                report.skipped_duplicates.append(repo.rel(existing[0]))
                continue
            report.refused.append(
                f"session {sid} already exists as {repo.rel(existing[0])} with other content; transcripts are "
                "immutable, so import the new version under another session_id."
            )
            continue
        if not t.turns:
            report.refused.append(f"session {sid} has no messages; nothing imported")
            continue
        slug = tf.slug_from_turns(t.turns, t.meta.topic)
        rel = tf.transcript_relpath(sid, t.meta.started, slug)
        try:
            atomic_write(repo.root / rel, tf.encode(tf.render(t)))
        except OSError as exc:
            report.refused.append(f"session {sid}: cannot write {rel} ({exc.strerror or exc}); free disk space and import it again.")
            continue
        written.append(rel)
    report.imported.extend(written)
    if commit and written:
        if len(written) == 1:
            stem = Path(written[0]).stem
            msg = f"conversation: {stem[5:]}\n\nSession: {written[0]}\n"
        else:
            msg = f"conversation: import {len(written)} sessions\n\n" + "".join(f"Session: {p}\n" for p in written)
        try:
            report.commit = MemoryGit(repo).commit_paths(written, msg).sha
        except GitError as exc:
            report.refused.append(
                f"{len(written)} transcripts were written but not committed ({exc}); "
                "`autopoiesis commit` commits them."
            )


def import_files(repo: MemoryRepo, paths: Iterable[str | os.PathLike[str]], fmt: str = AUTO, *, commit: bool = True) -> ImportReport:
    """Import every file of PATHS in format FMT (`auto`: detected per file) and file the
    sessions. Bad input never raises: each file and each session is refused on its own,
    with its reason in the report, and the rest is imported and committed. A file that
    yields no session is refused too."""
    report = ImportReport()
    redactor = repo.redactor()
    transcripts: list[tf.Transcript] = []
    for p in paths:
        path = Path(p)
        if not path.is_file():
            report.refused.append(f"{path}: no such file")
            continue
        refused_before, bad_before = len(report.refused), report.bad_lines
        try:
            drafts = read_sessions(path, fmt, report)
        except AutopoiesisError as exc:
            report.refused.append(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
            continue
        except RecursionError:
            report.refused.append(f"{path}: nested deeper than can be read; nothing of it was imported.")
            continue
        except Exception as exc:
            report.refused.append(f"{path}: could not be read ({type(exc).__name__}: {exc}); nothing of it was imported.")
            continue
        kept = 0
        for d in drafts:
            try:
                t = draft_to_transcript(d, redactor, repo.config.capture.max_message_bytes)
                if not t.turns:
                    report.refused.append(f"{path}: session {d.session_id!r} has no messages; nothing imported.")
                    continue
                transcripts.append(t)
                kept += 1
            except AutopoiesisError as exc:
                report.refused.append(f"{path}: session {d.session_id!r}: {exc}")
            except Exception as exc:
                report.refused.append(f"{path}: session {d.session_id!r}: {type(exc).__name__}: {exc}")
        if not kept and len(report.refused) == refused_before:
            bad = report.bad_lines - bad_before
            why = f"{bad} malformed lines, " if bad else ""
            report.refused.append(f"{path}: no conversation found ({why}no session with a message); nothing imported.")
    file_sessions(repo, transcripts, report, commit=commit)
    return report
