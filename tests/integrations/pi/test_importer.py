"""The pi importer, on a public session log (tests/integrations/pi/samples/PROVENANCE.md),
and pi's session tree: only the branch that ends at the last entry."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import roles, tool_calls, transcripts

SAMPLES = Path(__file__).parent / "samples"


def test_a_pi_session_with_compactions(memory_repo: MemoryRepo) -> None:
    (log,) = SAMPLES.glob("*.jsonl")
    assert detect_format(log, log.read_text()).name == "pi"
    report = import_files(memory_repo, [log])
    t = transcripts(memory_repo, report.imported)["019e19b4-eb48-746a-aa6b-8dfcfa37954b"]
    assert (t.meta.model, t.meta.cwd, t.meta.tokens_in, t.meta.tokens_out) == (
        "pi-fixture-model",
        "/tmp/as-agent-fixture/project",
        24,
        14,
    )
    assert roles(t) == ["user", "agent", "system", "user", "agent", "system"]
    assert t.turns[2].text == "hello.py prints a fixture greeting."  # the compaction's summary


def test_a_pi_tree_keeps_the_branch_of_the_last_entry(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    def entry(eid: str, parent: str | None, role: str, content: object, **more: object) -> dict:
        return {
            "type": "message",
            "id": eid,
            "parentId": parent,
            "timestamp": f"2026-05-12T01:0{len(eid)}:00Z",
            "message": {"role": role, "content": content, **more},
        }

    rows = [
        {
            "type": "session",
            "version": 3,
            "id": "s1",
            "timestamp": "2026-05-12T01:00:00Z",
            "cwd": "/p",
        },
        entry("a", None, "user", [{"type": "text", "text": "Read main.rs"}]),
        entry(
            "bb",
            "a",
            "assistant",
            [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "main.rs"}}],
        ),
        entry(
            "ccc",
            "bb",
            "toolResult",
            [{"type": "text", "text": "fn main() {}"}],
            toolCallId="c1",
            toolName="read",
            isError=False,
        ),
        entry("dddd", "ccc", "assistant", [{"type": "text", "text": "An empty main."}]),
        # the user went back to "a" and asked something else: the branch above is left
        entry("eeeee", "a", "assistant", [{"type": "text", "text": "Which main.rs?"}]),
    ]
    log = tmp_path / "2026-05-12T01-00-00-000Z_s1.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = transcripts(memory_repo, import_files(memory_repo, [log]).imported)["s1"]
    assert [x.text for x in t.turns] == ["Read main.rs", "Which main.rs?"]
    rows.pop()  # the first branch is the conversation now
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    other = tmp_path / "other" / "2026-05-12T01-00-00-000Z_s2.jsonl"
    other.parent.mkdir()
    other.write_text(log.read_text().replace('"id": "s1"', '"id": "s2"'))
    t2 = transcripts(memory_repo, import_files(memory_repo, [other]).imported)["s2"]
    assert tool_calls(t2) == [tf.ToolCall("read", "main.rs", "fn main() {}")]
