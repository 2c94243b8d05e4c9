"""OpenCode's storage folder."""
