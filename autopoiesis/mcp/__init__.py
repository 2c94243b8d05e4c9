"""The memory as an MCP server (`autopoiesis mcp`): an agent searches, reads, compiles
context, remembers and supersedes facts, and asks git when it learned something.

    tools    MemoryTools: each tool as a method, arguments checked, writes through the
             one knowledge writer (knowledge/ only), every refusal an AutopoiesisError
    schema   get_schema's answer, built from the layout, the writer and the topic format
    server   the MCPServer (official MCP Python SDK) over stdio

The top layer beside the CLI: it calls the Memory facade and the packages below it, and
nothing imports it but `autopoiesis.cli.mcp_cmd`.
"""
