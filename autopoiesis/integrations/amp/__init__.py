"""Amp (Sourcegraph's agent): its thread files (importer)."""

# Where the Amp CLI keeps the threads it has synced (one JSON file each).
SESSION_GLOBS = ("~/.local/share/amp/threads/*.json",)
