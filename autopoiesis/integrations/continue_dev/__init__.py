"""Continue's session files."""

# Where Continue keeps its sessions (one JSON file each, named by a UUID, beside the
# sessions.json list of them).
SESSION_GLOBS = ("~/.continue/sessions/*-*.json",)
