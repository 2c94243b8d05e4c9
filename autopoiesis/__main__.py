"""`python -m autopoiesis` and the `autopoiesis` command ([project.scripts] points here): the
light entry, standard library only until it knows where a call goes.

* While the memory repo's daemon runs, `[-C DIR] search ...`, `[-C DIR] compile ...` and
  the harness hook calls are answered by it, warm (core/warm.py): this process starts
  Python, sends the call over a socket and prints the answer. When no daemon answers, the
  call runs here as before. AUTOPOIESIS_NO_DAEMON=1 always runs it here.
* `[-C DIR] mcp` is served by the daemon's MCP host while the daemon runs
  (fastpath/relay.py): a session forked there, where the MCP SDK is already loaded, takes
  this process's stdin, stdout and stderr, and answers `initialize` at once instead of
  after ~1.5 s of imports. With no daemon, or one that declines, it is served here.
* A harness hook (`[-C DIR] hook claude-code EVENT [--budget N]`, `... hook codex notify
  JSON`) runs on every prompt, so here it skips the CLI framework (Typer and the
  registration of every command, ~65 ms) and goes straight to the hook runner.
* Anything else (help, `--batch`, every other command) takes the ordinary CLI path.

A call the daemon may answer runs once and ends, so it runs without the cyclic garbage
collector: while it imports the CLI, the index and the compiler (a few hundred thousand
objects, hardly any of them garbage) the collector would run some sixty times for
nothing, 2 % of a cold `compile`'s instructions. Reference counting still frees all but
cycles, which go with the process (a `search` that first indexes 2,000 changed files
peaks at 96 MB against 90).

A call is run here after all when the daemon dies in the middle of it (its answer never
completes), so the calls forwarded must be safe to run twice. `search` only reads.
`compile` and the context hooks may log a gate decision and count an inclusion twice;
steering hints the dead call had taken are gone, as they would be had this process been
killed at that moment. The other hook events record the session (the same record twice),
start the import (one worker at a time; an imported session is skipped), or apply a
pre-compaction flush at most once (the pending mark is cleared before the notes are
written).
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import time
from typing import Any, NoReturn

from autopoiesis import __version__
from autopoiesis.fastpath.rules import mcp_call, parse_hook_argv, split_repo_dir, warm_call
from autopoiesis.integrations import DEADLINES, MAX_PAYLOAD_BYTES


def main() -> None:
    argv = sys.argv[1:]
    one_shot = warm_call(argv)
    if one_shot:
        gc.disable()
        # and at exit: the interpreter's teardown runs the collector over every object
        # whatever gc.disable says (3 full passes, ~4 % of a cold compile's instructions);
        # frozen, the objects are left to the process's end, as the cycles already are
        atexit.register(gc.freeze)
    call = parse_hook_argv(argv)
    if call is not None:
        code = _hook(argv, call)
        from autopoiesis.integrations import runner

        if runner.expired:
            # past its deadline the hook has answered (nothing, and the log says why); a
            # worker thread still waiting on a model would keep the process, and the
            # harness waiting on it, until the model's own deadline: leave without it
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        sys.exit(code)
    if one_shot:
        from autopoiesis.fastpath import wire as warm

        try:
            reply = warm.forward(split_repo_dir(argv)[0], argv, __version__)
        except KeyboardInterrupt:  # Ctrl-C while the daemon runs it: as the CLI says it
            sys.stderr.write("interrupted\n")
            sys.exit(130)
        if reply is not None:
            _print(reply)
    elif mcp_call(argv):
        from autopoiesis.fastpath.relay import relay

        relayed = relay(split_repo_dir(argv)[0], argv, __version__)
        if relayed is not None:
            sys.exit(relayed)
    from autopoiesis.cli import main as cli_main

    cli_main()


def _hook(argv: list[str], call: dict[str, Any]) -> int:
    from autopoiesis.fastpath import wire as warm

    stdin: bytes | None = None
    timed_out = False
    if not warm.disabled():
        if call["argument"] is None:  # the payload comes on stdin: read here, handed on
            stdin, timed_out = _read_payload(call["event"])
        if not timed_out and (stdin is not None or call["argument"] is not None):
            reply = warm.forward(call["repo_dir"], argv, __version__, stdin=stdin)
            if reply is not None:
                _print(reply)
    import io

    from autopoiesis.integrations.runner import HookDeadline, run_hook

    if timed_out:

        class _Expired(io.BytesIO):  # what the runner's own wait for this payload would have met
            def read(self, size: int | None = -1) -> bytes:
                raise HookDeadline(f"gave up after {DEADLINES.get(call['event'], 10.0):g} s")

        return run_hook(**call, stdin=_Expired())
    return run_hook(**call, stdin=io.BytesIO(stdin) if stdin is not None else None)


def _read_payload(event: str) -> tuple[bytes | None, bool]:
    """(the hook's payload from stdin, whether its deadline passed first) as the runner
    reads it: up to one byte over the limit, under the event's deadline. None when stdin
    is a terminal or closed: then the runner reads it itself."""
    import select

    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd):
            return None, False
    except (AttributeError, ValueError, OSError):
        return None, False
    deadline = time.monotonic() + DEADLINES.get(event, 10.0)
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_PAYLOAD_BYTES:
        left = deadline - time.monotonic()
        try:
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None, True
            chunk = os.read(fd, min(1 << 16, MAX_PAYLOAD_BYTES + 1 - size))
        except InterruptedError:
            continue
        except OSError:  # as the runner's read would fail: it reads on from here
            return (b"".join(chunks) if chunks else None), False
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _print(reply: Any) -> NoReturn:
    """Write what the daemon's run printed, and exit with its status."""
    try:
        for stream, data in ((sys.stderr, reply.stderr), (sys.stdout, reply.stdout)):
            if stream is not None:  # a stream this process was started without: dropped
                stream.flush()
                stream.buffer.write(data)
                stream.flush()
    except BrokenPipeError:  # a reader that went away (`| head`): as the CLI, no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(reply.code)


if __name__ == "__main__":
    main()
