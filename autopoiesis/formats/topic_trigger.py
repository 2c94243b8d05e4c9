"""A topic's triggers (docs/design.md#topic-triggers): the Trigger value, the trigger types
and their registry, and the parse of one trigger of a topic file (formats/topic.py).

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

**Adding a trigger type** is one module and one registration: a `TriggerType` holding
its fields, their parse/validation and (for a type that looks at message text) how tier 1
evaluates it, registered by a plugin (autopoiesis.plugins, the hook
`register_trigger_types`; the built-ins are the modules of autopoiesis.topics.triggers)::

    def _parse_weekday(raw, at, errors):            # the fields -> the trigger's values
        day = str(raw.get("day", "")).lower()         # (a missing `day` is already reported)
        if day and day not in ("mon", "tue", ...):
            errors.append(f"{at}.day: write mon, tue, ...")
        return {"day": day}                        # unknown names land in Trigger.options

    WEEKDAY = TriggerType(
        "weekday", text=True, required=("day",), example="day: mon", parse=_parse_weekday,
        describe=lambda t: t.option("day"), feature=lambda m: m.text.lower(),
        match=lambda t, _, text: t.option("day") if t.option("day") in text else None)

    @hookimpl
    def register_trigger_types(register):
        register(WEEKDAY)

(`register_trigger_type(WEEKDAY)` does the same from code.) Unknown types and fields are
refused, naming the allowed ones and showing the example in every message, so nothing
else needs to change. `text=True` types are handed to tier 1 (`PatternMatcher`);
`text=False` types (webhook, cron) are fired from outside the message flow.

Light path, like formats/topic.py: the standard library, pluggy and the kernel at module
level (google-re2 is imported inside check_regex).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autopoiesis import plugins

SCOPES = ("input", "output", "both")
DEFAULT_SENTIMENT_MIN_SCORE = 2
COMMON_TRIGGER_FIELDS = ("type", "scope", "correction_hint")
# The built-in trigger types (autopoiesis.topics.triggers), in the order of the table of
# the module doc.
TRIGGER_TYPES = (
    "pattern",
    "glob",
    "keyword",
    "code",
    "language",
    "mention",
    "url",
    "sentiment",
    "webhook",
    "cron",
)


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
        spec = trigger_type(self.type)
        return spec is not None and spec.text

    def describe(self) -> str:
        spec = trigger_type(self.type)
        return f"{self.type}({spec.describe(self) if spec else '?'})"


# ── trigger types ──────────────────────────────────────────────────────────────────
# parse(raw mapping, "where: triggers[i]", errors) -> the trigger's values. It runs after
# unknown fields were refused and missing required ones reported, so a required field may
# still be absent (use raw.get).
TriggerParser = Callable[[Mapping[str, Any], str, list[str]], dict[str, Any]]


@dataclass(frozen=True)
class TriggerType:
    """One trigger type: its fields, their parse, and how tier 1 evaluates it.

    A type with `text` is evaluated on message text in one of two ways:

    * ``re2_source(trigger)`` gives an RE2 pattern: it joins the one RE2 set per direction,
      so a message is scanned once however many topics there are; or
    * ``feature(message)`` extracts what this type looks at, once per message for every
      trigger of the type (message: autopoiesis.topics.triggers.common.Message);
      ``prepare(trigger)`` compiles a trigger once when the matcher is built;
      ``match(trigger, prepared, feature)`` says what matched, or None.
    """

    name: str
    text: bool  # tier 1 evaluates it on message text; False: fired from outside (webhook, cron)
    parse: TriggerParser
    describe: Callable[[Trigger], str]
    example: str  # shown in every message about this type, e.g. 'words: [deploy, production]'
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    re2_source: Callable[[Trigger], str | None] | None = None
    feature: Callable[[Any], Any] | None = None
    prepare: Callable[[Trigger], Any] | None = None
    match: Callable[[Trigger, Any, Any], str | None] | None = None

    def __post_init__(self) -> None:
        clash = set(self.required + self.optional) & set(COMMON_TRIGGER_FIELDS)
        if clash:
            raise ValueError(
                f"trigger type {self.name!r}: {', '.join(sorted(clash))} are common to every "
                "trigger"
            )

    @property
    def evaluates(self) -> bool:
        """Whether tier 1 knows how to evaluate it: an RE2 source, or a feature and a match."""
        return self.re2_source is not None or (self.feature is not None and self.match is not None)


_TRIGGER_FIELD_NAMES = frozenset(Trigger.__dataclass_fields__) - {
    "type",
    "scope",
    "correction_hint",
    "options",
}


def register_trigger_type(spec: TriggerType) -> TriggerType:
    """Register SPEC (replacing a type of the same name) as a plugin of the process's
    plugin manager. Returns SPEC."""
    plugins.plugin_manager().contribute("register_trigger_types", spec)
    return spec


def trigger_type(name: str) -> TriggerType | None:
    """The trigger type NAME, from the plugins (the installed ones are looked at only
    when the built-ins and registered ones lack it)."""
    found: TriggerType | None = plugins.lookup(plugins.trigger_types, name)
    return found


def __getattr__(name: str) -> Any:
    if name == "TRIGGER_REGISTRY":  # the registered trigger types by name, as a snapshot
        return plugins.trigger_types()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def str_list(value: Any) -> list[str] | None:
    """VALUE as a list of strings (one string is a list of one); None when it is no such list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value
    ):
        return [str(v) for v in value]
    return None


def re2_options() -> Any:
    """The options every trigger pattern is compiled with: RE2's own log of a pattern it
    refuses off (the refusal is said where the topic is read)."""
    import re2  # lazily: only topics with a pattern trigger need it

    opts = re2.Options()
    opts.log_errors = False
    return opts


def re2_set(sources: Sequence[str]) -> Any:
    """SOURCES (RE2 patterns) compiled as one RE2 set, which tier 1 scans a message with
    once (topics/pattern.py); raises re2.error when together they are more than RE2
    compiles."""
    import re2

    joined = re2.Set.SearchSet(re2_options())
    for src in sources:
        joined.Add(src)
    joined.Compile()
    return joined


def check_regex(pattern: str) -> str | None:
    """None when PATTERN compiles under RE2 (linear time: no catastrophic backtracking),
    else why not and what to do. Patterns RE2 cannot run (backreferences, lookaround) are
    refused rather than run on a backtracking engine that a hostile message could hang."""
    import re2

    try:
        re2.compile(pattern, re2_options())
    except UnicodeEncodeError:  # RE2 reads UTF-8: a lone surrogate ("\\ud800") has none
        return "holds a character that is no Unicode text (a lone surrogate); remove it"
    except re2.error as exc:
        msg = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        try:
            # only to tell a regex no engine reads from one RE2 cannot run: Python's own
            # FutureWarning on it ("Possible nested set") named no file, and reached the
            # prompt hook's stderr
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                re.compile(pattern)
        except re.error as exc2:
            return f"is not a valid regex ({exc2})"
        return (
            f"uses a feature the linear-time RE2 engine does not support ({msg}); rewrite it "
            "without "
            "backreferences or lookaround (e.g. match the alternatives with (a|b) and word "
            "boundaries \\b)"
        )
    return None


def check_regex_set(sources: list[str]) -> str | None:
    """None when SOURCES, the RE2 sources of one topic's triggers, compile together as one
    RE2 set, as tier 1 joins them (`re2_set`); else why not and what to do. Each may
    compile alone while the set is over RE2's memory budget: a pulled topic of 10,000
    pattern triggers, or of one pattern of 300 `[a-z]{0,100}` alternatives, failed the
    set of every topic, and every prompt hook gave no context."""
    if not sources:
        return None
    import re2

    try:
        re2_set(sources)
    except re2.error:
        what = (
            "its pattern is"
            if len(sources) == 1
            else f"its {len(sources)} pattern and keyword triggers together are"
        )
        return (
            f"{what} more than the RE2 engine can compile; split the topic into smaller "
            "ones, or write fewer and shorter patterns (a bounded repeat such as "
            "[a-z]{0,100} counts once per step)"
        )
    return None


def parse_trigger(
    i: int, raw: Any, errors: list[str], warnings: list[str], where: str
) -> Trigger | None:
    at = f"{where}: triggers[{i}]"
    if not isinstance(raw, dict):
        errors.append(
            f'{at}: must be a mapping like `- type: pattern` / `match: "..."`, not {raw!r}.'
        )
        return None
    ttype = raw.get("type")
    spec = trigger_type(ttype) if isinstance(ttype, str) else None
    if spec is None or not isinstance(ttype, str):
        known = ", ".join(plugins.trigger_types())
        errors.append(f"{at}.type: {ttype!r} is not a trigger type; write one of: {known}.")
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
        errors.append(f'{at}.correction_hint: must be text, like "Use Python 3 syntax".')
        hint = None
    if hint and scope == "input":
        warnings.append(
            f"{at}.correction_hint: only output-scope triggers inject correction hints; set "
            "scope: output or both."
        )
    values = spec.parse(raw, at, errors)
    if not spec.text and "scope" in raw:
        warnings.append(
            f"{at}.scope: {ttype} triggers do not watch messages; the scope is ignored."
        )
    fields = {k: v for k, v in values.items() if k in _TRIGGER_FIELD_NAMES}
    options = tuple(sorted((k, v) for k, v in values.items() if k not in _TRIGGER_FIELD_NAMES))
    return Trigger(type=ttype, scope=scope, correction_hint=hint, options=options, **fields)
