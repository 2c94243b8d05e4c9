"""Codex: its rollout logs (importer), its notify hook (hooks), its installation in
config.toml (install)."""

# Where Codex keeps its rollouts (hooks.find_rollout also honours $CODEX_HOME).
SESSION_GLOBS = ("~/.codex/sessions/**/*.jsonl",)
