"""Qwen Code: its chat recordings (importer)."""

# Where Qwen Code keeps its chats (one JSONL file per session).
SESSION_GLOBS = ("~/.qwen/projects/*/chats/*.jsonl",)
