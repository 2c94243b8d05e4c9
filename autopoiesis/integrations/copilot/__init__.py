"""GitHub Copilot CLI and chat logs."""

# Where Copilot CLI keeps its sessions: a folder with events.jsonl each, or (older) one
# JSONL file each.
SESSION_GLOBS = ("~/.copilot/session-state/*/events.jsonl", "~/.copilot/session-state/*.jsonl")
