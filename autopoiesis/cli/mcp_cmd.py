"""`autopoiesis mcp`: the memory as an MCP server over stdio (autopoiesis.mcp)."""

from __future__ import annotations

import typer

from autopoiesis.cli._common import get_memory


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp(ctx: typer.Context) -> None:
    """Serve the memory repo to an agent over MCP (stdio): search, read, compile_context,
    remember, supersede, recall, history, topics, get_schema. For Claude Code:
    `claude mcp add autopoiesis -- autopoiesis -C ~/memory mcp`."""
    from autopoiesis.mcp.server import serve

    serve(get_memory(ctx))
