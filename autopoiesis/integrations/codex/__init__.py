"""Codex: its rollout logs (importer), its hooks and notify (hooks), their installation in
config.toml (install)."""

# Where Codex keeps its rollouts ($CODEX_HOME, default ~/.codex; hooks.find_rollout also
# honours it), and those it archived.
SESSION_GLOBS = (
    "~/.codex/sessions/**/*.jsonl",
    "~/.codex/archived_sessions/*.jsonl",
    "$CODEX_HOME/sessions/**/*.jsonl",
)
