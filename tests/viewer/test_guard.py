"""The viewer's guards: the token on every request, the Host check against DNS
rebinding, the security headers, loopback by default, and no write without --write."""

from __future__ import annotations

from contextlib import closing
from typing import Any

import pytest

from autopoiesis.errors import InvalidArgumentError
from autopoiesis.memory import Memory
from tests.viewer.conftest import TOKEN, make_client


def test_every_page_needs_the_token(viewer_repo: Any) -> None:
    with make_client(viewer_repo) as c:
        for path in ("/timeline", "/knowledge", "/health", "/api/pulse", "/static/style.css"):
            r = c.get(path)
            assert r.status_code == 403, path
            assert "needs its token" in r.text
        assert c.get("/timeline?token=wrong").status_code == 403
        c.cookies.set("autopoiesis_viewer_8765", "wrong")
        assert c.get("/timeline").status_code == 403


def test_a_token_that_is_not_ascii_is_refused_not_a_crash(viewer_repo: Any) -> None:
    """A token of characters outside ASCII (in the query, the cookie or the write form)
    made hmac.compare_digest raise: a 500 for anyone, before any check. It is a 403 now."""
    with make_client(viewer_repo, write=True) as c:
        r = c.get("/timeline?token=%C3%A9t%C3%A9")
        assert r.status_code == 403 and "needs its token" in r.text
        cookie = "autopoiesis_viewer_8765=\u00e9t\u00e9".encode("latin-1")  # as a browser sends it
        assert c.get("/timeline", headers={"cookie": cookie}).status_code == 403
    with make_client(viewer_repo, write=True) as c:
        c.get(f"/?token={TOKEN}")
        r = c.post("/actions/rebuild-index", data={"token": "\u00e9t\u00e9"})
        assert r.status_code == 403 and "token is wrong" in r.text


def test_the_token_becomes_a_cookie_and_leaves_the_url(viewer_repo: Any) -> None:
    with make_client(viewer_repo) as c:
        r = c.get(f"/search?q=pool&token={TOKEN}")
        assert r.status_code == 303
        assert r.headers["location"] == "/search?q=pool"  # the token is not kept in the address
        cookie = r.headers["set-cookie"]
        assert f"autopoiesis_viewer_8765={TOKEN}" in cookie
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert c.get("/search?q=pool").status_code == 200


def test_a_foreign_host_header_is_refused(client: Any) -> None:
    """A page of evil.example whose DNS name is rebound to 127.0.0.1 sends its own Host."""
    assert client.get("/timeline", headers={"host": "evil.example:8765"}).status_code == 400
    assert client.get("/timeline", headers={"host": "localhost:8765"}).status_code == 200
    assert client.get("/timeline", headers={"host": "[::1]:8765"}).status_code == 200


def test_pages_carry_the_security_headers(client: Any) -> None:
    r = client.get("/timeline")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert client.get("/nowhere").headers["referrer-policy"] == "no-referrer"  # a 404 too


def test_writes_need_write(viewer_repo: Any) -> None:
    index = viewer_repo.index_path
    with make_client(viewer_repo) as c:
        c.get(f"/?token={TOKEN}")
        assert "Rebuild the search index" not in c.get("/health").text
        r = c.post("/actions/rebuild-index", data={"token": TOKEN})
        assert r.status_code == 403 and "read-only" in r.text
    before = _built(index)
    with make_client(viewer_repo, write=True) as c:
        c.get(f"/?token={TOKEN}")
        assert "Rebuild the search index" in c.get("/health").text
        assert c.post("/actions/rebuild-index", data={"token": "wrong"}).status_code == 403
        foreign = c.post(
            "/actions/rebuild-index",
            data={"token": TOKEN},
            headers={"origin": "http://evil.example"},
        )
        assert foreign.status_code == 403
        assert _built(index) == before  # none of the refused ones touched it
        r = c.post("/actions/rebuild-index", data={"token": TOKEN})
        assert r.status_code == 303 and r.headers["location"] == "/health?rebuilt=1&recheck=1"
    assert _built(index) != before


def _built(index: Any) -> str:
    """When the index was last built from scratch (its meta row; the file's mtime is no
    witness: the rebuild is written to the WAL, and the viewer's open connection keeps it
    from being checkpointed into memory.db). Read with the SQLite the viewer uses: a
    second copy of SQLite in one process (the standard library's beside pysqlite3) does
    not see the other's locks, and closing its connection dropped them, with the WAL
    index the viewer's health thread was reading (a bus error in the fresh-clone run)."""
    from autopoiesis.core.sqlite import sqlite_module

    with closing(sqlite_module().connect(index)) as conn:
        (built,) = conn.execute("SELECT value FROM index_meta WHERE key = 'built'").fetchone()
    return str(built)


def test_serve_refuses_a_host_that_is_not_loopback(viewer_repo: Any) -> None:
    from autopoiesis.viewer.server import serve

    with pytest.raises(InvalidArgumentError, match="--allow-remote"):
        serve(Memory(viewer_repo), host="0.0.0.0", port=0)


def test_loopback_names() -> None:
    from autopoiesis.viewer.guard import allowed_hosts, is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.5.0.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.2", "example.com", "::"))
    assert "0.0.0.0" not in allowed_hosts("0.0.0.0")
    assert "box.lan" in allowed_hosts("box.lan")


def test_allow_remote_on_every_address_takes_the_machines_own_addresses(
    viewer_repo: Any,
) -> None:
    """`serve --host 0.0.0.0 --allow-remote` refused every request not made on loopback
    ("400 Invalid host header"), its printed URL's included. The address a request came
    in on and this machine's own names are taken now; a foreign name still is not, and
    the printed URL names an address a browser can open."""
    import socket

    from starlette.testclient import TestClient

    from autopoiesis.viewer.app import create_app
    from autopoiesis.viewer.guard import allowed_hosts
    from autopoiesis.viewer.server import url_of

    app = create_app(Memory(viewer_repo), token=TOKEN, port=8765, host="0.0.0.0")
    with TestClient(app, base_url="http://192.0.2.77:8765", follow_redirects=False) as c:
        assert c.get(f"/?token={TOKEN}").status_code == 303  # the server's own address
        assert c.get("/timeline").status_code == 200
        assert c.get("/timeline", headers={"host": "evil.example:8765"}).status_code == 400
        assert c.get("/timeline", headers={"host": "192.0.2.78:8765"}).status_code == 400
    assert socket.gethostname().lower() in allowed_hosts("0.0.0.0")
    assert socket.gethostname().lower() not in allowed_hosts("127.0.0.1")
    assert "0.0.0.0" not in url_of("0.0.0.0", 8765, TOKEN)
    assert "[::]" not in url_of("::", 8765, TOKEN)
