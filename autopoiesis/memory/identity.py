"""Filling the identity template knowledge/identity/USER.md: who the agent works with
(name, role, time zone, how they like answers). A new memory has the template's
placeholder; `integrate claude-code` offers to fill it (asked on a terminal, or given as
flags by a script). Each field is one `- Field: value` line, replaced in place when it is
there, added after the others when not; the rest of the file (a person's own lines) is
kept. The change is committed as an `identity:` commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.paths import MemoryRepo, atomic_write, shipped_files
from autopoiesis.core.text import one_line

USER_FILE = "knowledge/identity/USER.md"
# the fields, in the order they are written: (key of fill_user, the label in the file)
FIELDS = (("name", "Name"), ("role", "Role"), ("timezone", "Time zone"),
          ("preferences", "Preferences"))  # fmt: skip
_PLACEHOLDER = re.compile(r"^Who I work with\. Edit this file:.*\n\n?", re.M)
_UPDATED = re.compile(r"^updated: .*$", re.M)


@dataclass(frozen=True)
class IdentityUpdate:
    """What `fill_user` changed: the labels written, and the commit (None: nothing to do,
    or not asked to commit)."""

    changed: tuple[str, ...]
    commit: str | None


def _body(text: str) -> str:
    return _UPDATED.sub("", text)


def is_template(repo: MemoryRepo) -> bool:
    """Whether USER.md is still the template a new memory got (its date aside)."""
    shipped = shipped_files().get(USER_FILE)
    try:
        text = (repo.root / USER_FILE).read_text(encoding="utf-8")
    except OSError:
        return False
    return shipped is not None and _body(text) == _body(shipped.decode("utf-8"))


def fill_user(
    repo: MemoryRepo, values: dict[str, str | None], *, commit: bool = True
) -> IdentityUpdate:
    """Write VALUES (name, role, timezone, preferences; None or blank: left as it is) into
    USER.md and commit it."""
    unknown = set(values) - {k for k, _ in FIELDS}
    if unknown:
        raise ValueError(f"unknown identity fields: {', '.join(sorted(unknown))}")
    path = repo.root / USER_FILE
    text = path.read_text(encoding="utf-8") if path.exists() else "# User\n"
    changed = []
    for key, label in FIELDS:
        value = one_line(values.get(key) or "", 300)
        if not value:
            continue
        line = f"- {label}: {value}"
        pattern = re.compile(rf"^- {re.escape(label)}:.*$", re.M | re.I)
        if pattern.search(text):
            m = pattern.search(text)
            assert m is not None
            new = text[: m.start()] + line + text[m.end() :]
        else:
            new = _insert(text, line, [lab for _, lab in FIELDS[FIELDS.index((key, label)) + 1 :]])
        if new != text:
            changed.append(label)
            text = new
    if not changed:
        return IdentityUpdate((), None)
    text = _PLACEHOLDER.sub("", text)
    text = _UPDATED.sub(f"updated: {format_ts(utc_now())}", text, count=1)
    atomic_write(path, text)
    sha = None
    if commit:
        from autopoiesis.git.repo import MemoryGit

        done = MemoryGit(repo).commit_paths(
            [USER_FILE], f"identity: the user's {', '.join(c.lower() for c in changed)}"
        )
        sha = done.sha
    return IdentityUpdate(tuple(changed), sha)


def _insert(text: str, line: str, later: list[str]) -> str:
    """TEXT with LINE before the first bullet of a LATER field, else after its last
    `- Field:` bullet, else at its end."""
    for m in re.finditer(r"^- ([^:\n]+):.*$", text, re.M):
        if m[1].strip().lower() in (lab.lower() for lab in later):
            return text[: m.start()] + line + "\n" + text[m.start() :]
    bullets = list(re.finditer(r"^- [^:\n]+:.*$", text, re.M))
    if bullets:
        end = bullets[-1].end()
        return text[:end] + "\n" + line + text[end:]
    return text.rstrip("\n") + "\n\n" + line + "\n"
