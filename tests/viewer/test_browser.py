"""The viewer in a real browser: `autopoiesis serve` as a process on loopback, headless
Chromium (Debian's, at /usr/bin/chromium; scripts/install-system-deps installs it)
driven by Playwright, which never downloads a browser here. A new user's walk: open the
printed URL, find what the memory knows about a project and where it came from. Each
page's screenshot is kept under tests/viewer/artifacts/ (gitignored)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autopoiesis.memory import Memory
from tests.viewer.build import SESSIONS, XSS_SCRIPT

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
# how long an assertion about a page that a click loads retries (it returns as soon as it
# holds): a page asserted on at once may still be the old one on a busy machine
WAIT = 60_000
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def served(viewer_repo: Any) -> Iterator[str]:
    """`autopoiesis serve --port 0` running on the repo: the URL it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "autopoiesis", "-C", str(viewer_repo.root), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        url = None
        for line in proc.stdout:  # the banner: the repo, then the URL to open
            m = re.search(r"open (http://127\.0\.0\.1:\d+/\?token=\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, proc.stderr.read() if proc.stderr else "no URL printed"
        yield url
    finally:
        proc.terminate()
        proc.wait(120)  # a hang guard


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A page of a fresh headless Chromium (its own user-data-dir), or a skip that says why."""
    if not CHROMIUM.exists():
        pytest.skip(
            "no Chromium at /usr/bin/chromium: the browser tests are skipped "
            "(scripts/install-system-deps installs it where it can)"
        )
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=FLAGS,
            viewport={"width": 1100, "height": 800},
        )
        try:
            yield context.new_page()
        finally:
            context.close()


def expect(locator: Any) -> Any:
    """Playwright's retrying assertions (imported here: the `browser` fixture skips the
    test when Playwright is not installed)."""
    from playwright.sync_api import expect as retrying

    return retrying(locator)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_a_new_user_finds_what_the_memory_knows_and_where_it_came_from(
    served: str, browser: Any
) -> None:
    page = browser
    page.goto(served)
    assert page.url.endswith("/timeline")  # the token became a cookie and left the address
    assert "token=" not in page.url
    assert page.locator("li.session").count() == 3
    shot(page, "timeline")
    page.click("a.badge.project >> nth=0")  # billing-service's sessions
    expect(page.locator("li.session")).to_have_count(2, timeout=WAIT)
    page.click("text=what the memory knows about it")
    expect(page.locator("h1")).to_have_text("Knowledge about billing-service", timeout=WAIT)
    struck = page.locator("li.entry.superseded del.fact")
    assert "PgBouncer" in struck.inner_text()
    shot(page, "knowledge")
    live = page.locator("li.entry:not(.superseded)", has_text="HikariCP")
    live.locator("text=provenance").click()
    expect(page.locator("h1")).to_have_text("Where this came from", timeout=WAIT)
    expect(page.locator("dd", has_text="decisions@")).to_have_count(1, timeout=WAIT)
    shot(page, "provenance")
    page.click("text=How this fact changed")
    expect(page.locator("ol.changes > li").first).to_be_visible(timeout=WAIT)
    shot(page, "history")
    page.go_back()
    page.click("dl.provenance dd a[href^='/session']")
    hit = page.locator("li.turn", has_text="drop PgBouncer and use HikariCP")
    expect(hit).to_have_count(1, timeout=WAIT)
    shot(page, "session")


def test_a_script_in_a_transcript_stays_text_in_the_browser(served: str, browser: Any) -> None:
    page = browser
    page.goto(served)
    page.click("text=Why Does This Page Break")
    turn = page.locator("li.turn.user .text")
    expect(turn).to_contain_text(XSS_SCRIPT, timeout=WAIT)  # shown to the reader, as text
    assert page.evaluate("typeof window.__xss") == "undefined"  # and never run
    assert page.locator("li.turn img").count() == 0
    shot(page, "session-with-script")


def test_tool_calls_are_folded_until_opened(served: str, browser: Any) -> None:
    page = browser
    page.goto(served)
    page.click("text=For The Billing Service Project Well Put Pgbouncer")
    tools = page.locator("details.tools")
    expect(tools).to_have_count(1, timeout=WAIT)
    assert not tools.evaluate("d => d.open")
    assert not page.locator("details.tools li").first.is_visible()
    tools.locator("summary").click()
    assert page.locator("details.tools li").first.is_visible()
    shot(page, "session-tools-open")


def test_the_tool_pages_render(served: str, browser: Any) -> None:
    page = browser
    page.goto(served)
    page.fill("header input[name=q]", "HikariCP pooling")
    page.press("header input[name=q]", "Enter")
    expect(page.locator("li.result").first).to_be_visible(timeout=WAIT)
    shot(page, "search")
    page.click("text=What would the compiler give for this?")
    expect(page.locator("svg.chart")).to_have_count(1, timeout=WAIT)
    expect(page.locator("table.slots td", has_text="P0 identity")).to_have_count(1, timeout=WAIT)
    shot(page, "compile")
    page.click("nav >> text=Health")
    page.wait_for_selector("table.checks", timeout=120_000)  # the page reloads until checked
    assert page.locator("table.checks tr.ok").count() >= 4
    shot(page, "health")
    page.click("nav >> text=Compare")
    page.select_option("select[name=a]", "main")
    page.click("button:has-text('Compare')")
    expect(page.locator("body")).to_contain_text("The two hold the same knowledge", timeout=WAIT)
    shot(page, "compare")


def test_a_new_session_shows_while_the_page_is_open(
    served: str, browser: Any, viewer_repo: Any
) -> None:
    page = browser
    page.goto(served)
    assert page.locator("#live").is_hidden()
    lines = [line.replace(b"ses_pool1", b"ses_live1") for line in SESSIONS[0]]
    Memory(viewer_repo).capture_stream(
        [line.replace(b"2026-03-02", b"2026-04-01") for line in lines]
    )
    page.wait_for_selector("#live", state="visible", timeout=120_000)  # the poll noticed
    page.click("#live a")
    expect(page.locator("h2#d2026-04-01")).to_have_count(1, timeout=WAIT)
