"""What every importer shares: the Importer protocol, the SessionDraft it returns, the
registry of formats, and the helpers for the shapes chat logs have in common.

An importer turns one file into SessionDrafts: sessions as the log tells them, not yet
redacted, capped or checked against raw/. The package's `import_files` does the rest
(redaction, the size cap, dedup by session id, filing, the commit), the same for every
format. To add a format, write one module with a class that has a `name`, `detect` and
`read`, and register an instance through the plugin door (autopoiesis.plugins: the hook
`register_importers`; the built-ins are autopoiesis.integrations.importers), or call
`register_importer`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from autopoiesis import plugins
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.text import one_line
from autopoiesis.errors import (
    ImportFormatError,
    TimestampError,
    TranscriptFormatError,
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
    warnings: list[str] = field(default_factory=list)
    bad_lines: int = 0
    commit: str | None = None

    def refuse(self, where: str, why: str) -> None:
        """Refuse one file or one session (WHERE) for WHY; the rest of the import goes on,
        and `autopoiesis import` exits non-zero."""
        self.refused.append(f"{where}: {why}")

    def skip_line(self, source: str, number: int, why: str) -> None:
        """Count a malformed line of SOURCE that was skipped (the rest of the file is kept)."""
        self.bad_lines += 1
        self.warnings.append(f"{source}:{number}: skipped ({why})")


@dataclass
class DraftTurn:
    """One turn of a draft. ITEMS stays a list so a later tool result can fill in the
    ToolCall it answers (see ToolCalls)."""

    time: datetime
    role: str  # user | agent | system
    items: list[tf.Item] = field(default_factory=list)
    name: str | None = None


@dataclass
class SessionDraft:
    """A session as an importer read it, before redaction and filing.

    STARTED and ENDED default to the first and last turn; SOURCE names where it came
    from (`claude-code:FILE`) and lands in the transcript's frontmatter. CWD, the folder
    the session ran in, gives the transcript its `project:` (the git repository it is in,
    core/project.py) unless PROJECT names one."""

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
    cwd: str | None = None  # the working folder, when the log says
    project: str | None = None  # the project's name, when the log names it; else from cwd
    turns: list[DraftTurn] = field(default_factory=list)

    def add_turn(
        self, when: datetime, role: str, items: list[tf.Item], name: str | None = None
    ) -> DraftTurn:
        turn = DraftTurn(when, role, items, name)
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


def detect_format(path: Path, text: str) -> Importer:
    """The importer most confident about TEXT (the first registered wins a tie);
    UnknownFormatError, saying what the file looks like and which formats there are, when
    none is."""
    best: Importer | None = None
    best_score = 0.0
    registered = importers()
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
        return "text that is not JSON" if text.strip() else "an empty file"
    if isinstance(data, dict):
        return f"a JSON object with the keys {', '.join(sorted(map(str, data))[:8]) or '(none)'}"
    if isinstance(data, list):
        kinds = sorted({type(x).__name__ for x in data[:50]})
        return f"a JSON list of {len(data)} {'/'.join(kinds) or 'items'}"
    return f"a JSON {type(data).__name__}"


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
    """A JSON-lines file: named .jsonl, or several top-level objects one per line."""
    stripped = text.lstrip()
    return path.suffix == ".jsonl" or ("\n{" in stripped and not stripped.startswith("["))


def first_json_line(text: str) -> Any:
    """The first line of TEXT as JSON, None when it is not JSON (or nested too deeply)."""
    stripped = text.lstrip()
    first = stripped.splitlines()[0] if stripped else ""
    try:
        return json.loads(first)
    except (ValueError, RecursionError):
        return None


def json_probe(text: str) -> Any:
    """The object to look at to recognise a JSON document: the document, or its first
    element when it is a list; None when TEXT is not JSON (or nested too deeply)."""
    try:
        data = load_json(text)
    except (ValueError, RecursionError):
        return None
    return data[0] if isinstance(data, list) and data else data


def content_text(value: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts
    (OpenAI parts, Anthropic blocks), or JSON for anything else."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


def whole_number(value: Any, where: str) -> int:
    """VALUE as a non-negative whole number (None and absent are 0); ImportFormatError
    naming WHERE for anything else ("abc", 1.5, -3, true)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ImportFormatError(f"{where} must be a non-negative whole number, not {value!r}.")
    return value


def args_summary(value: Any) -> str:
    """A tool call's arguments in one telling line: the command, path or query first."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, TypeError):
            return value
    if isinstance(value, dict):
        for key in (
            "command",
            "file_path",
            "absolute_path",
            "path",
            "query",
            "url",
            "pattern",
            "description",
        ):
            if isinstance(value.get(key), str):
                rest = {k: v for k, v in value.items() if k != key}
                return value[key] + (
                    f" {json.dumps(rest, ensure_ascii=False)}" if rest and key != "command" else ""
                )
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value is not None else ""


# Content blocks only the Anthropic Messages format has (OpenAI's content parts are text,
# image_url, input_audio, file): a list holding one is no chat-completions list.
ANTHROPIC_BLOCK_TYPES = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "document",
    }
)


def has_anthropic_blocks(messages: Any) -> bool:
    """Whether MESSAGES (a list of message objects) holds an Anthropic content block."""
    if not isinstance(messages, list):
        return False
    for msg in messages:
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and (
                    block.get("type") in ANTHROPIC_BLOCK_TYPES
                    or (block.get("type") == "image" and isinstance(block.get("source"), dict))
                ):
                    return True
    return False


def opening_id(prefix: str, messages: list[Any]) -> str:
    """A session id for a log that names none, stable while the log grows: PREFIX and a
    hash of its opening exchange (the messages up to and including the first reply; all
    of them while there is no reply yet)."""
    opening: list[Any] = []
    for msg in messages:
        opening.append(msg)
        if isinstance(msg, dict) and msg.get("role") in ("assistant", "agent", "model"):
            break
    canonical = json.dumps(opening, sort_keys=True, ensure_ascii=False, default=str).encode(
        "utf-8", "surrogatepass"
    )
    return f"{prefix}{hashlib.sha256(canonical).hexdigest()[:16]}"


def anthropic_attachment(block: dict[str, Any], where: str = "") -> tf.Attachment:
    """An image or document block as an attachment line (its bytes are not kept)."""
    src = as_dict(block.get("source"))
    if src.get("type") == "url" and isinstance(src.get("url"), str):
        return tf.Attachment(src["url"])
    media = (
        src.get("media_type")
        if isinstance(src.get("media_type"), str)
        else str(block.get("type") or "image")
    )
    return tf.Attachment(f"{media}{where} (not stored)")


def anthropic_tool_result(
    block: dict[str, Any],
    calls: ToolCalls,
    items: list[tf.Item],
    clean: Callable[[str], str] = str.strip,
) -> None:
    """Write a tool_result block into the call it answers (an image it carries as an
    attachment line after the call), or, answering no call seen, as a `result` line in
    ITEMS. CLEAN tidies the result text (a harness's own tags)."""
    content = block.get("content")
    texts: list[str] = []
    images: list[tf.Attachment] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and part.get("type") in ("image", "document"):
            images.append(anthropic_attachment(part, " from a tool result"))
        elif isinstance(part, dict) and part.get("type") == "text":
            texts.append(str(part.get("text") or ""))
        elif isinstance(part, str):
            texts.append(part)
        elif part is not None:
            texts.append(content_text(part))
    result = clean("\n".join(t for t in texts if t))
    if not result and block.get("is_error"):
        result = "error"
    elif block.get("is_error") and not result.startswith("error"):
        result = f"error: {result}"
    call_id = block.get("tool_use_id")
    if calls.resolve(call_id, result or None):
        for image in images:
            calls.attach(call_id, image)
        return
    items.append(tf.ToolCall("result", str(call_id) if call_id is not None else "", result or None))
    items.extend(images)


class ToolCalls:
    """Tool calls waiting for their results: logs send a call and its result in separate
    messages, linked by an id; the result is written into the call's own line. A result
    without an id answers the oldest call still waiting (logs that carry no ids)."""

    def __init__(self) -> None:
        self._slots: dict[str, list[Any]] = {}  # id -> [items, call]
        self._waiting: list[list[Any]] = []  # [items, call] not yet answered, oldest first

    def add(self, call_id: Any, items: list[tf.Item], call: tf.ToolCall) -> None:
        """Append CALL to ITEMS and remember it under CALL_ID (a call without an id can
        still be answered by `resolve(None, ...)` or `resolve_oldest`)."""
        items.append(call)
        slot: list[Any] = [items, call]
        if call_id not in (None, ""):
            self._slots[str(call_id)] = slot
        self._waiting.append(slot)

    def __contains__(self, call_id: Any) -> bool:
        return call_id not in (None, "") and str(call_id) in self._slots

    def _slot(self, call_id: Any) -> list[Any] | None:
        if call_id in (None, ""):
            return self._waiting[0] if self._waiting else None
        return self._slots.get(str(call_id))

    @staticmethod
    def _index(slot: list[Any]) -> int:
        items, call = slot
        return next(i for i, item in enumerate(items) if item is call)

    def _fill(self, slot: list[Any], result: str | None) -> bool:
        items, call = slot
        done = tf.ToolCall(call.tool, call.args, result)
        items[self._index(slot)] = done
        slot[1] = done
        if slot in self._waiting:
            self._waiting.remove(slot)
        return True

    def resolve(self, call_id: Any, result: str | None) -> bool:
        """Fill RESULT into the call CALL_ID (no id: the oldest call still waiting); False
        when no such call was seen."""
        slot = self._slot(call_id)
        return False if slot is None else self._fill(slot, result)

    def resolve_oldest(self, tool: str | None, result: str | None) -> bool:
        """Fill RESULT into the oldest unanswered call of TOOL (any tool when None), for
        logs whose results name the tool but not the call; False when none is waiting."""
        wanted = None if tool is None else one_line(tool, 80).replace("]", ")")
        for slot in self._waiting:
            if wanted is None or slot[1].tool == wanted:
                return self._fill(slot, result)
        return False

    def attach(self, call_id: Any, item: tf.Item) -> bool:
        """Put ITEM (an attachment a tool result carried) right after the call CALL_ID;
        False when no such call was seen."""
        slot = self._slot(call_id)
        if slot is None:
            return False
        items = slot[0]
        at = self._index(slot) + 1
        while at < len(items) and isinstance(items[at], tf.Attachment):
            at += 1
        items.insert(at, item)
        return True


def json_lines(
    text: str | list[str], source: str, report: ImportReport
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each JSON-object line of TEXT (or of its LINES); a line
    that is not JSON, nested too deeply or not an object is counted as malformed in REPORT
    and skipped."""
    for n, line in enumerate(text.splitlines() if isinstance(text, str) else text, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            report.skip_line(source, n, "not JSON")
            continue
        except RecursionError:
            report.skip_line(source, n, "nested deeper than can be read")
            continue
        if not isinstance(obj, dict):
            report.skip_line(source, n, f"a JSON {type(obj).__name__}, not an object")
            continue
        yield n, obj


def count(value: Any) -> int:
    """A token count from a log: a non-negative whole number, else 0 (logs are not
    trusted to hold numbers where numbers belong)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def mapping(value: Any) -> dict[str, Any]:
    """VALUE when it is a JSON object, else an empty one (logs drift; a field of the
    wrong type reads as absent)."""
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    """VALUE when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def string(value: Any) -> str | None:
    """VALUE when it is a string, else None: a `type` or `role` that came as a list or an
    object must not be looked up in a set (it cannot be hashed)."""
    return value if isinstance(value, str) else None


def nonempty_str(value: Any) -> str | None:
    """VALUE when it is a string with something in it, else None."""
    return value if isinstance(value, str) and value.strip() else None


def safe_session_id(*candidates: Any) -> str | None:
    """The first candidate that is a valid transcript session id, or None."""
    for value in candidates:
        if isinstance(value, str):
            try:
                return tf.validate_session_id(value)
            except TranscriptFormatError:
                continue
    return None


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def file_session_id(prefix: str, name: str) -> str:
    """The id of a session known only by its file NAME: a UUID (what harnesses name their
    files by) as it is, any other name with PREFIX- so that `small.jsonl` of two formats
    cannot claim the same id."""
    if _UUID.fullmatch(name):
        return name
    return safe_session_id(f"{prefix}-{name}") or stable_id(prefix, name)


def stable_id(prefix: str, *parts: Any) -> str:
    """PREFIX_ and a hash of PARTS: the id of a session whose log gives it none, the same
    every time the same log is imported."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str).encode(
        "utf-8", "surrogatepass"
    )
    return f"{prefix}_{hashlib.sha256(canonical).hexdigest()[:16]}"


def monotonic_turns(draft: SessionDraft) -> None:
    """Make DRAFT's turn times never go backwards: a log's order is the conversation's
    order, and a turn stamped before the one it answers keeps its place instead of being
    sorted ahead of it."""
    latest: datetime | None = None
    for turn in draft.turns:
        if latest is not None and turn.time < latest:
            turn.time = latest
        latest = turn.time


def read_export(
    path: Path,
    text: str,
    report: ImportReport,
    *,
    export: str,
    is_conversation: Callable[[Any], bool],
    needs: str,
    read_one: Callable[[Any, str], SessionDraft],
    refusals: tuple[type[Exception], ...] = (ImportFormatError,),
) -> list[SessionDraft]:
    """The sessions of a JSON export holding one conversation or a list of them (the
    ChatGPT and Claude.ai exports): READ_ONE(conversation, where) each; one that is no
    conversation (it lacks NEEDS) or cannot be read is refused alone, the rest imported."""
    try:
        data = load_json(text)
    except ValueError as exc:
        raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
    conversations = data if isinstance(data, list) else [data]
    if not any(is_conversation(c) for c in conversations):
        raise ImportFormatError(f"{path}: not a {export} export: no conversation has {needs}.")
    drafts = []
    for i, conv in enumerate(conversations):
        where = f"{path}[{i}]" if isinstance(data, list) else str(path)
        if not is_conversation(conv):
            report.refuse(where, f"not a {export} conversation (no {needs}); it was not imported.")
            continue
        try:
            drafts.append(read_one(conv, where))
        except refusals as exc:
            report.refuse(where, str(exc))
    return drafts


def first_time(*values: Any, field: str = "timestamp") -> datetime | None:
    """The first of VALUES that reads as a timestamp (clock.parse_ts), None when none does:
    for the optional times of a log, where a missing or wrong one is no reason to refuse
    the session (its turns date it instead)."""
    for value in values:
        if value is None or value == "":
            continue
        try:
            return parse_ts(value, field)
        except TimestampError:
            continue
    return None
