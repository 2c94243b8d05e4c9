"""Search over a coding agent's sessions (real transcripts, committed, a real SQLite index
with sqlite-vec): the user's own words count USER_TURN_FACTOR of their score (only the
unnamed user of an agent session, never a named person of a conversation); a long agent
turn beside a short user turn already shown is still a result of its own; one session
gives up to PER_FILE results."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from autopoiesis.index import SearchIndex
from autopoiesis.index.chunking import SLASH_COMMAND
from autopoiesis.index.query import (
    PARTLY_SHOWN_FACTOR,
    PER_FILE,
    RRF_K,
    USER_TURN_FACTOR,
    mostly_covered,
)
from autopoiesis.testing.samples import closed_transcript

START = datetime(2026, 4, 2, 9, tzinfo=UTC)
TOOL_OUTPUT = "\n".join(
    f"> [tool:exec] npm run build:step{k} → node scripts/build.js finished step {k} of the "
    "release bundle in node 20 with the scripts folder"
    for k in range(24)
)


def _write(repo: MemoryRepo, sid: str, day: int, turns: list[tuple[str, str | None, str]]) -> str:
    started = START + timedelta(days=day)
    timed = [
        ((started + timedelta(minutes=k)).strftime("%Y-%m-%dT%H:%M:%SZ"), role, name, text)
        for k, (role, name, text) in enumerate(turns)
    ]
    rel = tf.transcript_relpath(sid, started, f"session-{sid}")
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        closed_transcript(sid, f"Session {sid}", timed, started=timed[0][0], ended=timed[-1][0]),
        encoding="utf-8",
    )
    return rel


@pytest.fixture
def agent_repo(memory_repo: MemoryRepo, commit_all) -> tuple[MemoryRepo, str, str, str]:
    """An agent session where the user says once what the agent's long turns repeat, a
    conversation between two named people saying the same words, and an agent session
    whose user is named."""
    agent = _write(
        memory_repo,
        "ses_agent",
        0,
        [
            ("user", None, "Build the release bundle."),
            ("agent", None, "Running the build with node.\n" + TOOL_OUTPUT),
            ("user", None, "Use bun, not node, to run the build scripts from now on."),
            ("agent", None, "Understood, switching.\n" + TOOL_OUTPUT.replace("step", "stage")),
            ("user", None, "Thanks."),
        ],
    )
    talk = _write(
        memory_repo,
        "ses_talk",
        1,
        [
            ("user", "Caroline", "Should the build scripts run with bun or node?"),
            ("agent", "Melanie", "Bun, not node, for the build scripts."),
        ],
    )
    named = _write(
        memory_repo,
        "ses_named",
        2,
        [
            ("user", "David", "Deploy the zebra service with docker compose, not helm."),
            ("agent", None, "Deploying the zebra service: " + "helm zebra deploy. " * 40),
        ],
    )
    commit_all(memory_repo, "conversation: three sessions")
    with SearchIndex(memory_repo) as idx:
        idx.rebuild_full()
    return memory_repo, agent, talk, named


@pytest.mark.parametrize("merge", ["rrf", "weighted"])
def test_the_users_words_in_an_agent_session_count_more(agent_repo, merge: str) -> None:
    repo, agent, talk, _ = agent_repo
    with SearchIndex(repo) as idx:
        results = idx.search(
            "run the build scripts with bun or node", 10, explain=True, merge=merge
        )
    by_heading = {}
    for r in results:
        detail = r.explain or {}
        factor = detail["user_turn_factor"] or 1.0
        shipped = (detail["shipped_factor"] or 1.0) * (detail["partly_shown_factor"] or 1.0)
        if merge == "rrf":
            # the merged score is the reciprocal-rank fusion of the two lists, times the
            # factors (a file as the template ships it has its own, test_shipped_files)
            rrf = (1 / (RRF_K + detail["bm25_rank"]) if detail["bm25_rank"] else 0.0) + (
                idx.embedder.rrf_weight / (RRF_K + detail["vector_rank"])
                if detail["vector_rank"]
                else 0.0
            )
            # (a result's score is rounded to six decimals)
            assert r.score == pytest.approx(rrf * factor * shipped, rel=1e-4, abs=5e-7)
        else:  # normalised BM25 and similarity, weighted to at most 1, times the factors
            assert 0 < r.score <= factor * shipped + 1e-9
        by_heading.setdefault((r.path, factor), r)
    # the instruction of the agent session's user: the factor, and the first result
    lines = (repo.root / agent).read_text(encoding="utf-8").splitlines()
    said = next(n for n, line in enumerate(lines, 1) if line.startswith("Use bun, not node"))
    assert results[0].path == agent and results[0].start_line <= said <= results[0].end_line
    assert results[0].explain["user_turn_factor"] == USER_TURN_FACTOR > 1
    # the named people of a conversation: no factor for either of them
    assert (talk, 1.0) in by_heading and (talk, USER_TURN_FACTOR) not in by_heading


def test_a_named_user_of_an_agent_is_the_agents_user(agent_repo) -> None:
    repo, _, _, named = agent_repo
    with SearchIndex(repo) as idx:
        results = idx.search("deploy the zebra service", 10, explain=True)
    mine = [r for r in results if r.path == named]
    lines = (repo.root / named).read_text(encoding="utf-8").splitlines()
    said = next(n for n, line in enumerate(lines, 1) if line.startswith("Deploy the zebra"))
    told = [r for r in mine if r.own_start <= said <= r.own_end]  # his turn's own chunks
    # David spoke to an agent (its turns carry no name): he is the agent's user
    assert told and all(r.explain["user_turn_factor"] == USER_TURN_FACTOR for r in told)


def test_the_user_turns_a_search_looks_up_are_those_a_later_one_keeps(
    agent_repo, commit_all
) -> None:
    """The first search of a process looks up its candidates' flags; the later ones read
    every user turn once and keep them until memory.db changes, by this connection or by
    another process's (here a second SearchIndex indexing a new session)."""
    repo, agent, talk, named = agent_repo

    def flagged_paths(idx: SearchIndex, ids: list[int]) -> set[tuple[str, str | None]]:
        rows = idx.store.conn.execute(
            f"SELECT path, heading FROM chunks WHERE id IN ({','.join('?' * len(ids))})",
            ids,
        )
        return set(rows)

    with SearchIndex(repo) as idx:
        every = [cid for (cid,) in idx.store.conn.execute("SELECT id FROM chunks ORDER BY id")]
        looked_up = idx.query.user_turns(every)
        kept = idx.query.user_turns(every)
        assert looked_up == kept and "user_turns" in idx.store.reusable()
        # the agent session's user and David (an agent's user); never the named people
        assert flagged_paths(idx, kept) == {(agent, "user"), (named, "David (user)")}
        assert not any(path == talk for path, _ in flagged_paths(idx, kept))

        later = _write(
            repo, "ses_later", 3, [("user", None, "Pin bun 1.1."), ("agent", None, "Pinned.")]
        )
        commit_all(repo, "conversation: a later session")
        with SearchIndex(repo) as other:  # another connection writes memory.db
            other.catch_up()
        assert "user_turns" not in idx.store.reusable()  # its commit emptied what was kept
        every = [cid for (cid,) in idx.store.conn.execute("SELECT id FROM chunks ORDER BY id")]
        assert idx.query.user_turns(every) == idx.query.user_turns(every)
        assert (later, "user") in flagged_paths(idx, idx.query.user_turns(every))
        hits = idx.search("pin bun", 5, explain=True)
        assert hits[0].path == later and hits[0].explain["user_turn_factor"] == USER_TURN_FACTOR


def test_a_long_agent_turn_beside_a_user_turn_shown_is_a_result_of_its_own(agent_repo) -> None:
    repo, agent, _, _ = agent_repo
    with SearchIndex(repo) as idx:
        results = idx.search("bun node build scripts release bundle stage", 10)
    mine = [r for r in results if r.path == agent]
    short = [r for r in mine if r.end_line - r.start_line < 3]
    long = [r for r in mine if r.end_line - r.start_line > 20]
    # the user's one line and the agent's tool output after it (whose chunk holds that line
    # too) are both there: the agent's turn adds lines no result showed
    assert short and long
    assert any(
        s.start_line >= lg.start_line and s.end_line <= lg.end_line for s in short for lg in long
    )


def test_a_chunk_is_a_repeat_only_when_a_tenth_of_its_lines_were_shown() -> None:
    assert not mostly_covered(10, 60, [(8, 11)])  # 2 of 51 lines: new lines
    assert mostly_covered(10, 20, [(8, 11)])  # 2 of 11: a repeat
    assert mostly_covered(10, 60, [(10, 20)])
    assert not mostly_covered(10, 60, [])


def test_one_session_gives_up_to_per_file_results(memory_repo: MemoryRepo, commit_all) -> None:
    turns = []
    for k in range(12):
        turns.append(("user", None, f"Check the flaky zebra test number {k} again."))
        turns.append(("agent", None, "\n".join(f"line {n} of an unrelated log" for n in range(40))))
    rel = _write(memory_repo, "ses_long", 0, turns)
    commit_all(memory_repo, "conversation: a long session")
    with SearchIndex(memory_repo) as idx:
        idx.rebuild_full()
        results = idx.search("flaky zebra test", 20, "conversation")
    assert PER_FILE < 12  # the session has twelve matching turns: the cap is what stops
    assert [r.path for r in results] == [rel] * PER_FILE


def test_a_turn_result_names_its_own_turn_inside_its_exchange(
    memory_repo: MemoryRepo, commit_all
) -> None:
    """A harness streams a reply as several messages in the same minute, so the minute
    cannot tell a hit's own turn from its neighbours: the result names its own lines
    (own_start..own_end) inside the exchange it spans; a section names none."""
    started = START.strftime("%Y-%m-%dT%H:%M:%SZ")
    turns = [
        (started, "agent", None, "Checked the scripts folder: " + "three build steps run. " * 20),
        (started, "user", None, "Use bun, not node, to run the release scripts from now on."),
        (started, "agent", None, "Switching the scripts over: " + "step converted. " * 25),
    ]
    rel = tf.transcript_relpath("ses_minute", START, "one-minute")
    path = memory_repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        closed_transcript("ses_minute", "One minute", turns, started=started, ended=started),
        encoding="utf-8",
    )
    note = memory_repo.root / "knowledge" / "procedures" / "release.md"
    note.write_text("# Release\n\nThe release scripts run with bun.\n", encoding="utf-8")
    commit_all(memory_repo, "conversation: a reply streamed in one minute")
    lines = path.read_text(encoding="utf-8").split("\n")
    user_line = next(i for i, line in enumerate(lines, 1) if line.startswith("Use bun"))
    with SearchIndex(memory_repo) as index:
        results = index.search("bun release scripts", limit=10)
    turn = next(r for r in results if r.path == rel and r.heading == "user")
    assert turn.start_line < turn.own_start <= user_line <= turn.own_end < turn.end_line
    assert not any(
        line.startswith(("Checked", "Switching"))
        for line in lines[turn.own_start - 1 : turn.own_end]
    )
    section = next(r for r in results if r.path.endswith("release.md"))
    assert section.own_start is None and section.own_end is None
    assert {"own_start", "own_end"} <= set(turn.to_dict())


def test_a_turn_whose_exchange_is_shown_but_not_itself_comes_later(
    memory_repo: MemoryRepo, commit_all, cli
) -> None:
    """Short turns share their windows: a chunk whose lines a result taken before it mostly
    shows, but whose own turn it does not, is still a result (the turn after a result's
    last is often the one that answers), at PARTLY_SHOWN_FACTOR of its score, so after
    the other sessions' results; the compiler's `locate` skips it, as it adds the turns
    around its hits itself."""
    topics = ["queue", "cache", "index", "backup", "mirror", "ledger", "parser", "router"]
    rel = _write(
        memory_repo,
        "ses_short",
        0,
        [
            ("user" if k % 2 == 0 else "agent", None, f"The walrus {topic} step is done.")
            for k, topic in enumerate(topics)
        ],
    )
    other = _write(
        memory_repo,
        "ses_other",
        1,
        [
            ("user", None, "The walrus step is done."),
            ("agent", None, "Good."),
        ],
    )
    commit_all(memory_repo, "conversation: short turns")
    with SearchIndex(memory_repo) as index:
        results = index.search("walrus step", 10, explain=True)
        located = index.locate("walrus step", 10)
    mine = [r for r in results if r.path == rel]
    partly = [r for r in mine if r.explain["partly_shown_factor"]]
    assert partly and all(r.explain["partly_shown_factor"] == PARTLY_SHOWN_FACTOR for r in partly)
    for r in partly:
        before = mine[: mine.index(r)]
        # its window overlaps a result before it, its own turn lies outside all of them
        assert any(b.start_line <= r.end_line and r.start_line <= b.end_line for b in before)
        assert not any(b.start_line <= r.own_end and r.own_start <= b.end_line for b in before)
    # ranked at its reduced score: after the other session's result, in score order
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert results.index(partly[0]) > [r.path for r in results].index(other)
    # the compiler's locate: no two chunks of a file share lines
    spans: dict[str, list[tuple[int, int]]] = {}
    for r in located:
        assert not any(s <= r.end_line and r.start_line <= e for s, e in spans.get(r.path, []))
        spans.setdefault(r.path, []).append((r.start_line, r.end_line))
    # `search --explain` names the factor
    shown = cli("search", "walrus step", "--explain", repo=memory_repo, check=True).stdout
    assert f"partly_shown={PARTLY_SHOWN_FACTOR}" in shown


def test_a_slash_commands_expansion_is_the_users_turn_but_not_the_user_speaking(
    memory_repo: MemoryRepo, commit_all
) -> None:
    """Claude Code records a slash command the user ran, then the prompt it expands to (a
    PR's description and diff): search heads that turn as a slash command's and gives it
    no user-turn prior; the user's own instruction about the same words keeps it, and a
    command run with nothing expanded is the user's."""
    ran = (
        "<command-message>pr-review</command-message>\n<command-name>/pr-review</command-name>"
        "\n<command-args>166</command-args>"
    )
    expansion = "## Context\n\n- Current pull request: Print markdown to stdout\n\n## Your task"
    rel = _write(
        memory_repo,
        "ses_command",
        0,
        [
            ("user", None, ran),
            ("user", None, expansion + "\n\nReview the markdown printer of this PR."),
            ("agent", None, "Reviewing the markdown printer.\n" + TOOL_OUTPUT),
            ("user", None, "Keep the markdown printer quiet when it writes to stdout."),
            ("agent", None, "Done: the printer writes nothing else to stdout."),
            ("user", None, "<command-name>/clear</command-name>"),
            ("agent", None, "Cleared the markdown printer's notes."),
        ],
    )
    commit_all(memory_repo, "conversation: a slash command")
    with SearchIndex(memory_repo) as idx:
        idx.rebuild_full()
        results = idx.search("markdown printer stdout clear", 10, explain=True)
    mine = [r for r in results if r.path == rel]
    headings = {r.heading for r in mine}
    assert {SLASH_COMMAND, "user"} <= headings
    for r in mine:
        factor = r.explain["user_turn_factor"]
        if r.heading == SLASH_COMMAND:
            assert factor is None
        elif r.heading == "user":
            assert factor == USER_TURN_FACTOR
    lines = (memory_repo.root / rel).read_text(encoding="utf-8").splitlines()
    cleared = next(n for n, line in enumerate(lines, 1) if "/clear" in line)
    assert any(r.heading == "user" and r.own_start <= cleared <= r.own_end for r in mine)


def test_a_users_turn_is_read_without_the_harness_bookkeeping(memory_repo: MemoryRepo) -> None:
    """A Claude Code session exported to Markdown keeps what its own log marks as
    bookkeeping in the user's text: the record of `/exit`, its output ("See ya!"), the
    caveat before a local command's output. Search and the compiled context read the
    user's turn without it (as Claude Code's log is imported), line for line; a turn of
    nothing else shows nothing, and what the user wrote beside it stays."""
    from autopoiesis.compiler.packing import transcript_source
    from autopoiesis.index.chunking import chunk_file

    exited = (
        "<command-name>/exit</command-name>\n            <command-message>exit</command-message>"
        "\n            <command-args></command-args>"
    )
    caveat = (
        "<local-command-caveat>Caveat: The messages below were generated by the user while "
        "running local commands. DO NOT respond to these messages.</local-command-caveat>"
    )
    rel = _write(
        memory_repo,
        "ses_bookkeeping",
        0,
        [
            ("user", None, "Fix the walrus printer."),
            ("agent", None, "Fixed the walrus printer."),
            ("user", None, exited),
            ("user", None, "<local-command-stdout>See ya!</local-command-stdout>"),
            ("user", None, caveat + "\nAnd keep the walrus printer quiet."),
        ],
    )
    text = (memory_repo.root / rel).read_text(encoding="utf-8")
    chunks = chunk_file(rel, text).chunks
    read = "\n".join(c.text for c in chunks)
    for bookkeeping in ("command-name", "/exit", "See ya", "Caveat", "local-command"):
        assert bookkeeping not in read, bookkeeping
    assert "And keep the walrus printer quiet." in read
    lines = text.splitlines()
    kept = next(n for n, line in enumerate(lines, 1) if line.startswith("And keep the walrus"))
    assert any(c.own_start <= kept <= c.own_end for c in chunks)  # line numbers still hold

    source = transcript_source(rel, text)
    assert source is not None
    shown = [u.text for u in source.units if u.text]
    assert not any("See ya" in u or "command" in u for u in shown), shown
    assert any(u.endswith("user: And keep the walrus printer quiet.") for u in shown), shown


def test_a_compacted_sessions_summary_is_not_the_user_speaking(
    memory_repo: MemoryRepo, commit_all
) -> None:
    """A Markdown export of a Claude Code session keeps the summary the harness sends to
    carry a compacted session on as the user's message: search heads it as the harness's
    and gives it no user-turn prior; the user's own words about the same thing keep it."""
    from autopoiesis.index.chunking import FROM_HARNESS

    summary = (
        "This session is being continued from a previous conversation that ran out of "
        "context. The conversation is summarized below:\nThe user wants the walrus importer "
        "to retry on timeouts. Key decisions: retry the walrus importer three times."
    )
    rel = _write(
        memory_repo,
        "ses_compacted",
        0,
        [
            ("user", None, "Make the walrus importer retry on timeouts."),
            ("agent", None, "Added a retry to the walrus importer.\n" + TOOL_OUTPUT),
            ("user", None, summary),
            ("agent", None, "Continuing: the walrus importer retries now.\n" + TOOL_OUTPUT),
        ],
    )
    commit_all(memory_repo, "conversation: a compacted session")
    with SearchIndex(memory_repo) as idx:
        idx.rebuild_full()
        headings = [
            h
            for (h,) in idx.store.conn.execute(
                "SELECT heading FROM chunks WHERE path = ? ORDER BY start_line", (rel,)
            )
        ]
        results = idx.search("walrus importer retry timeouts", 10, explain=True)
    # (a long agent turn is chunked in pieces)
    assert [h for n, h in enumerate(headings) if n == 0 or h != headings[n - 1]] == [
        "user",
        "agent",
        FROM_HARNESS,
        "agent",
    ]
    mine = [r for r in results if r.path == rel]
    assert [r.explain["user_turn_factor"] for r in mine if r.heading == "user"] == [
        USER_TURN_FACTOR
    ]
    assert all(r.explain["user_turn_factor"] is None for r in mine if r.heading != "user")
