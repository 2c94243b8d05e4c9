"""Secret redaction, applied before anything reaches raw/ or git.

Each rule is a (kind, regex) pair; a match becomes `[redacted:KIND]` and is counted.
The rules aim at the shapes real providers issue, anchored on their prefixes and
lengths, so that look-alikes (a git SHA, a UUID, prose like "sk-learn") survive.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autopoiesis.core.config import Config

# Order matters: more specific rules first (an Anthropic key also starts with "sk-").
BUILTIN_RULES: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"),
    ("anthropic_key", r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{32,}"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}(?:T3BlbkFJ[A-Za-z0-9_\-]{20,})?"),
    ("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("aws_secret_key", r"(?i)(?<![A-Za-z0-9])aws_?secret_?access_?key\s*[=:]\s*[\"']?[A-Za-z0-9/+=]{40}\b"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{20,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ("bearer_token", r"(?i)(?<=\bbearer )[A-Za-z0-9_\-\.=~+/]{16,}"),
    ("url_password", r"(?<=://)[^\s/:@]+:[^\s/@]+(?=@)"),
)
# A candidate openai_key must contain a digit and a letter: "sk-learn-the-basics-of-it" is prose.
_NEEDS_MIXED = {"openai_key", "bearer_token"}


@dataclass
class Redactor:
    """Replace secrets in text with `[redacted:KIND]`; keeps a running count per kind."""

    extra: Iterable[tuple[str, str]] = ()
    enabled: bool = True
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        rules = list(BUILTIN_RULES) + [(name, pattern) for name, pattern in self.extra]
        self._rules = [(kind, re.compile(pattern)) for kind, pattern in rules]
        self._quick = re.compile(
            r"sk-|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|xox|hooks\.slack|AIza|_live_|_test_|eyJ|(?i:bearer)|://|PRIVATE KEY|(?i:secret)"
        )
        self._has_extra = bool(rules[len(BUILTIN_RULES):])

    def redact(self, text: str) -> str:
        if not self.enabled or not text:
            return text
        if not self._has_extra and not self._quick.search(text):
            return text  # the common case: nothing that could be a secret
        for kind, rx in self._rules:
            text = rx.sub(partial(self._replace, kind), text)
        return text

    def _replace(self, kind: str, match: re.Match[str]) -> str:
        value = match.group(0)
        if kind in _NEEDS_MIXED and not (re.search(r"\d", value) and re.search(r"[A-Za-z]", value)):
            return value
        if kind == "openai_key" and value.count("-") >= 3 and not re.search(r"\d", value):
            return value
        self.counts[kind] += 1
        return f"[redacted:{kind}]"


def redactor_from_config(config: Config) -> Redactor:
    cap = config.capture
    return Redactor(extra=[(p.name, p.pattern) for p in cap.extra_patterns], enabled=cap.redaction_enabled)
