"""SpecStory's Markdown of a turn read as transcript items (formats/specstory_markup.py): a
transcript captured from an export converted turn by turn, tool markup left in the text,
reads with its tool calls; any other transcript reads as it is."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from autopoiesis.capture.stream import process_stream
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from autopoiesis.formats.specstory_markup import read_steps
from autopoiesis.knowledge.extractors import SourceTranscript
from autopoiesis.memory.initialize import init_memory_repo

V2_STEP = """I'll run the tests.

---

<tool-use data-tool-type="shell" data-tool-name="run_terminal_cmd"><details><summary>Tool use: **run_terminal_cmd** • Run command: bun test src/cart.test.ts</summary>

```bash
bun test src/cart.test.ts
```

```
 12 pass
 0 fail
```
</details>
</tool-use>

---

All 12 tests pass."""

SUGGESTION = """Run this to check:

---

```bash
bun test src/cart.test.ts
```

```
 12 pass
```"""


def _captured(repo: MemoryRepo, agent_text: str, tool_call: bool = False) -> SourceTranscript:
    """One session streamed as a converter of exported Markdown sends it: the user's turn,
    then the agent's Markdown as one message (and a structured tool call, when TOOL_CALL)."""
    at = "2026-03-02T10:0"
    events = [
        {
            "event": "session_start",
            "session_id": "ses-md",
            "started": f"{at}0:00Z",
            "cwd": "/w/shop",
        },
        {
            "event": "message",
            "role": "user",
            "content": "run the cart tests",
            "timestamp": f"{at}1:00Z",
        },
        {"event": "message", "role": "assistant", "content": agent_text, "timestamp": f"{at}2:00Z"},
    ]
    if tool_call:
        events.append(
            {
                "event": "tool_call",
                "tool": "Bash",
                "args": "ls",
                "result": "a",
                "timestamp": f"{at}3:00Z",
            }
        )
    events.append({"event": "session_end", "ended": f"{at}4:00Z"})
    report = process_stream(repo, [(json.dumps(e) + "\n").encode() for e in events])
    assert not report.refused
    [path] = (repo.root / "raw").rglob("*.md")
    return SourceTranscript.from_text(str(path.relative_to(repo.root)), path.read_text())


def _calls(t: tf.Transcript) -> list[tf.ToolCall]:
    return [i for turn in t.turns for i in turn.items if isinstance(i, tf.ToolCall)]


def test_an_exports_tool_markup_in_a_captured_message_reads_as_its_tool_calls(
    memory_repo: MemoryRepo,
) -> None:
    src = _captured(memory_repo, V2_STEP)
    [run] = _calls(src.transcript)
    assert (run.tool, run.args) == ("run_terminal_cmd", "bun test src/cart.test.ts")
    assert run.result is not None and "12 pass" in run.result
    agent = [t for t in src.transcript.turns if t.role == "agent"]
    assert "All 12 tests pass." in agent[0].text and "<tool-use" not in agent[0].text
    # the file keeps what was captured, markup and all: this is only how it is read
    assert "<tool-use" in src.text and _calls(tf.parse(src.text)) == []


def test_a_transcript_without_export_markup_or_with_tool_calls_reads_as_it_is(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    # a command fence in a harness's message is a suggestion, not a run
    plain = _captured(memory_repo, SUGGESTION)
    assert _calls(plain.transcript) == []
    assert read_steps(plain.transcript) is plain.transcript
    # a stream that sends its tool calls as such: its text is not read again
    other = MemoryRepo(
        init_memory_repo(tmp_path / "other", install_hooks=False, build_index=False).root
    )
    structured = _captured(other, V2_STEP, tool_call=True)
    assert [c.tool for c in _calls(structured.transcript)] == ["Bash"]


def test_a_markdown_stream_without_a_folder_gets_the_project_its_marked_up_edits_worked_in(
    memory_repo: MemoryRepo,
) -> None:
    """No `cwd`, no `project`: the session is closed with the project of the files its
    export's tool markup says it edited, as a stream of tool calls gets it."""
    edit = (
        "I'll fix the total.\n\n---\n\n"
        '<tool-use data-tool-type="write" data-tool-name="edit_file"><details><summary>Tool use:'
        " **edit_file** • Edit file: /Users/alice/code/shop-api/src/cart.ts</summary>\n\n"
        "```diff\n- return total\n+ return total ?? 0\n```\n</details>\n</tool-use>"
    )
    at = "2026-03-02T10:0"
    events = [
        {"event": "session_start", "session_id": "ses-nofolder", "started": f"{at}0:00Z"},
        {"event": "message", "role": "user", "content": "fix the cart", "timestamp": f"{at}1:00Z"},
        {"event": "message", "role": "assistant", "content": edit, "timestamp": f"{at}2:00Z"},
        {"event": "session_end", "ended": f"{at}3:00Z"},
    ]
    assert not process_stream(
        memory_repo, [(json.dumps(e) + "\n").encode() for e in events]
    ).refused
    [path] = (memory_repo.root / "raw").rglob("*.md")
    assert tf.parse(path.read_text()).meta.project == "shop-api"


THINKING = (
    "<think><details><summary>Thought Process</summary>Maybe the flaky quasar module is "
    "to blame.\nOr the zeppelin cache, which would be odd.</details></think>\n\n---\n\n"
    "The retry budget is now three attempts, set in `client.ts`."
)


def test_an_exports_thinking_and_tags_are_out_of_what_search_and_the_context_read(
    memory_repo: MemoryRepo,
) -> None:
    """An agent's turn of an export captured as it is: the index and the compiled context
    read it as its import would, its thinking and markup tags out, line for line (a
    result's lines still point where they did). The file keeps every word; a user who
    writes a tag keeps it."""
    from autopoiesis.compiler.packing import transcript_source
    from autopoiesis.formats.specstory_markup import as_read
    from autopoiesis.index import SearchIndex

    assert as_read(THINKING).count("\n") == THINKING.count("\n")
    assert as_read(THINKING).split("\n")[:2] == ["", ""]
    assert "<details>" not in as_read("<details>\n<summary>Searched codebase</summary>")
    assert as_read("a <think> left open") == "a  left open"  # its tag out, its words kept
    src = _captured(memory_repo, THINKING)
    assert "zeppelin" in src.text  # the transcript keeps what was captured
    with SearchIndex(memory_repo) as index:
        index.catch_up()
        assert index.search("zeppelin quasar", fresh=False) == []
        [hit] = [r for r in index.search("retry budget attempts", fresh=False)]
        assert "Thought Process" not in hit.snippet
        lines = src.text.split("\n")
        assert "three attempts" in "\n".join(lines[hit.start_line - 1 : hit.end_line])
    units = transcript_source(src.path, src.text).units
    agent = next(u for u in units if " agent:" in u.text)
    assert "zeppelin" not in agent.text and "three attempts" in agent.text
    assert "<summary>" not in agent.text
    # a user's words are theirs, tags and all
    from autopoiesis.index.chunking import chunk_file

    asked = (
        "---\nsession_id: s\nstarted: 2026-03-02T10:00:00Z\nstatus: complete\n---\n\n# T\n\n"
        "## 10:00 \u2014 user\nwhy does <think>zeppelin</think> show up in the output?\n\n"
        "## 10:01 \u2014 agent\n<think>quasar</think>\nThe model prints its reasoning.\n"
    )
    chunks = chunk_file("raw/conversations/s.md", asked, "conversation").chunks
    assert any("<think>zeppelin</think>" in c.text for c in chunks)
    assert not any("quasar" in c.text for c in chunks)


LOOKUPS = (
    "I'll find where the retry budget is set.\n\n---\n\n"
    '<details>\n            <summary>Searched codebase "retry budget" \u2022 **2** results</summary>\n\n'
    "| File | Lines |\n|------|-------|\n| `src/quasar/zeppelin.ts` | L1-40 |\n\n</details>\n\n---\n\n"
    '<tool-use data-tool-type="read" data-tool-name="read_file_v2">\n'
    "<details><summary>Tool use: **read_file_v2** \u2022 Read file: src/client.ts</summary>\n\n"
    "const zeppelinRetries = 1;\n\n</details>\n</tool-use>\n\n---\n\n"
    "<details><summary>MCP tool call</summary>\n\n*Parameters*:\n"
    "  * messages: the retry budget is three attempts, kept in the quasar notes\n</details>\n\n---\n\n"
    "The retry budget is now three attempts, set in `client.ts`."
)


def test_a_lookups_result_is_out_of_what_search_and_the_context_read(
    memory_repo: MemoryRepo,
) -> None:
    """A search of the project's files, a listing, a file read: their results (paths,
    line ranges, the file's lines) are the project's own text, and they outranked what
    was said about them. What search and the compiled context read keeps the lookup's
    summary (what was looked for) and leaves its result out, line for line; another
    tool's block (an MCP call the agent wrote a summary into) is read whole, and the
    transcript keeps every word."""
    from autopoiesis.compiler.packing import transcript_source
    from autopoiesis.formats.specstory_markup import as_read
    from autopoiesis.index import SearchIndex

    read = as_read(LOOKUPS)
    assert read.count("\n") == LOOKUPS.count("\n")
    assert "zeppelin" not in read and "L1-40" not in read
    assert 'Searched codebase "retry budget"' in read and "Read file: src/client.ts" in read
    assert "kept in the quasar notes" in read  # not a lookup: read whole
    src = _captured(memory_repo, LOOKUPS)
    assert "zeppelinRetries" in src.text
    with SearchIndex(memory_repo) as index:
        index.catch_up()
        assert index.search("zeppelin", fresh=False) == []
        [hit] = index.search("quasar notes", fresh=False)
        lines = src.text.split("\n")
        assert "kept in the quasar notes" in "\n".join(lines[hit.start_line - 1 : hit.end_line])
    agent = next(u for u in transcript_source(src.path, src.text).units if " agent:" in u.text)
    assert "zeppelin" not in agent.text and "three attempts, set in" in agent.text
    # v2 marks a lookup by its type too (Claude Code's Grep); a web search's results are
    # not the project's text
    typed = (
        '<tool-use data-tool-type="search" data-tool-name="Grep"><details>\n'
        "<summary>Tool use: **Grep**</summary>\n path `src/zeppelin.rs`\n</details>\n</tool-use>\n"
        '<tool-use data-tool-type="search" data-tool-name="web_search"><details>\n'
        "<summary>Tool use: **web_search**</summary>\n the quasar docs say so\n</details>\n</tool-use>"
    )
    assert "zeppelin" not in as_read(typed) and "the quasar docs say so" in as_read(typed)
    assert as_read(typed).count("\n") == typed.count("\n")
    # a lookup left open is read as it is: nothing after it is lost
    open_ended = '<details>\n<summary>Grep search for "x"</summary>\nsrc/a.ts\nThe fix is in.'
    assert as_read(open_ended).split("\n")[2:] == ["src/a.ts", "The fix is in."]
    # a Claude Code block's summary names only the tool: it says nothing, and goes too
    assert "Tool use" not in as_read(typed).split("\n")[1]
    assert "Tool use: **web_search**" in as_read(typed)  # not a lookup: read whole


CLAUDE_CODE_STEPS = (
    ("user", "Where is the retry budget set?"),
    ("assistant", "Let me look at the client."),
    (
        "assistant",
        '<tool-use data-tool-type="read" data-tool-name="Read"><details>\n'
        "<summary>Tool use: **Read**</summary>\n `./src/client.ts`\n```text\n"
        "     1\u2192const zeppelinRetries = 3;\n```\n</details></tool-use>",
    ),
    ("assistant", "<think><details><summary>Thought Process</summary>\nquasar\n</details></think>"),
    ("assistant", "The retry budget is three attempts, set in `client.ts`."),
)


def test_a_step_that_says_nothing_to_a_reader_is_not_shown(memory_repo: MemoryRepo) -> None:
    """A Claude Code session exported to Markdown makes every tool call and every thought a
    message of its own: the compiled context showed a line "10:01 agent: Tool use:
    **Read**" or "10:02 agent:" for each, hundreds in a session. A step with nothing left
    for a reader (a lookup, thinking) shows nothing; the others are shown as before, and
    the transcript keeps every word."""
    from autopoiesis.capture.stream import process_stream
    from autopoiesis.compiler.packing import transcript_source

    events: list[dict[str, object]] = [
        {"event": "session_start", "session_id": "ses-cc", "started": "2026-03-02T10:00:00Z"}
    ]
    for n, (role, content) in enumerate(CLAUDE_CODE_STEPS):
        stamp = f"2026-03-02T10:0{n}:00Z"
        events.append({"event": "message", "role": role, "content": content, "timestamp": stamp})
    events.append({"event": "session_end", "ended": "2026-03-02T10:30:00Z"})
    assert not process_stream(
        memory_repo, [(json.dumps(e) + "\n").encode() for e in events]
    ).refused
    [path] = (memory_repo.root / "raw").rglob("*.md")
    text = path.read_text(encoding="utf-8")
    assert "zeppelinRetries" in text and "quasar" in text
    source = transcript_source(str(path.relative_to(memory_repo.root)), text)
    assert source is not None
    shown = source.render(range(len(source.units)))
    assert "Let me look at the client." in shown and "three attempts" in shown
    assert "Tool use" not in shown and "zeppelin" not in shown and "quasar" not in shown
    assert not [line for line in shown.split("\n") if line.rstrip().endswith("agent:")], shown


@pytest.mark.slow
def test_markup_left_open_is_read_in_linear_time() -> None:
    """A captured message is anyone's text: `<think>`, `<summary>` and attributes opened
    and never closed made each match scan to the end of the text from each opening (8,000
    of them: 2 to 20 s). Eight times the text takes about eight times the CPU time now;
    quadratic would be sixty-four times (the bound is loose: CPU time drifts on a loaded
    machine)."""
    from autopoiesis.formats.specstory_markup import as_read, turn_items

    def cpu(n: int) -> float:
        texts = [
            "<details>\n<summary>x</summary>\n" + "<think> a\n" * n,
            "<tool-use x>\n<summary>" + "<summary> b\n" * n,
            "---\n".join(["<details>\n<summary>" + "y" * 50] * n),
            "<tool-use x>\n" + '<details data-tool-name="' * n,
            "<details>\n<summary>Grep search for x</summary>\n" * n,
            '<tool-use data-tool-name="grep">\n<summary>' * n,
            # many openings before one summary: it is looked for once
            "<details>\n" * n + "<summary>Edit file</summary>\nx",
            '<tool-use data-tool-name="edit">\n' * n + "<summary>Edit file</summary>\nx",
        ]
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            for text in texts:
                assert turn_items("agent", text.split("\n"))
                assert as_read(text).count("\n") == text.count("\n")
            best = min(best, time.process_time() - started)
        return best

    small, large = cpu(2_000), cpu(16_000)
    assert large < 30 * max(small, 0.0005), f"2,000: {small:.4f} s, 16,000: {large:.4f} s"
