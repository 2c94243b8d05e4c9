"""Kimi Code (Moonshot's CLI): its session journals (importer)."""

# Where Kimi Code keeps its sessions: one wire.jsonl journal per agent (the main one and
# each subagent), beside the session's state.json.
SESSION_GLOBS = ("~/.kimi-code/sessions/*/*/agents/*/wire.jsonl",)
