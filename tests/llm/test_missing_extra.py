"""The openai package is loaded only when a model is configured: an environment that lost
it says how to get it back instead of an ImportError."""

from __future__ import annotations

import sys

import pytest

from autopoiesis.core.config import LLMConfig
from autopoiesis.errors import EmbedderError, LLMUnavailableError


def test_an_llm_provider_without_the_openai_package_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autopoiesis.llm.providers.openai import OpenAIProvider

    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` raises ImportError
    provider = OpenAIProvider(LLMConfig(provider="openai"))
    with pytest.raises(LLMUnavailableError, match=r"pip install openai"):
        provider.chat("some-model", [{"role": "user", "content": "hi"}], {})


def test_the_openai_embedder_without_the_package_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autopoiesis.index.embedders.openai import OpenAIEmbedder

    monkeypatch.setitem(sys.modules, "openai", None)
    embedder = OpenAIEmbedder(model="text-embedding-3-small", dimensions=8)
    with pytest.raises(EmbedderError, match=r"pip install openai"):
        embedder._get_client()
