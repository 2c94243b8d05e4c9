"""Secret redaction: the one owner every path to disk, git, memory.db or a model goes through.

`Redactor.redact(text)` replaces each secret, and only the secret, with `[redacted:KIND]`
and counts it per kind. Detection has three layers:

1. Anchors (redact_rules.ANCHORS), compiled with RE2 and run on the text's UTF-8 bytes:
   provider prefixes, a keyword next to an assignment, an assignment of a long token,
   `://` with an `@`, a password on a command line or in prose. Ordinary prose has none
   and returns untouched in microseconds (appending a message to a transcript stays well
   under a millisecond); otherwise each anchor flags its line, and only the rules of its
   family read it (one linear pass per family, so one family's anchor cannot hide
   another's).
2. Our own rules for the shapes providers issue (anchored on prefixes, lengths and
   alphabets; a prefix is found glued after `_` or letters, as in `MY_TOKEN_ghp_...`),
   for PEM and PuTTY blocks, credentials in URLs and on command lines, keyword
   assignments (`password=`, `api_key:`, `DB_PASSWORD=`, JDBC and INI), passwords said in
   prose, AWS STS JSON and console CSV, and high-entropy assignments.
3. detect-secrets' plugins (https://github.com/Yelp/detect-secrets): its regex detectors
   on the lines a provider anchor flags, its keyword detector and keyword plugins on the
   lines a keyword anchor flags and that hold their words, its Shannon-entropy measure;
   loaded on the first text that needs them (the library costs ~0.3 s to import).

Every finding is a span of the text. Spans are validated (look-alikes such as git SHAs,
UUIDs, digests, base64 images, `sk-learn`, `xoxo-hugs`, `mailto://john:doe@`, a prose
mention of a PEM header, templates like `${VAR}` are refused), merged, and only they are
replaced: the text around a secret stays byte for byte. Detection runs on a same-length
view of the text where JSON escapes (`\\n`, `\\t`, `\\"`) read as what they stand for, so
an escaped newline before `aws_secret_access_key` does not hide it.

Extra patterns from `capture.redaction.extra_patterns` are compiled with RE2, whose
matching time is linear in the text: a pattern like `ID-(\\w+)+-X` cannot hang capture.

The pattern tables and the look-alike checks are redact_rules.py.
"""

from __future__ import annotations

import bisect
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autopoiesis.core.redact_rules import (
    ANCHORS,
    BUILTIN_RULES,
    CREDENTIAL_SCHEMES_NOT,
    DIGEST_LENGTHS,
    ESCAPE_VIEW,
    FAMILIES_OF,
    HASHY_KEY,
    HEX,
    IMAGE_MAGIC,
    MARKER,
    NOT_SECRET_KEY,
    PREFILTER_SOURCE,
    UUID,
    WORDS_NEEDED,
    char_classes,
    decodes_to_text,
    groups_secret,
    is_placeholder,
    is_prose_slug,
    looks_random,
)

if TYPE_CHECKING:
    from autopoiesis.core.config import Config


class _Anchors:
    """The anchors of redact_rules.ANCHORS, compiled once with RE2 on first use: one
    linear pass each, whatever the text."""

    prefilter: Any = None
    families: tuple[tuple[str, Any, tuple[str, ...]], ...] = ()
    library: Any = None

    @classmethod
    def load(cls) -> None:
        if cls.prefilter is not None:
            return
        cls.families = tuple(
            (name, compile_extra_pattern(source.encode()), FAMILIES_OF[name])
            for name, source in ANCHORS.items()
        )
        cls.library = compile_extra_pattern(f"{ANCHORS['provider']}|{ANCHORS['keyword']}")
        cls.prefilter = compile_extra_pattern(PREFILTER_SOURCE)


class _DS:
    """detect-secrets, loaded once on first use (its import costs ~0.3 s)."""

    plugins: list[tuple[str, Any, bool]] | None = None  # (kind, plugin, reads a keyword)
    keyword: Any = None
    keyword_words: tuple[str, ...] = ()
    # (kind, plugin, the words it needs: one of each group) of the keyword plugins
    keyword_plugins: list[tuple[str, Any, tuple[tuple[str, ...], ...]]] = []
    keyword_groups: tuple[tuple[Any, bool], ...] = ()
    b64: Any = None
    hexp: Any = None
    filters: Any = None

    @classmethod
    def load(cls) -> None:
        if cls.plugins is not None:
            return
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins import keyword as kw
        from detect_secrets.plugins.artifactory import ArtifactoryDetector
        from detect_secrets.plugins.aws import AWSKeyDetector
        from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
        from detect_secrets.plugins.cloudant import CloudantDetector
        from detect_secrets.plugins.discord import DiscordBotTokenDetector
        from detect_secrets.plugins.github_token import GitHubTokenDetector
        from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
        from detect_secrets.plugins.high_entropy_strings import (
            Base64HighEntropyString,
            HexHighEntropyString,
        )
        from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
        from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
        from detect_secrets.plugins.mailchimp import MailchimpDetector
        from detect_secrets.plugins.npm import NpmDetector
        from detect_secrets.plugins.pypi_token import PypiTokenDetector
        from detect_secrets.plugins.sendgrid import SendGridDetector
        from detect_secrets.plugins.slack import SlackDetector
        from detect_secrets.plugins.softlayer import SoftlayerDetector
        from detect_secrets.plugins.square_oauth import SquareOAuthDetector
        from detect_secrets.plugins.stripe import StripeDetector
        from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
        from detect_secrets.plugins.twilio import TwilioKeyDetector

        # Left out: PrivateKeyDetector (it flags the header line, which would redact a prose
        # mention; our PEM rule finds the block), BasicAuthDetector (our url_password rule
        # knows mailto: is no credential), IPPublicDetector (an address is not a secret),
        # OpenAIDetector and JwtTokenDetector (our rules cover their shapes, and their
        # regexes backtrack quadratically on runs like "sk-sk-sk-...").
        classes = (
            ArtifactoryDetector,
            AWSKeyDetector,
            AzureStorageKeyDetector,
            CloudantDetector,
            DiscordBotTokenDetector,
            GitHubTokenDetector,
            GitLabTokenDetector,
            IbmCloudIamDetector,
            IbmCosHmacDetector,
            MailchimpDetector,
            NpmDetector,
            PypiTokenDetector,
            SendGridDetector,
            SlackDetector,
            SoftlayerDetector,
            SquareOAuthDetector,
            StripeDetector,
            TelegramBotTokenDetector,
            TwilioKeyDetector,
        )
        cls.keyword = kw.KeywordDetector()
        # its detector finds nothing in a line without one of its words: a sound prefilter
        # (its words, `api_?key`, as lowercase literals: a substring test per word is
        # faster than one case-insensitive alternation)
        cls.keyword_words = tuple(
            word
            for pattern in kw.DENYLIST
            for word in (
                (pattern.replace("_?", "_"), pattern.replace("_?", ""))
                if "_?" in pattern
                else (pattern,)
            )
        )
        # (its regexes, whether each of them needs a quote: those are not run on a line
        # without one)
        cls.keyword_groups = (
            (kw.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, True),
            (kw.CONFIG_DENYLIST_REGEX_TO_GROUP, False),
        )
        cls.b64 = Base64HighEntropyString()
        cls.hexp = HexHighEntropyString()
        cls.filters = heuristic
        # the plugins that read a keyword (`ibm_cloud_iam_api_key = ...`, `AccountKey=`,
        # `aws_secret = "..."`) also run on the lines a keyword anchor flags
        by_keyword = {
            NpmDetector,  # `//registry.npmjs.org/:_authToken=<uuid>`, the legacy form
            AWSKeyDetector,
            AzureStorageKeyDetector,
            CloudantDetector,
            IbmCloudIamDetector,
            IbmCosHmacDetector,
            SoftlayerDetector,
        }
        cls.plugins = [
            (re.sub(r"[^a-z0-9]+", "_", c.secret_type.lower()).strip("_"), c(), c in by_keyword)
            for c in classes
        ]
        # what a keyword plugin's regexes cannot match without, read off their sources
        # (lowercase; one word of each group): on a keyword line without them it is not
        # run. IBM's prefix is optional (`password = <44 chars>` is enough) and so is the
        # `api` of IBM and SoftLayer (whose prefix is `sl` or `softlayer`).
        key_or_pass = ("key", "pwd", "pass", "token")
        needs: tuple[tuple[type, tuple[tuple[str, ...], ...]], ...] = (
            (NpmDetector, (("authtoken",),)),
            (AWSKeyDetector, (("aws",),)),
            (AzureStorageKeyDetector, (("accountkey",),)),
            (CloudantDetector, (("cl",),)),
            (IbmCloudIamDetector, (key_or_pass,)),
            (IbmCosHmacDetector, (("secret",), ("key",))),
            (SoftlayerDetector, (("sl", "softlayer"),)),
        )
        cls.keyword_plugins = [
            (kind, plugin, groups)
            for kind, plugin, reads_keyword in cls.plugins
            if reads_keyword
            for c, groups in needs
            if isinstance(plugin, c)
        ]

    @classmethod
    def entropy_ok(cls, v: str) -> bool:
        """detect-secrets' Shannon entropy, with a limit that grows with the length up to the
        plugin's own (4.5 bits for base64, 3.0 for hex): short random tokens count too."""
        is_hex = bool(HEX.fullmatch(v))
        plugin = cls.hexp if is_hex else cls.b64
        limit = min(plugin.entropy_limit, math.log2(len(v)) - (1.6 if is_hex else 1.0))
        return bool(plugin.calculate_shannon_entropy(v) > limit)


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    kind: str
    rank: int


_MAX_PASSES = 4  # each pass only turns text into markers, which no rule matches: it ends


@dataclass
class Redactor:
    """Replace secrets in text with `[redacted:KIND]`; keeps a running count per kind.

    `extra` are (KIND, RE2 pattern) pairs from the config; `enabled=False` turns redaction off."""

    extra: Iterable[tuple[str, str]] = ()
    enabled: bool = True
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._extra = [(name, compile_extra_pattern(pattern)) for name, pattern in self.extra]

    def redact(self, text: str) -> str:
        """TEXT with every secret replaced by its marker. Idempotent by construction: a
        marker can change what a rule sees around it (`...secret]A=0000001234567A` reads
        as a fresh assignment once the token before `=` is a marker), so the lines a pass
        changed are passed again until nothing changes (two passes where there were
        secrets, one where there were none; the second reads only the changed lines)."""
        if not self.enabled or not text:
            return text
        within: list[tuple[int, int]] | None = None
        for _ in range(_MAX_PASSES):
            done, within = self._redact_once(text, within)
            if not within:
                return done
            text = done
        return text

    def _redact_once(
        self, text: str, within: list[tuple[int, int]] | None
    ) -> tuple[str, list[tuple[int, int]]]:
        """TEXT redacted once (the built-in rules read only the lines in WITHIN, when
        given: the lines around the markers of the pass before), and the (start, end) of
        the lines of the result around a new marker."""
        safe = _encodable(text)  # RE2 matches UTF-8: a lone surrogate reads as U+FFFD, same offsets
        spans: list[_Span] = []
        _Anchors.load()
        for start, end in [(0, len(safe))] if within is None else within:
            piece = safe[start:end] if within is not None else safe
            if _Anchors.prefilter.search(piece):
                spans.extend(
                    _Span(sp.start + start, sp.end + start, sp.kind, sp.rank)
                    for sp in find_secrets(piece)
                )
        if self._extra:
            spans.extend(self._extra_findings(safe))
        if spans and "[redacted:" in text:
            # a marker of an earlier pass is never (part of) a secret: redaction is idempotent
            spans = _outside_markers(text, spans)
        if not spans:
            return text, []
        out: list[str] = []
        touched: list[tuple[int, int]] = []
        pos = size = 0
        for span in _merge(spans):
            out.append(text[pos : span.start])
            size += span.start - pos
            marker = f"[redacted:{span.kind}]"
            out.append(marker)
            touched.append((size, size + len(marker)))
            size += len(marker)
            self.counts[span.kind] += 1
            pos = span.end
        out.append(text[pos:])
        done = "".join(out)
        return done, _lines_around(done, touched)

    def _extra_findings(self, safe: str) -> Iterable[_Span]:
        """The spans of the extra patterns, matched on the UTF-8 bytes of SAFE (RE2's own
        text: no translation of offsets per match; a pattern may match every word)."""
        data = safe.encode("utf-8")
        to_char = _CharOffsets(data, len(data) == len(safe))
        for rank, (kind, rx) in enumerate(self._extra, start=len(BUILTIN_RULES) + 10):
            to_char.rewind()
            for m in rx.finditer(data):
                start, end = m.span()
                if end > start:
                    yield _Span(to_char(start), to_char(end), kind, rank)


def _outside_markers(text: str, spans: list[_Span]) -> list[_Span]:
    """The SPANS that overlap no `[redacted:KIND]` marker of TEXT: one bisection per span
    (a frequent extra pattern finds as many spans as there are markers)."""
    marks = [m.span() for m in MARKER.finditer(text)]
    if not marks:
        return spans
    starts = [b for b, _ in marks]
    kept = []
    for sp in spans:
        i = bisect.bisect_left(starts, sp.end) - 1  # the last marker starting before sp.end
        if i >= 0 and marks[i][1] > sp.start:
            continue
        kept.append(sp)
    return kept


def _lines_around(text: str, marks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The lines of TEXT that hold MARKS (in order), with the line before and after each (a
    rule may read across one line break), merged. Each search for a line's ends stops at
    the lines already taken: linear, even for one long line full of markers."""
    lines: list[tuple[int, int]] = []
    for start, end in marks:
        if lines and end <= lines[-1][1]:
            continue  # in the lines already taken
        lo = lines[-1][1] if lines else 0
        nl = text.rfind("\n", lo, start)
        ls = lo if nl < 0 else max(lo, text.rfind("\n", lo, nl) + 1)
        nl = text.find("\n", end)
        nxt = -1 if nl < 0 else text.find("\n", nl + 1)
        le = len(text) if nxt < 0 else nxt
        if lines and ls <= lines[-1][1]:
            lines[-1] = (lines[-1][0], le)
        else:
            lines.append((ls, le))
    return lines


def marker_kinds(text: str) -> list[str]:
    """The KIND of every `[redacted:KIND]` marker in TEXT, in order: how a piece of an
    already redacted transcript (a continuation part) counts its own redactions."""
    return [m.group()[len("[redacted:") : -1] for m in MARKER.finditer(text)]


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LONG_RUN = re.compile(r"[a-z0-9_\-+/=]{24}")
_NAMED_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*[=:]\s*(?=\S)")
_VALUE_END = re.compile(r"[\s,;&)]")
_ENV_PREFIX = re.compile(r"\s*(?:export\s+|set\s+)?")
_CALL = re.compile(r"[\w.]+[\[(]")
_LOWER_WORDS = re.compile(r"[a-z]+(?:[-_.][a-z]+)*")
_PASSWORD_KEY = re.compile(
    r"(?:^|[_.\-])(?:pass|pwd)(?:$|[_.\-])|password|passwd|passphrase|pwd$|contrase"
)
_NOT_PASSWORD_KEY = re.compile(
    r"(?:by|com|sur|over)pass|pass(?:ed|es|ing|age|enger|port|ive|through)"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _merge(spans: list[_Span]) -> list[_Span]:
    spans.sort(key=lambda s: (s.start, s.rank, -s.end))
    merged: list[_Span] = []
    for s in spans:
        if merged and s.start < merged[-1].end:
            last = merged[-1]
            if s.end > last.end:
                merged[-1] = _Span(last.start, s.end, last.kind, last.rank)
            continue
        merged.append(s)
    return merged


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _lowercase(view: str) -> str:
    """VIEW in lowercase, same length and offsets (ASCII letters only where full lowercase
    would change a length, as `İ` does)."""
    low = view.lower()
    return low if len(low) == len(view) else view.translate(_ASCII_LOWER)


def _view(text: str) -> str:
    """TEXT as the detectors read it, same length: JSON escapes read as what they stand for,
    and the markers of an earlier pass are blanked (their KIND is no keyword to match)."""
    if "\\" in text:
        # two characters each, never overlapping (none ends with a backslash): one
        # str.replace per escape is the regex substitution, without a call per match
        for escape, seen in ESCAPE_VIEW.items():
            text = text.replace("\\" + escape, seen)
    if "[redacted:" in text:
        text = MARKER.sub(lambda m: "[" + " " * (len(m.group(0)) - 2) + "]", text)
    return text


# a case-insensitive rule runs without the flag on the lowercase copy of the text: its
# pattern's letters are lowercase (redact_rules), and case folding per character is what
# makes IGNORECASE slow; its validator reads the values from the text itself
_CASELESS = "(?i)"
_COMPILED: list[tuple[str, str, str, int, re.Pattern[str]]] = [
    (kind, check, family, i, re.compile(p.removeprefix(_CASELESS)))
    for i, (kind, check, family, p) in enumerate(BUILTIN_RULES)
]
_ON_LOWERCASE = {i for i, (*_, p) in enumerate(BUILTIN_RULES) if p.startswith(_CASELESS)}
# the rules whose match runs over several lines: matched where their first line starts
_MULTILINE = {"private_key": "-----BEGIN ", "putty_private_key": "Private-Lines:"}
# kind, check, rank, compiled pattern, the words one of which it needs (lowercase)
_Rule = tuple[str, str, int, re.Pattern[str], tuple[str, ...]]


def _by_family(multiline: bool) -> dict[str, list[_Rule]]:
    table: dict[str, list[_Rule]] = {}
    for kind, check, family, rank, rx in _COMPILED:
        if (kind in _MULTILINE) == multiline:
            needs = WORDS_NEEDED.get((family, kind), ())
            table.setdefault(family, []).append((kind, check, rank, rx, needs))
    return table


_BY_FAMILY = _by_family(multiline=False)
_MULTILINE_RULES = _by_family(multiline=True)


def find_secrets(text: str) -> list[_Span]:
    """Every secret span in TEXT, validated, not yet merged. Each family's anchors flag
    lines; the family's rules read only those lines, and a range of lines met again (a
    file read twice) is not read again: a rule's findings in it depend only on its text."""
    view = _view(text)
    lines = _flagged_lines(view)
    low = _lowercase(view)
    spans: list[_Span] = []
    for family, rules in _BY_FAMILY.items():
        seen: dict[str, list[tuple[int, int, str, int]]] = {}
        for ls, le in lines.get(family, ()):
            piece = view[ls:le]
            found = seen.get(piece)
            if found is None:
                found = seen[piece] = [
                    (start - ls, end - ls, kind, rank)
                    for start, end, kind, rank in _rule_findings(rules, view, low, ls, le)
                ]
            spans.extend(
                _Span(ls + start, ls + end, kind, rank) for start, end, kind, rank in found
            )
        spans.extend(_multiline_findings(family, view, lines.get(family, [])))
    spans.extend(_library_findings(view, lines["library:provider"], lines["library:keyword"]))
    return spans


def _multiline_findings(family: str, view: str, lines: list[tuple[int, int]]) -> list[_Span]:
    """What FAMILY's rules that run over several lines (a PEM block) find, matched where
    their first line is one of LINES."""
    spans: list[_Span] = []
    for kind, check, rank, rx, _ in _MULTILINE_RULES.get(family, ()):
        first = _MULTILINE[kind]
        for ls, le in lines:
            at = view.find(first, ls, le)
            while at >= 0:
                m = rx.match(view, at)
                span = None if m is None else _VALIDATORS[check](m, view)
                if span is not None and span[1] > span[0]:
                    spans.append(_Span(span[0], span[1], kind, rank))
                at = view.find(first, at + 1, le)
    return spans


def _rule_findings(
    rules: list[_Rule], view: str, low: str, start: int, end: int
) -> Iterable[tuple[int, int, str, int]]:
    """What RULES find in VIEW[START:END] (whole lines): (start, end, kind, rank). LOW is
    VIEW in lowercase, what the case-insensitive rules read."""
    for kind, check, rank, rx, needs in rules:
        if needs and not any(low.find(word, start, end) >= 0 for word in needs):
            continue
        validate = _VALIDATORS[check]
        for m in rx.finditer(low if rank in _ON_LOWERCASE else view, start, end):
            span = validate(m, view)
            if span is not None and span[1] > span[0]:
                yield span[0], span[1], kind, rank


def _flagged_lines(view: str) -> dict[str, list[tuple[int, int]]]:
    """For each rule family, the (start, end) of the lines of VIEW its anchors flag, in
    order. A line that ends with an assignment (`key =`, the value on the next line) takes
    the next line too.

    The anchors run on the UTF-8 bytes of VIEW (RE2's own text: no offset translation per
    match), from one flagged line to the start of the next (a line is flagged once,
    whatever its number of anchors); a line's byte offsets become character offsets as
    the lines go by."""
    data = view.encode("utf-8")
    to_char = _CharOffsets(data, len(data) == len(view))
    found: dict[str, set[tuple[int, int]]] = {}
    size = len(data)
    for _name, rx, families in _Anchors.families:
        to_char.rewind()
        pos = 0
        while pos < size:
            m = rx.search(data, pos)
            if m is None:
                break
            start, end = m.span()
            ls = data.rfind(b"\n", 0, start) + 1
            le = data.find(b"\n", end)
            if le < 0:
                le = size
            pos = le + 1
            if data[ls:le].rstrip().endswith((b"=", b":", b"=>")) and le < size:
                nxt = data.find(b"\n", le + 1)
                le = size if nxt < 0 else nxt
            line = (to_char(ls), to_char(le))
            for family in families:
                found.setdefault(family, set()).add(line)
    lines = {family: _close_ranges(sorted(r)) for family, r in found.items()}
    # detect-secrets reads only the flagged lines themselves (it costs more per line)
    lines["library:provider"] = sorted(found.get("provider", ()))
    lines["library:keyword"] = sorted(found.get("keyword", ()))
    return lines


_GAP = 1  # flagged lines that touch are read in one go (a wider gap costs more than it saves)


def _close_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """RANGES (sorted) with the ones that overlap or lie within _GAP of each other joined:
    a rule reads the few lines between too, as it would read the whole text."""
    joined: list[tuple[int, int]] = []
    for start, end in ranges:
        if joined and start - joined[-1][1] <= _GAP:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


class _CharOffsets:
    """Byte offsets of DATA (UTF-8) as character offsets, for offsets that mostly increase
    (at character boundaries): each call decodes only the bytes between it and the last
    one, so a whole pass costs about one decoding of DATA."""

    def __init__(self, data: bytes, ascii_only: bool) -> None:
        self.data = data
        self.ascii_only = ascii_only
        self.rewind()

    def rewind(self) -> None:
        self.byte = self.char = 0

    def __call__(self, offset: int) -> int:
        if self.ascii_only:
            return offset
        if offset < self.byte:  # back to the line after a flagged one: decode the way back
            self.char -= len(self.data[offset : self.byte].decode("utf-8"))
        else:
            self.char += len(self.data[self.byte : offset].decode("utf-8"))
        self.byte = offset
        return self.char


def _accept(m: re.Match[str], view: str) -> tuple[int, int] | None:
    return groups_secret(m)


def _private_key(m: re.Match[str], view: str) -> tuple[int, int] | None:
    body = m.group("body")
    first = re.search(r"[A-Za-z0-9+/]{16,}", body)
    if not first or not re.search(r"[0-9+/]", first.group(0)):
        return None  # a prose mention of the header: nothing to redact
    return m.span(0)


def _openai(m: re.Match[str], view: str) -> tuple[int, int] | None:
    v = m.group(0)[3:]
    if char_classes(v) < 3 or is_prose_slug(v):
        return None  # sk-learn-the-basics, sk-prod-eu-west-1-cluster-a1
    return m.span(0)


def _bearer(m: re.Match[str], view: str) -> tuple[int, int] | None:
    v = view[m.start("s") : m.end("s")]  # M may have matched the lowercase copy
    if not looks_random(v, 16) or is_prose_slug(v) or not any(c.isdigit() for c in v):
        return None  # "bearer 2FA-recovery-codes-are-in-the-vault"
    return m.span("s")


def _url_password(m: re.Match[str], view: str) -> tuple[int, int] | None:
    secret = view[m.start("s") : m.end("s")]  # M may have matched the lowercase copy
    if m.group("scheme").lower() in CREDENTIAL_SCHEMES_NOT or is_placeholder(secret):
        return None  # mailto://john:doe@, https://user:${TOKEN}@
    return m.span("s")


def _line_bounds(view: str, start: int) -> tuple[int, int]:
    """The line of VIEW around START, or of it the _WINDOW characters each side: in a
    megabyte of minified JSON, each match looking for its line's ends would be quadratic."""
    lo, hi = max(0, start - _WINDOW), min(len(view), start + _WINDOW)
    ls = view.rfind("\n", lo, start)
    le = view.find("\n", start, hi)
    return (lo if ls < 0 else ls + 1), (hi if le < 0 else le)


def _keyword_value(m: re.Match[str], view: str) -> tuple[int, int, str] | None:
    span = groups_secret(m)
    if span is None:
        return None
    start, end = span
    if m.group("s4") is not None:
        ls, le = _line_bounds(view, start)
        prefix = view[ls : m.start("k")]
        if _ENV_PREFIX.fullmatch(prefix) and "=" in view[m.end("k") : start]:
            end = ls + len(
                view[ls:le].rstrip()
            )  # INI and .env: the value runs to the end of the line
        else:
            while (
                end > start
                and view[end - 1] in ".:!?"
                and (end == len(view) or view[end].isspace())
            ):
                end -= 1  # sentence punctuation after the value
    value = view[start:end]
    if is_placeholder(value):
        return None
    ls, le = _line_bounds(view, start)
    if (
        _CALL.search(value)
        and _DS.load() is None  # its filter says what is a call, loaded on first use
        and _DS.filters.is_indirect_reference(view[ls:le])
    ):
        return None
    return start, end, value


def _password(m: re.Match[str], view: str) -> tuple[int, int] | None:
    key = m.group("k").lower()
    if not _PASSWORD_KEY.search(key) or _NOT_PASSWORD_KEY.search(key):
        return None  # bypass, passed, passport
    got = _keyword_value(m, view)
    return None if got is None else got[:2]


def _secret(m: re.Match[str], view: str) -> tuple[int, int] | None:
    key = m.group("k").lower()
    if NOT_SECRET_KEY.search(key):
        return None
    got = _keyword_value(m, view)
    if got is None:
        return None
    start, end, value = got
    if not looks_random(value, 12) or UUID.fullmatch(value):
        return None
    return start, end


def _high_entropy(m: re.Match[str], view: str) -> tuple[int, int] | None:
    if HASHY_KEY.search(m.group("k")):
        return None
    start, end = groups_secret(m) or (0, 0)
    v = view[start:end]
    if (
        not looks_random(v, 16)
        or UUID.fullmatch(v)
        or v.startswith(IMAGE_MAGIC)
        or len(v) > 1024
        or (HEX.fullmatch(v) and len(v) in DIGEST_LENGTHS)
        or decodes_to_text(v)
    ):
        return None
    _DS.load()
    return (start, end) if _DS.entropy_ok(v) else None


def _command(m: re.Match[str], view: str) -> tuple[int, int] | None:
    """A password on a command line (`sshpass -p`, `mysql -pX`, `curl -u user:X`,
    `--password X`): not a variable, a path or the next flag."""
    span = groups_secret(m)
    if span is None:
        return None
    value = view[span[0] : span[1]]
    if is_placeholder(value) or value.startswith(("-", "~", "/", "./", "<")):
        return None  # --password-stdin, -p "$PW", --token ~/.token, --password --dbname
    if m.re.groupindex.get("flag") and _LOWER_WORDS.fullmatch(value):
        return None  # "pass --token option", "--password prompt"
    return span


def _prose_password(m: re.Match[str], view: str) -> tuple[int, int] | None:
    """ "my password is hunter2-Xq9!": the value must look like a password, not a word
    ("the password is required", "is <your password>")."""
    start, end = m.span("s")
    while end > start and view[end - 1] in ".,;:?)]}":
        end -= 1  # sentence punctuation after the value
    value = view[start:end]
    if is_placeholder(value) or len(value) < 6 or is_prose_slug(value):
        return None
    if not any(c.isalpha() for c in value) or value.isalpha():
        return None  # a number, a word: a password mixes letters with digits or symbols
    return start, end


_VALIDATORS: dict[str, Callable[[re.Match[str], str], tuple[int, int] | None]] = {
    "accept": _accept,
    "command": _command,
    "prose_password": _prose_password,
    "private_key": _private_key,
    "openai": _openai,
    "bearer": _bearer,
    "url_password": _url_password,
    "password": _password,
    "secret": _secret,
    "high_entropy": _high_entropy,
}


_WINDOW = 2000
_OVERLAP = 400


def _windows(view: str, lines: list[tuple[int, int]]) -> Iterable[tuple[int, str]]:
    """The LINES of VIEW, long lines cut into overlapping windows that an anchor flags:
    detect-secrets' keyword regexes are quadratic in the length of what they scan."""
    last = -1
    for ls, le in lines:
        ls = max(ls, last)  # flagged ranges may overlap by a line
        if ls >= le:
            continue
        last = le
        for line_start, line in _split_lines(view, ls, le):
            if len(line) <= _WINDOW:
                yield line_start, line
                continue
            for off in range(0, len(line), _WINDOW - _OVERLAP):
                chunk = line[off : off + _WINDOW]
                if _Anchors.library.search(chunk):
                    yield line_start + off, chunk
                if off + _WINDOW >= len(line):
                    break


def _split_lines(view: str, ls: int, le: int) -> Iterable[tuple[int, str]]:
    pos = ls
    for line in view[ls:le].splitlines(keepends=True):
        yield pos, line
        pos += len(line)


def _library_findings(
    view: str, provider: list[tuple[int, int]], keyword: list[tuple[int, int]]
) -> list[_Span]:
    """detect-secrets' detectors on the lines (or windows of long lines) that a provider
    prefix (PROVIDER) or a keyword assignment (KEYWORD) flags: its prefix plugins on the
    former, its keyword detector and keyword plugins on the latter. A line met again (the
    same file read twice) is not read again."""
    if not provider and not keyword:
        return []
    _DS.load()
    spans: list[_Span] = []
    rank = len(BUILTIN_RULES)
    windows = [(start, line, False) for start, line in _windows(view, provider)]
    windows += [(start, line, True) for start, line in _windows(view, keyword)]
    windows.sort(key=lambda w: (w[0], w[2]))
    seen: dict[tuple[str, bool, bool], list[tuple[int, int, str]]] = {}
    for i, (start, line, by_keyword) in enumerate(windows):
        if i + 1 < len(windows) and windows[i + 1][:2] == (start, line):
            continue  # flagged by both: read once, with every detector
        every = not by_keyword or (i > 0 and windows[i - 1][:2] == (start, line))
        key = (line, by_keyword, every)
        found = seen.get(key)
        if found is None:
            found = seen[key] = _line_findings(line, by_keyword, every)
        spans.extend(_Span(start + b, start + e, kind, rank) for b, e, kind in found)
    return spans


def _line_findings(line: str, by_keyword: bool, every: bool) -> list[tuple[int, int, str]]:
    """detect-secrets' findings in LINE as (start, end, kind): every plugin when EVERY,
    else the keyword plugins whose words LINE has; its keyword detector when BY_KEYWORD."""
    low = line.lower()
    found = [
        (kind, value, False)
        for kind, plugin in _plugins_for(low, every)
        for value in plugin.analyze_string(line)
        if isinstance(value, str)
    ]
    if by_keyword:
        found += _keyword_detector_values(line, low)
    spans: list[tuple[int, int, str]] = []
    for kind, value, is_keyword in found:
        secret = _library_secret(line, value, is_keyword)
        if not secret:
            continue
        at = line.find(secret)
        while at >= 0:  # every place it stands in the line (str.find: no regex to compile)
            spans.append((at, at + len(secret), kind))
            at = line.find(secret, at + len(secret))
    return spans


def _plugins_for(low: str, every: bool) -> list[tuple[str, Any]]:
    """The (kind, plugin) to run on a line (LOW, in lowercase): all of them when EVERY,
    else the keyword plugins whose words the line has."""
    assert _DS.plugins is not None
    if every:
        return [(kind, plugin) for kind, plugin, _ in _DS.plugins]
    if not _LONG_RUN.search(low):
        return []  # each keyword plugin's secret is a run of 24 to 88 such characters
    return [
        (kind, plugin)
        for kind, plugin, needs in _DS.keyword_plugins
        if all(any(w in low for w in group) for group in needs)
    ]


def _keyword_detector_values(line: str, low: str) -> list[tuple[str, str, bool]]:
    """What detect-secrets' keyword detector finds in LINE: nothing without one of its
    words, and its regexes that want a quote only on a line that has one."""
    if not any(word in low for word in _DS.keyword_words):
        return []
    quoted = any(q in line for q in "'\"`")
    return [
        ("secret_keyword", value, True)
        for groups, needs_quote in _DS.keyword_groups
        if quoted or not needs_quote
        for value in _DS.keyword.analyze_string(line, denylist_regex_to_group=groups)
    ]


def _library_secret(line: str, value: str, is_keyword: bool) -> str | None:
    """The secret in VALUE, what a detect-secrets detector found in LINE, or None when it
    is a look-alike (a placeholder, a call, a name passed on, a word)."""
    value = value.strip()
    named = _NAMED_VALUE.match(value)
    if named:
        value = value[named.end() :]  # AccountKey=VALUE: the name is not the secret
    if not (value and value in line):
        return None
    at = line.find(value)
    quoted = at > 0 and line[at - 1] in "\"'`"
    if not quoted:
        value = _VALUE_END.split(value, maxsplit=1)[0].rstrip(".:")
    if is_placeholder(value):
        return None
    if is_keyword and _CALL.search(value) and _DS.filters.is_indirect_reference(line):
        return None
    if is_keyword and not quoted and f"{value}=" in line and _IDENTIFIER.fullmatch(value):
        return None  # Config(api_key=api_key): a name passed on, not a secret
    if not is_keyword and not looks_random(value, 8):
        return None  # APACHEKAFKA is not an Artifactory password
    return value


def compile_extra_pattern(pattern: str | bytes) -> Any:
    """PATTERN compiled with RE2 (linear-time matching), or ValueError saying what to write."""
    import re2

    opts = re2.Options()
    opts.log_errors = False
    try:
        return re2.compile(pattern, opts)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(
            f"RE2 cannot compile {pattern!r} ({detail}). Extra patterns run with RE2 so that no "
            "pattern can hang capture: "
            "write it without backreferences (\\1) or lookaround ((?=...), (?!...), (?<=...), "
            "(?<!...)), "
            "e.g. match the whole secret like EMP-\\d{6}"
        ) from None


def redactor_from_config(config: Config) -> Redactor:
    cap = config.capture
    return Redactor(
        extra=[(p.name, p.pattern) for p in cap.extra_patterns], enabled=cap.redaction_enabled
    )
