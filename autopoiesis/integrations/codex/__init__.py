"""Codex: its rollout logs (importer), its notify hook (hooks), its installation in config.toml (install)."""
