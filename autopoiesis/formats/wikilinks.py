"""`[[wikilinks]]` between memory files, as Obsidian writes them: `[[target]]`,
`[[target|alias]]`, `[[target#heading]]`, `[[target#heading|alias]]` (and the embed form
`![[target]]`). A target is a file name without `.md` (`maria-lopez`), or a path from the
top of the memory repo (`knowledge/projects/billing/context`): a memory repo opened as an
Obsidian vault shows the graph, and any editor can write them.

Pure parse and render, standard library only: the index (the backlinks table), the
knowledge writer (links to known people, projects and procedures), `autopoiesis mv` (links
rewritten) and the fact comparison (`normalize_fact`: a link reads as its text) use it.
Links inside code (backtick spans, fenced blocks) are text, not links.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import NamedTuple

LINK = re.compile(r"(!?)\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


class WikiLink(NamedTuple):
    """One link: where it points (TARGET as written), the heading, the alias, its line."""

    target: str
    heading: str | None
    alias: str | None
    line: int  # 1-based
    embed: bool = False

    @property
    def key(self) -> str:
        """What resolves it: link_key(TARGET)."""
        return link_key(self.target)

    def text(self) -> str:
        """What a reader sees in its place: the alias, else the target's name (and heading)."""
        if self.alias:
            return self.alias
        name = PurePosixPath(self.target).name if self.target else ""
        return f"{name} > {self.heading}" if self.heading and name else (self.heading or name)


def link_key(target: str) -> str:
    """The lookup form of a link target: lower-case, no `.md`, no leading `./` or `/`."""
    t = target.strip().replace("\\", "/").lstrip("/")
    while t.startswith("./"):
        t = t[2:]
    if t.lower().endswith(".md"):
        t = t[:-3]
    return t.lower()


def file_keys(relpath: str) -> tuple[str, str]:
    """The keys a file answers to: its name and its path from the top, each as link_key."""
    key = link_key(relpath)
    return key.rsplit("/", 1)[-1], key


def _links_outside_code(line: str) -> Iterator[re.Match[str]]:
    """The links of LINE that do not start inside a code span (`[[x]]` in backticks is
    text; a link whose target holds backticks, `[[a`b`]]`, is still a link)."""
    spans = [m.span() for m in _CODE_SPAN.finditer(line)]
    for m in LINK.finditer(line):
        if not any(a <= m.start() < b for a, b in spans):
            yield m


def _lines_with_links(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of TEXT's lines that may hold a link, fenced blocks left out."""
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and "[[" in line:
            yield n, line


def parse_links(text: str) -> list[WikiLink]:
    """Every link of TEXT, in order (links in code are text)."""
    out: list[WikiLink] = []
    for n, line in _lines_with_links(text):
        for m in _links_outside_code(line):
            target = m.group(2).strip()
            if not target and not m.group(3):
                continue
            out.append(
                WikiLink(
                    target,
                    (m.group(3) or "").strip() or None,
                    (m.group(4) or "").strip() or None,
                    n,
                    bool(m.group(1)),
                )
            )
    return out


def render_link(target: str, alias: str | None = None, heading: str | None = None) -> str:
    """`[[target#heading|alias]]` (the parts given)."""
    return (
        "[[" + target + (f"#{heading}" if heading else "") + (f"|{alias}" if alias else "") + "]]"
    )


def plain_text(text: str) -> str:
    """TEXT with each link replaced by what a reader sees (WikiLink.text): what two entries
    are compared by, so a fact with a link says what it says without one."""
    if "[[" not in text:
        return text

    def shown(m: re.Match[str]) -> str:
        link = WikiLink(m.group(2).strip(), m.group(3), m.group(4), 0)
        return link.text()

    return LINK.sub(shown, text)


def rewrite_targets(text: str, renamed: Mapping[str, str]) -> tuple[str, int]:
    """TEXT with every link whose key is in RENAMED (link_key -> new target) pointing at
    the new target, its heading and alias kept (an alias-less link gets its old text as
    alias when the shown name would change). Returns (text, links rewritten). Code stays."""
    if "[[" not in text:
        return text, 0
    count = 0
    lines = text.split("\n")
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or "[[" not in line:
            continue
        lines[i], n = _rewrite_line(line, renamed)
        count += n
    return "\n".join(lines), count


def _rewrite_line(line: str, renamed: Mapping[str, str]) -> tuple[str, int]:
    """LINE with its links to RENAMED's keys rewritten (see rewrite_targets)."""
    linked = {m.start() for m in _links_outside_code(line)}
    count = 0

    def swap(m: re.Match[str]) -> str:
        nonlocal count
        if m.start() not in linked:
            return m.group(0)
        new = renamed.get(link_key(m.group(2)))
        if new is None:
            return m.group(0)
        count += 1
        old_name = PurePosixPath(m.group(2).strip()).name
        alias = m.group(4)
        if alias is None and PurePosixPath(new).name.lower() != old_name.lower():
            alias = old_name
        return m.group(1) + render_link(new, alias, m.group(3))

    return LINK.sub(swap, line), count


def resolve(key: str, by_name: Mapping[str, list[str]]) -> str | None:
    """The file KEY names: a path key names the file of that path (also a path below the
    top: `people/ann` for knowledge/people/ann.md), a bare name the file of that name, the
    shortest path first when several share it (Obsidian's rule). BY_NAME: file name key ->
    repo paths. None: broken."""
    name = key.rsplit("/", 1)[-1]
    candidates = sorted(by_name.get(name, ()), key=lambda p: (p.count("/"), p))
    if "/" not in key:
        return candidates[0] if candidates else None
    for p in candidates:
        pk = link_key(p)
        if pk == key or pk.endswith("/" + key):
            return p
    return None


__all__ = [
    "LINK",
    "WikiLink",
    "file_keys",
    "link_key",
    "parse_links",
    "plain_text",
    "render_link",
    "resolve",
    "rewrite_targets",
]
