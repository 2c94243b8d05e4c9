"""Installing the Claude Code hooks into a settings file a hand edit left odd: duplicates fixed, foreign entries in a shared group kept, a symlinked file kept a symlink."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.integrations.claude_code.install import install_claude_code, uninstall_claude_code
from autopoiesis.integrations.claude_code.mcp_config import install_mcp, uninstall_mcp


def test_install_fixes_hand_edits_and_keeps_foreign_entries_in_a_shared_group(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.json"
    ours = "autopoiesis -C /old/memory hook claude-code Stop"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "Stop": [
                        {
                            "hooks": [
                                {"type": "command", "command": "say done"},
                                {"type": "command", "command": ours},
                            ]
                        },
                        {"hooks": [{"type": "command", "command": ours}]},  # a second copy
                    ]
                }
            }
        )
    )
    report = install_claude_code(memory_repo, settings, python="/usr/bin/python3")
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert stop == [
        {
            "hooks": [
                {"type": "command", "command": "say done"},
                {
                    "type": "command",
                    "command": f"/usr/bin/python3 -P -m autopoiesis -C {memory_repo.root} hook claude-code Stop",
                    "timeout": 15,
                },
            ]
        }
    ]
    assert "Stop" in report.updated and "SessionEnd" in report.added
    uninstall_claude_code(settings)
    assert json.loads(settings.read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }


def test_a_symlinked_settings_file_stays_a_symlink(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}')
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.symlink_to(dotfiles)
    install_claude_code(memory_repo, settings)
    assert settings.is_symlink() and "hook claude-code Stop" in dotfiles.read_text()
    uninstall_claude_code(settings)
    assert settings.is_symlink() and json.loads(dotfiles.read_text()) == {"model": "opus"}


@pytest.mark.parametrize(
    "layout",
    [
        '{\n    "model": "opus",\n    "permissions": {\n        "allow": ["Bash(ls)"]\n    }\n}\n'.replace(
            '["Bash(ls)"]', '[\n            "Bash(ls)"\n        ]'
        ),
        '{\r\n\t"model": "opus",\r\n\t"env": {}\r\n}\r\n',
        '{"model": "opus", "env": {"A": "1"}}',
        '{"model":"opus","env":{"A":"1"}}\n',
        '{\n  "model": "caf\u00e9"\n}',
    ],
    ids=["4 spaces", "tabs and CRLF", "one line", "one line unspaced", "no final line break"],
)
def test_installing_and_removing_again_leaves_the_users_file_byte_for_byte(
    memory_repo: MemoryRepo, tmp_path: Path, layout: str
) -> None:
    """Every settings file was written back indented by 2 with LF line ends: a user's file
    laid out otherwise (4 spaces, tabs, CRLF, one line, no final line break) came back
    reformatted after `integrate` and `integrate --uninstall`, a diff of every line."""
    settings = tmp_path / "settings.json"
    settings.write_bytes(layout.encode())
    install_claude_code(memory_repo, settings)
    install_claude_code(memory_repo, settings, budget=900)
    assert "hook claude-code Stop" in settings.read_text()
    uninstall_claude_code(settings)
    assert settings.read_bytes() == layout.encode()
    claude_json = tmp_path / ".claude.json"
    claude_json.write_bytes(layout.encode())
    install_mcp(memory_repo, claude_json, ("projects", "/p", "mcpServers"))
    uninstall_mcp(claude_json, ("projects", "/p", "mcpServers"))
    assert claude_json.read_bytes() == layout.encode()
