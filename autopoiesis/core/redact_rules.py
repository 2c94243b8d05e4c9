"""What a secret looks like, and what only looks like one: the pattern tables and the
look-alike checks of the redactor (redact.py).

BUILTIN_RULES are our own rules (layer 2 of redact.py's module doc); PREFILTER_SOURCE is
the quick prefilter (layer 1); the rest are the tables and pure checks the validators use
to refuse look-alikes (git SHAs, UUIDs, digests, base64 images, prose slugs, placeholders).
Standard library only: the kernel imports it on the light path.
"""

from __future__ import annotations

import base64
import binascii
import re

_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_B64RUN = r"[A-Za-z0-9+/]{16,}={0,2}"
# A PEM block: header lines (Proc-Type: ...), base64 lines, a short last line, the footer.
# Without its footer (a truncated paste) the block ends with its last base64 line; a header
# followed by prose has no body and is left alone.
_PEM_TAIL = (
    r"\s+[A-Za-z0-9+/]{1,15}={0,2}(?=\s*-----END)"
    r"|[ \t]*\r?\n[ \t]*(?=[A-Za-z]*[0-9+/=])[A-Za-z0-9+/]{1,15}={0,2}(?=[ \t]*(?:\r?\n|\Z))"
)
_PEM = (
    r"-----BEGIN "
    rf"{_PEM_LABEL}-----(?P<body>(?:\s*[A-Za-z][A-Za-z-]+:[^\n]*\n)*\s*{_B64RUN}(?:\s+{_B64RUN})*(?:{_PEM_TAIL})?)"
    rf"(?:\s*-----END {_PEM_LABEL}-----)?"
)
# The value of an assignment: quoted, or a bare run that stops at whitespace, a quote, a
# bracket or a `;`/`&` that starts the next `name=` (a JDBC or URL parameter).
_BARE = r"""(?:[^\s"'`,;&<>(){}\[\]]|[;&](?![A-Za-z_][\w.\-]*=|\s|$)){1,512}"""
_VALUE = (
    r"""\s*(?:"(?P<s1>[^"\n]{1,512})"|'(?P<s2>[^'\n]{1,512})'|`(?P<s3>[^`\n]{1,512})`"""
    rf"""|(?P<s4>{_BARE}))"""
)
_ASSIGN = r"""["'\]]{0,2}\s*(?:=|:=|:|=>)"""
_KEY_START = r"(?<![A-Za-z0-9_.\-])"
_TOKEN = r"[A-Za-z0-9+/=_\-]{16,}"
_ENTROPY_VALUE = (
    rf"""\s*(?:"(?P<s1>{_TOKEN})"|'(?P<s2>{_TOKEN})'|(?P<s4>{_TOKEN})(?![^\s,;&)}}\]]))"""
)

# (kind, pattern). A pattern's secret is its group `s` (or s1..s4), else the whole match.
# Order is priority when two findings start at the same place (an Anthropic key also
# starts with "sk-").
BUILTIN_RULES: tuple[tuple[str, str], ...] = (
    ("private_key", _PEM),
    ("anthropic_key", r"\bsk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_\-]{32,}"),
    ("openai_key", r"\bsk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{20,}"),
    ("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}\b"),
    (
        "aws_secret_key",
        rf"(?i){_KEY_START}(?:aws_?)?secret_?access_?key{_ASSIGN}\s*[\"']?(?P<s>[A-Za-z0-9/+=]{{40}})(?![A-Za-z0-9/+=])",
    ),
    (
        "aws_session_token",
        rf"(?i){_KEY_START}(?:aws_?)?(?:session|security)_?token{_ASSIGN}\s*[\"']?(?P<s>[A-Za-z0-9/+=]{{40,}})",
    ),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    (
        "gitlab_token",
        r"\b(?:(?:glpat|gldt|glft|glsoat|glrt|glcbt|glptt|glimt|gloas|glagent)-[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,50})",
    ),
    ("huggingface_token", r"\b(?:hf_|api_org_)[A-Za-z]{34}\b"),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])"),
    ("twilio_key", r"\b(?:SK|AC)[0-9a-fA-F]{32}\b"),
    ("slack_token", r"\bxox(?:[abposr]|e\.xox[bp])-\d+-[A-Za-z0-9-]{8,}"),
    ("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])"),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{20,}"),
    ("digitalocean_token", r"\bdo[por]_v1_[a-f0-9]{64}\b"),
    ("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    ("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("jwt", r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    (
        "azure_key",
        r"(?i)(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey|SharedSecretValue)\s*=\s*(?P<s>[A-Za-z0-9+/]{20,}={0,2})",
    ),
    (
        "basic_auth",
        r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<s>[A-Za-z0-9+/]{8,}={0,2})",
    ),
    ("bearer_token", r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9_\-.=~+/]{16,})"),
    (
        "url_password",
        r"(?i)(?<![a-z0-9+.\-])(?P<scheme>[a-z][a-z0-9+.\-]{0,30})://[^\s/:@\"'<>]+:(?P<s>[^\s/@\"'<>]+)@",
    ),
    (
        "password",
        rf"(?i){_KEY_START}(?P<k>[A-Za-z0-9_.\-]{{0,40}}?(?:pass|pwd|contrase(?:ñ|n)a)[A-Za-z0-9_\-]{{0,20}}){_ASSIGN}{_VALUE}",
    ),
    (
        "secret",
        rf"(?i){_KEY_START}(?P<k>[A-Za-z0-9_.\-]{{0,40}}?(?:secret|token|api_?key|apikey|access_?key|auth_?key|private_?key|"
        rf"signing_?key|encryption_?key|client_?key|credentials?|auth)[A-Za-z0-9_\-]{{0,20}}){_ASSIGN}{_VALUE}",
    ),
    # a YAML `key: value` needs the space: `bot123:abc` or `host:port` is no assignment
    (
        "high_entropy",
        rf"""{_KEY_START}(?P<k>[A-Za-z_][A-Za-z0-9_.\-]{{0,60}})["'\]]{{0,2}}(?:\s*(?:=|:=|=>)|:(?=[\s"'])){_ENTROPY_VALUE}""",
    ),
)

# Nothing can be a secret without one of these: a provider prefix, a keyword next to an
# assignment, credentials in a URL, or a long token after an assignment.
PREFILTER_SOURCE = (
    r"-----BEGIN|sk-|[sr]k_|AKIA|ASIA|ABIA|ACCA|A3T|gh[pousr]_|github_pat_|gl[a-z]{2,6}-|GR1348941|hf_|api_org_|npm_|pypi-"
    r"|SG\.|\b(?:AC|SK)[0-9a-fA-F]{32}|xox|hooks\.slack|AIza|eyJ|do[por]_v1_|shp(?:at|ca|pa|ss)_|dapi|sq0|AKC"
    r"|://[^\s/]*@|[MNO][A-Za-z0-9_-]{23,25}\.|\d{8,10}:|-us\d|(?i:bearer|basic\s)"
    r"|(?i:pass|pwd|secret|token|key|auth|cred|contrase)[A-Za-z0-9_.\-\"'\]]{0,30}\s*(?:[:=]|=>)"
    r"|[:=]\s*[\"'`]?[A-Za-z0-9+/=_\-]{16}"
)

# A same-length view of JSON escapes: `\n` (two characters) reads as a space and a newline.
ESCAPES = re.compile(r"\\[nrt\"']")
ESCAPE_VIEW = {"n": " \n", "r": " \r", "t": "  ", '"': ' "', "'": " '"}

PLACEHOLDER_WORDS = frozenset(
    "str string int bool bytes none null nil true false undefined optional required empty any "
    "object dict list "
    "secret secrets password passwords token tokens key keys value values env environ getenv yes "
    "no on off "
    "changeme xxx xxxx xxxxxx redacted hidden masked omitted placeholder example sample dummy "
    "test todo tbd".split()
)
HASHY_KEY = re.compile(
    r"(?i)(?:sha\d*|md5|hash|digest|checksum|integrity|commit|parent|tree|etag|uuid|guid|(?:^|[_.\-])ids?$|[a-z]Ids?$"
    r"|ref|rev|revision|version|image|png|jpe?g|gif|icon|avatar|thumbnail|font)"
)
IMAGE_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "JVBERi", "PHN2Zy", "AAAA")
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MARKER = re.compile(r"\[redacted:[^\]\s]{1,80}\]")
DIGEST_LENGTHS = {32, 40, 56, 64, 96, 128}
CREDENTIAL_SCHEMES_NOT = {"mailto", "http-equiv", "urn", "news", "tel"}


def groups_secret(m: re.Match[str]) -> tuple[int, int] | None:
    names = m.re.groupindex
    for g in ("s", "s1", "s2", "s3", "s4"):
        if g in names and m.group(g) is not None:
            return m.span(g)
    return m.span(0)


def char_classes(v: str) -> int:
    return sum(
        (any(c.islower() for c in v), any(c.isupper() for c in v), any(c.isdigit() for c in v))
    )


def is_prose_slug(v: str) -> bool:
    """`2FA-recovery-codes-are-in-the-vault`, `prod-eu-west-1-cluster-a1`: words joined by
    dashes."""
    parts = [p for p in re.split(r"[-_.]", v) if p]
    if len(parts) < 3:
        return False
    words = sum(1 for p in parts if re.fullmatch(r"[a-z]{2,}", p))
    return words / len(parts) >= 0.6


def looks_random(v: str, min_len: int = 8) -> bool:
    """A token that mixes character classes (a digit, or 20+ characters) and is not a slug of
    words."""
    if len(v) < min_len or char_classes(v) < 2 or is_prose_slug(v):
        return False
    return any(c.isdigit() for c in v) or len(v) >= 20


def is_placeholder(v: str) -> bool:
    low = v.lower().strip(".")
    if not v or low in PLACEHOLDER_WORDS or len(v) < 3:
        return True
    if not any(c.isalnum() for c in v):
        return True  # ******, ...., ----
    if v[0] in "$%<{[" or v.startswith(("os.", "process.env", "env.", "getenv", "[redacted:")):
        return True
    if re.fullmatch(r"(?i)(?:your|my|the|some|insert|enter|put)[-_ ]?\w*", v) or re.fullmatch(
        r"(.)\1{3,}", v
    ):
        return True
    return False


def decodes_to_text(v: str) -> bool:
    """Base64 of JSON or text (data, not a secret); random secrets decode to binary junk."""
    try:
        raw = base64.b64decode(
            v + "=" * (-len(v) % 4),
            altchars=b"-_" if ("-" in v or "_" in v) else None,
            validate=True,
        )
    except (binascii.Error, ValueError):
        return False
    if len(raw) < 8:
        return False
    printable = sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13))
    return printable / len(raw) > 0.95


NOT_SECRET_KEY = re.compile(
    r"(?:^|[_.\-])(?:max|min|num|n|count|total|input|output|prompt|completion|cached|reasoning)_?tokens?|tokens?_(?:in|out|count|used|limit)"
    r"|author|oauth_?url|auth_?url|authority|key_?(?:name|id|type|path|file|prefix|length|size|format)$|keyboard|monkey|turkey"
)
