"""Every page of the viewer, at the HTML level (Starlette's TestClient over the real app,
on a memory captured and extracted through the real paths: tests/viewer/build.py)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from autopoiesis.memory import Memory
from tests.viewer.build import SESSIONS, XSS_IMG, XSS_SCRIPT

OLD = "20260302-0900-e38ce7"  # the PgBouncer decision, superseded
NEW = "20260309-1000-446dfe"  # the HikariCP decision that replaced it
CONTEXT = "knowledge/projects/billing-service/context.md"


def session_paths(repo: Any) -> dict[str, str]:
    return {
        p.name.split("-")[1]: p.relative_to(repo.root).as_posix()
        for p in repo.conversations_dir.rglob("*.md")
    }


def listed(page: str) -> list[str]:
    """The session ids a timeline page lists, in order."""
    return re.findall(
        r'<li class="session">.*?<a href="/session\?path=[^"]*?/\d{4}-([^-"]+)', page, re.S
    )


def test_the_timeline_lists_sessions_by_day_per_project_and_harness(client: Any) -> None:
    page = client.get("/timeline").text
    days = re.findall(r'<h2 id="d(\d{4}-\d\d-\d\d)"', page)
    assert days == ["2026-03-10", "2026-03-09", "2026-03-02"]  # newest first
    assert listed(page) == ["ses_html1", "ses_pool2", "ses_pool1"]
    assert "3 of 3 sessions" in page
    billing = client.get("/timeline?project=billing-service").text
    assert "2 of 3 sessions" in billing and listed(billing) == ["ses_pool2", "ses_pool1"]
    codex = client.get("/timeline?harness=codex").text
    assert listed(codex) == ["ses_pool2"] and "1 of 3 sessions" in codex
    assert '<a class="badge harness" href="/timeline?harness=claude-code">' in page
    assert client.get("/timeline?before=2026-03-09").text.count('<li class="session">') == 1
    assert client.get("/timeline?before=yesterday").status_code == 400


def test_the_timelines_search_finds_what_was_said(client: Any) -> None:
    page = client.get("/timeline?q=HikariCP").text
    assert listed(page) == ["ses_pool2"]
    assert 'class="snippet"' in page and "HikariCP" in page
    assert "No session matches" in client.get("/timeline?q=zebrafinchquartz").text


def test_the_timeline_pages_by_days(client: Any, monkeypatch: Any) -> None:
    from autopoiesis.viewer import pages_memory

    monkeypatch.setattr(pages_memory, "DAYS_PER_PAGE", 2)
    page = client.get("/timeline").text
    assert re.findall(r'<h2 id="d([\d-]+)"', page) == ["2026-03-10", "2026-03-09"]
    assert "3 of 3 sessions" in page  # counted whole, shown by page
    older = re.search(r'<a href="(/timeline\?[^"]*)">Older sessions', page)
    assert older and "before=2026-03-09" in older.group(1)
    rest = client.get(html.unescape(older.group(1))).text
    assert listed(rest) == ["ses_pool1"] and "Older sessions" not in rest


def test_the_search_index_stays_open_and_follows_the_memory(client: Any, viewer_repo: Any) -> None:
    # one index for the life of the server (its watcher, its postings), caught up on each
    # search: a session captured after the first search is found by the next
    viewer = client.app.state.viewer
    assert "No session matches" in client.get("/timeline?q=zebrafinchquartz").text
    with viewer.searching() as first:
        assert first is not None
    lines = [line.replace(b"ses_pool1", b"ses_zebra") for line in SESSIONS[0]]
    lines = [line.replace(b"PgBouncer", b"zebrafinchquartz") for line in lines]
    Memory(viewer_repo).capture_stream(lines)
    assert listed(client.get("/timeline?q=zebrafinchquartz").text) == ["ses_zebra"]
    with viewer.searching() as again:
        assert again is first
        # a search that finds memory.db corrupt closes the index it was given: the next
        # page opens it again instead of failing on a closed connection
        again.close()
    assert listed(client.get("/timeline?q=zebrafinchquartz").text) == ["ses_zebra"]
    assert "zebrafinchquartz" in client.get("/search?q=zebrafinchquartz").text
    compiled = client.get("/compile", params={"message": "zebrafinchquartz", "budget": "4096"})
    assert compiled.status_code == 200 and "ses_zebra" in compiled.text


def test_the_server_closes_its_index_when_it_stops(viewer_repo: Any) -> None:
    from tests.viewer.conftest import TOKEN, make_client

    with make_client(viewer_repo) as c:
        c.get(f"/?token={TOKEN}")
        assert "HikariCP" in c.get("/search?q=HikariCP").text
        with c.app.state.viewer.searching() as index:
            assert index is not None and index.is_current()
    assert not index.is_current()


def test_a_session_shows_its_turns_with_tool_calls_folded(client: Any, viewer_repo: Any) -> None:
    path = session_paths(viewer_repo)["ses_pool1"]
    page = client.get("/session", params={"path": path}).text
    assert page.count('<li class="turn ') == 3
    folded = re.search(r'<details class="tools">\s*<summary>(.*?)</summary>', page, re.S)
    assert folded and "2 tool calls: exec, read" in folded.group(1)
    assert "psql -c &#39;show pools&#39;" in page  # escaped, inside the fold
    # what the memory learned from it, each with its provenance link
    assert f"/entry/{OLD}?path=" in page
    assert "billing-service" in page


def test_a_long_session_is_shown_a_page_of_turns_at_a_time(
    client: Any, viewer_repo: Any, monkeypatch: Any
) -> None:
    """Every turn of a transcript was rendered on one page: 50,000 turns (8 MB, a file
    anyone could commit) took 23 s and made a page of 23 MB. A page renders TURNS_SHOWN
    turns: the one a search hit or a provenance link names among them, the rest a link away."""
    from autopoiesis.formats.transcript import turn_lines
    from autopoiesis.viewer import render

    monkeypatch.setattr(render, "TURNS_SHOWN", 2, raising=False)
    path = session_paths(viewer_repo)["ses_pool1"]
    turns = re.compile(r'<li class="turn [^"]*" id="turn-(\d+)"')
    first = client.get("/session", params={"path": path}).text
    assert turns.findall(first) == ["0", "1"] and "Turns 1–2 of 3" in first
    later = re.search(r'<a href="(/session\?[^"]*)">later', first)
    assert later and "earlier" not in first
    rest = client.get(html.unescape(later.group(1))).text
    assert turns.findall(rest) == ["2"] and "Turns 3–3 of 3" in rest and "← earlier" in rest
    last_line = turn_lines((viewer_repo.root / path).read_text(), path)[2][0]
    hit = client.get("/session", params={"path": path, "line": str(last_line)}).text
    assert turns.findall(hit) == ["2"] and re.search(r'class="turn \w+ hit" id="turn-2"', hit)


def test_a_script_in_a_transcript_is_text(client: Any, viewer_repo: Any) -> None:
    path = session_paths(viewer_repo)["ses_html1"]
    page = client.get("/session", params={"path": path}).text
    assert "<script>window" not in page and "<img" not in page
    assert html.escape(XSS_SCRIPT, quote=False) in page  # shown, as text
    assert html.escape(XSS_IMG) in page
    assert 'href="javascript:' not in page
    # and everywhere else it shows: the timeline's title, the search snippet
    for url in ("/timeline", "/search?q=page+break+script", "/timeline?q=script"):
        other = client.get(url).text
        assert "<script>window" not in other and "<img src=x" not in other, url


def test_a_nul_in_a_parameter_is_refused(client: Any) -> None:
    """A NUL in a query value (git's arguments cannot carry one): a 400 "Refused" page,
    not a bare 500 with a ValueError's traceback."""
    for url in (
        "/history?text=%00",
        "/history?text=a%00b",
        "/compare?a=HEAD&b=HEAD%00",
        "/search?q=%00",
        "/session?path=raw/%00.md",
    ):
        answer = client.get(url)
        assert answer.status_code == 400, url
        assert "Refused" in answer.text, url


def test_a_number_that_is_not_ascii_digits_is_refused(client: Any, viewer_repo: Any) -> None:
    """A number parameter of digits `str.isdigit` takes and `int` refuses ("²"): a 400
    "Refused" page, not a bare 500 with a ValueError."""
    session = session_paths(viewer_repo)["ses_pool1"]
    for url, params in (
        ("/search", {"q": "pool", "limit": "\u00b2"}),
        ("/compile", {"message": "pool", "budget": "\u00b2\u00b2\u00b2"}),
        ("/session", {"path": session, "line": "\u00b2"}),
        ("/knowledge/file", {"path": CONTEXT, "line": "\u00b9\u00b3"}),
    ):
        answer = client.get(url, params=params)
        assert answer.status_code == 400, url
        assert "give a whole number" in answer.text, url
    assert client.get("/knowledge/file", params={"path": CONTEXT, "line": "13"}).status_code == 200


def test_a_path_outside_the_memory_folders_is_refused(client: Any, viewer_repo: Any) -> None:
    for bad in ("../../etc/passwd", "/etc/passwd", "memory-config.yaml", "raw/../../x.md"):
        assert client.get("/session", params={"path": bad}).status_code == 400, bad
        assert client.get("/knowledge/file", params={"path": bad}).status_code == 400, bad
    assert client.get("/session", params={"path": CONTEXT}).status_code == 400  # not a transcript
    missing = "raw/conversations/2026/01/01/0000-nope.md"
    assert client.get("/session", params={"path": missing}).status_code == 404
    secret = viewer_repo.root.parent / "secret.md"
    secret.write_text("the secret\n")
    (viewer_repo.root / "knowledge" / "leak.md").symlink_to(secret)
    r = client.get("/knowledge/file", params={"path": "knowledge/leak.md"})
    assert r.status_code == 400 and "the secret" not in r.text


def test_a_link_or_a_dotdot_to_another_memory_file_is_refused(
    client: Any, viewer_repo: Any
) -> None:
    """The folder and the link checks were made on where PATH led once resolved: a
    `raw/../knowledge/...` path opened a knowledge file as a session, and a link inside
    knowledge/ to a transcript (or a linked folder) was read through."""
    session = session_paths(viewer_repo)["ses_pool1"]
    knowledge = viewer_repo.root / "knowledge"
    (knowledge / "alias.md").symlink_to(viewer_repo.root / session)
    (knowledge / "linked").symlink_to(viewer_repo.root / "knowledge" / "projects")
    for url, path in (
        ("/knowledge/file", "knowledge/alias.md"),
        ("/knowledge/file", "knowledge/linked/billing-service/context.md"),
        ("/session", f"raw/../{CONTEXT}"),
        ("/history", "knowledge/alias.md"),
        (f"/history/{OLD}", f"knowledge/../{session}"),
        (f"/entry/{OLD}", "knowledge/linked/billing-service/context.md"),
    ):
        answer = client.get(url, params={"path": path})
        assert answer.status_code == 400, (url, path)
        assert "Refused" in answer.text and "PgBouncer" not in answer.text, (url, path)
    same = client.get("/knowledge/file", params={"path": f"knowledge/./projects/../../{CONTEXT}"})
    assert same.status_code == 200 and f"<code>{CONTEXT}</code>" in same.text


def test_knowledge_of_a_project_with_superseded_entries_struck(client: Any) -> None:
    page = client.get("/knowledge?project=billing-service").text
    assert CONTEXT in page
    old = re.search(rf'<li class="entry superseded" id="e-{OLD}">(.*?)</li>', page, re.S)
    assert old and "<del" in old.group(1) and "PgBouncer" in old.group(1)
    assert f'replaced by <a href="#e-{NEW}">' in old.group(1)
    new = re.search(rf'<li class="entry" id="e-{NEW}">(.*?)</li>', page, re.S)
    assert new and "HikariCP" in new.group(1) and "<del" not in new.group(1)
    assert f"/entry/{NEW}?path=" in new.group(1) and f"/history/{NEW}?path=" in new.group(1)
    assert "Sessions of billing-service" in page and page.count('<li class="session">') == 2
    listing = client.get("/knowledge").text
    assert "projects/billing-service" in listing and "journal" in listing


def test_a_file_name_that_is_not_utf8_is_left_out_of_the_pages(memory_repo: Any) -> None:
    """A knowledge file or a transcript whose name has a byte that is not UTF-8: the
    knowledge listing's URL quoting raised on the one (500), and the sessions' catalog on
    the other, on every page (each page's live notice hashes it). No link can name such a
    file, so no page lists it (`doctor` and the index say to rename it)."""
    import os

    from tests.viewer.conftest import TOKEN, make_client

    odd = os.fsdecode(b"\xc1")
    ref = memory_repo.knowledge_dir / "reference"
    (ref / f"odd{odd}.md").write_text("# Odd\n", encoding="utf-8")
    (ref / "plain.md").write_text("# Plain\n", encoding="utf-8")
    day = memory_repo.root / "raw/conversations/2026/03/02"
    day.mkdir(parents=True, exist_ok=True)
    (day / f"0900-odd{odd}.md").write_text(
        "---\nsession_id: odd\nstarted: 2026-03-02T09:00:00Z\n---\n", encoding="utf-8"
    )
    with make_client(memory_repo) as c:
        assert c.get(f"/?token={TOKEN}").status_code == 303
        pages = {p: c.get(p) for p in ("/knowledge", "/timeline", "/health")}
    assert all(r.status_code == 200 for r in pages.values()), pages
    listing = pages["/knowledge"].text
    assert "reference/plain.md" in listing and "odd" not in listing


def test_an_entry_of_a_file_with_a_non_ascii_name_has_its_provenance(
    viewer_repo: Any, commit_all: Any
) -> None:
    """git quoted such a name in its output ("knowledge/people/jos\\303\\251.md"): the
    session page's "learned" link named that quoted path (400), and /entry/ID found no
    file (404)."""
    from urllib.parse import quote

    from tests.viewer.conftest import TOKEN, make_client

    people = viewer_repo.knowledge_dir / "people"
    people.mkdir(parents=True, exist_ok=True)
    (people / "josé.md").write_text(
        "# José\n\n## Context\n- 2026-03-02: José prefers tabs over spaces (via ses_pool1) "
        "{id: 20260302-0900-c0ffee}\n",
        encoding="utf-8",
    )
    commit_all(viewer_repo, "memory: josé")
    transcript = session_paths(viewer_repo)["ses_pool1"]
    with make_client(viewer_repo) as c:
        assert c.get(f"/?token={TOKEN}").status_code == 303
        entry = c.get("/entry/20260302-0900-c0ffee")
        session = c.get("/session", params={"path": transcript}).text
    assert entry.status_code == 200 and "José prefers tabs" in entry.text
    assert f"path={quote('knowledge/people/josé.md', safe='/')}" in session.replace("&amp;", "&")


def test_a_knowledge_file_page(client: Any) -> None:
    page = client.get("/knowledge/file", params={"path": CONTEXT, "line": "13"}).text
    assert "<dt>entry_count</dt><dd>2</dd>" in page
    assert "Key Decisions" in page and f'id="e-{OLD}"' in page


def test_an_entrys_provenance(client: Any, viewer_repo: Any) -> None:
    page = client.get(f"/entry/{OLD}", params={"path": CONTEXT}).text
    transcript = session_paths(viewer_repo)["ses_pool1"]
    # the turn it was said in: the page of turns that holds it, at its anchor
    assert f'href="/session?path={transcript}&amp;turn=0#turn-0"' in page
    assert "2026-03-02T09:00Z" in page
    assert re.search(r"<code>decisions@\d+</code>", page)  # the extractor versions then
    commit = re.search(r"<dt>commit</dt><dd><code>([0-9a-f]{10})</code>", page)
    assert commit is not None
    log = Memory(viewer_repo)
    from autopoiesis.git.repo import MemoryGit

    adding = MemoryGit(log.repo).recall(f"{{id: {OLD}}}")[-1]
    assert adding.sha.startswith(commit.group(1))
    assert f'href="/entry/{NEW}?path=' in page  # its replacement, one click away
    assert "we&#39;ll put PgBouncer in front of Postgres" in page  # the turn itself
    # without a path: found where it is canonical (not the journal that repeats it)
    assert f'in <a href="/knowledge/file?path={CONTEXT}' in client.get(f"/entry/{OLD}").text
    assert client.get("/entry/20990101-0000-abcdef").status_code == 404
    assert client.get("/entry/not-an-id").status_code == 400


def test_the_history_of_a_fact(client: Any) -> None:
    page = client.get(f"/history/{OLD}", params={"path": CONTEXT}).text
    changes = re.findall(
        r'<span class="date">([\d-]+ [\d:]+)</span> <code>([0-9a-f]{10})</code>', page
    )
    assert len(changes) == 2  # added, then struck when it was superseded
    assert f"superseded by {NEW}" in page
    assert page.count('<li class="add">') >= 2
    assert "git blame" in page and "line 13" in page
    text = client.get("/history?text=HikariCP").text
    assert "No commit added" not in text and '<li class="add">' in text
    file_history = client.get("/history", params={"path": CONTEXT}).text
    assert len(re.findall(r'<li><span class="date">', file_history)) == 2


def test_search_ranks_as_the_cli_does(client: Any, viewer_repo: Any, cli: Any) -> None:
    # the CLI in a folder of no project (the viewer's search asks for none unless told)
    args = ("search", "pooling HikariCP PgBouncer", "--json", "--limit", "20")
    cli_hits = json.loads(
        cli(*args, repo=viewer_repo, cwd=viewer_repo.root.parent, check=True).stdout
    )
    page = client.get("/search?q=pooling+HikariCP+PgBouncer").text
    shown = re.findall(
        r'<li class="result">\s*<span class="score">([\d.]+)</span>\s*<a href="[^"]*">([^<:]+):(\d+)',
        page,
    )
    assert [(p.rsplit("/", 1)[-1], int(line)) for _, p, line in shown] == [
        (h["path"].rsplit("/", 1)[-1], h["start_line"]) for h in cli_hits[: len(shown)]
    ]
    assert len(shown) == min(20, len(cli_hits)) > 0
    assert "BM25" in page  # how each score was made
    assert client.get("/search?q=x&category=nope").status_code == 400
    assert client.get("/search?q=x&project=no-such-project").status_code == 400


def test_the_compilers_view_is_a_dry_run(client: Any, viewer_repo: Any) -> None:
    inclusions = viewer_repo.state_file("inclusions", create=False)
    before = inclusions.read_bytes() if inclusions.exists() else None
    page = client.get(
        "/compile", params={"message": "Which pooler does billing-service use?", "budget": "2048"}
    ).text
    assert '<svg class="chart"' in page
    slots = dict(re.findall(r"<tr><td>(P\d [^<]+)</td><td class=\"num\">(\d+)</td>", page))
    assert "P0 identity" in slots and "P3 scored knowledge" in slots
    total = int(re.search(r"Total (\d+) of 2048 tokens", page).group(1))
    assert 0 < total <= 2048
    assert "HikariCP" in page
    after = inclusions.read_bytes() if inclusions.exists() else None
    assert after == before  # nothing recorded
    assert client.get("/compile?message=x&budget=abc").status_code == 400


def test_health_shows_the_doctors_checks_and_the_daemon(client: Any, viewer_repo: Any) -> None:
    monitor = client.app.state.viewer.health
    first = client.get("/health").text
    if monitor.current()[0] is None:  # the checks run in the background; the page says so
        assert "Checking the memory" in first and 'data-reload="2"' in first
    monitor.wait()
    page = client.get("/health").text
    checks = re.findall(r"<tr class=\"(ok|bad)\"><td>([\w -]+)</td>", page)
    names = [c for _, c in checks]
    assert names[:5] == ["sqlite", "sqlite-vec", "embedder", "index", "history"]
    assert {"git hooks", "remote", "harnesses", "daemon"} <= set(names)
    assert dict((c, s) for s, c in checks)["history"] == "ok"
    assert "Not running" in page  # the daemon
    assert re.search(r"Checked \d+ s ago", page)
    (viewer_repo.root / "knowledge" / "loop.md").symlink_to(viewer_repo.root / "knowledge")
    client.get("/health?recheck=1")  # a new check, in the background
    monitor.wait()
    again = client.get("/health").text
    assert "problems found" in again and "knowledge/loop.md" in again


def test_new_sessions_and_commits_show_without_a_restart(client: Any, viewer_repo: Any) -> None:
    pulse = client.get("/api/pulse").json()["pulse"]
    assert len(listed(client.get("/timeline").text)) == 3
    lines = [line.replace(b"ses_pool1", b"ses_later") for line in SESSIONS[0]]
    lines = [line.replace(b"2026-03-02", b"2026-03-20") for line in lines]
    Memory(viewer_repo).capture_stream(lines)
    page = client.get("/timeline").text
    assert listed(page)[0] == "ses_later" and '<h2 id="d2026-03-20">' in page
    assert client.get("/api/pulse").json()["pulse"] != pulse
    assert (
        f'data-pulse="{client.get("/api/pulse").json()["pulse"]}"' in client.get("/timeline").text
    )


QUESTIONS = [
    {
        "question": "Which pooler does billing-service use now?",
        "answer": "HikariCP",
        "kind": "decision",
        "evidence": ["we decided to drop PgBouncer and use HikariCP"],
    },
    {
        "question": "What did we put in front of Postgres first?",
        "answer": "PgBouncer",
        "kind": "lexical",
        "evidence": ["put PgBouncer in front of Postgres"],
    },
]


def test_compare_two_refs_with_their_scores_per_kind(
    viewer_repo: Any, git: Any, tmp_path: Any
) -> None:
    from tests.viewer.conftest import TOKEN, make_client

    first = git(viewer_repo, "log", "--format=%H", "--grep=we'll put PgBouncer").stdout.split()[0]
    git(viewer_repo, "branch", "extract/before", first)
    questions = tmp_path / "pool.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    with make_client(viewer_repo, questions={"pool.jsonl": questions}) as c:
        c.get(f"/?token={TOKEN}")
        page = c.get("/compare").text
        assert "<option>extract/before</option>" in page and "<option>main</option>" in page
        page = c.get("/compare?a=extract/before&b=main").text
        rows = re.findall(
            r"<tr><td>(\w+)</td><td class=\"num\">(\d+)</td><td class=\"num\">(\d+)</td></tr>", page
        )
        project = {cat: (int(a), int(r)) for cat, a, r in rows}["project"]
        assert project[0] >= 1 and project[1] >= 1  # HikariCP added, PgBouncer struck (not live)
        only_b = re.search(r"<h3>Only on main <small>(\d+)</small>", page)
        assert only_b and int(only_b.group(1)) >= 1 and "hikaricp" in page.lower()
        scoring = c.get("/compare?a=extract/before&b=main&questions=pool.jsonl").text
        jobs = list(c.app.state.viewer.jobs.jobs.values())  # type: ignore[attr-defined]
        assert len(jobs) == 2
        if any(j.state == "running" for j in jobs):
            assert 'data-reload="3"' in scoring  # the page says so, and reloads itself
        for j in jobs:
            assert j.finished.wait(600), "the eval never finished"
            assert j.state == "done", j.error
        page = c.get("/compare?a=extract/before&b=main&questions=pool.jsonl").text
        assert "data-reload" not in page
        charts = re.findall(r'<svg class="chart".*?</svg>', page, re.S)
        assert len(charts) == 2
        assert all(
            k in charts[0] for k in ("decision", "lexical", "all questions", "extract/before")
        )
        assert c.get("/compare?a=extract/before&b=main&questions=other.jsonl").status_code == 400
        refused = c.get("/compare?a=nope&b=main")
        assert refused.status_code == 400 and "is not a branch, tag or commit" in refused.text


def test_a_file_that_is_no_transcript_shows_as_escaped_text(client: Any, viewer_repo: Any) -> None:
    folder = viewer_repo.conversations_dir / "2026" / "01" / "01"
    folder.mkdir(parents=True)
    (folder / "0000-ses_bad-broken.md").write_bytes(b"no frontmatter <script>x()</script>\xff\n")
    page = client.get(
        "/session", params={"path": "raw/conversations/2026/01/01/0000-ses_bad-broken.md"}
    )
    assert page.status_code == 200 and "Not read as a transcript" in page.text
    assert "&lt;script&gt;x()&lt;/script&gt;\ufffd" in page.text and "<script>x()" not in page.text
    assert "ses_bad" in client.get("/timeline").text  # listed, by its name
