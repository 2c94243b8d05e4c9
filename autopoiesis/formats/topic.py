"""The topic file format (docs/design.md#knowledge-files, docs/design.md#topic-triggers): parse and
validate one `topics/*.md` file.

A topic is YAML frontmatter plus a Markdown body (its instructions)::

    ---
    type: topic
    description: Reviewing GitHub pull requests
    triggers:
      - type: pattern            # pattern | glob | keyword | code | language | mention
        match: "\\\\bPR\\\\b"      #   | url | sentiment | webhook | cron
        scope: input             # input | output | both (default input)
        correction_hint: "..."   # optional; injected by the next compile when it fires on output
    subscriptions: [knowledge/projects/_active.md]
    activation: gated            # auto | gated | manual
    priority: high               # low | medium | high | critical
    max_context_kb: 4
    similarity_threshold: 0.15
    ---

The triggers (the fields of each type, the registry of trigger types and how to add one)
are topic_trigger.py. This module is the topic file's format, its fields and their parse;
the trigger types are asked of the plugins by name, so it imports no service.

This module is on the light path: the pre-commit hook calls `validate_topic_source` on
every commit, so it imports only the standard library, pluggy and the kernel at module
level (google-re2 and croniter are imported inside the checks that need them), and asks
the plugins for the built-in trigger types only (no entry point is read unless a topic
names a type they lack).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from autopoiesis.core import frontmatter
from autopoiesis.core.config import WatchersConfig
from autopoiesis.core.text import cut_to_bytes
from autopoiesis.errors import FrontmatterError
from autopoiesis.formats.topic_trigger import (
    Trigger,
    check_regex_set,
    parse_trigger,
    str_list,
    trigger_type,
)

ACTIVATIONS = ("auto", "gated", "manual")
PRIORITIES = ("low", "medium", "high", "critical")
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}
DEFAULT_SIMILARITY_THRESHOLD = WatchersConfig().similarity_threshold  # the config owns it
DEFAULT_MAX_CONTEXT_KB = 4.0
# The most instructions a topic may inject (max_context_kb's upper bound), and so the
# largest topic file read at all: a larger one holds nothing more a prompt could take,
# and one of 45 MB that fired on every message cost each compile seconds and 430 MB
MAX_CONTEXT_KB = 1024
MAX_TOPIC_BYTES = MAX_CONTEXT_KB * 1024
TOPIC_FIELDS = (
    "type",
    "name",
    "description",
    "triggers",
    "subscriptions",
    "activation",
    "priority",
    "max_context_kb",
    "similarity_threshold",
    "tags",
    "updated",
)


@dataclass(frozen=True)
class Topic:
    """A validated topic file."""

    name: str
    path: str  # repo-relative, e.g. topics/github-pr-review.md
    description: str
    instructions: str  # the Markdown body
    triggers: tuple[Trigger, ...]
    subscriptions: tuple[str, ...] = ()
    activation: str = "gated"
    priority: str = "medium"
    max_context_kb: float = DEFAULT_MAX_CONTEXT_KB
    similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    tags: tuple[str, ...] = ()
    content_hash: str = ""
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def priority_rank(self) -> int:
        """0 (low) .. 3 (critical): the compiler injects higher ranks first."""
        return PRIORITY_RANK[self.priority]

    @property
    def profile_text(self) -> str:
        """What tier 2 and the gate compare a message with: name, description, instructions
        and keyword-trigger words."""
        words = " ".join(w for t in self.triggers if t.type == "keyword" for w in t.words)
        return f"{self.name.replace('-', ' ')}\n{self.description}\n{words}\n{self.instructions}"

    def render_instructions(self) -> str:
        """The body, cut to max_context_kb (UTF-8 bytes) with a marker saying so."""
        return cut_to_bytes(self.instructions.strip(), int(self.max_context_kb * 1024), self.path)

    def text_triggers(self, direction: str) -> Iterator[tuple[int, Trigger]]:
        """(index, trigger) of the triggers tier 1 evaluates on a message going in DIRECTION."""
        for i, t in enumerate(self.triggers):
            if t.watches_text and t.applies_to(direction):
                yield i, t


def subscription_problem(sub: str, root: Path | None) -> str | None:
    """Why subscription path SUB is refused, or None. Paths are repo-relative; nothing
    may point outside the memory repo; with ROOT given the file must exist."""
    if not sub or "\x00" in sub:
        return "is empty; write a repo-relative path like knowledge/procedures/code-review.md"
    p = PurePosixPath(sub.replace("\\", "/"))
    if p.is_absolute() or sub.startswith("~") or re.match(r"^[A-Za-z]:", sub):
        return (
            "is an absolute path; write it relative to the memory repo, like "
            "knowledge/people/_index.md"
        )
    if ".." in p.parts:
        return (
            "points outside the memory repo ('..'); subscribe only to files inside it, like "
            "knowledge/people/_index.md"
        )
    if p.parts and p.parts[0] in (".git", ".autopoiesis"):
        return (
            "points into git's or autopoiesis' internal folders; subscribe to a file under "
            "knowledge/"
        )
    if root is not None:
        full = (root / p).resolve()
        if full != root and root.resolve() not in full.parents:
            return (
                "resolves outside the memory repo (a symlink?); subscribe only to files inside it"
            )
        if not full.is_file():
            return (
                "does not exist; create the file first or fix the path (paths are relative to "
                "the repo root)"
            )
    return None


def _first_heading(body: str) -> str:
    m = re.search(r"^#\s+(.+)$", body, re.MULTILINE)
    return m.group(1).strip() if m else ""


def _read_frontmatter(
    where: str, text: str, errors: list[str]
) -> tuple[dict[str, Any], str] | None:
    """(fields, body) of topic file TEXT; None, with the reason in ERRORS, when its
    frontmatter is missing, unclosed or not YAML."""
    try:
        front, body = frontmatter.split(text, where)
    except FrontmatterError:
        errors.append(
            f"{where}: the frontmatter is not closed; add a line '---' after the last field."
        )
        return None
    if front is None:
        errors.append(
            f"{where}: has no frontmatter; start the file with a '---' line, `type: topic`, "
            "`triggers:` ..., and a closing '---' line."
        )
        return None
    try:
        return frontmatter.parse_yaml(front, where), body
    except FrontmatterError as exc:
        errors.append(
            f"{exc} Fix it so the file reads as `key: value` lines such as `type: topic`."
        )
        return None


def read_topic_fields(relpath: str, text: str) -> tuple[dict[str, Any], str] | None:
    """(frontmatter mapping, body) of topic file TEXT, None when they cannot be read (then
    `parse_topic` says why)."""
    return _read_frontmatter(relpath, text, [])


def _check_fields(
    data: Mapping[str, Any], where: str, errors: list[str], warnings: list[str]
) -> None:
    """Refuse unknown topic fields and a `type` other than topic."""
    for key in data:
        if key not in TOPIC_FIELDS:
            errors.append(
                f"{where}: unknown field '{key}'; topic fields are {', '.join(TOPIC_FIELDS)}"
                + (
                    " (similarity_threshold goes at the top level, not inside triggers)"
                    if key == "threshold"
                    else ""
                )
                + "."
            )
    if data.get("type", "topic") != "topic":
        errors.append(
            f"{where}: type: {data.get('type')!r} — a file under topics/ must say `type: topic`."
        )
    elif "type" not in data:
        warnings.append(
            f"{where}: no `type: topic` line; add it so other tools know what this file is."
        )


def _name(data: Mapping[str, Any], relpath: str, errors: list[str]) -> str:
    name = data.get("name") or PurePosixPath(relpath).stem
    if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z", name):
        errors.append(
            f"{relpath}: name: {name!r} must be a slug like github-pr-review "
            "(letters, digits, - _ .)."
        )
        return PurePosixPath(relpath).stem
    return name


# a frontmatter line that may give the topic a `name:` (else the file's stem is its name)
_NAME_LINE = re.compile(r"""^["']?name["']?[ \t]*:""", re.MULTILINE)


def topic_name(relpath: str, text: str) -> str | None:
    """The name topic file RELPATH with content TEXT goes by (its `name:`, else its file
    name's stem), or None when its frontmatter cannot be read. The frontmatter is parsed
    only when a line may set the name: the pre-commit hook asks it of every topic."""
    stem = PurePosixPath(relpath).stem
    if not _NAME_LINE.search(text):
        return stem
    read = read_topic_fields(relpath, text)
    if read is None:
        return None
    name = read[0].get("name") or stem
    return name if isinstance(name, str) else None


def _description(
    data: Mapping[str, Any], body: str, where: str, errors: list[str], warnings: list[str]
) -> str:
    description = data.get("description")
    if description is None:
        warnings.append(
            f"{where}: no description; tier 2 and the gate use it — add `description: one line on "
            "what the topic is for`."
        )
        return _first_heading(body)
    if not isinstance(description, str):
        errors.append(f"{where}: description must be one line of text.")
        return ""
    return description


def _triggers(
    raw_triggers: Any, where: str, errors: list[str], warnings: list[str]
) -> list[Trigger]:
    if raw_triggers is None or raw_triggers == []:
        warnings.append(f"{where}: no triggers; the topic can only be activated by hand.")
    elif isinstance(raw_triggers, dict):
        errors.append(
            f"{where}: triggers must be a list (each item starting with '- type: ...'), not a "
            "mapping; "
            "move similarity_threshold and activation to the top level."
        )
    elif not isinstance(raw_triggers, list):
        errors.append(
            f"{where}: triggers must be a list of trigger mappings (- type: pattern ...)."
        )
    else:
        before = len(errors)
        parsed = (
            parse_trigger(i, raw, errors, warnings, where) for i, raw in enumerate(raw_triggers)
        )
        triggers = [t for t in parsed if t is not None]
        if len(errors) == before:  # every pattern compiled alone: do they together?
            problem = check_regex_set(_re2_sources(triggers))
            if problem:
                errors.append(f"{where}: triggers: {problem}.")
        return triggers
    return []


def _re2_sources(triggers: list[Trigger]) -> list[str]:
    """The RE2 sources tier 1 joins into its set for TRIGGERS (pattern, keyword)."""
    sources = []
    for trigger in triggers:
        spec = trigger_type(trigger.type)
        if spec is not None and spec.text and spec.re2_source is not None:
            src = spec.re2_source(trigger)
            if src is not None:
                sources.append(src)
    return sources


def _subscriptions(value: Any, where: str, root: Path | None, errors: list[str]) -> list[str]:
    subs = str_list(value or [])
    if subs is None:
        errors.append(
            f"{where}: subscriptions must be a list of repo-relative paths, like "
            "[knowledge/people/_index.md]."
        )
        return []
    out: list[str] = []
    for i, sub in enumerate(subs):
        problem = subscription_problem(sub, root)
        if problem:
            errors.append(f"{where}: subscriptions[{i}] {sub!r} {problem}.")
            continue
        norm = PurePosixPath(sub.replace("\\", "/")).as_posix()
        if norm not in out:
            out.append(norm)
    return out


def _choice(
    data: Mapping[str, Any],
    key: str,
    allowed: tuple[str, ...],
    default: str,
    where: str,
    errors: list[str],
) -> str:
    value = data.get(key, default)
    if value not in allowed:
        errors.append(
            f"{where}: {key}: {value!r} is not allowed; write one of: {', '.join(allowed)}."
        )
        return default
    return str(value)


def _number(
    data: Mapping[str, Any],
    key: str,
    default: float,
    bounds: tuple[float, float],
    hint: str,
    where: str,
    errors: list[str],
) -> float:
    value = data.get(key, default)
    lo, hi = bounds
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (lo <= value <= hi):
        errors.append(f"{where}: {key}: {value!r} must be a number {hint}.")
        return default
    return float(value)


def topic_too_large(relpath: str, size: int) -> str | None:
    """Why topic file RELPATH of SIZE bytes is not read, or None when its size is fine."""
    if size <= MAX_TOPIC_BYTES:
        return None
    return (
        f"{relpath}: {size / 2**20:.1f} MB, larger than a topic may be ({MAX_CONTEXT_KB} KB: "
        "no prompt takes more of its instructions); not read. Cut it down, or move the "
        "reference material into knowledge/ and subscribe the topic to it."
    )


def parse_topic(
    relpath: str,
    text: str,
    *,
    root: Path | None = None,
    default_threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    fields: tuple[dict[str, Any], str] | None = None,
) -> tuple[Topic | None, list[str], list[str]]:
    """(topic or None, errors, warnings) of topic file RELPATH with content TEXT.

    With ROOT (the memory repo's folder) subscriptions must name existing files. FIELDS,
    when given, is (frontmatter mapping, body) as `read_topic_fields` read them from this
    very TEXT (a cache's copy): the YAML is not parsed again."""
    errors: list[str] = []
    warnings: list[str] = []
    where = relpath
    too_large = topic_too_large(relpath, len(text.encode("utf-8", "surrogateescape")))
    if too_large:
        return None, [too_large], warnings
    read = fields if fields is not None else _read_frontmatter(where, text, errors)
    if read is None:
        return None, errors, warnings
    data, body = read
    _check_fields(data, where, errors, warnings)
    name = _name(data, relpath, errors)
    description = _description(data, body, where, errors, warnings)
    triggers = _triggers(data.get("triggers"), where, errors, warnings)
    subscriptions = _subscriptions(data.get("subscriptions"), where, root, errors)
    activation = _choice(data, "activation", ACTIVATIONS, "gated", where, errors)
    priority = _choice(data, "priority", PRIORITIES, "medium", where, errors)
    max_kb = _number(
        data,
        "max_context_kb",
        DEFAULT_MAX_CONTEXT_KB,
        (0.1, MAX_CONTEXT_KB),
        f"between 0.1 and {MAX_CONTEXT_KB} (KB of instructions to inject)",
        where,
        errors,
    )
    threshold = _number(
        data,
        "similarity_threshold",
        default_threshold,
        (0.0, 1.0),
        f"between 0 and 1 (default {default_threshold:g})",
        where,
        errors,
    )
    tags = str_list(data.get("tags") or []) or []
    if errors:
        return None, errors, warnings
    topic = Topic(
        name=name,
        path=relpath,
        description=description.strip(),
        instructions=body.strip(),
        triggers=tuple(triggers),
        subscriptions=tuple(subscriptions),
        activation=activation,
        priority=priority,
        max_context_kb=max_kb,
        similarity_threshold=threshold,
        tags=tuple(tags),
        content_hash=hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest(),
        warnings=tuple(warnings),
    )
    return topic, errors, warnings


def validate_topic_source(
    relpath: str, text: str, root: Path | None = None
) -> tuple[list[str], list[str]]:
    """(errors, warnings) of a topic file; what the pre-commit hook calls on every commit.

    The hook runs at the repo's top level, so when ROOT is not given and the current
    folder is a memory repo, subscriptions are also checked to exist there."""
    if root is None:
        cwd = Path.cwd()
        if (cwd / "knowledge").is_dir() and (cwd / "topics").is_dir():
            root = cwd
    _, errors, warnings = parse_topic(relpath, text, root=root)
    return errors, warnings
