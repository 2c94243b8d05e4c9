"""Compile the context for one message (what `autopoiesis compile` does): it spans the
watchers, the pending steering, the compiler and the usage counts, so it lives here in
the app layer and none of those packages imports another."""

from __future__ import annotations

from collections.abc import Sequence

from autopoiesis.app.usage import inclusion_counts, record_inclusions
from autopoiesis.compiler import CompiledContext, ContextCompiler, HistoryMessage
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.watch.pipeline import (
    TopicActivation,
    WatcherPipeline,
    add_pending,
    peek_pending,
    take_pending,
)


def compile_for_message(
    repo: MemoryRepo,
    message: str,
    *,
    session: Sequence[HistoryMessage] = (),
    budget: int | None = None,
    shared: bool = False,
    take_steering: bool = True,
    record: bool = True,
    compiler: ContextCompiler | None = None,
    session_context: bool = True,
) -> tuple[CompiledContext, list[TopicActivation]]:
    """Run the watchers on MESSAGE, pick up the pending steering (correction hints,
    webhook/cron topics), compile with the usage counts, and (with RECORD) count the
    knowledge files included. Returns (result, activations). Pending steering is cleared
    only when TAKE_STEERING, and put back if the compile fails. SESSION_CONTEXT: see
    ContextCompiler.compile."""
    pipe = WatcherPipeline(repo)
    activations = pipe.process(message, "input")
    pending = take_pending(repo) if take_steering else peek_pending(repo)
    by_name = pipe.topic_set.by_name()
    active = [by_name[a.topic] for a in activations if a.topic in by_name]
    active += [by_name[p.topic] for p in pending if p.topic in by_name]
    own = compiler is None
    comp = compiler or ContextCompiler(repo)
    try:
        result = comp.compile(message, active, session, shared=shared, budget=budget,
                              corrections=[p for p in pending if p.hint], usage=inclusion_counts(repo),
                              session_context=session_context)
    except BaseException:
        if take_steering and pending:
            add_pending(repo, pending)
        raise
    finally:
        if own:
            comp.close()
    if record:
        record_inclusions(repo, result.knowledge_paths)
    return result, activations
