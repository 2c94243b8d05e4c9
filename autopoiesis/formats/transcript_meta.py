"""The frontmatter of a transcript: its metadata (`TranscriptMeta`), read and validated
from YAML and rendered in a fixed key order. Part of the transcript format
(formats/transcript.py re-exports every name here)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autopoiesis.core import frontmatter
from autopoiesis.core.clock import format_ts, parse_ts
from autopoiesis.core.project import project_slug
from autopoiesis.core.text import one_line
from autopoiesis.errors import FrontmatterError, TranscriptFormatError

STATUSES = ("open", "closed", "recovered")
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z")


# The one-line fields are normalised when the metadata is built (see "One-line fields" in
# formats/transcript.py).
def _line(value: object, limit: int = 300) -> str:
    return one_line(value, limit)


def _opt_line(value: object, limit: int = 300) -> str | None:
    return (one_line(value, limit) or None) if value is not None else None


def set_normalised(obj: Any, values: dict[str, Any]) -> None:
    """Set each field of OBJ (a frozen value of the format) to its normalised VALUE (one
    line, cut to its limit), keeping what it was given, where that differs, in `_given`:
    transcript.map_text (redaction) reads what was given, then normalises, so no secret is
    cut in two by a field's limit, or flattened out of the lines it is found by (a PEM
    block), before the redactor has seen it whole."""
    given: dict[str, Any] | None = None
    for name, value in values.items():
        before = getattr(obj, name)
        if value != before:
            given = given or {}
            given[name] = before
        object.__setattr__(obj, name, value)
    object.__setattr__(obj, "_given", given)


def given_field() -> Any:
    """The field `_given` of a value set_normalised sets (not compared, not shown)."""
    return field(default=None, init=False, repr=False, compare=False)


def _shown(value: str) -> str:
    """VALUE as an error message quotes it: at most 80 characters, as Python writes a
    string, so a space at its end, a line break or an invisible character is shown (an
    id 'ses_ok ' was quoted 'ses_ok', which is allowed, and the error read as wrong)."""
    return repr(value if len(value) <= 80 else value[:79] + "\u2026")


def validate_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise TranscriptFormatError("session_id must be a non-empty string like ses_a1b2c3d4.")
    if "\x00" in session_id or "/" in session_id or "\\" in session_id or ".." in session_id:
        raise TranscriptFormatError(
            f"session_id {_shown(session_id)} contains '/', '\\\\', '..' or a NUL byte; it "
            "names a file, so use letters, digits, '_', '-', '.' or ':' only."
        )
    if not SESSION_ID_RE.match(session_id):
        raise TranscriptFormatError(
            f"session_id {_shown(session_id)} is not allowed: use 1-128 letters, digits, '_', '-', "
            "'.' or ':', starting with a letter or digit."
        )
    return session_id


def written_session_id(session_id: str, redact: Callable[[str], str]) -> str:
    """The id a session is filed under: SESSION_ID (valid, see validate_session_id) when
    REDACT finds no secret in it, else what is left of it with each secret's kind in its
    place and a short hash of the whole, so the id stays one and the same (the same log
    imported twice is one file) and no secret reaches a path, a frontmatter, a commit or a
    citation: `sess-ghp_...` -> `sess-redacted-github_token-3f9a0c1b2d4e`. A hash of a
    provider's token (what the redactor finds) says nothing of it."""
    clean = redact(session_id)
    if clean == session_id:
        return session_id
    head = re.sub(r"\[redacted:([\w-]+)\]", r"redacted-\1", clean)
    head = re.sub(r"[^A-Za-z0-9_.:-]+", "-", head).strip("-.:")[:80] or "redacted"
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=6).hexdigest()
    return validate_session_id(f"{head}-{digest}")


@dataclass(frozen=True)
class KnowledgeChangeRef:
    path: str
    action: str
    summary: str = ""
    _given: dict[str, Any] | None = given_field()

    def __post_init__(self) -> None:
        set_normalised(
            self,
            {
                "path": _line(self.path, 500),
                "action": _line(self.action, 40),
                "summary": _line(self.summary),
            },
        )


@dataclass(frozen=True)
class TranscriptMeta:
    session_id: str
    started: datetime
    ended: datetime | None = None
    model: str | None = None
    channel: str | None = None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    status: str = "open"
    source: str | None = None
    redactions: tuple[tuple[str, int], ...] = ()
    knowledge_changes: tuple[KnowledgeChangeRef, ...] = ()
    parent_session: str | None = None  # the session that spawned this one (a subagent's)
    # the session whose turns this session's log repeated first (a resumed Claude Code
    # session's file begins with a copy of the one it resumed): those turns are filed
    # there, and this session's own begin after them
    resumes: str | None = None
    part: int = 1  # 2, 3, ... for the continuations of a session (see "Parts" above)
    continues: str | None = None  # the repo-relative path of the part before this one
    project: str | None = None  # the slug of the session's project (core/project.py)
    cwd: str | None = None  # the working folder the session ran in, when the harness says
    _given: dict[str, Any] | None = given_field()

    def __post_init__(self) -> None:
        set_normalised(
            self,
            {
                **{key: _opt_line(getattr(self, key)) for key in ("model", "channel", "topic")},
                "source": _opt_line(self.source),
                "cwd": _opt_line(self.cwd, 1000),
                "tags": tuple(_line(t, 100) for t in self.tags),
            },
        )
        if self.project is not None:
            # A slug names a folder under knowledge/projects/; one that slugs to nothing is none.
            object.__setattr__(self, "project", project_slug(str(self.project)) or None)
        if self.parent_session is not None:
            validate_session_id(self.parent_session)
        if self.resumes is not None:
            validate_session_id(self.resumes)
        if isinstance(self.part, bool) or not isinstance(self.part, int) or self.part < 1:
            raise TranscriptFormatError(
                f"part must be a whole number from 1 up, not {self.part!r}."
            )
        if (self.part > 1) != (self.continues is not None):
            raise TranscriptFormatError(
                "a continuation has both part (2 or more) and continues "
                "(the part before it); a first part has neither."
            )
        if self.continues is not None:
            object.__setattr__(self, "continues", _line(self.continues, 500))


# ── frontmatter: a fixed key order, every string through core.frontmatter.scalar so that
# an id, tag, model or topic that YAML would read as a number (`1:30`, `0x1F`), a bool or
# a date is quoted and reads back as the same string ──


def render_frontmatter(meta: TranscriptMeta) -> str:
    lines = ["---"]
    lines.append(f"session_id: {frontmatter.scalar(meta.session_id)}")
    lines.append(f"started: {format_ts(meta.started)}")
    lines.append(f"ended: {format_ts(meta.ended) if meta.ended else 'null'}")
    for key in ("model", "channel", "topic"):
        value = getattr(meta, key)
        lines.append(f"{key}: {frontmatter.scalar(value) if value is not None else 'null'}")
    lines.append("tags: [" + ", ".join(frontmatter.scalar(t) for t in meta.tags) + "]")
    lines.append(f"tokens_in: {int(meta.tokens_in)}")
    lines.append(f"tokens_out: {int(meta.tokens_out)}")
    lines.append(f"status: {meta.status}")
    if meta.source is not None:
        lines.append(f"source: {frontmatter.scalar(meta.source)}")
    if meta.project is not None:
        lines.append(f"project: {frontmatter.scalar(meta.project)}")
    if meta.cwd is not None:
        lines.append(f"cwd: {frontmatter.scalar(meta.cwd)}")
    if meta.parent_session is not None:
        lines.append(f"parent_session: {frontmatter.scalar(meta.parent_session)}")
    if meta.resumes is not None:
        lines.append(f"resumes: {frontmatter.scalar(meta.resumes)}")
    if meta.part > 1:
        lines.append(f"part: {int(meta.part)}")
        lines.append(f"continues: {frontmatter.scalar(meta.continues)}")
    if meta.redactions:
        lines.append("redactions:")
        lines.extend(f"  {frontmatter.scalar(kind)}: {count}" for kind, count in meta.redactions)
    else:
        lines.append("redactions: {}")
    if meta.knowledge_changes:
        lines.append("knowledge_changes:")
        for ch in meta.knowledge_changes:
            lines.append(f"  - path: {frontmatter.scalar(ch.path)}")
            lines.append(f"    action: {frontmatter.scalar(ch.action)}")
            lines.append(f"    summary: {frontmatter.scalar(ch.summary)}")
    else:
        lines.append("knowledge_changes: []")
    lines.append("---")
    return "\n".join(lines) + "\n"


def _opt_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    return str(value)


def meta_from_mapping(data: dict[str, Any], where: str = "transcript") -> TranscriptMeta:
    """The TranscriptMeta of a frontmatter mapping; TranscriptFormatError naming the first
    field that is missing or wrong."""
    if not isinstance(data, dict):
        raise TranscriptFormatError(f"{where}: frontmatter must be a YAML mapping.")
    missing = [k for k in ("session_id", "started") if data.get(k) in (None, "")]
    if missing:
        raise TranscriptFormatError(
            f"{where}: frontmatter lacks {', '.join(missing)}; every "
            "transcript needs session_id and started."
        )
    status = str(data.get("status") or "closed")
    if status not in STATUSES:
        raise TranscriptFormatError(
            f"{where}: status {status!r} is not one of {', '.join(STATUSES)}."
        )
    tags = data.get("tags") or []
    if not isinstance(tags, list):
        raise TranscriptFormatError(f"{where}: tags must be a list like [coding, git].")
    red = data.get("redactions") or {}
    if not isinstance(red, dict):
        raise TranscriptFormatError(f"{where}: redactions must be a mapping of KIND: count.")
    changes = _knowledge_changes(data, where)
    for key in ("tokens_in", "tokens_out"):
        if not isinstance(data.get(key, 0) or 0, int):
            raise TranscriptFormatError(f"{where}: {key} must be a whole number.")
    part = _part(data, where)
    parent = _session_field(data, "parent_session", where)
    resumes = _session_field(data, "resumes", where)
    return TranscriptMeta(
        session_id=validate_session_id(str(data["session_id"])),
        started=parse_ts(data["started"], f"{where}: started"),
        ended=parse_ts(data["ended"], f"{where}: ended") if data.get("ended") else None,
        model=_opt_str(data, "model"),
        channel=_opt_str(data, "channel"),
        topic=_opt_str(data, "topic"),
        tags=tuple(str(t) for t in tags),
        tokens_in=int(data.get("tokens_in") or 0),
        tokens_out=int(data.get("tokens_out") or 0),
        status=status,
        source=_opt_str(data, "source"),
        redactions=tuple((str(k), int(v)) for k, v in red.items()),
        knowledge_changes=changes,
        parent_session=parent,
        resumes=resumes,
        part=part,
        continues=_opt_str(data, "continues"),
        project=_opt_str(data, "project"),
        cwd=_opt_str(data, "cwd"),
    )


def _knowledge_changes(data: dict[str, Any], where: str) -> tuple[KnowledgeChangeRef, ...]:
    """The `knowledge_changes:` list: each entry a mapping with at least a path."""
    changes = []
    for ch in data.get("knowledge_changes") or []:
        if not isinstance(ch, dict) or "path" not in ch:
            raise TranscriptFormatError(
                f"{where}: each knowledge_changes entry needs path, action and summary."
            )
        changes.append(
            KnowledgeChangeRef(
                str(ch["path"]), str(ch.get("action", "")), str(ch.get("summary", "") or "")
            )
        )
    return tuple(changes)


def _part(data: dict[str, Any], where: str) -> int:
    """`part:` (1 when absent), which a continuation has with `continues:`, and a first
    part has without."""
    part = 1 if data.get("part") is None else data["part"]
    if isinstance(part, bool) or not isinstance(part, int) or part < 1:
        raise TranscriptFormatError(
            f"{where}: part must be a whole number from 1 up, not {part!r}."
        )
    if (part > 1) != (data.get("continues") not in (None, "")):
        raise TranscriptFormatError(
            f"{where}: a continuation has both part (2 or more) and "
            "continues (the path of the part before it); a first part "
            "has neither."
        )
    return part


def _session_field(data: dict[str, Any], key: str, where: str) -> str | None:
    """A field naming another session (`parent_session:`, a subagent's; `resumes:`), a
    valid session id when given."""
    value = _opt_str(data, key)
    if value is not None:
        try:
            validate_session_id(value)
        except TranscriptFormatError as exc:
            raise TranscriptFormatError(f"{where}: {key}: {exc}") from None
    return value


def split_frontmatter(text: str, where: str = "transcript") -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, rest of the text), read by core.frontmatter (BOM and CRLF
    handled there, strings that look like numbers kept as strings)."""
    try:
        source, body = frontmatter.split(text, where)
        if source is None:
            raise TranscriptFormatError(
                f"{where}: missing frontmatter; a transcript starts with a '---' line."
            )
        return frontmatter.parse_yaml(source, where), body
    except FrontmatterError as exc:
        raise TranscriptFormatError(str(exc)) from None


def parse_meta(text: str, where: str = "transcript") -> TranscriptMeta:
    """Only the frontmatter (cheap: the hooks use it, and verify reads every transcript a
    history adds). A frontmatter as render_frontmatter lays it out is read without YAML
    (`_canonical_meta`); any other goes through the YAML reader."""
    try:
        source, _ = frontmatter.split(text, where)
    except FrontmatterError as exc:
        raise TranscriptFormatError(str(exc)) from None
    if source is not None:
        meta = _canonical_meta(source, where)
        if meta is not None:
            return meta
    data, _ = split_frontmatter(text, where)
    return meta_from_mapping(data, where)


_KEY_LINE = re.compile(r"([a-z_]+):(?: (.+))?\Z")
_NESTED_LINE = re.compile(r"  (- |  )?([^\s:][^:]*): (.*)\Z")
_INT = re.compile(r"(?:0|[1-9][0-9]*)\Z")


def _canonical_meta(source: str, where: str) -> TranscriptMeta | None:
    """The metadata of SOURCE (a frontmatter's YAML) when it is exactly what
    render_frontmatter writes for it, else None. Each line is read as the renderer writes
    it (a scalar plain, JSON-quoted or null; empty lists and maps; redactions and
    knowledge changes nested), and the result is rendered again: only a byte-identical
    frontmatter is taken, and for that one YAML reads what was rendered (the round trip the
    format promises), so the answer is YAML's without running it."""
    data: dict[str, Any] = {}
    nested: list[Any] | dict[str, Any] | None = None
    try:
        for line in source.split("\n")[:-1]:
            if line.startswith("  "):
                m = _NESTED_LINE.match(line)
                if m is None or nested is None:
                    return None
                key, value = _scalar(m[2]), _scalar(m[3])
                if isinstance(nested, dict) and m[1] is None:
                    nested[key] = value
                elif isinstance(nested, list) and m[1] == "- ":
                    nested.append({key: value})
                elif isinstance(nested, list) and m[1] == "  " and nested:
                    nested[-1][key] = value
                else:
                    return None
                continue
            m = _KEY_LINE.match(line)
            if m is None or m[1] in data:
                return None
            key, raw = m[1], m[2]
            if key in ("redactions", "knowledge_changes") and raw is None:
                nested = data[key] = {} if key == "redactions" else []
                continue
            nested = None
            if raw is None:
                return None
            data[key] = (
                _flow_list(raw) if raw.startswith("[") else {} if raw == "{}" else _scalar(raw)
            )
    except ValueError:
        return None
    try:
        meta = meta_from_mapping(data, where)
    except (TranscriptFormatError, FrontmatterError, TypeError, ValueError):
        return None
    return meta if render_frontmatter(meta) == f"---\n{source}---\n" else None


_JSON = json.JSONDecoder()


def _flow_list(raw: str) -> list[Any]:
    """`[a, "b c"]` as render_frontmatter writes tags (ValueError for any other list)."""
    if not raw.endswith("]"):
        raise ValueError(raw)
    items: list[Any] = []
    pos, end = 1, len(raw) - 1
    while pos < end:
        if raw.startswith('"', pos):
            item, pos = _JSON.raw_decode(raw, pos)
        else:
            stop = raw.find(", ", pos)
            stop = end if stop < 0 else stop
            item, pos = _scalar(raw[pos:stop]), stop
        items.append(item)
        if pos < end:
            if not raw.startswith(", ", pos):
                raise ValueError(raw)
            pos += 2
    return items


def _scalar(raw: str) -> Any:
    """One scalar as render_frontmatter writes it (ValueError for what it never writes)."""
    if raw == "null":
        return None
    if raw.startswith('"'):
        value = json.loads(raw)
        if not isinstance(value, str):
            raise ValueError(raw)
        return value
    if _INT.match(raw):
        return int(raw)
    if raw.startswith(("[", "{", "'", "&", "*", "!", "|", ">", "#", "%", "@", "`")):
        raise ValueError(raw)
    return raw


def replace_frontmatter(text: str, meta: TranscriptMeta, title: str | None = None) -> str:
    """TEXT with its frontmatter (and optionally title) replaced; the turns stay byte for byte."""
    _, body = split_frontmatter(text)
    if title is not None and body.startswith("\n# "):
        nl = body.find("\n", 1)
        body = f"\n# {one_line(title, 200) or meta.session_id}" + (body[nl:] if nl != -1 else "\n")
    return render_frontmatter(meta) + body
