"""What a call costs: the price table and the estimate the ledger records.

USD per million tokens (input, output), OpenAI list prices. An estimate for the ledger,
not a bill: unknown and local models (Ollama, vLLM, ...) cost 0. The longest key that
prefixes the model name wins, so dated snapshots ("gpt-4o-mini-2024-07-18") match.
"""

from __future__ import annotations

PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1": (15.00, 60.00),
    "o1-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.10, 0.0),
}


def estimate_cost(model: str, tokens_in: int, tokens_out: int) -> float:
    """Estimated USD cost of a call; 0 for models not in PRICES_PER_MILLION."""
    name = model.rsplit("/", 1)[-1].lower()  # "openai/gpt-4o" (routers) -> "gpt-4o"
    best = ""
    for key in PRICES_PER_MILLION:
        if name.startswith(key) and len(key) > len(best):
            best = key
    if not best:
        return 0.0
    pin, pout = PRICES_PER_MILLION[best]
    return round((tokens_in * pin + tokens_out * pout) / 1_000_000, 8)
