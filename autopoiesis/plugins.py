"""One plugin mechanism for every extension point (pluggy, as simonw/llm does).

Nine kinds of things are pluggable, each through one hook that receives a `register`
callback:

==============================  =====================================================
hook                            register(...)
==============================  =====================================================
register_importers(register)    an Importer (capture.importers.base)
register_extractors(register)   an extractor (knowledge.extractors.ExtractorPlugin)
register_embedders(register)    a name and a factory(config) -> Embedder
register_llm_providers(...)     a name and a factory(llm_config) -> ChatProvider
register_offline_handlers(...)  a stage and a handler(prompt, system) -> answer
register_trigger_types(...)     a formats.topic_trigger.TriggerType (fields, parse, evaluation)
register_jobs(register, repo)   a daemon JobSpec, made for REPO's config
register_status_parts(register) a core.health.StatusPart of `autopoiesis status`
register_checks(register)       a core.health.Check of `autopoiesis doctor`
==============================  =====================================================

An outside package declares a module of hook implementations as an entry point of the
group `autopoiesis`::

    [project.entry-points.autopoiesis]
    tickets = "my_package.autopoiesis_plugin"

    # my_package/autopoiesis_plugin.py
    from autopoiesis.plugins import hookimpl

    @hookimpl
    def register_trigger_types(register):
        register(TriggerType("ticket", ...))

The built-ins come through the same door: each kind names its built-in plugin modules
(as strings, imported with importlib, so this base module imports no service and a
service never imports the integrations above it). The functions `importers()`,
`extractors()`, ... return what the plugins registered, built-ins first, then the others
in registration order (a later registration of a name replaces an earlier one).

Lazy on purpose: the git hooks and `search` run on every commit and prompt. A kind's
built-in modules are imported when that kind is first asked for, and the installed
distributions' entry points (importlib.metadata: 10-30 ms) are read once, only when a
caller asks with `installed=True` (the default); a lookup of one name asks the built-ins
first and reads the entry points only when the name is not among them.

The one piece of process state is the manager `plugin_manager()` returns (cached);
`new_manager()` makes a private one with the same hooks, for a registry that must not
see anyone else's registrations (ExtractorRegistry).
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pluggy

PROJECT = "autopoiesis"
ENTRY_POINT_GROUP = "autopoiesis"
# The group extractors were declared in before there was one plugin door; still read.
EXTRACTOR_ENTRY_POINT_GROUP = "autopoiesis.extractors"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

# The built-in plugin modules of each hook, in the order their contributions are listed.
BUILTIN_PLUGINS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("register_importers", ("autopoiesis.integrations.importers",)),
    ("register_extractors", ("autopoiesis.knowledge.extractors",)),
    ("register_embedders", ("autopoiesis.index.embedders",)),
    ("register_llm_providers", ("autopoiesis.llm.providers",)),
    ("register_offline_handlers", ("autopoiesis.topics.gate",)),
    ("register_trigger_types", ("autopoiesis.topics.triggers",)),
    ("register_jobs", ("autopoiesis.daemon.memory_jobs",)),
    # what `status` says and `doctor` checks: each package its own, listed in this order
    (
        "register_status_parts",
        ("autopoiesis.memory.health_parts", "autopoiesis.daemon.health"),
    ),
    (
        "register_checks",
        (
            "autopoiesis.memory.health_checks",
            "autopoiesis.memory.health_notes",
            "autopoiesis.topics.health",
            "autopoiesis.integrations.health",
            "autopoiesis.daemon.health",
        ),
    ),
)


class HookSpecs:
    """What a plugin may implement; each hook hands it a `register` callback."""

    @hookspec
    def register_importers(self, register: Callable[[Any], None]) -> None:
        """register(importer) for each session-log format the plugin reads."""

    @hookspec
    def register_extractors(self, register: Callable[[Any], None]) -> None:
        """register(extractor) for each knowledge extractor."""

    @hookspec
    def register_embedders(self, register: Callable[[str, Any], None]) -> None:
        """register(name, factory): `search.embedder: name` makes factory(config)."""

    @hookspec
    def register_llm_providers(self, register: Callable[[str, Any], None]) -> None:
        """register(name, factory): `llm.provider: name` makes factory(llm_config)."""

    @hookspec
    def register_offline_handlers(self, register: Callable[[str, Any], None]) -> None:
        """register(stage, handler): the offline provider's answer for STAGE."""

    @hookspec
    def register_trigger_types(self, register: Callable[[Any], None]) -> None:
        """register(trigger_type) for each topic trigger type."""

    @hookspec
    def register_jobs(self, register: Callable[[Any], None], repo: Any) -> None:
        """register(job_spec) for each daemon job of the memory repo REPO."""

    @hookspec
    def register_status_parts(self, register: Callable[[Any], None]) -> None:
        """register(status_part) for each part of `autopoiesis status` (core.health)."""

    @hookspec
    def register_checks(self, register: Callable[[Any], None]) -> None:
        """register(check) for each check of `autopoiesis doctor` (core.health)."""


HOOKS = tuple(name for name, _ in BUILTIN_PLUGINS)


class Contribution:
    """A plugin of one registration, made by the `register_*` functions of the registry
    modules (register_importer, register_embedder, ...): HOOK registers ARGS."""

    def __init__(self, hook: str, args: tuple[Any, ...]):
        if hook not in HOOKS or hook == "register_jobs":
            raise ValueError(f"{hook!r} is not a hook a single contribution can implement")
        self.hook = hook
        self.args = args

        def implementation(register: Callable[..., None]) -> None:
            register(*args)

        setattr(self, hook, hookimpl(implementation))

    def __repr__(self) -> str:
        return f"Contribution({self.hook}, {self.args[0]!r})"


class PluginManager(pluggy.PluginManager):
    """pluggy's manager with autopoiesis' hooks, the built-ins registered per hook on
    first use, the installed entry points read once on demand, and each hook's
    contributions cached until a plugin is registered or unregistered."""

    def __init__(self, *, builtins: bool = True):
        super().__init__(PROJECT)
        self.add_hookspecs(HookSpecs)
        self.load_errors: list[str] = []  # plugins that were skipped, and why
        # the daemon and the LLM client ask from several threads; the lazy steps run once
        self._lock = threading.RLock()
        self._builtins = dict(BUILTIN_PLUGINS) if builtins else {}
        self._builtin_names: set[str] = set()
        self._ready: set[str] = set()
        self._installed_read = False
        self._cache: dict[str, list[tuple[Any, ...]]] = {}

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        with self._lock:
            self._cache.clear()
            return super().register(plugin, name)

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        with self._lock:
            self._cache.clear()
            return super().unregister(plugin, name)

    def contribute(self, hook: str, *args: Any) -> Contribution:
        """Register a plugin that contributes ARGS to HOOK. Where a kind is read by name,
        a later contribution of a name replaces the earlier one's value (the name keeps
        its place in the order)."""
        plugin = Contribution(hook, args)
        self.register(plugin, name=f"{hook}:{_key(args[0])}:{id(plugin)}")
        return plugin

    def withdraw(self, hook: str, key: str) -> None:
        """Unregister every contribution of KEY to HOOK."""
        for name, plugin in self.list_name_plugin():
            if (
                isinstance(plugin, Contribution)
                and plugin.hook == hook
                and _key(plugin.args[0]) == key
            ):
                self.unregister(name=name)

    def contributions(
        self, hook: str, *, installed: bool = True, **kwargs: Any
    ) -> list[tuple[Any, ...]]:
        """What the plugins register through HOOK, as argument tuples: the built-ins
        first, then the other plugins in the order they were registered. INSTALLED: read
        the installed distributions' entry points first (once per manager)."""
        with self._lock:
            self._import_builtins(hook)
            if installed:
                self.load_installed()
            if kwargs:  # the jobs depend on the repo they are made for
                return self._call(hook, kwargs, builtin_only=False)
            if hook not in self._cache:
                self._cache[hook] = self._call(hook, kwargs, builtin_only=False)
            return list(self._cache[hook])

    def builtin_contributions(self, hook: str, **kwargs: Any) -> list[tuple[Any, ...]]:
        """What the built-in plugin modules alone register through HOOK."""
        with self._lock:
            self._import_builtins(hook)
            return self._call(hook, kwargs, builtin_only=True)

    def _call(
        self, hook: str, kwargs: dict[str, Any], *, builtin_only: bool
    ) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []

        def register(*args: Any) -> None:
            out.append(args)

        given = {"register": register, **kwargs}
        for impl in self._implementations(hook, builtin_only=builtin_only):
            try:
                impl.function(**{k: given[k] for k in impl.argnames})
            except Exception as exc:  # a broken plugin must not stop the built-ins
                if impl.plugin_name in self._builtin_names:
                    raise  # a bug of ours, not a plugin's
                error = f"plugin {impl.plugin_name!r}: {hook} failed: {type(exc).__name__}: {exc}"
                if error not in self.load_errors:
                    self.load_errors.append(error)
        return out

    def _implementations(self, hook: str, *, builtin_only: bool) -> list[Any]:
        """HOOK's implementations in the order a registry lists them: the built-ins first,
        then the others in the order they were registered (pluggy itself calls the last
        registered first). A wrapper has nothing to wrap in a registration: left out."""
        impls = [
            i for i in getattr(self.hook, hook).get_hookimpls() if not (i.hookwrapper or i.wrapper)
        ]
        if builtin_only:
            impls = [i for i in impls if i.plugin_name in self._builtin_names]
        # the built-ins in the order BUILTIN_PLUGINS lists them for HOOK (a module serving
        # two hooks is registered when the first of them is asked for)
        listed = {name: n for n, name in enumerate(self._builtins.get(hook, ()))}
        return sorted(
            impls,
            key=lambda i: (i.plugin_name not in self._builtin_names, listed.get(i.plugin_name, 0)),
        )

    def _import_builtins(self, hook: str) -> None:
        if hook in self._ready:
            return
        self._ready.add(hook)
        for module_name in self._builtins.get(hook, ()):
            if self.get_plugin(module_name) is None:
                self.register(importlib.import_module(module_name), name=module_name)
            self._builtin_names.add(module_name)

    def load_installed(self) -> None:
        """Register the plugins installed distributions declare in the group
        `autopoiesis` (once). pluggy's load_setuptools_entrypoints, but for two things:
        a plugin that fails to load is skipped and reported in `load_errors` (a broken
        plugin must not stop the built-ins), and only the group's entry points are read
        rather than every distribution's."""
        if self._installed_read:
            return
        self._installed_read = True
        for ep in entry_points(ENTRY_POINT_GROUP):
            if self.has_plugin(ep.name) or self.is_blocked(ep.name):
                continue
            try:
                self.register(ep.load(), name=ep.name)
            except Exception as exc:  # a plugin's import error is the plugin's, not ours
                self.load_errors.append(
                    f"entry point {ep.name!r} ({ep.value}) of the group "
                    f"{ENTRY_POINT_GROUP!r} did not load: {type(exc).__name__}: {exc}"
                )


def _key(value: Any) -> str:
    return value if isinstance(value, str) else str(getattr(value, "name", id(value)))


def entry_points(group: str) -> list[Any]:
    """The installed entry points of GROUP, by name (the one place the metadata is read)."""
    from importlib import metadata  # ~10-40 ms (it parses every distribution's metadata)

    return sorted(metadata.entry_points(group=group), key=lambda ep: ep.name)


@functools.cache
def plugin_manager() -> PluginManager:
    """The process's plugin manager: built-ins, installed plugins, and whatever the
    `register_*` functions added."""
    return PluginManager()


def new_manager() -> PluginManager:
    """A private manager with the same hooks and no plugins at all."""
    return PluginManager(builtins=False)


def builtin_contributions(hook: str, **kwargs: Any) -> list[tuple[Any, ...]]:
    """What the built-in plugins alone register through HOOK."""
    return plugin_manager().builtin_contributions(hook, **kwargs)


def load_errors() -> list[str]:
    """The installed plugins that did not load, and why."""
    return list(plugin_manager().load_errors)


def _by_name(pairs: Iterable[tuple[Any, ...]]) -> dict[str, Any]:
    return {args[0]: args[1] for args in pairs}


def _by_own_name(pairs: Iterable[tuple[Any, ...]]) -> dict[str, Any]:
    return {args[0].name: args[0] for args in pairs}


def importers(*, installed: bool = True) -> dict[str, Any]:
    """The importers by name, in registration order."""
    return _by_own_name(plugin_manager().contributions("register_importers", installed=installed))


def extractors(*, installed: bool = True) -> list[Any]:
    """Every registered extractor, in order (a registry decides what a clash of names means)."""
    return [
        args[0]
        for args in plugin_manager().contributions("register_extractors", installed=installed)
    ]


def embedders(*, installed: bool = True) -> dict[str, Any]:
    """Embedder factories by name."""
    return _by_name(plugin_manager().contributions("register_embedders", installed=installed))


def llm_providers(*, installed: bool = True) -> dict[str, Any]:
    """ChatProvider factories by name."""
    return _by_name(plugin_manager().contributions("register_llm_providers", installed=installed))


def offline_handlers(*, installed: bool = True) -> dict[str, Any]:
    """The offline provider's handlers by stage."""
    return _by_name(
        plugin_manager().contributions("register_offline_handlers", installed=installed)
    )


def trigger_types(*, installed: bool = True) -> dict[str, Any]:
    """Topic trigger types by name."""
    return _by_own_name(
        plugin_manager().contributions("register_trigger_types", installed=installed)
    )


def status_parts(*, installed: bool = True) -> dict[str, Any]:
    """The parts of `status` by name, in order (core.health.StatusPart)."""
    return _by_own_name(
        plugin_manager().contributions("register_status_parts", installed=installed)
    )


def checks(*, installed: bool = True) -> dict[str, Any]:
    """The checks of `doctor` by name, in order (core.health.Check)."""
    return _by_own_name(plugin_manager().contributions("register_checks", installed=installed))


def jobs(repo: Any) -> list[Any]:
    """The daemon jobs the plugins register for REPO."""
    return [args[0] for args in plugin_manager().contributions("register_jobs", repo=repo)]


def lookup(kind: Callable[..., dict[str, Any]], name: str) -> Any:
    """NAME in KIND (e.g. `lookup(embedders, "offline")`): the built-ins and registered
    plugins first; the installed entry points are read only when they lack NAME."""
    found = kind(installed=False).get(name)
    return found if found is not None else kind().get(name)
