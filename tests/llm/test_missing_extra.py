"""The openai package is an extra (`autopoiesis[openai]`): the offline default never needs
it, and a configuration that does says how to install it instead of an ImportError."""

from __future__ import annotations

import sys

import pytest

from autopoiesis.core.config import LLMConfig
from autopoiesis.errors import EmbedderError, LLMUnavailableError


def test_an_llm_provider_without_the_openai_package_says_which_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autopoiesis.llm.providers.openai import OpenAIProvider

    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` raises ImportError
    provider = OpenAIProvider(LLMConfig(provider="openai"))
    with pytest.raises(LLMUnavailableError, match=r"autopoiesis\[openai\]"):
        provider.chat("some-model", [{"role": "user", "content": "hi"}], {})


def test_the_openai_embedder_without_the_package_says_which_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autopoiesis.index.embedders.openai import OpenAIEmbedder

    monkeypatch.setitem(sys.modules, "openai", None)
    embedder = OpenAIEmbedder(model="text-embedding-3-small", dimensions=8)
    with pytest.raises(EmbedderError, match=r"autopoiesis\[openai\]"):
        embedder._get_client()
