"""The pre-compaction flush block: the instructions name its markers, the last marked block is the one read."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.knowledge.flush import (
    FLUSH_BEGIN,
    FLUSH_END,
    compaction_instructions,
    flush_block,
    parse_flush,
)


def test_flush_block_reads_the_last_marked_block(memory_repo: MemoryRepo) -> None:
    text = compaction_instructions(memory_repo)
    assert FLUSH_BEGIN in text and FLUSH_END in text and "FLUSH_OK" in text
    summary = (
        f"Summary...\n{FLUSH_BEGIN}\n## memory\n- old\n{FLUSH_END}\nmore\n"
        f"{FLUSH_BEGIN}\n## journal\n- shipped v2\n## memory\n- keep pg-3\n{FLUSH_END}\ntrailer"
    )
    block = flush_block(summary)
    assert block is not None and parse_flush(block) == {
        "journal": ["shipped v2"],
        "memory": ["keep pg-3"],
    }
    assert flush_block("no markers") is None
    assert flush_block(f"{FLUSH_BEGIN} never closed") is None
