"""The usage ledger's day totals: what the daily budget counts, read by every new process
(a prompt hook's gate is one a prompt) from a ledger of months of calls, bounded."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from autopoiesis.llm import ledger as ledger_module
from autopoiesis.llm.ledger import Ledger, summarize_usage

TODAY = dt.date(2026, 11, 30)


def _row(day: dt.date, ts: str, **fields: Any) -> dict[str, Any]:
    return {
        "ts": ts,
        "day": day.isoformat(),
        "stage": "gate",
        "model": "gpt-4o-mini",
        "provider": "openai",
        "tokens_in": 10,
        "tokens_out": 1,
        "cached": False,
        "ok": True,
    } | fields


def _year_of_rows(path: Path, lines: int) -> None:
    """LINES ledger rows spread over the year before TODAY, oldest first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(lines):
            day = TODAY - dt.timedelta(days=365 - i * 365 // lines)
            ts = f"{day.isoformat()}T{i % 24:02d}:00:00.000000Z"
            fh.write(json.dumps(_row(day, ts)) + "\n")


def _todays_rows() -> list[dict[str, Any]]:
    d = TODAY.isoformat()
    return [
        _row(TODAY, f"{d}T00:00:01.000000Z"),  # paid: 11
        _row(TODAY, f"{d}T01:00:00.000000Z", cached=True),  # a cached answer costs nothing
        _row(TODAY, f"{d}T02:00:00.000000Z", provider="offline"),  # nor an offline one
        _row(TODAY, f"{d}T03:00:00.000000Z", job="reflect", tokens_in=100, tokens_out=20),
        _row(TODAY, f"{d}T04:00:00.000000Z", ok=False, tokens_in=5, tokens_out=0),
    ]


def _counted_from_start(path: Path, today: str) -> ledger_module.DayTotals:
    """Today's totals as a ledger read whole would count them."""
    ledger = Ledger(path)
    ledger._scan_offset = 0  # as if today's first line were the file's first
    ledger._totals = ledger_module.DayTotals(today)
    return ledger.day_totals(today)


def test_a_budget_check_reads_todays_lines_not_the_years(tmp_path):
    """A fresh process's first budget check parsed every line of the ledger: a year of
    a prompt hook's gate calls, each time. It reads back from the end to today's first
    line, then only what is appended; `llm usage` keeps the whole year."""
    path = tmp_path / "ledger.jsonl"
    _year_of_rows(path, 100_000)
    ledger = Ledger(path)
    for row in _todays_rows():
        ledger.append(row)

    fresh = Ledger(path)  # another process
    totals = fresh.day_totals(TODAY.isoformat())
    assert (totals.calls, totals.tokens, totals.errors) == (5, 11 + 120 + 5, 1)
    assert totals.jobs == {"reflect": {"calls": 1, "tokens": 120}}
    # today's 5 lines, read back to the last of yesterday's, then forward again
    assert fresh.lines_read <= 2 * 5 + 1

    fresh.append(_row(TODAY, f"{TODAY.isoformat()}T05:00:00.000000Z"))
    read_before = fresh.lines_read
    assert fresh.spent_today(TODAY.isoformat()) == 11 + 120 + 5 + 11
    assert fresh.lines_read - read_before == 1  # only the line appended since

    days = {u.day for u in summarize_usage(fresh.rows())}
    assert len(days) == 366  # the year's history is all there for `llm usage`


def test_a_day_without_calls_reads_no_further_back_than_the_last_line(tmp_path):
    path = tmp_path / "ledger.jsonl"
    _year_of_rows(path, 20_000)
    ledger = Ledger(path)
    assert ledger.day_totals(TODAY.isoformat()).calls == 0
    assert ledger.lines_read == 1


def test_a_row_of_yesterday_appended_after_one_of_today_does_not_hide_it(tmp_path):
    """Two writers either side of midnight: yesterday's row, stamped at 23:59:59, may land
    after today's first row; the search for today's first line goes past it."""
    path = tmp_path / "ledger.jsonl"
    _year_of_rows(path, 1000)
    ledger = Ledger(path)
    yesterday = TODAY - dt.timedelta(days=1)
    ledger.append(_row(TODAY, f"{TODAY.isoformat()}T00:00:00.000100Z"))
    ledger.append(_row(yesterday, f"{yesterday.isoformat()}T23:59:59.999900Z"))
    ledger.append(_row(TODAY, f"{TODAY.isoformat()}T00:00:00.000200Z"))
    assert Ledger(path).day_totals(TODAY.isoformat()).calls == 2


@pytest.mark.parametrize("chunk", [1, 7, 64, 300, 4096])
def test_todays_first_line_is_found_across_chunk_boundaries(tmp_path, monkeypatch, chunk):
    """Lines cut by the chunks the search reads, long lines, a torn line from a crash and
    a last line without its newline: the totals are those of the whole file read."""
    monkeypatch.setattr(ledger_module, "_CHUNK", chunk)
    path = tmp_path / "ledger.jsonl"
    _year_of_rows(path, 50)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"day": "2026-11-29", "torn\n')
        fh.write(json.dumps(_row(TODAY, f"{TODAY.isoformat()}T00:00:02Z", note="x" * 500)))
        fh.write("\n\n")
        fh.write(json.dumps(_row(TODAY, f"{TODAY.isoformat()}T00:00:03Z", tokens_in=7)))
    today = TODAY.isoformat()
    assert Ledger(path).day_totals(today) == _counted_from_start(path, today)
    ledger = Ledger(path)
    assert ledger.day_totals(today).calls == 1  # the last line may be half-written yet
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n")
    assert ledger.day_totals(today) == _counted_from_start(path, today)
    assert ledger.day_totals(today).calls == 2


def test_a_ledger_all_of_today_is_read_from_its_start(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_module, "_CHUNK", 10)
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    for row in _todays_rows():
        ledger.append(row)
    assert Ledger(path).day_totals(TODAY.isoformat()).calls == 5


def test_a_long_running_ledger_starts_the_next_day_afresh(tmp_path):
    path = tmp_path / "ledger.jsonl"
    _year_of_rows(path, 100)
    ledger = Ledger(path)
    for row in _todays_rows():
        ledger.append(row)
    assert ledger.day_totals(TODAY.isoformat()).calls == 5
    tomorrow = TODAY + dt.timedelta(days=1)
    assert ledger.day_totals(tomorrow.isoformat()).calls == 0
    ledger.append(_row(tomorrow, f"{tomorrow.isoformat()}T00:10:00Z"))
    assert ledger.day_totals(tomorrow.isoformat()).tokens == 11
    path.unlink()  # deleted: its state costs only re-asking
    assert ledger.day_totals(tomorrow.isoformat()).calls == 0


def test_a_bounded_ledger_counts_today_across_the_rotation(tmp_path):
    """The ledger grew for ever (~250 bytes a call); it is bounded now, renamed
    ledger.jsonl.1 past its cap. A rotation in the middle of a day leaves today's first
    rows in the generation before: the budget still counts them, in a fresh process, in
    one that looked before the rotation, and when the rename was the last thing done."""
    path = tmp_path / "ledger.jsonl"
    _year_of_rows(path, 30)
    today = TODAY.isoformat()
    writer = Ledger(path, keep_bytes=path.stat().st_size + 1)
    watching = Ledger(path)  # a long-running process: it looked before the rotation
    rows = _todays_rows()
    writer.append(rows[0])  # past the cap now: the next append rotates first
    assert watching.day_totals(today).calls == 1
    writer.append(rows[1])
    assert watching.day_totals(today).calls == 2
    for row in rows[2:]:
        writer.append(row)
    assert writer.events.previous.exists()
    assert len(path.read_text().splitlines()) == 4  # today's last four, in the new file

    expected = (5, 11 + 120 + 5, 1)
    for ledger in (Ledger(path), watching):
        totals = ledger.day_totals(today)
        assert (totals.calls, totals.tokens, totals.errors) == expected
    fresh = Ledger(path)
    fresh.day_totals(today)
    assert fresh.lines_read <= 2 * 5 + 2  # today's lines of both files, not the year's
    path.rename(tmp_path / "aside")
    writer.events.path.with_name("ledger.jsonl.1").rename(tmp_path / "aside.1")
    (tmp_path / "aside").rename(writer.events.previous)  # renamed .1, no append since
    assert Ledger(path).day_totals(today).calls == 4
    assert watching.day_totals(today).calls == 4


def test_a_repos_ledger_is_bounded_as_the_state_logs_are(tmp_path):
    from autopoiesis.core.paths import STATE_LOG_KEEP_BYTES, MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo

    repo = MemoryRepo(init_memory_repo(tmp_path / "m", install_hooks=False, build_index=False).root)
    ledger = Ledger.of(repo)
    assert ledger.path == repo.state_file("llm_ledger")
    assert ledger.events.keep_bytes == STATE_LOG_KEEP_BYTES["llm_ledger"]
