"""The entries of the current-state knowledge files, indexed for the writer's questions:
which files hold this id or this fact, which live entry holds this subject, and which
entries restate (or are restated by) a new fact."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from autopoiesis.core.paths import knowledge_project
from autopoiesis.formats import knowledge as kf


def bare_fact(text: str) -> str:
    """The normalized fact of a line, without an index line's `**key** — ` lead."""
    return kf.normalize_fact(re.sub(r"^\*\*[^*]+\*\*\s*[—:-]\s*", "", text))


def one_scope(a: str | None, b: str | None) -> bool:
    """Whether entries about projects A and B (None: global; `EntryCatalog.project_of`)
    may be one fact (make a change a duplicate, be its target, hold its subject's value,
    be struck as its very words): unless they are two different projects'. Two codebases
    that each say "use bun, not node", or each have a database, keep their own; a global
    entry (what a session of no known project said) may be about any project."""
    return a is None or b is None or a == b


def _signature(text: str) -> tuple[frozenset[str], frozenset[str]]:
    return kf.fact_words(text)


COMMON_WORD = 400  # a word in more entries than this finds no candidates (the others do)


class EntryCatalog:
    """The entries of the current-state files (live and struck), indexed by id, fact,
    subject and word, so that "does a live entry restate this?" looks at a few candidates
    instead of every entry (a 3,000-entry file stays fast)."""

    def __init__(self) -> None:
        # (path, id) -> (section title, entry)
        self._all: dict[tuple[str, str], tuple[str, kf.Entry]] = {}
        self._by_id: dict[str, set[str]] = {}  # live only
        self._by_fact: dict[str, set[str]] = {}  # live only
        self._by_subject: dict[str, set[tuple[str, str]]] = {}  # live only
        self._postings: dict[str, set[tuple[str, str]]] = {}  # word or number -> entries holding it
        self._homes: dict[str, set[str]] = {}  # id -> files holding it (live or struck)
        self.files: Counter[str] = Counter()  # path -> live entries

    def add(self, path: str, title: str, e: kf.Entry) -> None:
        key = (path, e.id)
        self._all[key] = (title.strip().lower(), e)
        self._homes.setdefault(e.id, set()).add(path)
        words, numbers = _signature(e.text)
        for w in words | numbers:
            self._postings.setdefault(w, set()).add(key)
        if e.active:
            self._live_index(path, e, add=True)

    def drop(self, path: str, e: kf.Entry) -> None:
        """E was struck: it stays a candidate for the revival check, not a live entry."""
        found = self._all.get((path, e.id))
        if found is None or not found[1].active:
            return
        self._all[(path, e.id)] = (found[0], found[1].superseded(e.superseded_by or "-"))
        self._live_index(path, found[1], add=False)

    def remove(self, path: str, e: kf.Entry) -> None:
        """E left PATH (moved to archive/ to hold a cap): forgotten, as a fresh read of
        the files would not find it there."""
        found = self._all.pop((path, e.id), None)
        if found is None:
            return
        if found[1].active:
            self._live_index(path, found[1], add=False)
        self._homes.get(e.id, set()).discard(path)
        words, numbers = _signature(found[1].text)
        for w in words | numbers:
            self._postings.get(w, set()).discard((path, e.id))

    def _live_index(self, path: str, e: kf.Entry, *, add: bool) -> None:
        fact = bare_fact(e.text)
        if add:
            self._by_id.setdefault(e.id, set()).add(path)
            self._by_fact.setdefault(fact, set()).add(path)
            if e.subject:
                self._by_subject.setdefault(e.subject, set()).add((path, e.id))
        else:
            self._by_id.get(e.id, set()).discard(path)
            self._by_fact.get(fact, set()).discard(path)
            if e.subject:
                self._by_subject.get(e.subject, set()).discard((path, e.id))
        self.files[path] += 1 if add else -1

    def live(self) -> Iterator[tuple[str, str, kf.Entry]]:
        for (path, _), (title, e) in self._all.items():
            if e.active:
                yield path, title, e

    def project_of(self, path: str, entry_id: str | None = None) -> str | None:
        """The project an entry of PATH is about: its file's, or for a line of a global
        file derived from a project's entry (MEMORY.md's "checkout-api: ...", the
        projects' index), that entry's, whose id it carries."""
        own = knowledge_project(path)
        if own is not None or not entry_id:
            return own
        owners = sorted(
            owner
            for owner in map(knowledge_project, self._homes.get(entry_id, ()))
            if owner is not None
        )
        return owners[0] if owners else None

    def paths_of(self, entry_id: str) -> list[str]:
        return sorted(self._by_id.get(entry_id, ()))

    def paths_stating(self, fact: str) -> list[str]:
        return sorted(self._by_fact.get(fact, ()))

    def with_subject(self, subject: str) -> list[tuple[str, kf.Entry]]:
        return [(p, self._all[(p, i)][1]) for p, i in sorted(self._by_subject.get(subject, ()))]

    def _candidates(self, content: str, *, superset: bool) -> list[tuple[str, str]]:
        """Entries that may restate CONTENT (SUPERSET: hold most of its words) or that
        CONTENT may restate (share at least two of its words), found through the postings
        of its rarer words."""
        words, numbers = _signature(content)
        terms = sorted(words | numbers, key=lambda w: len(self._postings.get(w, ())))
        if superset:
            # an entry holding 80% of the words holds one of the rarest 20% + 1, and every number
            pool = [w for w in terms if w in words][: int(0.2 * len(words)) + 1]
            keys: set[tuple[str, str]] = set()
            for w in pool:
                keys |= self._postings.get(w, set())
            for n in numbers:
                keys &= self._postings.get(n, set())
            return sorted(keys)
        hits: Counter[tuple[str, str]] = Counter()
        for w in terms:
            posting = self._postings.get(w, set())
            if len(posting) <= COMMON_WORD:
                hits.update(posting)
        return sorted(k for k, n in hits.items() if n >= 2)

    def restating(
        self, content: str, path: str | None = None
    ) -> Iterator[tuple[str, str, kf.Entry]]:
        """(path, section title, entry) of the entries (of PATH) that say all CONTENT says."""
        for key in self._candidates(content, superset=True):
            if path is None or key[0] == path:
                title, e = self._all[key]
                if kf.restates(content, e.text):
                    yield key[0], title, e

    def restated_by(self, content: str, path: str, title: str) -> list[kf.Entry]:
        """The live entries of PATH's section TITLE that CONTENT says in full (or more)."""
        want = title.strip().lower()
        out = []
        for key in self._candidates(content, superset=False):
            t, e = self._all[key]
            if key[0] == path and t == want and e.active and kf.restates(e.text, content):
                out.append(e)
        return out
