"""The LLM layer: one client for every stage, an offline default, and the seams to plug
in providers and offline heuristics.

* ``provider: offline`` (the default) answers deterministically, without a network
  (providers/offline.py), with a heuristic a stage registered through
  `register_offline_handler`, else an extractive answer.
* ``provider: openai`` talks to any OpenAI-compatible endpoint with the ``openai``
  package (providers/openai.py), imported only when a call is made.

State lives in the repo's gitignored state files ``llm_cache`` (the response cache,
cache.py) and ``llm_ledger`` (the usage ledger, ledger.py, UTC days). Both may be deleted at any time;
the cost is only re-asking the model.
"""

from autopoiesis.llm.cache import ResponseCache, request_key
from autopoiesis.llm.client import STAGES, LLMClient, RetryPolicy, parse_yes_no
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
