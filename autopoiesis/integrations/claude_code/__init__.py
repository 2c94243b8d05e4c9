"""Claude Code: its session logs (importer), its hooks (hooks), their installation in settings.json (install)."""
