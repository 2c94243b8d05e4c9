"""The watcher and compiler stage of `autopoiesis demo`: a topic activating on a message,
output steering on the agent's reply, and a compiled context."""

from __future__ import annotations

import typer

from autopoiesis.core.paths import MemoryRepo


def demo_stage(repo: MemoryRepo) -> None:
    from autopoiesis.app.compile_message import compile_for_message
    from autopoiesis.watch.pipeline import WatcherPipeline

    message = "Can you review the PR that just came in? https://github.com/acme/app/pull/42"
    typer.secho(f'\n== autopoiesis topics test "{message}"', bold=True)
    pipe = WatcherPipeline(repo)
    for a in pipe.evaluate(message, "input", all_topics=True, dry_run=True):
        hits = ", ".join(f"{h.trigger_type}={h.detail!r}" for h in a.hits) or "no trigger"
        score = a.scores.get("tfidf")
        typer.echo(f"{a.topic:<20} {'ACTIVATED' if a.activated else 'not active':<10} tier {a.tier}: {a.reason}")
        typer.echo(f"    tier 1: {hits}" + (f"; tier 2 tf-idf {score:.2f}" if score is not None else ""))

    reply = 'Sure, here is the fix:\n    print "done"\n'
    typer.secho("\n== agent output watched (direction=output)", bold=True)
    for topic, hint in pipe.corrections(reply):
        typer.echo(f"{topic}: correction for the next turn: {hint}")
    pipe.process(reply, "output")  # queues the hint for the next compile

    typer.secho(f'\n== autopoiesis compile --explain "{message}"', bold=True)
    result, _ = compile_for_message(repo, message, budget=2048)
    for s in result.sections:
        if s.included:
            typer.echo(f"P{s.priority} {s.tokens:>5} tokens  {s.label}")
    typer.echo(f"total {result.total_tokens} of {result.budget} tokens")
