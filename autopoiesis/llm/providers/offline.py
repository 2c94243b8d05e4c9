"""The offline provider: deterministic answers with no network, and the per-stage
handlers through which stages give it their heuristics.

A stage's handler is a plugin (autopoiesis.plugins, the hook `register_offline_handlers`),
so the LLM layer never needs to know the stages above it: the gate's answer to its own
prompt is a built-in plugin (topics/gate.py, listed in autopoiesis.plugins). A client
can override a stage for itself with LLMClient.register_offline_handler, and a process
for every client with `register_offline_handler`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from autopoiesis import plugins
from autopoiesis.errors import LLMResponseError, LLMUnavailableError
from autopoiesis.llm.protocol import OfflineHandler

_YES_NO_QUESTION = re.compile(r"\bYES\s+or\s+NO\b", re.IGNORECASE)
_LABEL_LINE = re.compile(r"^[^\n]{1,60}:[ \t]*$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*#>])")


def register_offline_handler(stage: str, fn: OfflineHandler) -> None:
    """Make FN the offline answer of STAGE for every client: `fn(prompt, system)` returns
    the text (for complete) or JSON-able data (for complete_json). A plugin of the
    process's plugin manager; registering a stage again replaces its handler."""
    plugins.plugin_manager().withdraw("register_offline_handlers", stage)
    plugins.plugin_manager().contribute("register_offline_handlers", stage, fn)


def unregister_offline_handler(stage: str) -> None:
    """Withdraw what `register_offline_handler` registered for STAGE."""
    plugins.plugin_manager().withdraw("register_offline_handlers", stage)


class OfflineProvider:
    """Deterministic answers with no network: same request, same answer, every time.

    * A stage with a registered handler gets the handler's answer (the client's own
      handlers first, then the module registry).
    * A YES/NO question with no handler (any call with max_tokens <= 3, or a prompt
      asking "YES or NO"): NO. The offline provider has no opinion of its own; a stage
      that wants a yes/no rule registers it (the gate does).
    * Anything else: an honest extractive answer, the first sentence(s) of the prompt's
      payload (the text after its last "Label:" line, e.g. "Diff:"), up to about
      4 × max_tokens characters. It does not pretend to understand the instruction.
    """

    name = "offline"

    def __init__(self, handlers: dict[str, OfflineHandler] | None = None):
        self._handlers = handlers if handlers is not None else {}

    def handler(self, stage: str) -> OfflineHandler | None:
        found: OfflineHandler | None = self._handlers.get(stage)
        return found or plugins.lookup(plugins.offline_handlers, stage)

    def complete(
        self, stage: str, prompt: str, system: str | None = None, max_tokens: int = 256
    ) -> str:
        fn = self.handler(stage)
        if fn is not None:
            out = fn(prompt, system)
            return (
                out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, sort_keys=True)
            )
        if max_tokens <= 3 or _YES_NO_QUESTION.search(prompt):
            return "NO"
        return extract_sentences(prompt, max_chars=max(16, 4 * max_tokens))

    def complete_json(self, stage: str, prompt: str, system: str | None = None) -> Any:
        fn = self.handler(stage)
        if fn is None:
            raise LLMUnavailableError(
                f"The offline provider has no JSON handler for stage '{stage}'. Set llm.provider: "
                "openai in "
                "memory-config.yaml, or register one with "
                f"autopoiesis.llm.register_offline_handler('{stage}', fn)."
            )
        out = fn(prompt, system)
        if isinstance(out, str):
            try:
                return json.loads(out)
            except json.JSONDecodeError as exc:
                raise LLMResponseError(
                    f"The offline handler of stage '{stage}' returned text that is not JSON: {exc}."
                ) from exc
        return out


def payload(prompt: str) -> str:
    """The text after the prompt's last "Label:" line, or the whole prompt."""
    last = None
    for last in _LABEL_LINE.finditer(prompt):  # noqa: B007 - the loop keeps the last match
        pass
    if last is not None:
        rest = prompt[last.end() :].strip()
        if rest:
            return rest
    return prompt.strip()


def extract_sentences(prompt: str, max_chars: int) -> str:
    """The first sentence(s) of PROMPT's payload, at most MAX_CHARS characters."""
    parts = [" ".join(p.split()) for p in _SENTENCE_END.split(payload(prompt))]
    parts = [p for p in parts if p]
    if not parts:
        return ""
    out = parts[0]
    for p in parts[1:]:
        if len(out) + 1 + len(p) > max_chars:
            break
        out += " " + p
    if len(out) > max_chars:  # one long first sentence: cut at a word boundary
        cut = out[:max_chars].rsplit(" ", 1)[0]
        out = cut or out[:max_chars]
    return out
