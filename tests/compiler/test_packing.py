"""The context compiler's P3 against a real memory repo (transcripts written by the format's
renderer, committed through the hooks, a real SQLite index): the budget is filled with
whole chunks, overlapping chunks merge, archive/ and topics/ stay out, every dated item
carries its date, a superseded entry never comes in as current, and `compile --batch`
gives per line what `compile --json` gives per message."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from autopoiesis.cli import app
from autopoiesis.compiler import ContextCompiler, HistoryMessage
from autopoiesis.compiler.packing import GAP
from autopoiesis.core.paths import MEMORY_FILE, MemoryRepo
from autopoiesis.core.text import count_tokens
from autopoiesis.formats import transcript as tf
from autopoiesis.index import SearchIndex
from autopoiesis.testing.samples import closed_transcript, write_closed_transcript
from tests.conftest import BuiltRepo

NOW = datetime(2026, 3, 20, 12, tzinfo=UTC)
SUBJECTS = [
    "the billing service",
    "the search index",
    "the mobile app",
    "the data warehouse",
    "the release train",
    "the on-call rota",
    "the design system",
    "the payments API",
]
PEOPLE = ["Lena", "Omar", "Priya", "Jonas"]
DAY_RE = re.compile(r"^\[\d{4}-\d\d-\d\d, [A-Z][a-z]+day\]$")
TURN_RE = re.compile(r"^\d\d:\d\d [^:]+: ")
EARLIER_RE = re.compile(r"^\[earlier; restated \d{4}-\d\d-\d\d \d\d:\d\d\] ")


def session(n: int, started: datetime) -> tuple[str, str, list[tuple[str, str, str | None, str]]]:
    """(session id, relative path, turns) of a 12-turn session about SUBJECTS[n]."""
    subject = SUBJECTS[n % len(SUBJECTS)]
    person = PEOPLE[n % len(PEOPLE)]
    lines = [
        f"Let's go over {subject} today.",
        f"Sure. What is the state of {subject}?",
        f"{person} says the latency of {subject} doubled since the last deploy.",
        "Do we know why it doubled?",
        f"The cache in front of {subject} was switched off by mistake in change {100 + n}.",
        "Then turn the cache back on and watch the graphs.",
        f"Done: the cache for {subject} is on again, latency is back to normal.",
        f"Good. Write down that {subject} needs an alert on cache misses.",
        f"Noted: alert on cache misses for {subject}.",
        f"Also, {person} asked whether {subject} can move to the new cluster in April.",
        "Tell them yes, after the audit.",
        f"I told {person}: {subject} moves after the audit.",
    ]
    sid = f"ses_b{n:02d}"
    turns = [
        (
            (started + timedelta(minutes=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "user" if k % 2 == 0 else "agent",
            person if k % 2 == 0 else None,
            text,
        )
        for k, text in enumerate(lines)
    ]
    rel = tf.transcript_relpath(sid, started, f"going-over-session-{n}")
    return sid, rel, turns


@pytest.fixture
def repo(built_repo: BuiltRepo, commit_all) -> MemoryRepo:
    """16 sessions over a month, committed and indexed (built once, copied per test)."""

    def build(repo: MemoryRepo) -> None:
        start = datetime(2026, 2, 1, 9, tzinfo=UTC)
        for n in range(16):
            started = start + timedelta(days=2 * n, hours=n % 5)
            sid, rel, turns = session(n, started)
            path = repo.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            ended = (started + timedelta(minutes=len(turns))).strftime("%Y-%m-%dT%H:%M:%SZ")
            path.write_text(
                closed_transcript(sid, f"Session {n}", turns, started=turns[0][0], ended=ended),
                encoding="utf-8",
            )
        commit_all(repo, "conversation: sessions")
        with SearchIndex(repo) as idx:
            idx.rebuild_full()

    return built_repo("sixteen-indexed-sessions", build)[0]


def compile_(repo: MemoryRepo, message: str, **kw):
    with ContextCompiler(repo) as c:
        return c.compile(message, now=NOW, today=NOW.date(), **kw)


def p3(res) -> list:
    return [s for s in res.sections if s.priority == 3 and s.included]


def transcript_turn_texts(repo: MemoryRepo) -> dict[str, list[str]]:
    out = {}
    for p in repo.iter_markdown("raw/conversations"):
        t = tf.parse(p.read_text(encoding="utf-8"))
        out[repo.rel(p)] = [turn.text for turn in t.turns]
    return out


def test_budget_is_filled_with_no_fixed_number_of_hits(repo: MemoryRepo) -> None:
    question = "Why did the latency of the billing service double?"
    for budget in (1200, 2048, 3000, 4000):
        res = compile_(repo, question, budget=budget)
        assert res.total_tokens == count_tokens(res.prompt) <= budget
        # no session history: P3 takes all that is left, down to the last turn that fits
        assert res.total_tokens >= budget - 60, (budget, res.total_tokens)
        # a session that answers comes first: 0 or 8, the two about the billing service
        # (the same words, so which of them ranks first is a tie the vectors' rounding breaks)
        assert p3(res)[0].path.endswith(("going-over-session-0.md", "going-over-session-8.md"))
    # every session speaks of latency: with room for all, all of them come in, whole
    everything = compile_(repo, question, budget=20000)
    turns = transcript_turn_texts(repo)
    assert {s.path for s in p3(everything)} == set(turns)
    assert all(
        len(s.spans) == 1 and s.content.count("\n") == len(turns[s.path]) for s in p3(everything)
    )
    assert everything.total_tokens < 20000


def test_history_keeps_its_share(repo: MemoryRepo) -> None:
    history = [
        HistoryMessage(
            "user" if i % 2 == 0 else "agent",
            f"turn {i}: " + "we talked about lunch " * 12,
            f"h{i}",
        )
        for i in range(80)
    ]
    res = compile_(
        repo,
        "Why did the latency of the billing service double?",
        budget=4096,
        session_history=history,
    )
    hist = sum(s.tokens for s in res.sections if s.priority == 4 and s.included)
    assert hist >= 0.25 * 4096 - 100  # history_share: 0.25
    assert p3(res)
    assert res.total_tokens >= 4096 - 120
    short = compile_(
        repo,
        "Why did the latency of the billing service double?",
        budget=4096,
        session_history=history[:2],
    )
    assert short.dropped_history == 0
    assert short.total_tokens >= 4096 - 120  # a short session leaves the rest of its share to P3


def test_items_are_whole_turns_with_their_dates(repo: MemoryRepo) -> None:
    res = compile_(repo, "Who asked about moving to the new cluster in April?", budget=6000)
    turns = transcript_turn_texts(repo)
    sections = p3(res)
    assert sections
    assert "\u2026" not in "".join(s.content.replace(GAP, "") for s in sections)  # no cut snippets
    for s in sections:
        lines = s.content.split("\n")
        assert DAY_RE.match(lines[0]), lines[0]  # the first turn is dated
        whole = set(turns[s.path])
        for n, line in enumerate(lines):
            if line == GAP:
                assert DAY_RE.match(lines[n + 1])  # every run opens with its day
                continue
            if DAY_RE.match(line):
                continue
            # a turn a later one restates opens with a mark (compiler/restated.py)
            line = EARLIER_RE.sub("", line)
            assert TURN_RE.match(line), line
            assert TURN_RE.sub("", line) in whole  # the turn's whole text
    # the day is the turn's own: session 9 started on 2026-02-19
    s9 = next(s for s in sections if s.path.endswith("going-over-session-9.md"))
    assert s9.content.startswith("[2026-02-19, Thursday]")


def test_overlapping_chunks_of_a_transcript_merge_into_one_section(repo: MemoryRepo) -> None:
    res = compile_(repo, "cache latency alert audit cluster deploy billing service", budget=8192)
    paths = [s.path for s in p3(res)]
    assert len(paths) == len(set(paths))  # one section a file
    for s in p3(res):
        spans = list(s.spans)
        assert spans == sorted(spans)
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))  # runs neither overlap nor touch
        assert s.label == f"knowledge:{s.path}:" + ",".join(f"{a}-{b}" for a, b in spans)
        assert s.content.count(GAP) == len(spans) - 1
    merged = [s for s in p3(res) if "hits" in s.reason]
    assert merged  # several hits of one session became one section


def test_archive_stays_out_unless_asked(repo: MemoryRepo) -> None:
    old = repo.root / "archive" / "journal" / "2025-01-05.md"
    old.parent.mkdir(parents=True, exist_ok=True)
    old.write_text("# 2025-01-05\n\n- The zeppelin hangar lease ends in June.\n", encoding="utf-8")
    with SearchIndex(repo) as idx:
        idx.catch_up()
    res = compile_(repo, "When does the zeppelin hangar lease end?", budget=4096)
    assert "zeppelin" not in res.prompt
    assert not any(s.path and s.path.startswith("archive/") for s in res.sections)
    asked = compile_(
        repo, "When does the zeppelin hangar lease end?", budget=4096, include_archive=True
    )
    assert "The zeppelin hangar lease ends in June." in asked.prompt


def test_journal_lines_carry_their_date(repo: MemoryRepo) -> None:
    j = repo.knowledge_dir / "journal" / "2026-02-03.md"
    j.write_text(
        "---\ntype: journal\ndate: 2026-02-03\n---\n\n## 2026-02-03\n### ops\n- filler line\n\n"
        "### hangar\n- The zeppelin hangar got a new roof.\n",
        encoding="utf-8",
    )
    with SearchIndex(repo) as idx:
        idx.catch_up()
    res = compile_(repo, "zeppelin hangar roof", budget=4096)
    sec = next(s for s in p3(res) if s.path == "knowledge/journal/2026-02-03.md")
    assert "The zeppelin hangar got a new roof." in sec.content
    assert "2026-02-03" in sec.content


def test_a_superseded_entry_is_never_included_as_current(repo: MemoryRepo) -> None:
    old = (
        "- ~~2026-02-01: The pooler is PgBouncer in transaction mode (source: raw/x.md @ 2026-02-01T09:00Z)~~ "
        "{id: 20260201-0900-aaaaaa} #superseded-by:20260210-0900-bbbbbb"
    )
    new = (
        "- 2026-02-10: The pooler is HikariCP instead of PgBouncer (source: raw/y.md @ 2026-02-10T09:00Z) "
        "{id: 20260210-0900-bbbbbb}"
    )
    (repo.root / MEMORY_FILE).write_text(
        f"# Core Memory\n\n## Key Decisions\n{old}\n{new}\n", encoding="utf-8"
    )
    # the reference file's own entries (MEMORY.md's entry, shown above, is not shown again)
    mine = new.replace("bbbbbb", "cccccc")
    ref = repo.knowledge_dir / "reference" / "database.md"
    ref.write_text(
        f"# Database\n\n## Pooling\n{old.replace('bbbbbb', 'cccccc')}\n"
        f"- ~~We run PgBouncer~~ #superseded-by:20260210-0900-cccccc\n{mine}\n",
        encoding="utf-8",
    )
    with SearchIndex(repo) as idx:
        idx.catch_up()
    res = compile_(repo, "Which connection pooler do we use, PgBouncer?", budget=4096)
    assert "HikariCP" in res.prompt
    assert "transaction mode" not in res.prompt
    assert "We run PgBouncer" not in res.prompt
    assert any(s.path == "knowledge/reference/database.md" for s in p3(res))
    shared = compile_(
        repo, "Which connection pooler do we use, PgBouncer?", budget=4096, shared=True
    )
    assert "transaction mode" not in shared.prompt


def test_a_generic_topic_does_not_displace_the_answer(repo: MemoryRepo) -> None:
    topic = repo.root / "topics" / "status-updates.md"
    topic.write_text(
        "---\ntype: topic\ndescription: status of things, latency, deploys, cache, service, today\n"
        "triggers:\n  - type: keyword\n    match: [zzzunused]\n---\n# Status updates\n\n## Instructions\n"
        + "Report the status of the service, its latency, the deploy and the cache today.\n"
        * 6,
        encoding="utf-8",
    )
    with SearchIndex(repo) as idx:
        idx.catch_up()
    # the topic file is new, the sessions weeks old: a tight budget still takes the session
    res = compile_(
        repo,
        "What is the status of the latency and the cache of the payments API service?",
        budget=900,
    )
    got = p3(res)
    assert got
    assert "payments API" in got[0].content
    assert not any(s.path == "topics/status-updates.md" for s in res.sections)


@pytest.mark.slow
def test_compile_batch_gives_per_line_what_compile_json_gives(
    repo: MemoryRepo, tmp_path: Path
) -> None:
    runner = CliRunner()
    messages = [
        "Why did the latency of the billing service double?",
        "Who moves to the new cluster in April?",
        "can you review the PR for the search index?",
    ]
    batch = tmp_path / "messages.txt"
    batch.write_text(
        "\n".join([messages[0], json.dumps(messages[1]), json.dumps({"message": messages[2]})])
        + "\n",
        encoding="utf-8",
    )
    root = str(repo.root)
    out = runner.invoke(
        app,
        ["-C", root, "compile", "--batch", str(batch), "--json", "--dry-run", "--budget", "3000"],
    )
    assert out.exit_code == 0, out.output
    lines = out.output.strip().split("\n")
    assert len(lines) == 3
    for line, message in zip(lines, messages):
        one = runner.invoke(
            app, ["-C", root, "compile", message, "--json", "--dry-run", "--budget", "3000"]
        )
        assert one.exit_code == 0, one.output
        assert json.loads(line) == json.loads(one.output)
    assert any(a["topic"] == "github-pr-review" for a in json.loads(lines[2])["activations"])
    # without --dry-run the usage counts grow line by line, exactly as separate compiles do
    sequential = []
    for message in messages:
        one = runner.invoke(app, ["-C", root, "compile", message, "--json"])
        sequential.append(json.loads(one.output))
    (repo.state_dir / "compiler" / "inclusions.json").unlink()
    batched = runner.invoke(app, ["-C", root, "compile", "--batch", str(batch), "--json"])
    strip = _without_decision_ids
    assert [strip(json.loads(x)) for x in batched.output.strip().split("\n")] == [
        strip(x) for x in sequential
    ]


def _without_decision_ids(data: dict) -> dict:
    for a in data.get("activations", []):
        a.pop("decision_id", None)
    return data


def test_compile_batch_refuses_bad_input_clearly(repo: MemoryRepo, tmp_path: Path) -> None:
    runner = CliRunner()
    root = str(repo.root)
    assert (
        runner.invoke(
            app, ["-C", root, "compile", "--batch", str(tmp_path / "nope.txt"), "--json"]
        ).exit_code
        == 2
    )
    folder = runner.invoke(app, ["-C", root, "compile", "hello", "--session", str(tmp_path)])
    assert folder.exit_code == 2 and f"--session {tmp_path}: not a file." in folder.output
    f = tmp_path / "m.txt"
    f.write_bytes(b'first message\n\n{"message": 5}\nlast \xff message\n')
    out = runner.invoke(app, ["-C", root, "compile", "--batch", str(f), "--json", "--dry-run"])
    assert out.exit_code == 1
    rows = [json.loads(x) for x in out.output.strip().split("\n")]
    assert len(rows) == 4  # one line out for every line in, errors included
    assert "prompt" in rows[0] and "prompt" in rows[3]
    assert rows[1]["line"] == 2 and "expected a message" in rows[1]["error"]
    assert rows[2]["line"] == 3
    no_json = runner.invoke(app, ["-C", root, "compile", "--batch", str(f)])
    assert no_json.exit_code == 2


def test_turn_lines_and_locate_give_what_packing_builds_on(repo: MemoryRepo) -> None:
    for p in repo.iter_markdown("raw/conversations"):
        text = p.read_text(encoding="utf-8")
        spans = tf.turn_lines(text)
        lines = text.split("\n")
        assert len(spans) == len(tf.parse(text).turns) == 12
        assert all(tf.HEADER_RE.match(lines[a - 1]) and lines[b - 1].strip() for a, b in spans)
        assert all(b < c for (_, b), (c, _) in zip(spans, spans[1:]))
    with SearchIndex(repo) as idx:
        hits = idx.locate("cache latency alert audit cluster deploy", 200, fresh=False)
        capped = idx.search(
            "cache latency alert audit cluster deploy", 200, fresh=False, per_file=1
        )
    per_file: dict[str, list[tuple[int, int]]] = {}
    for h in hits:
        per_file.setdefault(h.path, []).append((h.start_line, h.end_line))
    assert (
        max(len(v) for v in per_file.values())
        > 1
        >= max(sum(1 for c in capped if c.path == p) for p in per_file)
    )
    assert {h.path for h in hits} == {c.path for c in capped}
    for spans in per_file.values():
        spans.sort()
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))  # never two overlapping chunks


def test_a_new_compiler_reuses_parsed_files_until_one_is_replaced(repo: MemoryRepo) -> None:
    """Parsed files are shared by the compilers of a process (the daemon makes one a call);
    a file replaced with the same size and mtime (every writer here replaces: a new inode)
    is parsed again, so no compile packs what a file used to say."""
    import os

    from autopoiesis.compiler import scored as compile_mod

    ref = repo.knowledge_dir / "reference" / "pooler.md"
    ref.write_text("# Pooler\n\n## Choice\n- The connection pooler is Odyssey.\n", encoding="utf-8")
    with SearchIndex(repo) as idx:
        idx.catch_up()
    first = compile_(repo, "Which connection pooler do we use?", budget=4096)
    assert "Odyssey" in first.prompt
    cached = compile_mod._SOURCES[str(ref)]
    again = compile_(repo, "Which connection pooler do we use?", budget=4096)
    assert again.prompt == first.prompt and compile_mod._SOURCES[str(ref)] is cached  # parsed once
    st = ref.stat()
    tmp = ref.with_name("pooler.md.tmp")
    tmp.write_text("# Pooler\n\n## Choice\n- The connection pooler is Pgpool2.\n", encoding="utf-8")
    assert tmp.stat().st_size == st.st_size
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, ref)
    with SearchIndex(repo) as idx:
        idx.catch_up()
    after = compile_(repo, "Which connection pooler do we use?", budget=4096)
    assert "Pgpool2" in after.prompt and "Odyssey" not in after.prompt


def test_the_shared_parsed_files_stay_within_their_byte_budget(
    repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autopoiesis.compiler import scored as compile_mod

    monkeypatch.setattr(compile_mod, "_SOURCES", {})
    monkeypatch.setattr(compile_mod, "_SOURCE_BYTES", [0])
    monkeypatch.setattr(compile_mod, "SOURCE_CACHE_BYTES", 16000)
    compile_(repo, "the billing service latency cache", budget=8192)
    compile_(repo, "the payments API audit cluster", budget=8192)
    sizes = [key[2] for key, _ in compile_mod._SOURCES.values()]
    assert sizes and sum(sizes) == compile_mod._SOURCE_BYTES[0] <= 16000
    assert all(size <= 2000 for size in sizes)


def test_a_long_context_unit_waits_behind_a_weaker_hit() -> None:
    """A hit's neighbour that is a long unit (a coding agent's tool output beside the
    user's one-line instruction) comes after the next hits: it costs what several would."""
    from autopoiesis.compiler.packing import (
        CONTEXT_DECAY,
        CONTEXT_UNIT_CHARS,
        Hit,
        Source,
        Unit,
        pack,
    )

    short_a = Unit(1, 1, "10:00 user: use bun, not node, for the build scripts")
    long_b = Unit(2, 40, "10:01 agent: " + "node scripts/build.js step finished. " * 90)
    other = Unit(1, 1, "11:00 user: the release bundle is built with bun now")
    sources = {
        "raw/a.md": Source("raw/a.md", (short_a, long_b), None, True),
        "raw/b.md": Source("raw/b.md", (other,), None, True),
    }
    hits = [Hit("raw/a.md", 1, 1, 1.0), Hit("raw/b.md", 1, 1, 0.8)]
    assert 0.8 < CONTEXT_DECAY and len(long_b.text) > 4 * CONTEXT_UNIT_CHARS

    def cost(label: str, parts) -> int:
        return count_tokens(label + "\n" + "\n".join(parts))

    need_long = cost("knowledge:raw/a.md:1-40", [short_a.text, long_b.text])
    packed = pack(hits, sources.get, need_long + 5, cost)
    assert [f.path for f in packed.files] == ["raw/a.md", "raw/b.md"]  # the weaker hit is in
    assert packed.files[0].chosen == {0}  # and the long unit, which no longer fits, is not


@pytest.mark.parametrize("asked_by", ["user", "agent"])
def test_the_reply_to_a_users_turn_waits_less_than_its_length_says(asked_by: str) -> None:
    """The agent's turn after a user's is the reply to it (the user reports a warning,
    the agent says why and fixes it): however long, it comes before a weaker hit. The same
    long turn after an agent's turn is context like any other, and waits behind it."""
    from autopoiesis.compiler.packing import (
        CONTEXT_DECAY,
        CONTEXT_UNIT_CHARS,
        REPLY_NEARNESS,
        Hit,
        Source,
        Unit,
        pack,
    )

    asked = Unit(
        1, 1, f"13:29 {asked_by}: Lint: Restore cache failed, go.sum not found", role=asked_by
    )
    reply = Unit(
        2,
        40,
        "13:29 agent: setup-go looks for go.sum at the repository root; "
        + "> [tool:Read] ci.yml → name: CI on: push: branches: [dev, main] jobs: lint: " * 30,
        role="agent",
    )
    other = Unit(1, 1, "11:00 user: the lint job restores its cache from go.sum", role="user")
    sources = {
        "raw/a.md": Source("raw/a.md", (asked, reply), None, True),
        "raw/b.md": Source("raw/b.md", (other,), None, True),
    }
    weaker = 0.3
    assert CONTEXT_DECAY * CONTEXT_UNIT_CHARS / len(reply.text) < weaker
    assert CONTEXT_DECAY * REPLY_NEARNESS > weaker
    hits = [Hit("raw/a.md", 1, 1, 1.0), Hit("raw/b.md", 1, 1, weaker)]

    def cost(label: str, parts) -> int:
        return count_tokens(label + "\n" + "\n".join(parts))

    room = cost("knowledge:raw/a.md:1-40", [asked.text, reply.text]) + 5
    packed = pack(hits, sources.get, room, cost)
    if asked_by == "user":  # the reply came first, and the weaker hit no longer fits
        assert [(f.path, f.chosen) for f in packed.files] == [("raw/a.md", {0, 1})]
    else:
        assert [(f.path, f.chosen) for f in packed.files] == [
            ("raw/a.md", {0}),
            ("raw/b.md", {0}),
        ]


def test_a_transcripts_units_carry_their_speakers_role() -> None:
    """The reply rule reads each unit's role from the transcript's turn headings, a named
    speaker's too ("user (Ana)"), and a long reply's pieces all carry it."""
    from autopoiesis.compiler.packing import transcript_source

    long_reply = "\n\n".join(
        f"Step {n}: the cache path is specstory-cli/go.sum." * 8 for n in range(12)
    )
    text = closed_transcript(
        "roles",
        "Roles",
        [
            ("2026-03-01T23:58:00Z", "user", "Ana", "Lint warns: Restore cache failed"),
            ("2026-03-01T23:59:00Z", "agent", None, long_reply),
            ("2026-03-02T00:01:00Z", "system", None, "session resumed"),
        ],
    )
    units = transcript_source("raw/conversations/2026/03/01/2358-roles.md", text).units
    roles = [u.role for u in units]
    assert roles[0] == "user" and roles[-1] == "system"
    assert len(roles) > 3 and set(roles[1:-1]) == {"agent"}  # the reply in several pieces


@pytest.mark.parametrize("streamed", [False, True])
def test_a_hit_whose_turns_do_not_fit_comes_in_as_its_own_turn(streamed: bool) -> None:
    """A chunk is a turn with the turns around it; when all of them do not fit what is
    left, the turn the chunk is about comes in alone, whole: the turn of the hit's minute,
    or, when a harness streamed the exchange in one minute and the minute tells none apart,
    the hit's own lines (the index's own_start..own_end)."""
    from datetime import date

    from autopoiesis.compiler.packing import Hit, Source, Unit, pack

    day = date(2026, 3, 2)
    minutes = ["10:00"] * 3 if streamed else ["10:00", "10:01", "10:02"]
    said = (
        "user: " + "what about the cache? " * 20,
        "agent: the cache is off since change 104",
        "user: " + "turn it back on then, and watch it " * 20,
    )
    units = tuple(Unit(n + 1, n + 1, f"{minutes[n]} {said[n]}", day, minutes[n]) for n in range(3))
    src = Source("raw/s.md", units, None, True)
    hh, mm = (int(x) for x in minutes[1].split(":"))
    when = datetime(2026, 3, 2, hh, mm, tzinfo=UTC).timestamp()
    hit = Hit("raw/s.md", 1, 3, 1.0, when=when, own=(2, 2) if streamed else None)

    def cost(label: str, parts) -> int:
        return count_tokens(label + "\n" + "\n".join(parts))

    own = cost("knowledge:raw/s.md:2-2", src.parts({1}))
    if streamed:  # the minute alone tells none apart: the hit is left out
        by_minute = pack(
            [Hit("raw/s.md", 1, 3, 1.0, when=when)], {"raw/s.md": src}.get, own + 10, cost
        )
        assert by_minute.files == [] and by_minute.left_out
    packed = pack([hit], {"raw/s.md": src}.get, own + 10, cost)
    assert [f.chosen for f in packed.files] == [{1}] and packed.tokens <= own + 10
    # with room for the whole chunk, the whole chunk
    packed = pack([hit], {"raw/s.md": src}.get, 10_000, cost)
    assert packed.files[0].chosen == {0, 1, 2}


def test_a_streamed_reply_shows_its_first_step_and_those_that_tell() -> None:
    """A reply a harness streamed a message a step is one turn to the index (the hit's
    own lines) and many units here: the context shows its first step and the steps that
    hold a word of the message, not the others between them; all of them when none does,
    or when the word is on most of them."""
    from datetime import date

    from autopoiesis.compiler.packing import Hit, Source, Unit, pack
    from autopoiesis.compiler.standing import stems

    day = date(2026, 3, 2)
    said = [
        "user: why does the checkout test fail?",
        "agent: Let me look at the test first.",
        "agent: > [tool:Read] tests/cart.test.ts",
        "agent: The pgbouncer pool is full: too many clients on port 6432.",
        "agent: > [tool:Bash] npm test -> 12 passed",
    ]
    units = tuple(Unit(n + 1, n + 1, f"10:00 {s}", day, "10:00") for n, s in enumerate(said))
    src = Source("raw/s.md", units, None, True)
    hit = Hit("raw/s.md", 1, 5, 1.0, own=(2, 5))

    def cost(label: str, parts) -> int:
        return count_tokens(label + "\n" + "\n".join(parts))

    def chosen(message: str) -> set[int]:
        focused = src.focused(stems(message))
        return pack([hit], {"raw/s.md": focused}.get, 10_000, cost).files[0].chosen

    told = chosen("which pool was full?")
    # (the step after the last one shown may still come in as context around the hit)
    assert {0, 1, 3} <= told and 2 not in told
    assert chosen("what about the weather in Lisbon?") == {0, 1, 2, 3, 4}
    assert chosen("which test, and which pool?") == {0, 1, 2, 3, 4}  # "test": most steps
    assert pack([hit], {"raw/s.md": src}.get, 10_000, cost).files[0].chosen == {0, 1, 2, 3, 4}


def _long_turn_transcript(repo: MemoryRepo) -> tuple[str, list[str]]:
    """A coding session whose agent turn is 60 lines of build output with one line about
    the cause of a failure; (its path, the lines of that turn)."""
    output = [f"step {n}: compiled module_{n}.ts in {n * 7} ms, no warnings" for n in range(60)]
    output[37] = "error: PgBouncer refused the connection: too many clients on port 6432"
    turns = [
        ("2026-03-02T10:00:00Z", "user", None, "run the build and tell me why it failed"),
        ("2026-03-02T10:01:00Z", "agent", None, "Ran the build.\n" + "\n".join(output)),
        ("2026-03-02T10:02:00Z", "user", None, "thanks, raise the pool size then"),
    ]
    rel = write_closed_transcript(
        repo.root,
        "ses_long",
        "Build failure",
        "build-failure",
        turns,
        filed_at=NOW - timedelta(days=1),
    )
    return rel, output


def test_a_long_turn_shows_the_lines_of_the_message_and_names_only_those(tmp_path) -> None:
    """A turn longer than FOCUS_CHARS is shown as its first line and the lines that hold a
    word of the message, each run left out marked; the spans the context claims are those
    lines, so a figure never credits a line it does not show. Short turns, a turn whose
    every line matches, and one where no line does are shown whole. A word of the message
    on most of the turn's lines singles none of them out."""
    from autopoiesis.compiler.packing import FOCUS_CHARS, source_of
    from autopoiesis.compiler.standing import stems

    repo = MemoryRepo(tmp_path)
    rel, output = _long_turn_transcript(repo)
    text = (repo.root / rel).read_text(encoding="utf-8")
    lines = text.split("\n")
    src = source_of(rel, text)
    agent = next(i for i, u in enumerate(src.units) if "agent:" in u.text)
    assert len(src.units[agent].text) > FOCUS_CHARS

    focused = src.focused(stems("why did pgbouncer refuse the connection?"))
    shown, spans = focused.shown(agent)
    assert shown.split("\n") == [
        "10:01 agent: Ran the build.",
        "  " + GAP,
        "  " + output[37],
        "  " + GAP,
    ]
    # a word on most of its lines ("compiled") tells none of them apart
    assert src.focused(stems("pgbouncer refused what was compiled?")).shown(agent)[0] == shown
    held = [lines[n - 1] for a, b in spans for n in range(a, b + 1)]
    assert output[37] in held and output[36] not in held and output[38] not in held
    assert "Ran the build." in held  # the header and first line: where the turn begins
    # the section's text and its spans agree, its label names the turn's lines
    assert focused.render({agent}) == "[2026-03-02, Monday]\n" + shown
    assert focused.spans({agent}) == spans
    assert focused.runs_spans({agent}) == ((src.units[agent].start, src.units[agent].end),)
    # the cached source itself is untouched; short turns are always whole
    assert src.shown(agent)[0] == src.units[agent].text
    user = next(i for i, u in enumerate(src.units) if "raise the pool" in u.text)
    u = src.units[user]
    assert focused.shown(user) == (u.text, ((u.start, u.end),))
    # every line holds a word of the message, or none does: nothing to save, all of it
    for message in ("compiled module step warnings", "what about the weather in Lisbon"):
        assert src.focused(stems(message)).shown(agent)[0] == src.units[agent].text


def test_the_line_that_holds_the_most_words_of_the_message_is_shown(tmp_path) -> None:
    """A pasted PR about cloud sync flags has each word of the message on many of its
    lines, each too common to single one out; the PR's number is on one line. The line
    that holds the message's words together (the PR's description) is shown beside it; a
    tie of many lines holding as many is no such line."""
    from autopoiesis.compiler.packing import source_of
    from autopoiesis.compiler.standing import stems

    body = [f"+var cloudOption{n} bool // cloud option {n}" for n in range(20)]
    body += [f"// sync step {n} of the upload" for n in range(20)]
    body += [f"flag {n} parsed from the command line" for n in range(20)]
    body[5] = "number: 151"
    body[37] = "Add a `--only-cloud-sync` flag used to skip local save of md files."
    turns = [
        ("2026-03-02T10:00:00Z", "user", None, "## Context\n" + "\n".join(body)),
        ("2026-03-02T10:01:00Z", "agent", None, "Reviewing PR 151."),
    ]
    rel = write_closed_transcript(
        tmp_path, "ses_pr", "PR review", "pr-review", turns, filed_at=NOW - timedelta(days=1)
    )
    src = source_of(rel, (tmp_path / rel).read_text(encoding="utf-8"))
    pasted = next(i for i, u in enumerate(src.units) if "user:" in u.text)
    shown = src.focused(stems("What does the --only-cloud-sync flag of PR #151 do?"))
    text = shown.shown(pasted)[0]
    assert "number: 151" in text and body[37] in text
    assert "cloud option 3" not in text and "sync step 3 " not in text
    # two words of the message on every line of a third of the turn: none singled out
    tied = src.focused(stems("Which cloud option of PR 151?")).shown(pasted)[0]
    assert "number: 151" in tied and "cloud option 3" not in tied


def test_a_small_budget_takes_the_answering_line_of_a_long_turn(repo: MemoryRepo) -> None:
    """Through the compiler: at a budget the whole turn would not fit, the line that
    answers comes in, and the section's spans hold it and not the lines left out."""
    rel, output = _long_turn_transcript(repo)
    with SearchIndex(repo) as idx:
        idx.catch_up()
    res = compile_(repo, "Why did PgBouncer refuse the connection?", budget=1000)
    section = next(s for s in p3(res) if s.path == rel)
    assert output[37] in section.content and GAP in section.content
    assert output[10] not in section.content
    lines = (repo.root / rel).read_text(encoding="utf-8").split("\n")
    held = {lines[n - 1] for a, b in section.spans for n in range(a, b + 1)}
    assert output[37] in held and output[10] not in held
    assert res.total_tokens <= 1000


def test_once_the_budget_is_full_a_hit_of_an_unread_file_is_left_out_unread() -> None:
    """A file's section costs at least its label: when less than that is left, a hit in a
    file not read yet is left out at that floor without reading the file (a coding
    session's transcript is hundreds of kilobytes); one in a file read already still
    gets its chance."""
    from autopoiesis.compiler.packing import Hit, Source, Unit, pack, section_label
    from autopoiesis.compiler.plan import Plan

    cost = Plan(10_000).cost_parts
    first = Source("raw/a.md", (Unit(1, 1, "10:00 user: use bun"), Unit(2, 2, "10:01 agent: ok")))
    sources = {"raw/a.md": first, "raw/b.md": Source("raw/b.md", (Unit(1, 1, "x"),))}
    asked: list[str] = []

    def read(path: str) -> Source | None:
        asked.append(path)
        return sources[path]

    whole_a = cost("knowledge:raw/a.md:1-2", first.parts({0, 1}))
    floor_b = cost(section_label("raw/b.md", ""), ())
    hits = [Hit("raw/a.md", 1, 1, 1.0), Hit("raw/b.md", 1, 1, 0.9), Hit("raw/a.md", 2, 2, 0.8)]
    cap = cost("knowledge:raw/a.md:1-1", first.parts({0})) + floor_b - 1
    packed = pack(hits, read, cap, cost)
    assert asked == ["raw/a.md"]  # b.md is never read
    assert [(h.path, tokens, exact) for h, tokens, exact in packed.left_out] == [
        ("raw/b.md", floor_b, False)
    ]
    # with room for b.md's label and line, it is read and packed as before
    asked.clear()
    packed = pack(hits, read, whole_a + 50, cost)
    assert asked == ["raw/a.md", "raw/b.md"] and [f.path for f in packed.files] == [
        "raw/a.md",
        "raw/b.md",
    ]


@given(
    st.sampled_from(
        [
            "raw/conversations/2026/03/02/s.md",
            "knowledge/notes/x.md",
            "shared/ops/knowledge/runbook.md",
        ]
    ),
    st.lists(st.integers(1, 400), min_size=1, max_size=6, unique=True),
    st.text(max_size=30),
)
def test_the_floor_of_a_file_never_exceeds_what_its_section_costs(
    path: str, lines: list[int], text: str
) -> None:
    from autopoiesis.compiler.packing import Packed, Source, Unit, section_label
    from autopoiesis.compiler.plan import Plan

    cost = Plan(10_000).cost_parts
    units = tuple(Unit(n, n, f"{text} {n}") for n in sorted(lines))
    p = Packed(Source(path, units))
    chosen = set(range(len(units)))
    assert cost(section_label(path, ""), ()) <= cost(p.label(chosen), p.parts(chosen))
