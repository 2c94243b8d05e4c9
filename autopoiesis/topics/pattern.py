"""Tier 1 (design §4.2): pattern matching, free and under a millisecond.

Every rule is compiled once, when the matcher is built:

* **pattern** and **keyword** triggers go into one RE2 set per direction, so a message is
  scanned once whatever the number of topics. RE2 runs in linear time: a pattern such as
  ``(a+)+$`` cannot hang the pipeline on a hostile message (patterns RE2 cannot run are
  refused when the topic is loaded, see `formats.topic.check_regex`). Patterns are
  case-insensitive (unless ``case_sensitive: true``) and multi-line (``^``/``$`` match at
  line boundaries, so ``^\\s*print `` finds a line of Python 2 in a longer reply).
* **glob** triggers match file paths: those passed in (tool-call arguments) and the
  path-like tokens of the text (``src/app.py``, ``> [tool:edit] README.md``).
* **code**: fenced blocks, indented blocks or code-shaped lines; the language comes from
  the fence tag, else from keyword signatures (see `detect_code`).
* **language**: natural-language identification with py3langid, whose model ships inside
  the wheel (no download); loaded on first use and only when a topic has a language
  trigger; texts under four words are not classified (too unreliable).
* **mention**: ``@handle`` and plain names (a trigger's ``names``, else the people of
  knowledge/people/).
* **url**: links, with GitHub pull requests and issues told apart.
* **sentiment**: a shift to urgency — shouted words, ``!!!``, urgent vocabulary — scored
  0..n against the trigger's ``min_score``.

Feature extractors look at the first `FEATURE_SCAN_CHARS` characters; the RE2 set scans
the whole message (linear, about 1 ms per MB).

Each trigger type's evaluation is one `TriggerEvaluator` in `EVALUATORS`. A new trigger
type registers its format in `autopoiesis.formats.topic.register_trigger_type` and, when
it looks at message text, its evaluation here::

    register_evaluator(TriggerEvaluator(
        "weekday", feature=lambda m: m.text.lower(),
        match=lambda trig, _, text: trig.option("day") if trig.option("day") in text else None))
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from autopoiesis.errors import TopicError
from autopoiesis.formats.topic import URL_KINDS, Topic, Trigger

FEATURE_SCAN_CHARS = 256 * 1024
LANGUAGE_SCAN_CHARS = 2000
DIRECTIONS = ("input", "output")

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.MULTILINE | re.DOTALL)
_INDENTED_LINE = re.compile(r"^(?:    |\t)\S", re.MULTILINE)
_CODE_LINE = re.compile(
    r"^[ \t]*(?:def |class \w|import \w|from [\w.]+ import|function\b|const |let |var |return\b|if \(|for \(|"
    r"#include|package \w|func \w|fn \w|pub fn|public |private |SELECT |INSERT |CREATE TABLE|\$ \w|#!/)"
    r"|[;{][ \t]*$|^[ \t]*\}",
    re.MULTILINE,
)
_LANG_SIGNS: dict[str, re.Pattern[str]] = {
    "python": re.compile(r"^[ \t]*(?:def \w+\(|class \w+[(:]|import \w|from [\w.]+ import|elif |print[ (]|self\.)", re.M),
    "javascript": re.compile(r"\b(?:const|let|var) \w+ =|=>|function\s*\w*\(|console\.log|require\(", re.M),
    "typescript": re.compile(r"\binterface \w+ \{|: (?:string|number|boolean)\b|\btype \w+ = ", re.M),
    "go": re.compile(r"^[ \t]*(?:package \w+|func \w+\(|func \(\w)|:= |fmt\.", re.M),
    "rust": re.compile(r"\bfn \w+\(|\blet mut\b|\bimpl\b|println!|::new\(", re.M),
    "java": re.compile(r"\bpublic (?:static )?(?:class|void)\b|System\.out\.", re.M),
    "c": re.compile(r"^#include\s*<|\bprintf\(|\bint main\(", re.M),
    "shell": re.compile(r"^[ \t]*(?:\$ |#!/bin/(?:ba)?sh)|\b(?:sudo|apt-get|chmod|grep|echo) ", re.M),
    "sql": re.compile(r"\b(?:SELECT\b[^\n]{1,200}?\bFROM|INSERT INTO|CREATE TABLE|UPDATE \w+ SET)\b", re.M | re.I),
    "html": re.compile(r"</?(?:div|span|html|body|p|a|script)\b[^>]*>", re.M),
}
_FENCE_ALIASES = {
    "py": "python", "python3": "python", "js": "javascript", "node": "javascript", "ts": "typescript",
    "golang": "go", "rs": "rust", "sh": "shell", "bash": "shell", "zsh": "shell", "console": "shell",
    "cpp": "c", "c++": "c", "h": "c", "postgres": "sql", "sqlite": "sql",
}
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'`)\]]+", re.IGNORECASE)
_GITHUB = re.compile(r"^(?:https?://)?(?:www\.)?github\.com/[\w.-]+/[\w.-]+/(pull|pulls|issues)/(\d+)", re.IGNORECASE)
_MENTION = re.compile(r"(?<![\w@.])@([A-Za-z][\w.-]{0,38}[\w])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_TOKEN_STRIP = "\"'`()[]{}<>,;:!?"
_EXCLAIM = re.compile(r"!{2,}")
URGENT_WORDS = frozenset(
    """urgent urgently asap immediately emergency critical outage down broken blocker blocking
    now!! hurry deadline escalate escalation sev1 p0 incident dringend sofort eilig notfall""".split()
)
# Shouted words that are usually acronyms, not shouting.
_ACRONYMS = frozenset("HTTP HTTPS JSON HTML YAML TODO FIXME NOTE README UUID UTF8 ASCII CSV SQL API URL REST GRPC".split())


@dataclass(frozen=True)
class PatternHit:
    """One trigger of one topic that fired on a message."""

    topic: str
    trigger_index: int
    trigger_type: str
    scope: str
    detail: str  # what matched: the text, the language, the URL, ...
    correction_hint: str | None = None


@dataclass(frozen=True)
class CodeInfo:
    has_code: bool
    languages: frozenset[str] = frozenset()
    fenced_blocks: int = 0


@dataclass(frozen=True)
class UrlInfo:
    url: str
    host: str
    kind: str  # github_pull | github_issue | github | other


def _host(url: str) -> str:
    rest = re.sub(r"^(?:https?://)", "", url, flags=re.IGNORECASE)
    host = rest.split("/", 1)[0].split(":", 1)[0].lower()
    return host[4:] if host.startswith("www.") else host


def detect_code(text: str) -> CodeInfo:
    """Whether TEXT holds code, and a guess of its languages: the fence tag when there is
    one, else keyword signatures (two or more distinct code-shaped lines count as code)."""
    text = text[:FEATURE_SCAN_CHARS]
    langs: set[str] = set()
    fenced = 0
    bodies: list[str] = []
    if "```" in text:
        for m in _FENCE.finditer(text):
            fenced += 1
            tag = m.group(1).lower()
            if tag:
                langs.add(_FENCE_ALIASES.get(tag, tag))
            bodies.append(m.group(2))
    indented = len(_INDENTED_LINE.findall(text)) >= 2
    code_lines = len(_CODE_LINE.findall(text))
    has_code = fenced > 0 or indented or code_lines >= 2
    if has_code and not langs:
        sample = "\n".join(bodies) if bodies else text
        scores = {lang: len(rx.findall(sample)) for lang, rx in _LANG_SIGNS.items()}
        best = max(scores.values()) if scores else 0
        if best:
            langs.update(lang for lang, s in scores.items() if s == best)
    return CodeInfo(has_code, frozenset(langs), fenced)


def find_urls(text: str) -> list[UrlInfo]:
    out = []
    for m in _URL.finditer(text[:FEATURE_SCAN_CHARS]):
        url = m.group(0).rstrip(".,;:!?")
        host = _host(url)
        g = _GITHUB.match(url)
        if g:
            kind = "github_issue" if g.group(1).lower() == "issues" else "github_pull"
        elif host == "github.com" or host.endswith(".github.com"):
            kind = "github"
        else:
            kind = "other"
        out.append(UrlInfo(url, host, kind))
    return out


def sentiment_score(text: str) -> tuple[int, list[str]]:
    """(score, signals) of urgency: +1 per urgent word (at most 2), +1 for '!!', +2 for
    '!!!' or more, +1 for two or more shouted words (four letters or more, all caps,
    not a known acronym)."""
    text = text[:FEATURE_SCAN_CHARS]
    signals: list[str] = []
    score = 0
    words = _WORD.findall(text)
    urgent = sorted({w.lower() for w in words if w.lower() in URGENT_WORDS})
    if urgent:
        score += min(2, len(urgent))
        signals.append("urgent words: " + ", ".join(urgent[:5]))
    bangs = max((len(m) for m in _EXCLAIM.findall(text)), default=0)
    if bangs >= 3:
        score += 2
        signals.append("'!!!'")
    elif bangs == 2:
        score += 1
        signals.append("'!!'")
    shouted = [w for w in words if len(w) >= 4 and w.isupper() and w not in _ACRONYMS]
    if len(shouted) >= 2 or (shouted and len(words) <= 3):
        score += 1
        signals.append("caps: " + " ".join(shouted[:5]))
    return score, signals


def find_paths(text: str, extra: Iterable[str] = ()) -> list[str]:
    """File paths seen in the message plus EXTRA (tool-call arguments). A token is a path
    when it has a '/' or ends in an extension; tokens are split on whitespace first so
    the scan stays linear whatever the text (no regex over unbounded tokens)."""
    found = list(extra)
    for tok in text[:FEATURE_SCAN_CHARS].split():
        if len(tok) > 300 or "://" in tok:
            continue
        tok = tok.strip(_TOKEN_STRIP).rstrip(".")
        if tok and ("/" in tok or _EXTENSION.search(tok)) and any(c.isalnum() for c in tok):
            found.append(tok)
    return list(dict.fromkeys(p for p in found if p))


@lru_cache(maxsize=1)
def _langid() -> Any:  # pragma: no cover - trivial
    import py3langid

    return py3langid


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of TEXT's natural language (py3langid, offline), or None for texts
    too short to tell (under four words) or mostly code."""
    sample = text[:LANGUAGE_SCAN_CHARS]
    if "```" in sample:
        sample = re.sub(r"```.*?(?:```|\Z)", " ", sample, flags=re.DOTALL)
    sample = _URL.sub(" ", sample)
    if len(_WORD.findall(sample)) < 4:
        return None
    lang, _ = _langid().classify(sample)
    return lang


def _re2_options() -> Any:
    import re2

    opts = re2.Options()
    opts.log_errors = False
    return opts


# ── how tier 1 evaluates each trigger type ─────────────────────────────────────────────
@dataclass(frozen=True)
class Message:
    """What a feature extractor sees: the text, the file paths of its tool calls, and the
    regex of the people of knowledge/people/ (None when there are none)."""

    text: str
    paths: Sequence[str] = ()
    people: re.Pattern[str] | None = None


@dataclass(frozen=True)
class TriggerEvaluator:
    """How tier 1 evaluates one trigger type (the format's side is
    `autopoiesis.formats.topic.TriggerType`). Either

    * ``re2_source(trigger)`` gives an RE2 pattern: it joins the one RE2 set per direction,
      so a message is scanned once however many topics there are; or
    * ``feature(message)`` extracts what this type looks at, once per message for every
      trigger of the type; ``prepare(trigger)`` compiles a trigger once when the matcher is
      built; ``match(trigger, prepared, feature)`` says what matched, or None.
    """

    type: str
    re2_source: Callable[[Trigger], str | None] | None = None
    feature: Callable[[Message], Any] | None = None
    prepare: Callable[[Trigger], Any] | None = None
    match: Callable[[Trigger, Any, Any], str | None] | None = None


EVALUATORS: dict[str, TriggerEvaluator] = {}


def register_evaluator(evaluator: TriggerEvaluator) -> TriggerEvaluator:
    """Add EVALUATOR (replacing one for the same type). Returns it."""
    if evaluator.re2_source is None and (evaluator.feature is None or evaluator.match is None):
        raise ValueError(f"evaluator for {evaluator.type!r}: give re2_source, or feature and match")
    EVALUATORS[evaluator.type] = evaluator
    return evaluator


def _pattern_source(trig: Trigger) -> str | None:
    if trig.match is None:
        return None
    return ("(?m)" if trig.case_sensitive else "(?im)") + trig.match


def _keyword_source(trig: Trigger) -> str | None:
    if not trig.words:
        return None
    import re2

    alt = "|".join(re2.escape(w).replace(r"\ ", r"\s+") for w in sorted(trig.words, key=lambda w: (-len(w), w)))
    return rf"(?i)\b(?:{alt})\b"


def _match_code(trig: Trigger, _: Any, info: CodeInfo) -> str | None:
    if info.has_code and (not trig.languages or info.languages & set(trig.languages)):
        return ", ".join(sorted(info.languages)) or "code"
    return None


def _match_language(trig: Trigger, _: Any, lang: str | None) -> str | None:
    return lang if lang is not None and lang in trig.languages else None


def _match_url(trig: Trigger, _: Any, urls: list[UrlInfo]) -> str | None:
    kind = trig.match or "any"
    for u in urls:
        if (kind == "any" or u.kind == kind or (kind == "github" and u.kind.startswith("github"))
                or (kind not in URL_KINDS and (u.host == kind or u.host.endswith("." + kind)))):
            return u.url
    return None


def _match_sentiment(trig: Trigger, _: Any, scored: tuple[int, list[str]]) -> str | None:
    score, signals = scored
    return f"score {score}: " + "; ".join(signals) if score >= trig.min_score else None


def _prepare_glob(trig: Trigger) -> list[re.Pattern[str]]:
    return [re.compile(fnmatch.translate(g), re.IGNORECASE) for g in trig.globs]


def _match_glob(trig: Trigger, rxs: list[re.Pattern[str]], found: list[str]) -> str | None:
    for p in found:
        base = p.rsplit("/", 1)[-1]
        if any(rx.match(p) or rx.match(base) for rx in rxs):
            return p
    return None


def _mention_feature(msg: Message) -> tuple[set[str], set[str], str]:
    head = msg.text[:FEATURE_SCAN_CHARS]
    handles = {m.group(1).lower() for m in _MENTION.finditer(head)}
    people = {m.group(0).lower() for m in msg.people.finditer(head)} if msg.people else set()
    return handles, people, head


def _match_mention(trig: Trigger, rx: re.Pattern[str] | None, feature: tuple[set[str], set[str], str]) -> str | None:
    handles, people, head = feature
    if rx is not None:
        m = rx.search(head)
        return m.group(0) if m else None
    if handles:
        return "@" + sorted(handles)[0]
    if people:
        return sorted(people)[0]
    return None


for _evaluator in (
    TriggerEvaluator("pattern", re2_source=_pattern_source),
    TriggerEvaluator("keyword", re2_source=_keyword_source),
    TriggerEvaluator("glob", feature=lambda m: find_paths(m.text, m.paths), prepare=_prepare_glob, match=_match_glob),
    TriggerEvaluator("code", feature=lambda m: detect_code(m.text), match=_match_code),
    TriggerEvaluator("language", feature=lambda m: detect_language(m.text), match=_match_language),
    TriggerEvaluator("mention", feature=_mention_feature, prepare=lambda t: _names_regex(t.names), match=_match_mention),
    TriggerEvaluator("url", feature=lambda m: find_urls(m.text), match=_match_url),
    TriggerEvaluator("sentiment", feature=lambda m: sentiment_score(m.text), match=_match_sentiment),
):
    register_evaluator(_evaluator)


@dataclass
class _Rules:
    """The compiled rules of one direction."""

    set_index: list[tuple[str, int, Trigger]] = field(default_factory=list)
    re2_set: Any = None
    singles: dict[int, Any] = field(default_factory=dict)  # set index -> compiled pattern
    # (topic, trigger index, trigger, its evaluator, what prepare() made of it)
    others: list[tuple[str, int, Trigger, TriggerEvaluator, Any]] = field(default_factory=list)


class PatternMatcher:
    """Tier 1: zero-cost pattern matching against topic triggers (design §4.2).

    >>> m = PatternMatcher(load_topics(repo).topics)
    >>> m.match("Can you review the PR?")
    {'github-pr-review'}
    """

    def __init__(self, topics: Sequence[Topic], people: Sequence[str] = ()):
        import re2

        self.topics = tuple(topics)
        self.people = tuple(p.lower() for p in people)
        self._people_rx = _names_regex(self.people)
        opts = _re2_options()
        self._rules: dict[str, _Rules] = {}
        for direction in DIRECTIONS:
            rules = _Rules()
            patterns: list[str] = []
            for topic in self.topics:
                for idx, trig in topic.text_triggers(direction):
                    ev = EVALUATORS.get(trig.type)
                    if ev is None:
                        raise TopicError(
                            f"{topic.path}: trigger type {trig.type!r} has no tier-1 evaluator; register one "
                            "with autopoiesis.topics.pattern.register_evaluator."
                        )
                    if ev.re2_source is not None:
                        src = ev.re2_source(trig)
                        if src is not None:
                            rules.set_index.append((topic.name, idx, trig))
                            patterns.append(src)
                        continue
                    prepared = ev.prepare(trig) if ev.prepare is not None else None
                    rules.others.append((topic.name, idx, trig, ev, prepared))
            if patterns:
                s = re2.Set.SearchSet(opts)
                for src in patterns:
                    s.Add(src)
                s.Compile()
                rules.re2_set = s
                rules.singles = {i: re2.compile(src, opts) for i, src in enumerate(patterns)}
            self._rules[direction] = rules

    def match(self, text: str, direction: str = "input", paths: Sequence[str] = ()) -> set[str]:
        """Names of the topics whose triggers fire on TEXT (design §9.2)."""
        return {h.topic for h in self.hits(text, direction, paths, details=False)}

    def hits(self, text: str, direction: str = "input", paths: Sequence[str] = (), *,
             details: bool = True) -> list[PatternHit]:
        """Every trigger that fires on TEXT travelling in DIRECTION, in topic order.
        PATHS are file paths seen in tool calls (for glob triggers)."""
        if direction not in self._rules:
            raise ValueError(f"direction must be 'input' or 'output', not {direction!r}")
        rules = self._rules[direction]
        out: list[PatternHit] = []
        if rules.re2_set is not None:
            matched = rules.re2_set.Match(text) or []
            for i in sorted(matched):
                name, idx, trig = rules.set_index[i]
                detail = ""
                if details:
                    m = rules.singles[i].search(text)
                    detail = m.group(0)[:80] if m else ""
                out.append(PatternHit(name, idx, trig.type, trig.scope, detail, trig.correction_hint))
        if rules.others:
            out.extend(self._feature_hits(Message(text, paths, self._people_rx), rules))
        return out

    def _feature_hits(self, message: Message, rules: _Rules) -> list[PatternHit]:
        features: dict[str, Any] = {}
        out: list[PatternHit] = []
        for name, idx, trig, ev, prepared in rules.others:
            if trig.type not in features:
                features[trig.type] = ev.feature(message)  # type: ignore[misc]
            detail = ev.match(trig, prepared, features[trig.type])  # type: ignore[misc]
            if detail is not None:
                out.append(PatternHit(name, idx, trig.type, trig.scope, detail, trig.correction_hint))
        return out


def _names_regex(names: Iterable[str]) -> re.Pattern[str] | None:
    names = sorted({n.strip().lower() for n in names if n.strip()}, key=lambda n: (-len(n), n))
    if not names:
        return None
    alt = "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in names)
    # '@'-handle or a plain name, as whole words: an alternation of literals, linear time.
    return re.compile(rf"(?<![\w@])@?(?:{alt})(?![\w])", re.IGNORECASE)
