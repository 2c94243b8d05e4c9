"""The writer's hard guard (docs/design.md#extraction-bookkeeping): what a change may name before
anything is written.

A change may only name a Markdown path under knowledge/ (never raw/, never outside the
repo, never knowledge/identity/, never one holding what the redactor takes for a secret)
that matches the path patterns its producer declared, with an action the producer
declared, a non-empty text and a source to cite.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from autopoiesis.core.paths import MemoryRepo, knowledge_project
from autopoiesis.core.project import project_slug
from autopoiesis.errors import ChangeRejectedError, UnsafePathError
from autopoiesis.formats import knowledge as kf

if TYPE_CHECKING:
    from autopoiesis.knowledge.changes import KnowledgeChange

ACTIONS = ("append", "supersede")


@dataclass(frozen=True)
class WritePolicy:
    """What a producer may write: path globs (relative to the repo) and actions."""

    producer: str
    paths: tuple[str, ...]
    actions: frozenset[str] = frozenset({"append"})


def check_change(repo: MemoryRepo, ch: KnowledgeChange, policy: WritePolicy | None) -> None:
    """Raise ChangeRejectedError when CH may not be written into REPO (under POLICY)."""
    who = policy.producer if policy else (ch.provenance.producer or "a producer")
    _check_path(repo, ch.path, who)
    path = ch.path
    if ch.action not in ACTIONS:
        raise ChangeRejectedError(
            f"{who} proposed the unknown action {ch.action!r} on {path}; use append or supersede."
        )
    if policy is not None:
        if ch.action not in policy.actions:
            raise ChangeRejectedError(
                f"{who} declared the actions {sorted(policy.actions)} but proposed {ch.action!r} "
                f"on {path}; nothing was written."
            )
        if not any(fnmatch.fnmatchcase(path, g) for g in policy.paths):
            raise ChangeRejectedError(
                f"{who} may write only {', '.join(policy.paths)}, not {path}; nothing was written."
            )
    if not ch.content or not str(ch.content).strip():
        raise ChangeRejectedError(f"{who} proposed an empty entry for {path}.")
    if not ch.provenance.source:
        raise ChangeRejectedError(
            f"{who} proposed an entry for {path} without a source transcript to cite."
        )
    if ch.entry_id is not None and not kf.ENTRY_ID_RE.match(str(ch.entry_id)):
        raise ChangeRejectedError(
            f"{who} proposed the entry id {ch.entry_id!r} for {path}; "
            "ids look like 20260216-1850-a1b2c3."
        )


def _check_path(repo: MemoryRepo, path: object, who: str) -> None:
    """PATH names a Markdown file under knowledge/, inside the repo, not an identity file."""
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path:
        raise ChangeRejectedError(f"{who} proposed an invalid path {path!r}; nothing was written.")
    norm = PurePosixPath(path)
    if norm.is_absolute() or ".." in norm.parts or norm.parts[0] != "knowledge":
        raise ChangeRejectedError(
            f"{who} may only write under knowledge/, not {path!r}; nothing was written. "
            "raw/ is immutable and paths outside the repo are refused."
        )
    try:
        repo.resolve_inside(path, under="knowledge")
    except UnsafePathError as exc:
        raise ChangeRejectedError(f"{who}: {exc} Nothing was written.") from None
    if norm.suffix != ".md" or (len(norm.parts) > 1 and norm.parts[1] == "identity"):
        raise ChangeRejectedError(
            f"{who} may not write {path!r}: only .md knowledge files, and never "
            "knowledge/identity/ (identity is edited by people). Nothing was written."
        )
    # a name is committed, pushed and shown as it is (a file's, a folder's, a project's in
    # the frontmatter): a secret in it would reach git where the text's are redacted
    shown = repo.redactor().redact(path)
    if shown != path:
        raise ChangeRejectedError(
            f"{who} proposed a path that holds what looks like a secret ({shown}); name the "
            "file without it. Nothing was written."
        )
    # a folder under projects/ that is no slug would be read as global knowledge
    if len(norm.parts) > 3 and norm.parts[1] == "projects" and knowledge_project(path) is None:
        slug = project_slug(norm.parts[2]) or "NAME"
        raise ChangeRejectedError(
            f"{who} proposed {path}, but {norm.parts[2]!r} is no project's folder: a project's "
            "is its name as a slug (lower-case letters, digits and '-'), so write "
            f"knowledge/projects/{slug}/{'/'.join(norm.parts[3:])}. Nothing was written."
        )
