"""A resumed Claude Code session (`claude --resume`/`--continue`) writes a new log under a
new session id whose first lines are a copy of the session it resumed (the same message
`uuid`s and times; the copies keep the old `sessionId` or carry the new one, depending on
the version), then the new turns. Each turn is filed once, whichever log is imported
first, and importing again files nothing new."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from autopoiesis.testing.samples import claude_code_exchange

OLD, NEW, LATER = (
    "4f1c2d3e-0000-4000-8000-00000000000a",
    "7b2e9a10-0000-4000-8000-00000000000b",
    "9c3f0b21-0000-4000-8000-00000000000c",
)
EXCHANGES = [
    ("Where do the release notes live?", "In docs/releases, one file per version."),
    ("And the changelog script?", "scripts/changelog.py builds it from the commits."),
    ("Which zebra-crossing ticket is open?", "Ticket 4711 about the zebra-crossing sensor."),
    ("Who owns the sensor firmware?", "The embedded team; Dana reviews its releases."),
]


def lines_of(session: str, first: int, upto: int, *, written_as: str | None = None) -> list[dict]:
    """The user and assistant lines of exchanges FIRST..UPTO-1, a chain by parentUuid,
    each exchange ten minutes after the one before; WRITTEN_AS, the sessionId the lines
    carry (a copy in a resumed log may carry the new session's)."""
    out: list[dict] = []
    for i in range(first, upto):
        q, a = EXCHANGES[i]
        out += claude_code_exchange(
            written_as or session,
            i,
            q,
            a,
            asked=f"2026-04-01T10:{i}0:00.000Z",
            answered=f"2026-04-01T10:{i}0:20.000Z",
            chained=True,
            cwd="/work/app",
            version="1.0.61",
        )
    return out


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def logs(tmp_path: Path, copies_keep_old_id: bool) -> tuple[Path, Path]:
    """The first session's log (two exchanges) and the log of the session resumed from it:
    a summary line naming the old leaf, the copy of the two exchanges, a third of its own."""
    old = write(tmp_path / f"{OLD}.jsonl", lines_of(OLD, 0, 2))
    copy = lines_of(OLD, 0, 2, written_as=None if copies_keep_old_id else NEW)
    summary = {"type": "summary", "summary": "Release notes", "leafUuid": "a1"}
    new = write(tmp_path / f"{NEW}.jsonl", [summary, *copy, *lines_of(NEW, 2, 3)])
    return old, new


def filed(repo: MemoryRepo) -> dict[str, list[tf.Transcript]]:
    """Every transcript filed, by session id (parts in order)."""
    out: dict[str, list[tf.Transcript]] = {}
    for path in sorted(repo.conversations_dir.rglob("*.md")):
        t = tf.parse(path.read_text(encoding="utf-8"))
        out.setdefault(t.meta.session_id, []).append(t)
    for parts in out.values():
        parts.sort(key=lambda t: t.meta.part)
    return out


def said(parts: list[tf.Transcript]) -> list[str]:
    return [turn.text for t in parts for turn in t.turns]


def every_word(repo: MemoryRepo) -> list[str]:
    return [text for parts in filed(repo).values() for text in said(parts)]


@pytest.mark.parametrize("copies_keep_old_id", [False, True], ids=["rewritten-id", "old-id"])
@pytest.mark.parametrize("old_first", [True, False], ids=["old-first", "resumed-first"])
def test_each_turn_of_a_resumed_session_is_filed_once(
    memory_repo: MemoryRepo, tmp_path: Path, copies_keep_old_id: bool, old_first: bool
) -> None:
    old, new = logs(tmp_path, copies_keep_old_id)
    order = [old, new] if old_first else [new, old]
    for log in order:
        report = import_files(memory_repo, [log])
        assert report.refused == []
    words = every_word(memory_repo)
    # every message once: the copy adds nothing, and nothing of either log is lost
    assert sorted(words) == sorted(text for pair in EXCHANGES[:3] for text in pair)
    sessions = filed(memory_repo)
    if old_first or copies_keep_old_id:
        # the first session's transcript holds its turns; the resumed one only its own,
        # and says which session it resumes
        assert said(sessions[OLD]) == list(EXCHANGES[0] + EXCHANGES[1])
        assert said(sessions[NEW]) == list(EXCHANGES[2])
        assert sessions[NEW][0].meta.resumes == OLD
        if not copies_keep_old_id:
            assert sessions[NEW][0].meta.started.hour == 10
            assert sessions[NEW][0].meta.started.minute == 20
            assert sessions[NEW][0].meta.tokens_in == 100  # the copy's usage is counted there
    else:
        # the resumed log came first, with the copy under its own id: the first session's
        # log, imported after, is all filed already
        assert OLD not in sessions
        assert said(sessions[NEW]) == [text for pair in EXCHANGES[:3] for text in pair]
    # both again, in either order: nothing new
    for log in [old, new, *order]:
        again = import_files(memory_repo, [log])
        assert again.refused == [] and again.imported == []
    assert sorted(every_word(memory_repo)) == sorted(words)


def test_a_resumed_session_that_goes_on_is_continued_with_its_own_turns(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    old, new = logs(tmp_path, copies_keep_old_id=False)
    for log in (old, new):
        assert import_files(memory_repo, [log]).refused == []
    grown = [*json.loads("[" + ",".join(new.read_text().splitlines()) + "]")]
    grown += lines_of(NEW, 3, 4)
    write(new, grown)
    report = import_files(memory_repo, [new])
    assert report.refused == []
    parts = filed(memory_repo)[NEW]
    assert [t.meta.part for t in parts] == [1, 2]
    assert said(parts) == list(EXCHANGES[2] + EXCHANGES[3])
    assert parts[1].meta.resumes is None and parts[1].meta.continues is not None


def test_a_session_resumed_twice_files_each_turn_once(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A resumed session resumed again: the third log repeats both sessions before it."""
    old, new = logs(tmp_path, copies_keep_old_id=False)
    later = write(
        tmp_path / f"{LATER}.jsonl",
        [*lines_of(OLD, 0, 3, written_as=LATER), *lines_of(LATER, 3, 4)],
    )
    for log in (old, new, later, later, new):
        assert import_files(memory_repo, [log]).refused == []
    sessions = filed(memory_repo)
    assert said(sessions[LATER]) == list(EXCHANGES[3])
    assert sessions[LATER][0].meta.resumes == NEW
    assert sorted(every_word(memory_repo)) == sorted(t for pair in EXCHANGES for t in pair)


def test_the_same_prompt_in_another_session_is_not_taken_for_a_copy(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """Two sessions begun in the same minute with the same words but answered otherwise
    are two sessions: each keeps every turn."""
    first = write(tmp_path / "a.jsonl", lines_of(OLD, 0, 1))
    other = lines_of(NEW, 0, 1)
    other[1]["message"]["content"] = [{"type": "text", "text": "See docs/releases."}]
    second = write(tmp_path / "b.jsonl", other)
    for log in (first, second):
        assert import_files(memory_repo, [log]).refused == []
    sessions = filed(memory_repo)
    assert said(sessions[OLD]) == list(EXCHANGES[0])
    assert said(sessions[NEW]) == [EXCHANGES[0][0], "See docs/releases."]
    assert sessions[NEW][0].meta.resumes is None


def test_sessions_begun_in_the_same_minute_are_not_read_whole_to_look_for_a_copy(
    memory_repo: MemoryRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A harness's parallel subagents or a batch of runs start in one minute: each new
    session read every other one of that minute whole to see whether it began with a copy
    of it (200 sessions: 8.75 s to import, one import each, where 0.72 s had done). Only a
    session whose first lines show the same first turn is parsed; a copy is still found."""
    for i in range(6):
        sid = f"{i:08d}-1111-4000-8000-000000000000"
        lines = lines_of(sid, 0, 1)
        lines[0]["message"]["content"] = f"Question {i} of a batch of runs."
        assert import_files(memory_repo, [write(tmp_path / f"{sid}.jsonl", lines)]).refused == []
    parsed: list[str] = []
    real = tf.parse_meta
    monkeypatch.setattr(
        tf, "parse_meta", lambda text, where: parsed.append(where) or real(text, where)
    )
    old, new = logs(tmp_path, copies_keep_old_id=False)
    assert import_files(memory_repo, [old]).refused == []
    assert not any("-1111-" in where for where in parsed)  # none of the six was read whole
    assert import_files(memory_repo, [new]).refused == []
    assert said(filed(memory_repo)[NEW]) == list(EXCHANGES[2])  # the copy found all the same


def test_a_session_resumes_only_what_its_log_holds_before_it(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A session of a log whose first line goes on from a line of another session, earlier
    in the same log, resumes that session; a first line that names a later line (a log put
    together by hand, two sessions naming each other) resumes nothing: no two sessions
    resume each other."""
    old_lines = lines_of(OLD, 0, 1)
    new_lines = lines_of(NEW, 1, 2)  # its first line goes on from OLD's answer, a0
    old_lines[0]["parentUuid"] = "a1"  # and OLD's first names NEW's answer, further down
    log = write(tmp_path / "both.jsonl", [*old_lines, *new_lines])
    assert import_files(memory_repo, [log]).refused == []
    sessions = filed(memory_repo)
    assert said(sessions[OLD]) == list(EXCHANGES[0]) and said(sessions[NEW]) == list(EXCHANGES[1])
    assert sessions[NEW][0].meta.resumes == OLD
    assert sessions[OLD][0].meta.resumes is None


def test_a_session_resumes_none_that_its_log_files_nothing_of(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A first line that goes on from a line that makes no turn (here Claude Code's
    caveat before a local command, under another session id) names no session that
    `resumes:` could point at: none is filed from the log."""
    caveat = {
        "type": "user",
        "sessionId": OLD,
        "uuid": "a0",
        "isMeta": True,
        "timestamp": "2026-04-01T10:00:00.000Z",
        "message": {
            "role": "user",
            "content": "<local-command-caveat>Caveat</local-command-caveat>",
        },
    }
    log = write(tmp_path / "new.jsonl", [caveat, *lines_of(NEW, 1, 2)])
    assert import_files(memory_repo, [log]).refused == []
    sessions = filed(memory_repo)
    assert OLD not in sessions and said(sessions[NEW]) == list(EXCHANGES[1])
    assert sessions[NEW][0].meta.resumes is None
