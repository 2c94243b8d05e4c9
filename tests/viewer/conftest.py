"""The viewer's fixtures: the built memory (tests/viewer/build.py), an app over it, and a
client that has opened the printed URL (so it holds the token's cookie)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip(
    "jinja2", reason="the viewer extra is not installed: pip install -e '.[viewer]'"
)

from starlette.testclient import TestClient

from tests.viewer.build import build

TOKEN = "test-token-0123456789abcdef"
PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"


@pytest.fixture
def viewer_repo(built_repo: Any) -> Any:
    repo, _ = built_repo("viewer", build)
    return repo


def make_client(repo: Any, **options: Any) -> TestClient:
    from autopoiesis.memory import Memory
    from autopoiesis.viewer.app import create_app

    app = create_app(Memory(repo), token=TOKEN, port=PORT, **options)
    return TestClient(app, base_url=BASE, follow_redirects=False)


@pytest.fixture
def client(viewer_repo: Any) -> Iterator[TestClient]:
    """A client that opened the URL with the token: it holds the cookie."""
    with make_client(viewer_repo) as c:
        first = c.get(f"/?token={TOKEN}")
        assert first.status_code == 303
        yield c
