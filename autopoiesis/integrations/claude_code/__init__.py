"""Claude Code: its session logs (importer), the `{"loglines": [...]}` JSON of its web API
and of claude-code-transcripts (loglines), its hooks (hooks), their installation in
settings.json (install)."""

# Where Claude Code keeps its session logs: the daemon's session watcher imports them once
# they have ended (`daemon.session_globs` defaults to every harness's own).
SESSION_GLOBS = ("~/.claude/projects/*/*.jsonl",)
