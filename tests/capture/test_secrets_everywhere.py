"""Every kind of the secrets corpus in every field, through the real roads in (a live
capture, an import of Claude Code logs, MCP `remember`), then looked for in the transcripts,
their names, every git object (trees hold names, commits subjects) and memory.db: no
secret is left whole, nor 16 of its characters in a row (a field cut before redaction kept
a key's head), nor lowercased in a name (autopoiesis/testing/secrets_fields.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.testing import secrets_fields as sf
from autopoiesis.testing.secrets_corpus import CORPUS

pytestmark = pytest.mark.slow


def test_a_live_capture_leaves_no_secret_in_any_field(memory_repo: MemoryRepo) -> None:
    samples = sf.one_per_kind()
    sf.capture_everywhere(memory_repo, samples)
    names = [p.name for p in (memory_repo.root / "raw/conversations").rglob("*.md")]
    named_after = sf.secret_session_ids(samples)
    assert len(named_after) > len(samples) / 2  # most kinds' secrets fit in an id
    assert len(names) == 2 * len(samples) + len(named_after)
    assert sf.leaks(memory_repo, samples) == []


def test_an_import_leaves_no_secret_in_any_field(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    sf.import_everywhere(memory_repo, list(CORPUS), tmp_path / "logs")
    text = next((memory_repo.root / "raw/conversations").rglob("*-imp000-*.md")).read_text()
    assert "source: " in text and "> [tool:Bash] xxx" in text  # the fields are there
    assert sf.leaks(memory_repo, list(CORPUS)) == []


def test_mcp_remember_leaves_no_secret_in_knowledge_or_its_source(memory_repo: MemoryRepo) -> None:
    samples = sf.one_per_kind()
    sf.remember_everywhere(memory_repo, samples)
    assert sf.leaks(memory_repo, samples) == []
