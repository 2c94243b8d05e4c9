"""Gemini CLI's session logs."""

# Where Gemini CLI keeps its chats (JSON, and JSONL since 0.40).
SESSION_GLOBS = ("~/.gemini/tmp/*/chats/*.json", "~/.gemini/tmp/*/chats/*.jsonl")
