"""`autopoiesis mcp`: the memory repo as an MCP server over stdio, on the official MCP
Python SDK (`mcp`, its MCPServer).

Each tool is a method of `MemoryTools`; here they get their names, descriptions and
argument schemas. The SDK validates arguments against the schema (a wrong type or a
missing argument is an error result, never a call); an AutopoiesisError becomes a
ToolError, which the client receives as an `isError` result carrying the message; any
other exception is answered as a generic error result by the SDK, and the server goes on.
Only the MCP protocol is written on stdout.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any, TypeVar, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from autopoiesis import __version__
from autopoiesis.core.text import utf8_safe_values
from autopoiesis.errors import AutopoiesisError
from autopoiesis.mcp.tools import MemoryTools
from autopoiesis.memory import Memory

INSTRUCTIONS = """The long-term memory of this agent, kept as Markdown files in a git repository.
Look things up with `search` (then `read` the file) before asking the user what the memory may
hold; `compile_context` gives the context the memory would add for a message. Write a durable fact,
decision or lesson with `remember` (one fact an entry, in the file `get_schema` says it belongs
in), and replace an outdated entry with `supersede`. `recall` and `history` answer when something
was learned, and from where."""

F = TypeVar("F", bound=Callable[..., Any])


def _tool_errors(fn: F) -> F:
    """AutopoiesisError (a refusal that says what to do) -> ToolError (an MCP error result)."""

    @wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AutopoiesisError as exc:
            raise ToolError(str(exc)) from None

    return call  # type: ignore[return-value]


class _Server(MCPServer):
    """The SDK's server, with arguments that fail the tools' schema told in one line a
    field ("limit: should be greater than or equal to 1, not 0"), not pydantic's report
    with its links."""

    async def run_stdio_async(self) -> None:
        """The SDK's stdio loop, reading lines through `_RepairedLines`; SIGTERM or SIGHUP
        ends the requests as the client's closing them would: a call in progress finishes
        (a `remember` is committed whole) before the server exits."""
        import io
        import threading

        import anyio
        from mcp.server.stdio import stdio_server

        from autopoiesis.core.streams import stdin_bytes

        requests = stdin_bytes(
            "an MCP client's requests", otherwise="let the client start `autopoiesis mcp`"
        )
        text = io.TextIOWrapper(_own_copy(requests), encoding="utf-8", errors="replace")
        lines = _RepairedLines(text)
        async with anyio.create_task_group() as watching:
            if threading.current_thread() is threading.main_thread():
                watching.start_soon(lines.end_on_signal)
            async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
                lines.answer = write_stream  # before the first line is read (no await)
                await self._lowlevel_server.run(
                    read_stream,
                    cast(Any, _AnswersSeen(write_stream, lines.answered)),
                    self._lowlevel_server.create_initialization_options(),
                )
            watching.cancel_scope.cancel()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, utf8_safe_values(arguments), context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(_arguments_error(name, cause)) from None
            raise


# A JSON string escape of half a surrogate pair: a high one not followed by its low one,
# or a low one alone. JSON allows them; the SDK's parser refuses the line, and the request
# it held was never answered (the client waited for ever).
_LONE_SURROGATE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


class _RepairedLines:
    """The lines of the client's stream, each lone surrogate escape made U+FFFD's, as
    `capture` reads one; they end at the stream's end or at SIGTERM or SIGHUP (a harness
    that stops the server). The stream is read by a daemon thread of its own: a stop must
    not wait for the client's next line, and a read left blocked must not hold the
    process's exit. A request the SDK's parser refuses (JSON nested some 200 levels deep
    passes its recursion limit; a request without `jsonrpc`) is answered here with a
    JSON-RPC error on ANSWER (the server's write stream): the SDK drops such a line
    unanswered, and its client waited for ever."""

    def __init__(self, source: Any) -> None:
        import math

        import anyio

        self.source = source
        self.answer: Any = None
        self._send, self._receive = anyio.create_memory_object_stream[str | None](math.inf)
        # the ids of the requests handed to the server and not yet answered: the stream's
        # end waits for them (the SDK ends its loop at the end of the lines, cancelling
        # every call still running: a `remember` sent just before the client closed its
        # end was answered "Connection closed" and never written)
        self._unanswered: set[str] = set()
        self._all_answered: Any = None

    def __aiter__(self) -> Any:
        return self._lines()

    async def _lines(self) -> Any:
        import contextlib
        import threading

        import anyio.lowlevel

        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._read, args=(token,), daemon=True).start()
        async for line in self._receive:
            if line is None:
                await self._answers_awaited()
                return
            line = _LONE_SURROGATE.sub(r"\\ufffd", line) if "\\u" in line else line
            refusal = _refusal(line) if self.answer is not None else None
            if refusal is None:
                request = _request_id(line)
                if request is not None and request[1]:
                    self._unanswered.add(request[0])
                elif request is not None:  # cancelled: never answered
                    self._unanswered.discard(request[0])
                yield line
                continue
            from mcp.shared.message import SessionMessage

            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.answer.send(SessionMessage(refusal))

    def answered(self, message: Any) -> None:
        """MESSAGE, one the server wrote, answers a request: it is no longer awaited."""
        request = getattr(message, "id", None)
        if request is None or not hasattr(message, "result") and not hasattr(message, "error"):
            return
        self._unanswered.discard(str(request))
        if not self._unanswered and self._all_answered is not None:
            self._all_answered.set()

    async def _answers_awaited(self) -> None:
        """At the stream's end, wait until every request handed on is answered (at most
        ANSWER_WAIT seconds: a call the client cancelled is never answered)."""
        import anyio

        if not self._unanswered:
            return
        self._all_answered = anyio.Event()
        with anyio.move_on_after(ANSWER_WAIT):
            await self._all_answered.wait()

    def _read(self, token: Any) -> None:
        """Hand each line of the stream to the server's loop, then the end (None)."""
        import anyio.from_thread

        try:
            for line in self.source:
                anyio.from_thread.run_sync(self._send.send_nowait, line, token=token)
            anyio.from_thread.run_sync(self._send.send_nowait, None, token=token)
        except Exception:  # the loop ended first (the server stopped): nobody reads on
            return

    async def end_on_signal(self) -> None:
        """At SIGTERM or SIGHUP, end the lines: the server then finishes what it is doing
        and exits, as when the client closes the stream."""
        import signal

        import anyio

        wanted = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
        try:
            with anyio.open_signal_receiver(*wanted) as signals:
                async for _ in signals:
                    self._send.send_nowait(None)
        except NotImplementedError:  # no signal handling on this platform's loop
            return


ANSWER_WAIT = 60.0  # seconds the end of the stream waits for the calls in progress


def _request_id(line: str) -> tuple[str, bool] | None:
    """(the id, True) of the request LINE holds, as `answered` compares it; (the id,
    False) of the request a cancellation names (the server answers none); else None."""
    import json

    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    if message.get("id") is not None:
        return str(message["id"]), True
    params = message.get("params")
    if message["method"] == "notifications/cancelled" and isinstance(params, dict):
        return str(params.get("requestId")), False
    return None


class _AnswersSeen:
    """The server's write stream, telling ON_ANSWER each message written (the answers the
    end of the client's stream waits for); the rest as the stream itself."""

    def __init__(self, stream: Any, on_answer: Callable[[Any], None]) -> None:
        self._stream, self._on_answer = stream, on_answer

    async def send(self, item: Any) -> None:
        await self._stream.send(item)
        self._on_answer(getattr(item, "message", item))

    async def __aenter__(self) -> _AnswersSeen:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


# A JSON token: a string, a structural character, or a scalar (a number, true, null)
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _refusal(line: str) -> Any:
    """The JSON-RPC error that answers LINE when the SDK's parser refuses it and it is a
    request (its top-level object names a method and an id), else None (a valid message,
    a blank line, or one without an id to answer: the SDK handles those)."""
    import json

    from mcp_types import (
        INVALID_REQUEST,
        PARSE_ERROR,
        ErrorData,
        JSONRPCError,
        jsonrpc_message_adapter,
    )

    if not line.strip():
        return None
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
    fields = _top_level_scalars(line)
    if '"method"' not in fields or not fields.get('"id"'):
        return None
    try:
        request_id = json.loads(fields['"id"'])
    except ValueError:
        return None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    unreadable = problem.get("type") == "json_invalid"
    why = str(problem.get("msg", "not a JSON-RPC request"))
    where = problem.get("loc", ())
    if not unreadable and len(where) > 1:  # (the union's member, the field, ...)
        why = f"{'.'.join(str(x) for x in where[1:])}: {why}"
    if "recursion limit" in why:
        why += " (the request nests too deeply: send flatter arguments)"
    return JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=ErrorData(
            code=PARSE_ERROR if unreadable else INVALID_REQUEST,
            message=f"The request could not be read, so nothing was done: {why}.",
        ),
    )


def _top_level_scalars(line: str) -> dict[str, str]:
    """The keys of LINE's top-level JSON object (as their JSON text, quotes included),
    each with its value's JSON text when it is a scalar ("" when it nests), read token by
    token: LINE is one the parser refused, such as one nested past its limit."""
    found: dict[str, str] = {}
    depth, key, previous = 0, "", ""
    for match in _JSON_TOKEN.finditer(line):
        token = match.group()
        if token in ("{", "["):
            if depth == 1 and key and previous == ":":
                found[key], key = "", ""
            if depth == 0 and token != "{":
                return {}
            depth += 1
        elif token in ("}", "]"):
            depth -= 1
        elif depth == 1:
            if token == ",":
                key = ""
            elif previous == ":" and key:
                found[key], key = token, ""
            elif previous in ("{", ","):
                key = token
        previous = token
    return found


def _own_copy(stream: Any) -> Any:
    """STREAM (standard input's bytes) read through a descriptor of its own: the thread
    that reads it may still wait for a line when the process exits, and Python's own
    `sys.stdin`, which it flushes at the exit, must not be the one it holds ("could not
    acquire lock for <stdin> at interpreter shutdown", a crash). A stream without a
    descriptor (a program that embeds the CLI) is read as it is."""
    import os

    try:
        return os.fdopen(os.dup(stream.fileno()), "rb")
    except (AttributeError, OSError, ValueError):
        return stream


def _arguments_error(tool: str, error: ValidationError) -> str:
    """A pydantic ValidationError of TOOL's arguments as one readable line."""
    parts = []
    for e in error.errors(include_url=False):
        field = ".".join(str(x) for x in e.get("loc", ())) or "arguments"
        message = str(e.get("msg", "is not valid"))
        message = message.replace("Input should be", "should be").replace("Field required", "")
        if e.get("type") == "missing":
            parts.append(f"{field} is required")
        elif "input" in e and not isinstance(e["input"], (dict, list)):
            shown = repr(e["input"])
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            parts.append(f"{field} {message}, not {shown}")
        else:
            parts.append(f"{field} {message}")
    return f"{tool}: " + "; ".join(parts) + "."


def build_server(memory: Memory, tools: MemoryTools | None = None) -> MCPServer:
    """An MCPServer with the tools of MEMORY."""
    t = tools or MemoryTools(memory)
    server = _Server(
        "autopoiesis", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )

    _add_reading_tools(server, t)
    _add_writing_tools(server, t)
    _add_history_tools(server, t)
    _add_describing_tools(server, t)
    return server


def _add_reading_tools(server: MCPServer, t: MemoryTools) -> None:
    """The tools that read: search, read a file, the compiled context."""

    @server.tool(
        description="Hybrid (BM25 + vector) search over knowledge, topics, transcripts and "
        "archive. A transcript hit's start_line..end_line hold its turn with the turns around "
        "it; own_start..own_end are the turn itself."
    )
    @_tool_errors
    def search(
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        limit: Annotated[int, Field(ge=1, le=100, description="Most results.")] = 10,
        category: Annotated[
            str | None,
            Field(
                description="Only this category: identity, memory, journal, project, "
                "person, procedure, reference, conversation, topic, archive."
            ),
        ] = None,
        project: Annotated[
            str | None,
            Field(
                description="Prefer this project's items (`autopoiesis projects`); default the "
                "project of the folder the server runs in, '' for none."
            ),
        ] = None,
    ) -> dict[str, Any]:
        return t.search(query, limit, category, project)

    @server.tool(
        description="Read a file of the memory repo (raw/, knowledge/, topics/, archive/ or "
        "memory-config.yaml), "
        "by line range; at most 2000 lines a call."
    )
    @_tool_errors
    def read(
        path: Annotated[
            str, Field(description="Repo-relative path, e.g. knowledge/memory/MEMORY.md.")
        ],
        start_line: Annotated[int, Field(ge=1, description="First line (from 1).")] = 1,
        end_line: Annotated[
            int | None, Field(ge=1, description="Last line (default: the end).")
        ] = None,
    ) -> str:
        return t.read(path, start_line, end_line)

    @server.tool(
        description="The context the memory gives for a message: identity, core memory, journal, "
        "active "
        "topics and the most relevant knowledge, within a token budget."
    )
    @_tool_errors
    def compile_context(
        message: Annotated[str, Field(description="The message to compile context for.")],
        budget: Annotated[
            int | None, Field(description="Token budget (default context_compiler.token_budget).")
        ] = None,
        shared: Annotated[
            bool, Field(description="A shared or group context: leaves MEMORY.md out.")
        ] = False,
        project: Annotated[
            str | None,
            Field(
                description="Prefer this project's items (`autopoiesis projects`); default the "
                "project of the folder the server runs in, '' for none."
            ),
        ] = None,
    ) -> str:
        return t.compile_context(message, budget, shared, project)


def _add_writing_tools(server: MCPServer, t: MemoryTools) -> None:
    """The tools that write knowledge: remember a fact, supersede an entry."""

    @server.tool(
        description="Write one durable fact into a knowledge file (under knowledge/, never "
        "identity/), "
        "cited, skipped when already there, secrets redacted; committed to git."
    )
    @_tool_errors
    def remember(
        path: Annotated[
            str,
            Field(
                description="The knowledge file, e.g. knowledge/projects/SLUG/context.md "
                "(get_schema lists where things go)."
            ),
        ],
        content: Annotated[str, Field(description="The fact, one line.")],
        section: Annotated[
            str | None, Field(description="The section (default: the file's first).")
        ] = None,
        source: Annotated[
            str | None,
            Field(
                description="Where it comes from: a transcript path under raw/ or a "
                "session id (one word); the entry cites it as `mcp:SESSION`."
            ),
        ] = None,
        tags: Annotated[
            list[str] | None, Field(description="Tags, one word each; at most 10.")
        ] = None,
    ) -> dict[str, Any]:
        return t.remember(path, content, section, source, tags)

    @server.tool(
        description="Replace an entry of a knowledge file: the old one is struck through and "
        "points at the "
        "new one (nothing is deleted); committed to git."
    )
    @_tool_errors
    def supersede(
        path: Annotated[str, Field(description="The knowledge file holding the entry.")],
        target: Annotated[
            str,
            Field(
                description="The entry's id (YYYYMMDD-HHMM-xxxxxx) or a phrase only it contains."
            ),
        ],
        content: Annotated[str, Field(description="The fact that replaces it.")],
        section: Annotated[
            str | None, Field(description="The section of the new entry (default: the old one's).")
        ] = None,
        source: Annotated[
            str | None,
            Field(description="Where the new fact comes from (one word); cited as `mcp:SESSION`."),
        ] = None,
    ) -> dict[str, Any]:
        return t.supersede(path, target, content, section, source)


def _add_history_tools(server: MCPServer, t: MemoryTools) -> None:
    """The tools that ask git: when a text came or went, the history of a file."""

    @server.tool(
        description="The [[wikilinks]] a note makes (each with the note it finds, or none: "
        "broken) and the notes that link to it (backlinks)."
    )
    @_tool_errors
    def links(
        path: Annotated[str, Field(description="Repo-relative path of the note.")],
    ) -> dict[str, Any]:
        return t.links(path)

    @server.tool(
        description="The commits that added or removed a text (git log -S), newest first, with "
        "their files."
    )
    @_tool_errors
    def recall(
        text: Annotated[str, Field(description="The exact text (case-insensitive).")],
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
    ) -> dict[str, Any]:
        return t.recall(text, limit)

    @server.tool(
        description="The history of a file: its commits (git log, across renames) and, with "
        "blame, who "
        "wrote each line when (git blame)."
    )
    @_tool_errors
    def history(
        path: Annotated[str, Field(description="Repo-relative path.")],
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        blame: Annotated[bool, Field(description="Add git blame of the file.")] = False,
    ) -> dict[str, Any]:
        return t.history(path, limit, blame)


def _add_describing_tools(server: MCPServer, t: MemoryTools) -> None:
    """The tools that describe the memory: its topics, its layout and formats."""

    @server.tool(
        description="The topics (reactive playbooks); with a message, which of them it would "
        "activate and why "
        "(a dry run: nothing logged or queued)."
    )
    @_tool_errors
    def topics(
        message: Annotated[
            str | None, Field(description="A message to test against every topic.")
        ] = None,
        output: Annotated[
            bool, Field(description="Test it as the agent's own output, not the user's input.")
        ] = False,
    ) -> dict[str, Any]:
        return t.topics(message, output)

    @server.tool(
        description="The memory repo's layout and file formats: where each kind of knowledge "
        "goes, the "
        "sections of each file, the entry, transcript and topic formats."
    )
    @_tool_errors
    def get_schema() -> dict[str, Any]:
        return t.schema()


def serve(memory: Memory) -> None:
    """Serve MEMORY over stdio until the client closes the connection, or stops reading
    the answers (its end of the pipe closed while it still writes): the SDK's writer then
    failed with BrokenPipeError, and the server ended in a traceback of some 90 lines.
    The call whose answer could not be sent had finished (a `remember` committed)."""
    tools = MemoryTools(memory)
    try:
        build_server(memory, tools).run("stdio")
    except* BrokenPipeError:
        _client_stopped_reading()
    finally:
        tools.close()


def _client_stopped_reading() -> None:
    """Say on stderr that the client stopped reading, and point stdout at nothing: what
    is still buffered for it would fail again when the interpreter flushes it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # no stdout of a file descriptor (an embedding host): nothing to flush there
    print(
        "autopoiesis mcp: the client stopped reading the answers (its end of the pipe is "
        "closed); the server ends. What it was asked to do before is done.",
        file=sys.stderr,
    )
