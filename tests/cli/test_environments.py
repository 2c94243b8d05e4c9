"""The CLI in the environments a real machine gives it: an output that cannot hold every
character, ... Each gets a message saying what to do, never a traceback."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import Cli


def test_an_output_that_cannot_hold_a_character_shows_a_question_mark(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    """PYTHONIOENCODING=latin-1 (or a legacy 8-bit locale): memory content holds arrows and
    dashes the output cannot encode. A search died at its first such hit with a
    UnicodeEncodeError; it now shows `?` for the character and goes on."""
    note = memory_repo.root / "knowledge/facts/arrows.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Arrows\n\n- The zebrafish pipeline: fetch \u2192 build \u2192 ship.\n")
    r = cli("search", "zebrafish", repo=memory_repo, env={"PYTHONIOENCODING": "latin-1"},
            process=True, text=False)  # fmt: skip
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    assert b"fetch ? build ? ship" in r.stdout
