"""Claude Code: its session logs (importer), the `{"loglines": [...]}` JSON of its web API
and of claude-code-transcripts (loglines), its hooks (hooks), their installation in
settings.json (install)."""
