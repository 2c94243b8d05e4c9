"""Providers: the offline one, and the registry of remote ChatProviders by the name
`llm.provider` gives.

Adding a provider: write a class with `name`, `chat(model, messages, params)` and
`close()` (the ChatProvider Protocol), and register a factory that takes the LLMConfig:
in a plugin's `register_llm_providers(register)` hook (autopoiesis.plugins; this package
is the plugin of the built-in `openai`), or with `register_provider("name", factory)`.
`llm.provider: name` then selects it; an unknown name is refused here with the list of
registered ones.
"""

from __future__ import annotations

from collections.abc import Callable

from autopoiesis import plugins
from autopoiesis.core.config import LLMConfig
from autopoiesis.errors import LLMUnavailableError
from autopoiesis.llm.protocol import ChatProvider
from autopoiesis.llm.providers.offline import (
    OfflineProvider,
    register_offline_handler,
    unregister_offline_handler,
)
from autopoiesis.llm.providers.openai import OpenAIProvider

ProviderFactory = Callable[[LLMConfig], ChatProvider]


@plugins.hookimpl
def register_llm_providers(register: Callable[[str, ProviderFactory], None]) -> None:
    register("openai", OpenAIProvider)


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Make FACTORY(config) the ChatProvider used when llm.provider is NAME (a plugin of
    the process's plugin manager)."""
    plugins.plugin_manager().contribute("register_llm_providers", name, factory)


def make_provider(config: LLMConfig) -> ChatProvider:
    """The ChatProvider for config.provider."""
    factory: ProviderFactory | None = plugins.lookup(plugins.llm_providers, config.provider)
    if factory is None:
        known = ", ".join(["offline", *sorted(plugins.llm_providers())])
        raise LLMUnavailableError(
            f"Unknown llm.provider {config.provider!r}; write one of: {known}."
        )
    return factory(config)


__all__ = [
    "OfflineProvider",
    "OpenAIProvider",
    "ProviderFactory",
    "make_provider",
    "register_offline_handler",
    "register_provider",
    "unregister_offline_handler",
]
