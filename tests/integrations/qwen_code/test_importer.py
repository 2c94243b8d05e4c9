"""The Qwen Code importer, on public chat recordings: the shared sample, a rewound chat
and a line of two records (tests/integrations/qwen_code/samples/PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import roles, tool_calls, transcripts

SAMPLES = Path(__file__).parent / "samples"


def test_qwen_shared_sample_is_qwen_code_not_claude_code(
    memory_repo: MemoryRepo, shared_data: Path
) -> None:
    f = shared_data / "harness-logs" / "qwen" / "agent-sessions__qwen1.jsonl"
    assert detect_format(f, f.read_text()).name == "qwen-code"
    report = import_files(memory_repo, [f])
    assert report.refused == [] and report.bad_lines == 0
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (t.meta.session_id, t.meta.model, t.meta.channel) == (
        "019f0000-0000-7000-8000-000000000001",
        "synthetic-model",
        "qwen-code",
    )
    assert t.meta.cwd == "/tmp/as-qwen-fixture/project"
    assert [(x.role, x.text) for x in t.turns] == [
        ("user", "Inspect the synthetic fixture."),  # not the hook's context part
        ("agent", ""),
        ("agent", "The synthetic fixture is valid."),
        ("system", "Synthetic background notification."),
    ]
    assert tool_calls(t) == [
        tf.ToolCall(
            "read_file", "/tmp/as-qwen-fixture/project/README.md", "Synthetic file contents."
        )
    ]
    body = (memory_repo.root / report.imported[0]).read_text()
    assert "I should read the synthetic file" not in body  # a thought part


def test_a_rewound_qwen_chat_keeps_the_active_branch(memory_repo: MemoryRepo) -> None:
    report = import_files(memory_repo, [SAMPLES / "019f0000-0000-7000-8000-000000000004.jsonl"])
    (t,) = transcripts(memory_repo, report.imported).values()
    assert t.meta.topic == "Active branch title"  # not the abandoned branch's
    assert (t.meta.model, t.meta.tokens_in, t.meta.tokens_out) == ("synthetic-active-model", 12, 4)
    assert t.meta.cwd == "/tmp/as-qwen-fixture/new-project"
    assert roles(t) == ["user", "user", "agent"]
    assert "Discarded branch answer" not in (memory_repo.root / report.imported[0]).read_text()
    agent = t.turns[-1]
    assert agent.items == (
        tf.ToolCall("read_file", "/tmp/as-qwen-fixture/new-project/README.md", None),
        tf.Text("Active branch answer."),
    )


def test_two_qwen_records_on_one_line_are_both_read(memory_repo: MemoryRepo) -> None:
    report = import_files(memory_repo, [SAMPLES / "019f0000-0000-7000-8000-000000000005.jsonl"])
    assert report.bad_lines == 0
    (t,) = transcripts(memory_repo, report.imported).values()
    assert [x.text for x in t.turns] == [
        'Inspect {"glued": "objects"} safely.',
        "Recovered both synthetic objects.",
    ]
