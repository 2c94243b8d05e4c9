"""Aider's chat history (.aider.chat.history.md)."""
