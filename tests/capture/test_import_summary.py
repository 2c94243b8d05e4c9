"""The warnings of an import told once per file (capture/importers/summary.py)."""

from __future__ import annotations

import json
from pathlib import Path

from autopoiesis.capture.importers import ImportReport
from autopoiesis.capture.importers.summary import summarize
from autopoiesis.core.paths import MemoryRepo
from tests.conftest import Cli


def test_skipped_lines_of_a_file_are_one_line_with_counts_per_reason() -> None:
    report = ImportReport()
    for n in range(2, 62):
        report.skip_line("a.jsonl", n, "not JSON")
    report.warnings.append("a.jsonl: 2 line(s) repeating an earlier uuid counted once")
    for n in range(70, 75):
        report.skip_line("a.jsonl", n, f"timestamp '{n}x' is not an ISO-8601 timestamp")
    report.skip_line("b.json#history", 4, "not a Content with role and parts")
    lines = summarize(report.warnings)
    assert lines == [
        "a.jsonl: 65 lines skipped: 60 not JSON, 5 bad timestamps (first at line 2); every "
        "good line was kept",
        "a.jsonl: 2 line(s) repeating an earlier uuid counted once",
        "b.json: 1 line skipped: not a Content with role and parts (first at line 4); every "
        "good line was kept",
    ]


def test_quoted_values_do_not_split_a_reason_and_other_warnings_come_once() -> None:
    warnings = [
        "f:3: skipped (unknown line type 'foo')",
        "f:9: skipped (unknown line type 'bar')",
        "g: dated by the file's mtime",
        "g: dated by the file's mtime",
        "f:1: skipped (items[0]: role 'x' is not one of user, agent)",
    ]
    assert summarize(warnings) == [
        "f: 3 lines skipped: 2 of unknown types, role 'x' is not one of user, agent (first at "
        "line 1); every good line was kept",
        "g: dated by the file's mtime",
    ]


def test_a_reason_told_by_its_values_keeps_the_first_one_whole() -> None:
    """A reason that names a value ("session_id 'a/b' contains '/'") was told with every
    quoted value cut ("session_id … contains …, …, … or a NUL byte"): what to mend was
    gone. The first such reason is told whole, with how many more are like it."""
    warnings = [
        "f:1: skipped (session_id 'a/b' contains '/', or a NUL byte)",
        "f:2: skipped (session_id 'c/d' contains '/', or a NUL byte)",
    ]
    assert summarize(warnings) == [
        "f: 2 lines skipped: session_id 'a/b' contains '/', or a NUL byte (and 1 more like it) "
        "(first at line 1); every good line was kept",
    ]


def test_cli_import_prints_one_warning_per_file_before_what_it_imported(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli
) -> None:
    good = {
        "type": "user",
        "sessionId": "s1",
        "timestamp": "2025-01-01T00:00:00Z",
        "message": {"role": "user", "content": "hello"},
    }
    lines = [json.dumps(good)] + ["{not json"] * 60
    lines += [json.dumps({**good, "timestamp": "yesterday"})] * 5
    log = tmp_path / "s.jsonl"
    log.write_text("\n".join(lines) + "\n")
    r = cli("import", str(log), repo=memory_repo)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        f"warning: {log}: 60 lines skipped: not JSON (first at line 2); every good line was kept",
        # lines whose time cannot be read are kept, dated as the line before them: told once
        f"warning: {log}:62: timestamp 'yesterday' is not an ISO-8601 timestamp; the line is "
        "kept, dated 2025-01-01T00:00:00Z (the time of the line before it); so were 4 more "
        "lines of the file",
    ]
    assert "imported raw/conversations/2025/01/01/" in r.stdout
    quiet = cli("import", "--quiet", str(log), repo=memory_repo)
    assert quiet.stderr == ""
    data = json.loads(cli("import", "--json", str(log), repo=memory_repo).stdout)
    assert data["bad_lines"] == 60 and len(data["summary"]) == 2
