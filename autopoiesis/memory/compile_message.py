"""Compile the context for one message (what `autopoiesis compile` does): it spans the
watchers, the pending steering, the compiler and the usage counts, so it lives here in
the Memory facade and none of those packages imports another."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autopoiesis.compiler import CompiledContext, ContextCompiler, HistoryMessage
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.memory.usage import inclusion_counts, record_inclusions
from autopoiesis.topics.pipeline import (
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
    pipeline: WatcherPipeline | None = None,
    log_decisions: bool = True,
    usage: Mapping[str, int] | None = None,
    include_archive: bool = False,
    session_context: bool = True,
    project: str | None = None,
) -> tuple[CompiledContext, list[TopicActivation]]:
    """Run the watchers on MESSAGE, pick up the pending steering (correction hints,
    webhook/cron topics), compile with the usage counts, and (with RECORD) count the
    knowledge files included. Returns (result, activations). Pending steering is cleared
    only when TAKE_STEERING, and put back if the compile fails. SESSION_CONTEXT: see
    ContextCompiler.compile; PROJECT, the current project (its items first).

    A caller compiling many messages passes one COMPILER and one PIPELINE (kept open).
    LOG_DECISIONS=False leaves the gate log alone (a dry run, an evaluation); USAGE
    replaces the recorded inclusion counts ({} to score on content only)."""
    pipe = pipeline or WatcherPipeline(repo)
    activations = [
        a for a in pipe.evaluate(message, "input", dry_run=not log_decisions) if a.activated
    ]
    pending = take_pending(repo) if take_steering else peek_pending(repo)
    by_name = pipe.topic_set.by_name()
    active = [by_name[a.topic] for a in activations if a.topic in by_name]
    active += [by_name[p.topic] for p in pending if p.topic in by_name]
    own = compiler is None
    comp = compiler or ContextCompiler(repo)
    try:
        result = comp.compile(
            message,
            active,
            session,
            shared=shared,
            budget=budget,
            corrections=[p for p in pending if p.hint],
            usage=inclusion_counts(repo) if usage is None else usage,
            include_archive=include_archive,
            session_context=session_context,
            project=project,
        )
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
