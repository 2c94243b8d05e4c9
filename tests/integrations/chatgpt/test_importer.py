"""The ChatGPT export importer: the conversation tree, its current branch."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import imported_export, roles, tool_calls, transcripts


def test_chatgpt_shared_samples(memory_repo: MemoryRepo, shared_data: Path) -> None:
    report = import_files(memory_repo, sorted((shared_data / "harness-logs" / "chatgpt").iterdir()))
    assert report.refused == [] and report.bad_lines == 0
    got = transcripts(memory_repo, report.imported)
    n = got["chatgpt-fixture-conversation"]
    assert (n.meta.topic, n.meta.model) == ("Privacy-safe ChatGPT native fixture", "gpt-5-6-pro")
    assert roles(n) == ["user", "agent", "agent"]
    assert tool_calls(n) == [
        tf.ToolCall("browser.search", "fixture evidence", "Privacy-safe tool result.")
    ]
    assert n.turns[0].items[1:] == (
        tf.Attachment("file-service://fixture-input-image"),
        tf.Attachment("input.txt"),
    )
    text = (
        memory_repo.root / next(p for p in report.imported if "chatgpt-fixture" in p)
    ).read_text()
    for gone in (
        "Superseded answer",
        "reasoning trace",
        "reasoning summary",
        "Privacy-safe fixture profile",
    ):
        assert gone not in text  # the other branch, thoughts, the recap, custom instructions
    s = got[
        "35c7936c-5b99-42c6-a61f-ecc00a368ce7"
    ]  # conversation_id is not a usable id there; id is
    assert [x.role for x in s.turns] == [
        "user",
        "user",
    ]  # current_node's branch: the assistant reply is off it
    assert s.turns[0].time <= s.turns[1].time  # a child stamped before its parent keeps its place


def node(
    nid: str,
    parent: str | None,
    children: list[str],
    role: str | None = None,
    text: str = "",
    t: float | None = None,
    **extra: object,
) -> dict:
    msg = None
    if role:
        content = extra.pop("content", {"content_type": "text", "parts": [text]})
        msg = {
            "id": nid,
            "author": {"role": role, "name": extra.pop("name", None)},
            "create_time": t,
            "content": content,
            "recipient": extra.pop("recipient", "all"),
            "metadata": extra.pop("metadata", {}),
        }
    return {"id": nid, "parent": parent, "children": children, "message": msg}


def test_chatgpt_tree_branches_tools_and_a_bad_conversation(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    good = {
        "id": "c0ffee00-0000-4000-8000-000000000001",
        "title": "Plot a sine",
        "create_time": 1700000000.0,
        "default_model_slug": "gpt-4o",
        "mapping": {
            "root": node("root", None, ["sys"]),
            "sys": node(
                "sys",
                "root",
                ["u1"],
                "system",
                "",
                None,
                metadata={"is_visually_hidden_from_conversation": True},
            ),
            "u1": node("u1", "sys", ["a-old", "a1"], "user", "plot sin(x)", 1700000001.0),
            "a-old": node("a-old", "u1", [], "assistant", "REGENERATED AWAY", 1700000002.0),
            "a1": node(
                "a1",
                "u1",
                ["th"],
                "assistant",
                "",
                1700000003.0,
                recipient="python",
                content={
                    "content_type": "code",
                    "language": "python",
                    "text": "plt.plot(x, sin(x))",
                },
            ),
            "th": node(
                "th",
                "a1",
                ["out"],
                "assistant",
                "",
                1700000004.0,
                content={
                    "content_type": "thoughts",
                    "thoughts": [{"summary": "s", "content": "THINKING"}],
                },
            ),
            "out": node(
                "out",
                "th",
                ["a2"],
                "tool",
                "",
                1700000005.0,
                name="python",
                content={"content_type": "execution_output", "text": "<Figure>"},
            ),
            "a2": node(
                "a2",
                "out",
                [],
                "assistant",
                "Here is the plot.",
                None,
                metadata={"model_slug": "gpt-4o-2024"},
            ),
        },
    }  # no current_node: the newest leaf stands in
    bad = {
        "id": "c0ffee00-0000-4000-8000-000000000002",
        "title": "Broken",
        "create_time": "9999-99-99",
        "current_node": "u",
        "mapping": {"u": node("u", None, [], "user", "hi", float("inf"))},
    }
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([good, bad, {"not": "a conversation"}]))
    report = import_files(memory_repo, [f])
    assert len(report.refused) == 2, report.refused
    assert any("[1]" in r and "no readable create_time" in r for r in report.refused)
    assert any("[2]" in r and "not a ChatGPT conversation" in r for r in report.refused)
    (t,) = transcripts(memory_repo, report.imported).values()
    assert (t.meta.topic, t.meta.model) == ("Plot a sine", "gpt-4o")
    assert [(x.role, x.text) for x in t.turns] == [
        ("user", "plot sin(x)"),
        ("agent", ""),
        ("agent", "Here is the plot."),
    ]
    assert tool_calls(t) == [tf.ToolCall("python", "plt.plot(x, sin(x))", "<Figure>")]
    assert t.turns[2].time == t.turns[1].time  # no create_time: the time before it
    text = (memory_repo.root / report.imported[0]).read_text()
    assert "REGENERATED AWAY" not in text and "THINKING" not in text


def test_a_single_conversation_object_is_detected(
    memory_repo: MemoryRepo, shared_data: Path, tmp_path: Path
) -> None:
    """One conversation as the web app's API gives it: `id`, `title`, `mapping`, with no
    `current_node` or `create_time` to go by."""
    import json

    from autopoiesis.capture.importers import detect_format

    export = json.loads(
        (shared_data / "harness-logs/chatgpt/polylogue__native-conversation-v1.json").read_text()
    )
    conv = export[0] if isinstance(export, list) else export
    one = tmp_path / "conversation.json"
    one.write_text(json.dumps({k: conv[k] for k in ("id", "title", "mapping")}))
    assert detect_format(one, one.read_text()).name == "chatgpt"
    report = import_files(memory_repo, [one])
    assert report.refused == [] and len(report.imported) == 1
    (t,) = transcripts(memory_repo, report.imported).values()
    assert t.meta.topic == conv["title"] and t.turns[0].role == "user"


def test_a_conversation_whose_first_times_are_unreadable_is_kept_at_its_first_readable_one(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    conv = {
        "id": "c0ffee00-0000-4000-8000-000000000003",
        "title": "Times lost",
        "create_time": None,
        "current_node": "a",
        "mapping": {
            "root": node("root", None, ["u"]),
            "u": node("u", "root", ["a"], "user", "hi", float("nan")),
            "a": node("a", "u", [], "assistant", "hello", 1700000060.0),
        },
    }
    t = imported_export(memory_repo, tmp_path, [conv])
    assert [(turn.role, turn.text) for turn in t.turns] == [("user", "hi"), ("agent", "hello")]
    assert t.meta.started.timestamp() == 1700000060.0
