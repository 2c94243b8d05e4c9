"""Extractors (design §8.3): a registry of named, versioned extractors.

Each extractor has two flavours that produce the same kind of output, a list of
KnowledgeChange:

* **offline**: honest heuristics that need no model: cue phrases ("we decided", "lesson
  learned", "procedure for X:"), structure (numbered lists, speaker names, paths the
  session touched) and extractive summaries (sentences quoted from the transcript, never
  invented). They miss what is said without a cue; they do not hallucinate.
* **llm**: a prompt kept in a versioned file (`prompts/NAME.vN.md`), a JSON reply
  validated against the extractor's shape (one repair attempt by the client), mapped to
  changes. Replies are data: the writer's guard still decides what may be written.

An extractor declares the paths and actions it may write (its WritePolicy); the writer
refuses anything else. Bump `version` when the logic or the prompt changes: the
extraction state is keyed on name@version, so every transcript is reprocessed.

    >>> reg = default_registry()
    >>> [e.key for e in reg.select(["decisions", "lessons"])]
    ['decisions@1', 'lessons@1']
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from autopoiesis.errors import UnknownExtractorError
from autopoiesis.formats import transcript as tf
from autopoiesis.lifecycle.writer import KnowledgeChange, Provenance, WritePolicy
from autopoiesis.core.paths import MEMORY_FILE

PROMPTS_DIR = Path(__file__).parent / "prompts"
PROMPT_TRANSCRIPT_CHARS = 12000
ACTIVE_PROJECTS = "knowledge/projects/_active.md"
PEOPLE_INDEX = "knowledge/people/_index.md"


# ── the input ───────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Sentence:
    text: str
    at: datetime
    role: str
    speaker: str | None


@dataclass(frozen=True)
class SourceTranscript:
    """A transcript to extract from: its repo-relative path, content hash, parsed form."""

    path: str
    content_hash: str
    transcript: tf.Transcript
    text: str = field(repr=False, default="")

    @classmethod
    def from_text(cls, path: str, text: str) -> "SourceTranscript":
        return cls(path, content_hash(text), tf.parse(text, path), text)

    @property
    def started(self) -> datetime:
        return tf.utc(self.transcript.meta.started)

    @property
    def session_id(self) -> str:
        return self.transcript.meta.session_id

    @cached_property
    def sentences(self) -> tuple[Sentence, ...]:
        out: list[Sentence] = []
        for turn in self.transcript.turns:
            if turn.role == "system":
                continue
            for item in turn.items:
                if isinstance(item, tf.Text):
                    for s in split_sentences(item.content):
                        out.append(Sentence(s, tf.utc(turn.time), turn.role, turn.name))
        return tuple(out)

    def provenance(self, at: datetime | None, producer: str) -> Provenance:
        return Provenance(self.path, at or self.started, producer, self.session_id)

    def locate(self, text: str) -> datetime:
        """The time of the turn that best matches TEXT (word overlap); for LLM answers,
        which do not say where in the transcript a fact was said."""
        want = set(_words(text))
        best, best_score = self.started, 0.0
        for turn in self.transcript.turns:
            words = set(_words(turn.text))
            if not words or not want:
                continue
            score = len(want & words) / len(want)
            if score > best_score:
                best, best_score = tf.utc(turn.time), score
        return best


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(])|\n\s*\n|\n(?=\s*(?:[-*]|\d+[.)])\s)")
_LIST_MARK = re.compile(r"^\s*(?:[-*]|\d+[.)])\s+")


def split_sentences(text: str) -> list[str]:
    out = []
    for part in _SPLIT.split(text):
        s = " ".join(_LIST_MARK.sub("", part).split())
        if len(s) >= 3:
            out.append(s)
    return out


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2]


def _clean(text: str, prefix: re.Pattern[str] | None = None, limit: int = 300) -> str:
    if prefix is not None:
        text = prefix.sub("", text, count=1)
    text = text.strip(" \t:-—,;")
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0] + "…"
    return text


def slug(text: str, max_len: int = 40) -> str:
    return tf.slugify(text, max_len)


# ── shared heuristics ───────────────────────────────────────────────────────────────
_PROJECT_PATH = re.compile(r"knowledge/projects/([a-z0-9][a-z0-9-]*)/")
_PROJECT_WORD = re.compile(r"\b(?:the\s+([A-Za-z][\w-]{2,30})\s+project|project\s+([A-Z][\w-]{2,30}))\b")
_NOT_PROJECT = {"this", "that", "the", "new", "old", "our", "whole", "same", "other", "next", "general"}


def detect_project(src: SourceTranscript) -> str:
    """The project a session is about: a knowledge/projects/SLUG/ path it touched, else
    "the X project" / "project X" in its text, else "general"."""
    counts: dict[str, int] = {}
    for turn in src.transcript.turns:
        for item in turn.items:
            blob = ""
            if isinstance(item, tf.KnowledgeOp):
                blob = item.path
            elif isinstance(item, tf.ToolCall):
                blob = f"{item.args} {item.result or ''}"
            elif isinstance(item, tf.Text):
                blob = item.content
            for m in _PROJECT_PATH.finditer(blob):
                counts[m.group(1)] = counts.get(m.group(1), 0) + 2
            if isinstance(item, tf.Text):
                for m in _PROJECT_WORD.finditer(blob):
                    name = (m.group(1) or m.group(2)).lower()
                    if name not in _NOT_PROJECT:
                        counts[slug(name)] = counts.get(slug(name), 0) + 1
    counts.pop("", None)
    if not counts:
        return "general"
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def journal_topic(src: SourceTranscript, project: str) -> str:
    if project != "general":
        return project
    meta = src.transcript.meta
    for cand in (*meta.tags, meta.channel or ""):
        if cand and slug(cand):
            return slug(cand)
    return "general"


# ── one extractor ───────────────────────────────────────────────────────────────────
OfflineFn = Callable[[SourceTranscript, str], list[KnowledgeChange]]
LLMMapFn = Callable[[Any, SourceTranscript, str], list[KnowledgeChange]]


@dataclass(frozen=True)
class Extractor:
    """A named, versioned extractor with an offline and an LLM flavour."""

    name: str
    version: int
    description: str
    paths: tuple[str, ...]
    actions: frozenset[str]
    offline: OfflineFn
    from_llm: LLMMapFn | None = None
    validate_reply: Callable[[Any], None] | None = None
    prompt_file: str | None = None

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def policy(self) -> WritePolicy:
        return WritePolicy(self.key, self.paths, self.actions)

    def prompt_template(self) -> str:
        if not self.prompt_file:
            raise UnknownExtractorError(f"extractor {self.key} has no LLM flavour (no prompt file).")
        return (PROMPTS_DIR / self.prompt_file).read_text(encoding="utf-8")

    def prompt(self, src: SourceTranscript) -> str:
        body = src.text.split("\n---\n", 1)[-1] if src.text else tf.render(src.transcript)
        if len(body) > PROMPT_TRANSCRIPT_CHARS:
            half = PROMPT_TRANSCRIPT_CHARS // 2
            body = body[:half] + "\n[... middle of the transcript omitted ...]\n" + body[-half:]
        return (
            self.prompt_template()
            .replace("{date}", src.started.strftime("%Y-%m-%d"))
            .replace("{title}", src.transcript.title)
            .replace("{transcript}", body)
        )

    def run_offline(self, src: SourceTranscript) -> list[KnowledgeChange]:
        return self.offline(src, self.key)

    def run_llm(self, src: SourceTranscript, llm: Any, model: str | None = None) -> list[KnowledgeChange]:
        """The LLM flavour. Raises LLMUnavailableError / LLMResponseError (the caller
        queues a retry)."""
        if self.from_llm is None:
            return self.run_offline(src)
        res = llm.complete_json("extract", self.prompt(src), schema=self.validate_reply, model=model, max_tokens=1024)
        return self.from_llm(res.data, src, self.key)


# ── reply shapes ────────────────────────────────────────────────────────────────────
def reply_items(data: Any, field_name: str) -> list[dict[str, Any]]:
    """The design's reply: a JSON array of objects, or an object whose single key holds
    that array ({} means none). Anything else raises ValueError (-> repair attempt)."""
    if isinstance(data, dict):
        if not data:
            return []
        if len(data) != 1:
            raise ValueError(f"expected an array of objects, or an object with one key holding it; got keys {sorted(data)}")
        data = next(iter(data.values()))
    if not isinstance(data, list):
        raise ValueError("expected a JSON array of objects")
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"item {i} is not an object")
        if not isinstance(item.get(field_name), str) or not item[field_name].strip():
            raise ValueError(f"item {i} lacks a non-empty string '{field_name}'")
        for k, v in item.items():
            if v is not None and not isinstance(v, (str, list)):
                raise ValueError(f"item {i}: '{k}' must be a string")
    return data


_PATHLIKE = re.compile(r"[/\\]|\.\.|^\.|\x00")


def _checked_name(value: Any, what: str, i: int) -> str:
    """A name that becomes a path component: refused when it looks like a path, so a reply
    cannot steer a write outside its folder (the writer's guard is the second line)."""
    text = str(value or "").strip()
    if _PATHLIKE.search(text):
        raise ValueError(f"item {i}: '{what}' {text!r} looks like a path; give a plain name")
    return text


def _validator(field_name: str, names: Sequence[str] = ()) -> Callable[[Any], None]:
    def check(data: Any) -> None:
        for i, item in enumerate(reply_items(data, field_name)):
            for n in names:
                if item.get(n) is not None:
                    if not isinstance(item[n], str):
                        raise ValueError(f"item {i}: '{n}' must be a string")
                    _checked_name(item[n], n, i)

    return check


# ── decisions ───────────────────────────────────────────────────────────────────────
_DECISION_CUE = re.compile(
    r"\b(?:we|i|they|the team)\s+(?:have\s+|'ve\s+)?(?:decided|agreed|chose|settled on|are going with|will go with|went with)\b"
    r"|\bdecision(?:\s+is|:)|\blet'?s go with\b|\bgoing forward,|\bfrom now on\b"
    r"|\bwe(?:'ll| will) (?:use|switch|adopt|move|standardi[sz]e)\b"
    r"|\b(?:switch(?:ed)?|migrat(?:e|ed)|mov(?:e|ed)) from \S.{0,40}? to\b",
    re.IGNORECASE,
)
_DECISION_PREFIX = re.compile(
    r"^(?:ok(?:ay)?[,.]?\s+|so[,]?\s+)?(?:we|i|they|the team)\s+(?:have\s+)?(?:decided|agreed)\s*(?:that|on|to|:)?\s*"
    r"|^(?:the\s+)?decision(?:\s+is)?\s*:?\s*",
    re.IGNORECASE,
)
_SUPERSEDE_CUE = re.compile(
    r"\b(?:switch(?:ed|ing)?|migrat\w*|mov(?:e|ed|ing)|chang\w*) from (?:the\s+)?(?P<old>[\w.+#-]+(?: [\w.+#-]+)?)\s+to\b"
    r"|\binstead of (?:the\s+)?(?P<old2>[\w.+#-]+)|\bno longer (?:use|using|uses) (?:the\s+)?(?P<old3>[\w.+#-]+)",
    re.IGNORECASE,
)


def _supersede_target(sentence: str) -> str | None:
    m = _SUPERSEDE_CUE.search(sentence)
    if not m:
        return None
    return m.group("old") or m.group("old2") or m.group("old3")


def _decision_change(src: SourceTranscript, key: str, text: str, context: str, project: str, at: datetime,
                     target: str | None) -> list[KnowledgeChange]:
    content = text + (f" — {context}" if context and context.lower() not in text.lower() else "")
    prov = src.provenance(at, key)
    action = "supersede" if target else "append"
    if project and project != "general":
        changes = [KnowledgeChange(f"knowledge/projects/{project}/context.md", action, "Key Decisions", content, prov, target=target)]
        changes.append(KnowledgeChange(ACTIVE_PROJECTS, "append", "Active Projects", f"**{project}** — {text}",
                                       prov, key=f"**{project}**", dated=False, section_level=1))
        return changes
    return [KnowledgeChange(MEMORY_FILE, action, "Key Decisions", content, prov, target=target)]


def decisions_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    project = detect_project(src)
    out: list[KnowledgeChange] = []
    for s in src.sentences:
        if s.text.endswith("?") or not _DECISION_CUE.search(s.text):
            continue
        text = _clean(s.text, _DECISION_PREFIX)
        if len(_words(text)) < 3:
            continue
        out += _decision_change(src, key, text, "", project, s.at, _supersede_target(s.text))
    return out


def decisions_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for i, d in enumerate(reply_items(data, "decision")):
        project = slug(_checked_name(d.get("project") or "general", "project", i)) or "general"
        decision = _clean(str(d["decision"]))
        context = " ".join(str(d.get("context") or "").split()).strip(" .")[:200]
        out += _decision_change(src, key, decision, context, project, src.locate(decision), _supersede_target(decision))
    return out


# ── lessons ─────────────────────────────────────────────────────────────────────────
_LESSON_CUE = re.compile(
    r"\blessons? learned\b|\blesson:|\btakeaway\b|\bnote to self\b|\bnext time\b|\bin the future\b"
    r"|\bwe should have\b|\bshould always\b|\bmake sure (?:to|that)\b|\bthe root cause was\b|\bnever again\b",
    re.IGNORECASE,
)
_LESSON_PREFIX = re.compile(
    r"^.*?\b(?:lessons? learned|lesson|takeaway|note to self)\b\s*(?:is|was)?\s*[:,-]?\s*", re.IGNORECASE
)


def lessons_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for s in src.sentences:
        if s.text.endswith("?") or not _LESSON_CUE.search(s.text):
            continue
        text = _clean(s.text, _LESSON_PREFIX if _LESSON_PREFIX.match(s.text) else None)
        if len(_words(text)) < 3:
            continue
        out.append(KnowledgeChange(MEMORY_FILE, "append", "Lessons Learned", text, src.provenance(s.at, key)))
    return out


def lessons_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    return [
        KnowledgeChange(MEMORY_FILE, "append", "Lessons Learned", _clean(str(d["lesson"])),
                        src.provenance(src.locate(str(d["lesson"])), key))
        for d in reply_items(data, "lesson")
    ]


# ── people ──────────────────────────────────────────────────────────────────────────
_NAME = re.compile(r"\b([A-Z][a-z]+(?:-[A-Z][a-z]+)?(?: (?:van |de |von )?[A-Z][a-z]+(?:-[A-Z][a-z]+)?){1,2})\b")
_NOT_NAME_WORDS = set(
    """The This That These Those There Here When Where What Which Who Why How And But Or If Then So Also
    Let Lets Good Great Thanks Thank Please Okay Yes No Not All Any Some Each Every Our Your Their His Her
    Its We You They She He I My Me Us It Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
    February March April May June July August September October November December Today Tomorrow Yesterday
    Key Decisions Lessons Learned Active Context Core Memory Pull Request Merge Production Release Error
    Errors Procedure Project Projects Team Python Git GitHub Docker Kubernetes Linux Mac Windows SQLite
    Markdown Google Amazon Microsoft Apple Slack Email Chrome Firefox Agreed Sure Done Next Last First New
    Old Open Close Run Use After Before During Since Until Rolled Roll Back Lesson Note Always Never Two
    One Three Four Five Ask Tell Ping Maybe Hi Hello Dear Best Regards Sincerely Dr Mr Mrs Ms Prof""".split()
)
_PERSON_CUE = re.compile(
    r"\b(?:owns|own|prefers|prefer|is|was|works|worked|leads|manages|maintains|said|says|asked|asks|wants|likes|runs|"
    r"handles|joined|reviewed|reviews|will|wrote|is responsible|reports to|from)\b|\b(?:ask|tell|ping|email|call|with|cc|by|met)\s+$",
    re.IGNORECASE,
)


def _names_in(sentence: str) -> list[tuple[str, int, int]]:
    out = []
    for m in _NAME.finditer(sentence):
        words = re.split(r"[ -]", m.group(1))
        if any(w in _NOT_NAME_WORDS for w in words):
            continue
        out.append((m.group(1), m.start(), m.end()))
    return out


def people_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for s in src.sentences:
        for name, start, end in _names_in(s.text):
            after, before = s.text[end:end + 40], s.text[max(0, start - 12):start]
            if not (_PERSON_CUE.match(after.strip() + " ") or _PERSON_CUE.search(before)):
                continue
            out += _person_changes(src, key, name, _clean(s.text), s.at)
    for turn in src.transcript.turns:  # named speakers of multi-party sessions
        if turn.name and _names_in(turn.name):
            out += _person_changes(src, key, turn.name, f"Took part in “{src.transcript.title}”", tf.utc(turn.time))
    return out


def _person_changes(src: SourceTranscript, key: str, name: str, fact: str, at: datetime) -> list[KnowledgeChange]:
    s = slug(name)
    if not s:
        return []
    prov = src.provenance(at, key)
    return [
        KnowledgeChange(f"knowledge/people/{s}.md", "append", "Context", fact, prov),
        KnowledgeChange(PEOPLE_INDEX, "append", "People", f"**{name}** — {fact}", prov, key=f"**{name.lower()}**",
                        dated=False, section_level=1),
    ]


def people_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for i, d in enumerate(reply_items(data, "name")):
        name = _checked_name(d["name"], "name", i)
        fact = _clean(str(d.get("fact") or "")) or f"Mentioned in “{src.transcript.title}”"
        out += _person_changes(src, key, name, fact, src.locate(f"{name} {fact}"))
    return out


# ── procedures ──────────────────────────────────────────────────────────────────────
_PROC_INLINE = re.compile(
    r"\b(?:procedure|process|steps|checklist|runbook|recipe|how)\s+(?:for|to)\s+(?P<what>[^:.]{3,60}?)\s*:\s*(?P<steps>\S.+)",
    re.IGNORECASE,
)
_PROC_INTRO = re.compile(r"\b(?:procedure|process|steps|checklist|runbook|how to)\b(?:\s+(?:for|to))?\s*(?P<what>[^:]{0,60}):\s*$", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.+)$")


def procedures_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for turn in src.transcript.turns:
        for item in turn.items:
            if not isinstance(item, tf.Text):
                continue
            at = tf.utc(turn.time)
            for s in split_sentences(item.content):
                m = _PROC_INLINE.search(s)
                if m:
                    out.append(_procedure_change(src, key, m["what"], m["steps"], at))
            lines = item.content.split("\n")
            for i, line in enumerate(lines):
                m = _PROC_INTRO.search(line)
                if not m:
                    continue
                steps = []
                for nxt in lines[i + 1:]:
                    if not nxt.strip() and not steps:
                        continue
                    n = _NUMBERED.match(nxt)
                    if not n:
                        break
                    steps.append(n.group(1).strip())
                if len(steps) >= 2:
                    what = m["what"].strip() or src.transcript.title
                    out.append(_procedure_change(src, key, what, "; ".join(steps), at))
    return out


def _procedure_change(src: SourceTranscript, key: str, what: str, steps: str, at: datetime) -> KnowledgeChange:
    what = re.sub(r"^(?:the|a|an)\s+", "", what.strip(), flags=re.IGNORECASE)
    return KnowledgeChange(f"knowledge/procedures/{slug(what) or 'general'}.md", "append", "Steps",
                           _clean(steps.rstrip(".")) + ".", src.provenance(at, key))


def procedures_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for i, d in enumerate(reply_items(data, "name")):
        name = _checked_name(d["name"], "name", i)
        steps = d.get("steps") or ""
        if isinstance(steps, list):
            steps = "; ".join(str(x) for x in steps)
        if str(steps).strip():
            out.append(_procedure_change(src, key, name, str(steps), src.locate(f"{name} {steps}")))
    return out


# ── facts ───────────────────────────────────────────────────────────────────────────
_FACT_CUE = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|fyi|for the record|for reference|good to know)\b(?:\s+that)?\s*[:,]?\s*"
    r"|\b(?:is|are) (?:located|hosted|deployed|running|stored|kept) (?:at|on|in)\b"
    r"|\b(?:url|endpoint|port|host|hostname|address|version|deadline|budget|limit) (?:of|for) [\w .-]{2,40} (?:is|are)\b"
    r"|\bruns on\b|\blives (?:at|in)\b",
    re.IGNORECASE,
)
_FACT_PREFIX = re.compile(r"^(?:please\s+)?(?:remember|note|keep in mind|fyi|for the record|for reference|good to know)\b(?:\s+that)?\s*[:,]?\s*", re.IGNORECASE)


def facts_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    topic = detect_project(src)
    out = []
    for s in src.sentences:
        if s.text.endswith("?") or not _FACT_CUE.search(s.text):
            continue
        text = _clean(s.text, _FACT_PREFIX)
        if len(_words(text)) < 3:
            continue
        out.append(KnowledgeChange(f"knowledge/reference/{topic}.md", "append", "Facts", text, src.provenance(s.at, key)))
    return out


def facts_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out = []
    for i, d in enumerate(reply_items(data, "fact")):
        topic = slug(_checked_name(d.get("topic") or "general", "topic", i)) or "general"
        fact = _clean(str(d["fact"]))
        out.append(KnowledgeChange(f"knowledge/reference/{topic}.md", "append", "Facts", fact, src.provenance(src.locate(fact), key)))
    return out


# ── journal ─────────────────────────────────────────────────────────────────────────
def journal_path(src: SourceTranscript) -> str:
    return f"knowledge/journal/{src.started.strftime('%Y-%m-%d')}.md"


def journal_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """An extractive session summary: what was asked, what was decided or learned."""
    path = journal_path(src)
    topic = journal_topic(src, detect_project(src))
    first_user = next((s for s in src.sentences if s.role == "user"), None) or (src.sentences[0] if src.sentences else None)
    t = src.transcript
    tools = sum(isinstance(i, tf.ToolCall) for turn in t.turns for i in turn.items)
    asked = ""
    if first_user is not None:  # the opening request, a sentence or two of it
        same = [s.text for s in src.sentences if s.at == first_user.at and s.role == first_user.role]
        for part in same:
            asked = f"{asked} {part}".strip()
            if len(asked) >= 60:
                break
    summary = (f"{t.meta.topic}: " if t.meta.topic else "") + (_clean(asked, limit=160) if asked else t.title)
    summary += f" ({len(t.turns)} turns" + (f", {tools} tool calls)" if tools else ")")
    mk = lambda text, at: KnowledgeChange(path, "append", topic, text, src.provenance(at, key), dated=False, section_level=3)  # noqa: E731
    out = [mk(summary, first_user.at if first_user else src.started)]
    picked = 0
    for s in src.sentences:
        if picked >= 3:
            break
        if _DECISION_CUE.search(s.text) and not s.text.endswith("?"):
            out.append(mk("Decided: " + _clean(s.text, _DECISION_PREFIX, 200), s.at))
            picked += 1
        elif _LESSON_CUE.search(s.text) and not s.text.endswith("?"):
            text = _clean(s.text, _LESSON_PREFIX if _LESSON_PREFIX.match(s.text) else None, 200)
            out.append(mk("Lesson: " + text, s.at))
            picked += 1
    return out


def journal_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    path = journal_path(src)
    out = []
    for i, d in enumerate(reply_items(data, "bullet")):
        topic = slug(_checked_name(d.get("topic") or "general", "topic", i)) or "general"
        text = _clean(str(d["bullet"]), limit=240)
        out.append(KnowledgeChange(path, "append", topic, text, src.provenance(src.locate(text), key), dated=False, section_level=3))
    return out


# ── the registry ────────────────────────────────────────────────────────────────────
class ExtractorRegistry:
    """Extractors by name. An instance, not a module global: tests and replays build their
    own (e.g. to add an experimental extractor) without touching anyone else's."""

    def __init__(self, extractors: Iterable[Extractor] = ()):
        self._by_name: dict[str, Extractor] = {}
        for e in extractors:
            self.register(e)

    def register(self, extractor: Extractor, *, replace: bool = False) -> None:
        if extractor.name in self._by_name and not replace:
            raise ValueError(f"an extractor named {extractor.name!r} is already registered; pass replace=True")
        self._by_name[extractor.name] = extractor

    def names(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str) -> Extractor:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownExtractorError(
                f"No extractor named {name!r}. Known extractors: {', '.join(self._by_name)}."
            ) from None

    def select(self, names: Sequence[str] | None = None) -> list[Extractor]:
        if not names:
            return list(self._by_name.values())
        return [self.get(n.strip()) for n in names if n.strip()]


def default_registry() -> ExtractorRegistry:
    """A fresh registry holding the six built-in extractors of design §8.3."""
    project_paths = ("knowledge/projects/*/context.md", ACTIVE_PROJECTS, MEMORY_FILE)
    return ExtractorRegistry([
        Extractor("decisions", 1, "decisions -> projects/SLUG/context.md (Key Decisions), or MEMORY.md for general ones",
                  project_paths, frozenset({"append", "supersede"}), decisions_offline, decisions_llm,
                  _validator("decision", ("project",)), "decisions.v1.md"),
        Extractor("lessons", 1, "lessons learned -> MEMORY.md (Lessons Learned)", (MEMORY_FILE,), frozenset({"append"}),
                  lessons_offline, lessons_llm, _validator("lesson"), "lessons.v1.md"),
        Extractor("people", 1, "people and what was said about them -> people/SLUG.md and people/_index.md",
                  ("knowledge/people/*.md",), frozenset({"append"}), people_offline, people_llm,
                  _validator("name", ("name",)), "people.v1.md"),
        Extractor("procedures", 1, "how-to steps -> procedures/SLUG.md", ("knowledge/procedures/*.md",),
                  frozenset({"append"}), procedures_offline, procedures_llm, _validator("name", ("name",)), "procedures.v1.md"),
        Extractor("facts", 1, "reference facts -> reference/TOPIC.md", ("knowledge/reference/*.md",), frozenset({"append"}),
                  facts_offline, facts_llm, _validator("fact", ("topic",)), "facts.v1.md"),
        Extractor("journal", 1, "a summary of the session -> journal/YYYY-MM-DD.md", ("knowledge/journal/*.md",),
                  frozenset({"append"}), journal_offline, journal_llm, _validator("bullet", ("topic",)), "journal.v1.md"),
    ])


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


__all__ = [
    "Extractor",
    "ExtractorRegistry",
    "Sentence",
    "SourceTranscript",
    "content_hash",
    "default_registry",
    "detect_project",
    "reply_items",
    "split_sentences",
]
