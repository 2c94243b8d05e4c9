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
