"""The `url` trigger: links in a message, with GitHub pull requests and issues told
apart; `match` is a kind (any, github, github_pull, github_issue) or a host name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autopoiesis.formats.topic_trigger import Trigger, TriggerType
from autopoiesis.topics.triggers.common import FEATURE_SCAN_CHARS, URL, Message

EXAMPLE = "match: github_pull"
URL_KINDS = ("any", "github", "github_pull", "github_issue")
_GITHUB = re.compile(
    r"^(?:https?://)?(?:www\.)?github\.com/[\w.-]+/[\w.-]+/(pull|pulls|issues)/(\d+)", re.IGNORECASE
)


@dataclass(frozen=True)
class UrlInfo:
    url: str
    host: str
    kind: str  # github_pull | github_issue | github | other


def parse(raw: Mapping[str, Any], at: str, errors: list[str]) -> dict[str, Any]:
    kind = raw.get("match", "any")
    if not isinstance(kind, str) or not kind.strip():
        errors.append(
            f"{at}.match: write one of {', '.join(URL_KINDS)} or a host name like example.com."
        )
    elif kind not in URL_KINDS and not re.match(r"^[A-Za-z0-9.-]+\.[A-Za-z]{2,}\Z", kind):
        errors.append(
            f"{at}.match: {kind!r} is neither a URL kind ({', '.join(URL_KINDS)}) "
            "nor a host name like example.com."
        )
    return {"match": str(kind).lower()}


def _host(url: str) -> str:
    rest = re.sub(r"^(?:https?://)", "", url, flags=re.IGNORECASE)
    host = rest.split("/", 1)[0].split(":", 1)[0].lower()
    return host[4:] if host.startswith("www.") else host


def find_urls(text: str) -> list[UrlInfo]:
    out = []
    for m in URL.finditer(text[:FEATURE_SCAN_CHARS]):
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


def feature(message: Message) -> list[UrlInfo]:
    return find_urls(message.text)


def match(trig: Trigger, _: Any, urls: list[UrlInfo]) -> str | None:
    kind = trig.match or "any"
    for u in urls:
        if (
            kind == "any"
            or u.kind == kind
            or (kind == "github" and u.kind.startswith("github"))
            or (kind not in URL_KINDS and (u.host == kind or u.host.endswith("." + kind)))
        ):
            return u.url
    return None


URL_TRIGGER = TriggerType(
    "url",
    True,
    parse,
    lambda t: str(t.match),
    EXAMPLE,
    (),
    ("match",),
    feature=feature,
    match=match,
)
