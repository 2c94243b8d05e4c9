"""GitHub Copilot CLI and chat logs."""
