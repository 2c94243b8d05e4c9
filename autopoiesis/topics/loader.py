"""The topics of a memory repo: load every `topics/*.md` (each parsed and validated by
`autopoiesis.formats.topic`), fingerprint the folder for caches, and read the people
names that mention triggers fall back to.

The file format itself — `Topic`, `Trigger`, `parse_topic`, the trigger-type registry —
is `autopoiesis.formats.topic`; this module only walks a repo.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autopoiesis.errors import TopicError
from autopoiesis.formats.topic import DEFAULT_SIMILARITY_THRESHOLD, Topic, parse_topic

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo


# ── loading a repo's topics ───────────────────────────────────────────────────────────
@dataclass(frozen=True)
class TopicSet:
    """The valid topics of a repo, the problems of the invalid ones, and a fingerprint of
    the folder (content hash of every file) for caches."""

    topics: tuple[Topic, ...]
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    fingerprint: str = ""

    def by_name(self) -> dict[str, Topic]:
        return {t.name: t for t in self.topics}

    def get(self, name: str) -> Topic | None:
        for t in self.topics:
            if t.name == name:
                return t
        return None


def topic_files(repo: MemoryRepo) -> list[Path]:
    base = repo.topics_dir
    if not base.is_dir():
        return []
    return sorted(p for p in base.rglob("*.md") if p.is_file() and not p.name.startswith("."))


def topics_signature(repo: MemoryRepo) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime_ns, size) of every topic file: a cheap way to see that one changed."""
    sig = []
    for p in topic_files(repo):
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        sig.append((p.name, st.st_mtime_ns, st.st_size))
    return tuple(sig)


def load_topics(repo: MemoryRepo, *, strict: bool = False) -> TopicSet:
    """Every topic under topics/. Invalid files are left out and reported in `.errors`
    (so one bad file does not silence every other watcher); with STRICT they raise."""
    try:
        default_threshold = repo.config.watchers.similarity_threshold
    except Exception:  # a broken config is reported by its own commands
        default_threshold = DEFAULT_SIMILARITY_THRESHOLD
    topics: list[Topic] = []
    errors: list[str] = []
    warnings: list[str] = []
    digest = hashlib.sha256()
    seen: dict[str, str] = {}
    for path in topic_files(repo):
        rel = path.relative_to(repo.root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:
            errors.append(f"{rel}: cannot be read as UTF-8 text ({exc}); re-save it as UTF-8.")
            continue
        digest.update(rel.encode() + b"\0" + text.encode("utf-8", "surrogateescape") + b"\0")
        topic, errs, warns = parse_topic(
            rel, text, root=repo.root, default_threshold=default_threshold
        )
        warnings.extend(warns)
        if topic is not None and topic.name in seen:
            errs = [
                f"{rel}: name {topic.name!r} is already used by {seen[topic.name]}; give it "
                "another name."
            ]
            topic = None
        if topic is None:
            errors.extend(errs)
            continue
        seen[topic.name] = rel
        topics.append(topic)
    result = TopicSet(tuple(topics), tuple(errors), tuple(warnings), digest.hexdigest())
    if strict and errors:
        raise TopicError("Invalid topic files:\n  " + "\n  ".join(errors))
    return result


def load_topic(repo: MemoryRepo, relpath: str | os.PathLike[str]) -> Topic:
    """One topic file, validated; raises TopicError naming every problem."""
    full = repo.resolve_inside(relpath, under="topics")
    rel = full.relative_to(repo.root).as_posix()
    if not full.is_file():
        raise TopicError(f"{rel} does not exist; list the topics with `autopoiesis topics list`.")
    topic, errors, _ = parse_topic(
        rel,
        full.read_text(encoding="utf-8"),
        root=repo.root,
        default_threshold=repo.config.watchers.similarity_threshold,
    )
    if topic is None:
        raise TopicError("\n".join(errors))
    return topic


def people_names(repo: MemoryRepo) -> tuple[str, ...]:
    """Names of the people in knowledge/people/ (frontmatter `name:`, else from the file
    name: david-feldhofer.md -> "david feldhofer"), lower-cased, plus each first name."""
    base = repo.knowledge_dir / "people"
    names: set[str] = set()
    if not base.is_dir():
        return ()
    for p in sorted(base.glob("*.md")):
        if p.name.startswith("_"):
            continue
        full = p.stem.replace("-", " ").replace("_", " ").strip().lower()
        try:
            head = p.read_text(encoding="utf-8")[:2000]
        except (OSError, UnicodeDecodeError):
            head = ""
        m = re.search(r"^name:\s*['\"]?([^'\"\n]+)", head, re.MULTILINE)
        if m:
            full = m.group(1).strip().lower()
        if full:
            names.add(full)
            first = full.split()[0]
            if len(first) >= 3:
                names.add(first)
    return tuple(sorted(names))
