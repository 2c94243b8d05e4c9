"""Gemini CLI's session logs."""
