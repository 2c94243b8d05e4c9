"""Cursor's agent logs and Markdown exports."""

# Where Cursor keeps its agents' transcripts (subagents' in folders below them).
SESSION_GLOBS = ("~/.cursor/projects/*/agent-transcripts/**/*.jsonl",)
