"""The context compiler (docs/design.md#compiler): the densest prompt for a message that fits a
token
budget.

    plan      Plan, Section: sections placed against the budget, counted as rendered
    context   CompiledContext, HistoryMessage, ScoredItem, Correction: what a compile takes
              and gives
    compile   ContextCompiler: the slots P0-P4
    session   load_session: history from a transcript or JSON/JSONL messages

The compiler imports the kernel, the formats and the search index, nothing of topics,
knowledge or memory: the caller passes the active topics, the pending corrections and the
usage counts (`autopoiesis.memory.compile_message` does all three for a message).
"""

from autopoiesis.compiler.compile import DEFAULT_SYSTEM_PROMPT, ContextCompiler, strip_frontmatter
from autopoiesis.compiler.context import (
    CompiledContext,
    Correction,
    HistoryMessage,
    ScoredItem,
    SearchFn,
)
from autopoiesis.compiler.plan import Plan, Section
from autopoiesis.compiler.session import load_session

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "CompiledContext",
    "ContextCompiler",
    "Correction",
    "HistoryMessage",
    "Plan",
    "ScoredItem",
    "SearchFn",
    "Section",
    "load_session",
    "strip_frontmatter",
]
