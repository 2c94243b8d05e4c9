"""Extractors (docs/design.md#extract): a registry of named, versioned extractors.

The seven built-in ones live one per module (decisions, lessons, people, procedures, facts,
journal, coding); `base` holds what they share; this package is the plugin that registers them
(autopoiesis.plugins, the hook `register_extractors`). A registry is extended without
editing this package, in any of three ways:

* in code: `registry.register(Extractor(...))` (any object with the ExtractorPlugin
  members will do), then `KnowledgeExtractor(repo, registry=registry)`;
* by installing a distribution whose plugin module (entry point group `autopoiesis`)
  implements `register_extractors(register)`;
* by installing a distribution that declares an entry point in the older group
  `autopoiesis.extractors`, e.g. in its pyproject.toml::

      [project.entry-points."autopoiesis.extractors"]
      tickets = "my_package.extractors:TICKETS"

  The entry point names an extractor object, or a callable returning one extractor or
  a list of them.

`default_registry()` adds every plugin's extractor after the built-ins, so `autopoiesis
extract --extractors tickets` finds it. A plugin that fails to load, or whose extractor's
name is taken, is skipped and reported in `registry.load_errors` (shown by `autopoiesis
extract --list`): a broken plugin must not stop the built-ins.

Each name selects its newest version; an older built-in version stays selectable as
NAME@VERSION, so that `autopoiesis replay --extractors decisions@2,...` replays what
the older version derived and `--compare` sets it beside the newer one's:

    >>> reg = default_registry(plugins=False)
    >>> [e.key for e in reg.select(["decisions", "lessons"])]
    ['decisions@3', 'lessons@3']
    >>> [e.key for e in reg.select(["decisions@2", "coding"])]
    ['decisions@2', 'coding@1']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from autopoiesis.errors import UnknownExtractorError
from autopoiesis.knowledge.extractors.base import (
    Extractor,
    ExtractorPlugin,
    Sentence,
    SourceTranscript,
    content_hash,
    detect_project,
    reply_items,
    reply_validator,
)
from autopoiesis.knowledge.extractors.coding import CODING
from autopoiesis.knowledge.extractors.decisions import DECISIONS, DECISIONS_V2
from autopoiesis.knowledge.extractors.facts import FACTS, FACTS_V2
from autopoiesis.knowledge.extractors.journal import JOURNAL, JOURNAL_V2
from autopoiesis.knowledge.extractors.lessons import LESSONS, LESSONS_V2
from autopoiesis.knowledge.extractors.people import PEOPLE, PEOPLE_V2
from autopoiesis.knowledge.extractors.procedures import PROCEDURES, PROCEDURES_V2
from autopoiesis.plugins import (
    EXTRACTOR_ENTRY_POINT_GROUP,
    builtin_contributions,
    entry_points,
    hookimpl,
    load_errors,
    new_manager,
)
from autopoiesis.plugins import extractors as plugin_extractors

ENTRY_POINT_GROUP = EXTRACTOR_ENTRY_POINT_GROUP
# the versions a name selects (the newest); the older ones are selected as NAME@VERSION
BUILTIN_EXTRACTORS: tuple[Extractor, ...] = (
    DECISIONS,
    LESSONS,
    PEOPLE,
    PROCEDURES,
    FACTS,
    JOURNAL,
    CODING,
)
OLDER_EXTRACTORS: tuple[Extractor, ...] = (
    DECISIONS_V2,
    LESSONS_V2,
    PEOPLE_V2,
    PROCEDURES_V2,
    FACTS_V2,
    JOURNAL_V2,
)


@hookimpl
def register_extractors(register: Callable[[ExtractorPlugin], None]) -> None:
    for extractor in BUILTIN_EXTRACTORS:
        register(extractor)


class ExtractorRegistry:
    """Extractors by name. An instance with a plugin manager of its own, not the
    process's: tests and replays build their own (e.g. to add an experimental extractor)
    without touching anyone else's."""

    def __init__(self, extractors: Iterable[ExtractorPlugin] = ()):
        self._manager = new_manager()
        self.load_errors: list[str] = []  # plugins that were skipped, and why
        for e in extractors:
            self.register(e)

    def register(self, extractor: ExtractorPlugin, *, replace: bool = False) -> None:
        """Add EXTRACTOR, as a plugin of this registry's manager."""
        if not isinstance(extractor, ExtractorPlugin):
            raise TypeError(
                f"{extractor!r} is not an extractor: give an "
                "autopoiesis.knowledge.extractors.Extractor "
                "(or an object with name, description, key, policy, has_llm_flavour, run_offline "
                "and run_llm)."
            )
        if extractor.name in self._by_name() and not replace:
            raise ValueError(
                f"an extractor named {extractor.name!r} is already registered; pass replace=True"
            )
        self._manager.contribute("register_extractors", extractor)

    def _by_name(self) -> dict[str, ExtractorPlugin]:
        found = self._manager.contributions("register_extractors", installed=False)
        return {args[0].name: args[0] for args in found}

    def names(self) -> list[str]:
        return list(self._by_name())

    def get(self, name: str) -> ExtractorPlugin:
        """The extractor NAME, or NAME@VERSION (a registered one of that key, or an older
        built-in version)."""
        known = self._by_name()
        if "@" in name:
            for extractor in (*known.values(), *OLDER_EXTRACTORS):
                if extractor.key == name:
                    return extractor
        try:
            return known[name]
        except KeyError:
            versions = sorted({e.key for e in (*known.values(), *OLDER_EXTRACTORS)})
            raise UnknownExtractorError(
                f"No extractor named {name!r}. Known extractors: {', '.join(known)} (the "
                f"versions: {', '.join(versions)})."
            ) from None

    def select(self, names: Sequence[str] | None = None) -> list[ExtractorPlugin]:
        if not names:
            return list(self._by_name().values())
        return [self.get(n.strip()) for n in names if n.strip()]

    def add_plugins(self) -> list[str]:
        """Register the extractors of the process's plugins that are not built in (the
        installed distributions' `autopoiesis` entry points, and plugins registered in
        code); returns the names added. Failures go to `load_errors`, they do not raise."""
        builtin = {args[0].name for args in builtin_contributions("register_extractors")}
        added: list[str] = []
        for extractor in plugin_extractors():
            if not isinstance(extractor, ExtractorPlugin):
                self.load_errors.append(f"a plugin registered {extractor!r}, which is no extractor")
                continue
            if extractor.name in builtin:
                if extractor not in BUILTIN_EXTRACTORS:
                    self.load_errors.append(
                        f"a plugin's extractor named {extractor.name!r} is already registered; "
                        "rename the plugin's extractor"
                    )
                continue
            self.register(extractor, replace=True)
            added.append(extractor.name)
        self.load_errors.extend(load_errors())
        return added

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> list[str]:
        """Register the extractors the installed distributions declare in GROUP; returns
        the names added. Failures go to `load_errors`, they do not raise."""
        added: list[str] = []
        for ep in entry_points(group):  # the older group: each names extractors, not a plugin
            where = f"entry point {ep.name!r} ({ep.value}) of the group {group!r}"
            try:
                found = _extractors_of(ep.load())
            except Exception as exc:  # a plugin's import error is the plugin's, not ours
                self.load_errors.append(f"{where} did not load: {type(exc).__name__}: {exc}")
                continue
            if not found:
                self.load_errors.append(
                    f"{where} names no extractor; point it at an Extractor or a function "
                    "returning them"
                )
            for extractor in found:
                if extractor.name in self._by_name():
                    self.load_errors.append(
                        f"{where}: an extractor named {extractor.name!r} is already registered; "
                        "rename the plugin's extractor"
                    )
                    continue
                self.register(extractor)
                added.append(extractor.name)
        return added


def _extractors_of(obj: Any) -> list[ExtractorPlugin]:
    if isinstance(obj, ExtractorPlugin):
        return [obj]
    if callable(obj):
        made = obj()
        if isinstance(made, ExtractorPlugin):
            return [made]
        if isinstance(made, Iterable):
            items = list(made)
            if all(isinstance(x, ExtractorPlugin) for x in items):
                return items
    return []


def default_registry(*, plugins: bool = True) -> ExtractorRegistry:
    """A fresh registry holding the seven built-in extractors of docs/design.md#extract, then (when
    PLUGINS) the extractors of the other plugins and of the older entry point group
    `autopoiesis.extractors`."""
    registry = ExtractorRegistry(args[0] for args in builtin_contributions("register_extractors"))
    if plugins:
        registry.add_plugins()
        registry.load_entry_points()
    return registry


__all__ = [
    "BUILTIN_EXTRACTORS",
    "CODING",
    "DECISIONS",
    "DECISIONS_V2",
    "ENTRY_POINT_GROUP",
    "FACTS",
    "FACTS_V2",
    "JOURNAL",
    "JOURNAL_V2",
    "LESSONS",
    "LESSONS_V2",
    "OLDER_EXTRACTORS",
    "PEOPLE",
    "PEOPLE_V2",
    "PROCEDURES",
    "PROCEDURES_V2",
    "Extractor",
    "ExtractorPlugin",
    "ExtractorRegistry",
    "Sentence",
    "SourceTranscript",
    "content_hash",
    "default_registry",
    "detect_project",
    "entry_points",
    "reply_items",
    "reply_validator",
]
