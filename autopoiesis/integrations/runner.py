"""The hook process: read the harness's payload, answer it, log it, exit 0.

A hook must never get in the user's way: whatever goes wrong (a bad payload, a broken
config, a damaged index, a deadline passed), the process prints nothing, exits 0 (the
prompt goes on without memory) and writes the reason to the harness event log
(`.autopoiesis/logs/harness.jsonl`, one line per call, with its duration). Only when the
memory repo itself cannot be found is the reason printed on stderr instead, which Claude
Code shows in its verbose mode.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any, BinaryIO, TextIO, cast

from autopoiesis.core.config import NUMBERS, check_number
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.streams import stdin_or_none, to_stderr, write_out
from autopoiesis.core.text import utf8_safe_values
from autopoiesis.errors import AutopoiesisError, HookPayloadError
from autopoiesis.git.locate import locate_repo
from autopoiesis.integrations import DEADLINES, MAX_PAYLOAD_BYTES

# The calls answered with compiled context, which search the index: their `git status`
# starts before the compiler is imported (core.git.status_ahead).
CONTEXT_EVENTS = {
    (harness, event)
    for harness in ("claude-code", "codex")
    for event in ("SessionStart", "UserPromptSubmit")
}


class HookDeadline(Exception):
    """The hook ran past its deadline."""


# Whether a hook of this process ran past its deadline: a call it was waiting on (a model
# that trickles its answer, in a worker thread) may still run, and the process must not
# wait for it at its exit (autopoiesis/__main__.py)
expired = False


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise HookDeadline in this (main) thread after SECONDS; a no-op where there is no SIGALRM."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        global expired
        expired = True
        raise HookDeadline(f"gave up after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_payload(stdin: BinaryIO | None, argument: str | None = None) -> dict[str, Any]:
    """The hook's JSON object: ARGUMENT when the harness passes it as one (Codex), else
    stdin (None: the hook was started with its stdin closed)."""
    if argument is not None:
        raw = argument.encode("utf-8", "surrogateescape")
    elif stdin is None:
        raise HookPayloadError("stdin is closed: the harness gave the hook no payload")
    else:
        raw = stdin.read(MAX_PAYLOAD_BYTES + 1)
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise HookPayloadError(f"the payload is over {MAX_PAYLOAD_BYTES >> 20} MB")
    try:
        data = json.loads(raw.decode("utf-8", "replace"))
    except ValueError as exc:
        raise HookPayloadError(f"the payload is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise HookPayloadError(f"the payload is a JSON {type(data).__name__}, not an object")
    # a `cwd` or a prompt with half a surrogate pair escaped (`\ud800`) could be read but
    # not written: the session registry that keeps the `cwd` failed, and the context with it
    return cast("dict[str, Any]", utf8_safe_values(data))


def hook_budget(repo: MemoryRepo, budget: int | str | None) -> int:
    """The token budget of a context hook: --budget, else integrations.hook_token_budget."""
    rule = NUMBERS[("integrations", "hook_token_budget")]
    if budget is None:
        return repo.config.integrations.hook_token_budget
    if isinstance(budget, str):
        try:
            budget = int(budget)
        except ValueError:
            raise HookPayloadError(f"--budget {budget!r} is not {rule.describe()}") from None
    return int(check_number("--budget", budget, rule) or 0)


def run_hook(
    repo_dir: str | None,
    harness: str,
    event: str,
    *,
    budget: int | str | None = None,
    argument: str | None = None,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run one hook call of HARNESS for EVENT; always returns 0 (the exit status), also
    when its stdin or stdout is closed (the log says so)."""
    started = time.perf_counter()
    stdin = stdin if stdin is not None else stdin_or_none()
    try:
        repo = locate_repo(repo_dir)
    except AutopoiesisError as exc:
        to_stderr(f"autopoiesis hook {harness} {event}: {exc}")
        return 0
    ahead: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if (harness, event) in CONTEXT_EVENTS:
        from autopoiesis.git.runner import status_ahead

        ahead = status_ahead(repo.root)
    row: dict[str, Any] = {"harness": harness, "event": event}
    answer: str | None = None
    try:
        # stray prints from anything below must not corrupt the one JSON answer
        with ahead, deadline(DEADLINES.get(event, 10.0)), contextlib.redirect_stdout(sys.stderr):
            payload = read_payload(stdin, argument)
            if harness == "claude-code":
                from autopoiesis.integrations.claude_code import hooks as claude_code

                answer, info = claude_code.handle(
                    repo, event, payload, budget=hook_budget(repo, budget)
                )
            elif harness == "codex" and event == "notify":
                from autopoiesis.integrations.codex import hooks as codex

                info = codex.handle_notify(repo, payload)
            elif harness == "codex":
                from autopoiesis.integrations.codex import hooks as codex

                answer, info = codex.handle(repo, event, payload, budget=hook_budget(repo, budget))
            else:
                raise HookPayloadError(
                    f"no hook {harness} {event}; the hooks are: claude-code EVENT, codex EVENT"
                )
        row.update(info)
        row["ok"] = True
    except Exception as exc:  # a hook never fails the harness; the log says why (HookDeadline too)
        answer = None
        row["ok"] = False
        row["error"] = (
            str(exc)
            if isinstance(exc, AutopoiesisError | HookDeadline)
            else f"{type(exc).__name__}: {exc}"
        )
    row["ms"] = round((time.perf_counter() - started) * 1000, 1)
    if answer:  # before the log, which says when it could not be written
        unwritten = write_out(answer if answer.endswith("\n") else answer + "\n", stdout)
        if unwritten:
            row["ok"] = False
            row["error"] = unwritten
    try:
        from autopoiesis.integrations.sessions import harness_log

        harness_log(repo).append(row)
    except OSError:
        pass  # a read-only or full disk: the hook still answers
    return 0
