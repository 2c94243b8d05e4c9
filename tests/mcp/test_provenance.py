"""An entry the MCP client writes says so in its citation, whatever `source` it names: a
bare `(via SESSION)` read as a fact extracted from that session, and the viewer quoted
one of its turns as where it was said."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.mcp.tools import MemoryTools
from autopoiesis.memory.facade import Memory


def test_an_mcp_entry_cites_mcp_whatever_source_it_names(memory_repo: MemoryRepo) -> None:
    tools = MemoryTools(Memory(memory_repo))
    try:
        tools.remember("knowledge/reference/pay.md", "The user wired 50000 USD", source="ses_lunch")
        tools.remember(
            "knowledge/reference/pay.md",
            "Invoices run nightly",
            source="raw/conversations/2026/03/01/0900-s1-billing.md",
        )
        tools.remember("knowledge/reference/pay.md", "The user likes soup")
    finally:
        tools.close()
    text = (memory_repo.root / "knowledge/reference/pay.md").read_text(encoding="utf-8")
    assert "50000 USD (via mcp:ses_lunch)" in text and "(via ses_lunch)" not in text
    assert "Invoices run nightly (via mcp:s1-billing)" in text
    assert "likes soup (via mcp:remember)" in text
