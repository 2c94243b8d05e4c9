"""The `[[wikilinks]]` the knowledge writer puts into an entry that names a known person,
project or procedure: `Asked [[maria-lopez|Maria Lopez]] about the [[releases]] steps`.

Who is known is read from the folders alone (no file is opened): a person is a file of
knowledge/people/ (its name is its file name's words: `maria-lopez.md` is "Maria Lopez"),
a project a folder of knowledge/projects/ (linked to its `context.md`, else its first
note), a procedure a file of knowledge/procedures/. A link targets the file's name when no
other knowledge file has it (Obsidian's shortest form), else its path from the top. A
project's note always goes by `folder/note` (`[[billing/context|Billing]]`): every project
has a context.md, so the bare name, unique while there is one project, would later resolve
to whichever project sorts first.

Only the first mention of each name is linked, never inside a link, a code span or a URL,
never the file the entry is written into, and names shorter than MIN_NAME letters are
left alone (too many false hits).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import STOPWORDS
from autopoiesis.formats.wikilinks import LINK, render_link

MIN_NAME = 4
MAX_LINKS = 5  # links added to one entry at most
_PROTECTED = re.compile(r"`[^`]*`|https?://\S+|" + LINK.pattern)


class KnownNames:
    """The people, projects and procedures of one repo, as patterns and link targets."""

    def __init__(self, repo: MemoryRepo):
        self.repo = repo
        self._names: list[tuple[re.Pattern[str], str, str]] | None = None

    def invalidate(self) -> None:
        self._names = None

    def names(self) -> list[tuple[re.Pattern[str], str, str]]:
        """(pattern of the name's words, the link target, the repo path it resolves to),
        longest names first."""
        if self._names is None:
            self._names = self._scan()
        return self._names

    def _scan(self) -> list[tuple[re.Pattern[str], str, str]]:
        kdir = self.repo.knowledge_dir
        if not kdir.is_dir():
            return []
        found: list[tuple[str, str]] = []  # (slug, repo path)
        for folder in ("people", "procedures"):
            base = kdir / folder
            if base.is_dir():
                found += [
                    (p.stem, f"knowledge/{folder}/{p.name}")
                    for p in sorted(base.glob("*.md"))
                    if not p.name.startswith(("_", ".")) and not p.is_symlink()
                ]
        projects = kdir / "projects"
        if projects.is_dir():
            for d in sorted(projects.iterdir()):
                if d.is_dir() and not d.is_symlink() and not d.name.startswith((".", "_")):
                    notes = sorted(d.glob("*.md"))
                    main = d / "context.md" if (d / "context.md").is_file() else None
                    note = main or (notes[0] if notes else None)
                    if note is not None:
                        found.append((d.name, f"knowledge/projects/{d.name}/{note.name}"))
        project_notes = {path for slug, path in found if path.startswith("knowledge/projects/")}
        names = Counter(p.stem.lower() for p in kdir.rglob("*.md"))
        out = []
        for slug, path in found:
            words = [w for w in re.split(r"[-_\s]+", slug) if w]
            if not words or sum(len(w) for w in words) < MIN_NAME:
                continue
            if len(words) == 1 and words[0].lower() in STOPWORDS:
                continue  # a one-word name that is a common word would link everywhere
            pattern = re.compile(
                r"(?<![\w/\[-])" + r"[\s_-]+".join(map(re.escape, words)) + r"(?![\w-])",
                re.IGNORECASE,
            )
            stem = PurePosixPath(path).stem
            if path in project_notes:
                target = f"{slug}/{stem}"
            else:
                target = stem if names[stem.lower()] == 1 else path[: -len(".md")]
            out.append((pattern, target, path, len(slug)))
        out.sort(key=lambda x: -x[3])
        return [(p, t, path) for p, t, path, _ in out]


def link_names(text: str, known: KnownNames, own_path: str) -> str:
    """TEXT with the first mention of each known name (not OWN_PATH's own) as a link."""
    names = known.names()
    if not names or not text:
        return text
    added = 0
    for pattern, target, path in names:
        if added >= MAX_LINKS:
            break
        if path == own_path or f"[[{target}" in text:
            continue
        protected = [m.span() for m in _PROTECTED.finditer(text)]
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b in protected):
                continue
            shown = m.group(0)
            alias = None if shown == target else shown
            text = text[: m.start()] + render_link(target, alias) + text[m.end() :]
            added += 1
            break
    return text


__all__ = ["KnownNames", "link_names"]
