"""The detect-secrets side of redaction: the library loaded on the first text that needs
it, its keyword and provider plugins gated by the words each needs, run over windows of
the lines the anchors flagged, and the anchors themselves (`_Anchors`). The Redactor is
`redact`; the pattern tables are `redact_rules`."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autopoiesis.core.redact_rules import (
    ANCHORS,
    BUILTIN_RULES,
    FAMILIES_OF,
    HEX,
    PREFILTER_SOURCE,
    is_placeholder,
    is_reference,
    looks_random,
)

if TYPE_CHECKING:
    pass


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    kind: str
    rank: int


class _Anchors:
    """The anchors of redact_rules.ANCHORS, compiled once with RE2: one linear pass each,
    whatever the text. The prefilter is compiled for the first text (`load_prefilter`);
    the families' anchors and the library's only for the first text it flags (`load`):
    most texts hold no secret, and compiling them cost a compiled context ~2 ms."""

    prefilter: Any = None
    # (name, where its first match from an offset of UTF-8 bytes is, its families)
    families: tuple[
        tuple[str, Callable[[bytes, int], tuple[int, int] | None], tuple[str, ...]], ...
    ] = ()
    library: Any = None

    @classmethod
    def load_prefilter(cls) -> None:
        if cls.prefilter is None:
            cls.prefilter = compile_extra_pattern(PREFILTER_SOURCE)

    @classmethod
    def load(cls) -> None:
        if cls.library is not None:
            return
        cls.load_prefilter()
        cls.families = tuple(
            (name, _first_match(compile_extra_pattern(source.encode())), FAMILIES_OF[name])
            for name, source in ANCHORS.items()
        )
        cls.library = compile_extra_pattern(f"{ANCHORS['provider']}|{ANCHORS['keyword']}")


def _first_match(rx: Any) -> Callable[[bytes, int], tuple[int, int] | None]:
    """What finds the (start, end) of the first match of RX (RE2, compiled from bytes) in
    DATA from POS on, or None. The anchors search once per flagged line (thousands in a MB
    of code): the regexp's own Match, without the match object and generator that
    `re2.search` builds around it (a third of the anchors' time), where google-re2 has it."""
    match = getattr(getattr(rx, "_regexp", None), "Match", None)
    anchor = getattr(getattr(sys.modules.get("re2"), "_Anchor", None), "UNANCHORED", None)
    if match is None or anchor is None:

        def search(data: bytes, pos: int) -> tuple[int, int] | None:
            m = rx.search(data, pos)
            return None if m is None else m.span()

        return search

    def raw_search(data: bytes, pos: int) -> tuple[int, int] | None:
        span = match(anchor, data, pos, len(data))[0]
        return None if span[0] < 0 else span

    return raw_search


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_LONG_RUN = re.compile(r"[a-z0-9_\-+/=]{24}")


_NAMED_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*[=:]\s*(?=\S)")


_VALUE_END = re.compile(r"[\s,;&)]")


_CALL = re.compile(r"[\w.]+[\[(]")


# The keyword detector's regexes (detect_secrets.plugins.keyword) and what each needs in a
# line to match: the assignment or comparison after its word (`:`, `:=`, `=`, `=>`,
# `==`/`!=`), or the `;` its value ends with.
_KEYWORD_REGEX_NEEDS: dict[str, tuple[str, ...]] = {
    "FOLLOWED_BY_COLON_EQUAL_SIGNS_REGEX": (":=",),
    "FOLLOWED_BY_COLON_REGEX": (":",),
    "FOLLOWED_BY_COLON_QUOTES_REQUIRED_REGEX": (":",),
    # `[!=]{1,2}`
    "FOLLOWED_BY_EQUAL_SIGNS_OPTIONAL_BRACKETS_OPTIONAL_AT_SIGN_QUOTES_REQUIRED_REGEX": ("=", "!"),
    "FOLLOWED_BY_EQUAL_SIGNS_REGEX": ("=",),
    "FOLLOWED_BY_EQUAL_SIGNS_QUOTES_REQUIRED_REGEX": ("=",),
    "FOLLOWED_BY_ARROW_FUNCTION_SIGN_QUOTES_REQUIRED_REGEX": ("=",),
    "FOLLOWED_BY_QUOTES_AND_SEMICOLON_REGEX": (";",),
    # `[!=]{2,3}` between the value and the word
    "PRECEDED_BY_EQUAL_COMPARISON_SIGNS_QUOTES_REQUIRED_REGEX": ("==", "!=", "=!", "!!"),
}


class _DS:
    """detect-secrets, loaded once on first use (its import costs ~0.3 s)."""

    plugins: list[tuple[str, Any, bool]] | None = None  # (kind, plugin, reads a keyword)
    keyword: Any = None
    keyword_words: tuple[str, ...] = ()
    keyword_word: Any = None
    # (kind, plugin, the words it needs: one of each group) of the keyword plugins
    keyword_plugins: list[tuple[str, Any, tuple[tuple[str, ...], ...]]] = []
    keyword_groups: tuple[tuple[Any, bool], ...] = ()
    keyword_regex_needs: dict[Any, tuple[str, ...]] = {}
    b64: Any = None
    hexp: Any = None
    filters: Any = None

    @classmethod
    def load(cls) -> None:
        if cls.plugins is not None:
            return
        import logging
        import warnings

        shown = warnings.showwarning
        try:
            from detect_secrets.filters import heuristic
            from detect_secrets.plugins import keyword as kw
            from detect_secrets.plugins.high_entropy_strings import (
                Base64HighEntropyString,
                HexHighEntropyString,
            )

            cls._load_keyword(kw)
            cls.b64 = Base64HighEntropyString()
            cls.hexp = HexHighEntropyString()
            cls.filters = heuristic
            cls._load_plugins(_detector_classes())
        finally:
            # detect-secrets' loggers call logging.captureWarnings(True) when imported: every
            # warning of the process went to a logger from then on, so the warnings capture
            # and the CLI report after the first redaction ("a message with no text is not
            # kept") were lost, and a test's warnings.catch_warnings recorded nothing
            if warnings.showwarning is not shown:
                logging.captureWarnings(False)
                warnings.showwarning = shown

    @classmethod
    def _load_keyword(cls, kw: Any) -> None:
        """The keyword detector, its words and its regexes by whether they need a quote."""
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
        # one search of their alternation per line, not a substring test per word
        cls.keyword_word = re.compile("|".join(map(re.escape, cls.keyword_words)))
        # (its regexes, whether each of them needs a quote: those are not run on a line
        # without one)
        cls.keyword_groups = (
            (kw.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, True),
            (kw.CONFIG_DENYLIST_REGEX_TO_GROUP, False),
        )
        # what each of its regexes cannot match without (one of these strings), read off
        # their sources: each costs ~6 us a line (a case-insensitive alternation tried at
        # every position), and most keyword lines have no `;`, no `==`, or no `:`. A
        # regex not named here runs on every line.
        cls.keyword_regex_needs = {
            rx: needs
            for name, needs in _KEYWORD_REGEX_NEEDS.items()
            if (rx := getattr(kw, name, None)) is not None
        }

    @classmethod
    def _load_plugins(cls, classes: tuple[Any, ...]) -> None:
        """The provider plugins, and the words each keyword-reading one needs."""
        # the plugins that read a keyword (`ibm_cloud_iam_api_key = ...`, `AccountKey=`,
        # `aws_secret = "..."`) also run on the lines a keyword anchor flags
        by_keyword = {
            "NpmDetector",  # `//registry.npmjs.org/:_authToken=<uuid>`, the legacy form
            "AWSKeyDetector",
            "AzureStorageKeyDetector",
            "CloudantDetector",
            "IbmCloudIamDetector",
            "IbmCosHmacDetector",
            "SoftlayerDetector",
        }
        cls.plugins = [
            (
                re.sub(r"[^a-z0-9]+", "_", c.secret_type.lower()).strip("_"),
                c(),
                c.__name__ in by_keyword,
            )
            for c in classes
        ]
        # what a keyword plugin's regexes cannot match without, read off their sources
        # (lowercase; one word of each group): on a keyword line without them it is not
        # run. IBM's prefix is optional (`password = <44 chars>` is enough) and so is the
        # `api` of IBM and SoftLayer (whose prefix is `sl` or `softlayer`).
        key_or_pass = ("key", "pwd", "pass", "token")
        needs: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
            ("NpmDetector", (("authtoken",),)),
            ("AWSKeyDetector", (("aws",),)),
            ("AzureStorageKeyDetector", (("accountkey",),)),
            ("CloudantDetector", (("cl",),)),
            ("IbmCloudIamDetector", (key_or_pass,)),
            ("IbmCosHmacDetector", (("secret",), ("key",))),
            ("SoftlayerDetector", (("sl", "softlayer"),)),
        )
        cls.keyword_plugins = [
            (kind, plugin, groups)
            for kind, plugin, reads_keyword in cls.plugins
            if reads_keyword
            for name, groups in needs
            if type(plugin).__name__ == name
        ]

    @classmethod
    def entropy_ok(cls, v: str) -> bool:
        """detect-secrets' Shannon entropy, with a limit that grows with the length up to the
        plugin's own (4.5 bits for base64, 3.0 for hex): short random tokens count too."""
        is_hex = bool(HEX.fullmatch(v))
        plugin = cls.hexp if is_hex else cls.b64
        limit = min(plugin.entropy_limit, math.log2(len(v)) - (1.6 if is_hex else 1.0))
        return bool(plugin.calculate_shannon_entropy(v) > limit)


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
        if not secret or (kind in _WHOLE_TOKENS and not _whole_token(line, secret, kind)):
            continue
        at = line.find(secret)
        while at >= 0:  # every place it stands in the line (str.find: no regex to compile)
            spans.append((at, at + len(secret), kind))
            at = line.find(secret, at + len(secret))
    return spans


# The library's formats of one fixed length whose regex has no end (a Telegram bot's id,
# a colon and 35 characters): one glued to more of its characters is part of something
# else ("(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", a Metal error), and so
# is an id with a leading zero (Telegram's ids are numbers).
_WHOLE_TOKENS = {"telegram_bot_token"}
_TOKEN_CHAR = re.compile(r"[0-9A-Za-z_-]")


def _whole_token(line: str, secret: str, kind: str) -> bool:
    """Whether SECRET, a finding of KIND in LINE, stands there as a whole token of its
    format (see _WHOLE_TOKENS)."""
    at = line.find(secret)
    after = line[at + len(secret) : at + len(secret) + 1]
    if after and _TOKEN_CHAR.match(after):
        return False
    return not (kind == "telegram_bot_token" and secret.startswith("0"))


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
    if not _DS.keyword_word.search(low):
        return []
    quoted = any(q in line for q in "'\"`")
    needs = _DS.keyword_regex_needs
    found: list[tuple[str, str, bool]] = []
    for groups, needs_quote in _DS.keyword_groups:
        if needs_quote and not quoted:
            continue
        can_match = {
            rx: group
            for rx, group in groups.items()
            if rx not in needs or any(s in line for s in needs[rx])
        }
        if can_match:
            found += [
                ("secret_keyword", value, True)
                for value in _DS.keyword.analyze_string(line, denylist_regex_to_group=can_match)
            ]
    return found


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
    if is_keyword and (is_reference(value) or is_call(value, line)):
        return None
    if is_keyword and not quoted and f"{value}=" in line and _IDENTIFIER.fullmatch(value):
        return None  # Config(api_key=api_key): a name passed on, not a secret
    if not is_keyword and not looks_random(value, 8):
        return None  # APACHEKAFKA is not an Artifactory password
    return value


def is_call(value: str, line: str) -> bool:
    """Whether VALUE, read from LINE, is (the head of) a call or a subscript assigned to a
    keyword (`password = input("Password: ")`, `pw = request.POST.get('password')`): what
    detect-secrets' filter of indirect references says of the line."""
    if not _CALL.search(value):
        return False
    _DS.load()  # its filter, loaded on first use
    return bool(_DS.filters.is_indirect_reference(line))


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


# Ordinary text of a coding session: no secret in it. An extra pattern that redacts much of
# it would redact what is captured, before a transcript is written, for good.
_ORDINARY = (
    "We decided to keep the raw transcripts and rebuild the index when the schema changes.\n"
    "Run the tests with `uv run pytest -q` before you push; the build takes two minutes.\n"
    "def total(items):\n    return sum(item.price * item.quantity for item in items)\n"
    '{"name": "checkout", "version": "1.4.2", "private": true, "scripts": {"dev": "vite"}}\n'
    "src/cart/total.ts:42:7 - error TS2345: Argument of type 'string' is not assignable.\n"
    "Thanks, that works now. Could you also rename the helper and update the README?\n"
)
OVERREACH = 0.2  # the share of _ORDINARY an extra pattern may match


def overreach(rx: Any) -> str | None:
    """Why RX, a compiled extra pattern, would redact ordinary text, or None: it matches
    the empty string (every position of every text), or more than OVERREACH of a sample of
    ordinary prose, code, JSON and compiler output. Such a pattern, from a hand or from a
    collaborator's settings pulled with the memory, would turn what is captured into
    markers, and a transcript is never rewritten: the text would be gone."""
    if rx.search("") is not None:
        return "it matches the empty string, so it matches everywhere"
    covered = sum(m.end() - m.start() for m in rx.finditer(_ORDINARY))
    if covered > OVERREACH * len(_ORDINARY):
        return (
            f"it matches {covered * 100 // len(_ORDINARY)}% of a sample of ordinary prose and "
            "code, which holds no secret"
        )
    return None


def _detector_classes() -> tuple[Any, ...]:
    """The detect-secrets provider plugins the redactor runs (imported on first use)."""
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
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
    return (
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
