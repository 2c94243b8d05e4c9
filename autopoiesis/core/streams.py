"""The process's standard streams, which may be closed: a shell's `<&-` or `>&-`, a
harness or a service manager that starts a command without them. Python then has None
for the stream (sys.stdin, sys.stdout), and a command that reads or writes it would die
with a traceback. Every reader of stdin and every hook's writer of stdout goes through
here: a command that needs stdin says it is closed and what to pipe in; a hook, which
must always exit 0, logs that it had no payload or nowhere to answer.

Standard library only (and autopoiesis.errors): the light entry (autopoiesis/__main__.py)
uses it before it knows where a call goes.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import IO, Any, BinaryIO, TextIO

from autopoiesis.errors import AutopoiesisError


class StdinClosedError(AutopoiesisError):
    """A command that reads standard input was started with it closed."""

    def __init__(self, what: str, *, otherwise: str = "", exit_code: int = 1) -> None:
        super().__init__(
            f"stdin is closed; pipe {what} into it" + (f", or {otherwise}." if otherwise else ".")
        )
        self.exit_code = exit_code


def stdin_text(what: str, *, otherwise: str = "", exit_code: int = 1) -> TextIO:
    """Standard input as text; StdinClosedError when it is closed, naming WHAT to pipe in
    (and OTHERWISE, what else the user may do)."""
    if sys.stdin is None:
        raise StdinClosedError(what, otherwise=otherwise, exit_code=exit_code)
    if what and sys.stderr is not None and _is_terminal(sys.stdin):
        # run by hand with nothing piped in, the command waits on the terminal: say so,
        # or it looks hung
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"reading {what} from the terminal; end with Ctrl-D\n")
            sys.stderr.flush()
    return sys.stdin


def _is_terminal(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False


def stdin_bytes(what: str, *, otherwise: str = "", exit_code: int = 1) -> BinaryIO:
    """Standard input as bytes, else as stdin_text. A stdin of text only (already
    decoded: a program that embeds the CLI) gives its text's bytes."""
    stream = stdin_text(what, otherwise=otherwise, exit_code=exit_code)
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        return buffer
    return io.BytesIO(stream.read().encode("utf-8", "surrogateescape"))


def stdin_or_none() -> BinaryIO | None:
    """Standard input as bytes, or None when it is closed (a hook logs that, and exits 0)."""
    try:
        return stdin_bytes("")
    except StdinClosedError:
        return None


def write_out(text: str, stream: TextIO | None = None) -> str | None:
    """Write TEXT on STREAM (default: standard output) and flush it. None when it was
    written, else why not (closed, its reader gone away): a hook logs that and exits 0."""
    out = stream if stream is not None else sys.stdout
    if out is None:
        return "stdout is closed: the answer had nowhere to go"
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        # what is still buffered would fail again at the exit, with Python's own message
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        return "stdout's reader went away before the answer was written"
    except (OSError, ValueError) as exc:
        return f"the answer could not be written on stdout ({exc})"
    return None


def is_terminal(stream: IO[Any] | None) -> bool:
    """Whether STREAM (sys.stdin, sys.stderr, ...) is a terminal: never a closed one."""
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def to_stderr(text: str) -> None:
    """Write TEXT (and a newline) on standard error when there is one; never on stdout in
    its stead (print's file=None would), where a harness reads a hook's answer."""
    if sys.stderr is not None:
        try:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # a reader gone away: the message has nowhere to go


__all__ = [
    "StdinClosedError",
    "is_terminal",
    "stdin_bytes",
    "stdin_or_none",
    "stdin_text",
    "to_stderr",
    "write_out",
]
