"""Cline / Roo / Kilo task folders."""

# Where Cline, Roo Code and Kilo Code keep their tasks: the editor's global storage (VS
# Code, Cursor, Windsurf, VSCodium, ...: any editor folder, Linux and macOS, and VS Code's
# remote server), and the Cline CLI's own folder.
_EXTENSIONS = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline", "kilocode.kilo-code")
_EDITORS = (
    "~/.config/*/User/globalStorage",
    "~/Library/Application Support/*/User/globalStorage",
    "~/.vscode-server/data/User/globalStorage",
)
SESSION_GLOBS = (
    *(
        f"{editor}/{ext}/tasks/*/api_conversation_history.json"
        for editor in _EDITORS
        for ext in _EXTENSIONS
    ),
    "~/.cline/data/tasks/*/api_conversation_history.json",
)
