"""One package per agent harness or log format: its importer, and for the harnesses that
call autopoiesis live (claude_code, codex) their hooks, install/uninstall and session-file
locations. The built-in importers register through the plugin door (autopoiesis.plugins).

This module is read by the light entry on every `autopoiesis` call: standard library only.
"""

from __future__ import annotations

# The harnesses that run `autopoiesis hook HARNESS EVENT` (the one list of them).
HOOK_HARNESSES = ("claude-code", "codex")
MAX_PAYLOAD_BYTES = (
    8 << 20
)  # a prompt with a large paste still fits; anything more is not a hook payload
# Seconds a hook may take before it gives up and answers nothing (the settings give
# Claude Code's own timeout a margin over these: claude_code.install.CLAUDE_TIMEOUTS).
DEADLINES = {
    "SessionStart": 10.0,
    "UserPromptSubmit": 10.0,
    "PreCompact": 10.0,
    "Stop": 10.0,
    "SubagentStop": 10.0,
    "SessionEnd": 10.0,
    "notify": 10.0,  # Codex's
}
