"""The pre-compaction flush block: the instructions name its markers, the last marked block is the one read."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.knowledge.flush import (
    FLUSH_BEGIN,
    FLUSH_END,
    UNPLACED,
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


def test_a_reply_out_of_form_is_kept_in_the_journal_never_dropped(
    memory_repo: MemoryRepo, cli
) -> None:
    """The flush is the last look at a session's history before it is dropped. A reply
    that did not keep to the prompt's headings (prose, a heading of its own, a project
    named by nothing) lost every such line, and the run said "nothing to keep (FLUSH_OK
    or notes already present)". Those lines go to the day's journal now, under their
    heading's words, and a warning says the reply was out of form."""
    reply = (
        "We moved the billing service to Postgres today.\n"
        "## decisions\n- use Kafka for the events\n"
        "## project: !!!\n- the cutover is on June 17\n"
        "## memory\n- rotate the API keys every quarter\n"
    )
    out = cli("flush", input=reply, repo=memory_repo)
    assert out.returncode == 0, out.stderr
    assert "nothing to keep" not in out.stdout
    assert "3 lines of the reply were under no `## journal`" in out.stderr
    journal = next((memory_repo.root / "knowledge/journal").glob("*.md")).read_text()
    assert "We moved the billing service to Postgres today." in journal
    assert "decisions: use Kafka for the events" in journal
    assert "the cutover is on June 17" in journal
    memory = (memory_repo.root / "knowledge/memory/MEMORY.md").read_text()
    assert "rotate the API keys every quarter" in memory
    assert parse_flush('{"memory": ["m"], "decisions": ["use Kafka"]}') == {
        "memory": ["m"],
        UNPLACED: ["decisions: use Kafka"],
    }
    assert parse_flush("FLUSH_OK") == {}
