"""Gemini CLI's session logs."""

# Where Gemini CLI keeps its chats.
SESSION_GLOBS = ("~/.gemini/tmp/*/chats/*.json",)
