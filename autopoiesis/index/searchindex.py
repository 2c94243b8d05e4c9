"""SearchIndex (docs/design.md#search, docs/design.md#system-api): hybrid BM25 + vector search over
the memory repo's
knowledge/, topics/, raw/ transcripts and archive/, kept fresh against git.

The facade over four parts, each the one owner of its concern:
* `store.IndexStore` — memory.db: its rows, identity, writes and the embedding cache;
* `freshness.Freshness` — the tree state recorded, catch-up, status;
* `query.QueryEngine` — ranking, merge, per-file results and snippets;
* `fallback.grep_search` — the answer when memory.db is missing or broken.
`search()` is the one-call form; `search_outcome()` also says where the answer came from.
"""

from __future__ import annotations

import contextlib
import os
import warnings as warnings_module
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import ConfigError, IndexOutdatedError, SearchIndexError
from autopoiesis.git.locate import locate_repo
from autopoiesis.index import build, db
from autopoiesis.index.background import spawn_background
from autopoiesis.index.embedders import Embedder
from autopoiesis.index.fallback import IndexFallbackWarning, grep_search
from autopoiesis.index.freshness import Freshness, IndexStatus, TreeState
from autopoiesis.index.projects import project_counts
from autopoiesis.index.query import (
    CANDIDATES,
    MODES,
    PER_FILE,
    MergeWeights,
    QueryEngine,
    SearchResult,
)
from autopoiesis.index.store import IndexStore, IndexUpdate
from autopoiesis.index.text import query_terms

if TYPE_CHECKING:
    from autopoiesis.index.links import Link


@dataclass(frozen=True)
class SearchOutcome:
    results: list[SearchResult]
    source: str  # "index" | "git grep" | "ripgrep"
    notices: tuple[str, ...] = ()


class SearchIndex:
    """The search index of one memory repo (memory.db at its root)."""

    def __init__(
        self, repo: MemoryRepo, embedder: Embedder | None = None, *, db_path: Path | None = None
    ):
        self.repo = repo
        self.db_path = Path(db_path) if db_path else repo.index_path
        self.store = IndexStore(repo, self.db_path, embedder)
        self.freshness = Freshness(self.store)
        self.query = QueryEngine(self.store)

    def close(self) -> None:
        self.freshness.close()
        self.store.close()

    def is_current(self) -> bool:
        """Open, and still on the file at its path: False once closed (a search that found
        memory.db corrupt closes it), or when memory.db was moved aside or deleted and
        built again. A holder that keeps an index open for long (a server) opens it again
        then."""
        return self.store.is_current()

    def expect_many_searches(self) -> SearchIndex:
        """Say that this process will search many times (a batch, a server): the watcher
        and the postings road then start with the first search instead of the second,
        which a one-shot process never reaches (see freshness, lexical)."""
        self.freshness.watch_from = 1
        self.query.bm25.arrays_from = 1
        return self

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder:
        return self.store.embedder

    @property
    def warnings(self) -> list[str]:
        """What the last operation skipped or repaired (binary files, a corrupt memory.db, ...)."""
        return self.store.warnings

    def needs_rebuild(self) -> bool:
        return self.store.needs_rebuild()

    def integrity(self) -> str | None:
        """None when `PRAGMA quick_check` finds memory.db intact, else what it found (doctor)."""
        return self.store.integrity()

    def embedder_conflict(self) -> str | None:
        """Why this index must not be written with its embedder, or None: memory.db was
        built with an embedder its program passed in (not the configured one), and this
        one has another fingerprint. Writing would replace those vectors, or mix two
        kinds in one table. A configured embedder that changed is no conflict: the
        configuration asks for the rebuild."""
        built = self.store.meta("embedder")
        if built is None or self.store.meta("embedder_source") != "given":
            return None
        if self.store.embedder_given or built == self.embedder.fingerprint:
            return None
        return (
            f"memory.db was built with the embedder {built}, which its program passed in; "
            "memory-config.yaml "
            f"names {self.embedder.fingerprint}. Searches from that program keep it fresh; "
            "`autopoiesis index rebuild` switches it to the configured embedder."
        )

    # ── writing ──
    def index_file(
        self, path: str, content: str | None = None, category: str | None = None
    ) -> None:
        """Index (or re-index) one file. PATH is repo-relative or absolute; CONTENT, when
        given, is indexed instead of what is on disk."""
        self.store.index_file(path, content, category)

    def remove_file(self, path: str) -> None:
        self.store.remove_file(path)

    def rebuild_full(
        self, progress: Callable[[int, int], None] | None = None, *, seconds: float | None = None
    ) -> IndexUpdate:
        """Re-index every memory file from scratch, in one transaction: a search running
        meanwhile sees the old index until the new one is complete. The embedding cache
        survives, so unchanged chunks are not embedded again. An index that holds nothing
        yet is built in steps, newest transcripts first, searchable as it goes; SECONDS
        stops after about that long and leaves the rest to `building()`'s next build."""
        return self.freshness.rebuild_full(progress, seconds=seconds)

    def building(self) -> dict[str, Any] | None:
        """The build in steps under way (index/build.py: how far it is), or None."""
        return build.pending(self.store)

    def compact(self) -> list[str]:
        """The background sync's upkeep after a catch-up: fold the chunks written since the
        last full build into the term postings when they have grown to a quarter of them,
        then give the disk back the pages that left free when they are many. What it did,
        one line each."""
        done = ["compacted the term postings"] if self.store.compact_postings() else []
        freed, why = self.store.reclaim_free_pages()
        if freed:
            done.append(f"gave the disk back {freed} free pages")
        if why:
            done.append(f"warning: free pages kept: {why}")
        return done

    # ── freshness ──
    def catch_up(self, *, timeout: float = 60.0, searching: bool = False) -> IndexUpdate:
        """Bring the index up to date with HEAD and the working tree (see freshness;
        SEARCHING: a search waits, and a large outdated index raises IndexOutdatedError
        while it is rebuilt in the background)."""
        return self.freshness.catch_up(timeout=timeout, searching=searching)

    def is_fresh(self, state: TreeState | None = None) -> bool:
        return self.freshness.is_fresh(state)

    def status(self) -> IndexStatus:
        return self.freshness.status()

    # ── searching ──
    def search(
        self,
        query: str,
        limit: int = 10,
        category: str | None = None,
        *,
        merge: str | None = None,
        explain: bool = False,
        fresh: bool = True,
        per_file: int = PER_FILE,
        mode: str = "hybrid",
        project: str | None = None,
    ) -> list[SearchResult]:
        """Hybrid search, best first: chunks (a turn in its exchange, a heading section),
        at most PER_FILE from one file, never two overlapping. FRESH=False skips the catch-up.
        MODE "bm25" ranks by BM25 alone (no query embedding, no vectors). PROJECT, the
        current project's slug: its chunks and global ones before other projects'."""
        if mode not in MODES:
            raise ValueError(f"search mode must be one of {', '.join(MODES)}, not {mode!r}")
        if fresh:
            self.catch_up(searching=True)
        cfg = self.repo.config.search
        resolved = self.query.merge_for(merge or cfg.merge)
        weights = MergeWeights(bm25=cfg.bm25_weight, vector=cfg.vector_weight)
        return self.query.search(
            query,
            limit,
            category,
            resolved,
            weights,
            explain=explain,
            per_file=per_file,
            mode=mode,
            project=project,
        )

    def locate(
        self, query: str, limit: int = 10, *, fresh: bool = True, project: str | None = None
    ) -> list[SearchResult]:
        """`search` for a reader that takes the chunks from the files itself (the context
        compiler): the same ranking, any number of chunks of one file (never two that
        overlap, and none whose window is mostly shown: the compiler adds the turns around
        its hits itself), and no snippets (a snippet costs more than the ranking: ~0.25 ms
        a result). Each result's `snippet` is only the head of its chunk."""
        if fresh:
            self.catch_up(searching=True)
        terms = query_terms(query)
        if not terms:
            return []
        cfg = self.repo.config.search
        merge = self.query.merge_for(cfg.merge)
        weights = MergeWeights(bm25=cfg.bm25_weight, vector=cfg.vector_weight)
        limit = max(1, int(limit))
        cands = self.query.scored(query, terms, max(CANDIDATES, limit * 5), None, merge, weights)
        if not cands:
            return []
        return self.query.per_file(cands, [], limit, merge, False, limit, project, partly_shown=0.0)

    # ── links ──
    def links(self, path: str, *, fresh: bool = True) -> tuple[list[Link], list[Link]]:
        """(the links written in PATH, the links of other notes to it): index/links.py."""
        from autopoiesis.index import links

        if fresh:
            self.catch_up()
        conn = self.store.conn
        return links.outgoing(conn, path), links.incoming(conn, path)

    def broken_links(self, *, fresh: bool = True) -> list[Link]:
        """Every link that finds no note."""
        from autopoiesis.index import links

        if fresh:
            self.catch_up()
        return links.broken(self.store.conn)

    def linked_notes(
        self, paths: list[str], *, fresh: bool = False
    ) -> list[tuple[str, str, int, int]]:
        """(the note linking, the note linked to, its chunk's first and last line) for the
        links written in PATHS, in their order: the chunk the link's #heading names, else
        the note's first."""
        from autopoiesis.index import links

        if fresh:
            self.catch_up()
        conn = self.store.conn
        out = []
        for source, target, heading in links.linked_from(conn, paths):
            span = links.first_chunk(conn, target, heading)
            if span is not None:
                out.append((source, target, *span))
        return out

    def projects(self, *, fresh: bool = True) -> dict[str, dict[str, int]]:
        """Each project the indexed files name, with its files by category."""
        if fresh:
            self.catch_up()
        return project_counts(self.store.conn)


def search_outcome(
    query: str,
    limit: int = 10,
    category: str | None = None,
    *,
    repo: MemoryRepo | str | os.PathLike[str] | None = None,
    merge: str | None = None,
    explain: bool = False,
    index: SearchIndex | None = None,
    mode: str = "hybrid",
    project: str | None = None,
) -> SearchOutcome:
    """search() with where the answer came from and any notices (what the CLI prints)."""
    repo = repo if isinstance(repo, MemoryRepo) else locate_repo(repo)
    notices: list[str] = []
    if index is None:
        if not repo.index_path.exists():
            results, tool = grep_search(repo, query, limit, category)
            return SearchOutcome(
                results,
                tool,
                (
                    f"no search index yet: answered with {tool}; "
                    "build it with `autopoiesis index rebuild`.",
                ),
            )
        try:
            index = SearchIndex(repo)
        except ConfigError:
            raise  # the user's settings are wrong: say so, do not hide it behind a fallback
        except Exception as exc:  # unreadable (permissions), a locked-down filesystem, ...
            results, tool = grep_search(repo, query, limit, category)
            return SearchOutcome(
                results,
                tool,
                (
                    f"the search index could not be opened ({exc}); answered with {tool}. "
                    "Run `autopoiesis index rebuild` (or `autopoiesis doctor`).",
                ),
            )
        own = True
    else:
        own = False
    try:
        notices.extend(index.warnings)
        try:
            results = index.search(
                query, limit, category, merge=merge, explain=explain, mode=mode, project=project
            )
        except IndexOutdatedError as exc:
            results, tool = grep_search(repo, query, limit, category)
            return SearchOutcome(results, tool, (*notices, f"{exc}; answered with {tool}."))
        except (SearchIndexError, OSError) as exc:
            results, tool = grep_search(repo, query, limit, category)
            return SearchOutcome(
                results, tool, (*notices, f"index search failed ({exc}); answered with {tool}.")
            )
        except index.store.db_error as exc:
            kind = index.store.diagnose(exc)
            results, tool = grep_search(repo, query, limit, category)
            if kind != db.CORRUPT:  # full, read-only, busy: memory.db is fine, leave it be
                return SearchOutcome(
                    results,
                    tool,
                    (*notices, f"{index.store.explain(kind, exc)}; answered with {tool}."),
                )
            index.close()
            moved = db.move_aside(index.db_path) if index.db_path.exists() else None
            with contextlib.suppress(OSError):  # the next search or `index rebuild` builds it then
                spawn_background(repo, rebuild=True)
            where = f" and moved it to {moved.name}" if moved else ""
            return SearchOutcome(
                results,
                tool,
                (
                    *notices,
                    f"memory.db is corrupt ({exc}){where}; answered with {tool} "
                    "while the index is rebuilt in the background.",
                ),
            )
        notices.extend(w for w in index.warnings if w not in notices)
        from autopoiesis.core.private import is_locked  # reads .gitattributes

        if is_locked(repo.root):
            notices.append(
                "private notes are locked here (git-crypt) and were not searched; "
                "`autopoiesis private unlock KEYFILE` decrypts them"
            )
        return SearchOutcome(results, "index", tuple(notices))
    finally:
        if own:
            index.close()


def search(
    query: str,
    limit: int = 10,
    category: str | None = None,
    *,
    repo: MemoryRepo | str | os.PathLike[str] | None = None,
    merge: str | None = None,
    explain: bool = False,
    mode: str = "hybrid",
    project: str | None = None,
) -> list[SearchResult]:
    """Unified hybrid search across knowledge, topics, transcripts and archive
    (docs/design.md#agent-api).
    MODE "bm25" ranks by BM25 alone, faster and without the embedder. PROJECT, a project's
    slug, ranks its items and global ones before other projects'.

    REPO is a MemoryRepo or its folder (`~` expanded); None finds it as the CLI does
    ($AUTOPOIESIS_REPO, else the git top level of the current folder). When the index is
    missing or broken the answer comes from git grep, with an IndexFallbackWarning."""
    outcome = search_outcome(
        query, limit, category, repo=repo, merge=merge, explain=explain, mode=mode, project=project
    )
    for notice in outcome.notices:
        if outcome.source != "index":
            warnings_module.warn(notice, IndexFallbackWarning, stacklevel=2)
    return outcome.results
