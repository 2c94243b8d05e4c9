"""Run a CLI call forwarded to the daemon (core/warm.py) as the client's own process would:
the same code (`autopoiesis.cli.main`, or the hook runner for a harness hook, exactly as
autopoiesis/__main__.py dispatches), in the client's folder, environment, umask and time
zone, its stdin given, its stdout and stderr captured (terminal or not, as the client's
are). Whatever happens, the daemon's own folder, environment and streams come back.

`autopoiesis daemon run` hands ForwardedCalls, with the CLI's `main`, to the daemon (neither
the daemon nor this package imports the CLI).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

# Read once, at import, by the CLI framework (typer's rich output): a client that asks
# for another value gets its call run by itself.
IMPORT_TIME_ENV = {"TYPER_USE_RICH": "0"}  # name -> the value the CLI sets when it is not set


class _Captured(io.TextIOWrapper):
    """A stdout or stderr that keeps what is written, and says it is a terminal when the
    client's is (click strips colours from what is not)."""

    def __init__(self, tty: bool, errors: str):
        super().__init__(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty

    def value(self) -> bytes:
        with contextlib.suppress(ValueError):
            self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue()

    def reset(self) -> None:
        """Empty, for the next call."""
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        raw.seek(0)
        raw.truncate()


class ForwardedCalls:
    """The daemon's ServeHandler (fastpath/server.py) for the CLI: CLI_MAIN runs an
    ordinary call, the hook runner a harness hook."""

    def __init__(self, cli_main: Callable[[list[str]], Any]):
        self.cli_main = cli_main
        # the output streams, one pair per kind of client output, reused call after call:
        # the CLI framework caches a wrapper per stream it writes to, keyed by the stream
        # and never let go (a weak key its own value holds), so a fresh stream per call
        # kept every call's output alive: the daemon grew by each warm compile's prompt
        self._streams: dict[tuple[str, bool, str], _Captured] = {}

    def _stream(self, which: str, tty: bool, errors: str) -> _Captured:
        stream = self._streams.get((which, tty, errors))
        if stream is None:
            stream = self._streams[(which, tty, errors)] = _Captured(tty, errors)
        stream.reset()
        return stream

    def refusal(self, request: dict[str, Any]) -> str | None:
        from autopoiesis.fastpath.rules import warm_call

        if not warm_call(request["argv"]):
            return "not a call the daemon answers (search, compile, a harness hook)"
        return client_refusal(request)

    def __call__(self, request: dict[str, Any]) -> tuple[int, bytes, bytes]:
        out = self._stream("out", bool(request["tty"][0]), request["errors"][0])
        err = self._stream("err", bool(request["tty"][1]), request["errors"][1])
        stdin = request["stdin"]
        data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else b""
        with _as_client(request, io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"), out, err):
            code = run_argv(list(request["argv"]), self.cli_main)
        return code, out.value(), err.value()


def client_refusal(request: dict[str, Any]) -> str | None:
    """Why this process cannot run REQUEST (wire.refusal passed) as the client's own
    process would, or None: another version of autopoiesis, another import-time setting,
    a working folder that is gone, an unusual error handler on its output."""
    from autopoiesis import __version__

    if request["version"] != __version__:
        return f"the client is autopoiesis {request['version']}, the daemon {__version__}"
    env = request["env"]
    for name, default in IMPORT_TIME_ENV.items():
        theirs, ours = env.get(name, default), os.environ.get(name, default)
        if theirs != ours:
            return f"{name} is {theirs!r} for the client and {ours!r} for the daemon"
    if not os.path.isdir(request["cwd"]):
        return "the client's working folder is gone"
    if any(
        e not in ("strict", "surrogateescape", "replace", "backslashreplace")
        for e in request["errors"]
    ):
        return "an unusual error handler on the client's output"
    return None


def run_argv(argv: list[str], cli_main: Callable[[list[str]], Any]) -> int:
    """ARGV as `python -m autopoiesis` runs it; the exit status Python would give."""
    try:
        from autopoiesis.fastpath.rules import parse_hook_argv

        call = parse_hook_argv(argv)
        if call is not None:
            from autopoiesis.integrations.runner import run_hook

            return run_hook(**call)
        cli_main(argv)
        return 0
    except SystemExit as exc:
        return _exit_status(exc.code)
    except Exception:  # what the interpreter would print before exiting 1
        traceback.print_exc(file=sys.stderr)
        return 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # sys.exit("message"): printed, status 1
    return 1


@contextlib.contextmanager
def _as_client(
    request: dict[str, Any], stdin: io.TextIOWrapper, stdout: _Captured, stderr: _Captured
) -> Iterator[None]:
    """This process as the client's for the call: its folder, environment (with the CLI's
    import-time settings as they are here), umask, time zone and streams."""
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_umask = os.umask(request["umask"] & 0o777)
    env = client_environ(request)
    tz_changed = env.get("TZ") != saved_env.get("TZ")
    try:
        os.chdir(request["cwd"])
        replace_environ(env)
        if tz_changed:
            time.tzset()
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        with warnings.catch_warnings():  # a warning shows again in each call, as in a fresh process
            yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        replace_environ(saved_env)
        if tz_changed:
            time.tzset()
        os.umask(saved_umask)
        os.chdir(saved_cwd)


def client_environ(request: dict[str, Any]) -> dict[str, str]:
    """The client's environment, with the settings read once at import as they are here
    (client_refusal saw that they agree, or that the client left them unset)."""
    env = dict(request["env"])
    env.update({name: os.environ.get(name, default) for name, default in IMPORT_TIME_ENV.items()})
    return env


def adopt_client(request: dict[str, Any]) -> None:
    """Make this process the client's for good (a process forked for one client: the MCP
    host's session): its folder, environment, umask and time zone."""
    env = client_environ(request)
    tz_changed = env.get("TZ") != os.environ.get("TZ")
    os.chdir(request["cwd"])
    replace_environ(env)
    os.umask(request["umask"] & 0o777)
    if tz_changed:
        time.tzset()


def replace_environ(env: dict[str, str]) -> None:
    for name in [n for n in os.environ if n not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
