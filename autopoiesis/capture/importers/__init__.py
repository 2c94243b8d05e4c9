"""Import finished sessions: every format through one filing path.

The formats are plugins (base.Importer, registered by name): each reads a file (or, for
a base.FolderImporter, a folder) into SessionDrafts. Filing is the same for all of them:
redact, cap each message at `capture.max_message_bytes`, build a closed Transcript, write
it under its own date and commit the batch together (filing.py). A session already
imported with the same content is skipped; one that grew since becomes a continuation
part; one whose earlier turns changed is refused, because transcripts are immutable.
A folder given to import is claimed by a folder format, or walked for the files in it.

To add a format: a module with its Importer class, and one entry in BUILTIN_IMPORTERS of
autopoiesis.integrations.importers (the built-in plugin), or a plugin of its own
(autopoiesis.plugins: the hook `register_importers`), or `register_importer(...)`.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    AUTO,
    DatabaseImporter,
    DraftTurn,
    FolderImporter,
    Importer,
    ImportReport,
    SessionDraft,
    database_importer,
    detect_format,
    folder_importer,
    format_hint,
    format_names,
    get_importer,
    importers,
    register_importer,
)
from autopoiesis.capture.importers.filing import Prepared, file_sessions
from autopoiesis.capture.importers.unread import not_read_yet, recognise_database
from autopoiesis.core.approval import capture_held_back
from autopoiesis.core.clock import format_ts, said_time, utc, utc_now
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.project import session_project
from autopoiesis.core.redact import Redactor
from autopoiesis.core.sqlite import database_tables, is_database
from autopoiesis.core.text import counted, decode_replacing, one_line
from autopoiesis.errors import (
    AutopoiesisError,
    ImportFormatError,
    TimestampError,
    UnknownFormatError,
)
from autopoiesis.formats import tool_calls
from autopoiesis.formats import transcript as tf
from autopoiesis.plugins import builtin_contributions


def __getattr__(name: str) -> Any:
    if name == "BUILTIN_IMPORTERS":  # what the built-in plugin (integrations.importers) registers
        return tuple(args[0] for args in builtin_contributions("register_importers"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AUTO",
    "BUILTIN_IMPORTERS",
    "DraftTurn",
    "FolderImporter",
    "ImportReport",
    "Importer",
    "SessionDraft",
    "detect_format",
    "draft_to_transcript",
    "file_sessions",
    "format_names",
    "get_importer",
    "import_files",
    "importers",
    "prepare_draft",
    "read_sessions",
    "register_importer",
]

# What a folder given to import is walked for (other files are not logs of any format).
LOG_SUFFIXES = (".json", ".jsonl", ".ndjson", ".md", ".db")


def read_text(path: Path, report: ImportReport | None = None) -> str:
    """PATH as UTF-8 text, keeping all a damaged file holds that can be read as written.

    A BOM is dropped, and so is NUL padding at the end (a file preallocated, or a write a
    crash left half done). A log of JSON lines (named .jsonl or .ndjson, or whose first
    line is a JSON object on its own) is read line by line, as its reader reads it: a line
    with a byte that is not UTF-8 is kept, each such byte read as U+FFFD (a message with
    one damaged character is still the message; REPORT says so); a line that holds NUL
    bytes, or a final line cut in the middle of a character (a log being written), is
    skipped and counted in REPORT like a malformed line, left blank so the others keep
    their numbers. A whole document (a JSON file, a Markdown export) is one
    text, and a bad byte inside it cannot be dropped without changing what it says: only a
    character cut off at its very end is left out (with a warning); any other bad byte
    refuses the file, saying where, for it to be re-encoded. ImportFormatError for UTF-16
    or UTF-32 (with how to convert it) and for what is no text (an image, NULs all
    through, a log whose lines are mostly unreadable)."""
    raw = path.read_bytes()
    _refuse_wide_text(path, raw)
    raw = raw.removeprefix(codecs.BOM_UTF8)
    if _nul_padded(raw):
        kept = raw.rstrip(b"\x00 \t\r\n")
        raw = raw[: raw.find(b"\x00", len(kept))]
        if not raw.strip():
            raise ImportFormatError(
                f"{path} holds nothing but NUL bytes (space allocated and never written, as a "
                "crash can leave a file); there is no log in it to import."
            )
    if b"\x00" not in raw:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    report = ImportReport() if report is None else report
    if _line_oriented(path, raw):
        return _readable_lines(path, raw, report)
    return _whole_document(path, raw, report)


def _nul_padded(raw: bytes) -> bool:
    """Whether RAW ends in NUL bytes (whitespace among or after them), padding and not
    content; asked of its tail alone, a log may be tens of megabytes."""
    return raw[-65536:].rstrip(b" \t\r\n").endswith(b"\x00")


_BINARY = (
    "looks binary (NUL bytes); import takes a text log (JSON, JSONL or a Markdown export) or "
    "a harness's SQLite database."
)


def _refuse_wide_text(path: Path, raw: bytes) -> None:
    """Refuse PATH when RAW is UTF-16 or UTF-32 text (by its BOM, or by the NUL byte
    beside each ASCII character), saying how to convert it to UTF-8."""
    codec = next((name for bom, name in _WIDE_BOMS if raw.startswith(bom)), None)
    head = raw[:4096]
    if codec is None and len(head) >= 16:
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if odd > len(head) // 4 and even < odd // 8:
            codec = "UTF-16LE"
        elif even > len(head) // 4 and odd < even // 8:
            codec = "UTF-16BE"
    if codec is not None:
        converted = path.with_name(f"{path.stem}.utf8{path.suffix}")
        raise ImportFormatError(
            f"{path} is {codec} text, and import reads UTF-8: convert it with "
            f"`iconv -f {codec} -t UTF-8 {path} > {converted}` and import that."
        )


# the UTF-32 marks first: UTF-32LE's begins with UTF-16LE's
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _line_oriented(path: Path, raw: bytes) -> bool:
    """Whether RAW is a log of JSON lines, each read on its own: its name says so, or its
    first line is a JSON object by itself (a document's first line, `{` or the opening of
    its lists, is not; a first line that cannot be read says nothing)."""
    if path.suffix in (".jsonl", ".ndjson"):
        return True
    pos = 0
    while pos < len(raw):  # the first line that is not blank, not splitting the rest
        end = raw.find(b"\n", pos)
        end = len(raw) if end < 0 else end
        if raw[pos:end].strip():
            try:
                return isinstance(json.loads(raw[pos:end].decode("utf-8")), dict)
            except (ValueError, RecursionError):
                return False
        pos = end + 1
    return False


def _readable_lines(path: Path, raw: bytes, report: ImportReport) -> str:
    """RAW, a log of JSON lines: a line with bytes that are not UTF-8 kept with each read
    as U+FFFD (told in REPORT once for the file), one with NUL bytes or a last line cut
    in the middle of a character left blank and counted in REPORT; refused when such
    lines are most of its lines (no text, or text of another encoding: every accent of a
    CP1252 log would be a U+FFFD)."""
    lines = raw.split(b"\n")
    out: list[str] = []
    bad: list[tuple[int, str]] = []
    mended: list[tuple[int, int]] = []  # (line, byte): kept with U+FFFD in place of bytes
    for n, line in enumerate(lines, 1):
        if b"\x00" in line:
            why = "NUL bytes in it"
        else:
            text, bad_at = decode_replacing(line)
            if bad_at is None or not (n == len(lines) and _cut_off_at(bad_at, line)):
                out.append(text)
                if bad_at is not None:
                    mended.append((n, bad_at))
                continue
            why = "not valid UTF-8: cut off in the middle of a character"
        out.append("")
        bad.append((n, why))
    unread = len(bad) + len(mended)
    clean = sum(1 for line in out if line.strip()) - len(mended)
    if unread > clean:
        if any(b"\x00" in lines[n - 1] for n, _ in bad):
            raise ImportFormatError(f"{path} {_BINARY}")
        first = min([n for n, _ in bad] + [n for n, _ in mended])
        raise ImportFormatError(
            f"{path} is not valid UTF-8 ({unread} of its {unread + clean} lines, the first "
            f"line {first}); re-encode it as UTF-8 (such as `iconv -f CP1252 -t UTF-8`, from "
            "the encoding it was written in)."
        )
    for n, why in bad:
        report.skip_line(str(path), n, why)
    if mended:
        n, at = mended[0]
        report.warnings.append(
            f"{path}: {counted(len(mended), 'line')} with bytes that are not UTF-8 (the first: "
            f"line {n}, byte {at}) {'was' if len(mended) == 1 else 'were'} read with each such "
            "byte as U+FFFD (\ufffd)"
        )
    return "\n".join(out)


def _whole_document(path: Path, raw: bytes, report: ImportReport) -> str:
    """RAW, one document, as text: a character cut off at its end left out (with a
    warning in REPORT); refused for a NUL byte or a bad byte anywhere else."""
    if b"\x00" in raw:
        raise ImportFormatError(f"{path} {_BINARY}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if _cut_off(exc, raw):
            cut = len(raw) - exc.start
            report.warnings.append(
                f"{path}: ends in the middle of a character (the file was cut off); its last "
                f"{counted(cut, 'byte')} {'was' if cut == 1 else 'were'} left out"
            )
            return raw[: exc.start].decode("utf-8")
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ImportFormatError(
            f"{path} is not valid UTF-8 (line {line}, byte {exc.start}); a document is read "
            "whole, so re-encode it as UTF-8 (such as `iconv -f CP1252 -t UTF-8`, from the "
            "encoding it was written in) and import it again."
        ) from None


def _cut_off(exc: UnicodeDecodeError, data: bytes) -> bool:
    """Whether EXC says DATA ends in the middle of a character (and is fine before it)."""
    return exc.end == len(data) and exc.reason == "unexpected end of data"


def _cut_off_at(start: int, data: bytes) -> bool:
    """Whether DATA, valid UTF-8 up to START, ends in the middle of a character there."""
    try:
        data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        return _cut_off(exc, data[start:])
    return False


def read_sessions(
    path: Path, fmt: str, report: ImportReport, registered: dict[str, Importer] | None = None
) -> list[SessionDraft]:
    """The sessions of one file in format FMT (`auto`: the importer that recognises it
    among REGISTERED, default every importer)."""
    importer = None if fmt == AUTO else get_importer(fmt)
    text = read_text(path, report)
    if importer is None:
        importer = detect_format(path, text, registered)
    return importer.read(path, text, report)


def prepare_draft(
    draft: SessionDraft, redactor: Redactor, max_bytes: int, memory_root: Path | None = None
) -> Prepared:
    """DRAFT as a closed, redacted transcript ready to file (filing.Prepared: its text,
    and the transcript as it reads back from that text, parsed only when asked). Every
    text field (content, tool calls, names, attachments, model, channel, topic,
    tags, source) goes through REDACTOR (and a session run in the memory at MEMORY_ROOT
    itself names no project); text that cannot be UTF-8 is made so once, by
    the transcript format's encode. A turn left with nothing to write is refused: the log
    had content its reader did not understand, and a transcript of empty turns would
    lose it without a word.

    The draft's order is the conversation's, whatever its timestamps say: a turn stamped
    before the one ahead of it (a clock stepped back, a message queued while the agent
    answered) keeps its place and takes that one's time. Sorted by time it moved ahead of
    the words it followed, and the log, grown and imported again, no longer began with
    what was filed, so no later turn of the session could be filed.

    A time the log gives that cannot be trusted to date the session (more than a day in
    the future: core.clock.said_time) dates nothing: such a turn is kept at the time of
    the turn before it (the first, at the first trusted time after it, else now), such a
    start or end is left to the turns, and each is a warning in the result's `notes`. A
    session ends no earlier than its start and its last turn."""
    tf.validate_session_id(draft.session_id)
    draft = replace(draft, session_id=tf.written_session_id(draft.session_id, redactor.redact))
    notes: list[str] = []
    draft = _trusted_times(draft, notes)
    turns: list[tf.Turn] = []
    for t in draft.turns:
        items: list[tf.Item] = []
        for it in t.items:
            if isinstance(it, tf.Text):
                raw = tf.encode(it.content)
                if len(raw) > max_bytes:
                    it = tf.Text(raw[:max_bytes].decode("utf-8", "ignore") + "\n[truncated]")
            items.append(it)
        when = max(utc(t.time), turns[-1].time) if turns else utc(t.time)
        turns.append(
            tf.Turn(time=when, role=t.role, items=tuple(items), name=t.name, memory=t.memory)
        )
    empty = [
        t
        for t in turns
        if not any(not isinstance(i, tf.Text) or tf.normalize_content(i.content) for i in t.items)
    ]
    if empty:
        roles = ", ".join(sorted({t.role for t in empty}))
        raise ImportFormatError(
            f"{len(empty)} of {len(turns)} turns ({roles}) would be written empty: the log holds "
            "content this "
            "format's reader did not understand, so nothing of the session was imported. If the "
            "format was "
            "detected wrongly, name the right one with --format NAME "
            f"({', '.join(format_names()[1:])})."
        )
    if not turns and draft.started is None:
        raise ImportFormatError(f"session {draft.session_id} has no messages and no started time.")
    started = draft.started or turns[0].time
    last = max(started, turns[-1].time) if turns else started
    ended = draft.ended or last
    if ended < started:
        notes.append(
            f"session {draft.session_id}: ended {format_ts(ended)} is before it started "
            f"({format_ts(started)}); it ends at {format_ts(last)}."
        )
    meta = tf.TranscriptMeta(
        session_id=draft.session_id,
        started=started,
        ended=max(ended, last),
        model=draft.model,
        channel=draft.channel,
        topic=draft.topic or None,
        tags=tuple(draft.tags),
        tokens_in=draft.tokens_in,
        tokens_out=draft.tokens_out,
        status="closed",
        source=draft.source,
        parent_session=(
            tf.written_session_id(draft.parent_session, redactor.redact)
            if draft.parent_session
            else None
        ),
        resumes=tf.written_session_id(draft.resumes, redactor.redact) if draft.resumes else None,
        project=session_project(
            draft.project, draft.cwd, redactor.redact, memory_root, draft.repository
        ),
        cwd=draft.cwd,
    )
    redactor.counts.clear()  # what session_project found is counted again below
    redacted = tf.map_text(tf.Transcript(meta, "", tuple(turns)), redactor.redact)
    meta = replace(  # an import's title is cut shorter than the format's limit, once redacted
        redacted.meta,
        topic=one_line(redacted.meta.topic, 200) if redacted.meta.topic else None,
        redactions=tuple(sorted(redactor.counts.items())),
    )
    # a log that names no folder: the project its tool calls worked in (their paths read
    # as redacted: a secret in a path names no project)
    meta = tool_calls.with_project_worked_in(meta, redacted, memory_root)
    slug = tf.slug_from_turns(redacted.turns, meta.topic)
    return Prepared(
        tf.Transcript(meta, tf.title_from_slug(slug, meta.session_id), redacted.turns), notes=notes
    )


def _trusted_times(draft: SessionDraft, notes: list[str]) -> SessionDraft:
    """DRAFT with every time that cannot be trusted (core.clock.said_time) replaced: a
    turn's by the time of the turn before it (the first turn's by the first trusted time
    after it, else now), a start's or an end's by none (the turns date the session).
    Each replacement is a note in NOTES naming the session, the value and what was done."""
    now = utc_now()

    def trusted(when: datetime | None, what: str) -> tuple[datetime | None, str]:
        """WHEN when it can be trusted, else None and why not."""
        if when is None:
            return None, ""
        try:
            return said_time(utc(when), what, now=now), ""
        except TimestampError as exc:
            return None, f"session {draft.session_id}: {str(exc).rstrip('.')}"

    started, why = trusted(draft.started, "started")
    if why:
        notes.append(f"{why}; the session starts at its first turn.")
    ended, why = trusted(draft.ended, "ended")
    if why:
        notes.append(f"{why}; the session ends at its last turn.")
    checked = [trusted(t.time, "a turn's time") for t in draft.turns]
    if all(when is not None for when, _ in checked):
        return replace(draft, started=started, ended=ended)
    turns = []
    previous = started
    for i, (turn, (when, why)) in enumerate(zip(draft.turns, checked)):
        if when is None:
            later = next((w for w, _ in checked[i + 1 :] if w is not None), None)
            when = previous or later or now
            notes.append(f"{why}; the turn is kept, dated {format_ts(when)}.")
        previous = when
        turns.append(replace(turn, time=when))
    return replace(draft, started=started, ended=ended, turns=turns)


def draft_to_transcript(draft: SessionDraft, redactor: Redactor, max_bytes: int) -> tf.Transcript:
    """DRAFT as a closed, redacted Transcript, exactly as it will read back from disk
    (prepare_draft, read back from its text)."""
    return prepare_draft(draft, redactor, max_bytes).transcript


def _inputs(
    paths: Iterable[str | os.PathLike[str]], fmt: str, report: ImportReport
) -> list[tuple[Path, bool]]:
    """The files (and claimed folders) to read, each with whether it was found by walking
    a folder. A folder is claimed by a folder format (with `--format auto`, or when FMT
    is that format), else walked for log files; hidden folders inside it are not."""
    out: list[tuple[Path, bool]] = []
    seen: set[str] = set()  # each file (and folder) once, however it was reached
    for p in paths:
        path = Path(p)
        if path.is_dir():
            # a folder named twice, or inside one named before (`import logs logs/a`), is
            # read once: met again it is no folder without logs
            met = os.path.realpath(path) in seen
            unlisted = len(report.refused)
            found = [f for f in _walk(path, fmt, seen, report) if _first(f, seen)]
            if not found and not met and len(report.refused) == unlisted:
                report.refuse(
                    str(path),
                    f"a folder with no session log in it (looked for {', '.join(LOG_SUFFIXES)} "
                    "files); nothing imported.",
                )
            out.extend((f, True) for f in found)
        elif path.is_file():
            if _first(path, seen):
                out.append((path, False))
        elif str(p) == "-":
            report.refused.append(
                "-: import reads log files and folders, not standard input; save the log to "
                "a file, or stream events into `autopoiesis capture`."
            )
        elif path.is_symlink() and not path.exists():
            report.refused.append(f"{path}: a link to nothing ({os.readlink(path)}).")
        elif os.path.lexists(path):
            report.refused.append(
                f"{path}: no regular file (a pipe, a device or a socket is not read); nothing "
                "imported."
            )
        else:
            report.refused.append(f"{path}: no such file")
    return out


def _claims(path: Path, fmt: str) -> bool:
    importer = folder_importer(path) if fmt == AUTO else get_importer(fmt)
    return isinstance(importer, FolderImporter) and importer.detect_folder(path) > 0


def _first(path: Path, seen: set[str]) -> bool:
    """Whether PATH (as the file system resolves it) is met for the first time in SEEN."""
    real = os.path.realpath(path)
    if real in seen:
        return False
    seen.add(real)
    return True


def _walk(folder: Path, fmt: str, seen: set[str], report: ImportReport) -> list[Path]:
    """The logs under FOLDER; a folder met before (a link back up, `self -> .`) is not
    walked again. A folder that cannot be listed (no permission) is refused in REPORT,
    saying so: passed over in silence, the sessions in it were never imported and
    nothing said why."""
    if _claims(folder, fmt):
        return [folder]
    found: list[Path] = []
    if not _first(folder, seen):
        return found
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        report.refuse(
            str(folder),
            f"a folder that cannot be listed ({exc.strerror or exc}); nothing in it was "
            "imported. Give yourself read access to it (`chmod u+rx`) and import it again.",
        )
        return found
    for entry in entries:
        if entry.is_dir():
            if not entry.name.startswith("."):
                found.extend(_walk(entry, fmt, seen, report))
        elif entry.is_file() and entry.name.endswith(LOG_SUFFIXES):
            found.append(entry)
    return found


def import_files(
    repo: MemoryRepo,
    paths: Iterable[str | os.PathLike[str]],
    fmt: str = AUTO,
    *,
    commit: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import every file (or folder) of PATHS in format FMT (`auto`: detected per file)
    and file the sessions. Bad input never raises: each file and each session is refused
    on its own, with its reason in the report, and the rest is imported and committed. A
    file that yields no session is refused too; a file found in a folder that is no log
    of any format is passed over with a warning. PROGRESS(done, total) is called after
    each file is read."""
    report = ImportReport()
    held = capture_held_back(repo.root)
    if held:
        report.warnings.append(held)
    paths = list(paths)  # read twice: by _inputs, and for the folders named at the end
    redactor = repo.redactor()
    registered = importers()  # once: the registry is asked for every file
    transcripts: list[Prepared] = []
    inputs = _inputs(paths, fmt, report)
    skipped: list[Path] = []  # files found in a folder that are no log of any format
    for done, (path, walked) in enumerate(inputs, 1):
        if progress is not None and done > 1:
            progress(done - 1, len(inputs))
        refused_before, bad_before = len(report.refused), report.bad_lines
        passed_before = len(report.passed_over)
        try:
            drafts = _read(path, fmt, report, registered)
        except UnknownFormatError as exc:
            if walked:
                skipped.append(path)
                report.warnings.append(
                    f"{path}: skipped, not a session log of any format autopoiesis reads"
                )
            else:
                report.refused.append(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
            continue
        except AutopoiesisError as exc:
            report.refused.append(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
            continue
        except RecursionError:
            report.refused.append(
                f"{path}: nested deeper than can be read; nothing of it was imported."
            )
            continue
        except OSError as exc:  # no permission, gone since it was found, an I/O error
            report.refuse(
                str(path),
                f"cannot be read ({exc.strerror or exc}); nothing of it was imported. Make it "
                "readable (`ls -l` shows its owner and mode; `chmod u+r` gives you read "
                "access) and import it again.",
            )
            continue
        except Exception as exc:
            report.refused.append(
                f"{path}: could not be read ({type(exc).__name__}: {exc}); nothing of it was "
                "imported."
            )
            continue
        kept = 0
        for d in drafts:
            try:
                t = prepare_draft(d, redactor, repo.config.capture.max_message_bytes, repo.root)
                if not t.raw.turns:
                    report.refused.append(
                        f"{path}: session {d.session_id!r} has no messages; nothing imported."
                    )
                    continue
                t.origin = str(path)
                report.warnings.extend(f"{path}: {note}" for note in t.notes)
                transcripts.append(t)
                kept += 1
            except AutopoiesisError as exc:
                report.refused.append(f"{path}: session {d.session_id!r}: {exc}")
            except Exception as exc:
                report.refused.append(
                    f"{path}: session {d.session_id!r}: {type(exc).__name__}: {exc}"
                )
        if not kept and (len(report.refused), len(report.passed_over)) == (
            refused_before,
            passed_before,
        ):
            bad = report.bad_lines - bad_before
            why = f"{bad} malformed lines, " if bad else ""
            report.refused.append(
                f"{path}: no conversation found ({why}no session with a message); nothing "
                f"imported.{_hint(path, fmt) if bad else ''}"
            )
    if progress is not None and inputs:
        progress(len(inputs), len(inputs))
    if skipped and len(skipped) == len(inputs) and not report.refused:
        # every file the folders held was skipped: as a folder with no log in it, a refusal
        # (exit 1), not a run that imported nothing and said it in warnings only
        folders = sorted({str(p) for p in paths if Path(p).is_dir()})
        report.refused.append(
            f"{', '.join(folders)}: none of the {counted(len(skipped), 'file')} found is a session "
            "log of any format autopoiesis reads; nothing imported. Name one with --format NAME "
            "if it is a log of a known format."
        )
    file_sessions(repo, transcripts, report, commit=commit)
    return report


def _hint(path: Path, fmt: str) -> str:
    """For a file read as FMT whose lines were malformed: the format it reads as, if
    another (' It reads as X: pass --format X'), else what it looks like if known."""
    if path.is_dir():
        return ""
    try:
        text = read_text(path)
        tried = fmt if fmt != AUTO else detect_format(path, text).name
    except (AutopoiesisError, RecursionError, OSError):
        return ""
    return format_hint(path, text, tried)


def _read(
    path: Path, fmt: str, report: ImportReport, registered: dict[str, Importer]
) -> list[SessionDraft]:
    if path.is_dir():
        importer = folder_importer(path) if fmt == AUTO else get_importer(fmt)
        if not isinstance(importer, FolderImporter):
            raise UnknownFormatError(f"{path} is a folder, and no format reads it as one.")
        return importer.read_folder(path, report)
    if is_database(path):
        db = database_importer(path) if fmt == AUTO else get_importer(fmt)
        if not isinstance(db, DatabaseImporter) or db.detect_database(path) <= 0:
            harness = recognise_database(database_tables(path))
            if harness is not None:
                raise UnknownFormatError(f"{path}: {not_read_yet(harness)}.")
            raise UnknownFormatError(
                f"{path} is an SQLite database, and no format reads it as one (those kept in "
                f"databases: {', '.join(_databases())})."
            )
        return db.read_database(path, report)
    return read_sessions(path, fmt, report, registered)


def _databases() -> list[str]:
    return [n for n, i in importers().items() if isinstance(i, DatabaseImporter)]
