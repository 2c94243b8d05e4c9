"""The Aider importer: the chat history Markdown (written in local time)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.integrations.helpers import tool_calls, transcripts


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # aider writes local time
    time.tzset()


# aider ends its own lines (user input, its output) with two spaces; "|" stands for them here
AIDER = """
# aider chat started at 2025-10-20 21:49:17

> Aider v0.86.1|
> Main model: gpt-4o with diff edit format|

#### /add src/dates.py|
> Added src/dates.py to the chat|

#### Why does parse_date drop the zone?|
####   It should keep +02:00.|

It calls `replace(tzinfo=None)`. Here is the fix:

> a quoted line of the reply, not aider's output

src/dates.py
```python
return dt
```

> Tokens: 2.5k sent, 120 received. Cost: $0.01 message, $0.01 session.|
> Applied edit to src/dates.py|
> Commit 1a2b3c4 fix: keep the time zone in parse_date|

#### /run pytest -q|
> Running pytest -q|

# aider chat started at 2025-10-21 08:00:00

> Aider v0.86.1|

#### /ask what else uses parse_date?|

Only `report.py`.
""".replace("|\n", "  \n")


def test_aider_history(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    p = tmp_path / ".aider.chat.history.md"
    p.write_text(AIDER)
    report = import_files(memory_repo, [p])
    assert report.refused == [] and len(report.imported) == 2
    ts = transcripts(memory_repo, report.imported)
    first = ts["aider-20251020T214917Z"]
    assert (first.meta.model, first.meta.tokens_in, first.meta.tokens_out) == ("gpt-4o", 2500, 120)
    assert first.turns[0] == tf.Turn(
        first.turns[0].time,
        "user",
        (tf.Text("Why does parse_date drop the zone?\n  It should keep +02:00."),),
    )
    reply = first.turns[1]
    assert (
        reply.role == "agent"
        and "> a quoted line of the reply" in reply.text
        and "```python" in reply.text
    )
    assert [c.tool for c in tool_calls(first)] == ["edit", "commit", "run", "run"]
    assert tool_calls(first)[1] == tf.ToolCall(
        "commit", "fix: keep the time zone in parse_date", "1a2b3c4"
    )
    assert "/add" not in (memory_repo.root / report.imported[0]).read_text()  # bookkeeping
    second = ts["aider-20251021T080000Z"]
    assert [x.text for x in second.turns] == ["what else uses parse_date?", "Only `report.py`."]


def test_aider_shared_sample(memory_repo: MemoryRepo, shared_data: Path) -> None:
    p = shared_data / "harness-logs" / "aider" / "zen-mcp-server__.aider.chat.history.md"
    assert detect_format(p, p.read_text()).name == "aider"
    report = import_files(memory_repo, [p])
    assert (
        report.refused == [] and len(report.imported) == 1
    )  # the other sessions hold only commands
    t = tf.parse((memory_repo.root / report.imported[0]).read_text())
    assert (
        t.meta.model == "gemini/gemini-2.5-pro-preview-06-05"
        and t.meta.started.isoformat().startswith("2025-10-23T17:04:56")
    )
    assert all(x.role == "user" for x in t.turns) and "gemini" in t.turns[1].text


def aider_output(message: str) -> str:
    """A message of aider's own output as `InputOutput.tool_output` appends it to the
    history: the whole message quoted once and ended with two spaces, so only its first
    line is quoted and only its last ends with them."""
    return "> " + message.strip() + "  \n"


AIDER_TEST_RUN = (
    "\n# aider chat started at 2025-11-03 10:00:00\n\n"
    + aider_output("Aider v0.86.1")
    + "\n#### /test pytest -q tests/test_dates.py  \n"
    + aider_output(
        "============================= test session starts ==============================\n"
        "collected 3 items\n\n"
        "tests/test_dates.py .F.                                                  [100%]\n\n"
        "=================================== FAILURES ===================================\n"
        "    def test_zone():\n"
        ">       assert parse_date('2025-01-01T00:00+02:00').tzinfo\n"
        "E       AssertionError\n"
        "========================= 1 failed, 2 passed in 0.12s ========================="
    )
    + aider_output("Added 12 lines of output to the chat.")
    + "\n#### Fix the failing test  \n\n"
    + "The zone is dropped in `parse_date`; keeping it fixes the test.\n\n"
    + aider_output("Tokens: 1.2k sent, 80 received.")
    + "\n#### /map  \n"
    + aider_output("src/dates.py:\n│def parse_date(text):\n⋮\nsrc/report.py:\n│def render():")
    + aider_output("Tokens: 0.5k sent, 10 received.")
)


def test_aider_output_blocks_of_several_lines_are_no_agent_turns(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    p = tmp_path / ".aider.chat.history.md"
    p.write_text(AIDER_TEST_RUN)
    report = import_files(memory_repo, [p])
    t = transcripts(memory_repo, report.imported)["aider-20251103T100000Z"]
    agent = [x.text for x in t.turns if x.role == "agent" and x.text]
    assert agent == ["The zone is dropped in `parse_date`; keeping it fixes the test."]
    # the pytest output is the /test call's result, the repo map bookkeeping
    (test,) = tool_calls(t)
    assert test.tool == "test" and test.args == "pytest -q tests/test_dates.py"
    assert test.result is not None and test.result.startswith("===") and "test_zone" in test.result
    body = (memory_repo.root / report.imported[0]).read_text()
    assert "def parse_date(text)" not in body and "collected 3 items\n" not in body


def test_aider_history_without_its_session_line_on_top_is_still_aider(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    cut = "\n".join(AIDER.splitlines()[14:])  # from the middle of the first session on
    p = tmp_path / "notes.md"
    p.write_text(cut)
    assert not cut.lstrip().startswith("# aider chat started at")
    assert detect_format(p, cut).name == "aider"
    report = import_files(memory_repo, [p])
    assert report.refused == [] and len(report.imported) == 2
    ts = transcripts(memory_repo, report.imported)
    (fragment,) = [x for x in ts.values() if not x.meta.session_id.startswith("aider-2025")]
    assert fragment.meta.started.isoformat().startswith("2025-10-21T08:00")  # the next session
    assert any("lines before any" in w for w in report.warnings)
    # no session line at all: dated by the file, still aider's by its markup
    bare = tmp_path / "bare.md"
    bare.write_text(
        "#### Rename parse_date  \n\nDone.\n\n> Tokens: 1k sent, 5 received.  \n"
        "> Applied edit to src/dates.py  \n"
    )
    assert detect_format(bare, bare.read_text()).name == "aider"
    assert len(import_files(memory_repo, [bare]).imported) == 1


def test_a_session_line_whose_time_is_no_time_starts_a_session_still(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """`# aider chat started at 9999-99-99 99:99:99` was skipped as a bad line, and the
    turns under it were filed as the previous session's (the warning said every good
    line was kept). They are a session of their own, dated by the one before it."""
    history = tmp_path / ".aider.chat.history.md"
    history.write_text(
        "# aider chat started at 2025-10-23 17:04:56\n\n#### first question  \n\nanswer one\n\n"
        "# aider chat started at 9999-99-99 99:99:99\n\n#### hi there  \n\nreply two\n"
    )
    report = import_files(memory_repo, [history])
    assert report.refused == [] and len(report.imported) == 2
    ts = transcripts(memory_repo, report.imported)
    said = sorted(" ".join(t.text for t in x.turns if t.role == "user") for x in ts.values())
    assert said == ["first question", "hi there"]
    assert any("line 7: a session line whose time is no time" in w for w in report.warnings)
