"""What every importer shares: the Importer protocol, the SessionDraft it returns, the
registry of formats, and the JSON primitives format detection needs (the shapes chat logs
have in common are in `shapes`).

An importer turns one file into SessionDrafts: sessions as the log tells them, not yet
redacted, capped or checked against raw/. The package's `import_files` does the rest
(redaction, the size cap, dedup by session id, filing, the commit), the same for every
format. To add a format, write one module with a class that has a `name`, `detect` and
`read`, and register an instance through the plugin door (autopoiesis.plugins: the hook
`register_importers`; the built-ins are autopoiesis.integrations.importers), or call
`register_importer`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from autopoiesis import plugins
from autopoiesis.errors import (
    ImportFormatError,
    UnknownFormatError,
)
from autopoiesis.formats import transcript as tf

AUTO = "auto"


@dataclass
class ImportReport:
    """What one `import_files` call did; importers add warnings and count bad lines."""

    imported: list[str] = field(default_factory=list)  # repo-relative paths written
    skipped_duplicates: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # messages
    # of those, the ones that may pass (a file that could not be written: a full disk), so
    # a watcher or a hook imports the session again later rather than give it up
    temporary: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    bad_lines: int = 0
    commit: str | None = None
    passed_over: list[str] = field(default_factory=list)  # files that hold no session, rightly

    def refuse(self, where: str, why: str, *, temporary: bool = False) -> None:
        """Refuse one file or one session (WHERE) for WHY; the rest of the import goes on,
        and `autopoiesis import` exits non-zero. TEMPORARY: the same import may succeed
        later (a write failed), so whoever imports it on its own should try again."""
        self.refused.append(f"{where}: {why}")
        if temporary:
            self.temporary.append(self.refused[-1])

    def pass_over(self, source: str, why: str) -> None:
        """Pass over SOURCE, a file of the format that holds no session to file (a
        harness's pre-warm request, an empty chat): a warning, not a refusal."""
        self.passed_over.append(source)
        self.warnings.append(f"{source}: passed over ({why})")

    def skip_line(self, source: str, number: int, why: str) -> None:
        """Count a malformed line of SOURCE that was skipped (the rest of the file is kept)."""
        self.bad_lines += 1
        self.warnings.append(f"{source}:{number}: skipped ({why})")

    def line_time(
        self,
        source: str,
        number: int,
        value: Any,
        field: str = "timestamp",
        *,
        before: datetime | None = None,
    ) -> datetime | None:
        """VALUE read as the time of line NUMBER of SOURCE. When it cannot be read (missing,
        "soon"), the line is dated BEFORE, the time of the line before it, with a warning:
        what it says is kept, as the live capture stream keeps an event whose time it
        cannot trust (skipped, the message was lost). Without BEFORE, None: the line is
        then skipped with the reason (its first clause)."""
        from autopoiesis.core.clock import parse_ts
        from autopoiesis.errors import TimestampError

        try:
            return parse_ts(value, field)
        except TimestampError as exc:
            why = str(exc).split(";")[0]
            if before is None:
                self.skip_line(source, number, why)
                return None
            self.keep_undated(source, number, why, before)
            return before

    def keep_undated(
        self,
        source: str,
        number: int,
        why: str,
        when: datetime,
        dated_as: str = "the line before it",
    ) -> None:
        """Say that line NUMBER of SOURCE, whose time could not be read (WHY), is kept,
        dated WHEN: the time of DATED_AS."""
        from autopoiesis.core.clock import format_ts

        self.warnings.append(
            f"{source}:{number}: {why}; the line is kept, dated {format_ts(when)} (the time of "
            f"{dated_as})"
        )


@dataclass
class DraftTurn:
    """One turn of a draft. ITEMS stays a list so a later tool result can fill in the
    ToolCall it answers (see ToolCalls)."""

    time: datetime
    role: str  # user | agent | system
    items: list[tf.Item] = field(default_factory=list)
    name: str | None = None
    memory: bool = False  # the agent's memory operations (`## HH:MM — agent [memory]`)


@dataclass
class SessionDraft:
    """A session as an importer read it, before redaction and filing.

    STARTED and ENDED default to the first and last turn; SOURCE names where it came
    from (`claude-code:FILE`) and lands in the transcript's frontmatter. CWD, the folder
    the session ran in, gives the transcript its `project:` (the git repository it is in,
    core/project.py) unless PROJECT names one; REPOSITORY, the repository the log
    records (Codex's remote, Copilot's `repository`), names it where CWD is no checkout of
    this machine (core/project.session_project)."""

    session_id: str
    model: str | None = None
    channel: str | None = None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    started: datetime | None = None
    ended: datetime | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    source: str | None = None
    parent_session: str | None = None  # the session that spawned this one (a subagent's)
    resumes: str | None = None  # the session this one goes on from, when its log says
    cwd: str | None = None  # the working folder, when the log says
    project: str | None = None  # the project's name, when the log names it; else from cwd
    repository: str | None = None  # the repository's name, when the log records it
    turns: list[DraftTurn] = field(default_factory=list)

    def add_turn(
        self,
        when: datetime,
        role: str,
        items: list[tf.Item],
        name: str | None = None,
        *,
        memory: bool = False,
    ) -> DraftTurn:
        turn = DraftTurn(when, role, items, name, memory)
        self.turns.append(turn)
        return turn


@runtime_checkable
class Importer(Protocol):
    """One file format of finished sessions."""

    name: str  # what `autopoiesis import --format` takes
    description: str  # one line for the CLI's help

    def detect(self, path: Path, text: str) -> float:
        """How sure this importer is that TEXT (the content of PATH) is its format:
        0 for no, 1 for certain. `--format auto` picks the most confident importer."""
        ...

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        """The sessions in TEXT. Raise ImportFormatError when the file as a whole is not
        this format; count a malformed line with `report.skip_line` and go on."""
        ...


def register_importer(importer: Importer) -> Importer:
    """Make IMPORTER available to `import_files` and `--format`: a plugin of the process's
    plugin manager (a later registration of the same name replaces the earlier one)."""
    if not importer.name or importer.name == AUTO:
        raise ValueError(f"an importer needs a name other than {AUTO!r}, not {importer.name!r}")
    plugins.plugin_manager().contribute("register_importers", importer)
    return importer


def importers() -> dict[str, Importer]:
    """The importers the plugins register, by name, in registration order."""
    return {name: importer for name, importer in plugins.importers().items() if name != AUTO}


def format_names() -> tuple[str, ...]:
    """What `--format` accepts: auto, then every registered format."""
    return (AUTO, *importers())


def get_importer(name: str) -> Importer:
    try:
        return importers()[name]
    except KeyError:
        raise ImportFormatError(
            f"unknown format {name!r}; use one of {', '.join(format_names())}."
        ) from None


def detect_format(path: Path, text: str, registered: dict[str, Importer] | None = None) -> Importer:
    """The importer most confident about TEXT (the first registered wins a tie) among
    REGISTERED (default: every importer); UnknownFormatError, saying what the file looks
    like and which formats there are, when none is."""
    from autopoiesis.capture.importers.unread import not_read_yet, recognise_file

    harness = recognise_file(path, text)  # a harness known by its own marks, not read yet
    if harness is not None:
        raise UnknownFormatError(f"{path}: {not_read_yet(harness)}.")
    best: Importer | None = None
    best_score = 0.0
    registered = importers() if registered is None else registered
    for importer in registered.values():
        score = importer.detect(path, text)
        if score > best_score:
            best, best_score = importer, score
    if best is None:
        raise UnknownFormatError(
            f"{path}: {_looks_like(text)}, which is none of the session logs autopoiesis reads "
            f"({', '.join(registered)}). If it is one of them, name it with --format NAME."
        )
    return best


def _looks_like(text: str) -> str:
    """A few words on what TEXT is, for the error that says its format is unknown."""
    try:
        data = load_json(text)
    except RecursionError:
        raise ImportFormatError(
            "nested deeper than can be read; nothing of it was imported."
        ) from None
    except ValueError:
        first = first_json_line(text)
        if isinstance(first, dict):
            return (
                "JSON lines whose first object has the keys "
                f"{', '.join(sorted(map(str, first))[:8])}"
            )
        if text.lstrip().startswith(("{", "[")):
            raise ImportFormatError(_broken_json(text)) from None
        return "text that is not JSON" if text.strip() else "an empty file"
    if isinstance(data, dict):
        return f"a JSON object with the keys {', '.join(sorted(map(str, data))[:8]) or '(none)'}"
    if isinstance(data, list):
        kinds = sorted({type(x).__name__ for x in data[:50]})
        return f"a JSON list of {len(data)} {'/'.join(kinds) or 'items'}"
    return f"a JSON {type(data).__name__}"


def _broken_json(text: str) -> str:
    """Why TEXT, a JSON document by its first character, could not be read, and what to
    do: no format is to blame, so naming one (the advice for an unknown format) would only
    fail the same way."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        where, at_end = (
            f"line {exc.lineno}, column {exc.colno}: {exc.msg.removesuffix(' at')}",
            (
                exc.pos >= len(text.rstrip())
                or exc.msg.startswith("Unterminated string")
                and "\n" not in text[exc.pos :].rstrip()
            ),
        )
    except ValueError as exc:  # a number too long to read, ...
        where, at_end = str(exc), False
    else:  # pragma: no cover - load_json failed on the same text
        where, at_end = "it does not parse", False
    if at_end:
        return (
            f"JSON cut off before its end ({where}): the file ends inside it, as an "
            "interrupted download or copy leaves it; nothing of it was imported. Get the "
            "whole file again and import that."
        )
    return (
        f"JSON that does not parse ({where}); a document is read whole, so nothing of it "
        "was imported. Mend it there (or, for a log of one JSON object a line, name it "
        ".jsonl) and import it again."
    )


@runtime_checkable
class FolderImporter(Protocol):
    """A format kept as a folder of files (OpenCode's storage) rather than one file. An
    importer that is one as well claims a folder given to `autopoiesis import` before the
    folder is walked file by file."""

    name: str

    def detect_folder(self, path: Path) -> float:
        """How sure this importer is that the folder PATH is its format (0 to 1)."""
        ...

    def read_folder(self, path: Path, report: ImportReport) -> list[SessionDraft]:
        """The sessions kept in the folder PATH."""
        ...


@runtime_checkable
class DatabaseImporter(Protocol):
    """A format kept in an SQLite database (OpenCode's opencode.db, Goose's sessions.db):
    an importer that is one as well reads a database file given to `autopoiesis import`,
    which no text format can."""

    name: str

    def detect_database(self, path: Path) -> float:
        """How sure this importer is that the SQLite database at PATH is its format."""
        ...

    def read_database(self, path: Path, report: ImportReport) -> list[SessionDraft]:
        """The sessions kept in the database at PATH (opened read-only)."""
        ...


def database_importer(path: Path) -> DatabaseImporter | None:
    """The registered importer that claims the database PATH, if one does."""
    best: DatabaseImporter | None = None
    best_score = 0.0
    for importer in importers().values():
        if isinstance(importer, DatabaseImporter):
            score = importer.detect_database(path)
            if score > best_score:
                best, best_score = importer, score
    return best


def folder_importer(path: Path) -> FolderImporter | None:
    """The registered importer that claims the folder PATH, if one does."""
    best: FolderImporter | None = None
    best_score = 0.0
    for importer in importers().values():
        if isinstance(importer, FolderImporter):
            score = importer.detect_folder(path)
            if score > best_score:
                best, best_score = importer, score
    return best


def format_hint(path: Path, text: str, tried: str) -> str:
    """Advice for a file that format TRIED could not read: the registered format that
    recognises it, as the flag to pass ('' when none other does)."""
    try:
        best = detect_format(path, text)
    except (ImportFormatError, RecursionError):
        return ""
    return (
        f" It reads as {best.name}: pass --format {best.name} (or auto)."
        if best.name != tried
        else ""
    )


_Read = TypeVar("_Read", bound=Callable[..., list["SessionDraft"]])


def advise_format(read: _Read) -> _Read:
    """Decorate an importer's `read` so that a refusal names the format the file is in."""

    @wraps(read)
    def wrapper(self: Importer, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            return read(self, path, text, report)
        except ImportFormatError as exc:
            raise ImportFormatError(f"{exc}{format_hint(path, text, self.name)}") from None

    return cast(_Read, wrapper)


# ── helpers for the shapes chat logs share ──
def as_dict(value: Any) -> dict[str, Any]:
    """VALUE when it is a JSON object, else an empty one (a field a log may leave out or get
    wrong)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """VALUE when it is a JSON list, else an empty one."""
    return value if isinstance(value, list) else []


@lru_cache(maxsize=2)
def load_json(text: str) -> Any:
    """TEXT parsed as one JSON document (cached: detection and reading parse it once).
    Raises ValueError. The result is shared between callers: read it, do not change it."""
    return json.loads(text)


def looks_like_jsonl(path: Path, text: str) -> bool:
    """A JSON-lines file: named .jsonl, or several top-level objects one per line. A text
    that parses as one JSON document is that document, however its lines fall: a chat
    export that writes each message of its `messages` list on a line of its own has lines
    that begin with `{` too."""
    if path.suffix == ".jsonl":
        return True
    stripped = text.lstrip()
    return "\n{" in stripped and not stripped.startswith("[") and not _one_document(text)


@lru_cache(maxsize=2)
def _one_document(text: str) -> bool:
    """Whether TEXT parses as one JSON document. Cached, as load_json is, because every
    detector asks: JSON lines fail after their first line (the parse stops at the second
    value), and a document parsed here is the one load_json gives its reader. A document
    nested deeper than can be read is not known to be one."""
    try:
        load_json(text)
    except (ValueError, RecursionError):
        return False
    return True


def log_lines(text: str) -> list[str]:
    """TEXT's lines as a log writes them (iter_log_lines), in a list."""
    return list(iter_log_lines(text))


def iter_log_lines(text: str) -> Iterator[str]:
    """TEXT's lines as a log writes them: split at line feeds alone (a CRLF's CR dropped).
    str.splitlines also splits at U+2028, U+2029, form feeds and other separators, which a
    harness writes unescaped inside a JSON string: the line broke in two "not JSON" halves
    and its message was lost. One line at a time: a reader that parses each line as it
    comes holds no second copy of a log of hundreds of MB."""
    pos = 0
    while (end := text.find("\n", pos)) >= 0:
        yield text[pos:end].removesuffix("\r")
        pos = end + 1
    yield text[pos:].removesuffix("\r")


def head_lines(text: str, n: int) -> list[str]:
    """The first N lines of TEXT that are not blank, without splitting the rest of it (a
    detector looks at the head of a file that may be megabytes long)."""
    out: list[str] = []
    pos, size = 0, len(text)
    while len(out) < n and pos < size:
        end = text.find("\n", pos)
        end = size if end < 0 else end
        line = text[pos:end].rstrip("\r")
        if line.strip():
            out.append(line)
        pos = end + 1
    return out


HEAD_JSON_LINES = 6


@lru_cache(maxsize=2)
def head_json(text: str) -> tuple[Any, ...]:
    """The first HEAD_JSON_LINES lines of TEXT that are not blank, each as JSON (None for
    one that is not JSON or is nested too deeply); cached like load_json: every detector
    of a JSON-lines log looks at its head, read it and do not change it."""
    out: list[Any] = []
    for line in head_lines(text, HEAD_JSON_LINES):
        try:
            out.append(json.loads(line))
        except (ValueError, RecursionError):
            out.append(None)
    return tuple(out)


def first_json_line(text: str) -> Any:
    """The first line of TEXT as JSON, None when it is not JSON (or nested too deeply)."""
    head = head_json(text)
    return head[0] if head else None


def json_probe(text: str) -> Any:
    """The object to look at to recognise a JSON document: the document, or its first
    element when it is a list; None when TEXT is not JSON (or nested too deeply)."""
    try:
        data = load_json(text)
    except (ValueError, RecursionError):
        return None
    return data[0] if isinstance(data, list) and data else data
