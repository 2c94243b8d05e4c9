"""The topics of a memory repo: load every `topics/*.md` (each parsed and validated by
`autopoiesis.formats.topic`), fingerprint the folder for caches, and read the people
names that mention triggers fall back to.

The file format itself — `Topic`, `Trigger`, `parse_topic`, the trigger-type registry —
is `autopoiesis.formats.topic`; this module only walks a repo.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from autopoiesis.core import frontmatter
from autopoiesis.errors import TopicError
from autopoiesis.formats.topic import (
    DEFAULT_SIMILARITY_THRESHOLD,
    Topic,
    parse_topic,
    read_topic_fields,
    topic_too_large,
)

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
    """The topic files under topics/: never a symbolic link nor a file of a linked folder
    (`MemoryRepo.iter_markdown`: nothing is read through a link; `load_topics` names
    them)."""
    return [p for p in repo.iter_markdown("topics") if not p.name.startswith(".")]


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


class _FieldsCache:
    """Each topic file's frontmatter, as JSON under .autopoiesis/cache/, keyed by the hash
    of the file's text and by the frontmatter reader's own file (its YAML rules). Every
    cold `compile` and prompt hook loads the topics, and importing PyYAML and parsing with
    it is most of that (docs/performance.md#topics-are-read-from-a-cache); a cache like any
    other under .autopoiesis/, its fields are validated by `parse_topic` as if just read.
    A mapping JSON would not give back as it is (a YAML date, a number as a key) is not
    kept: that file is parsed each time."""

    def __init__(self, repo: MemoryRepo):
        self.path = repo.state_file("topics_cache", create=False)
        code = Path(frontmatter.__file__).stat()
        self.key = [code.st_mtime_ns, code.st_size]
        self.writable = (repo.root / ".git").exists()
        self.entries: dict[str, Any] = {}
        self.changed = False
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("key") == self.key and isinstance(data.get("files"), dict):
                self.entries = data["files"]
        except (OSError, ValueError, AttributeError):
            pass  # no cache, or an unusable one: every file is parsed

    def fields(self, rel: str, text: str, sha: str) -> tuple[dict[str, Any], str] | None:
        """(mapping, body) of topic file REL, from the cache or read now; None when its
        frontmatter cannot be read (parse_topic then says why)."""
        got = self.entries.get(rel)
        if isinstance(got, dict) and got.get("sha") == sha and isinstance(got.get("fields"), dict):
            return got["fields"], frontmatter.split(text, rel)[1]
        read = read_topic_fields(rel, text)
        if read is not None:
            try:
                if json.loads(json.dumps(read[0])) == read[0]:
                    self.entries[rel] = {"sha": sha, "fields": read[0]}
                    self.changed = True
            except (TypeError, ValueError):
                pass
        return read

    def save(self, rels: set[str]) -> None:
        """Write the cache when a file's entry changed or a file is gone (atomically)."""
        gone = set(self.entries) - rels
        if not self.writable or not (self.changed or gone):
            return
        files = {rel: e for rel, e in self.entries.items() if rel in rels}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"key": self.key, "files": files}), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only repo still works, only slower


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
    cache = _FieldsCache(repo)
    rels: set[str] = set()
    # a memory pulled from a collaborator may hold `topics/deploy.md -> ~/elsewhere.md`: it
    # would be compiled into every prompt
    errors += [
        f"{rel}: a symbolic link (or a linked folder); not read: a topic must be a regular "
        "file (remove the link with `git rm`)"
        for rel in repo.links("topics")
    ]
    for path in topic_files(repo):
        rel = path.relative_to(repo.root).as_posix()
        try:
            too_large = topic_too_large(rel, path.stat().st_size)
            if too_large:
                errors.append(too_large)
                continue
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:
            errors.append(f"{rel}: cannot be read as UTF-8 text ({exc}); re-save it as UTF-8.")
            continue
        rels.add(rel)
        data = text.encode("utf-8", "surrogateescape")
        digest.update(rel.encode() + b"\0" + data + b"\0")
        topic, errs, warns = parse_topic(
            rel,
            text,
            root=repo.root,
            default_threshold=default_threshold,
            fields=cache.fields(rel, text, hashlib.sha256(data).hexdigest()),
        )
        warnings.extend(warns)
        if topic is None:
            errors.extend(errs)
            continue
        topics.append(topic)
    cache.save(rels)
    topics = _unique_names(topics, errors)
    result = TopicSet(tuple(topics), tuple(errors), tuple(warnings), digest.hexdigest())
    if strict and errors:
        raise TopicError("Invalid topic files:\n  " + "\n  ".join(errors))
    return result


def _owns_name(topic: Topic) -> bool:
    """Whether TOPIC's file is named after it (topics/deploy.md for `deploy`)."""
    return PurePosixPath(topic.path).stem == topic.name


def _unique_names(topics: list[Topic], errors: list[str]) -> list[Topic]:
    """TOPICS with one topic a name, in their order; each other one holding a name is left
    out and named in ERRORS. The one kept is the file named after it, else the first: a
    file added with `name: deploy` (a collaborator's, sorted before) took the name from
    topics/deploy.md, whose instructions no prompt saw again."""
    holder: dict[str, Topic] = {}
    for topic in topics:
        held = holder.get(topic.name)
        if held is None or (_owns_name(topic) and not _owns_name(held)):
            holder[topic.name] = topic
    for topic in topics:
        kept = holder[topic.name]
        if topic is not kept:
            errors.append(
                f"{topic.path}: name {topic.name!r} is already used by {kept.path}; give it "
                "another name."
            )
    return [t for t in topics if holder[t.name] is t]


def load_topic(repo: MemoryRepo, relpath: str | os.PathLike[str]) -> Topic:
    """One topic file, validated; raises TopicError naming every problem."""
    if repo.is_link(os.path.relpath(os.path.abspath(repo.root / relpath), repo.root)):
        raise TopicError(
            f"{relpath} is a symbolic link (or in a linked folder); a topic must be a regular "
            "file: remove the link with `git rm`."
        )
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


def _people_files(repo: MemoryRepo) -> list[Path]:
    """The notes of knowledge/people/ (not its subfolders), never through a link."""
    # not below it: a folder of notes filed there (thousands, in bench/'s memory) is no
    # person, and walking it cost every cold `compile` ~30 ms
    return list(repo.iter_markdown("knowledge/people", below=False))


def people_signature(repo: MemoryRepo) -> tuple[tuple[str, int, int], ...]:
    """(name, mtime_ns, size) of every file people_names reads: a long-lived pipeline
    reloads when a person is added, renamed or edited, as when a topic is."""
    sig = []
    for p in _people_files(repo):
        try:
            st = p.stat()
        except OSError:
            continue
        sig.append((p.name, st.st_mtime_ns, st.st_size))
    return tuple(sig)


def people_names(repo: MemoryRepo) -> tuple[str, ...]:
    """Names of the people in knowledge/people/ (frontmatter `name:`, else from the file
    name: david-feldhofer.md -> "david feldhofer"), lower-cased, plus each first name."""
    names: set[str] = set()
    for p in _people_files(repo):
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
