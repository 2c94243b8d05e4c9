"""`autopoiesis import` under bad input: each file and each session is refused
on its own, with its reason; the rest is imported and committed; the exit status says."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.clock import format_ts, parse_ts, utc_now
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from tests.conftest import Cli

ROOT = Path(__file__).resolve().parents[2]


def neutral(sid: str, **kw) -> dict:
    return {
        "session_id": sid,
        "started": "2026-02-16T18:45:00Z",
        "messages": [
            {"role": "user", "content": f"hello from {sid}", "timestamp": "2026-02-16T18:45:10Z"}
        ],
        **kw,
    }


def with_message(sid: str, **msg) -> dict:
    return {
        "session_id": sid,
        "started": "2026-02-16T18:45:00Z",
        "messages": [{"role": "user", "content": "x", **msg}],
    }


BAD_SESSIONS = {
    "timestamp_1e20": with_message("b1", timestamp=1e20),
    "year_1": with_message("b2", timestamp="0001-01-01T00:00:00+01:00"),
    "year_9999": {**neutral("b3"), "started": "9999-12-31T23:59:59-05:00"},
    "tokens_abc": {**neutral("b4"), "tokens_in": "abc"},
    "tool_calls_oops": with_message("b5", tool_calls=["oops"]),
    "nan_ended": {**neutral("b6"), "ended": float("nan")},
    "bad_id": neutral("bad/id"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BAD_SESSIONS))
def test_a_bad_session_is_refused_alone_and_its_neighbours_are_committed(
    memory_repo: MemoryRepo, tmp_path: Path, git, name: str
) -> None:
    src = tmp_path / "batch.json"
    src.write_text(json.dumps([neutral("ok1"), BAD_SESSIONS[name], neutral("ok2")]))
    report = import_files(memory_repo, [src])
    assert len(report.refused) == 1, report.refused
    assert len(report.imported) == 2 and report.commit
    assert all(git(memory_repo, "log", "--format=%H", "--", p).stdout for p in report.imported)


def test_a_lone_surrogate_is_imported_as_a_replacement_character(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    src = tmp_path / "s.json"
    src.write_text(
        '{"session_id": "sur1", "started": "2026-02-16T18:45:00Z", "topic": "t \\ud83d", "model": "\\ud83d",'
        ' "messages": [{"role": "user", "content": "hi \\ud83d", "name": "N\\ud83d",'
        ' "tool_calls": [{"tool": "x", "args": "\\ud83d", "result": "\\ud83d"}]}]}'
    )
    report = import_files(memory_repo, [src])
    assert report.refused == [] and report.commit
    assert "hi \ufffd" in (memory_repo.root / report.imported[0]).read_text(encoding="utf-8")


def files_for_each_trigger(tmp_path: Path) -> dict[str, Path]:
    out = {}

    def put(name: str, text: str) -> None:
        out[name] = tmp_path / name
        out[name].write_text(text)

    put("deep.json", "[" * 100_000 + "]" * 100_000)
    put(
        "deep_neutral.jsonl",
        json.dumps(neutral("dj1"))
        + "\n"
        + '{"session_id": "x", "messages": '
        + "[" * 100_000
        + "]" * 100_000
        + "}\n",
    )
    put(
        "openai_oops.json",
        json.dumps({"messages": [{"role": "assistant", "content": "a", "tool_calls": ["oops"]}]}),
    )
    put(
        "openai_created.json",
        json.dumps({"created": 1e19, "messages": [{"role": "user", "content": "a"}]}),
    )
    put("openai_nan.json", '{"created": NaN, "messages": [{"role": "user", "content": "a"}]}')
    put(
        "claude_year1.jsonl",
        json.dumps(
            {
                "type": "user",
                "sessionId": "cc1",
                "timestamp": "0001-01-01T00:00:00+01:00",
                "message": {"role": "user", "content": "a"},
            }
        )
        + "\n",
    )
    put(
        "empty_session.json",
        json.dumps({"session_id": "e1", "started": "2026-02-16T18:45:00Z", "messages": []}),
    )
    put("not_a_log.json", json.dumps({"hello": "world"}))
    put("good.json", json.dumps(neutral("good1")))
    return out


def test_each_bad_file_is_refused_on_its_own_and_the_good_one_is_committed(
    memory_repo: MemoryRepo, tmp_path: Path, git
) -> None:
    files = files_for_each_trigger(tmp_path)
    report = import_files(memory_repo, list(files.values()))
    refused = "\n".join(report.refused)
    for name, path in files.items():
        if name in ("good.json", "deep_neutral.jsonl"):
            continue
        assert str(path) in refused, (name, report.refused)
    assert "nested deeper" in refused
    assert "no conversation found" in refused or "no messages" in refused
    kept = sorted(Path(p).name for p in report.imported)
    assert any("good1" in k for k in kept) and any("dj1" in k for k in kept), kept
    assert report.commit and git(memory_repo, "status", "--porcelain", "--", "raw").stdout == ""


def test_the_cli_exits_non_zero_when_anything_was_refused_and_still_imports_the_rest(
    memory_repo: MemoryRepo, tmp_path: Path, git, cli: Cli
) -> None:
    files = files_for_each_trigger(tmp_path)
    out = cli("import", *map(str, files.values()), repo=memory_repo)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert "imported raw/conversations/" in out.stdout and "committed" in out.stdout
    assert out.stderr.count("refused:") >= 7


@pytest.mark.slow
@pytest.mark.parametrize("odd_type", [["user"], {"k": 1}, 7, None])
def test_a_claude_code_line_whose_type_is_not_a_string_is_skipped_and_the_rest_kept(
    memory_repo: MemoryRepo, tmp_path: Path, odd_type
) -> None:
    src = tmp_path / "cc.jsonl"
    good = {
        "type": "user",
        "sessionId": "cc-odd",
        "uuid": "u1",
        "timestamp": "2026-01-01T00:00:01Z",
        "message": {"role": "user", "content": "hello there"},
    }
    src.write_text(
        json.dumps({**good, "type": odd_type, "uuid": "u0"}) + "\n" + json.dumps(good) + "\n"
    )
    report = import_files(memory_repo, [src], "claude-code")
    assert report.refused == [] and len(report.imported) == 1
    assert report.bad_lines == 1
    assert "hello there" in (memory_repo.root / report.imported[0]).read_text(encoding="utf-8")


def _denied(monkeypatch: pytest.MonkeyPatch, method: str, denied: Path) -> None:
    """Path.METHOD raises PermissionError for DENIED, as for a file or folder of mode 000
    (the suite may run as root, whom chmod does not stop)."""
    real = getattr(Path, method)

    def guarded(self: Path, *args, **kwargs):
        if self == denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, method, guarded)


def test_a_folder_that_cannot_be_listed_is_refused_saying_so_and_the_rest_is_imported(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = tmp_path / "batch"
    (batch / "locked").mkdir(parents=True)
    (batch / "good.json").write_text(json.dumps(neutral("good1")))
    (batch / "locked" / "hidden.json").write_text(json.dumps(neutral("locked1")))
    _denied(monkeypatch, "iterdir", batch / "locked")
    out = cli("import", str(batch), str(batch / "locked"), repo=memory_repo)
    assert out.returncode == 1
    assert "good1" in out.stdout and "committed" in out.stdout
    # walked into and named alone, it is refused once, as what it is: not a folder
    # without logs, and never passed over in silence
    refusal = [line for line in out.stderr.splitlines() if "locked" in line]
    assert len(refusal) == 1 and "cannot be listed (Permission denied)" in refusal[0], out.stderr
    assert "chmod u+rx" in refusal[0] and "no session log" not in out.stderr


def test_a_file_that_cannot_be_read_is_refused_with_what_to_do_and_the_rest_is_imported(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, locked = tmp_path / "good.json", tmp_path / "locked.json"
    good.write_text(json.dumps(neutral("good1")))
    locked.write_text(json.dumps(neutral("locked1")))
    _denied(monkeypatch, "read_bytes", locked)
    out = cli("import", str(locked), str(good), repo=memory_repo)
    assert out.returncode == 1 and "good1" in out.stdout and "committed" in out.stdout
    assert f"{locked}: cannot be read (Permission denied)" in out.stderr
    assert "chmod u+r" in out.stderr and "PermissionError" not in out.stderr


def test_a_folder_named_again_or_inside_one_named_before_is_read_once_and_refused_never(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli
) -> None:
    logs = tmp_path / "logs"
    (logs / "a").mkdir(parents=True)
    (logs / "a" / "one.json").write_text(json.dumps(neutral("one1")))
    (logs / "two.json").write_text(json.dumps(neutral("two1")))
    # as a shell's glob gives them: `autopoiesis import logs logs/*`
    out = cli("import", str(logs), str(logs), str(logs / "a"), repo=memory_repo)
    assert out.returncode == 0, out.stderr
    assert "refused" not in out.stderr and out.stdout.count("imported raw/") == 2


def test_a_json_export_cut_off_is_refused_as_cut_off_not_as_no_json_nor_an_unknown_format(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    export = json.dumps(
        [{"session_id": "cut1", "started": "2026-02-16T18:45:00Z", "messages": []}], indent=1
    )
    cut, broken = tmp_path / "export.json", tmp_path / "broken.json"
    cut.write_text(export[: export.index("started") + 12])  # a download interrupted
    broken.write_text('{"session_id": "b1",, "messages": []}')
    report = import_files(memory_repo, [cut, broken])
    cut_off, damaged = report.refused
    assert cut_off.startswith(f"{cut}: JSON cut off before its end (line 4, column 14"), cut_off
    assert "Get the whole file again" in cut_off
    assert damaged.startswith(f"{broken}: JSON that does not parse (line 1, column 21"), damaged
    for refusal in report.refused:  # no format is to blame: naming one fails the same way
        assert "not JSON" not in refusal and "--format" not in refusal


def test_a_time_in_the_future_dates_nothing_an_import_files(
    memory_repo: MemoryRepo, tmp_path: Path, cli: Cli
) -> None:
    """A log stamped by a clock set a year ahead filed its session under that year, and
    the journal and MEMORY.md's `updated` after it; a start after the end was mended
    without a word. The future times date nothing now (the turn is kept at the next
    trusted time), an end before the start is said, and each warning names the session."""
    ahead = format_ts(utc_now() + timedelta(days=365))
    src = tmp_path / "log.json"
    src.write_text(
        json.dumps(
            [
                {
                    "session_id": "ses_ahead",
                    "started": ahead,
                    "ended": ahead,
                    "messages": [
                        {"role": "user", "content": "We decided to use Redis.", "timestamp": ahead},
                        {"role": "agent", "content": "Noted.", "timestamp": "2026-03-01T10:00:00Z"},
                    ],
                },
                {
                    "session_id": "ses_backwards",
                    "started": "2026-03-02T10:00:00Z",
                    "ended": "2026-02-01T10:00:00Z",
                    "messages": [
                        {"role": "user", "content": "hello", "timestamp": "2026-03-02T10:05:00Z"}
                    ],
                },
            ]
        )
    )
    out = cli("import", str(src), repo=memory_repo)
    assert out.returncode == 0, out.stderr
    where = f"warning: {src}: session ses_ahead: "
    assert f"{where}started {ahead[:19]}+00:00 is in the future" in out.stderr, out.stderr
    assert "the session starts at its first turn" in out.stderr
    assert "the turn is kept, dated 2026-03-01T10:00:00Z" in out.stderr
    assert (
        f"warning: {src}: session ses_backwards: ended 2026-02-01T10:00:00Z is before it "
        "started (2026-03-02T10:00:00Z); it ends at 2026-03-02T10:05:00Z."
    ) in out.stderr
    (ahead_file,) = memory_repo.conversations_dir.rglob("*ses_ahead*.md")
    assert ahead_file.relative_to(memory_repo.conversations_dir).parts[:3] == ("2026", "03", "01")
    meta = tf.parse_meta(ahead_file.read_text())
    assert meta.started == meta.ended == parse_ts("2026-03-01T10:00:00Z")
    (back_file,) = memory_repo.conversations_dir.rglob("*ses_backwards*.md")
    assert tf.parse_meta(back_file.read_text()).ended == parse_ts("2026-03-02T10:05:00Z")
    assert cli("extract", "--pending", repo=memory_repo).returncode == 0
    knowledge = memory_repo.root / "knowledge"
    assert not [p for p in knowledge.rglob("*.md") if ahead[:4] in p.name]
    assert f"updated: {ahead[:4]}" not in (knowledge / "memory" / "MEMORY.md").read_text()
