"""What every lifecycle stage that may call a model shares: the LLM client, built on first
use (offline runs never construct it) and closed with the stage unless the caller passed
one in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autopoiesis.core.clock import utc_now
from autopoiesis.core.paths import MemoryRepo

if TYPE_CHECKING:
    from autopoiesis.llm import LLMClient


class LLMStage:
    repo: MemoryRepo

    def _init_llm(self, llm: LLMClient | None) -> None:
        self._llm = llm
        self._own_llm = llm is None

    @property
    def llm(self) -> LLMClient:
        if self._llm is None:
            from autopoiesis.llm import LLMClient

            # the stage's clock (tests and replays inject one) also times the LLM backoff
            self._llm = LLMClient(self.repo, clock=getattr(self, "now", None) or utc_now)
        return self._llm

    def close(self) -> None:
        if self._own_llm and self._llm is not None:
            self._llm.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
