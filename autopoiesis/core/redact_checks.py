"""The checks a pattern's match must pass to be a secret (`_VALIDATORS`, by the check a rule
of `redact_rules` names): the value of a keyword assignment, a password on a command
line or in prose, a bearer token, a URL's password, a high-entropy run; each returns the
span to redact or None for a look-alike."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from autopoiesis.core.redact_rules import (
    CREDENTIAL_SCHEMES_NOT,
    DIGEST_LENGTHS,
    HASHY_KEY,
    HEX,
    IMAGE_MAGIC,
    NOT_SECRET_KEY,
    UUID,
    char_classes,
    decoded_text,
    groups_secret,
    is_compound_name,
    is_placeholder,
    is_prose_slug,
    is_reference,
    looks_random,
)

if TYPE_CHECKING:
    pass
from autopoiesis.core.redact_library import _DS, _WINDOW, is_call

_ENV_PREFIX = re.compile(r"\s*(?:export\s+|set\s+)?")
_INLINE_COMMENT = re.compile(r"[ \t]+#")
_JSON_STRING_END = re.compile(r'"(?=[ \t]*(?:[}\],]|$))')
# the words after a value's first to the end of its line: no quote, bracket or `key:` (the
# separators are spaces, which no word holds: nothing to give back)
_MORE_WORDS = re.compile(r"""(?:[ \t]+[^\s"'`,;&<>(){}\[\]:=#][^\s"'`,;&<>(){}\[\]:=]*)+""")


_LOWER_WORDS = re.compile(r"[a-z]+(?:[-_.][a-z]+)*")


_PASSWORD_KEY = re.compile(
    r"(?:^|[_.\-])(?:pass|pwd)(?:$|[_.\-])|password|passwd|passphrase|pwd$|contrase"
)


# go test's report of a test that passed, its name and its time: no password
_TEST_VERDICT = re.compile(r"PASS: [^\s:=]{1,300} \(\d{1,6}(?:\.\d{1,6})?s\)")


def _test_verdict(m: re.Match[str], view: str) -> bool:
    """Whether M's key opens go test's report of a test that passed ("--- PASS: TestTotal
    (0.00s)"), read as written (the keyword rules read the text in lower case), on its own
    line or within a command's output kept on one line."""
    return _TEST_VERDICT.match(view, m.start("k")) is not None


_NOT_PASSWORD_KEY = re.compile(
    r"(?:by|com|sur|over)pass|pass(?:ed|es|ing|age|enger|port|ive|through)"
)


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


def _url_token(m: re.Match[str], view: str) -> tuple[int, int] | None:
    """A URL's userinfo that is a token alone (`https://<40 characters>@github.com`): a
    random run, not a name (`https://first.last.name.here@host`)."""
    token = view[m.start("s") : m.end("s")]  # M may have matched the lowercase copy
    if m.group("scheme").lower() in CREDENTIAL_SCHEMES_NOT:
        return None
    if not looks_random(token, 20) or is_compound_name(token) or UUID.fullmatch(token):
        return None
    return m.span("s")


def _line_bounds(view: str, start: int) -> tuple[int, int]:
    """The line of VIEW around START, or of it the _WINDOW characters each side: in a
    megabyte of minified JSON, each match looking for its line's ends would be quadratic."""
    lo, hi = max(0, start - _WINDOW), min(len(view), start + _WINDOW)
    ls = view.rfind("\n", lo, start)
    le = view.find("\n", start, hi)
    return (lo if ls < 0 else ls + 1), (hi if le < 0 else le)


# how the code after a string starts (a quoted secret never does)
_CODE_AFTER_A_STRING = ")]},;+"


def _keyword_value(m: re.Match[str], view: str) -> tuple[int, int, str] | None:
    span = groups_secret(m)
    if span is None:
        return None
    start, end = span
    if m.group("s4") is not None:
        ls, le = _line_bounds(view, start)
        at_line_start = _ENV_PREFIX.fullmatch(view[ls : m.start("k")]) is not None
        if (
            at_line_start
            and "=" in view[m.end("k") : start]
            and not (view[end : end + 1] in "'\"`" and is_placeholder(view[start:end]))
        ):
            # INI and .env: the value runs to the end of the line (but a word like `true`
            # that a quote closes is a setting quoted in prose: "enable_assertion_pass_hook
            # =true' to pytest.ini"), or to a comment after it
            # (`SAFE_UNLIMITED_TOKENS = 4096   # Works on 3-4 B Llama-3`), as dotenv and
            # the shell read it
            end = _line_value_end(view, start, ls, le)
        elif at_line_start and not _not_a_value(view, start, end):
            # YAML's `passphrase: correct horse battery staple`: a plain value runs to the
            # end of the line, so words after the first are the value's too (not when
            # more follows them: a quote, a bracket, another `key:`)
            whole = _line_value_end(view, start, ls, le)
            if _MORE_WORDS.fullmatch(view, end, whole):
                end = whole
        else:
            while (
                end > start
                and view[end - 1] in ".:!?"
                and (end == len(view) or view[end].isspace())
            ):
                end -= 1  # sentence punctuation after the value
    elif view[start : start + 1].isspace() or view[start : start + 1] in _CODE_AFTER_A_STRING:
        # the quote before it closes a string the key is in, and what follows is code up
        # to the next string: `input("Password: ") + x + "..."`, in a file read as one line
        return None
    value = view[start:end]
    if _not_a_value(view, start, end):
        return None
    return start, end, value


def _line_value_end(view: str, start: int, ls: int, le: int) -> int:
    """Where a value that starts at START and runs to the end of its line (LS, LE) ends:
    before the spaces at the end, a comment after it, or the end of a JSON string."""
    end = ls + len(view[ls:le].rstrip())
    comment = _INLINE_COMMENT.search(view, start, end)
    end = comment.start() if comment else end
    # within a JSON string (a file a tool call writes) the last line ends where the
    # string does: `api_key = config.api_key"}` names config.api_key
    closed = _JSON_STRING_END.search(view, start, end)
    return closed.start() if closed else end


def _not_a_value(view: str, start: int, end: int) -> bool:
    """Whether VIEW[START:END], found after a keyword, holds no secret: a placeholder, a
    name or number (is_reference) or a call (is_call, told by its line). A bare value ends
    at a bracket: the one after it says that it is a call's head (`password = input(`
    within a line of JSON, where the value does not run to the end of the line)."""
    value = view[start:end]
    if is_placeholder(value) or is_reference(value):
        return True
    ls, le = _line_bounds(view, start)
    return is_call(view[start : end + 1], view[ls:le])


def _password(m: re.Match[str], view: str) -> tuple[int, int] | None:
    key = m.group("k").lower()
    if not _PASSWORD_KEY.search(key) or _NOT_PASSWORD_KEY.search(key):
        return None  # bypass, passed, passport
    if _test_verdict(m, view):
        return None
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
    if HASHY_KEY.search(m.group("k")) or _test_verdict(m, view):
        return None
    start, end = groups_secret(m) or (0, 0)
    v = view[start:end]
    if (
        not looks_random(v, 16)
        or is_compound_name(v)  # a name in code or a model's id: NonFunctionalRequirements
        or UUID.fullmatch(v)
        or v.startswith(IMAGE_MAGIC)
        or len(v) > 1024
        or (HEX.fullmatch(v) and len(v) in DIGEST_LENGTHS)
    ):
        return None
    said = decoded_text(v)
    if said is not None:
        # base64 of text: a secret only when what it says is one, given to the same key
        return (start, end) if _says_a_secret(m.group("k"), said) else None
    _DS.load()
    return (start, end) if _DS.entropy_ok(v) else None


def _says_a_secret(key: str, said: str) -> bool:
    """Whether SAID, the text a base64 value of KEY decodes to, holds a secret as the
    built-in rules judge it, given to KEY (`api-key: <base64 of a random token>`) or
    within it (an env file, a service account's JSON with its private key). Base64 of
    base64 recurses, each time on a text of 3/4 the length (a value is at most 1,024
    characters), so it ends."""
    from autopoiesis.core.redact import find_secrets  # the rules' own search: no cycle at import

    return bool(find_secrets(f"{key}: {said}"))


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
    if _not_a_value(view, start, end) or len(value) < 6 or is_prose_slug(value):
        return None  # `password = input("Password: ")` is no password said in prose
    if not any(c.isalpha() for c in value) or value.isalpha():
        return None  # a number, a word: a password mixes letters with digits or symbols
    return start, end


def _cookie(m: re.Match[str], view: str) -> tuple[int, int] | None:
    """A cookie's value in a Cookie header: random (a session's id, a CSRF token), not a
    setting or a name (`theme=dark`, `lang=en-US`)."""
    start, end = m.span("s")
    v = view[start:end]  # M matched the lowercase copy
    if is_placeholder(v) or not looks_random(v, 16) or is_compound_name(v) or is_prose_slug(v):
        return None
    return start, end


def _aws_secret(m: re.Match[str], view: str) -> tuple[int, int] | None:
    """An AWS secret access key said beside its access key or its name: 40 characters of
    base64 that mix letters of both cases and digits, never a git SHA (40 hex digits)."""
    start, end = m.span("s")
    v = view[start:end]
    if HEX.fullmatch(v) or char_classes(v) < 3 or is_prose_slug(v):
        return None
    return start, end


_VALIDATORS: dict[str, Callable[[re.Match[str], str], tuple[int, int] | None]] = {
    "accept": _accept,
    "command": _command,
    "prose_password": _prose_password,
    "private_key": _private_key,
    "openai": _openai,
    "bearer": _bearer,
    "url_password": _url_password,
    "url_token": _url_token,
    "password": _password,
    "secret": _secret,
    "high_entropy": _high_entropy,
    "aws_secret": _aws_secret,
    "cookie": _cookie,
}
