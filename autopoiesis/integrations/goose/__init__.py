"""Goose (Block's agent): its sessions (importer)."""

# Where Goose keeps its sessions: one SQLite database since 1.20, one JSONL file per
# session before (the oldest under ~/.config/goose/sessions).
SESSION_GLOBS = (
    "~/.local/share/goose/sessions/sessions.db",
    "~/.local/share/goose/sessions/*.jsonl",
    "~/.config/goose/sessions/*.jsonl",
)
