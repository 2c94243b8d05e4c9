"""The subprocess git runner (autopoiesis.git.runner): uncommitted files, batched blob reads, staged changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from autopoiesis.git import runner as coregit


def test_uncommitted_sees_untracked_and_staged_files(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    conv = tmp_path / "raw" / "conversations"
    conv.mkdir(parents=True)
    (conv / "a.md").write_text("a\n")
    (conv / "b.md").write_text("b\n")
    (conv / "c.md").write_text("c\n")
    subprocess.run(["git", "add", "raw/conversations/c.md"], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-qm", "c"], cwd=tmp_path, check=True)
    subprocess.run(
        ["git", "add", "raw/conversations/b.md"], cwd=tmp_path, check=True
    )  # staged, never committed
    assert coregit.uncommitted(tmp_path, ["raw/conversations"]) == [
        "raw/conversations/a.md",
        "raw/conversations/b.md",
    ]
    blobs = coregit.cat_file_batch(
        tmp_path, [":raw/conversations/b.md", "HEAD:raw/conversations/c.md", ":nope.md"]
    )
    assert blobs == {
        ":raw/conversations/b.md": b"b\n",
        "HEAD:raw/conversations/c.md": b"c\n",
        ":nope.md": None,
    }
    changes = coregit.staged_changes(tmp_path)
    assert [(c.status, c.path) for c in changes] == [("A", "raw/conversations/b.md")]
