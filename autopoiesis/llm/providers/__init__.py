"""Providers: the offline one, and the registry of remote ChatProviders by the name
`llm.provider` gives.

Adding a provider: write a class with `name`, `chat(model, messages, params)` and
`close()` (the ChatProvider Protocol), and `register_provider("name", factory)` where
the factory takes the LLMConfig. `llm.provider: name` then selects it; an unknown name
is refused here with the list of registered ones.
"""

from __future__ import annotations

from collections.abc import Callable

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

_PROVIDERS: dict[str, ProviderFactory] = {"openai": OpenAIProvider}


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Make FACTORY(config) the ChatProvider used when llm.provider is NAME."""
    _PROVIDERS[name] = factory


def make_provider(config: LLMConfig) -> ChatProvider:
    """The ChatProvider for config.provider."""
    factory = _PROVIDERS.get(config.provider)
    if factory is None:
        known = ", ".join(["offline", *sorted(_PROVIDERS)])
        raise LLMUnavailableError(f"Unknown llm.provider {config.provider!r}; write one of: {known}.")
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
