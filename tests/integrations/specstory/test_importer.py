"""The SpecStory importer: real exports of bench/coding/sessions (v1 Cursor files with
`Read file:` lines and terminal fences, a v2 file with `<tool-use>` blocks and per-turn
models) imported through `autopoiesis import`, and bad input refused with nothing lost."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from autopoiesis.capture.importers import detect_format, import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from autopoiesis.integrations.specstory.importer import read_time, session_place
from tests.integrations.helpers import roles, tool_calls, transcripts

SESSIONS = Path(__file__).resolve().parents[3] / "bench" / "coding" / "sessions"
MINSKY = SESSIONS / "minsky" / ".specstory" / "history"
PR_LOGIC = MINSKY / "2025-04-29_16-46-debugging-pr-command-logic.md"
V2 = (
    SESSIONS
    / "changshuo-radio-recognition"
    / ".specstory"
    / "history"
    / "2026-03-18_06-23Z-pyrightconfig-json-exclusion-settings.md"
)
OLD_BANNER = (
    SESSIONS
    / "process-xbrl"
    / ".specstory"
    / "history"
    / "identifying-dependencies-for-notices-txt.md"
)


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # a header's time without a zone is local time
    time.tzset()


def _copy(src: Path, tmp_path: Path, project: str = "minsky") -> Path:
    """SRC placed as it was exported: PROJECT/.specstory/history/NAME."""
    dest = tmp_path / project / ".specstory" / "history" / src.name
    dest.parent.mkdir(parents=True)
    shutil.copy(src, dest)
    return dest


def test_v1_cursor_export_through_the_cli(cli, memory_repo: MemoryRepo, tmp_path: Path) -> None:
    src = _copy(PR_LOGIC, tmp_path)
    result = cli("import", str(src), repo=memory_repo)
    assert result.returncode == 0, result.stderr
    rels = [str(p.relative_to(memory_repo.root)) for p in (memory_repo.root / "raw").rglob("*.md")]
    [t] = transcripts(memory_repo, rels).values()
    text = PR_LOGIC.read_text(encoding="utf-8")
    assert t.meta.topic == "Debugging PR Command Logic"
    assert t.meta.channel == "specstory"
    # the file name's minute is UTC; the header's 12:46:13 is the writer's local time
    assert t.turns[0].time.isoformat().startswith("2025-04-29T16:46")
    assert roles(t) == ["user", "agent"] * (text.count("_**User**_"))
    assert t.turns[0].text.startswith("enter into session 004, i don't think the generated pr.md")
    assert t.turns[2].text == "yes"
    times = [turn.time for turn in t.turns]
    assert times == sorted(times)  # the transcript keeps minutes: untimed turns share one
    calls = tool_calls(t)
    searches = [c for c in calls if c.tool == "codebase_search"]
    assert [c.args for c in searches[:2]] == [
        "logic for the pr command",
        "pr method or function in GitService",
    ]
    assert searches[0].result is not None and "src/commands/git/pr.ts" in searches[0].result
    assert tf.ToolCall("read_file", "src/domain/git.ts", None) in calls
    runs = [c for c in calls if c.tool == "run_terminal_cmd"]
    assert runs and all(c.args == "bun test src/domain/git.pr.test.ts" for c in runs[:3])
    assert runs[0].result is not None and "2 pass" in runs[0].result
    assert runs[1].result is not None and "1 fail" in runs[1].result
    # a diff the agent proposed stays its text, whole
    assert "${mergeBase}..${branch}" in t.turns[3].text


def test_v2_tool_use_blocks_models_and_session_id(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    src = _copy(V2, tmp_path, "changshuo-radio-recognition")
    text = src.read_text(encoding="utf-8")
    assert detect_format(src, text).name == "specstory"
    report = import_files(memory_repo, [src])
    assert report.refused == [] and len(report.imported) == 1
    [t] = transcripts(memory_repo, report.imported).values()
    assert t.meta.session_id == "specstory-ac71a7e6-938b-4599-9211-9387bcdf7c42"
    assert (t.meta.channel, t.meta.model) == ("cursor", "claude-4.6-opus-high-thinking")
    assert t.turns[0].time.isoformat().startswith("2026-03-18T06:23")
    assert t.turns[0].text.startswith("pyrightconfig.json")
    assert text.count("_**User**_") == roles(t).count("user")
    calls = tool_calls(t)
    assert len(calls) == text.count("<tool-use ")
    edit = calls[1]
    assert edit.tool == "edit_file_v2"
    assert edit.args == "/home/citybuster/Projects/ChangShuoRadioRecognition/pyrightconfig.json"
    ls = next(c for c in calls if c.args.endswith("ls -la .git 2>&1"))
    assert ls.tool == "run_terminal_command_v2"
    assert ls.result == "ls: cannot access '.git': No such file or directory"
    assert "Thought Process" not in "".join(turn.text for turn in t.turns)
    # HTML escapes of the export are undone in results
    assert any(c.result and "-> origin/main" in c.result for c in calls)


def test_old_banner_and_us_dates(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    src = _copy(OLD_BANNER, tmp_path, "process-xbrl")
    report = import_files(memory_repo, [src])
    assert report.refused == []
    [t] = transcripts(memory_repo, report.imported).values()
    assert t.meta.topic == "Identifying Dependencies for Notices.txt"
    assert t.turns[0].time.isoformat().startswith("2024-12-09T16:34")
    assert "Arelle is one dependency" in t.turns[0].text


@pytest.mark.slow
def test_every_bench_session_is_read(tmp_path: Path) -> None:
    files = sorted(SESSIONS.rglob("*.md"))
    if not files:
        pytest.skip("bench/coding/sessions is empty")
    from autopoiesis.capture.importers.base import ImportReport
    from autopoiesis.integrations.specstory.importer import SpecStoryImporter

    importer = SpecStoryImporter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert detect_format(path, text).name == "specstory", path
        [draft] = importer.read(path, text, ImportReport())
        # a turn can be empty (a question put in the title, a reply cut off): it is left out
        markers = len(re.findall(r"^_\*\*(?:User|Assistant|Agent)", text, re.M))
        assert 0 < len(draft.turns) <= markers and all(turn.items for turn in draft.turns), path
        assert any(turn.role == "agent" for turn in draft.turns), path


def test_bad_input_refused_nothing_lost(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    history = tmp_path / "p" / ".specstory" / "history"
    history.mkdir(parents=True)
    empty = history / "2025-01-01_10-00-empty.md"
    empty.write_text("<!-- Generated by SpecStory -->\n\n# Nothing (2025-01-01 10:00:00)\n\n")
    blank = history / "2025-01-01_10-05-blank-turns.md"
    blank.write_text("<!-- Generated by SpecStory -->\n\n_**User**_\n\n---\n\n_**Assistant**_\n\n")
    text = PR_LOGIC.read_text(encoding="utf-8")
    odd = history / "2025-01-01_10-10-odd-bytes.md"
    odd.write_bytes(text[:2000].encode() + b"\n\xff\xfe odd bytes\n")
    truncated = history / PR_LOGIC.name  # cut inside a code fence that never closes
    truncated.write_text(text[: len(text) // 3] + "\n```\nunclosed fence", encoding="utf-8")
    report = import_files(memory_repo, [empty, blank, odd, truncated])
    assert len(report.refused) == 3
    assert any("no _**User**_ or _**Assistant**_ turn" in r for r in report.refused)
    assert any("all empty" in r for r in report.refused)
    assert any("not valid UTF-8" in r and "odd-bytes" in r for r in report.refused)
    [t] = transcripts(memory_repo, report.imported).values()
    assert t.turns[0].text.startswith("enter into session 004")
    assert "unclosed fence" in t.turns[-1].text
    assert all(p.exists() for p in (empty, blank, odd, truncated))


def test_detection_leaves_other_markdown_alone(tmp_path: Path) -> None:
    cursor_export = tmp_path / "cursor.md"
    cursor_export.write_text(
        "# Chat\n_Exported on 4/11/2026 at 10:29:42 PDT from Cursor (1.2.3)_\n\n---\n\n"
        "**User**\n\nhello\n\n---\n\n**Cursor**\n\nhi\n"
    )
    assert detect_format(cursor_export, cursor_export.read_text()).name == "cursor-md"
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\n_**User**_ is a word in bold italics here.\n")
    with pytest.raises(Exception, match="none of the session logs"):
        detect_format(notes, notes.read_text())


def test_times_and_place(tmp_path: Path) -> None:
    assert read_time("2026-03-18 06:23Z").isoformat() == "2026-03-18T06:23:00+00:00"  # type: ignore[union-attr]
    assert read_time("12/9/2024, 4:34:35 PM").isoformat() == "2024-12-09T16:34:35+00:00"  # type: ignore[union-attr]
    assert read_time("Changes compared to merge-base") is None
    path = tmp_path / "My_Repo" / ".specstory" / "history" / "x.md"
    assert session_place(path) == (str(tmp_path / "My_Repo"), "my-repo")
    assert session_place(tmp_path / "x.md") == (None, None)


def test_the_session_belongs_to_the_folder_that_holds_specstory(
    memory_repo: MemoryRepo, tmp_path: Path, git
) -> None:
    # an exported copy: the folder's name; a git repository's top level: its project
    copied = _copy(PR_LOGIC, tmp_path / "plain", project="Minsky Copy")
    repo_dir = tmp_path / "checkout"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    git(repo_dir, "remote", "add", "origin", "https://example.org/edobry/minsky.git")
    in_repo = _copy(V2, tmp_path, project="checkout")
    assert session_place(copied) == (str(copied.parents[2]), "minsky-copy")
    assert session_place(in_repo) == (str(repo_dir), None)  # named at import, from the folder
    report = import_files(memory_repo, [copied, in_repo])
    assert report.refused == []
    metas = [t.meta for t in transcripts(memory_repo, report.imported).values()]
    assert sorted((m.project, m.cwd) for m in metas) == [
        ("minsky", str(repo_dir)),
        ("minsky-copy", str(copied.parents[2])),
    ]
