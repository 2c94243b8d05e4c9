"""Claude Code: its session logs (importer), the `{"loglines": [...]}` JSON of its web API
and of claude-code-transcripts (loglines), its hooks (hooks), their installation in
settings.json (install), where a session's subagents log (locations)."""

# Where Claude Code keeps its session logs (its data folder is ~/.config/claude since
# 1.0.30 where that exists, ~/.claude otherwise): each session, and its subagents' logs in
# `<session>/subagents/`. The daemon's session watcher imports them once they have ended,
# and `autopoiesis import --all` all of them (`daemon.session_globs` defaults to every
# harness's own).
SESSION_GLOBS = (
    "~/.claude/projects/*/*.jsonl",
    "~/.claude/projects/*/*/subagents/*.jsonl",
    "~/.config/claude/projects/*/*.jsonl",
    "~/.config/claude/projects/*/*/subagents/*.jsonl",
)
