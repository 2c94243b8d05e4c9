"""Text, once: words, stopwords, content words, token counting, one-line summaries,
slugs and cutting to a size.

Token counts are estimated offline (no tokenizer download): a BPE tokenizer such as
cl100k splits English into roughly one token per short word, per 1-3 digits and per
punctuation mark, so counting those pieces lands within a few percent of it on prose and
code, and never far under it (a budget must not be overrun).
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from functools import lru_cache
from typing import Any

# A sentence that states a change of something said before ("use pnpm instead", "no
# longer", "switched to", "make it 3 now"): the compiler's cue for a later statement that
# wins over an earlier one (compiler/restated.py; the extractors name the old thing a
# sentence replaces with extractors.cues.change_target).
# "Now" that opens an agent's next step ("Now let me run the linter", "Now I'll remove
# the block", "Now that the test passes") changes nothing: a coding agent says it before
# most of its steps.
CHANGE_CUE = re.compile(
    r"\binstead\b|\bmoved? (?:it |this |that )?to\b|\bno longer\b|\bswitch(?:ed|ing)?\b"
    r"|\bnow\b(?!,? (?:let(?: me|'s)|i(?:'ll|'m| will| need| can| see)|we(?:'ll|'re| will| need"
    r"| can)|that)\b)|\bchanged?\b|\bnot \w+ (?:anymore|any more)\b|\breplac\w+\b"
    r"|\bpushed (?:back )?to\b|\bpostponed\b|\bresched\w+\b|\bactually\b|\bmake it\b"
    r"|\bupdated?\b|\b(?:increase|decrease|raise|lower|bump)(?:d|ed)?\b",
    re.IGNORECASE,
)
WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)

# English function words and question words: they carry no topic. One list for search,
# the offline LLM rules, the noun-phrase check of compaction and the extractors.
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are aren as at be because been before being
below between both but by can cannot could couldn did didn do does doesn doing don down during
each few for from further had hadn has hasn have haven having he her here hers herself him
himself his how i if in into is isn it its itself just let ll me might more most must mustn my
myself no nor not now of off on once only or other ought our ours ourselves out over own re same
shall she should shouldn so some such than that the their theirs them themselves then there
these they this those through to too under until up upon us very was wasn we were weren what
when where which while who whom whose why will with won would wouldn you your yours yourself
yourselves s t d m ve y also get got ever may yet nor onto per via vs etc within without done
else
""".split()
)

_CONTENT_WORD = re.compile(r"[a-z0-9][a-z0-9_'-]{2,}")


def words(text: str) -> list[str]:
    """Lower-cased word tokens of TEXT (Unicode letters and digits, as FTS5's unicode61 cuts
    them)."""
    return WORD_RE.findall(text.lower())


def content_words(text: str, extra_stopwords: frozenset[str] = frozenset()) -> set[str]:
    """Lower-cased content words of TEXT: at least three characters, stopwords out,
    plurals folded ("topics" and "topic", "deploys" and "deploy" meet)."""
    out = set()
    for w in _CONTENT_WORD.findall(text.lower()):
        w = w.strip("'-_")
        if len(w) < 3 or w in STOPWORDS or w in extra_stopwords:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return out


# ── tokens ──
_TOKEN_RE = re.compile(r"[A-Za-z]{1,8}|[0-9]{1,3}|\n+| {2,}|\t+|[^\sA-Za-z0-9]")


def _count(text: str) -> int:
    return len(
        _TOKEN_RE.findall(text)
    )  # the tokens counted in C: ~2x the speed of iterating matches


@lru_cache(maxsize=8192)
def _count_cached(text: str) -> int:
    return _count(text)


def count_tokens(text: str, *, remember: bool = True) -> int:
    """Estimated BPE tokens of TEXT, offline. Cached by content, unless REMEMBER is
    false: a text counted once (a file being indexed) would only be pinned in memory."""
    if not text:
        return 0
    if len(text) > 65536 or not remember:  # don't pin megabytes in the cache
        return _count(text)
    return _count_cached(text)


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


# ── text that can be written ──
def utf8_safe(text: str) -> str:
    """TEXT as it can be written as UTF-8: a lone surrogate (what a JSON `\\ud83d` escape
    without its pair decodes to) becomes U+FFFD, a split pair is joined. The common case,
    text that encodes as it is, costs one encode."""
    if is_utf8(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def utf8_safe_values(value: Any) -> Any:
    """VALUE as JSON decoded it (a hook's payload, an MCP tool's arguments) with each
    string, key and value, made writable as UTF-8 (`utf8_safe`): a JSON `\\ud83d` escape
    without its pair decodes to a lone surrogate, and whatever wrote it (the reply that
    quoted it, the hook's session registry that keeps its `cwd`) failed."""
    if isinstance(value, str):
        return utf8_safe(value)
    if isinstance(value, dict):
        return {utf8_safe_values(k): utf8_safe_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [utf8_safe_values(v) for v in value]
    return value


def is_utf8(text: str) -> bool:
    """Whether TEXT can be written as UTF-8 as it is: a file name or an argument with a
    byte that is not UTF-8 reads as a lone surrogate (os.fsdecode, surrogateescape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def typed_bytes(text: str) -> bytes:
    """The bytes a person typed as TEXT: an argument (or stdin read as forget reads it)
    with bytes that are not UTF-8 holds them as surrogate escapes (os.fsdecode), which
    give those bytes back. A lone surrogate of another origin (a JSON escape) has no
    bytes of its own: the text is utf8_safe's then."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return utf8_safe(text).encode("utf-8")


def decode_replacing(data: bytes) -> tuple[str, int | None]:
    """DATA as UTF-8 text with each byte that is not UTF-8 read as U+FFFD, and where the
    first such byte is (None: DATA is all UTF-8). A line of a harness's log or stream with
    one stray byte is still its message (capture's stream, import's logs of JSON lines)."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", "replace"), exc.start


def decode_utf8_tail(data: bytes) -> str:
    """DATA as UTF-8 when it is valid except for a character cut off at its very end (a
    write killed half-way): that partial character is dropped. Any other invalid byte
    raises UnicodeDecodeError."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if (
            exc.reason == "unexpected end of data"
            and exc.end == len(data)
            and len(data) - exc.start < 4
        ):
            return data[: exc.start].decode("utf-8")
        raise


# What a file saved as "Unicode" (Notepad, PowerShell's `>`, an editor's UTF-16) starts
# with: UTF-32's marks first, as UTF-32LE's begins with UTF-16LE's
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def wide_encoding(data: bytes) -> str | None:
    """ "UTF-16" or "UTF-32" when DATA begins with that encoding's byte order mark (its text
    decodes with `data.decode(name)`), else None."""
    return next((name for bom, name in _WIDE_BOMS if data.startswith(bom)), None)


def utf8_problem(data: bytes, path: str) -> str | None:
    """Why DATA, the content of the memory file PATH, is not UTF-8 text, said with where
    and how to make it UTF-8 (the knowledge writer's refusal and the pre-commit hook's);
    None when it is UTF-8. A byte order mark of UTF-16 or UTF-32 names that encoding; a
    byte that is not UTF-8 is named with its line and column, as an editor counts them."""
    wide = wide_encoding(data)
    if wide is not None:
        return (
            f'{path} is {wide} text (saved as "Unicode"), and memory files are UTF-8: save '
            "it as UTF-8 (the editor's Save As, encoding UTF-8), or convert it with `iconv -f "
            f"{wide} -t UTF-8 {path} > {path}.new && mv {path}.new {path}`"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(
            data[data.rfind(b"\n", 0, exc.start) + 1 : exc.start].decode("utf-8", "replace")
        )
        return (
            f"{path}: line {line}, column {column + 1} holds the byte 0x{data[exc.start]:02X}, "
            "which is not UTF-8 (text saved or pasted in another encoding, such as Latin-1 "
            "or Windows-1252), and memory files are UTF-8: retype that character, or, when "
            f"the whole file is in that encoding, convert it with `iconv -f WINDOWS-1252 -t "
            f"UTF-8 {path} > {path}.new && mv {path}.new {path}`"
        )
    return None


# ── one line, slugs ──
ONE_LINE_MAX = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
ARROW = "\u2192"


def one_line(text: object, limit: int = ONE_LINE_MAX) -> str:
    """TEXT collapsed to one line of at most LIMIT characters: every line break (\\r and
    \\n alike), tab and other control character becomes a space, and the transcript's ' → '
    separator is
    written ' -> ' so a summary can never be mistaken for a tool call's result."""
    source = str(text)
    if len(source) > 4 * limit + 64:  # a long output: its head alone decides the line
        head = _one_line(source[: 4 * limit + 64], limit)
        if head is not None:
            return head
    return _one_line(source, limit, cut=False) or ""


def _one_line(source: str, limit: int, *, cut: bool = True) -> str | None:
    """one_line of SOURCE; with CUT (SOURCE is the head of a longer text), None when the
    head is too short to decide the whole line."""
    flat = " ".join(_CONTROL.sub(" ", source).split())
    flat = flat.replace(f" {ARROW} ", " -> ")
    if len(flat) > limit + 2:  # (+2: an arrow cut off at the head's end may widen by one)
        return flat[: limit - 1].rstrip() + "\u2026"
    if cut:
        return None
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "\u2026"
    return flat


def noun(n: int, singular: str, plural: str | None = None) -> str:
    """The noun in the number N asks for: SINGULAR for 1, else PLURAL (default SINGULAR+s)."""
    return singular if n == 1 else (plural or singular + "s")


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """N and the noun in its number: "1 file", "3 files", "0 files" (PLURAL when the noun
    does not take an -s: counted(2, "entry", "entries"))."""
    return f"{n:,} {noun(n, singular, plural)}"


# What a harness wraps around a message that nobody said: Claude Code's record of a slash
# command beyond what the user typed (`<command-message>review</command-message>`), of a
# command the user ran locally (its caveat, output and errors) and its reminders to the
# model. Its own log marks them; a Markdown export of its session keeps them in the user's
# text.
HARNESS_BOOKKEEPING = (
    "command-message",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "system-reminder",
)


@lru_cache(maxsize=32)
def _element_patterns(names: tuple[str, ...]) -> tuple[re.Pattern[str], dict[str, re.Pattern[str]]]:
    opening = re.compile(r"<(" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE)
    closing = {n.lower(): re.compile(f"</{re.escape(n)}>", re.IGNORECASE) for n in names}
    return opening, closing


def without_elements(text: str, names: tuple[str, ...], *, keep_lines: bool = False) -> str:
    """TEXT without each element named in NAMES, from its opening tag to the first closing
    tag of its name; KEEP_LINES: each leaves its line breaks (a line number still points
    where it did). Linear: an element left open stays as it is, and so does every later
    opening of its name (none of them closes either); a lazy pattern (`<x>.*?</x>`)
    scanned to the text's end from each such opening, so 144 KB of them took 4 s and 1 MB
    minutes."""
    opening, closing = _element_patterns(names)
    out, pos, scan = [], 0, 0
    unclosed: set[str] = set()
    while (m := opening.search(text, scan)) is not None:
        name = m.group(1).lower()
        close = None if name in unclosed else closing[name].search(text, m.end())
        if close is None:
            unclosed.add(name)
            scan = m.end()
            continue
        out.append(text[pos : m.start()])
        if keep_lines:
            out.append("\n" * text.count("\n", m.start(), close.end()))
        pos = scan = close.end()
    out.append(text[pos:])
    return "".join(out)


# ... and the part of that record the user typed: the command and the words after it
# (`<command-name>/review</command-name>` `<command-args>check login.py</command-args>`).
# With words after it, they are the user's request, read without their tags; a command
# run with none (`/clear`, `/exit`) says nothing and is bookkeeping too.
SLASH_COMMAND_WORDS = ("command-name", "command-args")
HARNESS_RECORD = HARNESS_BOOKKEEPING + SLASH_COMMAND_WORDS  # all of it, the typed part too


def _typed_spans(text: str) -> list[tuple[str, int, int, int, int]]:
    """(name, element start, words start, words end, element end) of each closed
    SLASH_COMMAND_WORDS element of TEXT, found with str.find (linear: words of any length,
    an element left open is none)."""
    out: list[tuple[str, int, int, int, int]] = []
    for name in SLASH_COMMAND_WORDS:
        opening, closing = f"<{name}>", f"</{name}>"
        pos = 0
        while (i := text.find(opening, pos)) >= 0:
            j = text.find(closing, i + len(opening))
            if j < 0:
                break
            out.append((name, i, i + len(opening), j, j + len(closing)))
            pos = j + len(closing)
    return sorted(out, key=lambda span: span[1])


def _typed_parts(text: str) -> dict[str, str]:
    """{name: the words} of TEXT's slash command record, as typed (only the ends trimmed)."""
    if "<command-" not in text:
        return {}
    return {name: text[a:b].strip() for name, _, a, b, _ in _typed_spans(text)}


def slash_command(text: str) -> str | None:
    """What the user typed to run the slash command TEXT records, when they typed words
    after it ("/review check login.py"); else None."""
    parts = _typed_parts(text)
    name, words = parts.get("command-name"), parts.get("command-args")
    if not name or not words:
        return None
    return f"{name if name.startswith('/') else '/' + name} {words}"


def slash_words(text: str) -> str:
    """TEXT with the record of a slash command run with words after it read as what the
    user typed (SLASH_COMMAND_WORDS without their tags), line for line; a record without
    such words stays as it is."""
    spans = _typed_spans(text) if "<command-" in text else []
    if not any(name == "command-args" and text[a:b].strip() for name, _, a, b, _ in spans):
        return text
    out, pos = [], 0
    for _, start, a, b, end in spans:
        if start < pos:
            continue  # an element inside another one's words
        out += [text[pos:start], text[a:b]]
        pos = end
    return "".join(out) + text[pos:]


def without_bookkeeping(text: str) -> str:
    """A user's TEXT as a reader sees it: the harness's record (HARNESS_RECORD) out but
    for a slash command's words (slash_words), line for line. What the index and the
    compiled context read of a user's turn; Claude Code's importer writes the same of its
    log."""
    return without_elements(slash_words(text), HARNESS_RECORD, keep_lines=True)


# How the messages open that a harness sends in the user's role and the user did not
# write. The context it injects (Codex CLI's environment block, AGENTS.md and user
# instructions, its notice of an interrupted turn): a copy of what is elsewhere, which
# Codex's importers leave out. And the summary a model wrote of the conversation so far
# that carries a compacted session on (Claude Code's compact summary, Cline's
# continuation): all there may be of the turns before, so it is kept, as the system's
# turn where a log marks it (Claude Code's `isCompactSummary`). A Markdown export of a
# session keeps both as the user's message.
INJECTED_CONTEXT_OPENINGS = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for ",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
)
HARNESS_MESSAGE_OPENINGS = (
    *INJECTED_CONTEXT_OPENINGS,
    "This session is being continued from a previous conversation",
)


# Claude Code's notice, in the user's role, that the user stopped the agent's turn: its
# importer files it as the system's turn; a Markdown export keeps it as the user's message
_INTERRUPTED = re.compile(r"\[Request interrupted by user[^\]\n]{0,200}\]")


def interruption_notice(text: str) -> bool:
    """Whether TEXT is only Claude Code's notice of a turn the user interrupted ("[Request
    interrupted by user for tool use]"): no words of the user's."""
    return _INTERRUPTED.fullmatch(text.strip()) is not None


def injected_context(text: str) -> bool:
    """Whether TEXT, a message in the user's role, is context the harness injected
    (INJECTED_CONTEXT_OPENINGS), which an importer may leave out."""
    return text.lstrip().startswith(INJECTED_CONTEXT_OPENINGS)


def said_by_the_harness(text: str) -> bool:
    """Whether TEXT, a message in the user's role, is one the harness sent
    (HARNESS_MESSAGE_OPENINGS, after its bookkeeping): a compacted session's summary is
    the summarising model's words ("The user wants ...", "Never deploy on Fridays" as it
    understood it), an instructions file the harness's copy; neither is the user
    speaking."""
    return without_bookkeeping(text[:2000]).lstrip().startswith(HARNESS_MESSAGE_OPENINGS)


def slugify(text: str, max_len: int = 60) -> str:
    """An ASCII slug of at most MAX_LEN characters ('' when nothing is left)."""
    text = re.sub(r"(\w)['\u2019](\w)", r"\1\2", text)  # "let's" -> "lets", not "let-s"
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = ""
    for word in re.findall(r"[a-z0-9]+", ascii_text.lower()):
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_len:
            if not slug:
                slug = word[:max_len]
            break
        slug = candidate
    return slug


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(])|\n\s*\n|\n(?=\s*(?:[-*]|\d+[.)])\s)")
_LIST_MARK = re.compile(r"^\s*(?:[-*]|\d+[.)])\s+")
# A sentence typed in lower case ("no, only create the task. next time, ask first"): its
# end is a full stop, "!" or "?" before a lower-case word, unless the stop ends an
# abbreviation, an initial or an ellipsis ("e.g. this", "vs. that", "wait... no").
_LOWER_START = re.compile(r"(?<=[.!?])\s+(?=[a-z])")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf approx incl esp resp fig eq ca al vol p pp mr mrs ms dr st jr sr min "
    "max avg ver v".split()
)


def _ends_no_sentence(word: str) -> bool:
    """Whether the stop ending WORD ends no sentence: an abbreviation ("e.g.", "vs."), an
    initial ("J.") or an ellipsis ("wait...")."""
    return word.endswith("..") or (
        word.endswith(".") and (len(word) == 2 or word[:-1].lower() in _ABBREVIATIONS)
    )


def split_sentences(text: str, *, lowercase_starts: bool = False) -> list[str]:
    """Sentences and list items of TEXT, list marks and extra white space removed;
    fragments under three characters dropped. LOWERCASE_STARTS: a sentence may also
    start with a lower-case letter (see _LOWER_START), and a statement typed before a
    question with only a comma between them is a sentence of its own (_spliced_question)."""
    out = []
    for part in _SPLIT.split(text):
        for piece in _lowercase_sentences(part) if lowercase_starts else (part,):
            s = " ".join(_LIST_MARK.sub("", piece).split())
            if len(s) < 3:
                continue
            spliced = _spliced_question(s) if lowercase_starts else None
            out += spliced or [s]
    return out


# A statement and a question typed as one sentence, a comma between them ("We shouldn't
# have tests that rely on a session, what is this test trying to test?"): the statement,
# at least three words, is said, whatever the question after it asks; unless it asks too
# ("How does it work, is it cached?") or is a question's lead ("So, what now?").
_QUESTION_WORDS = (
    r"(?:what|why|how|where|when|which|who|whose|can|could|would|will|should|shall|do|does|"
    r"did|is|are|was|were|am|have|has|isn't|aren't|don't|doesn't)\b"
)
_QUESTION_START = re.compile(_QUESTION_WORDS)
_ASKING = re.compile(rf"(?:{_QUESTION_WORDS}|any\b|anything\b)", re.I)


def _spliced_question(sentence: str) -> list[str] | None:
    """[statement, question] when SENTENCE is a statement and a question with only a comma
    between them (the first comma), else None. Linear in SENTENCE: a regex that found the
    statement's three words by backtracking took seconds on a long pasted line."""
    if not sentence.endswith("?"):
        return None
    cut = sentence.find(", ")
    if cut < 0:
        return None
    statement, question = sentence[:cut], sentence[cut + 2 :]
    if "?" in statement or "?" in question[:-1] or len(statement.split(None, 3)) < 3:
        return None
    if not _QUESTION_START.match(question) or _ASKING.match(statement):
        return None
    return [statement, question]


def _lowercase_sentences(text: str) -> list[str]:
    out, start = [], 0
    for m in _LOWER_START.finditer(text):
        # the word before the stop, read from a bounded window: linear in TEXT however
        # many stops end no sentence
        before = text[max(start, m.start() - 16) : m.start()].split()
        if before and not _ends_no_sentence(before[-1]):
            out.append(text[start : m.start()])
            start = m.end()
    out.append(text[start:])
    return out
