"""`autopoiesis topics ...`, `gate ...`, `compile`, `watch` and `flush`: a thin layer over
the Memory façade (its watchers and compile), autopoiesis.topics and
autopoiesis.knowledge.flush. Imports stay inside the commands so that `autopoiesis --help`
does not pay for scikit-learn or numpy."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from autopoiesis.cli._common import (
    batch_lines,
    echo_json,
    existing_file,
    fail,
    get_memory,
    get_repo,
    project_option,
    warn,
)
from autopoiesis.core.streams import stdin_text
from autopoiesis.core.text import counted

if TYPE_CHECKING:
    from datetime import datetime

    from autopoiesis.compiler.context import CompiledContext
    from autopoiesis.memory import Memory


def _parse_time(value: str | None, option: str) -> datetime:
    from datetime import datetime

    from autopoiesis.core.clock import utc, utc_now

    if value is None:
        return utc_now()
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise fail(
            f"{option} {value!r} is not a time; write it like 2026-02-16T08:00 (UTC) or with an "
            "offset.",
            2,
        ) from None
    return dt if dt.tzinfo else utc(dt)


def _fmt_scores(scores: dict[str, Any]) -> str:
    keys = ("tfidf", "bm25", "jaccard", "minhash")
    return " ".join(f"{k}={scores[k]:.3f}" for k in keys if k in scores)


def register(app: typer.Typer) -> None:
    """Add the `topics` and `gate` groups and the `compile`, `watch` and `flush` commands to APP."""
    topics = typer.Typer(
        help="Topic files: list, check, test a message, fire webhooks, cron.", no_args_is_help=True
    )
    gate = typer.Typer(
        help="The tier-3 gate: decision report and usefulness feedback.", no_args_is_help=True
    )
    topics.command("list")(topics_list)
    topics.command("check")(topics_check)
    topics.command("test")(topics_test)
    topics.command("fire")(topics_fire)
    topics.command("due")(topics_due)
    gate.command("report")(gate_report_cmd)
    gate.command("feedback")(gate_feedback)
    app.command("compile")(compile_cmd)
    app.command("watch")(watch_cmd)
    app.command("flush")(flush)
    app.add_typer(topics, name="topics")
    app.add_typer(gate, name="gate")


def topics_list(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """The valid topics with their activation, priority and triggers."""
    from autopoiesis.topics.loader import load_topics

    ts = load_topics(get_repo(ctx))
    if as_json:
        echo_json(
            {
                "topics": [
                    {
                        "name": t.name,
                        "path": t.path,
                        "description": t.description,
                        "activation": t.activation,
                        "priority": t.priority,
                        "similarity_threshold": t.similarity_threshold,
                        "max_context_kb": t.max_context_kb,
                        "subscriptions": list(t.subscriptions),
                        "triggers": [tr.describe() for tr in t.triggers],
                    }
                    for t in ts.topics
                ],
                "errors": list(ts.errors),
            }
        )
        return
    for t in ts.topics:
        typer.echo(f"{t.name:<28} {t.activation:<7} {t.priority:<8} {t.path}")
        typer.echo(f"    {t.description}")
        typer.echo(f"    triggers: {', '.join(tr.describe() for tr in t.triggers) or '(none)'}")
    if not ts.topics:
        typer.echo("No topics under topics/.")
    for e in ts.errors:
        warn(f"skipped: {e}")


def topics_check(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")
) -> None:
    """Validate every topic file; exits 1 when one is invalid."""
    from autopoiesis.topics.loader import load_topics

    ts = load_topics(get_repo(ctx))
    if as_json:
        echo_json(
            {
                "valid": [t.path for t in ts.topics],
                "errors": list(ts.errors),
                "warnings": list(ts.warnings),
            }
        )
    else:
        for w in ts.warnings:
            typer.echo(f"warning: {w}", err=True)
        for e in ts.errors:
            typer.echo(f"error: {e}", err=True)
        typer.echo(
            f"{counted(len(ts.topics), 'valid topic')}, {counted(len(ts.errors), 'error')}, "
            f"{counted(len(ts.warnings), 'warning')}."
        )
    if ts.errors:
        raise typer.Exit(1)


def topics_test(
    ctx: typer.Context,
    message: str = typer.Argument(..., help="The message to test."),
    output: bool = typer.Option(
        False, "--output", help="Treat it as the agent's own output (output-scope triggers)."
    ),
    paths: list[str] = typer.Option(
        [], "--path", help="A file path seen in a tool call (glob triggers); repeatable."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {activations: [{topic, activated, tier, scores}]}."
    ),
) -> None:
    """Each topic's verdict on MESSAGE: tier 1 triggers, tier 2 scores, the route and the
    gate's answer. A dry run: nothing is logged or queued."""
    pipe = get_memory(ctx).watchers(log_decisions=False, persist_steering=False)
    acts = pipe.evaluate(
        message, "output" if output else "input", paths, all_topics=True, dry_run=True
    )
    if as_json:
        echo_json(
            {
                "direction": "output" if output else "input",
                "activations": [a.as_dict() for a in acts],
            }
        )
        return
    for a in acts:
        mark = "ACTIVATE" if a.activated else "-"
        typer.echo(f"{a.topic:<28} {mark:<8} tier {a.tier}  {a.reason}")
        t1 = (
            ", ".join(f"{h.trigger_type}[{h.trigger_index}]={h.detail!r}" for h in a.hits)
            or "no trigger fired"
        )
        typer.echo(f"    tier 1: {t1}")
        if "tfidf" in a.scores:
            verdict = "pass" if a.scores["tfidf"] >= a.scores["threshold"] else "below"
            typer.echo(
                f"    tier 2: {_fmt_scores(a.scores)}  threshold={a.scores['threshold']:g} "
                f"({verdict})"
            )
        for h in a.correction_hints:
            typer.echo(f"    correction hint: {h}")
    if not acts:
        typer.echo("No topics under topics/.")


def topics_fire(
    ctx: typer.Context,
    webhook: str = typer.Option(
        ...,
        "--webhook",
        metavar="SOURCE/EVENT",
        help="The webhook that arrived, e.g. email/new_message.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Fire a webhook: activate the topics that declare it; the next compile injects them."""
    source, _, event = webhook.partition("/")
    if not source:
        raise fail("--webhook needs SOURCE/EVENT, like email/new_message (or just SOURCE).", 2)
    acts = get_memory(ctx).watchers().fire_webhook(source, event or None)
    if as_json:
        echo_json({"activations": [a.as_dict() for a in acts]})
        return
    for a in acts:
        typer.echo(f"{a.topic}: activated by webhook {webhook}; queued for the next compile")
    if not acts:
        typer.echo(f"No topic has a webhook trigger for {webhook}.")


def topics_due(
    ctx: typer.Context,
    at: str | None = typer.Option(
        None, "--at", metavar="TIME", help="Evaluate at TIME (ISO-8601; default now, UTC)."
    ),
    since: str | None = typer.Option(
        None, "--since", metavar="TIME", help="Window start (default one minute before --at)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Topics whose cron triggers fire in (SINCE, AT]."""
    when = _parse_time(at, "--at")
    start = _parse_time(since, "--since") if since else None
    due = get_memory(ctx).watchers().due(when, start)
    if as_json:
        echo_json(
            {
                "at": when.isoformat(),
                "due": [
                    {"topic": d.topic, "schedule": d.schedule, "fire_time": d.fire_time.isoformat()}
                    for d in due
                ],
            }
        )
        return
    for d in due:
        typer.echo(f"{d.topic:<28} {d.schedule:<16} {d.fire_time.isoformat()}")
    if not due:
        typer.echo(f"No cron trigger is due at {when.isoformat()}.")


def gate_report_cmd(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    decisions: bool = typer.Option(False, "--decisions", help="List the individual decisions too."),
) -> None:
    """Activation rates, gate yes/no rates and score distributions per topic, with
    threshold suggestions, over the decisions the gate log keeps (its latest months)."""
    from autopoiesis.topics.gate import GateLog, gate_report
    from autopoiesis.topics.loader import load_topics

    repo = get_repo(ctx)
    rows = GateLog(repo).decisions()
    stats = gate_report(rows, load_topics(repo).topics)
    # the log keeps its latest decisions (core/paths' STATE_LOG_KEEP_BYTES): say from when
    since = min((d.timestamp for d in rows), default=None)
    if as_json:
        data: dict[str, Any] = {"since": since, "topics": [s.as_dict() for s in stats]}
        if decisions:
            data["decisions"] = [d.as_dict() for d in rows]
        echo_json(data)
        return
    if not stats:
        typer.echo("No gate decisions logged yet (they are written as messages are processed).")
        return
    typer.echo(f"{len(rows)} decisions since {since} (the gate log keeps its latest months)")
    typer.echo(
        f"{'topic':<26} {'decided':>7} {'activ%':>6} {'gated':>5} {'yes%':>5} {'useful':>7}   "
        "tier-2 score min/p25/med/p75/max"
    )
    for s in stats:
        yes = "-" if s.gate_yes_rate is None else f"{100 * s.gate_yes_rate:.0f}"
        typer.echo(
            f"{s.topic:<26} {s.decisions:>7} {100 * s.activation_rate:>6.0f} {s.gate_calls:>5} "
            f"{yes:>5} "
            f"{s.useful:>3}/{s.useful + s.not_useful:<3}   {s.score_min:.2f}/{s.score_p25:.2f}/"
            f"{s.score_median:.2f}/{s.score_p75:.2f}/{s.score_max:.2f}"
        )
        if s.suggestion:
            typer.echo(f"    suggestion: {s.suggestion}")
    if decisions:
        for d in rows:
            typer.echo(
                f"{d.id} {d.timestamp} {d.topic_name} route={d.route} activated={d.activated} "
                f"gate={d.gate_result} score={d.tier2_score:.3f} useful={d.was_useful}"
            )


def gate_feedback(
    ctx: typer.Context,
    decision_id: str = typer.Argument(
        ..., help="The decision id (gd_...) from the log or `topics`/`watch` output."
    ),
    useful: bool = typer.Option(..., "--useful/--not-useful", help="Did the activation help?"),
) -> None:
    """Record whether an activation was useful: the `was_useful` of its gate decision."""
    from autopoiesis.topics.gate import GateLog

    d = GateLog(get_repo(ctx)).feedback(decision_id, useful)
    typer.echo(f"{d.id} ({d.topic_name}): was_useful={useful}")


def compile_cmd(
    ctx: typer.Context,
    message: str | None = typer.Argument(None, help="The current message."),
    session: str | None = typer.Option(
        None,
        "--session",
        metavar="FILE",
        help="Session history: a transcript, JSON list or JSONL of {role, content}.",
    ),
    budget: int | None = typer.Option(
        None,
        "--budget",
        metavar="TOKENS",
        help="Token budget (default context_compiler.token_budget).",
    ),
    shared: bool = typer.Option(
        False, "--shared", help="A shared or group context: MEMORY.md is left out."
    ),
    explain: bool = typer.Option(
        False, "--explain", help="Show each section: tokens, included or not, and why."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {prompt, total_tokens, budget, sections}."
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Leave pending hints queued, inclusion counts and the gate log unchanged.",
    ),
    batch: str | None = typer.Option(
        None,
        "--batch",
        metavar="FILE",
        help="One message a line ('-' for stdin; a JSON string or {\"message\": ...} line "
        "may hold line breaks); with --json, one JSON object a line, in one process.",
    ),
    archive: bool = typer.Option(
        False, "--archive", help="Let scored knowledge take from archive/ too."
    ),
    project: str | None = typer.Option(
        None,
        "--project",
        help="Rank this project's knowledge and transcripts (and global ones) before other "
        "projects'. Default: the project of the current folder (its git repository, unless "
        "that is the memory repo).",
    ),
    all_projects: bool = typer.Option(
        False, "--all-projects", help="Rank every project's items alike (as --project '')."
    ),
) -> None:
    """Compile the context for MESSAGE: identity, memory, journal, active topics,
    scored knowledge and session history within the token budget; the current project's
    items first."""

    from autopoiesis.git.runner import status_ahead

    if (message is None) == (batch is None):
        raise fail("give a MESSAGE, or --batch FILE with one message a line.", 2)
    memory = get_memory(ctx)
    ctx.with_resource(
        status_ahead(memory.root)
    )  # git reads the tree while the compiler is imported
    from autopoiesis.compiler import load_session

    if batch is not None and not as_json:
        raise fail("--batch prints one JSON object a line: add --json.", 2)
    history = []
    if session:
        history = load_session(existing_file(session, "--session"), memory.repo)
    options: dict[str, Any] = {
        "session": history,
        "budget": budget,
        "shared": shared,
        "take_steering": not dry_run,
        "record": not dry_run,
        "log_decisions": not dry_run,
        "include_archive": archive,
        "project": None if all_projects else project_option(memory, project),
    }
    if batch is not None:
        _compile_batch(memory, batch, options)
        return
    assert message is not None
    result, activations = memory.compile(message, **options)
    for notice in result.notices:
        warn(notice)
    if as_json:
        data = result.as_dict()
        data["activations"] = [a.as_dict() for a in activations]
        echo_json(data)
        return
    if explain:
        _print_explanation(result)
        return
    typer.echo(result.prompt)


def _compile_batch(memory: Memory, batch: str, options: dict[str, Any]) -> None:
    """--batch: one JSON object a line for each message of BATCH, in one process; exit 1
    when any line failed."""
    import json

    from autopoiesis.errors import AutopoiesisError

    failed = False
    with batch_lines(batch) as lines:
        with memory.compiler() as compiler:
            pipe = memory.watchers()
            for n, line in enumerate(lines, 1):
                text = _batch_message(line)
                try:
                    if text is None:
                        raise ValueError(
                            'expected a message: plain text, a JSON string or {"message": "..."}'
                        )
                    result, activations = memory.compile(
                        text, compiler=compiler, pipeline=pipe, **options
                    )
                except (AutopoiesisError, ValueError) as exc:
                    failed = True
                    out: dict[str, Any] = {"line": n, "error": str(exc)}
                else:
                    out = result.as_dict()
                    out["activations"] = [a.as_dict() for a in activations]
                sys.stdout.write(json.dumps(out, ensure_ascii=False, default=str) + "\n")
                sys.stdout.flush()
    if failed:
        raise typer.Exit(1)


def _print_explanation(result: CompiledContext) -> None:
    """--explain: each section (priority, included, tokens, label, why), then the totals."""
    typer.echo(f"{'P':<2} {'in':<3} {'tokens':>6}  {'label':<48} reason")
    for s in result.sections:
        typer.echo(
            f"{s.priority:<2} {'yes' if s.included else 'no':<3} {s.tokens:>6}  "
            f"{_short(s.label, 48):<48} {s.reason}"
        )
    typer.echo(
        f"total {result.total_tokens} / {result.budget} tokens; history dropped: "
        f"{result.dropped_history}"
        + ("; flush due (see `autopoiesis flush --prompt`)" if result.flush_due else "")
    )


def watch_cmd(
    ctx: typer.Context,
    all_verdicts: bool = typer.Option(
        False, "--all", help="Print every candidate's verdict, not only activations."
    ),
) -> None:
    """Read JSONL messages on stdin ({"text": ..., "direction": "input"|"output",
    "paths": [...]}; "content"/"message" and "role": "agent" are understood too, and a
    plain text line is an input message); write one JSON line of activations per message."""
    import json

    lines = stdin_text("the JSONL messages to watch")
    pipe = get_memory(ctx).watchers()
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        out: dict[str, Any] = {"line": n}
        text: Any
        direction: Any
        paths: Any
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past reading: its text
            data = line
        if isinstance(data, str):
            text, direction, paths = data, "input", []
        elif isinstance(data, dict):
            text = data.get("text", data.get("content", data.get("message")))
            direction = data.get("direction") or (
                "output" if data.get("role") in ("agent", "assistant") else "input"
            )
            paths = data.get("paths") or []
        else:
            text, direction, paths = None, "input", []
        if (
            not isinstance(text, str)
            or direction not in ("input", "output")
            or not isinstance(paths, list)
        ):
            out["error"] = 'expected {"text": "...", "direction": "input"|"output", "paths": [...]}'
        else:
            acts = pipe.evaluate(text, direction, [str(p) for p in paths])
            out["direction"] = direction
            out["activations"] = [a.as_dict() for a in acts if all_verdicts or a.activated]
            if isinstance(data, dict) and "id" in data:
                out["id"] = data["id"]
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def flush(
    ctx: typer.Context,
    prompt: bool = typer.Option(
        False, "--prompt", help="Print the flush prompt to give the agent, and exit."
    ),
    session: str | None = typer.Option(
        None,
        "--session",
        help="The transcript of the session being compacted (cited in every entry).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Pre-compaction flush: `--prompt` prints what to ask the agent before history is
    dropped; without it, the agent's reply is read on stdin and its notes are appended
    to the journal, MEMORY.md and project context (never overwriting anything), and
    committed."""
    from autopoiesis.knowledge.flush import apply_flush, flush_prompt

    repo = get_repo(ctx)
    if prompt:
        typer.echo(flush_prompt(repo))
        return
    if session is not None:
        session = repo.rel(repo.resolve_inside(repo.typed(session), under="raw"))
        if not (repo.root / session).is_file():
            # every entry cites it: a transcript that is not there would be a forged citation
            raise fail(
                f"--session {session}: no such transcript in the memory; name one under "
                "raw/conversations/ (or leave --session out). Nothing was written.",
                2,
            )
    reply = stdin_text(
        "the agent's reply", otherwise="print what to ask it with `autopoiesis flush --prompt`"
    ).read()
    # committed here, under the lock it was written with: left for a later commit, its
    # notes were committed by the next extraction or maintenance under that one's message
    subject = "memory: pre-compaction flush" + (f" of {session}" if session else "")
    report = apply_flush(repo, reply, source=session, commit_as=subject)
    if as_json:
        echo_json(
            {
                "written": [{"path": p, "entries": n} for p, n in report.written],
                "nothing_to_do": report.nothing_to_do,
                "commit": report.commit,
            }
        )
        return
    if report.nothing_to_do:
        typer.echo("nothing to keep (FLUSH_OK or notes already present)")
    for path, n in report.written:
        typer.echo(f"appended {n} entr{'y' if n == 1 else 'ies'} to {path}")
    if report.commit:
        typer.echo(f"committed {report.commit[:12]}")


def _batch_message(line: str) -> str | None:
    """The message of a --batch line: a JSON string or {"message"|"text"|"content": ...}
    (so a message can hold line breaks), else the line as it is; None for an empty line."""
    import json

    if not line.strip():
        return None
    if line.lstrip().startswith(('"', "{")):
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            return line
        if isinstance(data, str):
            return data if data.strip() else None
        if isinstance(data, dict):
            text = data.get("message", data.get("text", data.get("content")))
            return text if isinstance(text, str) and text.strip() else None
    return line


def _short(label: str, width: int) -> str:
    """LABEL within WIDTH characters, its end kept (where a path's name and lines are)."""
    return (
        label
        if len(label) <= width
        else label[: width // 3] + "\u2026" + label[-(width - width // 3 - 1) :]
    )
