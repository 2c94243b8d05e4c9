"""Cursor's agent logs and Markdown exports."""
