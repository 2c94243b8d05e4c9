"""The topic file format (design §2.2, §4.4): parse and validate one `topics/*.md` file.

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

Fields of each trigger type (anything else is refused with the list of what is allowed):

=========  ===========================================================================
pattern    ``match``: a regex (RE2 syntax, case-insensitive unless ``case_sensitive: true``)
glob       ``match``: a glob or a list of globs over file paths seen in the message/tool calls
keyword    ``words``: a list of words or phrases (case-insensitive, whole words)
code       ``languages``: optional list (python, javascript, ...); without it any code fires
language   ``languages``: ISO 639-1 codes of natural languages (de, fr, ...)
mention    ``names``: optional list; without it any @mention or person of knowledge/people/
url        ``match``: any | github | github_pull | github_issue | a host name (example.com)
sentiment  ``min_score``: optional integer >= 1 (caps words, "!!!", urgent words; default 2)
webhook    ``source`` and optional ``event`` (fired by `autopoiesis topics fire --webhook S/E`)
cron       ``schedule``: a cron expression (evaluated by `autopoiesis topics due`)
=========  ===========================================================================

**Adding a trigger type** is one registration here and, when it looks at message text,
one in `autopoiesis.topics.pattern` (how tier 1 evaluates it)::

    def _parse_weekday(raw, at, errors):            # the fields -> the trigger's values
        day = str(raw.get("day", "")).lower()         # (a missing `day` is already reported)
        if day and day not in ("mon", "tue", ...):
            errors.append(f"{at}.day: write mon, tue, ...")
        return {"day": day}                        # unknown names land in Trigger.options

    register_trigger_type(TriggerType(
        "weekday", text=True, required=("day",), example="day: mon", parse=_parse_weekday,
        describe=lambda t: t.option("day")))

The registry refuses unknown types and fields, names the allowed ones and shows the
example in every message, so nothing else needs to change. `text=True` types are handed
to tier 1 (`PatternMatcher`, which needs an evaluator registered for them); `text=False`
types (webhook, cron) are fired from outside the message flow.

One module of about 570 lines on purpose: the topic fields and the ten built-in trigger
types' fields are one format, validated together, and the hook imports just this.

This module is on the light path: the pre-commit hook calls `validate_topic_source` on
every commit, so it imports only the standard library and the kernel at module level
(google-re2 and croniter are imported inside the checks that need them).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from autopoiesis.core import frontmatter
from autopoiesis.core.clock import check_cron  # the one cron check (croniter, imported lazily inside it)
from autopoiesis.core.config import WatchersConfig
from autopoiesis.core.text import cut_to_bytes
from autopoiesis.errors import FrontmatterError

SCOPES = ("input", "output", "both")
ACTIVATIONS = ("auto", "gated", "manual")
PRIORITIES = ("low", "medium", "high", "critical")
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}
URL_KINDS = ("any", "github", "github_pull", "github_issue")
DEFAULT_SIMILARITY_THRESHOLD = WatchersConfig().similarity_threshold  # the config owns it
DEFAULT_MAX_CONTEXT_KB = 4.0
DEFAULT_SENTIMENT_MIN_SCORE = 2
COMMON_TRIGGER_FIELDS = ("type", "scope", "correction_hint")
TOPIC_FIELDS = (
    "type", "name", "description", "triggers", "subscriptions", "activation", "priority",
    "max_context_kb", "similarity_threshold", "tags", "updated",
)
_LANG_CODE = re.compile(r"^[a-z]{2,3}\Z")


@dataclass(frozen=True)
class Trigger:
    """One trigger of a topic. Only the fields of its type are set; a registered type
    whose values have no field here keeps them in `options` (read with `option`)."""

    type: str
    scope: str = "input"
    correction_hint: str | None = None
    match: str | None = None  # pattern regex, url kind/host
    case_sensitive: bool = False
    globs: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    min_score: int = DEFAULT_SENTIMENT_MIN_SCORE
    source: str | None = None
    event: str | None = None
    schedule: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    def applies_to(self, direction: str) -> bool:
        """Whether this trigger watches messages going in DIRECTION ("input" or "output")."""
        return self.scope == "both" or self.scope == direction

    def option(self, key: str, default: Any = None) -> Any:
        """A value of a registered trigger type that has no field of its own."""
        return dict(self.options).get(key, default)

    @property
    def watches_text(self) -> bool:
        """Whether tier 1 evaluates this trigger on message text (webhook and cron do not)."""
        spec = TRIGGER_REGISTRY.get(self.type)
        return spec is not None and spec.text

    def describe(self) -> str:
        return f"{self.type}({TRIGGER_REGISTRY[self.type].describe(self)})"


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


# ── the trigger-type registry ───────────────────────────────────────────────────────
# parse(raw mapping, "where: triggers[i]", errors) -> the trigger's values. It runs after
# the registry has refused unknown fields and reported missing required ones, so a
# required field may still be absent (use raw.get).
TriggerParser = Callable[[Mapping[str, Any], str, list[str]], dict[str, Any]]


@dataclass(frozen=True)
class TriggerType:
    """What the format knows of one trigger type."""

    name: str
    text: bool  # tier 1 evaluates it on message text; False: fired from outside (webhook, cron)
    parse: TriggerParser
    describe: Callable[[Trigger], str]
    example: str  # shown in every message about this type, e.g. 'words: [deploy, production]'
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


TRIGGER_REGISTRY: dict[str, TriggerType] = {}
_TRIGGER_FIELD_NAMES = frozenset(Trigger.__dataclass_fields__) - {"type", "scope", "correction_hint", "options"}


def register_trigger_type(spec: TriggerType) -> TriggerType:
    """Add SPEC to the registry (replacing a type of the same name). Returns SPEC."""
    clash = set(spec.required + spec.optional) & set(COMMON_TRIGGER_FIELDS)
    if clash:
        raise ValueError(f"trigger type {spec.name!r}: {', '.join(sorted(clash))} are common to every trigger")
    TRIGGER_REGISTRY[spec.name] = spec
    return spec


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value]
    return None


def check_regex(pattern: str) -> str | None:
    """None when PATTERN compiles under RE2 (linear time: no catastrophic backtracking),
    else why not and what to do. Patterns RE2 cannot run (backreferences, lookaround) are
    refused rather than run on a backtracking engine that a hostile message could hang."""
    import re2  # lazily: only topics with a pattern trigger need it

    opts = re2.Options()
    opts.log_errors = False
    try:
        re2.compile(pattern, opts)
    except re2.error as exc:
        msg = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        try:
            re.compile(pattern)
        except re.error as exc2:
            return f"is not a valid regex ({exc2})"
        return (
            f"uses a feature the linear-time RE2 engine does not support ({msg}); rewrite it without "
            "backreferences or lookaround (e.g. match the alternatives with (a|b) and word boundaries \\b)"
        )
    return None


def _parse_pattern(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(raw.get("match"), (str, int)):
        pattern = str(raw["match"])
        problem = check_regex(pattern)
        if problem:
            errors.append(f"{at}.match: {pattern!r} {problem}.")
        out["match"] = pattern
        cs = raw.get("case_sensitive", False)
        if not isinstance(cs, bool):
            errors.append(f"{at}.case_sensitive: write true or false.")
            cs = False
        out["case_sensitive"] = cs
    elif raw.get("match") is not None:
        errors.append(f"{at}.match: must be one regex string, like {TRIGGER_REGISTRY['pattern'].example}.")
    return out


def _parse_glob(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if raw.get("match") is None:
        return {}
    globs = _str_list(raw["match"])
    if not globs:
        errors.append(f"{at}.match: must be a glob or a list of globs, like {TRIGGER_REGISTRY['glob'].example}.")
        return {}
    return {"globs": tuple(globs)}


def _parse_keyword(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if raw.get("words") is None:
        return {}
    words = _str_list(raw["words"])
    if not words or not all(w.strip() for w in words):
        errors.append(f"{at}.words: must be a list of words or phrases, like {TRIGGER_REGISTRY['keyword'].example}.")
        return {}
    return {"words": tuple(w.strip().lower() for w in words)}


def _languages(ttype: str, iso: bool) -> TriggerParser:
    def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
        if raw.get("languages") is None:
            return {}
        langs = _str_list(raw["languages"])
        if langs is None:
            errors.append(f"{at}.languages: must be a list, like {TRIGGER_REGISTRY[ttype].example}.")
            return {}
        langs = [lang.strip().lower() for lang in langs]
        bad = [lang for lang in langs if not _LANG_CODE.match(lang)] if iso else []
        if bad:
            errors.append(
                f"{at}.languages: {', '.join(bad)} are not ISO 639-1 codes; write two-letter codes like de, fr, es."
            )
        return {"languages": tuple(langs)}

    return parse


def _parse_mention(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if raw.get("names") is None:
        return {}
    names = _str_list(raw["names"])
    if names is None:
        errors.append(f"{at}.names: must be a list of names, like {TRIGGER_REGISTRY['mention'].example}.")
        return {}
    return {"names": tuple(n.strip().lstrip("@").lower() for n in names if n.strip())}


def _parse_url(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    kind = raw.get("match", "any")
    if not isinstance(kind, str) or not kind.strip():
        errors.append(f"{at}.match: write one of {', '.join(URL_KINDS)} or a host name like example.com.")
    elif kind not in URL_KINDS and not re.match(r"^[A-Za-z0-9.-]+\.[A-Za-z]{2,}\Z", kind):
        errors.append(
            f"{at}.match: {kind!r} is neither a URL kind ({', '.join(URL_KINDS)}) nor a host name like example.com."
        )
    return {"match": str(kind).lower()}


def _parse_sentiment(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if "min_score" not in raw:
        return {}
    ms = raw["min_score"]
    if not isinstance(ms, int) or isinstance(ms, bool) or ms < 1:
        errors.append(f"{at}.min_score: must be a whole number >= 1, like {TRIGGER_REGISTRY['sentiment'].example}.")
        return {}
    return {"min_score": ms}


def _parse_webhook(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("source", "event"):
        if raw.get(key) is not None:
            if not isinstance(raw[key], str) or "/" in raw[key]:
                errors.append(f"{at}.{key}: must be a word without '/', like {TRIGGER_REGISTRY['webhook'].example}.")
            else:
                out[key] = raw[key]
    return out


def _parse_cron(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    if raw.get("schedule") is None:
        return {}
    sched = str(raw["schedule"])
    problem = check_cron(sched)
    if problem:
        errors.append(f"{at}.schedule: {sched!r} {problem}.")
    return {"schedule": sched}


for _spec in (
    TriggerType("pattern", True, _parse_pattern, lambda t: str(t.match), 'match: "\\\\b(deploy|rollback)\\\\b"',
                ("match",), ("case_sensitive",)),
    TriggerType("glob", True, _parse_glob, lambda t: ", ".join(t.globs), 'match: "*.py"', ("match",)),
    TriggerType("keyword", True, _parse_keyword, lambda t: ", ".join(t.words), "words: [deploy, production, rollback]",
                ("words",)),
    TriggerType("code", True, _languages("code", iso=False), lambda t: ", ".join(t.languages) or "any code",
                "languages: [python]", (), ("languages",)),
    TriggerType("language", True, _languages("language", iso=True), lambda t: ", ".join(t.languages),
                "languages: [de]", ("languages",)),
    TriggerType("mention", True, _parse_mention, lambda t: ", ".join(t.names) or "any mention",
                "names: [david, silas]", (), ("names",)),
    TriggerType("url", True, _parse_url, lambda t: str(t.match), "match: github_pull", (), ("match",)),
    TriggerType("sentiment", True, _parse_sentiment, lambda t: f"score >= {t.min_score}", "min_score: 2",
                (), ("min_score",)),
    TriggerType("webhook", False, _parse_webhook, lambda t: f"{t.source}/{t.event or '*'}",
                "source: email  (and event: new_message)", ("source",), ("event",)),
    TriggerType("cron", False, _parse_cron, lambda t: str(t.schedule), 'schedule: "0 8 * * *"', ("schedule",)),
):
    register_trigger_type(_spec)

# The built-in trigger types, in the order of the table above.
TRIGGER_TYPES = tuple(TRIGGER_REGISTRY)


def subscription_problem(sub: str, root: Path | None) -> str | None:
    """Why subscription path SUB is refused, or None. Paths are repo-relative; nothing
    may point outside the memory repo; with ROOT given the file must exist."""
    if not sub or "\x00" in sub:
        return "is empty; write a repo-relative path like knowledge/procedures/code-review.md"
    p = PurePosixPath(sub.replace("\\", "/"))
    if p.is_absolute() or sub.startswith("~") or re.match(r"^[A-Za-z]:", sub):
        return "is an absolute path; write it relative to the memory repo, like knowledge/people/_index.md"
    if ".." in p.parts:
        return "points outside the memory repo ('..'); subscribe only to files inside it, like knowledge/people/_index.md"
    if p.parts and p.parts[0] in (".git", ".autopoiesis"):
        return "points into git's or autopoiesis' internal folders; subscribe to a file under knowledge/"
    if root is not None:
        full = (root / p).resolve()
        if full != root and root.resolve() not in full.parents:
            return "resolves outside the memory repo (a symlink?); subscribe only to files inside it"
        if not full.is_file():
            return "does not exist; create the file first or fix the path (paths are relative to the repo root)"
    return None


def _parse_trigger(i: int, raw: Any, errors: list[str], warnings: list[str], where: str) -> Trigger | None:
    at = f"{where}: triggers[{i}]"
    if not isinstance(raw, dict):
        errors.append(f"{at}: must be a mapping like `- type: pattern` / `match: \"...\"`, not {raw!r}.")
        return None
    ttype = raw.get("type")
    spec = TRIGGER_REGISTRY.get(ttype) if isinstance(ttype, str) else None
    if spec is None or not isinstance(ttype, str):
        errors.append(f"{at}.type: {ttype!r} is not a trigger type; write one of: {', '.join(TRIGGER_REGISTRY)}.")
        return None
    allowed = set(spec.required) | set(spec.optional) | set(COMMON_TRIGGER_FIELDS)
    for key in raw:
        if key not in allowed:
            errors.append(
                f"{at}.{key}: a {ttype} trigger has no field '{key}'; its fields are "
                f"{', '.join(sorted(allowed))} (e.g. {spec.example})."
            )
    for key in spec.required:
        if raw.get(key) in (None, "", []):
            errors.append(f"{at}: a {ttype} trigger needs '{key}'; write e.g. {spec.example}.")
    scope = raw.get("scope", "input")
    if scope not in SCOPES:
        errors.append(f"{at}.scope: {scope!r} is not a scope; write input, output or both.")
        scope = "input"
    hint = raw.get("correction_hint")
    if hint is not None and not isinstance(hint, str):
        errors.append(f"{at}.correction_hint: must be text, like \"Use Python 3 syntax\".")
        hint = None
    if hint and scope == "input":
        warnings.append(
            f"{at}.correction_hint: only output-scope triggers inject correction hints; set scope: output or both."
        )
    values = spec.parse(raw, at, errors)
    if not spec.text and "scope" in raw:
        warnings.append(f"{at}.scope: {ttype} triggers do not watch messages; the scope is ignored.")
    fields = {k: v for k, v in values.items() if k in _TRIGGER_FIELD_NAMES}
    options = tuple(sorted((k, v) for k, v in values.items() if k not in _TRIGGER_FIELD_NAMES))
    return Trigger(type=ttype, scope=scope, correction_hint=hint, options=options, **fields)


def _first_heading(body: str) -> str:
    m = re.search(r"^#\s+(.+)$", body, re.MULTILINE)
    return m.group(1).strip() if m else ""


def parse_topic(relpath: str, text: str, *, root: Path | None = None,
                default_threshold: float = DEFAULT_SIMILARITY_THRESHOLD) -> tuple[Topic | None, list[str], list[str]]:
    """(topic or None, errors, warnings) of topic file RELPATH with content TEXT.

    With ROOT (the memory repo's folder) subscriptions must name existing files."""
    errors: list[str] = []
    warnings: list[str] = []
    where = relpath
    try:
        front, body = frontmatter.split(text, where)
    except FrontmatterError:
        errors.append(f"{where}: the frontmatter is not closed; add a line '---' after the last field.")
        return None, errors, warnings
    if front is None:
        errors.append(
            f"{where}: has no frontmatter; start the file with a '---' line, `type: topic`, "
            "`triggers:` ..., and a closing '---' line."
        )
        return None, errors, warnings
    try:
        data = frontmatter.parse_yaml(front, where)
    except FrontmatterError as exc:
        errors.append(f"{exc} Fix it so the file reads as `key: value` lines such as `type: topic`.")
        return None, errors, warnings
    for key in data:
        if key not in TOPIC_FIELDS:
            errors.append(
                f"{where}: unknown field '{key}'; topic fields are {', '.join(TOPIC_FIELDS)}"
                + (" (similarity_threshold goes at the top level, not inside triggers)" if key == "threshold" else "")
                + "."
            )
    if data.get("type", "topic") != "topic":
        errors.append(f"{where}: type: {data.get('type')!r} — a file under topics/ must say `type: topic`.")
    elif "type" not in data:
        warnings.append(f"{where}: no `type: topic` line; add it so other tools know what this file is.")

    name = data.get("name") or PurePosixPath(relpath).stem
    if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z", name):
        errors.append(f"{where}: name: {name!r} must be a slug like github-pr-review (letters, digits, - _ .).")
        name = PurePosixPath(relpath).stem
    description = data.get("description")
    if description is None:
        description = _first_heading(body)
        warnings.append(
            f"{where}: no description; tier 2 and the gate use it — add `description: one line on what the topic is for`."
        )
    elif not isinstance(description, str):
        errors.append(f"{where}: description must be one line of text.")
        description = ""

    triggers: list[Trigger] = []
    raw_triggers = data.get("triggers")
    if raw_triggers is None or raw_triggers == []:
        warnings.append(f"{where}: no triggers; the topic can only be activated by hand.")
    elif isinstance(raw_triggers, dict):
        errors.append(
            f"{where}: triggers must be a list (each item starting with '- type: ...'), not a mapping; "
            "move similarity_threshold and activation to the top level."
        )
    elif not isinstance(raw_triggers, list):
        errors.append(f"{where}: triggers must be a list of trigger mappings (- type: pattern ...).")
    else:
        for i, raw in enumerate(raw_triggers):
            t = _parse_trigger(i, raw, errors, warnings, where)
            if t is not None:
                triggers.append(t)

    subs = _str_list(data.get("subscriptions") or [])
    subscriptions: list[str] = []
    if subs is None:
        errors.append(f"{where}: subscriptions must be a list of repo-relative paths, like [knowledge/people/_index.md].")
    else:
        for i, sub in enumerate(subs):
            problem = subscription_problem(sub, root)
            if problem:
                errors.append(f"{where}: subscriptions[{i}] {sub!r} {problem}.")
            else:
                norm = PurePosixPath(sub.replace("\\", "/")).as_posix()
                if norm not in subscriptions:
                    subscriptions.append(norm)

    def enum(key: str, allowed: tuple[str, ...], default: str) -> str:
        value = data.get(key, default)
        if value not in allowed:
            errors.append(f"{where}: {key}: {value!r} is not allowed; write one of: {', '.join(allowed)}.")
            return default
        return value

    activation = enum("activation", ACTIVATIONS, "gated")
    priority = enum("priority", PRIORITIES, "medium")

    def number(key: str, default: float, lo: float, hi: float, hint: str) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (lo <= value <= hi):
            errors.append(f"{where}: {key}: {value!r} must be a number {hint}.")
            return default
        return float(value)

    max_kb = number("max_context_kb", DEFAULT_MAX_CONTEXT_KB, 0.1, 1024, "between 0.1 and 1024 (KB of instructions to inject)")
    threshold = number("similarity_threshold", default_threshold, 0.0, 1.0,
                       f"between 0 and 1 (default {default_threshold:g})")
    tags = _str_list(data.get("tags") or []) or []
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


def validate_topic_source(relpath: str, text: str, root: Path | None = None) -> tuple[list[str], list[str]]:
    """(errors, warnings) of a topic file; what the pre-commit hook calls on every commit.

    The hook runs at the repo's top level, so when ROOT is not given and the current
    folder is a memory repo, subscriptions are also checked to exist there."""
    if root is None:
        cwd = Path.cwd()
        if (cwd / "knowledge").is_dir() and (cwd / "topics").is_dir():
            root = cwd
    _, errors, warnings = parse_topic(relpath, text, root=root)
    return errors, warnings
