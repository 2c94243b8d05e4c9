"""OpenCode's database and storage folder."""

# Where OpenCode keeps its sessions: the database since 1.2, a session file of the JSON
# storage before (each imports its whole session).
SESSION_GLOBS = (
    "~/.local/share/opencode/opencode.db",
    "~/.local/share/opencode/storage/session/*/*.json",
)
