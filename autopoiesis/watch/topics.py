"""Topic files (design §2.2, §4.4): parse, validate and load `topics/*.md`.

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

This module is on the light path: the pre-commit hook calls `validate_topic_source` on
every commit, so it imports only the standard library and PyYAML at module level
(google-re2 and croniter are imported inside the checks that need them).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Iterable

from autopoiesis.errors import TopicError

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo

TRIGGER_TYPES = ("pattern", "glob", "keyword", "code", "language", "mention", "url", "sentiment", "webhook", "cron")
# Triggers that look at message text (tier 1); webhook and cron fire from outside.
TEXT_TRIGGER_TYPES = TRIGGER_TYPES[:8]
SCOPES = ("input", "output", "both")
ACTIVATIONS = ("auto", "gated", "manual")
PRIORITIES = ("low", "medium", "high", "critical")
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}
URL_KINDS = ("any", "github", "github_pull", "github_issue")
DEFAULT_SIMILARITY_THRESHOLD = 0.15
DEFAULT_MAX_CONTEXT_KB = 4.0
DEFAULT_SENTIMENT_MIN_SCORE = 2

# Per trigger type: required fields, optional fields (besides type/scope/correction_hint).
_TRIGGER_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pattern": (("match",), ("case_sensitive",)),
    "glob": (("match",), ()),
    "keyword": (("words",), ()),
    "code": ((), ("languages",)),
    "language": (("languages",), ()),
    "mention": ((), ("names",)),
    "url": ((), ("match",)),
    "sentiment": ((), ("min_score",)),
    "webhook": (("source",), ("event",)),
    "cron": (("schedule",), ()),
}
_COMMON_TRIGGER_FIELDS = ("type", "scope", "correction_hint")
TOPIC_FIELDS = (
    "type", "name", "description", "triggers", "subscriptions", "activation", "priority",
    "max_context_kb", "similarity_threshold", "tags", "updated",
)
_EXAMPLE = {
    "pattern": 'match: "\\\\b(deploy|rollback)\\\\b"',
    "glob": 'match: "*.py"',
    "keyword": "words: [deploy, production, rollback]",
    "code": "languages: [python]",
    "language": "languages: [de]",
    "mention": "names: [david, silas]",
    "url": "match: github_pull",
    "sentiment": "min_score: 2",
    "webhook": "source: email  (and event: new_message)",
    "cron": 'schedule: "0 8 * * *"',
}
_LANG_CODE = re.compile(r"^[a-z]{2,3}$")
_FRONTMATTER_END = re.compile(r"\r?\n---[ \t]*(?:\r?\n|$)")


@dataclass(frozen=True)
class Trigger:
    """One trigger of a topic. Only the fields of its type are set."""

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

    def applies_to(self, direction: str) -> bool:
        """Whether this trigger watches messages going in DIRECTION ("input" or "output")."""
        return self.scope == "both" or self.scope == direction

    def describe(self) -> str:
        detail = {
            "pattern": self.match, "glob": ", ".join(self.globs), "keyword": ", ".join(self.words),
            "code": ", ".join(self.languages) or "any code", "language": ", ".join(self.languages),
            "mention": ", ".join(self.names) or "any mention", "url": self.match,
            "sentiment": f"score >= {self.min_score}", "webhook": f"{self.source}/{self.event or '*'}",
            "cron": self.schedule,
        }[self.type]
        return f"{self.type}({detail})"


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


def cut_to_bytes(text: str, limit: int, source: str) -> str:
    """TEXT, or its head cut at a line boundary to at most LIMIT UTF-8 bytes, with a marker
    naming SOURCE so a reader knows there is more."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    marker = f"\n[… truncated: {len(raw) - limit} more bytes in {source}]"
    room = max(0, limit - len(marker.encode("utf-8")))
    head = raw[:room].decode("utf-8", "ignore")
    nl = head.rfind("\n")
    if nl > room // 2:
        head = head[:nl]
    return head + marker


# ── parsing ─────────────────────────────────────────────────────────────────────────
def split_topic(text: str) -> tuple[str | None, str]:
    """(frontmatter YAML text or None, body)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None, text
    end = _FRONTMATTER_END.search(text, 3)
    if end is None:
        return "", ""  # signalled as "not closed" by the caller via the empty marker
    return text[4 : end.start()] if text[3] == "\n" else text[5 : end.start()], text[end.end() :]


def _load_yaml(src: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(src, Loader=loader)  # noqa: S506 - safe loader


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
    try:
        import re2
    except ImportError:  # pragma: no cover - google-re2 is a dependency
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"is not a valid regex ({exc})"
        return None
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


def check_cron(schedule: str) -> str | None:
    try:
        from croniter import croniter
    except ImportError:  # pragma: no cover - croniter is a dependency
        return None
    if not croniter.is_valid(schedule):
        return 'is not a cron expression; write five fields like "0 8 * * *" (minute hour day month weekday)'
    return None


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
    if ttype not in _TRIGGER_FIELDS:
        errors.append(
            f"{at}.type: {ttype!r} is not a trigger type; write one of: {', '.join(TRIGGER_TYPES)}."
        )
        return None
    required, optional = _TRIGGER_FIELDS[ttype]
    allowed = set(required) | set(optional) | set(_COMMON_TRIGGER_FIELDS)
    for key in raw:
        if key not in allowed:
            errors.append(
                f"{at}.{key}: a {ttype} trigger has no field '{key}'; its fields are "
                f"{', '.join(sorted(allowed))} (e.g. {_EXAMPLE[ttype]})."
            )
    for key in required:
        if raw.get(key) in (None, "", []):
            errors.append(f"{at}: a {ttype} trigger needs '{key}'; write e.g. {_EXAMPLE[ttype]}.")
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
    kw: dict[str, Any] = {"type": ttype, "scope": scope, "correction_hint": hint}
    if ttype == "pattern" and isinstance(raw.get("match"), (str, int)):
        pattern = str(raw["match"])
        problem = check_regex(pattern)
        if problem:
            errors.append(f"{at}.match: {pattern!r} {problem}.")
        kw["match"] = pattern
        cs = raw.get("case_sensitive", False)
        if not isinstance(cs, bool):
            errors.append(f"{at}.case_sensitive: write true or false.")
            cs = False
        kw["case_sensitive"] = cs
    elif ttype == "pattern" and raw.get("match") is not None:
        errors.append(f"{at}.match: must be one regex string, like {_EXAMPLE['pattern']}.")
    if ttype == "glob" and raw.get("match") is not None:
        globs = _str_list(raw["match"])
        if not globs:
            errors.append(f"{at}.match: must be a glob or a list of globs, like {_EXAMPLE['glob']}.")
        else:
            kw["globs"] = tuple(globs)
    if ttype == "keyword" and raw.get("words") is not None:
        words = _str_list(raw["words"])
        if not words or not all(w.strip() for w in words):
            errors.append(f"{at}.words: must be a list of words or phrases, like {_EXAMPLE['keyword']}.")
        else:
            kw["words"] = tuple(w.strip().lower() for w in words)
    if ttype in ("code", "language") and raw.get("languages") is not None:
        langs = _str_list(raw["languages"])
        if langs is None:
            errors.append(f"{at}.languages: must be a list, like {_EXAMPLE[ttype]}.")
        else:
            langs = [l.strip().lower() for l in langs]
            if ttype == "language":
                bad = [l for l in langs if not _LANG_CODE.match(l)]
                if bad:
                    errors.append(
                        f"{at}.languages: {', '.join(bad)} are not ISO 639-1 codes; write two-letter codes like de, fr, es."
                    )
            kw["languages"] = tuple(langs)
    if ttype == "mention" and raw.get("names") is not None:
        names = _str_list(raw["names"])
        if names is None:
            errors.append(f"{at}.names: must be a list of names, like {_EXAMPLE['mention']}.")
        else:
            kw["names"] = tuple(n.strip().lstrip("@").lower() for n in names if n.strip())
    if ttype == "url":
        kind = raw.get("match", "any")
        if not isinstance(kind, str) or not kind.strip():
            errors.append(f"{at}.match: write one of {', '.join(URL_KINDS)} or a host name like example.com.")
        elif kind not in URL_KINDS and not re.match(r"^[A-Za-z0-9.-]+\.[A-Za-z]{2,}$", kind):
            errors.append(
                f"{at}.match: {kind!r} is neither a URL kind ({', '.join(URL_KINDS)}) nor a host name like example.com."
            )
        kw["match"] = str(kind).lower()
    if ttype == "sentiment" and "min_score" in raw:
        ms = raw["min_score"]
        if not isinstance(ms, int) or isinstance(ms, bool) or ms < 1:
            errors.append(f"{at}.min_score: must be a whole number >= 1, like {_EXAMPLE['sentiment']}.")
        else:
            kw["min_score"] = ms
    if ttype == "webhook":
        for key in ("source", "event"):
            if raw.get(key) is not None:
                if not isinstance(raw[key], str) or "/" in raw[key]:
                    errors.append(f"{at}.{key}: must be a word without '/', like {_EXAMPLE['webhook']}.")
                else:
                    kw[key] = raw[key]
    if ttype == "cron" and raw.get("schedule") is not None:
        sched = str(raw["schedule"])
        problem = check_cron(sched)
        if problem:
            errors.append(f"{at}.schedule: {sched!r} {problem}.")
        kw["schedule"] = sched
    if ttype in ("webhook", "cron") and "scope" in raw:
        warnings.append(f"{at}.scope: {ttype} triggers do not watch messages; the scope is ignored.")
    return Trigger(**kw)


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
    front, body = split_topic(text)
    if front is None:
        errors.append(
            f"{where}: has no frontmatter; start the file with a '---' line, `type: topic`, "
            "`triggers:` ..., and a closing '---' line."
        )
        return None, errors, warnings
    if front == "" and body == "":
        errors.append(f"{where}: the frontmatter is not closed; add a line '---' after the last field.")
        return None, errors, warnings
    try:
        data = _load_yaml(front)
    except Exception as exc:  # yaml.YAMLError, kept generic so yaml stays a lazy import
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        errors.append(f"{where}: the frontmatter is not valid YAML ({first}); fix the line it names.")
        return None, errors, warnings
    if data is None:
        data = {}
    if not isinstance(data, dict):
        errors.append(
            f"{where}: the frontmatter must be a YAML mapping (key: value lines such as `type: topic`), "
            f"not a {type(data).__name__}."
        )
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
    if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", name):
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

    subs_raw = data.get("subscriptions") or []
    subs = _str_list(subs_raw)
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
    threshold = number("similarity_threshold", default_threshold, 0.0, 1.0, "between 0 and 1 (default 0.15)")
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


# ── loading a repo's topics ───────────────────────────────────────────────────────────
@dataclass(frozen=True)
class TopicSet:
    """The valid topics of a repo, the problems of the invalid ones, and a fingerprint of
    the folder (content hash of every file) for caches."""

    topics: tuple[Topic, ...]
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    fingerprint: str = ""

    def by_name(self) -> dict[str, Topic]:
        return {t.name: t for t in self.topics}

    def get(self, name: str) -> Topic | None:
        for t in self.topics:
            if t.name == name:
                return t
        return None


def topic_files(repo: "MemoryRepo") -> list[Path]:
    base = repo.topics_dir
    if not base.is_dir():
        return []
    return sorted(p for p in base.rglob("*.md") if p.is_file() and not p.name.startswith("."))


def topics_signature(repo: "MemoryRepo") -> tuple[tuple[str, int, int], ...]:
    """(path, mtime_ns, size) of every topic file: a cheap way to see that one changed."""
    sig = []
    for p in topic_files(repo):
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        sig.append((p.name, st.st_mtime_ns, st.st_size))
    return tuple(sig)


def load_topics(repo: "MemoryRepo", *, strict: bool = False) -> TopicSet:
    """Every topic under topics/. Invalid files are left out and reported in `.errors`
    (so one bad file does not silence every other watcher); with STRICT they raise."""
    try:
        default_threshold = repo.config.watchers.similarity_threshold
    except Exception:  # a broken config is reported by its own commands
        default_threshold = DEFAULT_SIMILARITY_THRESHOLD
    topics: list[Topic] = []
    errors: list[str] = []
    warnings: list[str] = []
    digest = hashlib.sha256()
    seen: dict[str, str] = {}
    for path in topic_files(repo):
        rel = path.relative_to(repo.root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:
            errors.append(f"{rel}: cannot be read as UTF-8 text ({exc}); re-save it as UTF-8.")
            continue
        digest.update(rel.encode() + b"\0" + text.encode("utf-8", "surrogateescape") + b"\0")
        topic, errs, warns = parse_topic(rel, text, root=repo.root, default_threshold=default_threshold)
        warnings.extend(warns)
        if topic is not None and topic.name in seen:
            errs = [f"{rel}: name {topic.name!r} is already used by {seen[topic.name]}; give it another name."]
            topic = None
        if topic is None:
            errors.extend(errs)
            continue
        seen[topic.name] = rel
        topics.append(topic)
    result = TopicSet(tuple(topics), tuple(errors), tuple(warnings), digest.hexdigest())
    if strict and errors:
        raise TopicError("Invalid topic files:\n  " + "\n  ".join(errors))
    return result


def load_topic(repo: "MemoryRepo", relpath: str | os.PathLike[str]) -> Topic:
    """One topic file, validated; raises TopicError naming every problem."""
    full = repo.resolve_inside(relpath, under="topics")
    rel = full.relative_to(repo.root).as_posix()
    if not full.is_file():
        raise TopicError(f"{rel} does not exist; list the topics with `autopoiesis topics list`.")
    topic, errors, _ = parse_topic(rel, full.read_text(encoding="utf-8"), root=repo.root,
                                   default_threshold=repo.config.watchers.similarity_threshold)
    if topic is None:
        raise TopicError("\n".join(errors))
    return topic


def people_names(repo: "MemoryRepo") -> tuple[str, ...]:
    """Names of the people in knowledge/people/ (frontmatter `name:`, else from the file
    name: david-feldhofer.md -> "david feldhofer"), lower-cased, plus each first name."""
    base = repo.knowledge_dir / "people"
    names: set[str] = set()
    if not base.is_dir():
        return ()
    for p in sorted(base.glob("*.md")):
        if p.name.startswith("_"):
            continue
        full = p.stem.replace("-", " ").replace("_", " ").strip().lower()
        try:
            head = p.read_text(encoding="utf-8")[:2000]
        except (OSError, UnicodeDecodeError):
            head = ""
        m = re.search(r"^name:\s*['\"]?([^'\"\n]+)", head, re.MULTILINE)
        if m:
            full = m.group(1).strip().lower()
        if full:
            names.add(full)
            first = full.split()[0]
            if len(first) >= 3:
                names.add(first)
    return tuple(sorted(names))


def iter_text_triggers(topic: Topic, direction: str) -> Iterable[tuple[int, Trigger]]:
    for i, t in enumerate(topic.triggers):
        if t.type in TEXT_TRIGGER_TYPES and t.applies_to(direction):
            yield i, t
