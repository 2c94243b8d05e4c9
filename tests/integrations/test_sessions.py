"""The harness session registry: a session seen again while it was imported is kept, a damaged cache reads as empty."""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.integrations.sessions import SessionRegistry


def test_session_registry_keeps_a_session_seen_again_while_it_was_imported(
    memory_repo: MemoryRepo,
) -> None:
    registry = SessionRegistry(memory_repo)
    registry.touch("claude-code", "a", path="/x/a.jsonl")
    first = registry.get("claude-code:a")
    assert first is not None and first.path == "/x/a.jsonl"
    registry.forget("claude-code:a", seen="2000-01-01T00:00:00Z")  # seen again since: kept
    assert registry.get("claude-code:a") is not None
    registry.forget("claude-code:a", seen=first.seen)
    assert registry.get("claude-code:a") is None
    assert registry.idle(30) == []
    registry.path.write_text("{not json")  # a damaged cache reads as empty, and is rewritten
    registry.touch("codex", "t")
    assert [s.key for s in registry.all()] == ["codex:t"]
