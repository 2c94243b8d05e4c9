"""pi (badlogic/pi-mono's coding agent): its session logs (importer)."""

# Where pi keeps its sessions: `<timestamp>_<id>.jsonl` in a folder named after the
# working folder.
SESSION_GLOBS = ("~/.pi/agent/sessions/*/*.jsonl",)
