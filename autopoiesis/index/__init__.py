"""The search index (design §7): `SearchIndex`, `search`, `SearchResult`.

Importing this package is cheap on purpose (names resolve lazily): the post-commit hook
imports `autopoiesis.index.sync` on every commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autopoiesis.index.searchindex import SearchIndex, SearchOutcome, SearchResult, search, search_outcome

__all__ = ["SearchIndex", "SearchOutcome", "SearchResult", "search", "search_outcome"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from autopoiesis.index import searchindex as _search_module

        return getattr(_search_module, name)
    raise AttributeError(f"module 'autopoiesis.index' has no attribute {name!r}")
