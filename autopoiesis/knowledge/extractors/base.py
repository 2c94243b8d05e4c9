"""What every extractor is made of (docs/design.md#extract): the transcript it reads, the Extractor
record and the Protocol a registry holds, and the heuristics several extractors share.

Each extractor has two flavours that produce the same kind of output, a list of
KnowledgeChange:

* **offline**: honest heuristics that need no model: families of plain phrasings
  (`cues.py`: plans, changes, roles, dates, preferences, lessons, sequences), structure
  (numbered lists, speaker names, paths the session touched) and extractive summaries
  (sentences quoted from the transcript, never invented). They take only what counts
  (`Sentence.counts`: the user's words or what the user confirmed, never an agent's
  acknowledgement). They miss what is said without a cue; they do not hallucinate.
* **llm**: a prompt kept in a versioned file (`prompts/NAME.vN.md`), shown the live
  entries related to the transcript (`SourceTranscript.related`); a JSON reply validated
  against the extractor's shape (one repair attempt by the client), mapped to changes,
  each item possibly `skip` or `supersede` an entry it was shown (`item_action`).
  Replies are data: an item its transcript does not say is left out (`said_changes`,
  applied by the extraction to every LLM flavour), and the writer's guard still decides
  what may be written.

An extractor declares the paths and actions it may write (its WritePolicy); the writer
refuses anything else. Bump `version` when the logic or the prompt changes: the
extraction state is keyed on name@version, so every transcript is reprocessed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from autopoiesis.core.clock import utc
from autopoiesis.core.project import project_name
from autopoiesis.core.text import slugify, split_sentences, words
from autopoiesis.errors import UnknownExtractorError
from autopoiesis.formats import knowledge as kf
from autopoiesis.formats import tool_calls
from autopoiesis.formats import transcript as tf
from autopoiesis.formats.specstory_markup import read_steps
from autopoiesis.knowledge.changes import KnowledgeChange, Provenance, entry_id_for
from autopoiesis.knowledge.extractors import cues, prose
from autopoiesis.knowledge.writer import WritePolicy

PROMPTS_DIR = Path(__file__).parent.parent / "prompts"
PROMPT_TRANSCRIPT_CHARS = 12000
NAME_SLUG_LEN = 40  # project, person, procedure and topic slugs: a file name, not a title


# ── the input ───────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Sentence:
    """One sentence of a turn, and whether its speaker's word counts (issue 11):

    * `owned`: the user said it, or a named participant of a multi-party conversation
      (an agent turn with a speaker name is a person in an imported group chat);
    * `confirmed`: the agent said it and the user's next turn accepted it ("Yes, let's
      do that.");
    * `counts`: owned or confirmed, and not an acknowledgement ("Understood, bullet
      points from now on." restates, it decides nothing).

    Decisions, lessons, preferences, procedures and people facts take only sentences that
    count; facts (ports, hosts, dates) also take the agent's own observations."""

    text: str
    at: datetime
    role: str
    speaker: str | None
    owned: bool = True
    confirmed: bool = False
    ack: bool = False

    @property
    def counts(self) -> bool:
        return (self.owned or self.confirmed) and not self.ack

    @property
    def question(self) -> bool:
        """Whether it asks rather than states (an attachment's caption after it aside)."""
        return re.sub(r"\s*\[[^\]]*\]\s*$", "", self.text).rstrip().endswith("?")

    @property
    def by_user(self) -> bool:
        """The agent's owner speaking (not a named participant of a group chat)."""
        return self.role == "user" and self.speaker is None


def content_hash(text: str) -> str:
    """The name of a transcript's content in the extraction state (transcripts are immutable)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def long_words(text: str) -> list[str]:
    """The words of TEXT longer than two characters: what "a sentence says something"
    and "a reply matches a turn" are measured in."""
    return [w for w in words(text) if len(w) > 2]


@dataclass(frozen=True)
class KnownEntry:
    """An existing knowledge entry shown to an LLM extractor
    (docs/design.md#extraction-bookkeeping's classifier reads
    and searches memory before it appends or supersedes)."""

    id: str
    path: str
    text: str

    def render(self) -> str:
        return f"[{self.id}] {self.path.removeprefix('knowledge/')} — {self.text}"


@dataclass(frozen=True)
class SourceTranscript:
    """A transcript to extract from: its repo-relative path, content hash, parsed form,
    and what the repo already knows that relates to it: the live entries a search found
    (`related`, shown to the LLM flavours) and the people it has files for (`known_people`,
    so "Lena" finds "Lena Park")."""

    path: str
    content_hash: str
    transcript: tf.Transcript
    text: str = field(repr=False, default="")
    related: tuple[KnownEntry, ...] = field(default=(), compare=False)
    known_people: tuple[str, ...] = field(default=(), compare=False)
    # the memory repository it is in: a session run there is about the memory, no project
    memory_root: Path | None = field(default=None, compare=False)

    @classmethod
    def from_text(cls, path: str, text: str, memory_root: Path | None = None) -> SourceTranscript:
        """The transcript at PATH, its agent's steps read when it came as an export's
        Markdown through a capture stream (`specstory_markup.read_steps`). A subagent's
        transcript (`parent_session`) has no user: its user turns are the prompt its parent
        agent gave it (a Task's instructions, Claude Code's prompt for a suggestion), and
        read as the agent's they are nobody's preference or decision."""
        transcript = read_steps(tf.parse(text, path))
        if transcript.meta.parent_session is not None:
            transcript = replace(
                transcript,
                turns=tuple(
                    replace(t, role="agent") if t.role == "user" else t for t in transcript.turns
                ),
            )
        return cls(path, content_hash(text), transcript, text, memory_root=memory_root)

    @property
    def started(self) -> datetime:
        return utc(self.transcript.meta.started)

    @property
    def session_id(self) -> str:
        return self.transcript.meta.session_id

    @cached_property
    def project(self) -> str:
        """The project the session is about (`detect_project`), read once."""
        return detect_project(self)

    @cached_property
    def sentences(self) -> tuple[Sentence, ...]:
        turns = [t for t in self.transcript.turns if t.role != "system"]
        out: list[Sentence] = []
        for i, turn in enumerate(turns):
            owned = turn.role == "user" or turn.name is not None
            confirmed = not owned and _confirmed_by_next(turns, i)
            for item in turn.items:
                if isinstance(item, tf.Text):
                    for s in split_sentences(item.content):
                        ack = turn.role == "agent" and bool(cues.ACK.match(s))
                        out.append(
                            Sentence(s, utc(turn.time), turn.role, turn.name, owned, confirmed, ack)
                        )
        return tuple(out)

    @cached_property
    def prose_sentences(self) -> tuple[Sentence, ...]:
        """The sentences somebody wrote (`prose.prose_of`): what the v3 extractors read. A
        pasted log, a diff, a heading or a form's labels are nobody's words. What the user
        answered to the agent's question asked through a tool, or said rejecting a call
        (`tool_calls.user_words`), is the user's, said when the agent's turn was."""
        turns = [t for t in self.transcript.turns if t.role != "system"]
        out: list[Sentence] = []
        for i, turn in enumerate(turns):
            owned = turn.role == "user" or turn.name is not None
            accepted = not owned and _confirmed_by_next(turns, i)
            closing = _closing_paragraph(turn) if accepted else None
            for n, item in enumerate(turn.items):
                answer = tool_calls.user_words(item) if isinstance(item, tf.ToolCall) else None
                if answer is not None:  # the user's own words, answering or rejecting a call
                    out.extend(
                        Sentence(s, utc(turn.time), "user", None)
                        for s in split_sentences(prose.prose_of(answer), lowercase_starts=True)
                    )
                if isinstance(item, tf.Text):
                    content = item.content
                    if turn.role == "user" and prose.looks_pasted(content):
                        content = prose.lead_of(content)  # what they wrote above it
                        if prose.looks_pasted(content):
                            continue
                    text = prose.prose_of(content)
                    for s in split_sentences(text, lowercase_starts=True):
                        ack = turn.role == "agent" and bool(cues.ACK.match(s))
                        # what the user's "go ahead" accepts is the proposal that ends the
                        # agent's turn, not its narration between tool calls ("Now let's
                        # check the tests")
                        confirmed = closing is not None and closing[0] == n and s in closing[1]
                        out.append(
                            Sentence(s, utc(turn.time), turn.role, turn.name, owned, confirmed, ack)
                        )
        return tuple(out)

    @cached_property
    def said(self) -> tuple[frozenset[str], frozenset[str]]:
        """(content words, numbers) of the whole transcript, its title and frontmatter
        included (`kf.fact_words`): what `says` measures a model's item against."""
        return kf.fact_words(self.text or f"{self.transcript.title}\n{tf.render(self.transcript)}")

    def says(self, text: str) -> bool:
        """Whether the transcript says TEXT, an item a model proposes from it: every number
        of TEXT is in it, and at least half of TEXT's content words. A model may rephrase
        what was said, not add to it: a fact it made up, or one a prompt injection
        dictated and the transcript never holds ("port 6543" where the session said
        5432), would be written as this session's word and cited to it."""
        words, numbers = kf.fact_words(text)
        said_words, said_numbers = self.said
        if not words and not numbers:
            return False
        return numbers <= said_numbers and 2 * len(words & said_words) >= len(words)

    def provenance(self, at: datetime | None, producer: str) -> Provenance:
        return Provenance(self.path, at or self.started, producer, self.session_id)

    def locate(self, text: str) -> datetime:
        """The time of the turn that best matches TEXT (word overlap); for LLM answers,
        which do not say where in the transcript a fact was said."""
        want = set(long_words(text))
        best, best_score = self.started, 0.0
        for turn in self.transcript.turns:
            said = set(long_words(turn.text))
            if not said or not want:
                continue
            score = len(want & said) / len(want)
            if score > best_score:
                best, best_score = utc(turn.time), score
        return best


def _closing_paragraph(turn: tf.Turn) -> tuple[int, str] | None:
    """(item index, text) of the last paragraph of TURN's last text, when nothing (a tool
    call) follows that text: the proposal a user's "go ahead" answers."""
    for n in range(len(turn.items) - 1, -1, -1):
        item = turn.items[n]
        if isinstance(item, tf.Text):
            paragraphs = [p for p in prose.prose_of(item.content).split("\n\n") if p.strip()]
            return (n, paragraphs[-1]) if paragraphs else None
        if isinstance(item, tf.ToolCall):
            return None
    return None


def _confirmed_by_next(turns: list[tf.Turn], i: int) -> bool:
    """Whether the user's turn right after turn I accepts it ("Yes, let's do that.")."""
    nxt = turns[i + 1] if i + 1 < len(turns) else None
    if nxt is None or nxt.role != "user":
        return False
    first = next(
        (
            s
            for item in nxt.items
            if isinstance(item, tf.Text)
            for s in split_sentences(item.content)
        ),
        "",
    )
    return bool(cues.CONFIRM.match(first))


def clean(text: str, prefix: re.Pattern[str] | None = None, limit: int = 300) -> str:
    """A sentence as an entry: the cue PREFIX cut off, stray punctuation trimmed, the first
    letter capitalised, at most LIMIT characters (cut at a word)."""
    if prefix is not None:
        text = prefix.sub("", text, count=1)
    text = text.strip(" \t:-—,;")
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0] + "…"
    return text


# ── shared heuristics ───────────────────────────────────────────────────────────────
_PROJECT_PATH = re.compile(r"knowledge/projects/([a-z0-9][a-z0-9-]*)/")
_PROJECT_WORD = re.compile(
    r"\b(?:the\s+([A-Za-z][\w-]{2,30})\s+project|project\s+([A-Z][\w-]{2,30}))\b"
)
# words that say which project, not its name ("the current project", "the main project")
_NOT_PROJECT = {
    "this",
    "that",
    "the",
    "new",
    "old",
    "our",
    "whole",
    "same",
    "other",
    "next",
    "general",
    "current",
    "main",
    "actual",
    "original",
    "entire",
    "existing",
    "previous",
    "last",
    "first",
    "parent",
    "overall",
    "real",
    "specific",
    "particular",
    "final",
    "initial",
    "local",
    "your",
    "my",
    "their",
    "its",
}


def session_project(src: SourceTranscript) -> str | None:
    """The project the session ran in, as its transcript says (`project:` in the
    frontmatter, written by the importers and hooks that know the working folder), else
    the project core.project gives its `cwd:` (a transcript filed before its folder could
    be named), or None. Never a folder's bare name: `src`, `tmp` or a home folder is no
    project, and a folder of this machine in no repository (or the memory repository
    itself) is global, as at capture."""
    meta = src.transcript.meta
    named = getattr(meta, "project", None)
    if named:
        return slugify(str(named), NAME_SLUG_LEN) or None
    cwd = getattr(meta, "cwd", None)
    return project_name(str(cwd), src.memory_root) if cwd else None


def detect_project(src: SourceTranscript) -> str:
    """The project a session is about: the one its transcript names (`session_project`),
    else the one its tool calls worked in (`formats.tool_calls.project_worked_in`: a
    transcript filed before capture and import asked it), else a knowledge/projects/SLUG/
    path it touched, else "the X project" / "project X" in its text, else "general"."""
    named = session_project(src) or tool_calls.project_worked_in(
        src.transcript.turns, src.memory_root
    )
    if named:
        return named
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
                        slug = slugify(name, NAME_SLUG_LEN)
                        counts[slug] = counts.get(slug, 0) + 1
    counts.pop("", None)
    if not counts:
        return "general"
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


# The cue phrases live in cues.py; the names stay importable from here.
DECISION_CUE = cues.DECISION_CUE
DECISION_PREFIX = cues.DECISION_PREFIX
LESSON_CUE = cues.LESSON_CUE
LESSON_PREFIX = cues.LESSON_PREFIX


# ── one extractor ───────────────────────────────────────────────────────────────────
OfflineFn = Callable[[SourceTranscript, str], list[KnowledgeChange]]
LLMMapFn = Callable[[Any, SourceTranscript, str], list[KnowledgeChange]]


@runtime_checkable
class ExtractorPlugin(Protocol):
    """What a registry holds and KnowledgeExtractor runs. `Extractor` below is the usual
    way to build one; a plugin may bring any object with these members."""

    @property
    def name(self) -> str:
        """What `--extractors NAME` selects; unique in a registry."""
        ...

    @property
    def description(self) -> str: ...

    @property
    def key(self) -> str:
        """name@version: the extraction state's key (a new version reprocesses everything)."""
        ...

    @property
    def policy(self) -> WritePolicy:
        """The paths and actions its changes may use; the writer refuses anything else."""
        ...

    @property
    def has_llm_flavour(self) -> bool: ...

    def run_offline(self, src: SourceTranscript) -> list[KnowledgeChange]: ...

    def run_llm(
        self, src: SourceTranscript, llm: Any, model: str | None = None
    ) -> list[KnowledgeChange]:
        """Raises LLMUnavailableError / LLMResponseError (the caller queues a retry)."""
        ...


@dataclass(frozen=True)
class Extractor:
    """A named, versioned extractor with an offline and an optional LLM flavour."""

    name: str
    version: int
    description: str
    paths: tuple[str, ...]
    actions: frozenset[str]
    offline: OfflineFn
    from_llm: LLMMapFn | None = None
    validate_reply: Callable[[Any], None] | None = None
    prompt_file: str | None = None
    prompts_dir: Path = PROMPTS_DIR  # a plugin keeps its prompts in its own package

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def policy(self) -> WritePolicy:
        return WritePolicy(self.key, self.paths, self.actions)

    @property
    def has_llm_flavour(self) -> bool:
        return self.from_llm is not None

    def prompt_template(self) -> str:
        if not self.prompt_file:
            raise UnknownExtractorError(
                f"extractor {self.key} has no LLM flavour (no prompt file)."
            )
        return (self.prompts_dir / self.prompt_file).read_text(encoding="utf-8")

    def prompt(self, src: SourceTranscript) -> str:
        body = src.text.split("\n---\n", 1)[-1] if src.text else tf.render(src.transcript)
        if len(body) > PROMPT_TRANSCRIPT_CHARS:
            half = PROMPT_TRANSCRIPT_CHARS // 2
            body = body[:half] + "\n[... middle of the transcript omitted ...]\n" + body[-half:]
        fields = {
            "date": src.started.strftime("%Y-%m-%d"),
            "title": src.transcript.title,
            "existing": "\n".join(e.render() for e in src.related) or "(none)",
            "transcript": body,
        }
        # one pass: a placeholder inside the transcript or an entry stays as it is
        return re.sub(
            r"\{(date|title|existing|transcript)\}",
            lambda m: fields[m.group(1)],
            self.prompt_template(),
        )

    def run_offline(self, src: SourceTranscript) -> list[KnowledgeChange]:
        return self.offline(src, self.key)

    def run_llm(
        self, src: SourceTranscript, llm: Any, model: str | None = None
    ) -> list[KnowledgeChange]:
        """The LLM flavour. Raises LLMUnavailableError / LLMResponseError (the caller
        queues a retry)."""
        if self.from_llm is None:
            return self.run_offline(src)
        res = llm.complete_json(
            "extract", self.prompt(src), schema=self.validate_reply, model=model, max_tokens=1024
        )
        return self.from_llm(res.data, src, self.key)


def said_changes(
    changes: Sequence[KnowledgeChange], src: SourceTranscript
) -> tuple[list[KnowledgeChange], list[str]]:
    """The CHANGES an LLM flavour proposed that SRC says (`SourceTranscript.says`), and the
    texts of those it does not, left out. A derived line (a project's or a person's index
    line, `entry_id` naming its canonical entry) goes with its canonical entry when that
    is in the batch: it restates it under a heading of its own words."""
    verdict = {entry_id_for(c): src.says(c.content) for c in changes if c.entry_id is None}
    kept: list[KnowledgeChange] = []
    unsaid: list[str] = []
    for c in changes:
        ok = verdict.get(c.entry_id) if c.entry_id is not None else None
        if ok is None:
            ok = src.says(c.content)
        if ok:
            kept.append(c)
        elif c.entry_id is None or c.entry_id not in verdict:
            unsaid.append(c.content)
    return kept, unsaid


# ── reply shapes ────────────────────────────────────────────────────────────────────
def reply_items(data: Any, field_name: str) -> list[dict[str, Any]]:
    """The design's reply: a JSON array of objects, or an object whose single key holds
    that array ({} means none). Anything else raises ValueError (-> repair attempt)."""
    if isinstance(data, dict):
        if not data:
            return []
        if len(data) != 1:
            raise ValueError(
                "expected an array of objects, or an object with one key holding it; got keys "
                f"{sorted(data)}"
            )
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


def item_action(item: dict[str, Any], src: SourceTranscript) -> tuple[str, str | None] | None:
    """What a reply item asks for: None to skip it (already known), ("supersede", ID) to
    replace an existing entry shown in the prompt, else ("append", None). A target that
    was not among the entries shown is ignored (the item is appended): a model cannot
    strike what it was not given."""
    action = str(item.get("action") or "add").strip().lower()
    if action in ("skip", "none", "nothing", "known"):
        return None
    target = str(item.get("target") or item.get("supersedes") or "").strip()
    if action == "supersede" and target and any(e.id == target for e in src.related):
        return "supersede", target
    return "append", None


_PATHLIKE = re.compile(r"[/\\]|\.\.|^\.|\x00")


def checked_name(value: Any, what: str, i: int) -> str:
    """A name that becomes a path component: refused when it looks like a path, so a reply
    cannot steer a write outside its folder (the writer's guard is the second line)."""
    text = str(value or "").strip()
    if _PATHLIKE.search(text):
        raise ValueError(f"item {i}: '{what}' {text!r} looks like a path; give a plain name")
    return text


def reply_validator(field_name: str, names: Sequence[str] = ()) -> Callable[[Any], None]:
    """A reply check: items with a non-empty string FIELD_NAME, and NAMES that are plain names."""

    def check(data: Any) -> None:
        for i, item in enumerate(reply_items(data, field_name)):
            for n in names:
                if item.get(n) is not None:
                    if not isinstance(item[n], str):
                        raise ValueError(f"item {i}: '{n}' must be a string")
                    checked_name(item[n], n, i)

    return check


__all__ = [
    "DECISION_CUE",
    "DECISION_PREFIX",
    "LESSON_CUE",
    "LESSON_PREFIX",
    "NAME_SLUG_LEN",
    "PROMPTS_DIR",
    "Extractor",
    "ExtractorPlugin",
    "KnownEntry",
    "LLMMapFn",
    "OfflineFn",
    "Sentence",
    "SourceTranscript",
    "checked_name",
    "clean",
    "content_hash",
    "detect_project",
    "item_action",
    "long_words",
    "reply_items",
    "reply_validator",
    "said_changes",
    "session_project",
]
