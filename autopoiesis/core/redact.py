"""Secret redaction: the one owner every path to disk, git, memory.db or a model goes through.

`Redactor.redact(text)` replaces each secret, and only the secret, with `[redacted:KIND]`
and counts it per kind. Detection has three layers:

1. A quick prefilter (one regex over the text). Ordinary prose has none of the prefixes,
   keywords or long assignments a secret needs, and returns untouched in microseconds:
   appending a message to a transcript stays well under a millisecond.
2. Our own rules for the shapes providers issue (anchored on prefixes, lengths and
   alphabets), for PEM blocks, credentials in URLs, keyword assignments (`password=`,
   `api_key:`, `DB_PASSWORD=`, JDBC and INI), AWS STS JSON, and high-entropy assignments.
3. detect-secrets' plugins (https://github.com/Yelp/detect-secrets): its regex detectors,
   its keyword detector and its Shannon-entropy measure, loaded on the first text that
   passes the prefilter (the library costs ~0.3 s to import).

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

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autopoiesis.core.redact_rules import (
    BUILTIN_RULES,
    CREDENTIAL_SCHEMES_NOT,
    DIGEST_LENGTHS,
    ESCAPE_VIEW,
    ESCAPES,
    HASHY_KEY,
    IMAGE_MAGIC,
    MARKER,
    NOT_SECRET_KEY,
    PREFILTER_SOURCE,
    UUID,
    char_classes,
    decodes_to_text,
    groups_secret,
    is_placeholder,
    is_prose_slug,
    looks_random,
)

if TYPE_CHECKING:
    from autopoiesis.core.config import Config

_PREFILTER: Any = None


def _prefilter() -> Any:
    """The prefilter, compiled once with RE2: one linear pass, whatever the text."""
    global _PREFILTER
    if _PREFILTER is None:
        _PREFILTER = compile_extra_pattern(PREFILTER_SOURCE)
    return _PREFILTER


class _DS:
    """detect-secrets, loaded once on first use (its import costs ~0.3 s)."""

    plugins: list[Any] | None = None
    keyword: Any = None
    keyword_groups: tuple[Any, ...] = ()
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
        cls.keyword_groups = (
            kw.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
            kw.CONFIG_DENYLIST_REGEX_TO_GROUP,
        )
        cls.b64 = Base64HighEntropyString()
        cls.hexp = HexHighEntropyString()
        cls.filters = heuristic
        cls.plugins = [c() for c in classes]

    @classmethod
    def entropy_ok(cls, v: str) -> bool:
        """detect-secrets' Shannon entropy, with a limit that grows with the length up to the
        plugin's own (4.5 bits for base64, 3.0 for hex): short random tokens count too."""
        is_hex = bool(re.fullmatch(r"[0-9a-fA-F]+", v))
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
        as a fresh assignment once the token before `=` is a marker), so what one pass
        redacted is passed again until nothing changes (two passes where there were
        secrets, one where there were none)."""
        if not self.enabled or not text:
            return text
        for _ in range(_MAX_PASSES):
            done = self._redact_once(text)
            if done == text:
                return done
            text = done
        return text

    def _redact_once(self, text: str) -> str:
        safe = _encodable(text)  # RE2 matches UTF-8: a lone surrogate reads as U+FFFD, same offsets
        spans: list[_Span] = []
        if _prefilter().search(safe):
            spans = find_secrets(safe)
        for rank, (kind, rx) in enumerate(self._extra, start=len(BUILTIN_RULES) + 10):
            spans.extend(
                _Span(m.start(), m.end(), kind, rank)
                for m in rx.finditer(safe)
                if m.end() > m.start()
            )
        if spans and "[redacted:" in text:
            # a marker of an earlier pass is never (part of) a secret: redaction is idempotent
            marks = [m.span() for m in MARKER.finditer(text)]
            spans = [sp for sp in spans if not any(sp.start < e and b < sp.end for b, e in marks)]
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for span in _merge(spans):
            out.append(text[pos : span.start])
            out.append(f"[redacted:{span.kind}]")
            self.counts[span.kind] += 1
            pos = span.end
        out.append(text[pos:])
        return "".join(out)


def marker_kinds(text: str) -> list[str]:
    """The KIND of every `[redacted:KIND]` marker in TEXT, in order: how a piece of an
    already redacted transcript (a continuation part) counts its own redactions."""
    return [m.group()[len("[redacted:") : -1] for m in MARKER.finditer(text)]


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


def _view(text: str) -> str:
    """TEXT as the detectors read it, same length: JSON escapes read as what they stand for,
    and the markers of an earlier pass are blanked (their KIND is no keyword to match)."""
    if "\\" in text:
        text = ESCAPES.sub(lambda m: ESCAPE_VIEW[m.group(0)[1]], text)
    if "[redacted:" in text:
        text = MARKER.sub(lambda m: "[" + " " * (len(m.group(0)) - 2) + "]", text)
    return text


_COMPILED: list[tuple[str, int, re.Pattern[str]]] = [
    (kind, i, re.compile(p)) for i, (kind, p) in enumerate(BUILTIN_RULES)
]


def find_secrets(text: str) -> list[_Span]:
    """Every secret span in TEXT, validated, not yet merged."""
    view = _view(text)
    spans: list[_Span] = []
    for kind, rank, rx in _COMPILED:
        for m in rx.finditer(view):
            span = _VALIDATORS.get(kind, _accept)(m, view)
            if span is not None and span[1] > span[0]:
                spans.append(_Span(span[0], span[1], kind, rank))
    spans.extend(_library_findings(view))
    return spans


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
    v = m.group("s")
    if not looks_random(v, 16) or is_prose_slug(v) or not any(c.isdigit() for c in v):
        return None  # "bearer 2FA-recovery-codes-are-in-the-vault"
    return m.span("s")


def _url_password(m: re.Match[str], view: str) -> tuple[int, int] | None:
    if m.group("scheme").lower() in CREDENTIAL_SCHEMES_NOT or is_placeholder(m.group("s")):
        return None  # mailto://john:doe@, https://user:${TOKEN}@
    return m.span("s")


def _line_bounds(view: str, start: int) -> tuple[int, int]:
    ls = view.rfind("\n", 0, start) + 1
    le = view.find("\n", start)
    return ls, (len(view) if le < 0 else le)


def _keyword_value(m: re.Match[str], view: str) -> tuple[int, int, str] | None:
    span = groups_secret(m)
    if span is None:
        return None
    start, end = span
    if m.group("s4") is not None:
        ls, le = _line_bounds(view, start)
        prefix = view[ls : m.start("k")]
        if re.fullmatch(r"\s*(?:export\s+|set\s+)?", prefix) and "=" in view[m.end("k") : start]:
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
        _DS.filters is not None
        and _DS.filters.is_indirect_reference(view[ls:le])
        and re.search(r"[\w.]+[\[(]", value)
    ):
        return None
    return start, end, value


def _password(m: re.Match[str], view: str) -> tuple[int, int] | None:
    key = m.group("k").lower()
    if not re.search(
        r"(?:^|[_.\-])(?:pass|pwd)(?:$|[_.\-])|password|passwd|passphrase|pwd$|contrase", key
    ) or re.search(r"(?:by|com|sur|over)pass|pass(?:ed|es|ing|age|enger|port|ive|through)", key):
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
        or (re.fullmatch(r"[0-9a-fA-F]+", v) and len(v) in DIGEST_LENGTHS)
        or decodes_to_text(v)
    ):
        return None
    _DS.load()
    return (start, end) if _DS.entropy_ok(v) else None


_VALIDATORS: dict[str, Callable[[re.Match[str], str], tuple[int, int] | None]] = {
    "private_key": _private_key,
    "openai_key": _openai,
    "bearer_token": _bearer,
    "url_password": _url_password,
    "password": _password,
    "secret": _secret,
    "high_entropy": _high_entropy,
}


_WINDOW = 2000
_OVERLAP = 400


def _windows(view: str) -> Iterable[tuple[int, str]]:
    """The lines of VIEW that the prefilter flags, long lines cut into overlapping windows:
    detect-secrets' keyword regexes are quadratic in the length of what they scan."""
    pos = 0
    for line in view.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        if len(line) <= _WINDOW:
            if _prefilter().search(line):
                yield start, line
            continue
        for off in range(0, len(line), _WINDOW - _OVERLAP):
            chunk = line[off : off + _WINDOW]
            if _prefilter().search(chunk):
                yield start + off, chunk
            if off + _WINDOW >= len(line):
                break


def _library_findings(view: str) -> list[_Span]:
    """detect-secrets' detectors on the lines (or windows of long lines) the prefilter flags."""
    _DS.load()
    assert _DS.plugins is not None
    spans: list[_Span] = []
    rank = len(BUILTIN_RULES)
    for start, line in _windows(view):
        found: list[tuple[str, str, bool]] = []
        for plugin in _DS.plugins:
            kind = re.sub(r"[^a-z0-9]+", "_", plugin.secret_type.lower()).strip("_")
            found.extend(
                (kind, v, False) for v in plugin.analyze_string(line) if isinstance(v, str)
            )
        for groups in _DS.keyword_groups:
            found.extend(
                ("secret_keyword", v, True)
                for v in _DS.keyword.analyze_string(line, denylist_regex_to_group=groups)
            )
        for kind, value, is_keyword in found:
            value = value.strip()
            named = re.match(r"[A-Za-z_][A-Za-z0-9_]*\s*[=:]\s*(?=\S)", value)
            if named:
                value = value[named.end() :]  # AccountKey=VALUE: the name is not the secret
            if not (value and value in line):
                continue
            at = line.find(value)
            quoted = at > 0 and line[at - 1] in "\"'`"
            if not quoted:
                value = re.split(r"[\s,;&)]", value, maxsplit=1)[0].rstrip(".:")
            if is_placeholder(value) or (
                is_keyword
                and _DS.filters.is_indirect_reference(line)
                and re.search(r"[\w.]+[\[(]", value)
            ):
                continue
            if not is_keyword and not looks_random(value, 8):
                continue  # APACHEKAFKA is not an Artifactory password
            for mm in re.finditer(re.escape(value), line):
                spans.append(_Span(start + mm.start(), start + mm.end(), kind, rank))
    return spans


def compile_extra_pattern(pattern: str) -> Any:
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
