"""The LLM layer: one client for every stage, an offline default, and the seams to plug
in providers and offline heuristics.

* ``provider: offline`` (the default) answers deterministically, without a network
  (providers/offline.py), with a heuristic a stage registered through
  `register_offline_handler`, else an extractive answer.
* ``provider: openai`` talks to any OpenAI-compatible endpoint with the ``openai``
  package (providers/openai.py), imported only when a call is made.

State lives in the repo's gitignored state files ``llm_cache`` (the response cache,
cache.py) and ``llm_ledger`` (the usage ledger, ledger.py, UTC days). Both may be deleted at any
time;
the cost is only re-asking the model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autopoiesis.llm.cache import ResponseCache, request_key
    from autopoiesis.llm.client import STAGES, LLMClient, parse_yes_no
    from autopoiesis.llm.ledger import Ledger, summarize_usage
    from autopoiesis.llm.pricing import PRICES_PER_MILLION, estimate_cost
    from autopoiesis.llm.protocol import (
        CallFailure,
        ChatProvider,
        Completion,
        LLMResult,
        Message,
        OfflineHandler,
        UsageRow,
        Validator,
    )
    from autopoiesis.llm.providers import (
        OfflineProvider,
        OpenAIProvider,
        ProviderFactory,
        register_offline_handler,
        register_provider,
        unregister_offline_handler,
    )
    from autopoiesis.llm.remote import RetryPolicy

# Each name's module, imported when the name is first used: the client (and the redaction
# rules it compiles) is ~40 ms, which a process that only registers an offline handler
# (the watcher's gate, on the prompt hook's path) never needs.
_MODULES = {
    "ResponseCache": "cache",
    "request_key": "cache",
    "STAGES": "client",
    "LLMClient": "client",
    "RetryPolicy": "remote",
    "parse_yes_no": "client",
    "Ledger": "ledger",
    "summarize_usage": "ledger",
    "PRICES_PER_MILLION": "pricing",
    "estimate_cost": "pricing",
    "CallFailure": "protocol",
    "ChatProvider": "protocol",
    "Completion": "protocol",
    "LLMResult": "protocol",
    "Message": "protocol",
    "OfflineHandler": "protocol",
    "UsageRow": "protocol",
    "Validator": "protocol",
    "OfflineProvider": "providers",
    "OpenAIProvider": "providers",
    "ProviderFactory": "providers",
    "register_offline_handler": "providers",
    "register_provider": "providers",
    "unregister_offline_handler": "providers",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "PRICES_PER_MILLION",
    "STAGES",
    "CallFailure",
    "ChatProvider",
    "Completion",
    "LLMClient",
    "LLMResult",
    "Ledger",
    "Message",
    "OfflineHandler",
    "OfflineProvider",
    "OpenAIProvider",
    "ProviderFactory",
    "ResponseCache",
    "RetryPolicy",
    "UsageRow",
    "Validator",
    "estimate_cost",
    "parse_yes_no",
    "register_offline_handler",
    "register_provider",
    "request_key",
    "summarize_usage",
    "unregister_offline_handler",
]
