"""Factory's Droid: its session logs (importer)."""

# Where Droid keeps its sessions: one JSONL file per session in a folder named after the
# workspace, beside a `<id>.settings.json`.
SESSION_GLOBS = ("~/.factory/sessions/*/*.jsonl", "~/.factory/sessions/*.jsonl")
